-- tools/gpu_quadruped.lua [iterations=3] [particles_k=85]: examples/quadruped3d.lua's robot at full seed size for the
-- GPU (issue 14: a 3D example training at about 85k particles): the same five boxes and controller, with the
-- particle spacing, the grid and the substeps scaled together (2 particles per cell per axis; substeps in proportion
-- to the resolution, so the substep stays at the example's fraction of the stable limit). Prints the particle count
-- and the seconds per iteration (forward + backward + Adam). backend "auto": the GPU when there is one.
local cq = require "cq"
local iters = tonumber(arg and arg[1]) or 3
local target = (tonumber(arg and arg[2]) or 85) * 1e3
local volume = 0.24 * 0.06 * 0.16 + 4 * 0.05 * 0.0775 * 0.05
local spacing = (volume / target) ^ (1 / 3)
local scale = 1 / (2 * spacing) / 48 -- cells per unit length over the example's 48
local T, dt = 40, 0.02
local soft = { model = "neohookean", E = 40, nu = 0.3, density = 1 }
local robot = cq.robot { dim = 3 }
robot:box { offset = { 0.15, 0.14, 0.15 }, size = { 0.24, 0.06, 0.16 }, spacing = spacing, material = soft, name = "body" }
for i, corner in ipairs { { 0, 0 }, { 1, 0 }, { 0, 1 }, { 1, 1 } } do
  local leg = robot:box { offset = { 0.15 + 0.19 * corner[1], 0.0625, 0.15 + 0.11 * corner[2] },
    size = { 0.05, 0.0775, 0.05 }, spacing = spacing, material = soft, name = "leg " .. i }
  robot:pressure_actuator { groups = { leg }, axis = 2, max = 4 }
end
local res = { math.ceil(48 * scale), math.ceil(20 * scale), math.ceil(24 * scale) }
local world, s0 = robot:world { res = res, dx = 1 / (48 * scale), dt = dt, substeps = math.ceil(20 * scale),
  gravity = { 0, -4, 0 }, walls = { all = { type = "friction", friction = math.huge, thickness = 3 } } }
local controller = cq.sine { outputs = 4, dt = dt, omega = 15, seed = 3 }
local run = cq.rollout { world = world, steps = T, controller = controller, final = cq.objectives.forward_progress(1) }
local opt = cq.adam { params = controller.params, lr = 0.05 }
print(string.format("gpu_quadruped: %d particles, grid %dx%dx%d, %d substeps per control step, %d steps, backend %s",
  world.n, res[1], res[2], res[3], world.substeps, T, world.backend))
local x0 = s0:mean("x")[1]
local clock = require "cq.clock"
for it = 1, iters do
  local t0 = clock.now()
  local loss = run:forward(s0)
  run:backward()
  opt:step()
  print(string.format("iteration %d: loss %.5f, walked %.4f, %.2f s", it, loss, -loss - x0,
    clock.now() - t0))
end
