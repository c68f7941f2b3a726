-- cq.train (lua/cq/train.lua): checkpoints and resumption with the same result as an uninterrupted run, SIGINT and
-- SIGTERM stopping at an iteration boundary (in-process and from outside, in child processes), an engine call
-- interrupted at a substep boundary, the recovery policy after a blow-up or a non-finite loss, log rotation and
-- whole files; the engine's non-finite gradient check.
local cq = require "cq"
local ffi = require "ffi"
local scene = require "tests._train_scene"

ffi.cdef "int raise(int sig);"

local shell = require "tests._shell"
local EXE = shell.exe()
local ROOT = os.getenv("PWD")
local q, read, tmpdir = shell.quote, shell.read_file, shell.tmpdir
local function values(params)
  local out = {}
  for _, p in ipairs(params) do for i = 0, p.n - 1 do out[#out + 1] = p.v[i] end end
  return out
end
-- The log's rows without the seconds and note columns (they differ between runs), and only iteration rows.
local function rows(csv)
  local out = {}
  for line in csv:gmatch("[^\n]+") do
    local f = {}
    for x in (line .. ","):gmatch("([^,]*),") do f[#f + 1] = x end
    if f[2] ~= "" then out[#out + 1] = table.concat(f, ",", 1, #f - 2) end
  end
  return out
end

describe("cq.train", function()
  local cwd_out
  before_each(function() cwd_out = tmpdir() end)

  it("resumes after an interruption with the same parameters, optimizer state and log as an uninterrupted run", function()
    local A = scene.problem()
    local ra = cq.train { rollout = A.run, state = A.s0, optimizer = A.opt, iterations = 8, name = "a",
      checkpoint = cwd_out .. "/a.ckpt.json", log = cq.log { name = "a", dir = cwd_out, columns = { "iteration",
        "loss", "grad_norm", "lr", "seconds", "note" }, quiet = true } }
    -- the same problem, interrupted by a SIGTERM that arrives during iteration 4's forward pass
    local B = scene.problem()
    local function blog(resume)
      return cq.log { name = "b", dir = cwd_out, columns = { "iteration", "loss", "grad_norm", "lr", "seconds", "note" },
        quiet = true, resume = resume }
    end
    local calls = 0
    local ok, err = pcall(cq.train, { rollout = B.run, state = B.s0, optimizer = B.opt, iterations = 8, name = "b",
      checkpoint = cwd_out .. "/b.ckpt.json", log = blog(false), evaluate = function(it)
        calls = calls + 1
        if it == 4 then ffi.C.raise(15) end -- SIGTERM: the engine stops at its next substep
        local loss = B.run:forward(B.s0)
        B.run:backward()
        return loss
      end })
    local sig = require("cq.train").host.interrupted()
    ffi.C.cqh_clear_interrupt()
    assert.is_false(ok)
    print("  " .. err)
    assert.are.equal(15, sig)
    assert.matches("cq.train: interrupted by SIGTERM after iteration 3 of 8: saved .*b.ckpt.json; run the same " ..
      "command again to resume", err)
    assert.are.equal(4, calls)
    -- a new process: fresh objects, the same command
    local C = scene.problem()
    local rc = cq.train { rollout = C.run, state = C.s0, optimizer = C.opt, iterations = 8, name = "b",
      checkpoint = cwd_out .. "/b.ckpt.json", log = blog(3) }
    assert.are.equal(3, rc.resumed_from)
    local va, vc = values(A.opt.params), values(C.opt.params)
    for i = 1, #va do assert.are.equal(va[i], vc[i]) end
    assert.are.equal(ra.loss, rc.loss)
    local sa, sc = A.opt:state(), C.opt:state()
    for k = 1, #sa.slots do for i = 1, #sa.slots[k].m do assert.are.equal(sa.slots[k].v[i], sc.slots[k].v[i]) end end
    local la, lb = rows(read(cwd_out .. "/a.csv")), rows(read(cwd_out .. "/b.csv"))
    assert.are.same(la, lb)
    assert.are.equal(9, #la) -- the header and 8 iterations, none twice
    print(string.format("  8 iterations: loss %.6g -> %.6g, identical after the resume", tonumber(la[2]:match(",([^,]*)")), ra.loss))
    local ck = cq.json.read(cwd_out .. "/b.ckpt.json")
    assert.is_true(ck.finished)
    assert.are.equal(8, ck.iteration)
  end)

  it("recovers from a blow-up: restores the last good parameters, shrinks the step, notes it in the log", function()
    local P = scene.problem { lr = 2, max = 20 } -- a step size that inverts elements or outruns the grid
    local res = cq.train { rollout = P.run, state = P.s0, optimizer = P.opt, iterations = 8, name = "blowup",
      checkpoint = false, log = cq.log { name = "blowup", dir = cwd_out, columns = { "iteration", "loss", "grad_norm",
        "lr", "seconds", "note" }, quiet = true } }
    local csv = read(cwd_out .. "/blowup.csv")
    local notes = {}
    for note in csv:gmatch("\n%d+,,,,,([^\n]+)") do notes[#notes + 1] = note end
    print(string.format("  %d recoveries, final loss %.4g; first note: %s", res.recoveries, res.loss, notes[1]))
    assert.is_true(res.recoveries >= 1)
    assert.are.equal(res.recoveries, #notes)
    assert.matches("failed %(.*blow%-up.*%); restored the parameters of iteration %d+ and stepped again with the step " ..
      "size x0.5", notes[1])
    assert.are.equal(8, res.iteration)
    assert.is_true(res.loss == res.loss)
  end)

  it("run:backward(on_step) hands dL/ds_k at every control step, and state:norm measures it", function()
    local P = scene.problem {}
    P.run:forward(P.s0)
    local ks, norms = {}, {}
    local m = P.run:backward(function(k, memo)
      ks[#ks + 1] = k
      local s = 0
      for i = 0, 2 * memo.world.n - 1 do s = s + memo.grad.x[i] ^ 2 end
      assert.is_true(math.abs(memo.grad:norm("x") / math.sqrt(s) - 1) < 1e-14) -- (scaled by its largest entry)
      norms[k] = memo.grad:norm("x")
    end)
    assert.are.same({ 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0 }, ks)
    assert.are.equal(norms[0], m.grad:norm("x")) -- after the pass memo.grad is dL/ds_0
    assert.is_true(norms[0] > 0 and norms[0] ~= norms[11])
    print(string.format("  |dL/dx_k|: %.3g at k = 11, %.3g at k = 0", norms[11], norms[0]))
    local ok, err = pcall(P.run.backward, P.run, 3)
    assert.is_false(ok)
    assert.matches("run:backward: on_step must be nil or a function", err)
    ok, err = pcall(m.grad.norm, m.grad, "speed")
    assert.is_false(ok)
    assert.matches("state:norm: field must be one of x, v", err)
  end)

  it("backtracks (recover.worse): a loss above r times the last accepted one is rejected and the step shrunk", function()
    local function run(worse, name, offset)
      local p = cq.param { n = 1, init = 1 }
      local res = cq.train { optimizer = cq.sgd { params = { p }, lr = 1.2 }, iterations = 8, checkpoint = false,
        recover = { worse = worse }, log = cq.log { name = name, dir = cwd_out, columns = { "iteration", "loss",
          "grad_norm", "lr", "seconds", "note" }, quiet = true },
        evaluate = function() -- x^2 with lr 1.2: x -> -1.4 x, the loss grows 1.96x per step; at lr 0.6: x -> -0.2 x
          p.g[0] = 2 * p.v[0]
          return p.v[0] ^ 2 + (offset or 0)
        end }
      return p.v[0], res
    end
    local x_plain, plain = run(nil, "worse_off")
    local x_back, back = run(1.5, "worse_on")
    local notes = {}
    for note in read(cwd_out .. "/worse_on.csv"):gmatch("\n%d+,,,,,([^\n]+)") do notes[#notes + 1] = note end
    print(string.format("  without: x = %.4g (%d recoveries); with worse = 1.5: x = %.4g (%d rejections); %s",
      x_plain, plain.recoveries, x_back, back.recoveries, notes[1]))
    assert.are.equal(0, plain.recoveries)
    assert.is_true(math.abs(x_plain) > 10) -- 1.4^7: diverged
    assert.are.equal(1, back.recoveries) -- the first step is rejected, lr 0.6 then converges
    assert.is_true(math.abs(x_back) < 1e-3)
    assert.matches("iteration 2 rejected %(loss 1.96 above recover.worse = 1.5 times the last accepted 1%); restored " ..
      "the parameters of iteration 1 and stepped again with the step size x0.5", notes[1])
    -- a negative loss: rejected when above the last accepted one by more than (worse - 1) of its magnitude
    local x_neg, neg = run(1.5, "worse_negative", -3)
    assert.are.equal(1, neg.recoveries)
    assert.is_true(math.abs(x_neg) < 1e-3)
    local ok, err = pcall(run, 1, "worse_bad")
    assert.is_false(ok)
    assert.matches("recover.worse", err)
    assert.matches("got 1", err)
  end)

  it("regrows the step after a rejection (recover.grow), up to the unshrunk one", function()
    local p = cq.param { n = 1, init = 1 }
    local lrs = {}
    cq.train { optimizer = cq.sgd { params = { p }, lr = 1.2 }, iterations = 6, checkpoint = false,
      recover = { worse = 1.5, grow = 1.5 }, log = cq.log { name = "grow", dir = cwd_out, columns = { "iteration",
        "loss", "lr", "note" }, quiet = true },
      evaluate = function(it) -- x^2: lr 1.2 overshoots (rejected at iteration 2), lr 0.6 shrinks x
        p.g[0] = 2 * p.v[0]
        return p.v[0] ^ 2
      end }
    for it, lr in read(cwd_out .. "/grow.csv"):gmatch("\n(%d+),[^,]*,([^,]+),") do lrs[tonumber(it)] = tonumber(lr) end
    print(string.format("  lr after each accepted iteration: %s", table.concat(lrs, ", ")))
    -- the step size of the step after each accepted iteration: 1.2, rejected at 2 (0.6), then 0.6 x 1.5 = 0.9, then
    -- 1.2 (capped at the unshrunk step)
    assert.is_true(lrs[1] == 1.2 and math.abs(lrs[2] - 0.9) < 1e-12 and math.abs(lrs[3] - 1.2) < 1e-12)
    local ok, err = pcall(cq.train, { optimizer = cq.sgd { params = { p } }, iterations = 1, checkpoint = false,
      recover = { grow = 0.5 }, log = cq.log { name = "grow_bad", dir = cwd_out, columns = { "iteration" },
        quiet = true }, evaluate = function() return 1 end })
    assert.is_false(ok)
    assert.matches("recover.grow", err)
  end)

  it("recovers from a non-finite loss and gives up after the retries, naming the last failure", function()
    local p = cq.param { n = 1, init = 1 }
    local res = cq.train { optimizer = cq.sgd { params = { p }, lr = 1.5 }, iterations = 6, checkpoint = false,
      log = cq.log { name = "nan", dir = cwd_out, columns = { "iteration", "loss", "grad_norm", "lr", "seconds", "note" },
        quiet = true },
      evaluate = function() -- loss x^2 on |x| < 1.2, undefined beyond: lr 1.5 overshoots to -2 and must shrink
        local x = p.v[0]
        p.g[0] = 2 * x
        return math.abs(x) < 1.2 and x * x or 0 / 0
      end }
    print(string.format("  x = %.4g after %d recoveries", p.v[0], res.recoveries))
    assert.is_true(res.recoveries >= 1)
    assert.is_true(math.abs(p.v[0]) < 1)
    local ok, err = pcall(cq.train, { optimizer = cq.sgd { params = { p }, lr = 1 }, iterations = 3, checkpoint = false,
      recover = { retries = 2 }, log = cq.log { name = "nan2", dir = cwd_out, columns = { "iteration", "loss",
        "grad_norm", "lr", "seconds", "note" }, quiet = true },
      evaluate = function(it) p.g[0] = 1 return it == 1 and 1 or 0 / 0 end })
    assert.is_false(ok)
    assert.matches("cq.train: iteration 2 failed 3 times in a row, each time after shrinking the step size by 0.5; " ..
      "last failure: the loss is not finite %(nan%)", err)
    -- a bug in the script is not a numerical failure: raised at once
    ok, err = pcall(cq.train, { optimizer = cq.sgd { params = { p } }, iterations = 3, checkpoint = false,
      log = cq.log { name = "bug", dir = cwd_out, columns = { "iteration" }, quiet = true },
      evaluate = function() return nil + 1 end })
    assert.is_false(ok)
    assert.matches("attempt to perform arithmetic", err)
  end)

  it("recovers from an implicit solve that did not converge (forward or adjoint) as from a blow-up", function()
    local p = cq.param { n = 1, init = 1 }
    local res = cq.train { optimizer = cq.sgd { params = { p }, lr = 1.5 }, iterations = 6, checkpoint = false,
      log = cq.log { name = "cg", dir = cwd_out, columns = { "iteration", "loss", "grad_norm", "lr", "seconds", "note" },
        quiet = true },
      evaluate = function() -- loss x^2, whose "adjoint solve" fails beyond |x| = 1.2 (the engine's message)
        local x = p.v[0]
        if math.abs(x) >= 1.2 then
          error("memo:backward_step: backward: implicit substep 139: the adjoint solve did not converge (||r|| / " ..
            "||b|| = 1.35e-05 after max_cg = 500 conjugate-gradient iterations, tol 1e-06); raise implicit.max_cg " ..
            "or loosen implicit.tol", 0)
        end
        p.g[0] = 2 * x
        return x * x
      end }
    print(string.format("  x = %.4g after %d recoveries", p.v[0], res.recoveries))
    assert.is_true(res.recoveries >= 1)
    assert.is_true(math.abs(p.v[0]) < 1)
  end)

  -- A real engine failure: iteration 2's rollout blows up (gravity 1e6 for that evaluation: the boxes leave a cell
  -- per substep). The evaluation hides the engine's message behind its own, so only the world's recorded
  -- CQ_ERR_BLOWUP status tells cq.train that it is numerical; the run goes back to the last good parameters.
  it("recovers from a blow-up in a real rollout by the engine's status, whatever the message", function()
    local P = require("tests._train_scene").problem { steps = 4 }
    local calls = 0 -- the second evaluation (iteration 2's first attempt) blows up
    local res = cq.train { rollout = P.run, state = P.s0, optimizer = P.opt, iterations = 3, checkpoint = false,
      log = cq.log { name = "real_blowup", dir = cwd_out, columns = { "iteration", "loss", "grad_norm", "lr",
        "seconds", "note" }, quiet = true },
      before = function()
        calls = calls + 1
        P.world:set_gravity { 0, calls == 2 and -1e6 or -4 }
      end,
      evaluate = function()
        local ok, loss = pcall(P.run.forward, P.run, P.s0)
        if not ok then error("my evaluation failed", 0) end
        P.run:backward()
        return loss
      end }
    print(string.format("  loss %.6g after %d recoveries", res.loss, res.recoveries))
    assert.are.equal(1, res.recoveries)
    assert.is_true(res.loss == res.loss and res.loss < math.huge)
    -- a script error after a blow-up is still a script error: the status is this evaluation's only
    calls = 0
    local ok, err = pcall(cq.train, { rollout = P.run, state = P.s0, optimizer = P.opt, iterations = 3,
      checkpoint = false, log = cq.log { name = "real_blowup2", dir = cwd_out, columns = { "iteration" }, quiet = true },
      before = function() calls = calls + 1 end,
      evaluate = function()
        if calls == 1 then return P.run:forward(P.s0) end
        P.world:set_gravity { 0, calls == 2 and -1e6 or -4 }
        pcall(P.run.forward, P.run, P.s0)
        error("a bug in my script", 0)
      end })
    assert.is_false(ok)
    assert.matches("a bug in my script", err)
  end)

  -- Checkpoints know their experiment (issue 64 item 2): the fingerprint of a checkpoint, a finished run's kept one,
  -- the temporaries of interrupted writes.
  local function train_scene(P, iterations, ckpt, logname, more)
    local o = { rollout = P.run, state = P.s0, optimizer = P.opt, iterations = iterations, checkpoint = ckpt,
      log = cq.log { name = logname, dir = cwd_out, columns = { "iteration", "loss", "grad_norm", "lr", "seconds",
        "note" }, quiet = true, resume = more and more.log_resume }, quiet = true }
    for k, v in pairs(more or {}) do if k ~= "log_resume" then o[k] = v end end
    return cq.train(o)
  end

  it("refuses to resume another robot's checkpoint, naming what differs", function()
    local ckpt = cwd_out .. "/robot.ckpt.json"
    local A = scene.problem()
    train_scene(A, 3, ckpt, "robot_a")
    local bytes = read(ckpt)
    local B = scene.problem { spacing = 1 / 64 } -- the same parameters, a robot of more particles
    local ok, err = pcall(train_scene, B, 5, ckpt, "robot_b")
    assert.is_false(ok)
    print("  " .. err)
    assert.matches("train_spec.lua:%d+: cq.train: the checkpoint .*robot.ckpt.json belongs to another experiment: " ..
      "particles " .. A.world.n .. " there, " .. B.world.n .. " here %(resume = false starts afresh, or remove the " ..
      "file%)", err)
    assert.is_true(A.world.n ~= B.world.n)
    assert.are.equal(bytes, read(ckpt))
    -- another parameter layout: named by parameter, with its sizes
    local p = cq.param { n = 3 }
    ok, err = pcall(cq.train, { optimizer = cq.sgd { params = { p } }, iterations = 5, checkpoint = ckpt, quiet = true,
      log = cq.log { name = "robot_c", dir = cwd_out, columns = { "iteration" }, quiet = true },
      evaluate = function() return 1 end })
    assert.is_false(ok)
    print("  " .. err)
    assert.matches("another experiment: 2 parameters there, 1 here; a world of " .. A.world.n .. " particles there, " ..
      "none here %(", err)
    -- resume = false starts afresh over it
    local r = train_scene(B, 2, ckpt, "robot_b2", { resume = false })
    assert.is_nil(r.resumed_from)
    assert.are.equal(B.world.n, cq.json.read(ckpt).fingerprint.world.n)
  end)

  it("a finished run run again keeps its checkpoint bit for bit and returns its result; more iterations go on " ..
    "from it as one longer run", function()
    local ckpt = cwd_out .. "/fin.ckpt.json"
    local A = scene.problem()
    local ra = train_scene(A, 4, ckpt, "fin", { keep_best = true })
    local bytes, csv, va = read(ckpt), read(cwd_out .. "/fin.csv"), values(A.opt.params)
    -- the same command again (fresh objects, as a new process): no training, the checkpoint and the log as they were
    local B = scene.problem()
    local evaluations = 0
    local rb = train_scene(B, 4, ckpt, "fin", { keep_best = true, log_resume = 4,
      before = function() evaluations = evaluations + 1 end })
    assert.is_true(rb.already_finished)
    assert.are.equal(bytes, read(ckpt))
    assert.are.same(rows(csv), rows(read(cwd_out .. "/fin.csv")))
    assert.are.same({ ra.loss, 4, 4, ra.best.loss, ra.best.iteration, ra.recoveries },
      { rb.loss, rb.iteration, rb.resumed_from, rb.best.loss, rb.best.iteration, rb.recoveries })
    assert.are.same(va, values(B.opt.params)) -- the best iterate's parameters (keep_best), as after the run
    assert.are.equal(1, evaluations) -- before(4) and one forward pass: the rollout holds the last iteration's
    assert.is_truthy(B.run:trajectory())
    print(string.format("  finished after 4 iterations (loss %.6g): run again, %d bytes of checkpoint unchanged",
      ra.loss, #bytes))
    -- resume = true is the same
    local rt = train_scene(scene.problem(), 4, ckpt, "fin", { keep_best = true, log_resume = 4, resume = true })
    assert.is_true(rt.already_finished)
    assert.are.equal(bytes, read(ckpt))
    -- 7 iterations: resumed after iteration 4 (the step it did not take first), to the 7-iteration run's result
    local R = scene.problem()
    local rr = train_scene(R, 7, cwd_out .. "/ref7.ckpt.json", "ref7")
    local C = scene.problem()
    local rc = train_scene(C, 7, ckpt, "fin", { log_resume = 4 })
    assert.are.equal(4, rc.resumed_from)
    assert.is_nil(rc.already_finished)
    assert.are.equal(rr.loss, rc.loss)
    assert.are.same(values(R.opt.params), values(C.opt.params))
    assert.are.same(rows(read(cwd_out .. "/ref7.csv")), rows(read(cwd_out .. "/fin.csv")))
    local note = read(cwd_out .. "/fin.csv"):match("\n4,,,,,([^\n]+)")
    print("  " .. note)
    assert.are.equal("resumed from " .. ckpt .. " after iteration 4 of 7 (a finished run taken further: iterations " ..
      "4 -> 7)", note)
    local ck = cq.json.read(ckpt)
    assert.are.same({ true, 7 }, { ck.finished, ck.iteration })
    -- fewer iterations than the checkpoint holds: refused
    local ok, err = pcall(train_scene, scene.problem(), 5, ckpt, "fin5")
    assert.is_false(ok)
    assert.matches("the checkpoint .*fin.ckpt.json is at iteration 7 %(finished%); this run asks for 5 iterations: " ..
      "give more than 7 to go on from it, or resume = false to start afresh", err)
  end)

  it("resumes only with the same script arguments, but for the iteration count; the fingerprint option adds items",
    function()
    local A = require "cq.args"
    local parsed, host_arg = A.parsed, rawget(_G, "arg")
    local spec = { name = "examples/demo.lua", { "iters", 4, "iterations", integer = true }, { "lr", 0.25, "step" },
      { "seed", 1, "seed" } }
    local ckpt = cwd_out .. "/args.ckpt.json"
    local function go(argv, more)
      local a = A.parse(argv, spec)
      local p = cq.param { n = 2, init = 1 }
      p.name = "x"
      local o = { optimizer = cq.sgd { params = { p }, lr = a.lr }, iterations = a.iters, checkpoint = ckpt,
        quiet = true, log = cq.log { name = "args", dir = cwd_out, columns = { "iteration", "loss", "grad_norm", "lr", "note" },
          quiet = true, resume = more and more.log_resume },
        evaluate = function() p.g[0], p.g[1] = 2 * p.v[0], 2 * p.v[1] return p.v[0] ^ 2 + p.v[1] ^ 2 end }
      for k, v in pairs(more or {}) do if k ~= "log_resume" then o[k] = v end end
      return cq.train(o), p
    end
    local ok, err = pcall(function()
      local r1 = go({ "3", "lr=0.25" }, { fingerprint = { scene = "walker" } })
      assert.are.same({ "iters=3", "lr=0.25", "seed=1" }, cq.json.read(ckpt).fingerprint.args)
      -- the same arguments spelled otherwise (by key, a default left out): the same experiment, finished
      local r2 = go({ "iters=3" }, { fingerprint = { scene = "walker" }, log_resume = 3 })
      assert.is_true(r2.already_finished)
      assert.are.equal(r1.loss, r2.loss)
      -- another learning rate, another seed, another item of the script's: refused, each named
      local ok1, e1 = pcall(go, { "iters=5", "lr=0.5", "seed=2" }, { fingerprint = { scene = "climber" } })
      assert.is_false(ok1)
      print("  " .. e1)
      assert.matches("belongs to another experiment: scene \"walker\" there, \"climber\" here; argument lr: 0.25 " ..
        "there, 0.5 here; argument seed: 1 there, 2 here %(resume = false", e1)
      -- another script
      local spec2 = { name = "examples/other.lua", spec[1], spec[2], spec[3] }
      A.parse({ "iters=5" }, spec2)
      local p = cq.param { n = 2 }
      p.name = "x"
      local ok2, e2 = pcall(cq.train, { optimizer = cq.sgd { params = { p } }, iterations = 5, checkpoint = ckpt,
        quiet = true, fingerprint = { scene = "walker" }, evaluate = function() return 0 end,
        log = cq.log { name = "args2", dir = cwd_out, columns = { "iteration" }, quiet = true } })
      assert.is_false(ok2)
      assert.matches("another experiment: script \"examples/demo.lua\" there, \"examples/other.lua\" here %(", e2)
      -- the iteration count alone: the run goes on (iters=3 there, iters=5 here with 3 and 5 iterations)
      local r3 = go({ "iters=5" }, { fingerprint = { scene = "walker" }, log_resume = 3 })
      assert.are.same({ 3, 5 }, { r3.resumed_from, r3.iteration })
      -- fingerprint.args = false: the arguments not compared (another seed resumes)
      local r4 = go({ "iters=6", "seed=9" }, { fingerprint = { scene = "walker", args = false }, log_resume = 5,
        resume = true })
      assert.are.same({ 5, 6 }, { r4.resumed_from, r4.iteration })
      -- a script without cq.args: the host's arguments as given
      A.parsed = nil
      rawset(_G, "arg", { [0] = "./plain.lua", "a", "7" })
      local p5 = cq.param { n = 2, init = 1 }
      local function plain(iterations)
        return cq.train { optimizer = cq.sgd { params = { p5 } }, iterations = iterations, quiet = true,
          checkpoint = cwd_out .. "/plain.ckpt.json", evaluate = function() p5.g[0] = 1 return p5.v[0] end,
          log = cq.log { name = "plain", dir = cwd_out, columns = { "iteration", "loss", "grad_norm", "lr" }, quiet = true } }
      end
      plain(7)
      local fp = cq.json.read(cwd_out .. "/plain.ckpt.json").fingerprint
      assert.are.same({ "plain.lua", { "a", "7" } }, { fp.script, fp.args })
      _G.arg[2] = "9"
      assert.are.equal(7, plain(9).resumed_from) -- "7" -> "9" with 7 -> 9 iterations
      _G.arg[1] = "b"
      _G.arg[2] = "11"
      local ok6, e6 = pcall(plain, 11)
      assert.is_false(ok6)
      assert.matches("argument 1: a there, b here %(", e6)
    end)
    A.parsed = parsed
    rawset(_G, "arg", host_arg)
    assert.is_true(ok, tostring(err))
  end)

  it("removes the temporaries of interrupted writes; resumes an old checkpoint without a fingerprint, warning",
    function()
    local ckpt = cwd_out .. "/tmp.ckpt.json"
    local spawn = require "cq._spawn"
    local live = spawn.start("exec sleep 30") -- a process that may still be writing its temporary
    local planted = { dead = ckpt .. ".part.999999999", mine = ckpt .. ".part." .. spawn.pid(),
      live = ckpt .. ".part." .. live, other = cwd_out .. "/other.ckpt.json.part.999999999" }
    for _, f in pairs(planted) do local h = assert(io.open(f, "w")) h:write("{ half a fi") h:close() end
    local A = scene.problem()
    train_scene(A, 2, ckpt, "tmp")
    spawn.kill(live, 15)
    while not spawn.poll(live) do spawn.sleep(0.01) end
    assert.is_nil(io.open(planted.dead), "a dead process's temporary is removed")
    assert.is_nil(io.open(planted.mine), "this process's")
    assert.is_truthy(io.open(planted.live), "a live process's is kept")
    assert.is_truthy(io.open(planted.other), "another file's is kept")
    -- the log's temporaries too (cq.train with a name writes out/<name>.csv)
    local dir = tmpdir()
    local f = assert(io.open(dir .. "/train_tmp.lua", "w"))
    f:write(string.format([[
package.path = %q .. "/?.lua;" .. package.path
local cq = require "cq"
os.execute("mkdir -p out")
for _, n in ipairs { "out/t.ckpt.json.part.999999999", "out/t.csv.part.999999998" } do io.open(n, "w"):close() end
local p = cq.param { n = 1, init = 1 }
cq.train { optimizer = cq.sgd { params = { p } }, iterations = 2, name = "t", quiet = true,
  evaluate = function() p.g[0] = 1 return p.v[0] end }
]], ROOT))
    f:close()
    local out, rc = shell.sh("cd " .. q(dir) .. " && " .. q(EXE) .. " train_tmp.lua && ls out")
    assert.are.equal(0, rc, out)
    assert.are.equal("t.ckpt.json\nt.csv\n", out)
    -- a checkpoint written before fingerprints: resumed, with a warning
    local ck = cq.json.read(ckpt)
    ck.fingerprint, ck.finished, ck.iteration = nil, false, 1
    -- (a run stopped after iteration 1 of 2: its parameters were those after the step; any values do here)
    cq.json.write(ckpt, ck)
    local warn = require "cq._warn"
    local old, said = warn.warn, {}
    warn.warn = function(msg) said[#said + 1] = msg end
    local ok, r = pcall(train_scene, scene.problem(), 3, ckpt, "tmp", { log_resume = 1 })
    warn.warn = old
    assert.is_true(ok, tostring(r))
    assert.are.equal(1, r.resumed_from)
    print("  " .. tostring(said[1]))
    assert.matches("cq.train: warning: .*tmp.ckpt.json records no fingerprint of its experiment %(written before " ..
      "checkpoints did%): resumed without checking that it belongs to this run", said[1])
  end)

  -- Starts a child cqlua process running a cq.train of the scene in dir; returns a handle.
  local function child(dir, iterations, tag)
    local script = dir .. "/train_child.lua"
    local f = assert(io.open(script, "w"))
    f:write(string.format([[
package.path = %q .. "/?.lua;" .. package.path
local cq = require "cq"
local P = require("tests._train_scene").problem { substeps = 24, spacing = 1 / 128, steps = 40 }
local res = cq.train { rollout = P.run, state = P.s0, optimizer = P.opt, iterations = %d, name = "child" }
cq.save("out/final.json", { params = P.opt.params })
print("finished", res.loss)
]], ROOT, iterations))
    f:close()
    return shell.spawn(dir, tag, "train_child.lua")
  end

  local ref -- the uninterrupted child run, made once
  for _, sig in ipairs { { "TERM", 15 }, { "INT", 2 } } do
    it("a SIG" .. sig[1] .. " from outside stops a child at an iteration boundary; running it again resumes to the " ..
      "uninterrupted result", function()
      local dir = tmpdir()
      local c = child(dir, 6, "run1")
      assert.is_true(c.wait("child%s+2/6", 60), "the child reaches iteration 2")
      os.execute("kill -" .. sig[1] .. " " .. c.pid())
      if not ref then
        ref = tmpdir()
        assert.is_true(child(ref, 6, "ref").wait("rc", 60), "the reference run ends")
      end
      assert.is_true(c.wait("rc", 30), "the child stops")
      local code, err = tonumber(read(c.rc)), read(c.err)
      print(string.format("  exit %d: %s", code, err:gsub("\n$", "")))
      assert.are.equal(128 + sig[2], code)
      assert.matches("interrupted by SIG" .. sig[1] .. " after iteration %d of 6: saved out/child.ckpt.json", err)
      assert.is_nil(err:find("traceback"))
      local csv = read(dir .. "/out/child.csv")
      assert.are.equal("\n", csv:sub(-1)) -- whole rows
      assert.is_truthy(cq.json.read(dir .. "/out/child.ckpt.json").iteration)
      local c2 = child(dir, 6, "run2")
      assert.is_true(c2.wait("rc", 60), "the resumed run ends")
      assert.are.equal(0, tonumber(read(c2.rc)))
      assert.matches("resumed from out/child.ckpt.json", read(c2.out))
      local a, b = cq.json.read(ref .. "/out/final.json"), cq.json.read(dir .. "/out/final.json")
      assert.are.same(a.params, b.params)
      assert.are.same(rows(read(ref .. "/out/child.csv")), rows(read(dir .. "/out/child.csv")))
    end)
  end

  it("a signal stops a long engine call at the next substep, with every printed line flushed", function()
    local dir = tmpdir()
    local f = assert(io.open(dir .. "/long.lua", "w"))
    f:write([[
local cq = require "cq"
local w = cq.world { n = 400, res = 32, substeps = 100000, dt = 10, gravity = { 0, -1 }, walls = { all = { type = "slip" } } }
w:commit()
local s = w:state()
for p = 1, 400 do s:set("x", p, { 0.3 + 0.001 * p, 0.5 }) end
for k = 1, 50 do print("line " .. k) end
w:step(s) -- 100,000 substeps: minutes without interruption
print("not reached")
]])
    f:close()
    local h = { out = dir .. "/o", err = dir .. "/e", rc = dir .. "/rc" }
    os.execute(string.format("cd %s && (sh -c 'echo $$ > pid; exec %s long.lua' > o 2> e; echo $? > rc) &", q(dir), q(EXE)))
    for _ = 1, 200 do if (read(h.out) or ""):find("line 50") then break end os.execute("sleep 0.05") end
    os.execute("sleep 0.3")
    local t0 = os.time()
    os.execute("kill -INT " .. read(dir .. "/pid"))
    for _ = 1, 100 do if (read(h.rc) or ""):match("%d") then break end os.execute("sleep 0.02") end
    local err = read(h.err)
    print("  " .. err:match("[^\n]*"))
    assert.are.equal(130, tonumber(read(h.rc)))
    assert.is_true(os.time() - t0 <= 1)
    assert.matches("interrupted by SIGINT", err)
    local out = read(h.out)
    assert.is_truthy(out:find("line 50\n", 1, true))
    assert.is_nil(out:find("not reached"))
  end)
end)

describe("cq.log", function()
  it("rotates an earlier run's log instead of overwriting it", function()
    local dir = tmpdir()
    local a = cq.log { name = "r", dir = dir, columns = { "iteration", "loss" }, quiet = true }
    a:iteration(1, 1, { loss = 5 }) a:close()
    local b = cq.log { name = "r", dir = dir, columns = { "iteration", "loss" }, quiet = true }
    b:iteration(1, 1, { loss = 7 }) b:close()
    assert.are.equal("iteration,loss\n1,5\n", read(dir .. "/r.1.csv"))
    assert.are.equal("iteration,loss\n1,7\n", read(dir .. "/r.csv"))
  end)
end)

describe("the engine's non-finite gradient check", function()
  it("stops the backward pass at the step where a gradient becomes non-finite, naming the particle", function()
    local P = scene.problem()
    P.run:forward(P.s0)
    local m = P.run.memo
    m:backward_begin()
    m.grad.x[5] = math.huge
    local ok, err = pcall(m.backward_step, m)
    assert.is_false(ok)
    print("  " .. err)
    assert.matches("backward: dL/dx of particle (%d+) %(component 1%) is %-?[%a]+ at control step 11 %(check " ..
      "nonfinite_gradient%)", err)
    local b = P.world:blowup()
    assert.are.equal("nonfinite_gradient", b.check)
    assert.are.equal(tonumber(err:match("particle (%d+)")), b.particle)
  end)
end)
