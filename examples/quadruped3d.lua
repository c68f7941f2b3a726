-- A 3D quadruped from five boxes learns to walk along +x (sine controller, Adam); frames, a video and a loss plot.
-- Usage: cqlua examples/quadruped3d.lua [iters=40] [spacing=0.015625 (1/64)]   (--help: every key and its meaning)
local cq = require "cq"
local A = cq.args(arg, { name = "examples/quadruped3d.lua",
  about = "The README's 3D tutorial (no seed experiment): a quadruped of five boxes learns to walk along +x with a " ..
    "sine controller (Adam).",
  example = "cqlua examples/quadruped3d.lua iters=10 spacing=0.0208333",
  { "iters", 40, "Adam iterations", min = 1, integer = true },
  { "spacing", 1 / 64, "particle spacing", min = 0 },
})
local iters, spacing = A.iters, A.spacing
local T, dt = 40, 0.02                                      -- 0.8 s of control at 50 Hz
local soft = { model = "neohookean", E = 40, nu = 0.3, density = 1 }
local robot = cq.robot { dim = 3 }                          -- axes: x forward, y up (gravity), z sideways
local body = robot:box { offset = { 0.15, 0.14, 0.15 }, size = { 0.24, 0.06, 0.16 }, spacing = spacing,
  material = soft, name = "body" }
for i, corner in ipairs { { 0, 0 }, { 1, 0 }, { 0, 1 }, { 1, 1 } } do  -- four legs under the body's corners
  local leg = robot:box { offset = { 0.15 + 0.19 * corner[1], 0.0625, 0.15 + 0.11 * corner[2] },
    size = { 0.05, 0.0775, 0.05 }, spacing = spacing, material = soft, name = "leg " .. i }
  robot:pressure_actuator { groups = { leg }, axis = 2, max = 4 }  -- u > 0 shortens the leg
end
local world, s0 = robot:world { res = { 48, 20, 24 }, dx = 1 / 48, dt = dt, substeps = 20, gravity = { 0, -4, 0 },
  walls = { all = { type = "friction", friction = math.huge, thickness = 3 } } }
local controller = cq.sine { outputs = 4, dt = dt, omega = 15, seed = 3 }
local run = cq.rollout { world = world, steps = T, controller = controller, record = { "x", "v", "F" },
  final = cq.objectives.forward_progress(1) }      -- loss = -mean x at the end: walk towards +x
local opt = cq.adam { params = controller.params, lr = 0.05 }
local log = cq.log { name = "quadruped3d", columns = { "iteration", "loss", "distance", "seconds" } }
local x0 = s0:mean("x")[1]
for it = 1, iters do
  local loss = run:forward(s0)
  run:backward()
  log:iteration(it, iters, { loss = loss, distance = run.memo.state:mean("x")[1] - x0 })
  opt:step()
end
run:forward(s0)
local traj = run:trajectory()
cq.frames.write { trajectory = traj, dir = "out/quadruped3d", every = 2, width = 480 }  -- blue: contracting legs
cq.frames.write { trajectory = traj, dir = "out/quadruped3d_stress", every = 2, width = 480, color = "von_mises" }
cq.frames.video { dir = "out/quadruped3d", out = "out/quadruped3d.mp4", fps = 25 }
cq.plot { log = log, y = "distance", out = "out/quadruped3d_distance.png", title = "quadruped3d" }
cq.export.vtk { trajectory = traj, dir = "out/quadruped3d_vtk", every = 2 }  -- open frames.pvd in ParaView
print(string.format("quadruped3d: walked %.3f in %g s", run.memo.state:mean("x")[1] - x0, T * dt))
return log
