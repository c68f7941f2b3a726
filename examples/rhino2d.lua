-- Seed 000 sec. 5.2 "2D rhino": a rhino loaded from a PNG (scenes/rhino.png, drawn by scenes/make_assets.lua) in one
-- call: its grey pixels become the body, its four coloured feet four pressure actuators. A closed-loop MLP
-- (k-means centroid observer) trained with Adam makes it walk right.
-- Usage: cqlua examples/rhino2d.lua [iters=40] [stride=2 (pixels per particle; 2 = 4,931 particles, 1 = 19,666)]
--   [lr=5e-3]   (--help: every key and its meaning)
local cq = require "cq"
local A = cq.args(arg, { name = "examples/rhino2d.lua",
  about = "Seed 000 sec. 5.2 \"2D rhino\": a rhino from a PNG (four coloured feet = four pressure actuators) learns " ..
    "to walk right with a closed-loop MLP (Adam).",
  example = "cqlua examples/rhino2d.lua iters=10 stride=4",
  { "iters", 40, "Adam iterations", min = 1, integer = true },
  { "stride", 2, "pixels per particle (2: 4,931 particles, 1: 19,666)", min = 0 },
  { "lr", 5e-3, "Adam's learning rate", min = 0 },
})
local iters, stride, lr = A.iters, A.stride, A.lr
local T, dt, substeps = 200, 0.02, 25                                 -- 4 s of control at 50 Hz
local pixel = 1 / 512                                                 -- the 270 x 153 picture is 0.53 x 0.30

local robot = cq.robot { dim = 2 }
local rhino = robot:image { path = "scenes/rhino.png", scale = pixel, spacing = stride * pixel, offset = { 0.1, 3 / 128 },
  material = { model = "neohookean", E = 30, nu = 0.3, density = 1 }, axis = 2, max = 10 }
local world, s0 = robot:world { res = { 384, 64 }, dx = 1 / 128, dt = dt, substeps = substeps, gravity = { 0, -3.8 },
  walls = { all = { type = "friction", friction = math.huge, thickness = 3 } } }

-- Seed 000: a k-means observer (8 clusters of the rest shape), positions relative to the body, velocities and a clock.
local observer = cq.centroid_observer { groups = cq.kmeans_groups(s0, 8), fields = { "x", "v" }, relative = true,
  clock = { waves = 4, period = 50 } }
local controller = cq.mlp { inputs = observer.size(2), outputs = world.n_actuators, hidden = { 64, 64 } }
local O = cq.objectives
local run = cq.rollout { world = world, steps = T, observer = observer, controller = controller,
  final = O.forward_progress(1), running = O.weighted { { O.actuation_penalty(), 1e-6 } } }
local x0 = s0:mean("x")[1]
local result = cq.train { rollout = run, state = s0, iterations = iters, name = "rhino2d", keep_best = true,
  optimizer = cq.adam { params = controller.params, lr = lr, clip_norm = 1 },
  columns = { "distance" }, values = function() return { distance = run.memo.state:mean("x")[1] - x0 } end }
run:forward(s0)                                                       -- the best controller, once more
local walked = run.memo.state:mean("x")[1] - x0
print(string.format("rhino2d: %d particles walked %.3f to the right in %g s (controller of iteration %d)", world.n,
  walked, T * dt, result.best.iteration))
result.log.walked = walked
cq.frames.write { trajectory = run:trajectory(), dir = "out/rhino2d", every = 4, width = 800, view = { 0, 0, 1.6, 0.5 } }
return result.log
