-- Seed 002 sec. V.A: ball A rolls right into ball B; infer the relative density of A (B has density 1) so that B
-- arrives at the destination C at the final time. The density is a design variable of a passive rollout (no
-- actuators); its gradient flows back through the collision into the masses of A's particles.
-- Usage: cqlua examples/billiards_density.lua [iters=40]   (--help: every key and its meaning)
local cq = require "cq"
local A = cq.args(arg, { name = "examples/billiards_density.lua",
  about = "Seed 002 sec. V.A: Adam infers ball A's density so that, after the collision, ball B arrives at C at the " ..
    "final time.",
  example = "cqlua examples/billiards_density.lua iters=10",
  { "iters", 40, "Adam iterations", min = 1, integer = true },
})
local iters = A.iters
local C, radius, speed = { 0.85, 0.5 }, 0.06, 1.5

local robot = cq.robot { dim = 2 }
local mat = { model = "neohookean", E = 200, nu = 0.3, density = 1 }
local A = robot:ball { center = { 0.15, 0.5 }, radius = radius, material = mat, velocity = { speed, 0 } }
local B = robot:ball { center = { 0.32, 0.5 }, radius = radius, material = mat }
local world, s0 = robot:world { res = { 64, 64 }, dx = 1 / 64, dt = 0.01, substeps = 20,
  walls = { all = { type = "slip" } } } -- a top view: no gravity

local design = cq.design { world = world }                 -- relative density of ball A, initial guess 1
local density = design:variable { name = "density", field = "density", groups = { A }, init = 1, bounds = { 0.1, 10 } }
local run = cq.rollout { world = world, steps = 40, design = design, -- 0.4 s of 10 ms control steps, passive
  final = cq.objectives.distance_to_target(C, B.particles) }
local result = cq.train { rollout = run, state = s0, iterations = iters, name = "billiards_density",
  optimizer = cq.adam { params = design.params, lr = 0.2 }, lr_schedule = function(it) return 0.93 ^ it end,
  columns = { "distance", "density" },
  values = function(_, loss) return { distance = math.sqrt(loss), density = density.v[0] } end }
local log = result.log
print(string.format("billiards_density: relative density of A %.4f puts B %.5f from C (target < 0.001; initial %.4f)",
  log.last.density, log.last.distance, log.first.distance))
cq.frames.write { trajectory = run:trajectory(), dir = "out/billiards_density", every = 2, targets = { C },
  color = cq.frames.by_group({ A, B }, world.n) }
return log
