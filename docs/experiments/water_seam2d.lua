-- docs/experiments/water_seam2d.lua: what holds a soft body in grid water (issue 62 item 5; docs/results/history.md,
-- "the seam between a body and its water"). scenes/fluid_validation.lua's buoyed beam (neo-Hookean, nu 0.3, density
-- 3000, 75 mm long, hanging from the sticky top band under a sideways gravity 9.8 E / 1e7; dx 2.5 mm; world damping
-- 25/s) with its width, the water's sampling and bulk modulus chosen, so that the beam's lattice and the water's meet
-- seamlessly (a width a whole number of the water's spacings, the water at a whole number of particles per cell and
-- axis: the fill is 1 at every node) or leave a gap (the scene's 8 mm at 2 per cell and axis: a 0.75 mm strip of no
-- particle along the beam's right side). Prints the tip's x every T / 10 (mm); in water the expected deflection is
-- 2/3 of air's (buoyancy).
-- usage: cqlua docs/experiments/water_seam2d.lua [E=1e5] [K=2.2e4] [width_mm=8.75] [per_axis=2] [T=2] [media=water|air]
--        [integrator=explicit] [dt] [spacing_mm (the beam's lattice; dx / 2)]
--   explicit dt: 0.4 of the CFL limit of the beam and the water. Examples (2026-11-29, forty-ninth session):
--   cqlua docs/experiments/water_seam2d.lua 1e5 2.2e4 8.75 2 2 water   -- seamless: 0.959 mm at 2 s (air 1.494)
--   cqlua docs/experiments/water_seam2d.lua 1e5 2.2e4 8 2 2 water      -- a 0.3-cell gap: 0.015 mm
package.path = "./scenes/?.lua;" .. package.path
local cq = require "cq"
local E, K = tonumber(arg[1]) or 1e5, tonumber(arg[2]) or 2.2e4
local bw, ppa, T = (tonumber(arg[3]) or 8.75) * 1e-3, tonumber(arg[4]) or 2, tonumber(arg[5]) or 2
local media, integrator, dt_arg, bs_mm = arg[6] or "water", arg[7] or "explicit", tonumber(arg[8]), tonumber(arg[9])
local dx, res = 2.5e-3, { 40, 48 }
local bx0, by0, by1 = 45e-3, 40e-3, 115e-3
local bx1 = bx0 + bw
local r = cq.robot { dim = 2 }
r:box { offset = { bx0, by0 }, size = { bw, by1 - by0 }, spacing = bs_mm and bs_mm * 1e-3 or dx / 2, name = "beam",
  material = { model = "neohookean", E = E, nu = 0.3, density = 3000 } }
local nb = #r.x
if media == "water" then -- from the walls' first nodes to below the sticky band, less the beam
  local h, lo, hi, top = dx / ppa, 2 * dx, (res[1] - 3) * dx, 112.5e-3
  r:box { offset = { lo, lo }, size = { math.floor((hi - lo) / h + 1e-9) * h, math.floor((top - lo) / h + 1e-9) * h },
    spacing = h, name = "water", material = { preset = "water", bulk = K },
    keep = function(x) return x[1] < bx0 - h / 4 or x[1] > bx1 + h / 4 or x[2] < by0 - h / 4 end }
end
local dt = dt_arg or 0.4 * dx / math.max(math.sqrt(E * 0.7 / 0.52 / 3000), math.sqrt(K / 1000))
local _, w, s = require("cq.robot").warnings_of(r.world, r, { res = res, dx = dx, dt = dt,
  gravity = { 9.8 * E / 1e7, 0 }, damping = 25, integrator = integrator,
  walls = { all = { type = "slip", thickness = 3 }, top = { type = "sticky", thickness = 3 } } })
local n, tip = w.n, {}
for i = 0, nb - 1 do if s.x[n + i] < by0 + 2e-3 then tip[#tip + 1] = i end end
local function tip_x() local m = 0 for _, i in ipairs(tip) do m = m + s.x[i] end return m / #tip end
local x0, path = tip_x(), {}
local every = math.max(1, math.floor(T / dt / 10 + 0.5))
local t0 = os.clock()
for k = 1, every * 10 do
  w:step(s, {})
  if k % every == 0 then path[#path + 1] = string.format("%.3f", (tip_x() - x0) * 1e3) end
end
print(string.format("E %g K %g width %.2f mm, %g per cell and axis, %s, %s, %d particles, %.0f s:", E, K, bw * 1e3,
  ppa, media, integrator, n, os.clock() - t0), table.concat(path, " "))
