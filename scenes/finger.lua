-- Seed 003's pneumatic finger as a reusable scene: scenes/finger.geo meshed by gmsh (one particle per tetrahedron),
-- DragonSkin-30 (the seed's Mooney-Rivlin fit), hanging from a sticky ceiling under gravity, its chambers driven by
-- one actuator (u = 1 is 20 kPa). examples/finger_pressure.lua runs it explicitly at every pressure;
-- tools/implicit_finger.lua compares the integrators on it. Asserts nothing.
local cq = require "cq"

local M = {}
M.P_MAX = 20e3 -- Pa at u = 1
M.DX = 2.5e-3  -- m: the thinnest walls (3 mm) span about one cell
M.RES = { 64, 56, 24 }
M.SHEAR = 2 * (1.19e3 + 23.028e3) -- Pa: G = 2 (C10 + C01) of the DragonSkin-30 fit

--- The explicit substep: half the CFL limit dx / c of the P-wave speed c = sqrt((K + 4G/3) / rho).
function M.explicit_dt(bulk, dx) return 0.5 * (dx or M.DX) / math.sqrt((bulk + 4 / 3 * M.SHEAR) / 1080) end

--- A world and state. opts: mesh_size (mm, 3), msh (a .msh file of scenes/finger.geo already meshed, for machines
--- without gmsh; replaces mesh_size), bulk (Pa, 1.75e9), damping (1/s, 25: near-critical for the first bending mode,
--- ~15 rad/s), integrator ("explicit"), dt (the explicit substep by default), control_dt (s: a control step of
--- ceil(control_dt / dt) substeps; default one substep), implicit (solver options), threads, volumetric, fluid,
--- fluid_contact, volumetric_groups, volumetric_own (cq.world's options), water (nil: the finger
--- hangs in air; a table: it hangs in a tank of water, see M.WATER), gravity (m/s^2, 9.8), spacing (m: the finger's
--- particles on the world's lattice of this spacing, robot:gmsh's option, instead of one per tetrahedron; the finger's
--- corner then moves down to a whole number of spacings, and in water the water takes the same lattice (its spacing
--- replaced), so the two meet without a seam: docs/modelling.md "a fluid meeting a solid"), dx (m, M.DX: the cell; the
--- grid keeps its room in metres, the base 3.5 mm inside the top band of 3 cells).
-- The mesh runs along its x from the base (x = 0) to the tip, y up; here it hangs from the ceiling: mesh x becomes
-- world -y and mesh y world +x (a rotation about z), positions and chamber normals alike. The base's first 5 mm sit
-- inside the top wall's sticky band (3 cells: its last 3.5 mm), which clamps them; the finger curls towards -x,
-- its layer's side.
-- The tank of water (seed 003 sec. 4.3): a grid narrowed around the finger in x and z, so that its slip walls (3
-- cells, on every side) are the tank's walls and floor (about 40 x 40 mm inside), filled from the floor to level (m,
-- its free surface, below the clamp) with Newtonian water (density 1000 kg/m^3, viscosity 1 mPa s: `density`,
-- `visc`) sampled every spacing (m; one that divides the finger's 16 x 20 mm sides keeps the water half a spacing
-- from them; 1 mm, 2.5 particles per cell and axis: at 2 mm, 1.25, the water sank and dragged the finger,
-- docs/results/history.md "Issue 11: the water sinks"; robot:world warns below 2), less the finger's outer box. gap
-- (m): the water between the finger and the walls on its -x side (where it bends), its +x side and either z side (at
-- least; the finger is centred in z). bulk: the water's bulk modulus. Water's real 2.2 GPa would hold the explicit
-- substep to about 1 us; the default 2e6 Pa still gives a sound speed of 45 m/s, a hundred times the fingertip's
-- speed, so the water stays within 0.1 % of its volume (incompressible for this flow) while the substep is 40 times
-- longer; implicit substeps take the real one.
M.WATER = { bulk = 2e6, visc = 1e-3, density = 1000, spacing = M.DX / 2.5, level = 0.125,
  gap = { 0.014, 0.010, 0.010 } }
local WALL = 3 -- cells of every wall of the grid

-- The finger's outer box in world coordinates (the mesh is L x H x W = 100 x 16 x 20 mm, posed as below).
local LENGTH, HEIGHT, WIDTH = 0.100, 0.016, 0.020
-- The base: 3.5 mm inside the top band of 3 cells (at dx 2.5 mm just inside the grid's last valid row).
local function y0(res2, dx) return (res2 - 3) * dx + 3.5e-3 end
-- The air's grid at cell dx: M.RES's room (160 x 140 x 60 mm).
local function air_res(dx)
  local res = {}
  for a = 1, 3 do res[a] = math.ceil(M.RES[a] * M.DX / dx - 1e-9) end
  return res
end

-- The water options: opts.water (true or a table) merged over M.WATER, checked.
local function water_options(o)
  local w = {}
  for k, v in pairs(M.WATER) do w[k] = v end
  for k, v in pairs(o == true and {} or o) do
    if M.WATER[k] == nil then
      error(string.format("finger.build: water.%s is not an option (bulk, visc, density, spacing, level, gap)",
        tostring(k)), 3)
    end
    w[k] = v
  end
  return w
end

--- The grid and the boxes of a world (m, world coordinates): water nil (the finger in air) or water options (a table
--- merged over M.WATER). Returns { res, finger_lo, finger_hi (the finger's outer box; its top above the grid),
--- water_lo, water_hi (water only: the room the water fills, from the walls' innermost nodes up to its level) }. In
--- water the grid's walls' innermost nodes (WALL - 1 and res - WALL) lie gap from the finger, the slack (cells are
--- 2.5 mm) on its +x side and shared by its z sides: the water fills the grid up to those nodes (docs/api.md, fluids:
--- water placed a cell inside them creeps into the gap).
function M.tank(water, spacing, dx)
  dx = dx or M.DX
  local w = water and water_options(water) or nil
  local res, X0, Z0 = air_res(dx), 0.11, 0.02
  if w then
    local function cells(width) return 2 * WALL - 1 + math.ceil(width / dx - 1e-9) end
    res = { cells(w.gap[1] + HEIGHT + w.gap[2]), res[2], cells(WIDTH + 2 * w.gap[3]) }
    local inside_z = (res[3] - 2 * WALL + 1) * dx -- between the walls' innermost nodes
    X0, Z0 = (WALL - 1) * dx + w.gap[1], (WALL - 1) * dx + (inside_z - WIDTH) / 2
  end
  local Y0 = y0(res[2], dx)
  if spacing then -- the finger's lattice on the world's: its corner a whole number of spacings
    X0, Y0, Z0 = M.on_lattice(X0, spacing), M.on_lattice(Y0, spacing), M.on_lattice(Z0, spacing)
  end
  local t = { res = res, finger_lo = { X0, Y0 - LENGTH, Z0 }, finger_hi = { X0 + HEIGHT, math.huge, Z0 + WIDTH },
    base = Y0 }
  if w then
    t.water_lo = { (WALL - 1) * dx, (WALL - 1) * dx, (WALL - 1) * dx }
    t.water_hi = { (res[1] - WALL) * dx, w.level, (res[3] - WALL) * dx }
  end
  return t
end

--- x rounded down to a whole number of spacings h.
function M.on_lattice(x, h) return math.floor(x / h + 1e-9) * h end

-- Adds the water w to robot in tank t (M.tank): the water's room less the finger's box, as one even lattice whose
-- cells meet the finger's faces in x and z, so that the water's first particles sit half a spacing from every side
-- face (the box's sides are whole spacings). Lattices that meet the faces unevenly (boxes around the finger each
-- rounding the spacing to its own size, or one lattice from the tank's corner) push the finger sideways at rest:
-- docs/results/history.md. In y the lattice starts at the floor.
local function add_water(robot, w, t)
  local h, lo, hi, flo, fhi = w.spacing, t.water_lo, t.water_hi, t.finger_lo, t.finger_hi
  local offset, size = {}, {}
  for a = 1, 3 do
    offset[a] = a == 2 and lo[a] or flo[a] - math.floor((flo[a] - lo[a]) / h + 1e-9) * h
    size[a] = math.floor((hi[a] - offset[a]) / h + 1e-9) * h
  end
  local function outside_finger(x)
    for a = 1, 3 do if x[a] < flo[a] - h / 4 or x[a] > fhi[a] + h / 4 then return true end end -- (h / 4: a point
    -- half a spacing outside a face is water, one a quarter inside it is the finger's)
    return false
  end
  robot:box { offset = offset, size = size, spacing = h,
    material = { preset = "water", bulk = w.bulk, visc = w.visc, density = w.density }, name = "water",
    keep = outside_finger }
end

function M.build(opts)
  opts = opts or {}
  local water = opts.water and water_options(opts.water) or nil
  local bulk = opts.bulk or 1.75e9
  local robot = cq.robot { dim = 3 }
  local mesh_size = not opts.msh and (opts.mesh_size or 3) or nil
  local finger = robot:gmsh { path = opts.msh or "scenes/finger.geo", mesh_size = mesh_size, scale = 1e-3,
    offset = { 0, 0, 0 }, spacing = opts.spacing, material = { preset = "dragonskin30", bulk = bulk } }
  if water and opts.spacing then water.spacing = opts.spacing end
  local dx = opts.dx or M.DX
  local tank = M.tank(opts.water, opts.spacing, dx)
  local X0, Y0, Z0 = tank.finger_lo[1], tank.base, tank.finger_lo[3]
  for _, p in ipairs(finger.particles) do
    local x = robot.x[p]
    x[1], x[2], x[3] = X0 + x[2], Y0 - x[1], Z0 + x[3]
  end
  local wall = finger.chambers.chamber
  for i, n in ipairs(wall.normal) do wall.normal[i] = { n[2], -n[1], n[3] } end
  for i, o in ipairs(wall.offset) do wall.offset[i] = { o[2], -o[1], o[3] } end -- where on the wall the pressure acts
  robot:chamber { wall = wall, max = M.P_MAX }
  local walls = { top = { type = "sticky", thickness = 3 } }
  local gravity = opts.gravity or 9.8
  local dt = opts.dt or M.explicit_dt(bulk, dx)
  if water then
    add_water(robot, water, tank)
    walls.all = { type = "slip", thickness = WALL }
    dt = opts.dt or math.min(dt, 0.5 * dx / math.sqrt(water.bulk / water.density))
  end
  local substeps = 1
  if opts.control_dt then
    substeps = math.ceil(opts.control_dt / dt - 1e-9)
    dt = opts.control_dt
  end
  local world, s = robot:world { res = tank.res, dx = dx, dt = dt, substeps = substeps, gravity = { 0, -gravity, 0 },
    damping = opts.damping or 25, walls = walls,
    integrator = opts.integrator, implicit = opts.implicit, threads = opts.threads, volumetric = opts.volumetric,
    fluid = opts.fluid, fluid_contact = opts.fluid_contact, volumetric_groups = opts.volumetric_groups,
    volumetric_own = opts.volumetric_own }
  return world, s, #finger.particles -- the finger's particles come first, then the water's
end

--- The fingertip: the particles within 3 mm of the tip face (the lowest of the finger's n_finger particles, all by
--- default, at the start); a function returning their mean position.
function M.tip_of(world, s, n_finger)
  local ymin, nf = math.huge, n_finger or world.n
  for i = 0, nf - 1 do ymin = math.min(ymin, s.x[world.n + i]) end
  local tip = {}
  for i = 0, nf - 1 do if s.x[world.n + i] < ymin + 3e-3 then tip[#tip + 1] = i end end
  return function()
    local m = { 0, 0, 0 }
    for _, i in ipairs(tip) do for a = 1, 3 do m[a] = m[a] + s.x[(a - 1) * world.n + i] / #tip end end
    return m
  end
end

return M
