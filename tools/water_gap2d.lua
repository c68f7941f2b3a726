-- tools/water_gap2d.lua: the 2D finger (scenes/finger2d.geo, mesh 1.5, DragonSkin-30 at its real bulk modulus,
-- volumetric = "averaged" unless VOL says otherwise, implicit 5 ms substeps) in a tank whose slip walls leave gap_mm of water below it, beyond
-- its tip and above it (then a free surface, 10 mm of air and the grid's top wall). Without gravity by default, the
-- chamber at p_kPa ramped over 0.1 s; prints the tip's displacement from its start five times over T seconds.
-- docs/benchmarks.md, "Issue 11: the water in the groups" and "why the water in the groups neither rests nor flows":
-- in gaps of a few cells the water holds the bend; why is open (not the damping, the substep or the lack of free slip).
--
-- usage: build/bin/cqlua tools/water_gap2d.lua [air|water] [p_kPa=0.5] [T=1] [gap_mm=5]
--   environment: GRAV (m/s^2, 0), DAMP (the world's damping, 1/s, 25), K (the water's bulk modulus, 2.2e9), DX (m,
--   2.5e-3: the cell; the finger's mesh size is 0.6 DX and the water's spacing DX / PPA), PPA (the water's particles
--   per cell and axis, 2.5), DT (the substep, 5e-3), INT (the integrator, implicit; explicit needs DT <= 1.9e-6), VOL
--   (the world's volumetric, averaged), FLUID (the world's fluid: particle, or fill)
local cq = require "cq"
local medium, pk, T = arg[1] or "water", tonumber(arg[2] or 0.5), tonumber(arg[3] or 1)
local gap = tonumber(arg[4] or 5) * 1e-3
local DX = tonumber(os.getenv("DX") or 2.5e-3) -- the cell; the finger's mesh and the water's spacing follow it
local DT = tonumber(os.getenv("DT") or 5e-3)
local y0 = 2 * DX + gap -- the finger's bottom
local res = { math.ceil((0.11 + gap) / DX) + 3, math.ceil((y0 + 0.016 + gap + 0.01) / DX) + 3 }
local r = cq.robot { dim = 2 }
local g = r:gmsh { path = "scenes/finger2d.geo", offset = { 0.01, y0 }, scale = 1e-3, mesh_size = 1.5 * DX / 2.5e-3,
  material = { preset = "dragonskin30", bulk = 1.75e9 } }
r:chamber { wall = g.chambers.chamber, max = 20e3 }
local nf = #r.x
if medium == "water" then
  local h = DX / tonumber(os.getenv("PPA") or 2.5)
  local x1 = (res[1] - 3) * DX
  r:box { offset = { 2 * DX, 2 * DX },
    size = { math.floor((x1 - 2 * DX) / h) * h, math.floor((y0 + 0.016 + gap - 2 * DX) / h) * h },
    spacing = h, name = "water", material = { preset = "water", bulk = tonumber(os.getenv("K") or 2.2e9) },
    keep = function(x) return not (x[1] < 0.11 + h / 2 and x[2] > y0 - h / 2 and x[2] < y0 + 0.016 + h / 2) end }
end
local grav = tonumber(os.getenv("GRAV") or 0)
local w, s = r:world { res = res, dx = DX, dt = DT, gravity = { 0, -grav }, damping = tonumber(os.getenv("DAMP") or 25),
  walls = { all = { type = "slip", thickness = 3 },
    left = { type = "sticky", thickness = math.floor(0.015 / DX + 0.5) } },
  integrator = os.getenv("INT") or "implicit", volumetric = os.getenv("VOL") or "averaged",
  fluid = os.getenv("FLUID") }
local maxx, tip = -1, {}
for p = 0, nf - 1 do maxx = math.max(maxx, s.x[p]) end
for p = 0, nf - 1 do if s.x[p] > maxx - 3e-3 then tip[#tip + 1] = p + 1 end end
local x0 = s:mean("x", tip)
local every = math.floor(T / 5 / DT + 0.5)
for k = 1, every * 5 do
  w:step(s, { pk / 20 * math.min(1, k * DT / 0.1) })
  if k % every == 0 then
    local x = s:mean("x", tip)
    print(string.format("%s gap %g mm p %g t %.2f tip dx %+.3f dy %+.3f mm n %d", medium, gap * 1e3, pk, k * DT,
      (x[1] - x0[1]) * 1e3, (x[2] - x0[2]) * 1e3, w.n))
    io.stdout:flush()
  end
end
