-- Seed 000 sec. 5.2: a 2D biped with a contract-only cable down the back of each leg, driven open loop (one
-- trainable pull per cable per control step), learns to walk forward with Adam (lr 2e-2).
-- Usage: cqlua examples/cable_biped2d.lua [iters=60] [spacing=0.0078125 (1/128)]   (--help: every key)
local cq = require "cq"
local A = cq.args(arg, { name = "examples/cable_biped2d.lua",
  about = "Seed 000 sec. 5.2: a 2D biped with a contract-only cable in each leg, driven open loop, learns to walk " ..
    "forward (Adam).",
  example = "cqlua examples/cable_biped2d.lua iters=20",
  { "iters", 60, "Adam iterations", min = 1, integer = true },
  { "spacing", 1 / 128, "particle spacing", min = 0 },
})
local iters, h = A.iters, A.spacing
local T, dt, substeps = 200, 0.02, 10                           -- 4 s of control at 50 Hz

-- Body 0.3 x 0.1 on two legs 0.1 x 0.1; the cables run up the rear edge of each leg into the body.
local robot, ox, oy = cq.robot { dim = 2 }, 0.1, 0.06
local mat = { model = "neohookean", E = 10, nu = 0.3, density = 1 }
local legs = { robot:box { offset = { ox, oy }, size = { 0.1, 0.1 }, spacing = h, material = mat },
  robot:box { offset = { ox + 0.2, oy }, size = { 0.1, 0.1 }, spacing = h, material = mat } }
local body = robot:box { offset = { ox, oy + 0.1 }, size = { 0.3, 0.1 }, spacing = h, material = mat }
local _, s = robot:world { res = { 40, 40 }, dx = 1 / 16, dt = dt, substeps = substeps } -- to read rest positions
for _, leg in ipairs(legs) do
  local x_rear, path = math.huge, {}
  for _, p in ipairs(leg.particles) do x_rear = math.min(x_rear, s:get("x", p)[1]) end
  for _, p in ipairs(leg.particles) do -- the second column from the rear edge, bottom to top, then into the body
    if math.abs(s:get("x", p)[1] - (x_rear + h)) < h / 4 then path[#path + 1] = p end
  end
  for _, p in ipairs(body.particles) do
    local x = s:get("x", p)
    if math.abs(x[1] - (x_rear + h)) < h / 4 and x[2] < oy + 0.15 then path[#path + 1] = p end
  end
  table.sort(path, function(a, b) return s:get("x", a)[2] < s:get("x", b)[2] end)
  robot:cable_actuator { particles = path, k = 8 }
end
local world, s0 = robot:world { res = { 400, 64 }, dx = 1 / 64, dt = dt, substeps = substeps, gravity = { 0, -3.8 },
  walls = { all = { type = "friction", friction = math.huge, thickness = 3 } } }

-- Open loop: u in [0.5, 1] per cable and step (1 = rest length, just taut; 0.5 = pulled in by half).
local controller = cq.open_loop { steps = T, outputs = 2, init = 0.9 }
local O = cq.objectives
local run = cq.rollout { world = world, steps = T, controller = controller,
  final = O.forward_progress(1), running = O.weighted { { O.actuation_penalty(), 1e-6 } } }
local x0 = s0:mean("x")[1]
-- The loss through 4 s of stepping is chaotic (the final iterate swings by 0.1 from one iteration to the next):
-- keep_best ends with the actuation that walked farthest, re-run for the report and the frames.
local result = cq.train { rollout = run, state = s0, iterations = iters, name = "cable_biped2d", keep_best = true,
  optimizer = cq.adam { params = controller.params, lr = 2e-2, bounds = { [controller.params[1]] = { 0.5, 1 } } },
  columns = { "distance" }, values = function() return { distance = run.memo.state:mean("x")[1] - x0 } end }
local log = result.log
run:forward(s0)
log.walked = run.memo.state:mean("x")[1] - x0
print(string.format("cable_biped2d: walked %.3f forward in %g s with the actuation of iteration %d (first iteration %.3f)",
  log.walked, T * dt, result.best.iteration, log.first.distance))
local nf = cq.frames.write { trajectory = run:trajectory(), dir = "out/cable_biped2d", every = 4, width = 800,
  view = { 0, 0, 1.6, 0.4 }, color = cq.frames.by_group({ legs[1], legs[2], body }, world.n) }
print(string.format("cable_biped2d: %d frames in out/cable_biped2d/", nf))
return log
