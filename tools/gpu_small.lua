-- tools/gpu_small.lua [backend=cuda]: the small scenes whose time is not the kernels' own (tools/gpu_check.sh "small" runs it under
-- Nsight Systems when the device machine has it): the 2D 6.4k block of tools/bench.lua with 10 substeps per control
-- step, and seed 004's 3D scene (8,000 particles, 1e6 nodes) recorded into a memo for 50 control steps and back.
-- Prints the wall time per substep of each.
local cq = require "cq"
local now = require("cq.clock").now
local BACKEND = arg[1] or "cuda" -- "cpu" to try it here
local w, s = dofile("scenes/gpu_cases.lua").block2d(BACKEND)
for _ = 1, 20 do w:step(s) end
local t0, steps = now(), 200
for _ = 1, steps do w:step(s) end
print(string.format("2D 6.4k: %.1f us per substep (10 per control step)", (now() - t0) / steps / 10 * 1e6))
w:release()

w, s = dofile("scenes/seed004_cube.lua").build(BACKEND, "f32")
local memo = w:memo { steps = 50 }
for rep = 1, 2 do -- the first is the warm-up
  t0 = now()
  memo:begin(s)
  for k = 1, 50 do memo:step { 2e3 * math.sin(k / 16), 0, 0, 0 } end
  local fwd = now() - t0
  t0 = now()
  memo:backward()
  local bwd = now() - t0
  if rep == 2 then
    print(string.format("seed 004 3D: forward %.1f us, backward %.1f us per substep", fwd / 500 * 1e6, bwd / 500 * 1e6))
  end
end
