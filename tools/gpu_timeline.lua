-- tools/gpu_timeline.lua [scene ...]: where a GPU step's time goes, per phase (forward steps, recording into a memo,
-- backward), from the CUDA backend's event timing (cuda/timing.cuh; this script sets nothing: run it with
-- CQ_CUDA_TIMING=1). Per operation: count, device time, mean; "idle" is the device waiting between operations
-- (launch latency, synchronisations, host work), so wall = busy + idle. Scenes: cube80 (the 512k cube of
-- tools/bench.lua, 1 substep per control step), cube20 (8k), block2d (2D 6.4k, 10 substeps per control step), seed004
-- (scenes/seed004_cube.lua). Default: all four.
local ffi = require "ffi"
local now = require("cq.clock").now
local lib = assert(require("cq._ffi").cuda_lib("f32"))

local cases = dofile("scenes/gpu_cases.lua")

local SCENES = {
  cube80 = function() return cases.cube { per = 80 } end,
  cube20 = function() return cases.cube { per = 20 } end,
  block2d = function() return cases.block2d() end,
  seed004 = function() return dofile("scenes/seed004_cube.lua").build("cuda", "f32") end,
}

local buf = ffi.new("char[?]", 65536)
local function report(title, wall, substeps)
  lib.cq_cuda_timing_report(buf, 65536)
  print(string.format("-- %s: %.3f ms wall, %d substeps (%.1f us per substep)", title, wall * 1e3, substeps,
    wall / substeps * 1e6))
  io.write(ffi.string(buf))
end

for _, name in ipairs(#arg > 0 and arg or { "cube80", "cube20", "block2d", "seed004" }) do
  local w, s = assert(SCENES[name], "unknown scene " .. name)()
  local b, steps = w.substeps or 1, 20
  print(string.format("== %s: %d particles, %dD, %d substeps per control step", name, w.n, w.dim, b))
  for _ = 1, 5 do w:step(s) end
  lib.cq_cuda_timing_report(buf, 65536) -- drop the warm-up
  local t0 = now()
  for _ = 1, steps do w:step(s) end
  report("forward (world:step)", now() - t0, steps * b)
  local memo = w:memo { steps = steps }
  t0 = now()
  memo:begin(s)
  for _ = 1, steps do memo:step() end
  report("recording (memo:step)", now() - t0, steps * b)
  t0 = now()
  memo:backward()
  report("backward (memo:backward)", now() - t0, steps * b)
  memo:release()
  w:release()
  collectgarbage()
end
