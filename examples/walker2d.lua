-- DiffTaichi's diffmpm.py walker on cqlua: a 2D soft robot learns to walk by gradient descent through 1,023 MPM
-- steps.
-- Usage: cqlua examples/walker2d.lua [iters=100] [precision=f32] [threads=0]   (--help: every key and its meaning)
local cq = require "cq"
local A = cq.args(arg, { name = "examples/walker2d.lua",
  about = "DiffTaichi's diffmpm.py walker (the peer benchmark): a 2D soft robot learns to walk by gradient descent " ..
    "through 1,023 MPM steps.",
  example = "cqlua examples/walker2d.lua iters=20 precision=f64",
  { "iters", 100, "gradient-descent iterations", min = 1, integer = true },
  { "precision", "f32", "the engine's floating point", oneof = { "f32", "f64" } },
  { "threads", 0, "engine threads (0: every idle core)", min = 0, integer = true },
})
local iters, precision, threads = A.iters, A.precision, A.threads
local dx, steps, n_sin, omega, lr = 1 / 128, 1023, 4, 20, 0.1

-- Robot: a 0.3 x 0.1 body on four 0.05 x 0.1 legs, 2 particles per dx per axis (as diffmpm's add_rect).
local pts, act = {}, {}
local function rect(x, y, w, h, a)
  local nw, nh = math.floor(w / dx) * 2, math.floor(h / dx) * 2
  for i = 0, nw - 1 do for j = 0, nh - 1 do
    pts[#pts + 1] = { 0.1 + x + (i + 0.5) * w / nw, 0.03 + y + (j + 0.5) * h / nh }
    act[#act + 1] = a
  end end
end
rect(0.0, 0.1, 0.3, 0.1, -1)
for k, x in ipairs { 0.0, 0.05, 0.2, 0.25 } do rect(x, 0.0, 0.05, 0.1, k - 1) end

-- World: mu = lambda = 10 (as diffmpm.py), mass = volume = 1, fixed corotated, vertical stress actuators of
-- strength 4. Walls and floor: no slip while in contact, free to separate (diffmpm's boundary within 3 cells).
local world = cq.world { dim = 2, res = { 128, 128 }, dx = dx, dt = 1e-3, gravity = { 0, -3.8 }, n = #pts,
  n_actuators = 4, precision = precision, threads = threads,
  walls = { all = { type = "friction", friction = math.huge, thickness = 3 } } }
world:fill("material", "corotated")
world:fill_lame(10, 10)
world:fill("act_axis", { 0, 4 })
world:fill("act_id", function(p) return act[p] end)
world:commit()
local s0 = world:state()
for p, x in ipairs(pts) do s0:set("x", p, x) end
local memo = world:memo { steps = steps }

-- Open-loop sine controller u_i(t) = tanh(sum_j w_ij sin(omega t + 2 pi j / n_sin) + b_i), trainable w and b.
math.randomseed(0)
local W, b = {}, { 0, 0, 0, 0 }
for i = 1, 4 do W[i] = {} for j = 1, n_sin do
  W[i][j] = 0.01 * math.sqrt(-2 * math.log(1 - math.random())) * math.cos(2 * math.pi * math.random())
end end
local function phase(k, j) return math.sin(omega * k * 1e-3 + 2 * math.pi * (j - 1) / n_sin) end
local u_hist = {}

-- traj (a cq.trajectory, optional) records the positions at every control step, for PNG frames.
local function loss_and_grad(traj)
  memo:begin(s0)
  if traj then traj:record_state(0, memo.state) end
  for k = 0, steps - 1 do
    local u = {}
    for i = 1, 4 do
      local z = b[i]
      for j = 1, n_sin do z = z + W[i][j] * phase(k, j) end
      u[i] = math.tanh(z)
    end
    u_hist[k + 1] = u
    memo:step(u)
    if traj then traj:record_action(k, u); traj:record_state(k + 1, memo.state) end
  end
  local n = world.n
  local loss = -memo.state:mean("x")[1]
  memo:backward(function(k, m)
    if k == steps then for p = 0, n - 1 do m.grad.x[p] = m.grad.x[p] - 1 / n end end
  end)
  local gW, gb = {}, { 0, 0, 0, 0 }
  for i = 1, 4 do gW[i] = { 0, 0, 0, 0 } end
  for k = 1, steps do
    for i = 1, 4 do
      local gz = memo:grad_u(k, i) * (1 - u_hist[k][i] ^ 2)
      gb[i] = gb[i] + gz
      for j = 1, n_sin do gW[i][j] = gW[i][j] + gz * phase(k - 1, j) end
    end
  end
  return loss, gW, gb
end

local clock = require "cq.clock"
print(string.format("walker2d: %d particles, %d steps, %s, threads %s", world.n, steps, precision, threads == 0 and "0 (every idle core)" or threads))
local first, last, total, rest = nil, nil, 0, 0
local traj = cq.trajectory { world = world, steps = steps } -- positions of the last iteration's motion
for it = 1, iters do
  local t0 = clock.now()
  local loss, gW, gb = loss_and_grad(it == iters and traj or nil)
  for i = 1, 4 do
    b[i] = b[i] - lr * gb[i]
    for j = 1, n_sin do W[i][j] = W[i][j] - lr * gW[i][j] end
  end
  local dt = clock.now() - t0
  total = total + dt
  if it > 1 then rest = rest + dt end
  first, last = first or loss, loss
  print(string.format("iter %3d  loss %.6f  %.3f s/iter", it, loss, dt))
end
print(string.format("initial loss %.6f  final loss %.6f  improvement %.4f  mean %.3f s/iter", first, last,
  first - last, total / iters))
local nf = cq.frames.write { trajectory = traj, dir = "out/walker2d", every = 32, width = 512 }
print(string.format("walker2d: %d frames of the last iteration's motion in out/walker2d/", nf))
return { initial = first, final = last, seconds_per_iter = total / iters,
  steady_seconds_per_iter = iters > 1 and rest / (iters - 1) or total }
