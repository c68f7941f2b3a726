-- tools/gpu_timeline.lua [scene ...]: where a GPU step's time goes, per phase (forward steps, recording into a memo,
-- backward), from the CUDA backend's event timing (cuda/timing.cuh; this script sets nothing: run it with
-- CQ_CUDA_TIMING=1). Per operation: count, device time, mean; "idle" is the device waiting between operations
-- (launch latency, synchronisations, host work), so wall = busy + idle. Scenes: cube80 (the 512k cube of
-- tools/bench.lua, 1 substep per control step), cube20 (8k), block2d (2D 6.4k, 10 substeps per control step), seed004
-- (scenes/seed004_cube.lua). Default: all four.
local cq = require "cq"
local ffi = require "ffi"
local now = require("cq.clock").now
local lib = assert(require("cq._ffi").cuda_lib("f32"))

local function cube(per)
  local n, dx = per ^ 3, 1 / 128
  local w = cq.world { dim = 3, res = { 128, 128, 128 }, dx = dx, dt = 1e-3, substeps = 1, gravity = { 0, -9.8, 0 },
    n = n, precision = "f32", backend = "cuda", walls = { all = { type = "slip" } } }
  local h = dx / 2
  w:fill("vol0", h ^ 3); w:fill("mass", h ^ 3 * 1000); w:fill("E", 1e4); w:fill("nu", 0.3)
  w:fill("material", "neohookean")
  w:commit()
  local s = w:state()
  local x, p, o = s.x, 0, 0.5 - per * h / 2
  for i = 0, per - 1 do for j = 0, per - 1 do for k = 0, per - 1 do
    x[p], x[n + p], x[2 * n + p] = o + (i + 0.5) * h, 0.1 + (j + 0.5) * h, o + (k + 0.5) * h
    p = p + 1
  end end end
  return w, s
end

local function block2d()
  local n, dx = 6400, 1 / 128
  local w = cq.world { dim = 2, res = { 128, 128 }, dx = dx, dt = 1e-3, substeps = 10, gravity = { 0, -9.8 }, n = n,
    precision = "f32", backend = "cuda", walls = { all = { type = "slip" } } }
  local h = dx / 2
  w:fill("vol0", h * h); w:fill("mass", h * h * 1000); w:fill("E", 1e4); w:fill("nu", 0.3)
  w:commit()
  local s = w:state()
  for p = 0, n - 1 do s.x[p], s.x[n + p] = 0.3 + (p % 80 + 0.5) * h, 0.1 + (math.floor(p / 80) + 0.5) * h end
  return w, s
end

local SCENES = {
  cube80 = function() return cube(80) end,
  cube20 = function() return cube(20) end,
  block2d = block2d,
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
