-- Seed 000 "an example impossible without co-design": a soft arm standing on the floor whose only parameter is its
-- length must bring its tip to a target it cannot reach at its initial length, even by stretching. The length is a
-- design variable (a stretch of the rest shape about the base); its gradient flows through the rest positions,
-- masses and volumes of all particles, with no chain rule written here.
-- Usage: cqlua examples/arm_length.lua [iters=100]   (--help: every key and its meaning)
local cq = require "cq"
local A = cq.args(arg, { name = "examples/arm_length.lua",
  about = "Seed 000's example impossible without co-design: Adam optimises a soft arm's length so that its tip " ..
    "reaches a target.",
  example = "cqlua examples/arm_length.lua iters=30",
  { "iters", 100, "Adam iterations", min = 1, integer = true },
})
local iters = A.iters
local target = { 0.5, 0.45 }                                -- the arm's tip starts at height ~0.23
local L0, width, y0, h = 0.2, 0.06, 0.03, 1 / 256          -- rest length, width, base height, particle spacing

local robot = cq.robot { dim = 2 }
local arm = robot:box { offset = { 0.5 - width / 2, y0 }, size = { width, L0 }, spacing = h,
  material = { model = "neohookean", E = 200, nu = 0.3, density = 1 } }
local world, rest = robot:world { res = { 64, 64 }, dx = 1 / 64, dt = 0.01, substeps = 20, gravity = { 0, -9.8 },
  damping = 2, walls = { all = { type = "sticky", thickness = 3 } } } -- the base sits in the sticky floor
local tip = {}                                            -- the top row of particles is the end effector
for _, p in ipairs(arm.particles) do if rest:get("x", p)[2] > y0 + L0 - h then tip[#tip + 1] = p end end

local design = cq.design { world = world }                -- length = scale * L0, stretched about the base
local scale = design:stretch { name = "length", axis = 2, origin = y0, init = 1, bounds = { 0.5, 3 } }
local run = cq.rollout { world = world, steps = 50, design = design, record = { "x" }, -- 0.5 s, passive
  final = cq.objectives.distance_to_target(target, tip) }
-- beta2 = 0.9: the step follows the recent gradient scale, which shrinks by 100x on the way to the target; the
-- decay lets Adam settle instead of oscillating about the optimum.
local result = cq.train { rollout = run, state = rest, iterations = iters, name = "arm_length",
  optimizer = cq.adam { params = design.params, lr = 0.1, beta2 = 0.9 }, lr_schedule = function(it) return 0.95 ^ it end,
  columns = { "distance", "length" },
  values = function(_, loss) return { distance = math.sqrt(loss), length = scale.v[0] * L0 } end }
local log = result.log
print(string.format("arm_length: tip distance %.5f (target < 0.001), initial %.4f; length %.4f (initial %.2f)",
  log.last.distance, log.first.distance, log.last.length, L0))
cq.frames.write { trajectory = run:trajectory(), dir = "out/arm_length", every = 2, targets = { target } }
return log
