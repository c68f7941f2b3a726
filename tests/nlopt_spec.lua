-- cq.nlopt (libnlopt through the FFI): analytic optima of unconstrained, bounded and constrained problems,
-- an open-loop actuation fitted through a differentiable rollout, and the error messages.
local cq = require "cq"
local tape = require "cq.tape"

-- Rosenbrock over two separate 1-entry params (so the packing of several arrays is exercised).
local function rosenbrock()
  local px, py = tape.param(1, -1.2), tape.param(1, 1)
  local function f(need_grad)
    local x, y = px.v[0], py.v[0]
    if need_grad then
      px.g[0] = -2 * (1 - x) - 400 * x * (y - x * x)
      py.g[0] = 200 * (y - x * x)
    end
    return (1 - x) ^ 2 + 100 * (y - x * x) ^ 2
  end
  return px, py, f
end

-- x = (x1, x2) in one param; f = |x - c|^2; linear constraint a.x - b with its gradient.
local function quadratic(c)
  local p = tape.param(2, 0)
  local function f() p.g[0], p.g[1] = 2 * (p.v[0] - c[1]), 2 * (p.v[1] - c[2]); return (p.v[0] - c[1]) ^ 2 + (p.v[1] - c[2]) ^ 2 end
  local function linear(a, b) return function() p.g[0], p.g[1] = a[1], a[2]; return a[1] * p.v[0] + a[2] * p.v[1] - b end end
  return p, f, linear
end

describe("cq.nlopt", function()
  it("reports the nlopt version", function()
    assert.matches("^%d+%.%d+%.%d+$", require("cq.nlopt").version())
  end)

  it("L-BFGS reaches the Rosenbrock minimum (1, 1) within 1e-6", function()
    local px, py, f = rosenbrock()
    local opt = cq.nlopt { algorithm = "lbfgs", params = { px, py }, objective = f, maxeval = 500,
      ftol_rel = 1e-15, xtol_rel = 1e-12 }
    local loss, result, evals = opt:run()
    print(string.format("  rosenbrock: x = (%.12f, %.12f), f = %.2e, %s after %d evaluations", px.v[0], py.v[0],
      loss, result, evals))
    assert.is_true(math.abs(px.v[0] - 1) < 1e-6 and math.abs(py.v[0] - 1) < 1e-6)
    assert.is_true(loss < 1e-12)
    assert.is_true(evals > 1 and evals <= 500)
    assert.is_truthy(({ SUCCESS = 1, FTOL_REACHED = 1, XTOL_REACHED = 1 })[result])
  end)

  it("SLSQP: min |x|^2 subject to x1 + x2 = 1 gives (0.5, 0.5)", function()
    local p, f, linear = quadratic { 0, 0 }
    p.v[0], p.v[1] = 2, -3
    local opt = cq.nlopt { algorithm = "slsqp", params = { p }, objective = f, maxeval = 100,
      equality = { { fn = linear({ 1, 1 }, 1), tol = 1e-10 } }, ftol_rel = 1e-14, xtol_rel = 1e-12 }
    local loss, result, evals = opt:run()
    print(string.format("  equality: x = (%.12f, %.12f), f = %.12f, %s, %d evaluations", p.v[0], p.v[1], loss,
      result, evals))
    assert.is_true(math.abs(p.v[0] - 0.5) < 1e-6 and math.abs(p.v[1] - 0.5) < 1e-6)
    assert.is_true(math.abs(loss - 0.5) < 1e-6)
  end)

  for _, algo in ipairs { "slsqp", "mma", "ccsaq" } do
    it(algo .. ": min |x - (2, 1)|^2 subject to x1 + x2 <= 1 (active) gives (1, 0)", function()
      local p, f, linear = quadratic { 2, 1 }
      local opt = cq.nlopt { algorithm = algo, params = { p }, objective = f, maxeval = 300,
        inequality = { { fn = linear({ 1, 1 }, 1), tol = 1e-12 } }, ftol_rel = 1e-15, xtol_rel = 1e-12 }
      local loss, result, evals = opt:run()
      print(string.format("  inequality (%s): x = (%.12f, %.12f), f = %.12f, violation %.1e, %s, %d evaluations",
        algo, p.v[0], p.v[1], loss, p.v[0] + p.v[1] - 1, result, evals))
      assert.is_true(math.abs(p.v[0] - 1) < 1e-6 and math.abs(p.v[1]) < 1e-6)
      assert.is_true(math.abs(loss - 2) < 1e-5)
      -- SLSQP ends feasible; MMA and CCSA approach the active constraint with a violation of a few 1e-8
      assert.is_true(p.v[0] + p.v[1] - 1 <= (algo == "slsqp" and 1e-9 or 1e-7))
    end)
  end

  it("respects bounds (numbers and per-entry tables) and projects a start point outside them", function()
    -- f = sum (x_i - c_i)^2 with c = (3, -3, 0.5); bounds: x1 <= 2, x2 >= -1, x3 free in [0, 1]
    local p = tape.param(3, 0)
    p.v[0], p.v[1], p.v[2] = 10, -10, 0.2 -- the first two start outside the box
    local c = { 3, -3, 0.5 }
    local function f()
      local s = 0
      for i = 0, 2 do p.g[i] = 2 * (p.v[i] - c[i + 1]); s = s + (p.v[i] - c[i + 1]) ^ 2 end
      return s
    end
    local seen_outside = false
    local opt = cq.nlopt { algorithm = "lbfgs", params = { p }, objective = function()
        if p.v[0] > 2 or p.v[1] < -1 or p.v[2] < 0 or p.v[2] > 1 then seen_outside = true end
        return f()
      end, bounds = { [p] = { { -5, -1, 0 }, { 2, 5, 1 } } }, maxeval = 100, xtol_rel = 1e-12 }
    local loss = opt:run()
    print(string.format("  bounds: x = (%.12f, %.12f, %.12f), f = %.12f", p.v[0], p.v[1], p.v[2], loss))
    assert.is_false(seen_outside)
    assert.are.equal(2, p.v[0])
    assert.are.equal(-1, p.v[1])
    assert.is_true(math.abs(p.v[2] - 0.5) < 1e-6)
    assert.is_true(math.abs(loss - 5) < 1e-9)
    -- scalar bounds for every entry
    local q = tape.param(2, 0.3)
    local opt2 = cq.nlopt { algorithm = "mma", params = { q }, bounds = { [q] = { 0.25, 0.75 } }, maxeval = 100,
      objective = function() q.g[0], q.g[1] = 1, -1; return q.v[0] - q.v[1] end, xtol_rel = 1e-12 }
    local l2 = opt2:run()
    assert.is_true(math.abs(q.v[0] - 0.25) < 1e-9 and math.abs(q.v[1] - 0.75) < 1e-9 and math.abs(l2 + 0.5) < 1e-9)
  end)

  it("on_iteration sees every objective evaluation and can stop the run", function()
    local px, py, f = rosenbrock()
    local seen = {}
    local opt = cq.nlopt { algorithm = "lbfgs", params = { px, py }, objective = f, maxeval = 500,
      on_iteration = function(k, loss) seen[#seen + 1] = { k, loss }; return k == 7 end }
    local loss, result, evals = opt:run()
    assert.are.equal("FORCED_STOP", result)
    assert.are.equal(7, evals)
    assert.are.equal(7, #seen)
    for i = 1, 7 do assert.are.equal(i, seen[i][1]) end
    assert.is_true(loss <= seen[1][2]) -- the best point is at least as good as the start (24.2)
  end)
end)

-- A floating 8x4 block (32 particles, f64) with a horizontal pressure actuator (pressure max at u = 1); 10 open-loop
-- control steps from u = start. Loss: scale times the squared distance of the centroid of the right half to a target
-- shifted right by `shift`. Returns the control's parameter and the objective.
local function rollout_setup(shift, max, scale, start)
  local r = cq.robot { dim = 2 }
  local body = r:box { offset = { 0.4, 0.45 }, size = { 0.2, 0.1 }, count = { 8, 4 }, material = { E = 30, nu = 0.3 } }
  r:pressure_actuator { groups = { body }, axis = 1, max = max }
  local w, s0 = r:world { res = { 32, 32 }, dt = 2e-3, substeps = 2, gravity = { 0, 0 },
    walls = { all = { type = "slip" } } }
  local right = {}
  for p = 1, w.n do if s0:get("x", p)[1] > 0.5 then right[#right + 1] = p end end
  local c = s0:mean("x", right)
  local ctl = cq.open_loop { steps = 10, outputs = 1, init = start or 0 }
  local R = cq.rollout { world = w, steps = 10, controller = ctl,
    final = cq.objectives.distance_to_target({ c[1] + shift, c[2] }, right) }
  local u = ctl.params[1]
  return u, function(need_grad)
    local L = R:forward(s0)
    if need_grad then
      R:backward()
      if scale ~= 1 then for i = 0, u.n - 1 do u.g[i] = scale * u.g[i] end end
    end
    return scale * L
  end
end

describe("cq.nlopt through a rollout", function()
  local function setup(shift) return rollout_setup(shift, 10, 1) end

  for _, algo in ipairs { "lbfgs", "slsqp" } do
    it(algo .. " fits the actuation: the loss falls by more than 1e6 (reachable target) within 20 evaluations", function()
      local u, objective = setup(0.01)
      local L0 = objective(false)
      local opt = cq.nlopt { algorithm = algo, params = { u }, bounds = { [u] = { -1, 1 } },
        objective = objective, maxeval = 20 }
      local L, result, evals = opt:run()
      print(string.format("  %s: loss %.3e -> %.3e (factor %.1e), %s after %d evaluations", algo, L0, L, L0 / L,
        result, evals))
      assert.is_true(L < 1e-6 * L0)
      assert.are.equal(L, objective(false)) -- the params hold the point whose loss is returned
      for i = 0, u.n - 1 do assert.is_true(u.v[i] >= -1 and u.v[i] <= 1) end
    end)
  end

  it("lbfgs with an unreachable target ends on the bound u = -1 and reduces the loss more than 3x", function()
    local u, objective = setup(0.04)
    local L0 = objective(false)
    local opt = cq.nlopt { algorithm = "lbfgs", params = { u }, bounds = { [u] = { -1, 1 } },
      objective = objective, maxeval = 30 }
    local L, result, evals = opt:run()
    print(string.format("  lbfgs (bound active): loss %.3e -> %.3e (factor %.2f), %s after %d evaluations", L0, L,
      L0 / L, result, evals))
    assert.is_true(L < L0 / 3)
    for i = 0, u.n - 1 do assert.are.equal(-1, u.v[i]) end
  end)
end)

describe("cq.nlopt survives blow-ups", function()
  -- The rollout of "cq.nlopt through a rollout" with a pressure 100x higher (max 1000) and the loss in mm^2: L-BFGS's
  -- first trial step goes to the bound u = -1, where the block blows up (a particle moves more than a cell per
  -- substep); the block stays valid only for |u| below about 0.03.
  local function setup(start) return rollout_setup(0.01, 1000, 1e3, start) end
  local function run(opts, start)
    local u, objective = setup(start)
    local notes = {}
    local opt = cq.nlopt { algorithm = opts.algorithm or "lbfgs", params = { u }, bounds = { [u] = { -1, 1 } },
      objective = objective, maxeval = 40, recover = opts.recover,
      on_recover = function(eval, msg) notes[#notes + 1] = { eval, msg } end }
    return opt, notes, objective, u
  end

  it("an evaluation that blows up gives the optimizer +inf, which steps back: L-BFGS halves into the valid range " ..
    "and fits the actuation", function()
    local opt, notes, objective = run {}
    local L0 = objective(false)
    local L, result = opt:run()
    print(string.format("  lbfgs: loss %.3e -> %.3e (%s), %d recoveries; first: %s", L0, L, result, opt.recoveries,
      notes[1][2]:sub(1, 120)))
    assert.is_true(opt.recoveries >= 1 and opt.recoveries == #notes)
    assert.matches("^evaluation 2 failed numerically in objective %(.*blow%-up at step 1.*%); the optimizer got %+inf " ..
      "there and steps back %(1 in a row%)$", notes[1][2])
    assert.is_true(L < 1e-6 * L0)
    assert.are.equal(L, objective(false)) -- the params hold a valid point
    -- SLSQP too reduces the loss through its failed trial points
    local opt2, notes2, objective2 = run { algorithm = "slsqp" }
    local L2 = opt2:run()
    assert.is_true(#notes2 >= 1 and L2 < 1e-2 * objective2(false) + 1e-2 * L0)
  end)

  it("recover = false raises the first failure; more than recover.retries in a row or a failure at the first " ..
    "evaluation raise, naming why", function()
    local opt = run { recover = false }
    assert.matches("nlopt_spec%.lua:%d+: cq%.nlopt: error in objective %(evaluation 2%): .*blow%-up at step 1",
      select(2, pcall(opt.run, opt)))
    opt = run { recover = { retries = 2 } }
    assert.matches("error in objective %(evaluation 4%) %(3 numerical failures in a row: more than recover%.retries " ..
      "= 2%): .*blow%-up", select(2, pcall(opt.run, opt)))
    opt = run({}, 1) -- u = 1 everywhere: the first evaluation blows up
    assert.matches("error in objective %(evaluation 1%) %(a numerical failure before any evaluation succeeded%): " ..
      ".*blow%-up", select(2, pcall(opt.run, opt)))
    local u = tape.param(1, 0)
    assert.matches("recover%.retries must be an integer in %[0, 1000%] %(got 1%.5%)", select(2, pcall(cq.nlopt,
      { algorithm = "lbfgs", params = { u }, objective = function() return 0 end, recover = { retries = 1.5 } })))
    assert.matches("cq%.nlopt recover: unknown option 'shrink' %(known: retries%)", select(2, pcall(cq.nlopt,
      { algorithm = "lbfgs", params = { u }, objective = function() return 0 end, recover = { shrink = 0.5 } })))
  end)
end)

describe("cq.nlopt errors", function()
  local p = tape.param(2, 0)
  local function f() p.g[0], p.g[1] = 2 * p.v[0], 2 * p.v[1]; return p.v[0] ^ 2 + p.v[1] ^ 2 end
  local function err_of(fn)
    local ok, e = pcall(fn)
    assert.is_false(ok)
    return tostring(e)
  end

  it("name the option, the valid values and the value given, at the caller's line", function()
    local e = err_of(function() cq.nlopt { algorithm = "bfgs", params = { p }, objective = f } end)
    assert.matches("nlopt_spec%.lua:%d+: cq%.nlopt: algorithm must be one of lbfgs, slsqp, mma, ccsaq %(got \"bfgs\"%)", e)
    e = err_of(function() cq.nlopt { algorithm = "lbfgs", params = { p }, objective = f, maxeval = 0 } end)
    assert.matches("maxeval must be a positive integer %(got 0%)", e)
    e = err_of(function() cq.nlopt { algorithm = "lbfgs", params = { p }, objective = f, maxeval = 2.5 } end)
    assert.matches("maxeval must be a positive integer %(got 2%.5%)", e)
    e = err_of(function() cq.nlopt { algorithm = "lbfgs", params = { p }, objective = f, ftol_rel = -1 } end)
    assert.matches("ftol_rel must be >= 0 %(got %-1%)", e)
    e = err_of(function() cq.nlopt { algorithm = "lbfgs", params = { p }, objective = f, max_eval = 3 } end)
    assert.matches("unknown option 'max_eval'", e)
    e = err_of(function() cq.nlopt { algorithm = "lbfgs", params = {}, objective = f } end)
    assert.matches("params must be a non%-empty list", e)
    e = err_of(function() cq.nlopt { algorithm = "lbfgs", params = { p } } end)
    assert.matches("objective must be a function", e)
    e = err_of(function() cq.nlopt { algorithm = "lbfgs", params = { p }, objective = f,
      inequality = { { fn = f } } } end)
    assert.matches("algorithm \"lbfgs\" does not support inequality constraints %(use slsqp or mma or ccsaq%)", e)
    e = err_of(function() cq.nlopt { algorithm = "mma", params = { p }, objective = f,
      equality = { { fn = f } } } end)
    assert.matches("does not support equality constraints %(use slsqp%)", e)
    e = err_of(function() cq.nlopt { algorithm = "slsqp", params = { p }, objective = f,
      inequality = { { fn = f, tol = -1 } } } end)
    assert.matches("inequality%[1%]%.tol must be a number >= 0 %(got %-1%)", e)
    e = err_of(function() cq.nlopt { algorithm = "lbfgs", params = { p }, objective = f,
      bounds = { [p] = { 1, 0 } } } end)
    assert.matches("bounds entry 1 must be numbers lo <= hi %(got {1, 0}%)", e)
  end)

  it("an error inside the objective or a constraint stops nlopt and is re-raised with its message", function()
    local calls = 0
    local opt = cq.nlopt { algorithm = "lbfgs", params = { p }, maxeval = 50, objective = function()
      calls = calls + 1
      if calls == 3 then error("boom in the objective") end
      return f()
    end }
    p.v[0], p.v[1] = 1, 2
    local e = err_of(function() opt:run() end)
    assert.matches("nlopt_spec%.lua:%d+: cq%.nlopt: error in objective %(evaluation 3%):.*boom in the objective", e)
    assert.are.equal(3, calls) -- no evaluation after the error
    local opt2 = cq.nlopt { algorithm = "slsqp", params = { p }, objective = f, maxeval = 50,
      inequality = { { fn = function() return "not a number" end } } }
    e = err_of(function() opt2:run() end)
    assert.matches("error in inequality%[1%] %(evaluation %d+%): inequality%[1%] must return a number %(got \"not a number\"%)", e)
    -- the host is fine afterwards and the same optimizer runs again
    calls = 10
    p.v[0], p.v[1] = 1, 2
    local loss, result = opt:run()
    assert.is_true(loss < 1e-12)
    assert.is_truthy(({ SUCCESS = 1, FTOL_REACHED = 1, XTOL_REACHED = 1 })[result])
  end)
end)
