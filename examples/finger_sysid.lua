-- Seed 000 sec. 5.1: system identification of a 2D soft finger driven by two cables. Ground truth E = 20,
-- particle mass 2.33 (per unit rest volume), nu = 0.25 generates 10 leftward-bending trajectories; 100 tracked
-- particles are recorded at 200 keyframes each, in 10 copies with Gaussian noise (motion-capture error). Starting
-- from E = 15, mass 3.0, nu = 0.3, stochastic gradient descent over the noisy trajectories recovers all three.
-- Usage: cqlua examples/finger_sysid.lua [epochs=15] [sequences=10]   (--help: every key and its meaning)
local cq = require "cq"
local A = cq.args(arg, { name = "examples/finger_sysid.lua",
  about = "Seed 000 sec. 5.1: system identification of a cable-driven 2D finger: SGD over noisy keyframes recovers " ..
    "its E, particle mass and nu.",
  example = "cqlua examples/finger_sysid.lua epochs=5 sequences=4",
  { "epochs", 15, "passes over the sequences", min = 1, integer = true },
  { "sequences", 10, "actuation sequences (trajectories) to fit", min = 1, integer = true },
})
local epochs, nseq = A.epochs, A.sequences
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
local n = world.n

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

-- The dataset: simulate each sequence with the true material (the robot's), then 10 noisy copies of its 200
-- keyframes (steps 1..T).
local run = cq.rollout { world = world, steps = T, controller = sequences[1], final = function(t) return t:const({ 0 }) end }
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

-- Stochastic gradient descent (with momentum) on the design variables E, density (mass per unit rest volume) and nu,
-- one noisy trajectory a step. Linear maps value = scale * theta precondition the step: nu's scale is twice its
-- value so its weak gradient (the loss mostly sees E / (1 - nu^2) and the mass) still moves it; bounds keep nu
-- below 0.5.
local design = cq.design { world = world }
local E = design:variable { name = "E", field = "E", map = "linear", scale = 20, init = start.E / 20, bounds = { 0.1, 5 } }
local rho = design:variable { name = "density", field = "density", map = "linear", scale = 3, init = start.mass / 3,
  bounds = { 0.1, 5 } }
local nu = design:variable { name = "nu", field = "nu", map = "linear", scale = 0.6, init = start.nu / 0.6,
  bounds = { 0, 0.49 / 0.6 } }
local function identified() return E.v[0] * 20, rho.v[0] * 3, nu.v[0] * 0.6 end
run.design = design

-- Iteration it uses trajectory order[e][i] of epoch e: each epoch reshuffles the last one's order (a fixed
-- permutation, so a resumed run sees the same data).
local weight, orders = 1 / (T * #tracked), {}
local function order_of(e)
  if not orders[e] then
    local o = {}
    for i = 1, #data do o[i] = e == 1 and i or orders[e - 1][i] end
    for i = #o, 2, -1 do local j = 1 + math.floor(((seed + i * 7919) % 1000003) / 1000003 * i) o[i], o[j] = o[j], o[i] end
    orders[e] = o
  end
  return orders[e]
end
local result = cq.train { rollout = run, state = s0, iterations = epochs * #data, name = "finger_sysid",
  optimizer = cq.sgd { params = design.params, lr = 100, momentum = 0.5 }, columns = { "E", "mass", "nu" },
  before = function(it)
    local d = data[order_of(math.floor((it - 1) / #data) + 1)[(it - 1) % #data + 1]]
    run.controller = sequences[d.seq]
    local match = cq.objectives.weighted { { cq.objectives.keyframes(d.keyframes, tracked), weight } }
    run.running = match                                        -- keyframes 1..T-1 (state k is seen at step k)
    run.final = function(t, s) return match(t, s, nil, T) end  -- keyframe T
  end,
  values = function() local e, m, v = identified() return { E = e, mass = m, nu = v } end }
local log = result.log
local e, mass, v = identified()
local err = { math.abs(e / truth.E - 1), math.abs(mass / truth.mass - 1), math.abs(v / truth.nu - 1) }
print(string.format("finger_sysid: E %.3f (truth 20, error %.1f%%), mass %.3f (2.33, %.1f%%), nu %.4f (0.25, %.1f%%);"
  .. " target: every error < 5%%", e, 100 * err[1], mass, 100 * err[2], v, 100 * err[3]))
log.errors = err
-- Frames of the identified finger replaying the last sequence, with the noisy keyframes of its last copy as targets
-- drawn at the final step.
run.controller = sequences[data[#data].seq]
run:forward(s0)
local last = data[#data].keyframes[T]
local marks = {}
for i = 1, #tracked, 7 do marks[#marks + 1] = { last[2 * i - 1], last[2 * i] } end
cq.frames.write { trajectory = run:trajectory(), dir = "out/finger_sysid", every = 4, targets = marks,
  view = { 0.25, 0, 0.75, 0.4 } }
return log
