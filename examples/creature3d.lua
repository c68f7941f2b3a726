-- Seed 000 sec. 5.2 "3D Bulbasaur": a four-legged creature loaded from a mesh (scenes/creature.stl, built by
-- scenes/make_assets.lua) and filled with particles; a pressure actuator in each leg (the four quadrants of the
-- bottom of the design, as in the seed); a closed-loop MLP (k-means centroid observer) trained with Adam makes it
-- walk right (+x).
-- Usage: cqlua examples/creature3d.lua [iters=40] [spacing=0.0078125 (1/128: 21,468 particles)] [lr=3e-3]
--   (--help: every key and its meaning)
local cq = require "cq"
local A = cq.args(arg, { name = "examples/creature3d.lua",
  about = "Seed 000 sec. 5.2 \"3D Bulbasaur\": a four-legged creature from an STL mesh learns to walk right with a " ..
    "closed-loop MLP (Adam).",
  example = "cqlua examples/creature3d.lua iters=10 spacing=0.0208333",
  { "iters", 40, "Adam iterations", min = 1, integer = true },
  { "spacing", 1 / 128, "particle spacing (1/128: 21,468 particles)", min = 0 },
  { "lr", 3e-3, "Adam's learning rate", min = 0 },
})
local iters, h, lr = A.iters, A.spacing, A.lr
local T, dt, substeps = 100, 0.02, 12                                 -- 2 s of control at 50 Hz

local robot = cq.robot { dim = 3 }
local body = robot:mesh { path = "scenes/creature.stl", scale = 0.01, spacing = h, offset = { 0.2, 6 * h, 0.3 },
  material = { model = "neohookean", E = 30, nu = 0.3, density = 1 } }
local low = robot:select { group = body, where = function(x) return x[2] < 6 * h + 0.06 end } -- the legs
local c = { 0, 0, 0 }
for _, p in ipairs(low.particles) do for a = 1, 3 do c[a] = c[a] + robot.x[p][a] / #low.particles end end
local legs = robot:split { group = low, by = function(x) return (x[1] < c[1] and 1 or 2) + (x[3] < c[3] and 0 or 2) end }
for q = 1, 4 do robot:pressure_actuator { groups = { legs[q] }, axis = 2, max = 6 } end
local dx = 2 * h                                                      -- 8 particles per cell
local function cells(length) return math.floor(length / dx + 0.5) end
local world, s0 = robot:world { res = { cells(2.5), cells(0.625), cells(0.875) }, dx = dx, dt = dt, substeps = substeps, gravity = { 0, -3.8, 0 },
  walls = { all = { type = "friction", friction = math.huge, thickness = 3 } } }

local observer = cq.centroid_observer { groups = cq.kmeans_groups(s0, 8), fields = { "x", "v" }, relative = true,
  clock = { waves = 4, period = 25 } }
local controller = cq.mlp { inputs = observer.size(3), outputs = 4, hidden = { 64, 64 } }
local O = cq.objectives
local run = cq.rollout { world = world, steps = T, observer = observer, controller = controller,
  final = O.forward_progress(1), running = O.weighted { { O.actuation_penalty(), 1e-6 } } }
local x0 = s0:mean("x")[1]
local result = cq.train { rollout = run, state = s0, iterations = iters, name = "creature3d", keep_best = true,
  optimizer = cq.adam { params = controller.params, lr = lr, clip_norm = 1 },
  columns = { "distance" }, values = function() return { distance = run.memo.state:mean("x")[1] - x0 } end }
run:forward(s0)                                                       -- the best controller, once more
local walked = run.memo.state:mean("x")[1] - x0
print(string.format("creature3d: %d particles walked %.3f to the right in %g s (controller of iteration %d)", world.n,
  walked, T * dt, result.best.iteration))
result.log.walked = walked
cq.frames.write { trajectory = run:trajectory(), dir = "out/creature3d", every = 4, width = 640, height = 400 }
return result.log
