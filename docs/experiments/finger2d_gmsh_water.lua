-- docs/experiments/finger2d_gmsh_water.lua: the 2D gmsh finger (scenes/finger2d.lua: finger2d.geo, DragonSkin-30 with
-- its bulk lowered to 2 MPa, lying along +x from the sticky left band, gravity 0 unless given, explicit, volumetric = "solids")
-- in air or in a tank of grid water (fluid = "grid") (gap below, beyond and above it, then a free surface), its chamber at p_kPa ramped over 0.1 s.
-- sampling "lattice": robot:gmsh{spacing = dx / 2}, the water on the same lattice (2 per cell and axis) less the
-- finger's outer box, so they meet without a seam; "elements": one particle per triangle (mesh 1.5 mm) and the water
-- at 2.5 per cell and axis (the seams robot:world warns of). Prints the tip's (dx, dy) in mm five times over T
-- (docs/results/history.md, "a meshed body on the water's lattice").
-- rho: the water's density (kg/m^3; a lighter water tells its inertia from its pressure); integrator and dt (s: the
-- explicit substep 0.4 dx / c by default, c about the faster of the water's and the finger's wave speeds), fluid (the
-- world's option, "grid"; "particle" for the throwaway engine of water_two_field_throwaway.patch, with JBAR_WATER=1
-- and TWO_FIELD=1 set).
-- usage: cqlua docs/experiments/finger2d_gmsh_water.lua [media=water|air] [sampling=lattice|elements] [K=2.2e5]
--        [p_kPa=5] [T=1] [dx_mm=2.5] [gap_mm=5] [gravity=0] [rho=1000] [integrator=explicit] [dt] [fluid=grid]
package.path = "./scenes/?.lua;" .. package.path
local finger2d = require "finger2d"
local media, sampling, K = arg[1] or "water", arg[2] or "lattice", tonumber(arg[3] or 2.2e5)
local pk, T = tonumber(arg[4] or 5), tonumber(arg[5] or 1)
local dx, gap = tonumber(arg[6] or 2.5) * 1e-3, tonumber(arg[7] or 5) * 1e-3
local gravity = tonumber(arg[8] or 0) -- m/s^2 (then the tip is taken from its sag at 0 kPa over the same time: not
-- printed here; compare air and water runs at 0 kPa)
local rho, integrator = tonumber(arg[9] or 1000), arg[10] or "explicit"
local lattice = sampling == "lattice"
local c = math.sqrt((math.max(2e6, K * 1000 / rho) + 4 / 3 * 48e3) / 1000) -- (the water's K / rho as at 1000 kg/m^3)
local dt = tonumber(arg[11]) or 0.4 * dx / c
local w, s, nf = finger2d.build { dx = dx, gap = gap, bulk = 2e6, spacing = lattice and dx / 2 or nil, mesh = 1.5e-3,
  water = media == "water" and { bulk = K, density = rho, per_axis = lattice and 2 or 2.5 } or nil,
  integrator = integrator, dt = dt,
  gravity = gravity, threads = 1, volumetric = "solids", fluid = arg[12] or "grid" }
local tip = finger2d.tip(s, nf)
local x0 = s:mean("x", tip)
local steps = math.floor(T / dt + 0.5)
local every = math.floor(steps / 5 + 0.5)
local out, t0 = {}, os.clock()
for k = 1, steps do
  w:step(s, { pk / 20 * math.min(1, k * dt / 0.1) })
  if k % every == 0 then
    local x = s:mean("x", tip)
    out[#out + 1] = string.format("%.3f/%.3f", (x[1] - x0[1]) * 1e3, (x[2] - x0[2]) * 1e3)
  end
end
print(string.format("%s %s K %g rho %g %s dt %.3g s p %g kPa: %d finger particles, %d in all, %.0f s; tip dx/dy mm "
  .. "every %g s: %s", media, sampling, K, rho, integrator, dt, pk, nf, w.n, os.clock() - t0, T / 5,
  table.concat(out, " ")))
