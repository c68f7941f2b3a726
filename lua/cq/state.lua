-- States: the fields of engine/core/fields.h (x, v, C, F, ...) of every particle, as FFI views onto engine memory, and
-- small helpers to read and write them. A state belongs to a world; memo.state, memo.grad and memo.bstate belong
-- to their memo.
local ffi = require "ffi"
local C = require "cq._ffi"
local check = require "cq._check"
local registry = require "cq._registry"

local M = {}
local State = {}
State.__index = State
M.State = State

--- The state object for handle h of world (owned by memo when memo is given): its fields as views s.x, s.v, ...
function M.wrap(world, h, memo)
  local self = setmetatable({ _h = h, world = world, _memo = memo, n = world.n, dim = world.dim, _len = {} }, State)
  local owner = memo and memo._h or h -- views keep their memory alive (see C.view)
  for _, f in ipairs(registry.fields(world._lib, "state")) do
    self[f.name] = C.view(world._real, world._lib.cq_state_field(h, f.name), owner)
    self._len[f.name] = registry.shape_len(f.shape, world.dim)
  end
  return self
end

-- The engine handle, or "used after release" (the state's, its memo's or its world's release).
function State:_handle(where)
  local m = self._memo
  if self._released or self.world._released or (m and m._released) then
    check.raise((where or "cq.state") .. ": this state was used after release (of the state, its memo or its world)")
  end
  return self._h
end

--- Checks that s is a live state of world (of its size); name names the argument in messages.
function M.check_arg(where, name, s, world)
  if getmetatable(s) ~= State then check.fail(where, name .. " must be a cq state (from world:state())", s) end
  s:_handle(where)
  if world and (s.n ~= world.n or s.dim ~= world.dim or s.world.precision ~= world.precision) then
    check.fail(where, string.format("%s must be a state of a world with %d particles in %dD, %s", name, world.n,
      world.dim, world.precision), check.shown(tostring(s) .. " of a " .. s.world.precision .. " world"))
  end
  return s
end

--- As M.check_arg, and s must be world's own (world:step, world:stress: a state of another world of the same size would
--- run against this world's parameters and its walls' reference state).
function M.check_own(where, name, s, world)
  M.check_arg(where, name, s, world)
  if s.world ~= world then
    check.fail(where, string.format("%s belongs to another world (%s), not this one; use a state of this world " ..
      "(world:state(); s:copy_from(other) copies another world's state into one)", name, tostring(s.world)),
      check.shown(tostring(s)))
  end
  return s
end

-- Components per particle of field, or an error naming the fields.
local function field_len(self, where, field)
  self:_handle(where)
  local len = self._len[field]
  if not len then
    local names = {}
    for _, f in ipairs(registry.fields(self.world._lib, "state")) do names[#names + 1] = f.name end
    check.fail(where, "field must be one of " .. table.concat(names, ", "), field)
  end
  return len
end

local function particle(where, p, n)
  if type(p) ~= "number" or p < 1 or p > n or p % 1 ~= 0 then check.integer(where, "p", p, 1, n) end
end

function State:__tostring()
  if self._released then return "cq.state (released)" end
  return string.format("cq.state: %d particles, substep %d", self.n, tonumber(self.world._lib.cq_state_substep(self._h)))
end
function State:substep() return tonumber(self.world._lib.cq_state_substep(self:_handle("state:substep"))) end
function State:time() return self:substep() * self.world.dt / self.world.substeps end

--- The values of field for particle p (1-based) as a Lua table.
function State:get(field, p)
  local len = field_len(self, "state:get", field)
  local arr, n = self[field], self.n
  particle("state:get", p, n)
  local out = {}
  for c = 1, len do out[c] = arr[(c - 1) * n + p - 1] end
  return out
end

--- Writes the values of field for particle p (1-based); any number (NaN and inf included: steps report them).
function State:set(field, p, values)
  local where = "state:set"
  local len = field_len(self, where, field)
  local arr, n = self[field], self.n
  particle(where, p, n)
  if type(values) ~= "table" or #values ~= len then check.vector(where, "values", values, len) end
  for c = 1, len do
    if type(values[c]) ~= "number" then check.fail(where, "values[" .. c .. "] must be a number", values[c]) end
  end
  for c = 1, len do arr[(c - 1) * n + p - 1] = values[c] end
end

--- A copy of this state, owned by Lua.
function State:copy()
  local h = self:_handle("state:copy")
  local s = self.world:state()
  self.world._lib.cq_state_copy(s._h, h)
  return s
end

function State:copy_from(other)
  local where = "state:copy_from"
  local h = self:_handle(where)
  M.check_arg(where, "other", other, self.world)
  if self.world._lib.cq_state_copy(h, other._h) ~= 0 then
    check.fail(where, "other must be a state of a world with " .. self.n .. " particles in " .. self.dim .. "D",
      check.shown(tostring(other)))
  end
end

--- Mean of a vector field ("x" or "v") over all particles, or over a list of 1-based indices.
function State:mean(field, idx)
  local where = "state:mean"
  field = field or "x"
  field_len(self, where, field)
  if field ~= "x" and field ~= "v" then check.fail(where, "field must be x or v", field) end
  local arr, n, out = self[field], self.n, {}
  if idx ~= nil then
    if type(idx) ~= "table" or #idx == 0 then check.fail(where, "idx must be nil (all) or a non-empty list of particle indices", idx) end
    for i, p in ipairs(idx) do
      if type(p) ~= "number" or p < 1 or p > n or p % 1 ~= 0 then check.integer(where, "idx[" .. i .. "]", p, 1, n) end
    end
  end
  for a = 1, self.dim do
    local s = 0
    if idx then for _, p in ipairs(idx) do s = s + arr[(a - 1) * n + p - 1] end
    else for p = 0, n - 1 do s = s + arr[(a - 1) * n + p] end end
    out[a] = s / (idx and #idx or n)
  end
  return out
end

--- The 2-norm of a field (any of the state's: "x", "v", "F", ...) over all particles and components. On memo.grad
--- (dL/ds_k) it shows how a gradient grows on its way back through the steps (run:backward's on_step).
function State:norm(field)
  local where = "state:norm"
  local len = field_len(self, where, field)
  local arr, big, s = self[field], 0, 0
  for i = 0, len * self.n - 1 do big = math.max(big, math.abs(arr[i])) end
  if big == 0 or big ~= big or big == math.huge then return big end
  for i = 0, len * self.n - 1 do s = s + (arr[i] / big) ^ 2 end -- scaled: an exploding gradient does not overflow
  return big * math.sqrt(s)
end

--- Makes the state unusable; its memory is returned when no view of it remains. (Memo states go with their memo.)
function State:release()
  if self._memo then check.raise("state:release: this state belongs to a memo (release the memo)") end
  self._released = true
end

return M
