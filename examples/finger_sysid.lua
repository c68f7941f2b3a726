-- Seed 000 sec. 5.1: system identification of a 2D soft finger driven by two cables. Ground truth E = 20,
-- particle mass 2.33 (per unit rest volume), nu = 0.25 generates 10 leftward-bending trajectories; 100 tracked
-- particles are recorded at 200 keyframes each, in 10 copies with Gaussian noise (motion-capture error). Starting
-- from E = 15, mass 3.0, nu = 0.3, stochastic gradient descent over the noisy trajectories recovers all three.
-- Usage: cqlua examples/finger_sysid.lua [epochs=15] [sequences=10]
local cq = require "cq"
local epochs, nseq = tonumber(arg and arg[1]) or 15, tonumber(arg and arg[2]) or 10
local T, dt, substeps, noise, copies = 200, 0.005, 3, 2e-3, 10
local truth, start = { E = 20, mass = 2.33, nu = 0.25 }, { E = 15, mass = 3.0, nu = 0.3 }

-- The finger: 0.08 x 0.3, its base held in the sticky floor; a cable up each side (second particle column).
local h, width, height, y0 = 1 / 128, 0.08, 0.3, 0.03
local robot = cq.robot { dim = 2 }
local finger = robot:box { offset = { 0.5 - width / 2, y0 }, size = { width, height }, spacing = h,
  material = { model = "neohookean", E = truth.E, nu = truth.nu, density = truth.mass } }
local function column(x)
  local path = {}
  for i = 0, math.floor(height / h + 0.5) - 1 do -- particles are laid out x-major: index = ix * ny + iy + 1
    path[#path + 1] = finger.first + math.floor((x - (0.5 - width / 2)) / h) * math.floor(height / h + 0.5) + i
  end
  return path
end
robot:cable_actuator { particles = column(0.5 - width / 2 + 1.5 * h), k = 5 } -- left: pulling bends it left
robot:cable_actuator { particles = column(0.5 + width / 2 - 1.5 * h), k = 5 }
local world, s0 = robot:world { res = { 64, 64 }, dx = 1 / 64, dt = dt, substeps = substeps, gravity = { 0, -1 },
  walls = { all = { type = "sticky", thickness = 3 } } }
local n, vol0 = world.n, world.params.vol0

local function set_material(E, mass, nu)
  world:fill("E", E)
  world:fill("mass", function(p) return mass * vol0[p - 1] end)
  world:fill("nu", nu)
end

-- 10 actuation sequences: the left cable pulls in by 10-30% with different rhythms, the right one stays slack.
local sequences = {}
for j = 1, nseq do
  local depth, omega, phase = 0.1 + 0.2 * (j - 1) / math.max(1, nseq - 1), 2 + j % 4, 0.3 * j
  sequences[j] = cq.open_loop { steps = T, outputs = 2, init = function(i)
    local k, cable = math.floor((i - 1) / 2), (i - 1) % 2
    if cable == 1 then return 1.1 end
    return 1 - depth * (0.5 - 0.5 * math.cos(omega * k * dt + phase * math.min(1, k * dt)))
  end }
end

-- 100 tracked particles spread over the finger; a deterministic Gaussian noise source (Box-Muller on an LCG).
local tracked = {}
for i = 1, 100 do tracked[i] = finger.first + math.floor((i - 0.5) * n / 100) end
local seed = 12345
local function gauss()
  local function u() seed = (seed * 1103515245 + 12345) % 2147483648 return (seed + 0.5) / 2147483648 end
  return math.sqrt(-2 * math.log(u())) * math.cos(2 * math.pi * u())
end

-- The dataset: simulate each sequence with the true material, then 10 noisy copies of its 200 keyframes (steps 1..T).
local run = cq.rollout { world = world, steps = T, controller = sequences[1], final = function(t) return t:const({ 0 }) end }
set_material(truth.E, truth.mass, truth.nu)
local data = {}
for j = 1, nseq do
  run.controller = sequences[j]
  run:forward(s0)
  local traj = run:trajectory()
  for _ = 1, copies do
    local keyframes = {}
    for k = 1, T do
      local frame = {}
      for i, p in ipairs(tracked) do
        local x = traj:x(k, p)
        frame[2 * i - 1], frame[2 * i] = x[1] + noise * gauss(), x[2] + noise * gauss()
      end
      keyframes[k] = frame
    end
    data[#data + 1] = { seq = j, keyframes = keyframes }
  end
end

-- Stochastic gradient descent (with momentum) on theta = (E, mass, nu) / scale, one noisy trajectory a step. The
-- scales precondition the step: nu's scale is twice its value so its weak gradient (the loss mostly sees E / (1 -
-- nu^2) and the mass) still moves it; bounds keep nu below 0.5.
local scale = { 20, 3, 0.6 }
local theta = cq.param { n = 3, init = { start.E / scale[1], start.mass / scale[2], start.nu / scale[3] } }
local opt = cq.sgd { params = { theta }, lr = 100, momentum = 0.5,
  bounds = { [theta] = { { 0.1, 0.1, 0 }, { 5, 5, 0.49 / scale[3] } } } }
local log = cq.log { name = "finger_sysid", columns = { "iteration", "loss", "E", "mass", "nu", "grad_norm", "seconds" } }
local weight = 1 / (T * #tracked)
local order = {}
for i = 1, #data do order[i] = i end
local it, total = 0, epochs * #data
for epoch = 1, epochs do
  for i = #order, 2, -1 do local j = 1 + math.floor(((seed + i * 7919) % 1000003) / 1000003 * i) order[i], order[j] = order[j], order[i] end
  local sum = 0
  for _, d in ipairs(order) do
    local E, mass, nu = theta.v[0] * scale[1], theta.v[1] * scale[2], theta.v[2] * scale[3]
    set_material(E, mass, nu)
    run.controller = sequences[data[d].seq]
    local match = cq.objectives.weighted { { cq.objectives.keyframes(data[d].keyframes, tracked), weight } }
    run.running = match                                        -- keyframes 1..T-1 (state k is seen at step k)
    run.final = function(t, s) return match(t, s, nil, T) end  -- keyframe T
    local loss = run:forward(s0)
    local m = run:backward()
    local gE, gm, gnu = 0, 0, 0
    for p = 0, n - 1 do
      gE, gm, gnu = gE + m.grad_params.E[p], gm + m.grad_params.mass[p] * vol0[p], gnu + m.grad_params.nu[p]
    end
    theta.g[0], theta.g[1], theta.g[2] = gE * scale[1], gm * scale[2], gnu * scale[3]
    it = it + 1
    sum = sum + loss
    log:iteration(it, total, { loss = loss, E = E, mass = mass, nu = nu, grad_norm = cq.grad_norm { theta } })
    opt:step()
  end
end
local E, mass, nu = theta.v[0] * scale[1], theta.v[1] * scale[2], theta.v[2] * scale[3]
local err = { math.abs(E / truth.E - 1), math.abs(mass / truth.mass - 1), math.abs(nu / truth.nu - 1) }
print(string.format("finger_sysid: E %.3f (truth 20, error %.1f%%), mass %.3f (2.33, %.1f%%), nu %.4f (0.25, %.1f%%);"
  .. " target: every error < 5%%", E, 100 * err[1], mass, 100 * err[2], nu, 100 * err[3]))
log.errors = err
-- Frames of the identified finger replaying the last sequence, with the noisy keyframes of its last copy as targets
-- drawn at the final step.
set_material(E, mass, nu)
run.controller = sequences[data[#data].seq]
run:forward(s0)
local last = data[#data].keyframes[T]
local marks = {}
for i = 1, #tracked, 7 do marks[#marks + 1] = { last[2 * i - 1], last[2 * i] } end
cq.frames.write { trajectory = run:trajectory(), dir = "out/finger_sysid", every = 4, targets = marks,
  view = { 0.25, 0, 0.75, 0.4 } }
return log
