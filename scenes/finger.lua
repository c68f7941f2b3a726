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

--- A world and state. opts: mesh_size (mm, 3), bulk (Pa, 1.75e9), damping (1/s, 25: near-critical for the first
--- bending mode, ~15 rad/s), integrator ("explicit"), dt (the explicit substep by default), implicit (solver
--- options), threads.
-- The mesh runs along its x from the base (x = 0) to the tip, y up; here it hangs from the ceiling: mesh x becomes
-- world -y and mesh y world +x (a rotation about z), positions and chamber normals alike. The base's first 5 mm sit
-- inside the top wall's sticky band (3 cells: its last 3.5 mm), which clamps them; the finger curls towards -x,
-- its layer's side.
function M.build(opts)
  opts = opts or {}
  local bulk = opts.bulk or 1.75e9
  local robot = cq.robot { dim = 3 }
  local finger = robot:gmsh { path = "scenes/finger.geo", mesh_size = opts.mesh_size or 3, scale = 1e-3,
    offset = { 0, 0, 0 }, material = { preset = "dragonskin30", bulk = bulk } }
  local X0, Y0, Z0 = 0.11, (M.RES[2] - 1.6) * M.DX, 0.02 -- the base just inside the grid's last valid row
  for _, p in ipairs(finger.particles) do
    local x = robot.x[p]
    x[1], x[2], x[3] = X0 + x[2], Y0 - x[1], Z0 + x[3]
  end
  local wall = finger.chambers.chamber
  for i, n in ipairs(wall.normal) do wall.normal[i] = { n[2], -n[1], n[3] } end
  robot:chamber { wall = wall, max = M.P_MAX }
  return robot:world { res = M.RES, dx = M.DX, dt = opts.dt or M.explicit_dt(bulk), gravity = { 0, -9.8, 0 },
    damping = opts.damping or 25, walls = { top = { type = "sticky", thickness = 3 } },
    integrator = opts.integrator, implicit = opts.implicit, threads = opts.threads }
end

--- The fingertip: the particles within 3 mm of the tip face (the lowest at the start); a function returning their
--- mean position.
function M.tip_of(world, s)
  local ymin = math.huge
  for i = 0, world.n - 1 do ymin = math.min(ymin, s.x[world.n + i]) end
  local tip = {}
  for i = 0, world.n - 1 do if s.x[world.n + i] < ymin + 3e-3 then tip[#tip + 1] = i end end
  return function()
    local m = { 0, 0, 0 }
    for _, i in ipairs(tip) do for a = 1, 3 do m[a] = m[a] + s.x[(a - 1) * world.n + i] / #tip end end
    return m
  end
end

return M
