-- First-order optimizers over cq.tape parameters (and any {n, v, g} arrays), with box bounds by projection.
local check = require "cq._check"

local M = {}

local function project(p, b)
  if not b then return end
  for i = 0, p.n - 1 do
    local lo = type(b[1]) == "number" and b[1] or (b[1] and b[1][i + 1]) or -math.huge
    local hi = type(b[2]) == "number" and b[2] or (b[2] and b[2][i + 1]) or math.huge
    if p.v[i] < lo then p.v[i] = lo elseif p.v[i] > hi then p.v[i] = hi end
  end
end

-- Factor that scales the gradients of params down to global norm max_norm (1 when already within it or no clip).
local function clip_factor(params, max_norm)
  if not max_norm then return 1 end
  local s = 0
  for _, p in ipairs(params) do for i = 0, p.n - 1 do s = s + p.g[i] * p.g[i] end end
  s = math.sqrt(s)
  return s > max_norm and max_norm / s or 1
end

local function check_params(where, params)
  if type(params) ~= "table" or #params == 0 then
    check.fail(where, "params must be a non-empty list of parameters (cq.param or controller.params)", params, 3)
  end
  for i, p in ipairs(params) do
    if type(p) ~= "table" or type(p.n) ~= "number" or p.v == nil or p.g == nil then
      check.fail(where, "params[" .. i .. "] must be a parameter with fields n, v, g (cq.param)", p, 3)
    end
  end
end

-- bounds = { [param] = {lo, hi} }: keys from params; lo, hi numbers, tables of param.n numbers or nil (unbounded).
local function check_bounds(where, params, bounds)
  if bounds == nil then return end
  if type(bounds) ~= "table" then check.fail(where, "bounds must be a table { [param] = {lo, hi} }", bounds, 3) end
  local known = {}
  for _, p in ipairs(params) do known[p] = true end
  for p, b in pairs(bounds) do
    if not known[p] then check.fail(where, "bounds keys must be parameters listed in params", p, 3) end
    if type(b) ~= "table" then check.fail(where, "bounds[param] must be {lo, hi}", b, 3) end
    for j, name in ipairs({ "lo", "hi" }) do
      local v = b[j]
      if v ~= nil and type(v) ~= "number" and (type(v) ~= "table" or #v ~= p.n) then
        check.fail(where, "bounds " .. name .. " must be a number or a table of " .. p.n .. " numbers",
          type(v) == "table" and ("a table of " .. #v) or v, 3)
      end
    end
    if type(b[1]) == "number" and type(b[2]) == "number" and b[1] > b[2] then
      check.fail(where, "bounds must have lo <= hi", b[1] .. " > " .. b[2], 3)
    end
  end
end

local ADAM_OPTIONS = check.option_set("cq.adam", { "params", "lr", "beta1", "beta2", "eps", "bounds", "clip_norm" })
local SGD_OPTIONS = check.option_set("cq.sgd", { "params", "lr", "momentum", "bounds", "clip_norm" })

--- Adam (Kingma & Ba). opts: params (list), lr [1e-3], beta1 [0.9], beta2 [0.999], eps [1e-8],
--- bounds = { [param] = {lo, hi} } (numbers or per-entry tables), applied after each step; clip_norm: scale the
--- gradient down to this global norm first (tames the rare exploding gradient of long contact-rich rollouts).
function M.adam(opts)
  local where = "cq.adam"
  check.options(where, opts, ADAM_OPTIONS)
  check_params(where, opts.params)
  check_bounds(where, opts.params, opts.bounds)
  local lr = check.number(where, "lr", opts.lr or 1e-3, 0, math.huge, { open_lo = true })
  local b1 = check.number(where, "beta1", opts.beta1 or 0.9, 0, 1, { open_hi = true })
  local b2 = check.number(where, "beta2", opts.beta2 or 0.999, 0, 1, { open_hi = true })
  local eps = check.number(where, "eps", opts.eps or 1e-8, 0, math.huge, { open_lo = true })
  if opts.clip_norm then check.number(where, "clip_norm", opts.clip_norm, 0, math.huge, { open_lo = true }) end
  local state, t = {}, 0
  for k, p in ipairs(opts.params) do
    state[k] = { m = {}, v = {} }
    for i = 0, p.n - 1 do state[k].m[i], state[k].v[i] = 0, 0 end
  end
  return {
    lr = lr,
    step = function(self)
      t = t + 1
      local c1, c2 = 1 - b1 ^ t, 1 - b2 ^ t
      local clip = clip_factor(opts.params, opts.clip_norm)
      for k, p in ipairs(opts.params) do
        local s = state[k]
        for i = 0, p.n - 1 do
          local g = clip * p.g[i]
          s.m[i] = b1 * s.m[i] + (1 - b1) * g
          s.v[i] = b2 * s.v[i] + (1 - b2) * g * g
          p.v[i] = p.v[i] - self.lr * (s.m[i] / c1) / (math.sqrt(s.v[i] / c2) + eps)
        end
        project(p, opts.bounds and opts.bounds[p])
      end
    end,
  }
end

--- Gradient descent with optional momentum. opts: params, lr [1e-2], momentum [0], bounds, clip_norm.
function M.sgd(opts)
  local where = "cq.sgd"
  check.options(where, opts, SGD_OPTIONS)
  check_params(where, opts.params)
  check_bounds(where, opts.params, opts.bounds)
  local lr = check.number(where, "lr", opts.lr or 1e-2, 0, math.huge, { open_lo = true })
  local mu = check.number(where, "momentum", opts.momentum or 0, 0, 1, { open_hi = true })
  if opts.clip_norm then check.number(where, "clip_norm", opts.clip_norm, 0, math.huge, { open_lo = true }) end
  local vel = {}
  for k, p in ipairs(opts.params) do vel[k] = {} for i = 0, p.n - 1 do vel[k][i] = 0 end end
  return {
    lr = lr,
    step = function(self)
      local clip = clip_factor(opts.params, opts.clip_norm)
      for k, p in ipairs(opts.params) do
        for i = 0, p.n - 1 do
          vel[k][i] = mu * vel[k][i] - self.lr * clip * p.g[i]
          p.v[i] = p.v[i] + vel[k][i]
        end
        project(p, opts.bounds and opts.bounds[p])
      end
    end,
  }
end

--- cq.keep_best{params}: keeps a copy of the parameters with the lowest loss seen: keeper:consider(loss) after each
--- evaluation (before the optimizer step), keeper:restore() writes the best copy back; keeper.loss and
--- keeper.iteration tell which. Gradient steps through long contact-rich rollouts are noisy: this returns the best
--- design found, not the last.
local KEEP_OPTIONS = check.option_set("cq.keep_best", { "params" })
function M.keep_best(opts)
  check.options("cq.keep_best", opts, KEEP_OPTIONS)
  local params = opts.params
  check_params("cq.keep_best", params)
  local keeper = { loss = math.huge, iteration = 0, count = 0, copy = {} }
  function keeper:consider(loss)
    if type(loss) ~= "number" then check.fail("keeper:consider", "loss must be a number", loss) end
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
  return keeper
end

return M
