-- tools/gpu_prof.lua [per_side=80]: the scene that tools/gpu_check.sh's "profile" part runs under Nsight Compute:
-- a 3D neohookean cube of per_side^3 particles (80: the 512k cube of tools/bench.lua) on the CUDA backend, f32, one
-- control step of 10 substeps, then a one-step memo forward and backward, so every stage kernel and its adjoint run
-- 10 times. tools/ncu_summary.py sums the kernels' durations.
local cq = require "cq"
local per = tonumber(arg[1] or 80)
local dx = 1 / 128
local n = per ^ 3
local w = cq.world { dim = 3, res = { 128, 128, 128 }, dx = dx, dt = 1e-3, substeps = 10, gravity = { 0, -9.8, 0 }, n = n,
  precision = "f32", backend = "cuda", walls = { all = { type = "slip" }, floor = { type = "friction", friction = 0.5 } } }
local h = dx / 2
w:fill("vol0", h ^ 3); w:fill("mass", h ^ 3 * 1000); w:fill("E", 1e4); w:fill("nu", 0.3); w:fill("material", "neohookean")
w:commit()
local s = w:state()
local x, p, o = s.x, 0, 0.5 - per * h / 2
for i = 0, per - 1 do for j = 0, per - 1 do for k = 0, per - 1 do
  x[p], x[n + p], x[2 * n + p] = o + (i + 0.5) * h, 0.1 + (j + 0.5) * h, o + (k + 0.5) * h
  p = p + 1
end end end
w:step(s)
local memo = w:memo { steps = 1, checkpoint_every = 1 }
memo:begin(s)
memo:step()
memo:backward()
print("gpu_prof: " .. n .. " particles on " .. w.backend)
