-- tools/gpu_prof.lua [per_side=80]: the scene that tools/gpu_check.sh's "profile" part runs under Nsight Compute:
-- a 3D neohookean cube of per_side^3 particles (80: the 512k cube of tools/bench.lua) on the CUDA backend, f32, one
-- control step of 10 substeps, then a one-step memo forward and backward, so every stage kernel and its adjoint run
-- 10 times. tools/ncu_summary.py sums the kernels' durations.
local per = tonumber(arg[1] or 80)
local n = per ^ 3
local w, s = dofile("scenes/gpu_cases.lua").cube { per = per, substeps = 10, floor = "friction" }
w:step(s)
local memo = w:memo { steps = 1, checkpoint_every = 1 }
memo:begin(s)
memo:step()
memo:backward()
print("gpu_prof: " .. n .. " particles on " .. w.backend)
