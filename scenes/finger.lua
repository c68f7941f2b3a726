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
function M.explicit_dt(bulk) return 0.5 * M.DX / math.sqrt((bulk + 4 / 3 * M.SHEAR) / 1080) end

--- A world and state. opts: mesh_size (mm, 3), msh (a .msh file of scenes/finger.geo already meshed, for machines
--- without gmsh; replaces mesh_size), bulk (Pa, 1.75e9), damping (1/s, 25: near-critical for the first bending mode,
--- ~15 rad/s), integrator ("explicit"), dt (the explicit substep by default), control_dt (s: a control step of
--- ceil(control_dt / dt) substeps; default one substep), implicit (solver options), threads, water (nil: the finger
--- hangs in air; a table: it hangs in a tank of water, see M.WATER).
-- The mesh runs along its x from the base (x = 0) to the tip, y up; here it hangs from the ceiling: mesh x becomes
-- world -y and mesh y world +x (a rotation about z), positions and chamber normals alike. The base's first 5 mm sit
-- inside the top wall's sticky band (3 cells: its last 3.5 mm), which clamps them; the finger curls towards -x,
-- its layer's side.
-- The tank of water (seed 003 sec. 4.3): a grid narrowed around the finger in x and z, so that its slip walls (3
-- cells, on every side) are the tank's walls and floor (about 38 x 38 mm inside), filled from the floor to level (m,
-- its free surface, below the clamp) with Newtonian water (density 1000, viscosity 1 mPa s) sampled every spacing
-- (m), less the finger's outer box grown by half a spacing. gap (m): the water between the finger and the walls on
-- its -x side (where it bends), its +x side and either z side. bulk: the water's bulk modulus. Water's real 2.2 GPa would hold the
-- explicit substep to about 1 us; the default 2e6 Pa still gives a sound speed of 45 m/s, a hundred times the
-- fingertip's speed, so the water stays within 0.1 % of its volume (incompressible for this flow) while the substep
-- is 40 times longer; implicit substeps take the real one.
M.WATER = { bulk = 2e6, visc = 1e-3, spacing = M.DX / 1.25, level = 0.125, gap = { 0.012, 0.008, 0.008 } }
local WALL = 3 -- cells of every wall of the grid

-- The finger's outer box in world coordinates (the mesh is L x H x W = 100 x 16 x 20 mm, posed as below).
local LENGTH, HEIGHT, WIDTH = 0.100, 0.016, 0.020
local function y0() return (M.RES[2] - 1.6) * M.DX end -- the base just inside the grid's last valid row

-- The water options: opts.water (true or a table) merged over M.WATER, checked.
local function water_options(o)
  local w = {}
  for k, v in pairs(M.WATER) do w[k] = v end
  for k, v in pairs(o == true and {} or o) do
    if M.WATER[k] == nil then
      error(string.format("finger.build: water.%s is not an option (bulk, visc, spacing, level, gap)", tostring(k)), 3)
    end
    w[k] = v
  end
  return w
end

-- The grid's resolution and the finger's outer box's low corner in x and z: in air the full grid, in water (w) the
-- grid whose walls' innermost nodes (WALL - 1 and res - WALL) lie gap from the finger, the slack on its +x side. The
-- water fills the grid up to those nodes (docs/api.md, fluids: water placed a cell inside them creeps into the gap).
local function layout(w)
  if not w then return M.RES, 0.11, 0.02 end
  local function cells(width) return 2 * WALL - 1 + math.ceil(width / M.DX - 1e-9) end
  local res = { cells(w.gap[1] + HEIGHT + w.gap[2]), M.RES[2], cells(WIDTH + 2 * w.gap[3]) }
  return res, (WALL - 1) * M.DX + w.gap[1], (WALL - 1) * M.DX + w.gap[3]
end

-- Adds the water w to robot: the grid's interior (res) from the floor to the surface, less the finger's box (low
-- corner X0, Z0) grown by half a spacing, as five boxes (below the finger, and four around it up to the surface).
local function add_water(robot, w, res, X0, Z0)
  local lo = { (WALL - 1) * M.DX, (WALL - 1) * M.DX, (WALL - 1) * M.DX }
  local hi = { (res[1] - WALL) * M.DX, w.level, (res[3] - WALL) * M.DX }
  local h, m = w.spacing, w.spacing / 2
  local klo = { X0 - m, y0() - LENGTH - m, Z0 - m }
  local khi = { X0 + HEIGHT + m, hi[2], Z0 + WIDTH + m }
  local mat = { preset = "water", bulk = w.bulk, visc = w.visc }
  local function box(a, b)
    robot:box { offset = a, size = { b[1] - a[1], b[2] - a[2], b[3] - a[3] }, spacing = h, material = mat,
      name = "water" }
  end
  box(lo, { hi[1], klo[2], hi[3] })
  box({ lo[1], klo[2], lo[3] }, { klo[1], hi[2], hi[3] })
  box({ khi[1], klo[2], lo[3] }, { hi[1], hi[2], hi[3] })
  box({ klo[1], klo[2], lo[3] }, { khi[1], hi[2], klo[3] })
  box({ klo[1], klo[2], khi[3] }, { khi[1], hi[2], hi[3] })
end

function M.build(opts)
  opts = opts or {}
  local water = opts.water and water_options(opts.water) or nil
  local bulk = opts.bulk or 1.75e9
  local robot = cq.robot { dim = 3 }
  local mesh_size = not opts.msh and (opts.mesh_size or 3) or nil
  local finger = robot:gmsh { path = opts.msh or "scenes/finger.geo", mesh_size = mesh_size, scale = 1e-3,
    offset = { 0, 0, 0 }, material = { preset = "dragonskin30", bulk = bulk } }
  local res, X0, Z0 = layout(water)
  local Y0 = y0()
  for _, p in ipairs(finger.particles) do
    local x = robot.x[p]
    x[1], x[2], x[3] = X0 + x[2], Y0 - x[1], Z0 + x[3]
  end
  local wall = finger.chambers.chamber
  for i, n in ipairs(wall.normal) do wall.normal[i] = { n[2], -n[1], n[3] } end
  robot:chamber { wall = wall, max = M.P_MAX }
  local walls = { top = { type = "sticky", thickness = 3 } }
  local dt = opts.dt or M.explicit_dt(bulk)
  if water then
    add_water(robot, water, res, X0, Z0)
    walls.all = { type = "slip", thickness = WALL }
    dt = opts.dt or math.min(dt, 0.5 * M.DX / math.sqrt(water.bulk / 1000))
  end
  local substeps = 1
  if opts.control_dt then
    substeps = math.ceil(opts.control_dt / dt - 1e-9)
    dt = opts.control_dt
  end
  local world, s = robot:world { res = res, dx = M.DX, dt = dt, substeps = substeps, gravity = { 0, -9.8, 0 },
    damping = opts.damping or 25, walls = walls,
    integrator = opts.integrator, implicit = opts.implicit, threads = opts.threads }
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
