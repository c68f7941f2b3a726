-- The augmented Lagrangian method of seed 004 (sec. 3.3.2, Algorithm 1): inequality constraints C_m(p) <= C_m* on
-- top of a task loss, by minimising L = task + sum_m [kappa_m P_m + tau_m P_m^2 / 2], P_m = max(0, C_m - C_m*),
-- with Adam (its moments reset before each inner loop; bounds by projection), then updating each multiplier where
-- the violation fell to c times its last value, else raising that penalty a-fold. A numerical failure of the loss (a
-- blow-up, a non-finite value) goes back to the last evaluated parameters and steps again with a smaller step size.
-- Like cq.train, it can write a checkpoint after every iteration (checkpoint = path), resume from it with the same
-- result as an uninterrupted run, and stop at an iteration boundary on SIGINT / SIGTERM. Each checkpoint records the
-- experiment it belongs to (lua/cq/_fingerprint.lua): another experiment's is refused.
local check = require "cq._check"
local recover_ = require "cq._recover"
local fs = require "cq._fs"
local json = require "cq.json"
local fingerprint = require "cq._fingerprint"

local M = {}
local OPTIONS = check.option_set("cq.augmented_lagrangian", { "params", "loss", "constraints", "lr", "tau0", "c",
  "a", "inner_max", "outer_max", "tol", "on_iteration", "state", "recover", "on_recover", "checkpoint", "resume",
  "extra", "fingerprint" })
local RECOVER_OPTIONS = check.option_set("cq.augmented_lagrangian recover", { "retries", "shrink" })
local EXTRA_OPTIONS = check.option_set("cq.augmented_lagrangian extra", { "save", "load" })
local FORMAT = "cqlua-augmented-lagrangian"
local SIGNALS = { [2] = "SIGINT", [15] = "SIGTERM" }
-- the state's fields (what a checkpoint keeps of it)
local STATE_FIELDS = { "kappa", "tau", "vprev", "iterations", "outer", "recoveries", "last_values", "inner", "adam" }

-- The inner loop's convergence test (seed 004): the mean of the last 10 values of L against the mean of the 10
-- before them, relative change below tol.
local function settled(hist, tol)
  local k = #hist
  if k < 20 then return false end
  local cur, prev = 0, 0
  for i = k - 9, k do cur = cur + hist[i] end
  for i = k - 19, k - 10 do prev = prev + hist[i] end
  return math.abs(cur - prev) <= tol * math.abs(prev)
end

--- cq.augmented_lagrangian{ params, loss, constraints, lr = 0.01, tau0 = 1e-3, c = 0.25, a = 10, inner_max = 200,
---   outer_max = 30, tol = 1e-3, on_iteration?, state?, recover?, on_recover? } -> { kappa, tau, violations,
---   iterations, outer, feasible, stopped, recoveries, lr_factor }
--- loss(): the task loss, with the gradients of params filled (param.g, zeroed first by the driver).
--- constraints: a list of { f, limit, name? }; f(w) returns C_m at the params' current values and, when w ~= 0,
--- adds w dC_m/dp to their gradients. f is called after each loss() and also on its own: at the start, and after
--- each inner loop's last step (the multiplier update and the feasibility test), so it must not read a value cached
--- by the last loss() (design:binarization and pulses.binarization compute from the params).
--- on_iteration(s, L, task, C, tau, kappa): called after every inner iteration (a log line; C, tau and kappa are
--- lists, one entry per constraint); returning true stops the driver there, before the multiplier update
--- of the unfinished outer iteration (result.stopped; result.outer counts the finished ones).
--- state: a table the driver keeps current (kappa, tau, vprev, iterations, outer = the finished outer iterations,
--- recoveries, last_values, and inside an inner loop inner = {count, hist, factor} and adam = Adam's state()) so that
--- a caller can save it, and starts from when it holds them: a run resumed from a state saved inside an inner loop
--- goes on with that inner loop, its Adam moments, convergence window and step size, and so takes the same steps as
--- the run that was not stopped (but for a recovery at the resumed run's first step: that one goes back to
--- last_values with fresh moments, as before any success).
--- recover = {retries = 5, shrink = 0.5} | false: when an evaluation fails numerically (an engine blow-up, a
--- non-finite loss or gradient: a design step can take a body where the simulation is no longer valid, e.g. an
--- inverted element of a nearly void material), go back to the parameters, gradients and Adam moments of the inner
--- loop's last successful evaluation, multiply the step size by shrink for the rest of the inner loop, and step again;
--- before the inner loop's first success (the first step of a new inner loop, or of a resumed run), go back to the
--- last evaluated parameters (state.last_values) and evaluate them again with fresh moments. More than retries
--- failures in a row, or one before any evaluation succeeded, raise the error. on_recover(s, message, lr_factor) is
--- called at each recovery.
--- checkpoint = path: after every iteration (and every recovery and multiplier update) the params, the state, the
--- recovery snapshot and extra.save() are written there (JSON, atomically); resume = "auto" (default: continue the
--- checkpoint), true (it must exist) or false (start over). A resumed run takes the same steps as the uninterrupted
--- one, a recovery at its first step included. The checkpoint records the experiment (as cq.train's: the params'
--- names and sizes, the constraints' count, inner_max and outer_max, the script and its arguments, the fingerprint
--- option's items) and one of another experiment is refused, naming what differs; a finished run's checkpoint is
--- kept: run again, it returns the finished run's result without a step (result.already_finished), unless a larger
--- outer_max takes an infeasible run further; temporaries of interrupted writes are removed. The first SIGINT or
--- SIGTERM stops the run at the next iteration boundary (an evaluation the engine stopped midway is dropped) with a
--- one-line error naming the checkpoint; the host exits with 128 + the signal.
function M.run(opts)
  local where = "cq.augmented_lagrangian"
  check.options(where, opts, OPTIONS)
  if type(opts.params) ~= "table" or #opts.params == 0 then check.fail(where, "params must be a non-empty list", opts.params) end
  for i, p in ipairs(opts.params) do
    if type(p) ~= "table" or type(p.n) ~= "number" or p.v == nil or p.g == nil or type(p.zero_grad) ~= "function" then
      check.fail(where, "params[" .. i .. "] must be a parameter (cq.param, controller.params, design.params)", p)
    end
  end
  if type(opts.loss) ~= "function" then check.fail(where, "loss must be a function() -> task loss", opts.loss) end
  local cons = opts.constraints
  if type(cons) ~= "table" or #cons == 0 then check.fail(where, "constraints must be a non-empty list of {f, limit}", cons) end
  for i, cm in ipairs(cons) do
    if type(cm) ~= "table" or type(cm[1]) ~= "function" or type(cm[2]) ~= "number" then
      check.fail(where, "constraints[" .. i .. "] must be {f (a function(w) -> C), limit (a number)}", cm)
    end
    check.number(where, "constraints[" .. i .. "] limit", cm[2])
    -- a limit below the least value C can take is one no design reaches: the driver would run to outer_max
    local least = check.lower_bounds[cm[1]]
    if least and cm[2] < least[1] then
      check.fail(where, string.format("constraints[%d] limit must be >= %g: the constraint is %s, which is never " ..
        "below %g, so no design can reach a lower limit", i, least[1], least[2], least[1]), cm[2])
    elseif cm[2] < 0 then
      local C = cm[1](0)
      if type(C) == "number" and C >= 0 then
        require("cq._warn").warn(string.format("cqlua: warning: %s: constraints[%d] has the negative limit %g, and " ..
          "C = %g >= 0 at the start: a constraint that cannot be negative (a binarization, a volume fraction) never " ..
          "reaches such a limit, and the driver runs on to outer_max", where, i, cm[2], C))
      end
    end
  end
  local lr = check.number(where, "lr", opts.lr or 0.01, 0, math.huge, { open_lo = true })
  local c = check.number(where, "c", opts.c or 0.25, 0, 1, { open_lo = true, open_hi = true })
  local a = check.number(where, "a", opts.a or 10, 1, math.huge, { open_lo = true })
  local tau0 = check.number(where, "tau0", opts.tau0 or 1e-3, 0, math.huge, { open_lo = true })
  local inner_max = check.integer(where, "inner_max", opts.inner_max or 200, 1)
  local outer_max = check.integer(where, "outer_max", opts.outer_max or 30, 1)
  local tol = check.number(where, "tol", opts.tol or 1e-3, 0, math.huge)
  local recover = opts.recover == nil and {} or opts.recover
  if recover then
    check.options(where .. ".recover", recover, RECOVER_OPTIONS)
    recover = { retries = check.integer(where, "recover.retries", recover.retries or 5, 1),
      shrink = check.number(where, "recover.shrink", recover.shrink or 0.5, 0, 1, { open_lo = true, open_hi = true }) }
  end
  if opts.on_iteration ~= nil and type(opts.on_iteration) ~= "function" then
    check.fail(where, "on_iteration must be nil or a function(s, L, task, C, tau, kappa)", opts.on_iteration)
  end
  if opts.on_recover ~= nil and type(opts.on_recover) ~= "function" then
    check.fail(where, "on_recover must be nil or a function(s, message, lr_factor)", opts.on_recover)
  end
  local ckpt = opts.checkpoint
  if ckpt == nil then ckpt = false end
  if ckpt ~= false and (type(ckpt) ~= "string" or ckpt == "") then
    check.fail(where, "checkpoint must be a file path or false", ckpt)
  end
  local resume = opts.resume == nil and "auto" or opts.resume
  check.oneof(where, "resume", resume, { "auto", true, false })
  if resume == true and not ckpt then check.fail(where, "resume = true needs a checkpoint path", opts.checkpoint) end
  recover_.check_extra(where, opts.extra, EXTRA_OPTIONS)
  local M_ = #cons
  -- what the checkpoint records of the experiment, and checks when it resumes
  local fp = fingerprint.make(where, { params = opts.params, budget = { inner_max = inner_max, outer_max = outer_max },
    more = { constraints = M_ }, items = opts.fingerprint })
  if ckpt then fs.remove_stale_parts(ckpt) end -- the temporaries of writes that a killed run left unfinished
  local kappa, tau, vprev = {}, {}, {}
  local function violations(w)
    local v, C = {}, {}
    for m = 1, M_ do
      C[m] = cons[m][1](w and w[m] or 0)
      v[m] = math.max(0, C[m] - cons[m][2])
    end
    return v, C
  end
  -- state: the multipliers, penalties, last violations and counters (and where the inner loop stands), kept up to
  -- date in place (to save a run) and taken as the start when given
  local st = opts.state
  if st ~= nil and type(st) ~= "table" then check.fail(where, "state must be a table (empty, or saved from a run)", st) end
  -- the checkpoint of this experiment: its params and state (which replaces the contents of opts.state)
  local saved
  if ckpt and resume ~= false and fs.exists(ckpt) then
    saved = json.read(ckpt)
    if type(saved) ~= "table" or saved.format ~= FORMAT then
      check.raise(where .. ": " .. ckpt .. " is not a cq.augmented_lagrangian checkpoint; remove it or pass resume = false")
    end
    fingerprint.check(where, ckpt, saved.fingerprint, fp)
  elseif resume == true then
    check.raise(where .. ": resume = true but there is no checkpoint " .. ckpt)
  end
  if saved then
    local ss = saved.state
    if type(ss) ~= "table" or type(ss.kappa) ~= "table" or #ss.kappa ~= M_ then
      check.raise(string.format("%s: cannot resume from %s: it holds %s constraints, this run has %d; remove it or " ..
        "pass resume = false", where, ckpt, type(ss) == "table" and type(ss.kappa) == "table" and #ss.kappa or "no", M_))
    end
    local ok, err = pcall(require("cq.save").unpack, saved.objects, { params = opts.params }, where, ckpt)
    if not ok then
      check.raise(where .. ": cannot resume from " .. ckpt .. " (" .. tostring(err) .. "); remove it or pass resume = false")
    end
    st = st or {}
    for k in pairs(st) do st[k] = nil end
    for _, k in ipairs(STATE_FIELDS) do st[k] = ss[k] end
    if opts.extra and saved.extra then opts.extra.load(saved.extra) end
  elseif ckpt then
    st = st or {}
  end
  for m = 1, M_ do
    kappa[m] = st and st.kappa and st.kappa[m] or 0
    tau[m] = st and st.tau and st.tau[m] or tau0
  end
  vprev = st and st.vprev or violations()
  -- done: the outer iterations finished (their multipliers updated), what state.outer holds
  local iterations, done, stopped = st and st.iterations or 0, st and st.outer or 0, false
  local factor, recoveries = 1, st and st.recoveries or 0 -- factor: the step size's, after recoveries
  -- last_values: the parameters of the last successful evaluation (1-based lists, in state: a resumed run can go back)
  local last_values = st and st.last_values
  -- an inner loop saved part way (state.inner, state.adam): the first inner loop goes on with it
  local resume_inner = st and type(st.inner) == "table" and type(st.adam) == "table" and st.inner
  local resume_adam = resume_inner and st.adam
  local resumed_from = saved and iterations or nil
  if saved and saved.finished then
    -- a finished run: kept as it is, its result returned, unless it ended infeasible at its outer_max and this run
    -- allows more outer iterations (then it goes on as a run with that outer_max would have)
    local v0 = violations()
    local feasible = true
    for m = 1, M_ do if v0[m] > 0 then feasible = false end end
    if feasible or done >= outer_max then
      print(string.format("%s: %s holds this run, finished after iteration %d (outer iteration %d of at most %d, " ..
        "%s): its result, without a step (resume = false starts afresh)", where, ckpt, iterations, done, outer_max,
        feasible and "feasible" or "infeasible"))
      return { kappa = kappa, tau = tau, violations = v0, iterations = iterations, outer = done, feasible = feasible,
        stopped = false, recoveries = recoveries, lr_factor = saved.lr_factor or 1, resumed_from = resumed_from,
        already_finished = true, checkpoint = ckpt }
    end
  end
  if saved then
    local change = fingerprint.budget_change(saved.fingerprint, fp)
    print(string.format("%s: resumed from %s after iteration %d (in outer iteration %d of at most %d%s)", where,
      ckpt, iterations, done + 1, outer_max, change and ("; " .. (saved.finished and "a finished run taken further" or
      "the budget changed") .. ": " .. change) or ""))
  end
  -- keep(opt, inner, hist): the state, and inside an inner loop (opt given) where that loop stands
  local function keep(opt, inner, hist)
    if st then
      st.kappa, st.tau, st.vprev, st.iterations, st.outer = kappa, tau, vprev, iterations, done
      st.recoveries, st.last_values = recoveries, last_values
      if opt then st.inner, st.adam = { count = inner, hist = hist, factor = factor }, opt:state()
      else st.inner, st.adam = nil, nil end
    end
  end
  local v = vprev
  local good -- this inner loop's snapshot before its last step: evaluated parameters, their gradients, Adam's state
  local failures = 0 -- failed evaluations in a row
  -- a checkpoint written inside an inner loop carries good and failures: the resumed run recovers as this one would
  local resume_good = resume_inner and saved and saved.good or nil
  if resume_inner and saved then failures = saved.failures or 0 end
  local in_inner = false -- (good belongs to the inner loop under way only)
  local function write_checkpoint(finished)
    if not ckpt then return end
    local state = {}
    for _, k in ipairs(STATE_FIELDS) do state[k] = st[k] end
    json.write(ckpt, { format = FORMAT, finished = finished, constraints = M_,
      objects = require("cq.save").pack({ params = opts.params }, nil, where), state = state,
      good = in_inner and good or nil, failures = in_inner and failures or nil, lr_factor = factor,
      extra = opts.extra and opts.extra.save() or nil, fingerprint = fp })
  end
  local host = require("cq.train").host
  -- the first signal: the checkpoint already holds the last iteration boundary (written after each), so stop here
  local function stop_interrupted()
    local sig = host.interrupted()
    check.raise(string.format("%s: interrupted by %s after iteration %d (in outer iteration %d of at most %d)%s", where,
      SIGNALS[sig] or ("signal " .. sig), iterations, done + 1, outer_max, ckpt and (": saved " .. ckpt ..
      "; run the same command again to resume") or ": no checkpoint to resume from (give checkpoint = path)"))
  end
  -- The evaluation failed with err: back to good with a smaller step size and the step again; before this inner
  -- loop's first success, back to the last evaluated parameters, to evaluate them again with fresh moments (the
  -- gradients and moments of the last inner loop belong to other multipliers); else the error raised.
  local function recover_step(opt, fresh, err, inner, hist)
    if not (recover and recover_.numerical(err)) then error(err, 0) end
    failures = failures + 1
    if not good and not last_values then
      check.raise(string.format("%s: the loss failed at iteration %d, before any evaluation of this run succeeded, " ..
        "so there is nothing to go back to: %s", where, iterations + 1, tostring(err)))
    end
    if failures > recover.retries then
      check.raise(string.format("%s: iteration %d failed %d times in a row, each time after shrinking the step size " ..
        "by %g; last failure: %s", where, iterations + 1, failures, recover.shrink, tostring(err)))
    end
    recoveries = recoveries + 1
    if good then
      recover_.restore(opt, good)
      factor = factor * recover.shrink
      opt.groups[1].lr = lr * factor
      opt:step()
    else
      recover_.restore_values(opt.params, last_values)
      opt:load_state(fresh)
    end
    if opts.on_recover then opts.on_recover(iterations + 1, (tostring(err):gsub("\n.*", "")), factor) end
    keep(opt, inner, hist)
    write_checkpoint(false)
  end
  if ckpt and not saved then -- the start: what an interruption before iteration 1 keeps
    if not st.kappa then keep() end
    write_checkpoint(false)
  end
  local old_graceful = host.graceful(1) -- signals stop the run at an iteration boundary (stop_interrupted)
  local run_ok, run_err = pcall(function()
    while done < outer_max do
      factor = 1 -- fresh moments and the full step size (Algorithm 1)
      local opt = require("cq.optim").adam { params = opts.params, lr = lr }
      local fresh = recover and opt:state()
      local hist, inner, resumed_inner = {}, 0, resume_inner ~= nil and resume_inner ~= false
      if resume_inner then -- the saved inner loop's count, convergence window, step size and moments
        inner, factor = resume_inner.count or 0, resume_inner.factor or 1
        for i, L in ipairs(resume_inner.hist or {}) do hist[i] = L end
        opt:load_state(resume_adam)
        opt.groups[1].lr = lr * factor
        resume_inner = nil
      end
      good, in_inner = resume_good, true
      -- a resumed inner loop that had already settled (stopped or interrupted after its last iteration) goes straight
      -- to the multiplier update, as the run that was not stopped did
      local finished_inner = resumed_inner and settled(hist, tol)
      resume_good = nil
      while not finished_inner and inner < inner_max do
        if host.interrupted() ~= 0 then stop_interrupted() end
        for _, p in ipairs(opts.params) do p:zero_grad() end
        local ok, task = pcall(opts.loss)
        if ok and (type(task) ~= "number" or task ~= task or math.abs(task) == math.huge) then
          ok, task = false, where .. ": the loss is not finite (" .. tostring(task) .. ")"
        end
        local C0, L
        if ok then
          -- P_m's gradient is C_m's where violated: dL/dp += (kappa_m + tau_m P_m) dC_m/dp
          C0 = select(2, violations())
          local w = {}
          L = task
          for m = 1, M_ do
            local P = math.max(0, C0[m] - cons[m][2])
            w[m] = P > 0 and (kappa[m] + tau[m] * P) or 0
            L = L + kappa[m] * P + 0.5 * tau[m] * P * P
          end
          violations(w)
          local bad = recover_.nonfinite_gradient(opts.params)
          if bad then ok, task = false, where .. ": " .. bad end
        end
        if not ok then
          if host.interrupted() ~= 0 then stop_interrupted() end -- (the engine stopped the evaluation: not a failure)
          recover_step(opt, fresh, task, inner, hist)
        else
          failures, inner = 0, inner + 1
          good = recover and recover_.snapshot(opt) or nil
          last_values = good and good.values
          opt:step()
          iterations = iterations + 1
          hist[#hist + 1] = L
          keep(opt, inner, hist)
          if opts.on_iteration and opts.on_iteration(iterations, L, task, C0, tau, kappa) == true then stopped = true end
          write_checkpoint(false)
          if stopped or settled(hist, tol) then break end
        end
      end
      in_inner = false
      v = violations()
      if stopped then break end -- the inner loop did not finish: no multiplier update; a resumed run redoes it
      local feasible = true
      for m = 1, M_ do
        if v[m] > 0 then feasible = false end
        if v[m] <= c * vprev[m] then
          kappa[m] = kappa[m] + tau[m] * v[m] -- toward the stationary point of L in kappa
          vprev[m] = v[m]
        else
          tau[m] = a * tau[m]
        end
      end
      done = done + 1
      keep()
      write_checkpoint(false)
      if feasible then break end
    end
  end)
  -- after an interruption the host stays in graceful mode: it then reports the message alone, without a traceback
  if host.interrupted() == 0 then host.graceful(old_graceful) end
  if not run_ok then error(run_err, 0) end
  if not stopped then write_checkpoint(true) end -- (stopped: the checkpoint after the last iteration is current)
  local feasible = true
  for m = 1, M_ do if v[m] > 0 then feasible = false end end
  return { kappa = kappa, tau = tau, violations = v, iterations = iterations, outer = done, feasible = feasible,
    stopped = stopped, recoveries = recoveries, lr_factor = factor, resumed_from = resumed_from, checkpoint = ckpt or nil }
end

return M
