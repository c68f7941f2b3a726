-- Seed 000 Appendix C: a 2D biped of 8 blocks with 4 pressure actuators (max 2) learns to walk with a closed-loop
-- MLP controller. Usage: cqlua examples/biped2d.lua [iterations=100] [spacing=1/128] [learning rate=1e-2]
local cq = require "cq"
local iters, spacing = tonumber(arg and arg[1]) or 100, tonumber(arg and arg[2]) or 1 / 128
local lr = tonumber(arg and arg[3]) or 1e-2
local T, dt, substeps = 200, 0.02, 10                              -- 4 s of control at 50 Hz, 10 substeps each

-- Geometry: leg width/height 0.1, body 0.3 x 0.1; the four half-legs are actuated.
local lw, lh, bh, bw, ox, oy = 0.1, 0.1, 0.1, 0.3, 0.1, 0.06
local offsets = { { 0, 0 }, { lw / 2, 0 }, { 0, lh }, { lw, lh }, { lw, lh + bh / 2 }, { bw - lw, lh }, { bw - lw, 0 },
  { bw - lw / 2, 0 } }
local sizes = { { lw / 2, lh }, { lw / 2, lh }, { lw, bh }, { bw - 2 * lw, bh / 2 }, { bw - 2 * lw, bh / 2 },
  { lw, bh }, { lw / 2, lh }, { lw / 2, lh } }
local robot, groups = cq.robot { dim = 2 }, {}
for i = 1, 8 do
  groups[i] = robot:box { offset = { ox + offsets[i][1], oy + offsets[i][2] }, size = sizes[i], spacing = spacing,
    material = { model = "neohookean", E = 10, nu = 0.3, density = 1 } }
end
for _, i in ipairs { 1, 2, 7, 8 } do robot:pressure_actuator { groups = { groups[i] }, axis = 2, max = 2 } end
local world, s0 = robot:world { res = { 400, 64 }, dx = 1 / 64, dt = dt, substeps = substeps, gravity = { 0, -3.8 },
  walls = { all = { type = "friction", friction = math.huge, thickness = 3 } } }

-- Centroid observer over the 8 blocks (positions relative to the body, velocities, a 4-phase clock), MLP 64-64 (ReLU, tanh output).
local group_idx = {}
for i, g in ipairs(groups) do group_idx[i] = g.particles end
local observer = cq.centroid_observer { groups = group_idx, fields = { "x", "v" }, relative = true,
  clock = { waves = 4, period = 25 } }
local controller = cq.mlp { inputs = observer.size(2), outputs = 4, hidden = { 64, 64 }, activation = "relu" }
local O = cq.objectives
local run = cq.rollout { world = world, steps = T, observer = observer, controller = controller,
  final = O.forward_progress(1), running = O.weighted { { O.actuation_penalty(), 1e-8 } } }
local x0 = s0:mean("x")[1]
local result = cq.train { rollout = run, state = s0, iterations = iters, name = "biped2d",
  optimizer = cq.adam { params = controller.params, lr = lr, clip_norm = 1 },
  lr_schedule = function(it) return 0.99 ^ (it - 1) end,               -- decay: settle into a gait
  keep_best = true,                                                    -- end with the gait that walked farthest
  columns = { "distance" }, values = function() return { distance = run.memo.state:mean("x")[1] - x0 } end }
local log = result.log
run:forward(s0)                                                     -- re-run the best controller
local walked = run.memo.state:mean("x")[1] - x0
print(string.format("biped2d: walked %.3f (target >= 0.6 = 2 body lengths) in %g s with the controller of iteration %d",
  walked, T * dt, result.best.iteration))
log.walked = walked
-- PNG frames of the last rollout (blue = contracting, red = expanding legs) over the first 1.6 x 0.4 of the floor.
local nf = cq.frames.write { trajectory = run:trajectory(), dir = "out/biped2d", every = 4, width = 800,
  view = { 0, 0, 1.6, 0.4 } }
print(string.format("biped2d: %d frames in out/biped2d/ (ffmpeg -i out/biped2d/frame_%%04d.png biped2d.mp4)", nf))
return log
