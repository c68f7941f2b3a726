-- Closed-loop rollouts and their gradients: state -> observer -> controller -> actuation -> substeps, per control
-- step, with a final loss g(s_T) and running losses h(s_k, u_k). The backward pass walks the engine's memo back one
-- control step at a time, recomputes that step's observer and controller on a fresh tape from the recomputed
-- state, and pushes dL/du_k through them into the parameters and into dL/ds_k.
local ffi = require "ffi"
local tape = require "cq.tape"
local check = require "cq._check"
local trajectory = require "cq.trajectory"

local M = {}
local OPTIONS = check.option_set("cq.rollout", { "world", "steps", "controller", "observer", "final", "running",
  "checkpoint_every", "actuator", "accumulate", "record", "design" })
local BACKWARD_OPTIONS = check.option_set("run:backward", { "on_step", "accumulate", "weight" })
local DESIGN_ACCUMULATE = { accumulate = true }
local Rollout = {}
Rollout.__index = Rollout

--- cq.rollout{ world, steps, controller?, observer?, final(t, state) -> scalar node, running?(t, state, u, k),
---   actuator?(t, state, u, k) -> node of dim * n particle forces (component-major) or of dim * dim * n material-
---   space actuation stresses (A_p[i][j] at (i * dim + j) * n + p; adds F A_p F^T like a pressure actuator): an
---   actuator written in Lua (seed 000 Listing 3), differentiated on the tape; checkpoint_every?;
---   accumulate? = "sum" (default) | "max" | "min": loss = final + sum_k / max_k / min_k of h_k over k = 0..steps-1;
---   record? = {"x"} (default) | true (x and v) | false | a list of "x", "v", "F": state fields kept per control
---   step for run:trajectory() (8 * dim * n * (steps + 1) bytes per field; u_k and h_k are always kept);
---   design?: a cq.design whose variables set the world's parameters (and rest shape) before every forward and
---   receive their gradients in backward }
--- Without a controller the world is passive: zero actuation (a world without actuators needs none).
function M.new(opts)
  local where = "cq.rollout"
  check.options(where, opts, OPTIONS)
  local accumulate = check.oneof(where, "accumulate", opts.accumulate or "sum", { "sum", "max", "min" })
  local record = trajectory.record_fields(where, opts.record)
  local w = opts.world
  if getmetatable(w) ~= require("cq").World then check.fail(where, "world must be a cq.world", w) end
  local steps = check.integer(where, "steps", opts.steps, 1)
  if opts.controller ~= nil and (type(opts.controller) ~= "table" or type(opts.controller.act) ~= "function") then
    check.fail(where, "controller must be nil (passive) or a controller object (cq.mlp, cq.open_loop, cq.sine or " ..
      "{act = f})", opts.controller)
  end
  if opts.design ~= nil and getmetatable(opts.design) ~= require("cq.design").Design then
    check.fail(where, "design must be nil or a cq.design", opts.design)
  end
  if opts.design and opts.design.world ~= w then check.fail(where, "design must belong to the rollout's world", opts.design) end
  if opts.observer ~= nil and (type(opts.observer) ~= "table" or type(opts.observer.observe) ~= "function") then
    check.fail(where, "observer must be nil or an observer object (cq.centroid_observer or {observe = f})",
      opts.observer)
  end
  if type(opts.final) ~= "function" then
    check.fail(where, "final must be a function(t, state) -> scalar tape node (see cq.objectives)", opts.final)
  end
  for _, name in ipairs({ "running", "actuator" }) do
    if opts[name] ~= nil and type(opts[name]) ~= "function" then
      check.fail(where, name .. " must be nil or a function", opts[name])
    end
  end
  if opts.controller and opts.controller.params ~= nil and type(opts.controller.params) ~= "table" then
    check.fail(where, "controller.params must be nil or a list of cq.param", opts.controller.params)
  end
  M.check_parts(where, w, steps, opts.controller, opts.observer)
  if accumulate ~= "sum" and opts.running == nil then
    require("cq._warn").warn(string.format('cqlua: warning: %s: accumulate = "%s" has no effect: there is no running ' ..
      "loss to take the %s of (give running, or leave accumulate out)", where, accumulate, accumulate))
  end
  local last = require("cq.objectives").last_step(opts.running)
  if last and last >= steps then
    require("cq._warn").warn(string.format("cqlua: warning: %s: the running loss has keyframes up to step %d, but " ..
      "the rollout's steps = %d reach control steps 0..%d only: those keyframes are never matched", where, last, steps,
      steps - 1))
  end
  local self = setmetatable({ world = w, steps = steps, controller = opts.controller, observer = opts.observer,
    final = opts.final, running = opts.running, actuator = opts.actuator, accumulate = accumulate, record = record,
    design = opts.design }, Rollout)
  self.memo = w:memo { steps = steps, checkpoint_every = opts.checkpoint_every or 0 }
  self.params = opts.controller and opts.controller.params or {}
  self.u = ffi.new("double[?]", math.max(1, w.n_actuators))
  return self
end

--- Checks what the controller and observer declare against the world and the steps (a custom one that declares
--- nothing passes): the controller's outputs against world.n_actuators, its inputs (cq.mlp) against the observer's
--- size(dim), its steps (cq.open_loop) against the rollout's, the observer's particle groups against world.n.
function M.check_parts(where, w, steps, ctl, obs)
  if ctl and type(ctl.outputs) == "number" and ctl.outputs ~= w.n_actuators then
    check.fail(where, "controller outputs must be the world's n_actuators = " .. w.n_actuators, ctl.outputs)
  end
  if ctl and type(ctl.inputs) == "number" then
    if obs == nil then
      check.fail(where, "observer must be given: the controller reads an observation of inputs = " .. ctl.inputs ..
        " values (e.g. cq.centroid_observer)", obs)
    end
    local size = type(obs.size) == "function" and obs.size(w.dim)
    if type(size) == "number" and size ~= ctl.inputs then
      check.raise(string.format("%s: controller inputs = %d must be the observer's size %d (its size(%d)): the " ..
        "controller's inputs must equal what the observer gives", where, ctl.inputs, size, w.dim))
    end
  end
  if ctl and type(ctl.steps) == "number" and steps > ctl.steps then
    check.fail(where, "steps must be at most the controller's steps = " .. ctl.steps .. " (cq.open_loop has no " ..
      "actuation past them)", steps)
  end
  if obs and type(obs.groups) == "table" then
    for i, g in ipairs(obs.groups) do
      for j, p in ipairs(g) do
        if p > w.n then
          check.fail(where, string.format("observer groups[%d][%d] must be a particle index in [1, %d] (the world's)",
            i, j, w.n), p)
        end
      end
    end
  end
end

--- Every trainable parameter of the rollout: the controller's, then the design's (for an optimizer).
function Rollout:parameters()
  local list = {}
  for _, p in ipairs(self.controller and self.controller.params or {}) do list[#list + 1] = p end
  for _, p in ipairs(self.design and self.design.params or {}) do list[#list + 1] = p end
  return list
end

-- The actuation node of control step k on tape t for state s (nil without a controller: zero actuation), and the
-- Lua actuator's force node and stress node (each nil unless the actuator returned that kind).
function Rollout:_act(t, s, k)
  local obs = self.observer and self.observer:observe(t, s, k) or nil
  local u = self.controller and self.controller:act(t, obs, k)
  if self.controller and (type(u) ~= "table" or type(u.n) ~= "number" or u.v == nil) then
    check.fail("cq.rollout", "the controller's act must return a tape node of " .. self.world.n_actuators ..
      " actuation values", u, 3)
  end
  if u and u.n ~= self.world.n_actuators then
    check.raise(string.format("cq.rollout: the controller gives %d actuation values, the world has %d actuators", u.n,
      self.world.n_actuators))
  end
  local f = self.actuator and self.actuator(t, s, u, k) or nil
  if f ~= nil and (type(f) ~= "table" or type(f.n) ~= "number" or f.v == nil) then
    check.fail("cq.rollout", "the Lua actuator must return a tape node (forces or stresses)", f, 3)
  end
  local dim, n = self.world.dim, self.world.n
  if f and f.n == dim * dim * n then return u, nil, f end -- a stress tensor per particle
  if f and f.n ~= dim * n then
    check.raise(string.format("cq.rollout: the Lua actuator gives %d values, expected dim * n = %d (forces) or " ..
      "dim * dim * n = %d (stress tensors)", f.n, dim * n, dim * dim * n))
  end
  return u, f
end

-- The value of a scalar loss node returned by final / running (name), or an error naming the function.
local function scalar(node, name)
  if type(node) ~= "table" or node.n ~= 1 or node.v == nil then
    check.fail("cq.rollout", name .. " must return a scalar tape node (size 1; the constant 0 is t:const({0}), " ..
      "t:const(0) is an empty node)", type(node) == "table" and node.n and ("a node of size " .. node.n) or node, 3)
  end
  return node.v[0]
end

--- Runs the rollout from state s0; returns the loss (and records everything needed for backward, and the
--- trajectory: states at control steps 0..steps, u_k, h_k).
function Rollout:forward(s0)
  local m = self.memo
  require("cq.state").check_arg("run:forward", "s0", s0, self.world)
  self.loss = nil -- (until this forward has finished: backward needs a whole one)
  if self.design then s0 = self.design:apply(s0) end
  m:begin(s0)
  local rec = self._traj
  if not rec or rec.taken then -- fresh buffers when the last ones were handed out by run:trajectory()
    rec = trajectory.new { world = self.world, steps = self.steps, record = self.record, running = self.running ~= nil }
    self._traj = rec
  end
  rec:record_state(0, m.state)
  local acc, arg = 0, nil
  for k = 0, self.steps - 1 do
    local t = tape.new()
    local u, f, a = self:_act(t, m.state, k)
    if self.running then
      local h = scalar(self.running(t, m.state, u, k), "running")
      rec.h[k] = h
      if self.accumulate == "sum" then acc = acc + h
      elseif arg == nil or (self.accumulate == "max" and h > acc) or (self.accumulate == "min" and h < acc) then
        acc, arg = h, k
      end
    end
    if u then ffi.copy(self.u, u.v, 8 * u.n) end
    rec:record_action(k, self.u)
    m:step(self.u, f and f.v or nil, a and a.v or nil)
    rec:record_state(k + 1, m.state)
  end
  local t = tape.new()
  local final = scalar(self.final(t, m.state), "final")
  local L = acc + final
  if L ~= L or math.abs(L) == math.huge then
    check.raise(string.format("run:forward: the loss is not finite (%s = final %s + %s of the running loss); the " ..
      "objective may divide by zero or take the root of a negative number", tostring(L), tostring(final),
      self.accumulate))
  end
  self.loss, self.argbest = L, arg -- argbest: the step whose h_k is the max / min (nil for sum)
  rec.loss, rec.final, rec.accumulate, rec.argbest = L, final, self.accumulate, arg
  return L
end

--- The trajectory of the last forward (a cq.trajectory: x(k), v(k), u(k), running(k), centroid(k), export(prefix)).
--- It keeps its buffers: the next forward records into new ones.
function Rollout:trajectory()
  local rec = self._traj
  if not rec or rec.loss == nil then check.raise("cq.rollout:trajectory: call run:forward(s0) first") end
  rec.taken = true
  return rec
end

-- A non-finite parameter gradient (from a controller or objective written in Lua: the engine checks its own) stops
-- here, before an optimizer can read it.
local function check_finite_grads(params)
  local bad = require("cq._recover").nonfinite_gradient(params)
  if bad then
    check.raise("run:backward: " .. bad .. " (check nonfinite_gradient): an observer, controller or objective " ..
      "gives a non-finite derivative")
  end
end

--- Gradients of the last forward's loss: controller parameters (param.g), memo.grad (dL/ds_0), the world's
--- per-particle parameter gradients (memo.grad_params) and the design variables' (param.g). Returns the memo.
--- The argument: nil, on_step, or an options table { on_step?, accumulate = false, weight = 1 }.
--- on_step(k, memo) (optional) is called at each control step k from steps - 1 down to 0, once memo.grad is dL/ds_k
--- (the physics' and the running loss's): e.g. memo.grad:norm("x") per step, to see where a gradient explodes.
--- accumulate = true adds into the params' g instead of zeroing them first, and weight = w back-propagates w times
--- the loss: a loss F(L_1, L_2, ...) of several rollouts (or several forwards of one) gets its gradient from one
--- backward per rollout with weight = dF/dL_i, the first without accumulate (or after zeroing), the others with it.
--- memo.grad and memo.grad_params are this backward's own (times weight), not accumulated.
function Rollout:backward(opts)
  local where = "run:backward"
  if self.loss == nil then
    check.raise(where .. ": no finished forward to differentiate (none ran, or the last one failed): call " ..
      "run:forward(s0) first")
  end
  local on_step, accumulate, weight = nil, false, 1
  if type(opts) == "function" then
    on_step = opts
  elseif type(opts) == "table" then
    check.options(where, opts, BACKWARD_OPTIONS)
    on_step = opts.on_step
    if opts.accumulate ~= nil and type(opts.accumulate) ~= "boolean" then
      check.fail(where, "accumulate must be true or false", opts.accumulate)
    end
    accumulate = opts.accumulate or false
    if opts.weight ~= nil then weight = check.number(where, "weight", opts.weight) end
  elseif opts ~= nil then
    check.fail(where, "on_step must be nil or a function(k, memo) (or pass an options table { on_step, accumulate, " ..
      "weight })", opts)
  end
  if on_step ~= nil and type(on_step) ~= "function" then
    check.fail(where, "on_step must be nil or a function(k, memo)", on_step)
  end
  local m, na = self.memo, self.world.n_actuators
  self.params = self.controller and self.controller.params or {} -- run.controller may have been replaced
  if not accumulate then for _, p in ipairs(self.params) do p:zero_grad() end end
  m:backward_begin()
  local t = tape.new()
  t:backward(self.final(t, m.bstate), weight, m.grad)
  for k = self.steps - 1, 0, -1 do
    m:backward_step() -- m.grad is now dL/ds_k through the physics, m:grad_u(k + 1, i) = dL/du_k
    t = tape.new()
    local u, f, a = self:_act(t, m.bstate, k)
    if u then t:seed(u, m.grad_act + k * na) end -- dL/du_k: row k of the memo's per-step actuator gradients
    if f then t:seed(f, m.grad_force) end
    if a then t:seed(a, m.grad_stress) end
    if self.running and (self.accumulate == "sum" or k == self.argbest) then
      t:seed(self.running(t, m.bstate, u, k), weight) -- max / min: only the arg-max / arg-min step carries the loss
    end
    t:backward(nil, nil, m.grad)
    if on_step then on_step(k, m) end
  end
  if self.design then self.design:backward(m, accumulate and DESIGN_ACCUMULATE or nil) end
  check_finite_grads(self:parameters())
  return m
end

M.Rollout = Rollout
return M
