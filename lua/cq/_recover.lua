-- Private: what the optimisation drivers (cq.train, cq.augmented_lagrangian) share to recover from a numerical
-- failure: telling one from a bug in the script, and the copies of parameters, gradients and optimizer state that a
-- recovery goes back to.
local ffi = require "ffi"

local M = {}

--- True for a numerical failure the recovery policy handles (the engine's blow-up checks, a non-finite loss or
--- gradient), as opposed to a bug in the script, which is raised at once. world (optional): its status of the
--- evaluation that failed.
function M.numerical(err, world)
  local msg = tostring(err)
  if world and world._failed_status == ffi.C.CQ_ERR_BLOWUP then return true end -- this evaluation's engine status
  return msg:find("blow%-up") or msg:find("not finite") or msg:find("nonfinite_gradient") or msg:find(" is nan")
    or msg:find(" is inf") or msg:find(" is %-inf") or msg:find("stable limit")
    or msg:find("did not converge") -- an implicit solve (Newton, or the adjoint's) without a world to ask
end

--- Copies of opt's parameters' values and gradients and of its state (1-based lists: JSON-ready, so a checkpoint
--- carries them and a resumed run recovers exactly as the uninterrupted one would).
function M.snapshot(opt)
  local s = { values = {}, grads = {}, opt = opt:state() }
  for k, p in ipairs(opt.params) do
    local v, g = {}, {}
    for i = 0, p.n - 1 do v[i + 1], g[i + 1] = p.v[i], p.g[i] end
    s.values[k], s.grads[k] = v, g
  end
  return s
end

--- Writes snapshot s back into opt's parameters and state.
function M.restore(opt, s)
  for k, p in ipairs(opt.params) do
    for i = 0, p.n - 1 do p.v[i], p.g[i] = s.values[k][i + 1], s.grads[k][i + 1] end
  end
  opt:load_state(s.opt)
end

--- Writes a snapshot's values (1-based lists, one per parameter) back into params, their gradients zeroed.
function M.restore_values(params, values)
  for k, p in ipairs(params) do
    for i = 0, p.n - 1 do p.v[i], p.g[i] = values[k][i + 1], 0 end
  end
end

--- A message naming the first non-finite gradient entry of params, or nil when all are finite.
function M.nonfinite_gradient(params)
  for k, p in ipairs(params) do
    for i = 0, p.n - 1 do
      local g = p.g[i]
      if g ~= g or g == math.huge or g == -math.huge then
        return string.format("the gradient of parameter %d%s, entry %d, is %s", k, p.name and (" (" .. p.name .. ")")
          or "", i + 1, tostring(g))
      end
    end
  end
end

--- Checks a driver's `extra` option ({save = function() -> table, load = function(table)}: what else the loss
--- depends on, carried by the checkpoint); where names the driver, options its option set for extra.
function M.check_extra(where, extra, options)
  if extra == nil then return end
  local check = require "cq._check"
  check.options(where .. ".extra", extra, options)
  if type(extra.save) ~= "function" or type(extra.load) ~= "function" then
    check.fail(where, "extra must be {save = function() -> table, load = function(table)}", extra)
  end
end

return M
