-- Closed-loop rollouts and their gradients: state -> observer -> controller -> actuation -> substeps, per control
-- step, with a final loss g(s_T) and running losses h(s_k, u_k). The backward pass walks the engine's memo back one
-- control step at a time, recomputes that step's observer and controller on a fresh tape from the recomputed
-- state, and pushes dL/du_k through them into the parameters and into dL/ds_k.
local ffi = require "ffi"
local tape = require "cq.tape"
local check = require "cq._check"

local M = {}
local Rollout = {}
Rollout.__index = Rollout

--- cq.rollout{ world, steps, controller, observer?, final(t, state) -> scalar node, running?(t, state, u, k),
---   actuator?(t, state, u, k) -> node of dim * n particle forces (component-major): an actuator written in Lua
---   (seed 000 Listing 3), differentiated on the tape; checkpoint_every? }
function M.new(opts)
  local where = "cq.rollout"
  check.options(where, opts, { world = true, steps = true, controller = true, observer = true, final = true,
    running = true, checkpoint_every = true, actuator = true })
  local w = opts.world
  local steps = check.integer(where, "steps", opts.steps, 1)
  if type(opts.controller) ~= "table" or type(opts.controller.act) ~= "function" then
    check.fail(where, "controller must be a controller object (cq.mlp, cq.open_loop, cq.sine or {act = f})", opts.controller)
  end
  local self = setmetatable({ world = w, steps = steps, controller = opts.controller, observer = opts.observer,
    final = opts.final, running = opts.running, actuator = opts.actuator }, Rollout)
  if self.actuator and not w.user_forces then w:enable_user_forces() end
  self.memo = w:memo { steps = steps, checkpoint_every = opts.checkpoint_every or 0 }
  self.params = opts.controller.params or {}
  self.u = ffi.new("double[?]", math.max(1, w.n_actuators))
  return self
end

-- The actuation node of control step k on tape t for state s, and the Lua actuator's force node (or nil).
function Rollout:_act(t, s, k)
  local obs = self.observer and self.observer:observe(t, s, k) or nil
  local u = self.controller:act(t, obs, k)
  if u.n ~= self.world.n_actuators then
    error(string.format("cq.rollout: the controller gives %d actuation values, the world has %d actuators", u.n,
      self.world.n_actuators), 3)
  end
  local f = self.actuator and self.actuator(t, s, u, k) or nil
  if f and f.n ~= self.world.dim * self.world.n then
    error(string.format("cq.rollout: the Lua actuator gives %d force values, expected dim * n = %d", f.n,
      self.world.dim * self.world.n), 3)
  end
  return u, f
end

--- Runs the rollout from state s0; returns the loss (and records everything needed for backward).
function Rollout:forward(s0)
  local m = self.memo
  m:begin(s0)
  local L = 0
  for k = 0, self.steps - 1 do
    local t = tape.new()
    local u, f = self:_act(t, m.state, k)
    if self.running then L = L + self.running(t, m.state, u, k).v[0] end
    ffi.copy(self.u, u.v, 8 * u.n)
    m:step(self.u, f and f.v or nil)
  end
  local t = tape.new()
  L = L + self.final(t, m.state).v[0]
  self.loss = L
  return L
end

--- Gradients of the last forward's loss: controller parameters (param.g), memo.grad (dL/ds_0) and the world's
--- per-particle parameter gradients (memo.grad_params). Returns the memo.
function Rollout:backward()
  local m, na = self.memo, self.world.n_actuators
  for _, p in ipairs(self.params) do p:zero_grad() end
  m:backward_begin()
  local t = tape.new()
  t:backward(self.final(t, m.bstate), 1, m.grad)
  for k = self.steps - 1, 0, -1 do
    m:backward_step() -- m.grad is now dL/ds_k through the physics, m:grad_u(k + 1, i) = dL/du_k
    t = tape.new()
    local u, f = self:_act(t, m.bstate, k)
    local seed = {}
    for i = 1, na do seed[i] = m:grad_u(k + 1, i) end
    t:seed(u, seed)
    if f then t:seed(f, m.grad_force) end
    if self.running then t:seed(self.running(t, m.bstate, u, k), 1) end
    t:backward(nil, nil, m.grad)
  end
  return m
end

M.Rollout = Rollout
return M
