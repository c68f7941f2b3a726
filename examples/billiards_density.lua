-- Seed 002 sec. V.A: ball A rolls right into ball B; infer the relative density of A (B has density 1) so that B
-- arrives at the destination C at the final time. The gradient of |x_B(T) - C|^2 w.r.t. the density flows back
-- through the collision into the masses of A's particles. Usage: cqlua examples/billiards_density.lua [iters=40]
local cq = require "cq"
local iters = tonumber(arg and arg[1]) or 40
local C, radius, speed = { 0.85, 0.5 }, 0.06, 1.5
local steps = 40                                             -- 0.4 s of 10 ms control steps

local robot = cq.robot { dim = 2 }
local mat = { model = "neohookean", E = 200, nu = 0.3, density = 1 }
local A = robot:ball { center = { 0.15, 0.5 }, radius = radius, material = mat, velocity = { speed, 0 } }
local B = robot:ball { center = { 0.32, 0.5 }, radius = radius, material = mat }
local world, s0 = robot:world { res = { 64, 64 }, dx = 1 / 64, dt = 0.01, substeps = 20,
  walls = { all = { type = "slip" } } } -- a top view: no gravity
local n, mass0 = world.n, {}
for _, p in ipairs(A.particles) do mass0[p] = world.params.mass[p - 1] end

local density = cq.param { n = 1, init = 1 }                          -- relative density of ball A, initial guess 1
local memo = world:memo { steps = steps }
local traj = cq.trajectory { world = world, steps = steps }
local opt = cq.adam { params = { density }, lr = 0.2, bounds = { [density] = { 0.1, 10 } } }
local log = cq.log { name = "billiards_density", columns = { "iteration", "loss", "distance", "density", "grad_norm", "seconds" } }
for it = 1, iters do
  world:fill("mass", function(p) return density.v[0] * mass0[p] end, A.first, A.last)
  memo:begin(s0)
  traj:record_state(0, memo.state)
  for k = 1, steps do memo:step() traj:record_state(k, memo.state) end
  local c = memo.state:mean("x", B.particles)
  local loss = (c[1] - C[1]) ^ 2 + (c[2] - C[2]) ^ 2
  memo:backward(function(k, m) -- dL/dx_p = 2 (c - C) / |B| for B's particles at the final step
    if k < steps then return end
    for _, p in ipairs(B.particles) do
      for a = 1, 2 do m.grad.x[(a - 1) * n + p - 1] = 2 * (c[a] - C[a]) / #B.particles end
    end
  end)
  local g = 0                                                -- dL/d density = sum_A dL/dmass_p * mass0_p
  for _, p in ipairs(A.particles) do g = g + memo.grad_params.mass[p - 1] * mass0[p] end
  density.g[0] = g
  log:iteration(it, iters, { loss = loss, distance = math.sqrt(loss), density = density.v[0], grad_norm = math.abs(g) })
  opt.lr = 0.2 * 0.93 ^ it
  if it < iters then opt:step() end
end
print(string.format("billiards_density: relative density of A %.4f puts B %.5f from C (target < 0.001; initial %.4f)",
  log.last.density, log.last.distance, log.first.distance))
cq.frames.write { trajectory = traj, dir = "out/billiards_density", every = 2, targets = { C },
  color = cq.frames.by_group({ A, B }, n) }
return log
