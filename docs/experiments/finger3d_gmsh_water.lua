-- docs/experiments/finger3d_gmsh_water.lua: seed 003's 3D finger (scenes/finger.lua: finger.geo meshed by gmsh,
-- DragonSkin-30 with its bulk lowered to 2 MPa, hanging from the top sticky band, no gravity, explicit, one thread) in
-- air or in its tank of grid water (bulk K), the chamber at p_kPa ramped over 0.1 s. sampling "lattice":
-- robot:gmsh{spacing = dx / 2} (the world's lattice, 2 per cell and axis; at dx 2 mm its points lie between the
-- drawing's whole millimetres) with the water on the same lattice less the finger's outer box, so they meet without a
-- seam; "elements": one particle per tetrahedron (mesh 3 mm) and the scene's water at 2.5 per cell and axis (the
-- seams robot:world warns of). Prints the tip's (dx, dy, dz) in mm six
-- times over T (docs/results/history.md, "a meshed body on the water's lattice").
-- rho: the water's density (kg/m^3; a lighter water tells its inertia from its pressure), gap_z_mm: the water beside
-- the finger's two z faces (the scene's 10 mm), fluid: the world's option ("grid"; "particle" for the J-bar and
-- two-field throwaway engine of water_two_field_throwaway.patch, with JBAR_WATER=1 and TWO_FIELD=1 set).
-- usage: cqlua docs/experiments/finger3d_gmsh_water.lua [media=water|air] [sampling=lattice|elements] [K=2e6]
--        [p_kPa=10] [T=0.6] [dx_mm=2.5] [rho=1000] [gap_z_mm=10] [fluid=grid] [level_mm=125] [contact=sticky]
-- contact: the world's fluid_contact ("separate": the water on a velocity field of its own, docs/api.md).
-- level_mm: the water's free surface (the scene's 125 mm: 7.5 mm below the top band's nodes at dx 2.5 mm; the water
-- the finger displaces comes within 1.5 cells of them by 0.15 s at 10 kPa: docs/results/history.md, the fifty-third
-- session).
package.path = "./scenes/?.lua;" .. package.path
local finger = require "finger"
local media, sampling, K = arg[1] or "water", arg[2] or "lattice", tonumber(arg[3] or 2e6)
local pk, T = tonumber(arg[4] or 10), tonumber(arg[5] or 0.6)
local lattice = sampling == "lattice"
local dx = tonumber(arg[6] or 2.5) * 1e-3
local rho, gap_z = tonumber(arg[7] or 1000), tonumber(arg[8] or 10) * 1e-3
local gap, fluid = { finger.WATER.gap[1], finger.WATER.gap[2], gap_z }, arg[9] or "grid"
local level = tonumber(arg[10] or 125) * 1e-3
local contact = arg[11] or "sticky"
local w, s, nf = finger.build { dx = dx, mesh_size = 3, spacing = lattice and dx / 2 or nil, bulk = 2e6, gravity = 0,
  water = media == "water" and { bulk = K, density = rho, gap = gap, level = level } or nil, threads = 1,
  fluid = fluid, fluid_contact = media == "water" and contact or nil }
local tip = finger.tip_of(w, s, nf)
local x0 = tip()
local steps = math.floor(T / w.dt + 0.5)
local every = math.floor(steps / 6)
local t0 = os.clock()
for k = 1, steps do
  w:step(s, { pk * 1e3 / finger.P_MAX * math.min(1, k * w.dt / 0.1) })
  if k % every == 0 then
    local x = tip()
    print(string.format("%s %s K %g rho %g gap_z %g mm p %g kPa t %.2f s: tip (%.3f, %.3f, %.3f) mm; %d finger particles, "
      .. "%d in all, %.0f s", media, sampling, K, rho, gap_z * 1e3, pk, k * w.dt, (x[1] - x0[1]) * 1e3,
      (x[2] - x0[2]) * 1e3, (x[3] - x0[3]) * 1e3, nf, w.n, os.clock() - t0))
    io.stdout:flush()
  end
end
