-- First-order optimizers over cq.tape parameters (and any {n, v, g} arrays) in parameter groups, each with its own
-- step size and bounds (like torch's param groups: network weights want ~1e-3, a Young's modulus ~1e-1), with box
-- bounds by projection. Each step refuses non-finite gradients and step sizes; state() / load_state() save and
-- restore everything a step depends on (for checkpoints and for cq.train's recovery from a blow-up).
local ffi = require "ffi"
local check = require "cq._check"

local M = {}
local darr = ffi.typeof("double[?]")

-- The box of entry i of p: explicit bounds b ({lo, hi}, numbers or per-entry tables), else p.bounds (a design
-- variable's own), else none.
local function entry_bounds(b, i)
  local lo = type(b[1]) == "number" and b[1] or (b[1] and b[1][i + 1]) or -math.huge
  local hi = type(b[2]) == "number" and b[2] or (b[2] and b[2][i + 1]) or math.huge
  return lo, hi
end
local function project(p, b)
  if not b then return end
  for i = 0, p.n - 1 do
    local lo, hi = entry_bounds(b, i)
    if p.v[i] < lo then p.v[i] = lo elseif p.v[i] > hi then p.v[i] = hi end
  end
end
M.project = project

local function is_param(p) return type(p) == "table" and type(p.n) == "number" and p.v ~= nil and p.g ~= nil end

-- bounds = {lo, hi}: numbers, tables of n numbers, or nil (unbounded).
local function check_box(where, what, b, n)
  if type(b) ~= "table" then check.fail(where, what .. " must be {lo, hi}", b) end
  check.indices_only(where, what, b, 2, "{lo, hi} (numbers, tables of " .. n .. " numbers, or nil)")
  for j, name in ipairs({ "lo", "hi" }) do
    local v = b[j]
    if v ~= nil and type(v) ~= "number" and (type(v) ~= "table" or #v ~= n) then
      check.fail(where, what .. " " .. name .. " must be a number or a table of " .. n .. " numbers",
        type(v) == "table" and ("a table of " .. #v) or v)
    end
    if v ~= v then check.fail(where, what .. " " .. name .. " must be a number, not nan", v) end
    if type(v) == "table" then
      for i = 1, n do
        if type(v[i]) ~= "number" or v[i] ~= v[i] then
          check.fail(where, string.format("%s %s[%d] must be a number (not nan)", what, name, i), v[i])
        end
      end
    end
  end
  if type(b[1]) == "number" and type(b[2]) == "number" and b[1] > b[2] then
    check.fail(where, what .. " must have lo <= hi", check.shown(check.fmt(b[1]) .. " > " .. check.fmt(b[2])))
  end
end

local GROUP_KEYS = check.option_set("optimizer parameter group", { "params", "lr", "bounds" })

-- The parameter groups of opts: opts.params is a list of parameters (one group) or of groups {params, lr?, bounds?}.
-- Each group gets lr (its own or opts.lr, else default_lr) and, per parameter, its bounds (opts.bounds[p], the
-- group's bounds, or p.bounds).
local function make_groups(where, opts, default_lr)
  local list = opts.params
  if type(list) ~= "table" or #list == 0 then
    check.fail(where, "params must be a non-empty list of parameters (cq.param, controller.params, design.params) " ..
      "or of parameter groups {params = {...}, lr = ..., bounds = {lo, hi}}", list)
  end
  local grouped = not is_param(list[1]) and type(list[1]) == "table" and list[1].params ~= nil
  local specs = grouped and list or { { params = list } }
  local lr0 = check.number(where, "lr", opts.lr or default_lr, 0, math.huge, { open_lo = true })
  local groups, all, seen = {}, {}, {}
  for gi, spec in ipairs(specs) do
    local gw = grouped and string.format("%s params[%d]", where, gi) or where
    if grouped then check.options(gw, spec, GROUP_KEYS) end
    if type(spec.params) ~= "table" or #spec.params == 0 then
      check.fail(gw, "params must be a non-empty list of parameters", spec.params)
    end
    local g = { params = {}, bounds = {}, lr = spec.lr and check.number(gw, "lr", spec.lr, 0, math.huge, { open_lo = true }) or lr0 }
    for i, p in ipairs(spec.params) do
      if not is_param(p) then
        check.fail(gw, "params[" .. i .. "] must be a parameter with fields n, v, g (cq.param)" ..
          (grouped and "" or "; to give step sizes per group pass params = {{params = {...}, lr = ...}, ...}"), p)
      end
      if seen[p] then check.fail(gw, "params[" .. i .. "] appears twice (each parameter belongs to one group)", p) end
      seen[p] = true
      if spec.bounds ~= nil then check_box(gw, "bounds", spec.bounds, p.n) end
      g.params[i] = p
      g.bounds[i] = spec.bounds or p.bounds
      all[#all + 1] = p
    end
    groups[gi] = g
  end
  if opts.bounds ~= nil then -- { [param] = {lo, hi} } overrides
    if type(opts.bounds) ~= "table" then check.fail(where, "bounds must be a table { [param] = {lo, hi} }", opts.bounds) end
    for p, b in pairs(opts.bounds) do
      if not seen[p] then check.fail(where, "bounds keys must be parameters listed in params", p) end
      check_box(where, "bounds[param]", b, p.n)
      for _, g in ipairs(groups) do for i, q in ipairs(g.params) do if q == p then g.bounds[i] = b end end end
    end
  end
  return groups, all
end

-- Factor that scales the gradients of params down to global norm max_norm (1 when already within it or no clip).
local function clip_factor(params, max_norm)
  if not max_norm then return 1 end
  local s = 0
  for _, p in ipairs(params) do for i = 0, p.n - 1 do s = s + p.g[i] * p.g[i] end end
  s = math.sqrt(s)
  return s > max_norm and max_norm / s or 1
end

---------------------------------------------------------------- the optimizer object
local Optimizer = {}
M.Optimizer = Optimizer

function Optimizer.__index(self, k)
  if k == "lr" then
    local groups = rawget(self, "groups")
    if #groups ~= 1 then check.raise(self.kind .. ": lr: this optimizer has " .. #groups .. " parameter groups; read " ..
      "opt.groups[i].lr") end
    return groups[1].lr
  end
  return Optimizer[k]
end
function Optimizer.__newindex(self, k, v)
  if k == "lr" then
    local groups = rawget(self, "groups")
    if #groups ~= 1 then check.raise(self.kind .. ": lr: this optimizer has " .. #groups .. " parameter groups; set " ..
      "opt.groups[i].lr or call opt:scale_lr(f)") end
    groups[1].lr = check.number(self.kind, "lr", v, 0, math.huge, { open_lo = true })
    return
  end
  rawset(self, k, v)
end

function Optimizer:__tostring()
  local parts = {}
  for i, g in ipairs(self.groups) do
    local n = 0
    for _, p in ipairs(g.params) do n = n + p.n end
    parts[i] = string.format("%d values at lr %g", n, g.lr)
  end
  return self.kind .. ": " .. table.concat(parts, "; ")
end

--- Multiplies every group's step size by f (> 0): learning-rate schedules and cq.train's recovery.
function Optimizer:scale_lr(f)
  check.number(self.kind .. ":scale_lr", "f", f, 0, math.huge, { open_lo = true })
  for _, g in ipairs(self.groups) do g.lr = g.lr * f end
end

-- Refuses a step with a non-finite or non-positive step size or a non-finite gradient (before anything changes).
function Optimizer:_check_step()
  local where = self.kind .. ":step"
  for gi, g in ipairs(self.groups) do
    if type(g.lr) ~= "number" or not (g.lr > 0) or g.lr == math.huge then
      check.fail(where, "lr of group " .. gi .. " must be a finite number > 0", g.lr)
    end
    for pi, p in ipairs(g.params) do
      for i = 0, p.n - 1 do
        local x = p.g[i]
        if x ~= x or x == math.huge or x == -math.huge then
          check.raise(string.format("%s: the gradient of group %d parameter %d%s, entry %d, is %s: refusing a step " ..
            "that would make the parameters non-finite (cq.train recovers from this)", where, gi, pi,
            p.name and (" (" .. p.name .. ")") or "", i + 1, tostring(x)))
        end
      end
    end
  end
end

--- One step: the rule's update of every parameter from its gradient (p.g), then the bounds.
function Optimizer:step()
  self:_check_step()
  self.t = self.t + 1
  local clip = clip_factor(self.params, self.clip_norm)
  local k = 0
  for _, g in ipairs(self.groups) do
    for i, p in ipairs(g.params) do
      k = k + 1
      self:_update(p, self.slots[k], g.lr, clip)
      project(p, g.bounds[i])
    end
  end
end

--- Everything a step depends on besides the parameter values, as plain Lua tables (JSON-ready): the kind, the
--- step count, each group's lr and the per-parameter slots (Adam's moments, SGD's velocity).
function Optimizer:state()
  local st = { kind = self.kind, t = self.t, lr = {}, slots = {} }
  for gi, g in ipairs(self.groups) do st.lr[gi] = g.lr end
  for k, p in ipairs(self.params) do
    local s = {}
    for _, name in ipairs(self.slot_names) do
      local arr, list = self.slots[k][name], {}
      for i = 0, p.n - 1 do list[i + 1] = arr[i] end
      s[name] = list
    end
    st.slots[k] = s
  end
  return st
end

--- Restores a state() of an optimizer of the same kind over parameters of the same sizes; checks all of it first, so
--- a refused state leaves the optimizer as it was.
function Optimizer:load_state(st) self:_prepare_state(st)() end

-- The lowest value a slot may hold (Adam's second moment is a mean of squares).
local SLOT_MIN = { v = 0 }

-- Checks st (a state()) against this optimizer and returns the function that loads it: cq.load checks every object
-- of a file before it writes any.
function Optimizer:_prepare_state(st)
  local where = self.kind .. ":load_state"
  if type(st) ~= "table" or st.kind ~= self.kind then
    check.fail(where, "state must be the state() of a " .. self.kind, type(st) == "table" and st.kind or st)
  end
  if type(st.lr) ~= "table" or #st.lr ~= #self.groups then
    check.fail(where, "state has " .. (type(st.lr) == "table" and #st.lr or "no") .. " parameter groups, this optimizer " ..
      #self.groups, st.lr)
  end
  if type(st.slots) ~= "table" or #st.slots ~= #self.params then
    check.fail(where, "state holds " .. (type(st.slots) == "table" and #st.slots or 0) .. " parameters, this optimizer " ..
      #self.params, st.slots)
  end
  for k, p in ipairs(self.params) do
    local slots = st.slots[k]
    if type(slots) ~= "table" then check.fail(where, "slots[" .. k .. "] must be a table of slots", slots) end
    for _, name in ipairs(self.slot_names) do
      local list, lo = slots[name], SLOT_MIN[name] or -math.huge
      if type(list) ~= "table" or #list ~= p.n then
        check.fail(where, string.format("slot %s of parameter %d must have %d values", name, k, p.n),
          type(list) == "table" and #list or list)
      end
      for i = 1, p.n do
        local x = list[i]
        if type(x) ~= "number" or not (x >= lo) or x == math.huge or x == -math.huge then
          check.number(where, string.format("slot %s of parameter %d: value %d", name, k, i), x,
            lo > -math.huge and lo or nil)
        end
      end
    end
  end
  local lr = {}
  for gi in ipairs(self.groups) do
    lr[gi] = check.number(where, "lr[" .. gi .. "]", st.lr[gi], 0, math.huge, { open_lo = true })
  end
  local t, slots = check.integer(where, "t", st.t, 0), st.slots
  return function()
    for k, p in ipairs(self.params) do
      for _, name in ipairs(self.slot_names) do
        local arr, list = self.slots[k][name], slots[k][name]
        for i = 0, p.n - 1 do arr[i] = list[i + 1] end
      end
    end
    for gi, g in ipairs(self.groups) do g.lr = lr[gi] end
    self.t = t
  end
end

-- A new optimizer of kind over opts' groups, with the named per-parameter slots (zeroed) and the update rule.
local function new(kind, opts, default_lr, slot_names, update)
  local groups, params = make_groups(kind, opts, default_lr)
  local clip_norm
  if opts.clip_norm ~= nil then clip_norm = check.number(kind, "clip_norm", opts.clip_norm, 0, math.huge, { open_lo = true }) end
  local slots = {}
  for k, p in ipairs(params) do
    slots[k] = {}
    for _, name in ipairs(slot_names) do slots[k][name] = darr(p.n) end
  end
  local self = { kind = kind, groups = groups, params = params, slots = slots, slot_names = slot_names, t = 0,
    clip_norm = clip_norm, _update = update }
  return setmetatable(self, Optimizer)
end

local ADAM_OPTIONS = check.option_set("cq.adam", { "params", "lr", "beta1", "beta2", "eps", "bounds", "clip_norm" })
local SGD_OPTIONS = check.option_set("cq.sgd", { "params", "lr", "momentum", "bounds", "clip_norm" })

--- Adam (Kingma & Ba). opts: params (a list of parameters, or of groups {params, lr, bounds}), lr [1e-3] (groups
--- without their own), beta1 [0.9], beta2 [0.999], eps [1e-8], bounds = { [param] = {lo, hi} } (numbers or
--- per-entry tables; else the group's bounds, else the parameter's own p.bounds), applied after each step;
--- clip_norm: scale the gradient down to this global norm first (tames the rare exploding gradient of long
--- contact-rich rollouts).
function M.adam(opts)
  local where = "cq.adam"
  check.options(where, opts, ADAM_OPTIONS)
  local b1 = check.number(where, "beta1", opts.beta1 or 0.9, 0, 1, { open_hi = true })
  local b2 = check.number(where, "beta2", opts.beta2 or 0.999, 0, 1, { open_hi = true })
  local eps = check.number(where, "eps", opts.eps or 1e-8, 0, math.huge, { open_lo = true })
  return new(where, opts, 1e-3, { "m", "v" }, function(self, p, s, lr, clip)
    local c1, c2 = 1 - b1 ^ self.t, 1 - b2 ^ self.t
    local m, v = s.m, s.v
    for i = 0, p.n - 1 do
      local g = clip * p.g[i]
      m[i] = b1 * m[i] + (1 - b1) * g
      v[i] = b2 * v[i] + (1 - b2) * g * g
      p.v[i] = p.v[i] - lr * (m[i] / c1) / (math.sqrt(v[i] / c2) + eps)
    end
  end)
end

--- Gradient descent with optional momentum. opts: params (list or groups), lr [1e-2], momentum [0], bounds, clip_norm.
function M.sgd(opts)
  local where = "cq.sgd"
  check.options(where, opts, SGD_OPTIONS)
  local mu = check.number(where, "momentum", opts.momentum or 0, 0, 1, { open_hi = true })
  return new(where, opts, 1e-2, { "velocity" }, function(_, p, s, lr, clip)
    local vel = s.velocity
    for i = 0, p.n - 1 do
      vel[i] = mu * vel[i] - lr * clip * p.g[i]
      p.v[i] = p.v[i] + vel[i]
    end
  end)
end

--- cq.keep_best{params}: keeps a copy of the parameters with the lowest loss seen: keeper:consider(loss) after each
--- evaluation (before the optimizer step), keeper:restore() writes the best copy back; keeper.loss and
--- keeper.iteration tell which. Gradient steps through long contact-rich rollouts are noisy: this returns the best
--- design found, not the last. state() / load_state() for checkpoints.
local KEEP_OPTIONS = check.option_set("cq.keep_best", { "params" })
function M.keep_best(opts)
  check.options("cq.keep_best", opts, KEEP_OPTIONS)
  local params = opts.params
  if type(params) ~= "table" or #params == 0 then
    check.fail("cq.keep_best", "params must be a non-empty list of parameters (cq.param or controller.params)", params)
  end
  for i, p in ipairs(params) do
    if not is_param(p) then check.fail("cq.keep_best", "params[" .. i .. "] must be a parameter with fields n, v, g (cq.param)", p) end
  end
  local keeper = { loss = math.huge, iteration = 0, count = 0, copy = {} }
  function keeper:consider(loss)
    if type(loss) ~= "number" then check.fail("keeper:consider", "loss must be a number", loss) end
    if loss ~= loss then
      check.fail("keeper:consider", "loss must be a number, not nan (a failed evaluation is not a candidate)", loss)
    end
    self.count = self.count + 1
    if loss < self.loss then
      self.loss, self.iteration = loss, self.count
      for k, p in ipairs(params) do
        self.copy[k] = self.copy[k] or {}
        for i = 0, p.n - 1 do self.copy[k][i] = p.v[i] end
      end
    end
  end
  function keeper:restore()
    for k, p in ipairs(params) do
      if self.copy[k] then for i = 0, p.n - 1 do p.v[i] = self.copy[k][i] end end
    end
  end
  function keeper:state()
    local copy = {}
    for k, p in ipairs(params) do
      if self.copy[k] then
        copy[k] = {}
        for i = 0, p.n - 1 do copy[k][i + 1] = self.copy[k][i] end
      end
    end
    return { loss = self.loss ~= math.huge and self.loss or nil, iteration = self.iteration, count = self.count, copy = copy }
  end
  -- Checks a keeper's state() and returns the function that loads it (cq.load checks every object before it
  -- writes any): a refused state leaves the keeper as it was.
  function keeper:_prepare_state(st)
    local where = "keeper:load_state"
    if type(st) ~= "table" or type(st.count) ~= "number" then check.fail(where, "state must be a keeper's state()", st) end
    local count = check.integer(where, "count", st.count, 0)
    local iteration = check.integer(where, "iteration", st.iteration, 0, count)
    local loss = st.loss
    if loss ~= nil then check.number(where, "loss", loss, nil, nil, { inf = true }) end
    if st.copy ~= nil and type(st.copy) ~= "table" then check.fail(where, "copy must be a list of value lists", st.copy) end
    local copy = {}
    for k, p in ipairs(params) do
      local list = st.copy and st.copy[k]
      if list ~= nil then
        if type(list) ~= "table" or #list ~= p.n then
          check.fail(where, "copy " .. k .. " must have " .. p.n .. " values", type(list) == "table" and #list or list)
        end
        local c = {}
        for i = 0, p.n - 1 do
          local x = list[i + 1]
          if type(x) ~= "number" then check.fail(where, "copy " .. k .. " value " .. (i + 1) .. " must be a number", x) end
          c[i] = x
        end
        copy[k] = c
      end
    end
    return function() self.loss, self.iteration, self.count, self.copy = loss or math.huge, iteration, count, copy end
  end
  function keeper:load_state(st) self:_prepare_state(st)() end
  return keeper
end

return M
