-- Memos: recorded runs (checkpoints, controls) and their backward pass, one control step at a time. The views a
-- memo hands out (memo.state, memo.grad, memo.bstate, memo.grad_params, memo.grad_act, memo.grad_force,
-- memo.grad_stress) point at buffers whose addresses never change: they stay valid for the memo's lifetime.
local ffi = require "ffi"
local C = require "cq._ffi"
local check = require "cq._check"
local registry = require "cq._registry"
local state = require "cq.state"
local now = require("cq.clock").now

local M = {}
local Memo = {}
Memo.__index = Memo
M.Memo = Memo

--- The memo object for handle h of world, created for steps control steps (memo.steps).
function M.wrap(world, h, steps)
  local lib, R = world._lib, world._real
  local m = setmetatable({ _h = h, world = world, steps = steps, _ctl = ffi.new("cq_control") }, Memo)
  m.state = state.wrap(world, lib.cq_memo_state(h), m)
  m.grad = state.wrap(world, lib.cq_memo_grad(h), m)
  m.bstate = state.wrap(world, lib.cq_memo_backward_state(h), m)
  m.grad_params = {}
  for _, f in ipairs(registry.fields(lib, "param")) do
    if f.diff then m.grad_params[f.name] = C.view(R, lib.cq_memo_grad_param(h, f.name), h) end
  end
  m.grad_act = C.view("double*", lib.cq_memo_grad_act(h), h) -- [steps][n_actuators]
  m.grad_force = C.view(R, lib.cq_memo_grad_control(h, "force"), h) -- dL/d(force) of the step stepped back over
  m.grad_stress = C.view(R, lib.cq_memo_grad_control(h, "stress"), h) -- dL/d(stress) [dim*dim][n], same step
  return m
end

function Memo:__tostring()
  if self._released then return "cq.memo (released)" end
  return string.format("cq.memo: %d/%d steps, %d stored states", self:recorded(), self.steps,
    self.world._lib.cq_memo_stored_states(self._h))
end

-- The engine handle, or "used after release" (of the memo or its world).
function Memo:_handle(where)
  if self._released or self.world._released then
    check.raise((where or "cq.memo") .. ": this memo was used after release (of the memo or its world)")
  end
  return self._h
end

--- Control steps recorded since memo:begin.
function Memo:recorded() return self.world._lib.cq_memo_steps(self:_handle("memo:recorded")) end
function Memo:stored_states() return self.world._lib.cq_memo_stored_states(self:_handle("memo:stored_states")) end

--- Starts a recording from state s0 (copied).
function Memo:begin(s0)
  local where = "memo:begin"
  local h = self:_handle(where)
  state.check_arg(where, "s0", s0, self.world)
  if not self.world._placed then self.world:_placement(s0, "memo:begin") end
  self.world:_check(self.world._lib.cq_memo_begin(h, s0._h), where)
  self._begun = true
  self:_fracture_baseline(s0)
end

-- Numerical fracture (cq._fracture), as world:step checks it: each solid body's pieces in the state a recording
-- begins from, taken again only when a recording begins from other positions than the last (a training loop's
-- rollouts begin from the same state), then checked after the steps as often as costs at most 2 % of them. A body
-- that comes apart in a recording is warned of, once per baseline, and the recording goes on: an optimiser's trial
-- parameters may tear a body for a while (a walker's stray foot particle), and its loss may still be what the
-- user wants; the warning says that the loss may exploit the tear.
function Memo:_fracture_baseline(s0)
  local w = self.world
  if w._fracture_off then self._fracture = nil return end
  local n, x, sum = w.n, s0.x, 0
  for i = 0, w.dim * n - 1 do sum = sum + x[i] * ((i % 7) + 1) end -- positions' fingerprint
  local F = self._fracture
  if not (F and F.sum == sum and F.gen == w._fracture_gen) then
    F = require("cq._fracture").baseline(w, s0, w.params.material, registry.MATERIAL.fluid)
    F.cost, F.spent, F.sum, F.gen, F.from = 0, 0, sum, w._fracture_gen, "the state the recording began from"
    self._fracture = F
  end
  F.steps = 0
end

--- Records one control step with actuation u and, optionally, a per-particle force (double[dim * n],
--- component-major) and a per-particle actuation stress (double[dim * dim * n], as in world:step), held over its
--- substeps.
function Memo:step(u, force, stress)
  local where = "memo:step"
  local h = self:_handle(where)
  if not self._begun then check.raise(where .. ": call memo:begin(s0) first (the state the recording starts from)") end
  local F = self._fracture
  local t0 = F and now()
  local control = self.world:_control(where, u, force, stress)
  self.world:_error_mark()
  self.world:_check(self.world._lib.cq_memo_step(h, control), where)
  if self.world.integrator == "implicit" then self.world:_error_check(where) end
  if F and not F.warned then
    local msg = self.world:_fracture_check(self.state, now() - t0, F, where, true)
    if msg then
      F.warned = true
      require("cq._warn").warn("cqlua: warning: memo:step: " .. msg .. ". The recording goes on (this is warned of " ..
        "once): a loss from a torn body may reward the tear (particles flung forward), and its gradients are those " ..
        "of the tear")
    end
  end
end

--- Zeroes gradients; afterwards memo.grad holds dL/d(final state): add the loss gradient into it.
function Memo:backward_begin()
  local where = "memo:backward_begin"
  self.world:_check(self.world._lib.cq_memo_backward_begin(self:_handle(where)), where)
end

--- One control step back: position k -> k-1. memo.grad is then dL/ds_{k-1}, memo.bstate is s_{k-1}.
function Memo:backward_step()
  local where = "memo:backward_step"
  self.world:_check(self.world._lib.cq_memo_backward_step(self:_handle(where)), where)
  return self:position()
end

--- The backward position k (the control step whose state memo.grad refers to), -1 before backward_begin.
function Memo:position() return self.world._lib.cq_memo_position(self:_handle("memo:position")) end

--- Full backward pass. on_step(k, memo) (optional) is called at each control step k (from T down to 0) before
--- stepping back, so running-loss gradients dL/ds_k can be added into memo.grad.
function Memo:backward(on_step)
  if on_step ~= nil and type(on_step) ~= "function" then
    check.fail("memo:backward", "on_step must be nil or a function(k, memo)", on_step)
  end
  self:backward_begin()
  local k = self:position()
  while true do
    if on_step then on_step(k, self) end
    if k == 0 then break end
    k = self:backward_step()
  end
end

--- dL/du for control step k (1-based) and actuator a (1-based).
function Memo:grad_u(k, a)
  local where = "memo:grad_u"
  self:_handle(where)
  local na = self.world.n_actuators
  if type(k) ~= "number" or k < 1 or k > self.steps or k % 1 ~= 0 then
    check.integer(where, "k (control step)", k, 1, self.steps)
  end
  if type(a) ~= "number" or a < 1 or a > na or a % 1 ~= 0 then
    if na == 0 then check.fail(where, "a: this world has no actuators", a) end
    check.integer(where, "a (actuator)", a, 1, na)
  end
  return self.grad_act[(k - 1) * na + (a - 1)]
end

--- Makes the memo unusable at once; its memory is returned when no view of it remains.
function Memo:release()
  if self._released then return end
  self._released = true
  self._h = nil
end

return M
