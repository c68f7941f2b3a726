-- Issue 62 item 5: does a 3D body bend in water at all, or only the 2D section? A soft beam (neo-Hookean, E, nu 0.3,
-- density 3000; 8 mm thick in x, 50 mm long in y, BW mm wide in z) hangs from the top wall's sticky band under a
-- sideways gravity g = 9.8 E / 1e7 in x (scenes/fluid_validation.lua's buoyed beam, made 3D). In water (density
-- 1000, the grid fluid, robot:world's default for a robot of fluid and solid) filling the tank up to the band, it
-- settles at 2/3 of its deflection in air (buoyancy: (3000 - 1000) / 3000), whatever the water's gaps, once it is
-- at rest. The water's gaps between the beam and the tank's slip walls: gap_x mm on each side in x, gap_z mm on each
-- side in z (0: the beam spans the tank in z, the flow round it is the 2D section's, under its tip only), 15 mm
-- below its tip. Explicit at soft moduli (E, the water's bulk K) so that a run is minutes on one core.
-- Prints the tip's x displacement (mm) every T / 10 and at the end its ratio to the air run's when both ran.
--
-- usage: build/bin/cqlua docs/experiments/beam3d_water.lua [media=air,water] [gap_z_mm=0,5,10] [T=1] [gap_x_mm=15]
--   [BW_mm=10] [E=1e5] [K=2.2e5] [per_axis=2.5] [thick_mm=8]
--   thick_mm = 8.75 with per_axis = 2: the beam's lattice and the water's meet seamlessly (the forty-ninth session:
--   docs/results/history.md, "the seam between a body and its water"); at 8 mm the beam's lattice (6 spacings of
--   1.333 mm across) leaves a gap or an overlap against the water's.
local cq = require "cq"
local now = require("cq.clock").now

local A = arg or {}
local function list(s, d, num)
  local t = {}
  for v in (s ~= nil and s ~= "" and s or d):gmatch("[^,]+") do t[#t + 1] = num and tonumber(v) or v end
  return t
end
local MEDIA, GAPS = list(A[1], "air,water"), list(A[2], "0,5,10", true)
local T, GX = tonumber(A[3]) or 1, (tonumber(A[4]) or 15) * 1e-3
local BW, E, K, PPA = (tonumber(A[5]) or 10) * 1e-3, tonumber(A[6]) or 1e5, tonumber(A[7]) or 2.2e5,
  tonumber(A[8]) or 2.5
local DX, THICK, LEN, BELOW, WALL = 2.5e-3, (tonumber(A[9]) or 8) * 1e-3, 50e-3, 15e-3, 3

local function run(medium, gz)
  -- the grid: the walls' innermost nodes at index WALL - 1 and res - WALL on each axis, so the water between them
  local function cells(inside) return 2 * WALL - 1 + math.ceil(inside / DX - 1e-9) end
  local res = { cells(2 * GX + THICK), cells(BELOW + LEN) + 1, cells(2 * gz + BW) }
  local lo = (WALL - 1) * DX
  local top = (res[2] - WALL) * DX -- the sticky band's innermost nodes: the beam's root 1 cell into the band
  local zin = (res[3] - 2 * WALL + 1) * DX -- between the z walls' innermost nodes
  local bx0, by0, bz0 = lo + GX, top - LEN, lo + (zin - BW) / 2
  local r = cq.robot { dim = 3 }
  r:box { offset = { bx0, by0, bz0 }, size = { THICK, LEN + DX, BW }, spacing = DX / 2, name = "beam",
    material = { model = "neohookean", E = E, nu = 0.3, density = 3000 } }
  local nb = #r.x
  if medium == "water" then
    local h = DX / PPA
    local size = { math.floor((res[1] - 2 * WALL + 1) * DX / h + 1e-9) * h, math.floor((top - lo) / h + 1e-9) * h,
      math.floor(zin / h + 1e-9) * h }
    r:box { offset = { lo, lo, lo }, size = size, spacing = h, name = "water",
      material = { preset = "water", bulk = K },
      keep = function(x)
        return x[1] < bx0 - h / 4 or x[1] > bx0 + THICK + h / 4 or x[2] < by0 - h / 4 or x[3] < bz0 - h / 4 or
          x[3] > bz0 + BW + h / 4
      end }
  end
  local g = 9.8 * E / 1e7
  local M = E * 0.7 / (1.3 * 0.4) -- the beam's P-wave modulus
  local c = math.max(math.sqrt(M / 3000), medium == "water" and math.sqrt(K / 1000) or 0)
  local w, s = r:world { res = res, dx = DX, dt = 0.4 * DX / c, gravity = { g, 0, 0 }, damping = 25, threads = 1,
    walls = { all = { type = "slip", thickness = WALL }, top = { type = "sticky", thickness = WALL } } }
  local n, tip = w.n, {}
  for i = 0, nb - 1 do if s.x[n + i] < by0 + 2e-3 then tip[#tip + 1] = i + 1 end end
  local x0 = s:mean("x", tip)[1]
  local steps = math.floor(T / w.dt + 0.5)
  local every = math.max(1, math.floor(steps / 10 + 0.5))
  local t0, path = now(), {}
  for k = 1, steps do
    w:step(s, {})
    if k % every == 0 or k == steps then path[#path + 1] = string.format("%.3f", (s:mean("x", tip)[1] - x0) * 1e3) end
  end
  local d = (s:mean("x", tip)[1] - x0) * 1e3
  print(string.format("%s gap_z %g mm (res %d x %d x %d, %d particles, dt %.3g s, %.0f s): tip x every %.3g s: %s mm",
    medium, gz * 1e3, res[1], res[2], res[3], n, w.dt, now() - t0, every * w.dt, table.concat(path, " ")))
  io.stdout:flush()
  w:release()
  return d
end

local air
for _, medium in ipairs(MEDIA) do
  for _, gz in ipairs(medium == "air" and { GAPS[1] } or GAPS) do
    local d = run(medium, gz * 1e-3)
    if medium == "air" then air = d
    elseif air then
      print(string.format("  water / air at gap_z %g mm: %.3f (buoyancy alone: 0.667)", gz, d / air))
    end
  end
end
