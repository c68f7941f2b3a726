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

-- Lists read back from a checkpoint: one per parameter, each of the parameter's count of finite numbers (a snapshot's
-- values or gradients, a finished run's last gradients); name: the field, for messages.
local function check_lists(where, name, lists, params)
  local check = require "cq._check"
  if type(lists) ~= "table" or #lists ~= #params then
    check.fail(where, string.format("%s must be a list of %d value lists (one per parameter)", name, #params), lists)
  end
  for k, p in ipairs(params) do check.vector(where, string.format("%s[%d]", name, k), lists[k], p.n) end
end

--- Checks a snapshot read back from a checkpoint (name: its field) against opt's parameters and state, so that
--- restoring it cannot fail halfway. where: the driver and the file, for messages.
function M.check_snapshot(where, name, s, opt)
  local check = require "cq._check"
  if type(s) ~= "table" then check.fail(where, name .. " must be a snapshot {values, grads, opt}", s) end
  check_lists(where, name .. ".values", s.values, opt.params)
  check_lists(where, name .. ".grads", s.grads, opt.params)
  local ok, err = pcall(opt._prepare_state, opt, s.opt)
  if not ok then check.raise(string.format("%s: %s.opt: %s", where, name, (tostring(err):gsub("^.-:%d+: ", "", 1)))) end
end

--- Checks what a cq.train checkpoint (saved, read from the file ckpt) hands the resumed run besides its objects (which
--- cq.save's unpack checks) and its fingerprint: every field the run goes on with, so that a damaged or hand-edited
--- file is refused naming the field and its value, not met later as a Lua error. opt: the run's optimizer; extra:
--- its extra option.
function M.check_checkpoint(where, ckpt, saved, opt, extra)
  local check = require "cq._check"
  local w = where .. ": the checkpoint " .. tostring(ckpt)
  check.integer(w, "iteration", saved.iteration, 0)
  if saved.finished ~= nil and type(saved.finished) ~= "boolean" then
    check.fail(w, "finished must be true or false", saved.finished)
  end
  check.number(w, "lr_factor", saved.lr_factor, 0, nil, { open_lo = true })
  check.integer(w, "recoveries", saved.recoveries, 0)
  if saved.failures ~= nil then check.integer(w, "failures", saved.failures, 0) end
  if saved.accepted_loss ~= nil then check.number(w, "accepted_loss", saved.accepted_loss) end
  local base = saved.base_lr
  if type(base) ~= "table" or #base ~= #opt.groups then
    check.fail(w, string.format("base_lr must be a list of %d step sizes (one per parameter group)", #opt.groups), base)
  end
  for gi = 1, #opt.groups do check.number(w, "base_lr[" .. gi .. "]", base[gi], 0, nil, { open_lo = true }) end
  if saved.good ~= nil then M.check_snapshot(w, "good", saved.good, opt) end
  if saved.finished and saved.last_grads ~= nil then check_lists(w, "last_grads", saved.last_grads, opt.params) end
  if extra and saved.extra ~= nil and type(saved.extra) ~= "table" then
    check.fail(w, "extra must be an object (what extra.save returned)", saved.extra)
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
