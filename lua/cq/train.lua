-- cq.train: the optimization loop of a rollout (or any loss with gradients) with what long runs need: a log, a
-- checkpoint after every iteration, resumption with the same result as an uninterrupted run, a clean stop at an
-- iteration boundary on SIGINT / SIGTERM, and recovery from numerical failures (a blow-up, a non-finite loss or
-- gradient): restore the last good parameters and optimizer state, shrink the step size, note it in the log, retry.
-- Each checkpoint records the experiment it belongs to (lua/cq/_fingerprint.lua): another experiment's is refused.
local ffi = require "ffi"
local check = require "cq._check"
local fs = require "cq._fs"
local json = require "cq.json"
local recover_ = require "cq._recover"
local fingerprint = require "cq._fingerprint"

local M = {}
local OPTIONS = check.option_set("cq.train", { "rollout", "state", "optimizer", "iterations", "name", "log", "columns",
  "values", "lr_schedule", "before", "evaluate", "keep_best", "checkpoint", "resume", "recover", "extra", "quiet",
  "fingerprint" })
local RECOVER_OPTIONS = check.option_set("cq.train recover", { "retries", "shrink", "worse", "grow" })
local EXTRA_OPTIONS = check.option_set("cq.train extra", { "save", "load" })

-- The host's interruption API (engine/host/host.h), or stand-ins when the script runs in another host. Its declarations
-- come with the engine's (cq._ffi): without them here, requiring cq.train before any world would leave the stand-ins.
local host = {}
do
  pcall(require, "cq._ffi")
  local ok = pcall(function() return ffi.C.cqh_interrupted end)
  if ok then
    host.interrupted = function() return ffi.C.cqh_interrupted() end
    host.graceful = function(on) return ffi.C.cqh_graceful(on) end
  else
    host.interrupted = function() return 0 end
    host.graceful = function() return 0 end
  end
end
M.host = host
local SIGNALS = { [2] = "SIGINT", [15] = "SIGTERM" }

local numerical, snapshot, restore = recover_.numerical, recover_.snapshot, recover_.restore

--- cq.train{ rollout, state, optimizer, iterations, name, ... } -> result. Each iteration: before(it, rollout)?,
--- loss = evaluate(it) (default: rollout:forward(state) then rollout:backward()), keep_best, a log row, the
--- optimizer step with each group's lr = its initial lr * lr_schedule(it) * the recovery factor, a checkpoint.
---   name: the log (out/<name>.csv) and checkpoint (out/<name>.ckpt.json) names; log: a cq.log to use instead;
---   columns, values(it, loss, rollout) -> table: extra log columns and their values;
---   keep_best = true: restore the parameters of the lowest loss at the end (result.best);
---   checkpoint = path | false (default out/<name>.ckpt.json); resume = "auto" (default: continue the checkpoint),
---   true (the checkpoint must exist) or false (start over; the old log is rotated). A checkpoint records the
---   experiment (fingerprint: the parameters' names and sizes, the world's shape, the iterations, the script and its
---   arguments, the fingerprint option's items) and one of another experiment is refused, naming what differs (the
---   arguments may differ in the iteration count only); a finished run's checkpoint is kept: run again with the same
---   iterations, it returns the finished run's result without training (result.already_finished), with more it goes
---   on as a run of that many iterations would; temporaries of interrupted writes (<checkpoint>.part.<pid>) are removed;
---   fingerprint = {name = value, ...}: the script's own items (worlds by their shape; args = false | a table replaces
---   the script's arguments);
---   recover = {retries = 5, shrink = 0.5, worse = nil, grow = 1} | false (worse = r > 1: an iteration whose loss is
---   above r times the last accepted one is rejected as a failure is: backtracking on a rough loss; grow = g >= 1:
---   each accepted iteration multiplies the shrunk step size by g, up to the unshrunk one);
---   extra = {save = f() -> table, load = f(table)}: more state for the checkpoint (e.g. a random generator's seed);
---   quiet: no progress lines.
--- Returns {loss, iteration, best = {loss, iteration}, recoveries, resumed_from, already_finished, log, checkpoint}.
function M.train(opts)
  local where = "cq.train"
  check.options(where, opts, OPTIONS)
  local run, opt = opts.rollout, opts.optimizer
  if run ~= nil and getmetatable(run) ~= require("cq.rollout").Rollout then check.fail(where, "rollout must be a cq.rollout", run) end
  if type(opt) ~= "table" or getmetatable(opt) ~= require("cq.optim").Optimizer then
    check.fail(where, "optimizer must be a cq.adam or cq.sgd", opt)
  end
  local iterations = check.integer(where, "iterations", opts.iterations, 1)
  local evaluate = opts.evaluate
  if evaluate ~= nil and type(evaluate) ~= "function" then check.fail(where, "evaluate must be nil or a function(it) -> loss", evaluate) end
  if not evaluate then
    if not run then check.fail(where, "give a rollout (and its state) or an evaluate function", nil) end
    require("cq.state").check_arg(where, "state", opts.state, run.world)
    evaluate = function()
      local loss = run:forward(opts.state)
      run:backward()
      return loss
    end
  end
  for _, k in ipairs { "values", "lr_schedule", "before" } do
    if opts[k] ~= nil and type(opts[k]) ~= "function" then check.fail(where, k .. " must be nil or a function", opts[k]) end
  end
  local name = opts.name
  if name ~= nil and (type(name) ~= "string" or name == "" or name:find("/")) then
    check.fail(where, "name must be a file name without '/'", name)
  end
  if not name and not opts.log then check.fail(where, "give a name (for out/<name>.csv) or a log", nil) end
  local recover = opts.recover == nil and {} or opts.recover
  if recover then
    check.options(where .. ".recover", recover, RECOVER_OPTIONS)
    recover = { retries = check.integer(where, "recover.retries", recover.retries or 5, 1),
      shrink = check.number(where, "recover.shrink", recover.shrink or 0.5, 0, 1, { open_lo = true, open_hi = true }),
      worse = recover.worse ~= nil and check.number(where, "recover.worse", recover.worse, 1, math.huge,
        { open_lo = true, open_hi = true }) or nil,
      grow = check.number(where, "recover.grow", recover.grow or 1, 1, math.huge, { open_hi = true }) }
  end
  recover_.check_extra(where, opts.extra, EXTRA_OPTIONS)
  local ckpt = opts.checkpoint
  if ckpt == nil then ckpt = name and ("out/" .. name .. ".ckpt.json") or false end
  if ckpt ~= false and (type(ckpt) ~= "string" or ckpt == "") then check.fail(where, "checkpoint must be a path or false", ckpt) end
  local resume = opts.resume == nil and "auto" or opts.resume
  check.oneof(where, "resume", resume, { "auto", true, false })
  local keeper = opts.keep_best and require("cq.optim").keep_best { params = opt.params } or nil
  -- what the checkpoint records of the experiment, and checks when it resumes
  local fp = fingerprint.make(where, { params = opt.params, world = run and run.world,
    budget = { iterations = iterations }, items = opts.fingerprint })
  -- the temporaries of writes that a killed run left unfinished
  if ckpt then fs.remove_stale_parts(ckpt) end
  if name and not opts.log then fs.remove_stale_parts("out/" .. name .. ".csv") end

  -- the starting point: a fresh run, or the checkpoint of this experiment: an unfinished run, a finished one to go
  -- on with (more iterations), or one finished with these iterations (finished_before: its result, no training)
  local base_lr, factor, start, recoveries, saved = {}, 1, 0, 0, nil
  local finished_before
  for gi, g in ipairs(opt.groups) do base_lr[gi] = g.lr end
  if ckpt and resume ~= false and fs.exists(ckpt) then
    saved = json.read(ckpt)
    if type(saved) ~= "table" or saved.format ~= "cqlua-train" then
      check.raise(where .. ": " .. ckpt .. " is not a cq.train checkpoint; remove it or pass resume = false")
    end
    fingerprint.check(where, ckpt, saved.fingerprint, fp)
    local at = saved.iteration
    if type(at) ~= "number" then
      check.raise(where .. ": " .. ckpt .. " holds no iteration; remove it or pass resume = false")
    end
    if saved.finished and at == iterations then
      finished_before = true
    elseif at >= iterations then
      check.raise(string.format("%s: the checkpoint %s is at iteration %d%s; this run asks for %d iterations: give " ..
        "more than %d to go on from it, or resume = false to start afresh", where, ckpt, at, saved.finished and
        " (finished)" or (" of " .. tostring(saved.iterations)), iterations, at))
    elseif saved.finished and type(saved.last_grads) ~= "table" then
      check.raise(string.format("%s: the checkpoint %s holds a run finished after iteration %d, written before " ..
        "checkpoints kept its last gradients: it cannot go on to %d iterations; resume = false starts afresh", where,
        ckpt, at, iterations))
    end
    recover_.check_checkpoint(where, ckpt, saved, opt, opts.extra) -- every field the run goes on with
  elseif resume == true then
    check.raise(where .. ": resume = true but there is no checkpoint " .. tostring(ckpt))
  end
  local S = require "cq.save"
  local objects = { params = opt.params, optimizer = opt, keep_best = keeper }
  local good -- the snapshot before the last step: parameters whose evaluation succeeded, and their gradients
  local accepted -- the last accepted iteration's loss (recover.worse compares with it)
  local failures = 0 -- failed or rejected evaluations in a row (in the checkpoint: a resumed run decides the same)
  if saved then
    local ok, err = pcall(S.unpack, saved.objects, objects, where, ckpt)
    if not ok then check.raise(where .. ": cannot resume from " .. ckpt .. " (" .. tostring(err) .. "); remove it or " ..
      "pass resume = false") end
    good = saved.good
    start, factor, recoveries, base_lr = saved.iteration, saved.lr_factor, saved.recoveries, saved.base_lr
    accepted, failures = saved.accepted_loss, saved.failures or 0
    if opts.extra and saved.extra then opts.extra.load(saved.extra) end
    if saved.finished and not finished_before then
      -- a finished run taken further: the step that it did not take after its last iteration, as a longer run takes it
      for k, p in ipairs(opt.params) do
        local g = saved.last_grads[k]
        for i = 0, p.n - 1 do p.g[i] = g[i + 1] end
      end
      good = recover and snapshot(opt) or nil
      opt:step()
    end
  end

  local columns = { "iteration", "loss", "grad_norm", "lr" }
  for _, c in ipairs(opts.columns or {}) do columns[#columns + 1] = c end
  columns[#columns + 1] = "seconds"
  columns[#columns + 1] = "note"
  local log = opts.log or require("cq.log").new { name = name, columns = columns, resume = saved and start or false,
    quiet = opts.quiet }
  if finished_before then
    -- run again as it was: the checkpoint stays as the run left it; the parameters (the best with keep_best), the
    -- optimizer, extra and the log's first and last rows are the finished run's, and the rollout holds its last
    -- iteration's forward pass, as after the run
    if not opts.quiet then
      print(string.format("%s: %s holds this run, finished after iteration %d of %d (loss %.6g): its result, without " ..
        "training (more iterations go on from it; resume = false starts afresh)", where, ckpt, start, iterations,
        accepted or 0 / 0))
    end
    if run and not opts.evaluate then
      if opts.before then opts.before(start, run) end
      run:forward(opts.state)
    end
    if keeper then keeper:restore() end
    log:close()
    return { loss = accepted, iteration = start, best = keeper and { loss = keeper.loss, iteration = keeper.iteration }
      or nil, recoveries = recoveries, resumed_from = start, already_finished = true, log = log, checkpoint = ckpt }
  end
  if saved then
    local change = fingerprint.budget_change(saved.fingerprint, fp)
    log:note(start, string.format("resumed from %s after iteration %d of %d%s", ckpt, start, iterations,
      change and (" (" .. (saved.finished and "a finished run taken further" or "the budget changed") .. ": " ..
      change .. ")") or ""))
  end

  local function write_checkpoint(it, finished)
    if not ckpt then return end
    local last_grads -- a finished run's last gradients: a run with more iterations takes the step they give
    if finished then
      last_grads = {}
      for k, p in ipairs(opt.params) do
        local g = {}
        for i = 0, p.n - 1 do g[i + 1] = p.g[i] end
        last_grads[k] = g
      end
    end
    json.write(ckpt, { format = "cqlua-train", iteration = it, iterations = iterations, finished = finished,
      lr_factor = factor, base_lr = base_lr, recoveries = recoveries, accepted_loss = accepted, failures = failures,
      objects = S.pack(objects, nil, where), good = good, extra = opts.extra and opts.extra.save() or nil,
      fingerprint = fp, last_grads = last_grads })
  end
  local function set_lr(it)
    local f = (opts.lr_schedule and opts.lr_schedule(it) or 1) * factor
    if type(f) ~= "number" or not (f > 0) or f == math.huge then
      check.raise(where .. ": lr_schedule(" .. it .. ") must return a finite number > 0 (got " .. tostring(f) .. ")")
    end
    for gi, g in ipairs(opt.groups) do g.lr = base_lr[gi] * f end
  end
  local function stop_interrupted(it)
    local sig = host.interrupted()
    write_checkpoint(it, false)
    local msg = string.format("interrupted by %s after iteration %d of %d%s; run the same command again to resume",
      SIGNALS[sig] or ("signal " .. sig), it, iterations, ckpt and (": saved " .. ckpt) or "")
    log:note(it, msg)
    log:close()
    check.raise(where .. ": " .. msg)
  end

  local world = run and run.world
  local old_graceful = host.graceful(1)
  local loss, it = nil, start
  local ok, err = pcall(function()
    while it < iterations do
      if host.interrupted() ~= 0 then stop_interrupted(it) end
      local next_it = it + 1
      if opts.before then opts.before(next_it, run) end
      if world then world._failed_status = nil end -- (numerical() reads this evaluation's status only)
      local eok, value = pcall(evaluate, next_it)
      local rejected -- recover.worse: a finite loss too far above the last accepted one, while retries are left
      if eok and (type(value) ~= "number" or value ~= value or math.abs(value) == math.huge) then
        eok, value = false, "the loss is not finite (" .. tostring(value) .. ")"
      elseif eok and recover and recover.worse and accepted and good
        and value - accepted > (recover.worse - 1) * math.abs(accepted) and failures < recover.retries then
        eok, rejected = false, true -- (for a negative loss too: worse than the last by (worse - 1) of its magnitude)
        value = string.format("loss %.6g above recover.worse = %g times the last accepted %.6g", value,
          recover.worse, accepted)
      end
      if not eok then
        if host.interrupted() ~= 0 then stop_interrupted(it) end
        if not (recover and (rejected or numerical(value, world))) then error(value, 0) end
        if not good then
          check.raise(string.format("%s: iteration %d failed at the initial parameters, so there is nothing to go " ..
            "back to: %s", where, next_it, tostring(value)))
        end
        failures = failures + 1
        if failures > recover.retries then
          check.raise(string.format("%s: iteration %d failed %d times in a row, each time after shrinking the step " ..
            "size by %g; last failure: %s", where, next_it, failures, recover.shrink, tostring(value)))
        end
        restore(opt, good)
        factor = factor * recover.shrink
        recoveries = recoveries + 1
        set_lr(it)
        log:note(next_it, string.format("iteration %d %s (%s); restored the parameters of iteration %d and " ..
          "stepped again with the step size x%g (lr factor now %g)", next_it, rejected and "rejected" or "failed",
          (tostring(value):gsub("\n.*", "")), it,
          recover.shrink, factor))
        opt:step()
        write_checkpoint(it, false)
      else
        failures = 0
        loss, it, accepted = value, next_it, value
        if keeper then keeper:consider(loss) end
        if recover then factor = math.min(1, factor * recover.grow) end -- (recover.grow: back towards the full step)
        set_lr(it) -- the step size of the step that follows, as logged
        local row = { loss = loss, grad_norm = require("cq.log").grad_norm(opt.params), lr = opt.groups[1].lr }
        if opts.values then
          local extra = opts.values(it, loss, run)
          if type(extra) ~= "table" then check.raise(where .. ": values must return a table of named values") end
          for k, v in pairs(extra) do row[k] = v end
        end
        log:iteration(it, iterations, row)
        if it < iterations then
          good = recover and snapshot(opt) or nil
          opt:step()
        end
        write_checkpoint(it, it == iterations)
      end
    end
  end)
  -- after an interruption the host stays in graceful mode: it then reports the message alone, without a traceback
  if host.interrupted() == 0 then host.graceful(old_graceful) end
  if not ok then log:close() error(err, 0) end
  if keeper then keeper:restore() end
  log:close()
  return { loss = loss, iteration = it, best = keeper and { loss = keeper.loss, iteration = keeper.iteration } or nil,
    recoveries = recoveries, resumed_from = saved and start or nil, log = log, checkpoint = ckpt or nil }
end

return M
