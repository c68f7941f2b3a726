-- docs/experiments/finger3d_lattice_water.lua: the 3D version of finger2d_lattice_water.lua: a PneuNet-like finger
-- built on a lattice (100 x 16.25 x 20 mm, six chamber cavities 7.5 x 8.75 x 12.5 mm on its -x side; DragonSkin-30,
-- bulk lowered to 2 MPa; dx 2.5 mm, particles every 1.25 mm) hanging from the top sticky band into a tank of grid
-- water (10 mm round it and 15 mm below, a free surface AIR mm below the band), pressurised over 0.2 s without
-- gravity, explicit, one thread. Width 16.25 mm meets the water's lattice (2 per cell and axis) seamlessly. Prints the
-- tip's (dx, dy) in mm six times over T (docs/results/history.md, "the seam between a body and its water").
-- usage: cqlua docs/experiments/finger3d_lattice_water.lua [media=water|air] [width_mm=16.25] [K=2.2e4] [p_kPa=5]
--        [T=0.6] [per_axis=2]    environment: AIR (mm, 10)
local cq = require "cq"
local media, W, K = arg[1] or "water", tonumber(arg[2] or 16.25) * 1e-3, tonumber(arg[3] or 2.2e4)
local pk, T, ppa = tonumber(arg[4] or 5), tonumber(arg[5] or 0.6), tonumber(arg[6] or 2)
local dx = 2.5e-3
local h = dx / 2
local L, WZ, gap, below, WALL = 100e-3, 20e-3, 10e-3, 15e-3, 3
local function cells(inside) return 2 * WALL - 1 + math.ceil(inside / dx - 1e-9) end
local res = { cells(2 * gap + W) + 1, cells(below + L) + 5, cells(2 * gap + WZ) }
local lo = (WALL - 1) * dx
local top = (res[2] - WALL) * dx
local fx0, fy0, fz0 = lo + gap, top - L, lo + gap
local r = cq.robot { dim = 3 }
local cav = {}
for k = 0, 5 do
  cav[#cav + 1] = { offset = { fx0 + 3.75e-3, fy0 + 8.75e-3 + k * 13.75e-3, fz0 + 3.75e-3 },
    size = { W - 8.75e-3, 8.75e-3, WZ - 7.5e-3 }, name = "chamber" }
end
local g = r:box { offset = { fx0, fy0, fz0 }, size = { W, L + dx, WZ }, spacing = h, name = "finger", cavities = cav,
  material = { preset = "dragonskin30", bulk = 2e6 } }
local nf = #r.x
r:chamber { wall = g.chambers.chamber, max = 20e3 }
if media == "water" then
  local hw = dx / ppa
  local wtop = top - (tonumber(os.getenv("AIR")) or 10) * 1e-3
  local inside = (res[1] - 2 * WALL + 1) * dx
  local insidez = (res[3] - 2 * WALL + 1) * dx
  r:box { offset = { lo, lo, lo }, size = { math.floor(inside / hw + 1e-9) * hw, math.floor((wtop - lo) / hw + 1e-9) * hw,
    math.floor(insidez / hw + 1e-9) * hw }, spacing = hw, name = "water", material = { preset = "water", bulk = K },
    keep = function(x) return x[1] < fx0 - hw / 4 or x[1] > fx0 + W + hw / 4 or x[2] < fy0 - hw / 4 or
      x[3] < fz0 - hw / 4 or x[3] > fz0 + WZ + hw / 4 end }
end
local c = math.sqrt((2e6 + 4 / 3 * 48e3) / 1080)
local dt = 0.4 * dx / c
local w, s = r:world { res = res, dx = dx, dt = dt, gravity = { 0, 0, 0 }, damping = 25, threads = 1,
  walls = { all = { type = "slip", thickness = WALL }, top = { type = "sticky", thickness = WALL } } }
local n, tip = w.n, {}
for i = 0, nf - 1 do if s.x[n + i] < fy0 + 3e-3 then tip[#tip + 1] = i end end
local function tipx() local m, my = 0, 0 for _, i in ipairs(tip) do m = m + s.x[i]; my = my + s.x[n + i] end return m / #tip, my / #tip end
local x0, y0 = tipx()
local steps = math.floor(T / dt + 0.5)
local every = math.floor(steps / 6 + 0.5)
local out = {}
local t0 = os.clock()
for k = 1, steps do
  w:step(s, { pk / 20 * math.min(1, k * dt / 0.2) })
  if k % every == 0 then local x, y = tipx() out[#out + 1] = string.format("%.2f/%.2f", (x - x0) * 1e3, (y - y0) * 1e3) end
end
print(string.format("3D %s width %.2f ppa %g K %g p %g kPa n %d %.0fs tip dx/dy mm every %.2f s:", media, W * 1e3, ppa, K, pk, n, os.clock() - t0, every * dt), table.concat(out, " "))
