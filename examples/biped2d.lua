-- Seed 000 Appendix C: a 2D biped of 8 blocks with 4 pressure actuators (max 2) learns to walk with a closed-loop
-- MLP controller (the biped of scenes/biped2d.lua).
-- Usage: cqlua examples/biped2d.lua [iters=100] [spacing=0.0078125 (1/128)] [lr=1e-2]   (--help: every key)
local here = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")
package.path = here .. "../scenes/?.lua;" .. package.path
local cq = require "cq"
local biped2d = require "biped2d"
local A = cq.args(arg, { name = "examples/biped2d.lua",
  about = "Seed 000 Appendix C: a 2D biped of 8 blocks and 4 pressure actuators learns to walk with a closed-loop " ..
    "MLP controller (Adam).",
  example = "cqlua examples/biped2d.lua iters=20 lr=5e-3",
  { "iters", 100, "Adam iterations", min = 1, integer = true },
  { "spacing", 1 / 128, "particle spacing (1/128: 2 particles per cell and axis)", min = 0 },
  { "lr", 1e-2, "Adam's learning rate", min = 0 },
})
local iters, spacing, lr = A.iters, A.spacing, A.lr

local b = biped2d.build { spacing = spacing }
local run, s0, controller = b.rollout(), b.state, b.controller
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
  walked, biped2d.T * biped2d.DT, result.best.iteration))
log.walked = walked
-- PNG frames of the last rollout (blue = contracting, red = expanding legs) over the first 1.6 x 0.4 of the floor.
local nf = cq.frames.write { trajectory = run:trajectory(), dir = "out/biped2d", every = 4, width = 800,
  view = { 0, 0, 1.6, 0.4 } }
print(string.format("biped2d: %d frames in out/biped2d/ (ffmpeg -i out/biped2d/frame_%%04d.png biped2d.mp4)", nf))
return log
