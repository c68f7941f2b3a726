-- Closed-loop differentiation through Lua: observer -> MLP controller -> actuation -> substeps, over 50 control
-- steps, checked against central finite differences in float64 (relative error <= 1e-5).
local cq = require "cq"
local tape = require "cq.tape"
local control = require "cq.control"
local rollout = require "cq.rollout"
local G = require "tests._grad"

describe("cq.tape", function()
  it("matches central differences for every op", function()
    local a = tape.param(3, function(i) return 0.3 * i - 0.5 end)
    local W = tape.param(6, function(i) return 0.1 * i * (-1) ^ i end, 2)
    local function f()
      local t = tape.new()
      local x = t:use(a)
      local y = t:matvec(W, t:tanh(x))
      local z = t:concat { t:relu(t:add(y, 0.05)), t:sigmoid(t:mul(y, y)), t:exp(t:scale(x, 0.2)) }
      local s = t:add(t:add(t:mean(z), t:norm(t:sub(x, 0.1))), t:add(t:dot(z, z), t:index(t:square(y), 2)))
      return t, s
    end
    local t, s = f()
    a:zero_grad(); W:zero_grad()
    t:backward(s, 1)
    local worst = 0
    for _, p in ipairs { a, W } do
      for i = 0, p.n - 1 do
        local g = p.g[i]
        local fd = G.derivative(function(h)
          p.v[i] = p.v[i] + h
          local _, v = f()
          p.v[i] = p.v[i] - h
          return v.v[0]
        end, 1e-4)
        worst = math.max(worst, math.abs(g - fd) / math.max(math.abs(fd), 1e-8))
      end
    end
    print(string.format("  tape ops: worst relative error %.2e", worst))
    assert.is_true(worst < 1e-8)
  end)
end)

describe("closed-loop MLP controller", function()
  it("gradients w.r.t. the MLP weights and the initial state match central differences (50 steps x 2 substeps)", function()
    local w, s0 = G.scene { dim = 2, material = "neohookean", bc = "friction", substeps = 2, dt = 4e-3 }
    local n = w.n
    local left, right = {}, {}
    for p = 1, n do
      if s0:get("x", p)[1] < 0.3 then left[#left + 1] = p else right[#right + 1] = p end
    end
    local obs = control.centroid_observer { groups = { left, right }, fields = { "x", "v" } }
    local ctl = control.mlp { inputs = obs.size(2), outputs = 2, hidden = { 8, 8 }, activation = "tanh", seed = 3,
      scale = 3 }
    local R = rollout.new { world = w, steps = 50, controller = ctl, observer = obs,
      final = function(t, s) return t:add(t:index(t:centroid(s, "x"), 1), t:scale(t:index(t:centroid(s, "v", right), 2), 0.3)) end,
      running = function(t, _, u) return t:scale(t:dot(u, u), 0.01) end }
    local L = R:forward(s0)
    R:backward()
    local d, analytic = G.param_direction(ctl.params, 7)
    local fd = G.fd_params(ctl.params, d, function() return R:forward(s0) end, 1e-4)
    local rel = math.abs(analytic - fd) / math.abs(fd)
    -- initial velocity through the whole closed loop
    R:forward(s0); local m = R:backward()
    local gv0 = 0
    for i = 0, 2 * n - 1 do gv0 = gv0 + m.grad.v[i] * G.prand(i, 9) end
    local fdv = G.derivative(function(h)
      local s = s0:copy()
      for i = 0, 2 * n - 1 do s.v[i] = s.v[i] + h * G.prand(i, 9) end
      return R:forward(s)
    end, 1e-5)
    local relv = math.abs(gv0 - fdv) / math.abs(fdv)
    print(string.format("  loss %.6f; dL/dweights . d = %.10g (fd %.10g, rel %.1e); dL/dv0 . d = %.10g (fd %.10g, rel %.1e)",
      L, analytic, fd, rel, gv0, fdv, relv))
    assert.is_true(rel <= 1e-5 and relv <= 1e-5)
  end)
end)

describe("open-loop controller with knots", function()
  it("ramps linearly between knots from a fixed start, and its gradient matches central differences", function()
    local w, s0 = G.scene { dim = 2, material = "neohookean", bc = "friction", substeps = 2, dt = 4e-3 }
    -- 10 control steps, a knot every 4: knots at steps 0 (fixed to 0.1, 0.2), 4, 8 and 12 (3 trainable, 2 outputs)
    local ctl = control.open_loop { steps = 10, outputs = 2, every = 4, shape = "linear", start = { 0.1, 0.2 },
      init = function(i) return 0.3 * math.sin(i) end }
    local u = ctl.params[1]
    assert.are.equal(6, u.n)
    -- step 6 lies halfway between knot 1 (step 4: u[0], u[1]) and knot 2 (step 8: u[2], u[3]); step 2 halfway from start
    assert.is_true(math.abs(ctl:value(6, 2) - 0.5 * (u.v[1] + u.v[3])) < 1e-15)
    assert.is_true(math.abs(ctl:value(2, 1) - 0.5 * (0.1 + u.v[0])) < 1e-15)
    assert.are.equal(0.2, ctl:value(0, 2))
    local hold = control.open_loop { steps = 10, outputs = 1, every = 4 }
    assert.are.equal(3, hold.params[1].n) -- one per segment of 4 steps (the last one 2 long)
    -- linear, a knot per step: the last step is knot 3, no knot beyond it (it would get no gradient)
    assert.are.equal(4, control.open_loop { steps = 4, outputs = 1, shape = "linear" }.params[1].n)
    assert.are.equal(1, control.open_loop { steps = 3, outputs = 1, every = 5 }.params[1].n) -- every > steps
    local R = rollout.new { world = w, steps = 10, controller = ctl,
      final = function(t, s) return t:index(t:centroid(s, "x"), 1) end,
      running = function(t, _, a) return t:scale(t:dot(a, a), 0.01) end }
    local analytic, fd, rel = G.rollout_params(R, s0, ctl.params, 5, 1e-4)
    print(string.format("  dL/dknots . d = %.10g (fd %.10g, rel %.1e)", analytic, fd, rel))
    assert.is_true(math.abs(analytic) > 1e-6 and rel <= 1e-6)
  end)

  it("refuses a start without the linear shape, a bad shape, lists of the wrong length and steps out of range",
    function()
    local function fails(f, ...)
      local ok, err = pcall(f, ...)
      assert.is_false(ok)
      return tostring(err)
    end
    local err = fails(control.open_loop, { steps = 4, outputs = 1, start = 0 })
    assert.is_truthy(err:find('start needs shape = "linear"', 1, true) and err:find("hold", 1, true))
    err = fails(control.open_loop, { steps = 4, outputs = 1, shape = "cubic" })
    assert.is_truthy(err:find("shape", 1, true) and err:find("cubic", 1, true))
    err = fails(control.open_loop, { steps = 4, outputs = 3, shape = "linear", start = { 0, 0 } })
    assert.is_truthy(err:find("list of outputs = 3 numbers (got a list of 2)", 1, true))
    err = fails(control.open_loop, { steps = 8, outputs = 1, every = 4, init = { 1, 2, 3 } })
    assert.is_truthy(err:find("list of 2 numbers (2 trainable knots x 1 outputs; got a list of 3)", 1, true))
    local ctl = control.open_loop { steps = 4, outputs = 2, every = 2 }
    assert.is_truthy(fails(ctl.value, ctl, 4, 1):find("control step k must be in [0, 3]", 1, true))
    assert.is_truthy(fails(ctl.value, ctl, 1.5, 1):find("control step k must be in [0, 3]", 1, true))
    assert.is_truthy(fails(ctl.value, ctl, 0, 3):find("value's output must be in [1, 2]", 1, true))
  end)
end)

describe("co-design gradients through the closed loop", function()
  local function setup()
    local w, s0 = G.scene { dim = 2, material = "corotated", bc = "friction", substeps = 2, dt = 4e-3 }
    local obs = control.centroid_observer { groups = { (function() local a = {} for p = 1, w.n do a[p] = p end return a end)() } }
    local ctl = control.mlp { inputs = obs.size(2), outputs = 2, hidden = { 6 }, activation = "tanh", seed = 5, scale = 3 }
    local R = rollout.new { world = w, steps = 50, controller = ctl, observer = obs,
      final = function(t, s) return t:index(t:centroid(s, "x"), 1) end }
    return w, s0, R
  end

  it("per-particle Young's modulus", function()
    local w, s0, R = setup()
    R:forward(s0)
    local m = R:backward()
    local an, base = 0, {}
    for p = 0, w.n - 1 do base[p] = w.params.E[p]; an = an + m.grad_params.E[p] * G.prand(p, 11) * base[p] end
    local fd = G.derivative(function(h)
      w:fill("E", function(p) return base[p - 1] * (1 + h * G.prand(p - 1, 11)) end)
      local L = R:forward(s0)
      w:fill("E", function(p) return base[p - 1] end)
      return L
    end, 1e-5)
    local rel = math.abs(an - fd) / math.abs(fd)
    print(string.format("  dL/dE . d = %.10g (fd %.10g, rel %.1e)", an, fd, rel))
    assert.is_true(rel <= 1e-5)
  end)

  it("a geometric parameter: the scale of the rest shape about its centroid", function()
    local w, s0, R = setup()
    local c = s0:mean("x")
    local function scaled(s)
      local st = s0:copy()
      for p = 1, w.n do
        local x = s0:get("x", p)
        st:set("x", p, { c[1] + s * (x[1] - c[1]), c[2] + s * (x[2] - c[2]) })
      end
      return st
    end
    R:forward(scaled(1))
    local m = R:backward()
    local an = 0 -- dL/ds = sum_p dL/dx_p . (x_p - c)
    for p = 1, w.n do
      local x = s0:get("x", p)
      for a = 1, 2 do an = an + m.grad.x[(a - 1) * w.n + p - 1] * (x[a] - c[a]) end
    end
    local fd = G.derivative(function(h) return R:forward(scaled(1 + h)) end, 1e-5)
    local rel = math.abs(an - fd) / math.abs(fd)
    print(string.format("  dL/dscale = %.10g (fd %.10g, rel %.1e)", an, fd, rel))
    assert.is_true(rel <= 1e-5)
  end)
end)
