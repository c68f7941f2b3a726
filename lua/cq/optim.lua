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

--- Adam (Kingma & Ba). opts: params (list), lr [1e-3], beta1 [0.9], beta2 [0.999], eps [1e-8],
--- bounds = { [param] = {lo, hi} } (numbers or per-entry tables), applied after each step.
function M.adam(opts)
  local where = "cq.optim.adam"
  check.options(where, opts, { params = true, lr = true, beta1 = true, beta2 = true, eps = true, bounds = true })
  local lr = check.number(where, "lr", opts.lr or 1e-3, 0, math.huge, { open_lo = true })
  local b1, b2, eps = opts.beta1 or 0.9, opts.beta2 or 0.999, opts.eps or 1e-8
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
      for k, p in ipairs(opts.params) do
        local s = state[k]
        for i = 0, p.n - 1 do
          local g = p.g[i]
          s.m[i] = b1 * s.m[i] + (1 - b1) * g
          s.v[i] = b2 * s.v[i] + (1 - b2) * g * g
          p.v[i] = p.v[i] - self.lr * (s.m[i] / c1) / (math.sqrt(s.v[i] / c2) + eps)
        end
        project(p, opts.bounds and opts.bounds[p])
      end
    end,
  }
end

--- Gradient descent with optional momentum. opts: params, lr [1e-2], momentum [0], bounds.
function M.sgd(opts)
  local where = "cq.optim.sgd"
  check.options(where, opts, { params = true, lr = true, momentum = true, bounds = true })
  local lr = check.number(where, "lr", opts.lr or 1e-2, 0, math.huge, { open_lo = true })
  local mu = opts.momentum or 0
  local vel = {}
  for k, p in ipairs(opts.params) do vel[k] = {} for i = 0, p.n - 1 do vel[k][i] = 0 end end
  return {
    lr = lr,
    step = function(self)
      for k, p in ipairs(opts.params) do
        for i = 0, p.n - 1 do
          vel[k][i] = mu * vel[k][i] - self.lr * p.g[i]
          p.v[i] = p.v[i] + vel[k][i]
        end
        project(p, opts.bounds and opts.bounds[p])
      end
    end,
  }
end

return M
