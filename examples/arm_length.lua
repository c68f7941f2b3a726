-- Seed 000 "an example impossible without co-design": a soft arm standing on the floor whose only parameter is its
-- length must bring its tip to a target it cannot reach at its initial length, even by stretching. The gradient of
-- the tip distance w.r.t. the length flows through the rest positions, masses and volumes of all particles.
-- Usage: cqlua examples/arm_length.lua [iterations=100]
local cq = require "cq"
local iters = tonumber(arg and arg[1]) or 100
local target = { 0.5, 0.45 }                                -- the arm's tip starts at height ~0.23
local L0, width, y0, h = 0.2, 0.06, 0.03, 1 / 256          -- rest length, width, base height, particle spacing

local robot = cq.robot { dim = 2 }
local arm = robot:box { offset = { 0.5 - width / 2, y0 }, size = { width, L0 }, spacing = h,
  material = { model = "neohookean", E = 200, nu = 0.3, density = 1 } }
local world, rest = robot:world { res = { 64, 64 }, dx = 1 / 64, dt = 0.01, substeps = 20, gravity = { 0, -9.8 },
  damping = 2, walls = { all = { type = "sticky", thickness = 3 } } } -- the base sits in the sticky floor
local steps, n = 50, world.n                              -- 0.5 s
local tip = {}                                            -- the top row of particles is the end effector
for _, p in ipairs(arm.particles) do if rest:get("x", p)[2] > y0 + L0 - h then tip[#tip + 1] = p end end

-- The design: the arm's length is scale * L0; rest positions stretch about the base, mass and volume with them.
local scale = cq.param { n = 1, init = { 1 } }
local vol0, mass = {}, {}
for p = 0, n - 1 do vol0[p], mass[p] = world.params.vol0[p], world.params.mass[p] end
local function build(s)
  local s0 = rest:copy()
  for p = 0, n - 1 do s0.x[n + p] = y0 + s * (rest.x[n + p] - y0) end
  world:fill("vol0", function(p) return s * vol0[p - 1] end)
  world:fill("mass", function(p) return s * mass[p - 1] end)
  return s0
end

local memo = world:memo { steps = steps }
local function distance2(state)
  local c = state:mean("x", tip)
  return (c[1] - target[1]) ^ 2 + (c[2] - target[2]) ^ 2, c
end

-- beta2 = 0.9: the step follows the recent gradient scale, which shrinks by 100x on the way to the target.
local opt = cq.adam { params = { scale }, lr = 0.1, beta2 = 0.9, bounds = { [scale] = { 0.5, 3 } } }
local traj = cq.trajectory { world = world, steps = steps }
local log = cq.log { name = "arm_length", columns = { "iteration", "loss", "distance", "length", "grad_norm", "seconds" } }
for it = 1, iters do
  local s = scale.v[0]
  memo:begin(build(s))
  traj:record_state(0, memo.state)
  for k = 1, steps do memo:step() traj:record_state(k, memo.state) end
  local loss, c = distance2(memo.state)
  memo:backward(function(k, m) -- at the final step: dL/dx = 2 (c - target) / #tip for each tip particle
    if k < steps then return end
    for _, p in ipairs(tip) do
      for a = 1, 2 do m.grad.x[(a - 1) * n + p - 1] = 2 * (c[a] - target[a]) / #tip end
    end
  end)
  local g = 0 -- chain rule through the rest shape: dy_p/ds = y_rest - y0, dvol0/ds = vol0, dmass/ds = mass
  for p = 0, n - 1 do
    g = g + memo.grad.x[n + p] * (rest.x[n + p] - y0) + memo.grad_params.vol0[p] * vol0[p]
      + memo.grad_params.mass[p] * mass[p]
  end
  scale.g[0] = g
  log:iteration(it, iters, { loss = loss, distance = math.sqrt(loss), length = s * L0, grad_norm = math.abs(g) })
  opt.lr = 0.1 * 0.95 ^ it -- decay so Adam settles instead of oscillating about the optimum
  if it < iters then opt:step() end
end
print(string.format("arm_length: tip distance %.5f (target < 0.001), initial %.4f; length %.4f (initial %.2f)",
  log.last.distance, log.first.distance, log.last.length, L0))
cq.frames.write { trajectory = traj, dir = "out/arm_length", every = 2, targets = { target } }
return log
