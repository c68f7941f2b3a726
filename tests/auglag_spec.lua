-- cq.augmented_lagrangian's checkpoints (lua/cq/auglag.lua): a checkpoint after every iteration, SIGINT and SIGTERM
-- stopping at an iteration boundary (in-process, and from outside in child processes running a real rollout), and
-- resumption to the uninterrupted run's parameters, multipliers and history bit for bit, a recovery at the resumed
-- run's first step included; resume = "auto" / true / false and the checkpoint's errors.
local cq = require "cq"
local ffi = require "ffi"

pcall(ffi.cdef, "int raise(int sig);")

local shell = require "tests._shell"
local EXE = shell.exe()
local ROOT = os.getenv("PWD")
local q, read, tmpdir = shell.quote, shell.read_file, shell.tmpdir
local host = require("cq.train").host

-- The toy layout of tests/design_spec.lua (task: gamma_i = (p_i + 1) / 2 near targets; constraint: mean
-- gamma (1 - gamma) <= 5 % of its maximum), with an evaluation counter that the checkpoint carries (extra), a
-- numerical failure at the evaluations fail_at names and an interruption at those interrupt_at names (a SIGTERM
-- raised in-process; "error": the engine stops the evaluation, which fails with its message). run(opts) starts from
-- p = 0 and returns the result, the trace of on_iteration (s, L, task, C, tau, kappa), the recoveries' notes and p.
local function toy(fail_at, interrupt_at)
  local targets = { 0.3, 0.8, 0.45, 0.6, 0.1 }
  local p = cq.param { n = #targets, init = 0 }
  p.name = "phi"
  p.bounds = { -1, 1 }
  local evals, fired = 0, {}
  local function loss()
    evals = evals + 1
    local how = interrupt_at and interrupt_at[evals]
    if how and not fired[evals] then -- (once: a resumed run evaluates this count again)
      fired[evals] = true
      ffi.C.raise(15)
      if how == "error" then error("world:step: interrupted by SIGTERM during the step at step 3, before substep 5 of 8", 0) end
    end
    if fail_at and fail_at[evals] then error("memo:step: blow-up at step 7: J = det F <= 0", 0) end
    local L = 0
    for i = 0, p.n - 1 do
      local g = (p.v[i] + 1) / 2
      L = L + (g - targets[i + 1]) ^ 2
      p.g[i] = p.g[i] + (g - targets[i + 1])
    end
    return L
  end
  local function cmat(w)
    local C = 0
    for i = 0, p.n - 1 do
      local g = (p.v[i] + 1) / 2
      C = C + g * (1 - g) / p.n
      if w ~= 0 then p.g[i] = p.g[i] + w * (1 - 2 * g) / 2 / p.n end
    end
    return C
  end
  local function run(opts)
    for i = 0, p.n - 1 do p.v[i] = 0 end
    local trace, notes = {}, {}
    opts.params, opts.loss, opts.constraints = { p }, loss, { { cmat, 0.05 * 0.25 } }
    opts.lr, opts.inner_max = opts.lr or 0.02, opts.inner_max or 30
    opts.extra = { save = function() return { evals = evals } end, load = function(t) evals = t.evals end }
    local stop = opts.stop_at
    opts.stop_at = nil
    opts.on_iteration = function(s, L, task, C, tau, kappa)
      trace[#trace + 1] = { s, L, task, C[1], tau[1], kappa[1] }
      return s == stop
    end
    opts.on_recover = function(s, msg, f) notes[#notes + 1] = { s, msg, f } end
    local ok, r = pcall(cq.augmented_lagrangian, opts)
    return ok, r, trace, notes, p
  end
  return run, p
end

local function values(p)
  local out = {}
  for i = 0, p.n - 1 do out[i + 1] = p.v[i] end
  return out
end
local function concat(a, b)
  local out = {}
  for _, row in ipairs(a) do out[#out + 1] = row end
  for _, row in ipairs(b) do out[#out + 1] = row end
  return out
end

describe("cq.augmented_lagrangian checkpoints", function()
  local dir
  before_each(function() dir = tmpdir() end)

  it("resumes after a SIGTERM to the uninterrupted run's parameters, multipliers and history bit for bit, a " ..
    "recovery at the resumed run's first step and an evaluation the engine stopped included", function()
    -- the reference: evaluation 47 (iteration 47, the 17th of the second inner loop of 30) blows up
    local ok, ref, ref_trace, ref_notes, p = toy({ [47] = true })({ checkpoint = false })
    assert.is_true(ok, tostring(ref))
    local ref_p = values(p)
    assert.are.equal(1, ref.recoveries)
    assert.are.same({ 47, 0.5 }, { ref_notes[1][1], ref_notes[1][3] })
    assert.is_true(ref.feasible and ref.outer >= 3, "several outer iterations")
    -- the same run, interrupted twice: by a SIGTERM during evaluation 20 that the engine turns into an error (the
    -- evaluation is dropped), and by one during evaluation 46 that completes (the run stops after it); each time a new
    -- call of the same problem (p reset to 0) resumes from the checkpoint
    local ckpt = dir .. "/toy.ckpt.json"
    local run = toy({ [47] = true }, { [20] = "error", [46] = "signal" })
    local trace, notes = {}, {}
    local stops = {}
    local r
    for attempt = 1, 3 do
      local ok_, res, tr, no = run { checkpoint = ckpt }
      trace, notes = concat(trace, tr), concat(notes, no)
      if ok_ then r = res break end
      stops[attempt] = { res, host.interrupted(), cq.json.read(ckpt) }
      ffi.C.cqh_clear_interrupt()
    end
    for k, s in ipairs(stops) do print(string.format("  stop %d: %s", k, s[1])) end
    assert.are.equal(2, #stops)
    assert.are.same({ 15, 15 }, { stops[1][2], stops[2][2] })
    assert.matches("cq.augmented_lagrangian: interrupted by SIGTERM after iteration 19 %(in outer iteration 1 of at " ..
      "most 30%): saved .*/toy.ckpt.json; run the same command again to resume", stops[1][1])
    assert.matches("interrupted by SIGTERM after iteration 46 %(in outer iteration 2 of at most 30%)", stops[2][1])
    -- what the checkpoints held: the iteration boundary, the inner loop under way, the recovery snapshot, extra
    local c1, c2 = stops[1][3], stops[2][3]
    assert.are.same({ 19, 19, 19, false }, { c1.state.iterations, c1.state.inner.count, c1.extra.evals, c1.finished })
    assert.are.same({ 46, 16, 46, 1 }, { c2.state.iterations, c2.state.inner.count, c2.extra.evals, c2.state.outer })
    assert.are.equal(5, #c2.good.values[1])
    assert.are.equal(46, r.resumed_from)
    -- bit for bit: the history (every iteration once), the recovery, the parameters and multipliers
    assert.are.equal(#ref_trace, #trace)
    assert.are.same(ref_trace, trace)
    assert.are.same(ref_notes, notes)
    for i = 1, p.n do assert.are.equal(ref_p[i], p.v[i - 1]) end
    assert.are.same(ref.kappa, r.kappa)
    assert.are.same(ref.tau, r.tau)
    assert.are.same({ ref.iterations, ref.outer, ref.recoveries, ref.feasible },
      { r.iterations, r.outer, r.recoveries, r.feasible })
    print(string.format("  %d iterations, %d outer, kappa %.17g, tau %g: identical after two resumes", r.iterations,
      r.outer, r.kappa[1], r.tau[1]))
    local fin = cq.json.read(ckpt)
    assert.is_true(fin.finished)
    assert.is_nil(fin.state.inner)
    -- without the recovery snapshot in the checkpoint, the resumed run's first failure would go back to the last
    -- evaluated parameters with fresh moments: another run (the snapshot matters)
    local run2 = toy({ [47] = true }, { [46] = "signal" })
    local _, _, tr_a = run2 { checkpoint = ckpt, resume = false }
    ffi.C.cqh_clear_interrupt()
    local saved = cq.json.read(ckpt)
    assert.are.equal(46, saved.state.iterations)
    saved.good = nil
    cq.json.write(ckpt, saved)
    local ok3, r3, tr_b = run2 { checkpoint = ckpt }
    assert.is_true(ok3, tostring(r3))
    local other = concat(tr_a, tr_b)
    assert.are.same(ref_trace[46], other[46])
    assert.are_not.same(ref_trace[47], other[47]) -- (evaluated at iteration 46's parameters again)
  end)

  it("a run stopped after the last iteration of a settled inner loop resumes with its multiplier update", function()
    -- tol = 0.05: the first inner loop settles before inner_max
    local run, p = toy()
    local ok, ref, ref_trace = run { checkpoint = false, tol = 0.05, inner_max = 200 }
    assert.is_true(ok, tostring(ref))
    local ref_p = values(p)
    local last1 -- the first inner loop's last iteration: tau or kappa changes after it
    for k = 2, #ref_trace do
      if ref_trace[k][5] ~= ref_trace[k - 1][5] or ref_trace[k][6] ~= ref_trace[k - 1][6] then last1 = k - 1 break end
    end
    assert.is_true(last1 >= 20 and last1 < 200, "the first inner loop settled")
    local ckpt = dir .. "/settled.ckpt.json"
    local ok1, r1, tr1 = run { checkpoint = ckpt, tol = 0.05, inner_max = 200, stop_at = last1 }
    assert.is_true(ok1 and r1.stopped and r1.outer == 0)
    local c1 = cq.json.read(ckpt)
    assert.is_false(c1.finished) -- stopped: a new call resumes, with the recovery snapshot of that iteration
    assert.are.same({ last1, 5 }, { c1.state.iterations, #c1.good.values[1] })
    local ok2, r2, tr2 = run { checkpoint = ckpt, tol = 0.05, inner_max = 200 }
    assert.is_true(ok2, tostring(r2))
    print(string.format("  stopped at iteration %d (the first inner loop's last), resumed to %d", last1, r2.iterations))
    assert.are.same(ref_trace, concat(tr1, tr2))
    for i = 1, p.n do assert.are.equal(ref_p[i], p.v[i - 1]) end
    assert.are.same(ref.kappa, r2.kappa)
  end)

  it("resume: a finished run is kept and returned, a larger outer_max takes it further, true needs the " ..
    "checkpoint, false ignores it; foreign checkpoints are refused", function()
    local run, p = toy()
    local ckpt = dir .. "/r.ckpt.json"
    local ok, r1 = run { checkpoint = ckpt, outer_max = 2 }
    assert.is_true(ok and cq.json.read(ckpt).finished)
    assert.is_false(r1.feasible) -- (outer_max = 2 ends it infeasible: a larger one goes on)
    local v1 = values(p)
    local bytes = read(ckpt)
    -- run again: the finished run's result (its parameters, multipliers, counters), no step, the file as it was
    local ok2, r2, tr2 = run { checkpoint = ckpt, outer_max = 2 }
    assert.is_true(ok2, tostring(r2))
    assert.is_true(r2.already_finished)
    assert.are.same({ r1.iterations, r1.outer, r1.iterations, 0 }, { r2.iterations, r2.outer, r2.resumed_from, #tr2 })
    assert.are.same({ r1.kappa, r1.tau, r1.violations, r1.feasible, r1.lr_factor },
      { r2.kappa, r2.tau, r2.violations, r2.feasible, r2.lr_factor })
    for i = 1, p.n do assert.are.equal(v1[i], p.v[i - 1]) end
    assert.are.equal(bytes, read(ckpt))
    -- outer_max = 3: goes on from the finished run to what a run with outer_max = 3 gives, bit for bit
    local ok_ref, ref, ref_trace = run { checkpoint = false, outer_max = 3 }
    assert.is_true(ok_ref, tostring(ref))
    local ref_p = values(p)
    local ok3, r3, tr3 = run { checkpoint = ckpt, outer_max = 3 }
    assert.is_true(ok3, tostring(r3))
    assert.are.equal(r1.iterations, r3.resumed_from)
    assert.is_nil(r3.already_finished)
    assert.are.same({ ref.iterations, ref.outer, ref.kappa, ref.tau }, { r3.iterations, r3.outer, r3.kappa, r3.tau })
    for i = 1, p.n do assert.are.equal(ref_p[i], p.v[i - 1]) end
    assert.are.same({ unpack(ref_trace, r1.iterations + 1) }, tr3)
    print(string.format("  finished at %d iterations (outer 2): returned as it was; outer_max = 3 went on to %d, as " ..
      "an uninterrupted run", r1.iterations, r3.iterations))
    local function err(opts) local ok_, e = run(opts) assert.is_false(ok_) return e end
    assert.matches("auglag_spec.lua:%d+: cq.augmented_lagrangian: resume = true but there is no checkpoint .*/none.json",
      err { checkpoint = dir .. "/none.json", resume = true })
    assert.matches("resume = true needs a checkpoint path %(got nil%)", err { resume = true })
    assert.matches("resume must be one of", err { checkpoint = ckpt, resume = "yes" })
    assert.matches("checkpoint must be a file path or false %(got 3%)", err { checkpoint = 3 })
    cq.json.write(dir .. "/other.json", { format = "cqlua-train" })
    assert.matches("other.json is not a cq.augmented_lagrangian checkpoint; remove it or pass resume = false",
      err { checkpoint = dir .. "/other.json" })
    -- a checkpoint of a run with two constraints
    run { checkpoint = ckpt, stop_at = 3, resume = false }
    local saved = cq.json.read(ckpt)
    saved.state.kappa[2], saved.state.tau[2] = 0, 1
    cq.json.write(ckpt, saved)
    assert.matches("cannot resume from .*r.ckpt.json: it holds 2 constraints, this run has 1", err { checkpoint = ckpt })
    local ok4 = run { checkpoint = ckpt, resume = false, outer_max = 1 }
    assert.is_true(ok4)
    assert.matches("extra must be {save", select(2, pcall(cq.augmented_lagrangian, { params = { p },
      loss = function() return 0 end, constraints = { { function() return 0 end, 1 } }, extra = { save = 1, load = 2 } })))
  end)

  it("refuses another experiment's checkpoint, naming what differs; the arguments may differ in the iteration " ..
    "limits only", function()
    local A = require "cq.args"
    local parsed = A.parsed
    local spec = { name = "examples/al_demo.lua", { "outer", 30, "outer iterations", integer = true },
      { "lr", 0.02, "Adam's step" } }
    local ckpt = dir .. "/fp.ckpt.json"
    local run, p = toy()
    local ok, err = pcall(function()
      local a = A.parse({ "outer=3" }, spec)
      local ok1, r1 = run { checkpoint = ckpt, outer_max = a.outer, lr = a.lr, stop_at = 3,
        fingerprint = { scene = "walker" } }
      assert.is_true(ok1 and r1.stopped, tostring(r1))
      local bytes = read(ckpt)
      local fp = cq.json.read(ckpt).fingerprint
      assert.are.same({ { name = "phi", n = 5 } }, fp.params)
      assert.are.same({ inner_max = 30, outer_max = 3 }, fp.budget)
      assert.are.same({ "outer=3", "lr=0.02" }, fp.args)
      -- another parameter layout, another constraint count, another item of the script's
      local q = cq.param { n = 7 }
      q.name = "phi"
      local function other(o)
        o.loss, o.checkpoint, o.outer_max = function() return 0 end, ckpt, 3
        o.constraints = o.constraints or { { function() return 0 end, 1 } }
        o.fingerprint = o.fingerprint or { scene = "walker" }
        local ok_, e = pcall(cq.augmented_lagrangian, o)
        assert.is_false(ok_)
        print("  " .. e)
        return e
      end
      assert.matches("auglag_spec.lua:%d+: cq.augmented_lagrangian: the checkpoint .*fp.ckpt.json belongs to another " ..
        "experiment: parameter 1 %(phi%): 5 values there, 7 here %(resume = false starts afresh, or remove the file%)",
        other { params = { q } })
      assert.matches("belongs to another experiment: constraints 1 there, 2 here %(", other { params = { p },
        constraints = { { function() return 0 end, 1 }, { function() return 0 end, 1 } } })
      assert.matches("belongs to another experiment: scene \"walker\" there, \"climber\" here %(",
        other { params = { p }, fingerprint = { scene = "climber" } })
      assert.are.equal(bytes, read(ckpt))
      -- outer=5: only the iteration limit changed, the run goes on (and stops again at iteration 5)
      a = A.parse({ "outer=5" }, spec)
      local ok2, r2, tr2 = run { checkpoint = ckpt, outer_max = a.outer, lr = a.lr, stop_at = 5,
        fingerprint = { scene = "walker" } }
      assert.is_true(ok2, tostring(r2))
      assert.are.same({ 3, 2 }, { r2.resumed_from, #tr2 })
      -- another step size: refused
      a = A.parse({ "outer=5", "lr=0.03" }, spec)
      local ok3, e3 = run { checkpoint = ckpt, outer_max = a.outer, lr = a.lr, fingerprint = { scene = "walker" } }
      assert.is_false(ok3)
      assert.matches("belongs to another experiment: argument lr: 0.02 there, 0.03 here %(", e3)
    end)
    A.parsed = parsed
    assert.is_true(ok, tostring(err))
  end)

  it("removes the temporaries of interrupted writes; resumes an old checkpoint without a fingerprint, warning",
    function()
    local ckpt = dir .. "/tmp.ckpt.json"
    local pid = require("cq._spawn").pid()
    local planted = { ckpt .. ".part.999999999", ckpt .. ".part." .. pid }
    for _, f in ipairs(planted) do local h = assert(io.open(f, "w")) h:write("{ half a fi") h:close() end
    local run = toy()
    local ok, r = run { checkpoint = ckpt, stop_at = 4 }
    assert.is_true(ok and r.stopped, tostring(r))
    for _, f in ipairs(planted) do assert.is_nil(io.open(f), f) end
    -- written before checkpoints recorded their experiment: resumed, with a warning
    local ck = cq.json.read(ckpt)
    ck.fingerprint = nil
    cq.json.write(ckpt, ck)
    local warn = require "cq._warn"
    local old, said = warn.warn, {}
    warn.warn = function(msg) said[#said + 1] = msg end
    local ok2, r2 = run { checkpoint = ckpt, outer_max = 1 }
    warn.warn = old
    assert.is_true(ok2, tostring(r2))
    assert.are.equal(4, r2.resumed_from)
    print("  " .. tostring(said[1]))
    assert.matches("cq.augmented_lagrangian: warning: .*tmp.ckpt.json records no fingerprint of its experiment", said[1])
  end)

  -- Starts a child cqlua process running cq.augmented_lagrangian on a rollout (the open-loop actuation's mean square
  -- held below 0.004) with a checkpoint; it prints each iteration's values in full precision and saves the params.
  local function child(d, tag)
    local script = d .. "/al_child.lua"
    local f = assert(io.open(script, "w"))
    f:write(string.format([[
package.path = %q .. "/?.lua;" .. package.path
local cq = require "cq"
local P = require("tests._train_scene").problem { substeps = 96, spacing = 1 / 128, steps = 40 }
local u = P.ctl.params[1]
local function meansq(w)
  local s = 0
  for i = 0, u.n - 1 do s = s + u.v[i] ^ 2 end
  if w ~= 0 then for i = 0, u.n - 1 do u.g[i] = u.g[i] + w * 2 * u.v[i] / u.n end end
  return s / u.n
end
local r = cq.augmented_lagrangian { params = P.run:parameters(), lr = 0.05, inner_max = 4, outer_max = 3,
  constraints = { { meansq, 0.004 } }, checkpoint = "out/al.ckpt.json",
  loss = function() local L = P.run:forward(P.s0) P.run:backward() return L end,
  on_iteration = function(s, L, task, C, tau, kappa)
    print(string.format("iter %%d %%.17g %%.17g %%.17g %%.17g %%.17g", s, L, task, C[1], tau[1], kappa[1]))
  end }
cq.save("out/final.json", { params = P.run:parameters() }, { kappa = r.kappa, tau = r.tau })
print("finished", r.iterations, r.resumed_from or "-")
]], ROOT))
    f:close()
    return shell.spawn(d, tag, "al_child.lua")
  end
  local function iters(text)
    local out = {}
    for line in text:gmatch("[^\n]+") do if line:find("^iter ") then out[#out + 1] = line end end
    return out
  end

  local ref -- the uninterrupted child run, made once
  for _, sig in ipairs { { "TERM", 15 }, { "INT", 2 } } do
    it("a SIG" .. sig[1] .. " from outside stops a child at an iteration boundary with one line; running it again " ..
      "resumes to the uninterrupted run's parameters, multipliers and history", function()
      local d = tmpdir()
      local c = child(d, "run1")
      assert.is_true(c.wait("iter 3 ", 120), "the child reaches iteration 3")
      os.execute("kill -" .. sig[1] .. " " .. c.pid())
      if not ref then
        ref = tmpdir()
        assert.is_true(child(ref, "ref").wait("rc", 300), "the reference run ends")
      end
      assert.is_true(c.wait("rc", 60), "the child stops")
      local code, err = tonumber(read(c.rc)), read(c.err)
      print(string.format("  exit %d: %s", code, err:gsub("\n$", "")))
      assert.are.equal(128 + sig[2], code)
      assert.matches("^[^\n]*cq.augmented_lagrangian: interrupted by SIG" .. sig[1] .. " after iteration %d+ %(in " ..
        "outer iteration %d of at most 3%): saved out/al.ckpt.json; run the same command again to resume\n$", err)
      assert.is_nil(err:find("traceback"))
      local stopped_after = tonumber(err:match("after iteration (%d+)"))
      assert.are.equal(stopped_after, #iters(read(c.out)))
      local c2 = child(d, "run2")
      assert.is_true(c2.wait("rc", 300), "the resumed run ends")
      assert.are.equal(0, tonumber(read(c2.rc)), read(c2.err))
      assert.matches("finished%s+%d+%s+" .. stopped_after, read(c2.out))
      local a, b = cq.json.read(ref .. "/out/final.json"), cq.json.read(d .. "/out/final.json")
      assert.are.same(a.params, b.params)
      assert.are.same(a.extra, b.extra)
      local whole = iters(read(ref .. "/ref.out"))
      assert.are.equal(12, #whole)
      assert.are.same(whole, concat(iters(read(c.out)), iters(read(c2.out))))
    end)
  end
end)
