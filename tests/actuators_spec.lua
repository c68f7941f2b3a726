-- Cable actuators (seed 000 eq. 17) and actuators written in Lua: physics and gradients vs central differences.
local cq = require "cq"
local ffi = require "ffi"
local G = require "tests._grad"

-- A vertical 2D finger (8 x 32 particles) on a sticky floor, with a cable along its left and right edges.
local function finger(opts)
  local r = cq.robot { dim = 2 }
  local dx = 1 / 64
  local g = r:box { offset = { 0.45, 3 * dx }, size = { 4 * dx, 16 * dx }, count = { 8, 32 },
    material = { model = opts.model or "neohookean", E = 30, nu = 0.3, density = 1 } }
  local left, right = {}, {}
  for j = 0, 31 do left[#left + 1] = g.first + j; right[#right + 1] = g.first + 7 * 32 + j end
  if opts.cables ~= false then
    r:cable_actuator { particles = left, k = opts.k or 5 }
    r:cable_actuator { particles = right, k = opts.k or 5 }
  end
  local w, s = r:world { res = { 64, 64 }, dx = dx, dt = 2e-3, substeps = 2, gravity = { 0, -1 }, threads = 2,
    precision = "f64", walls = { floor = { type = "sticky", thickness = 3 } } }
  local tip = {}
  for i = 0, 7 do tip[#tip + 1] = g.first + i * 32 + 31 end
  return w, s, tip, left, right
end

describe("cable actuator", function()
  it("is slack at u = 1 and bends the finger toward the pulled side at u = 0", function()
    local w, s = finger {}
    local n = w.n
    local tipx = function(st) local c = 0 for i = 0, 7 do c = c + st.x[i * 32 + 31] end return c / 8 end -- x of the top row
    local a, b = s:copy(), s:copy()
    for _ = 1, 60 do w:step(a, { 1, 1 }); w:step(b, { 0, 1 }) end
    local xa, xb = tipx(a), tipx(b)
    print(string.format("  tip x: both cables slack %.5f, left cable pulled %.5f (start %.5f)", xa, xb, tipx(s)))
    assert.is_true(math.abs(xa - tipx(s)) < 1e-3) -- slack cables exert nothing: only gravity sag
    assert.is_true(xb < xa - 0.01)                 -- pulling the left cable bends the finger left
    assert.are.equal(n, w.n)
  end)

  it("gradients of the tip position w.r.t. an open-loop cable actuation sequence match central differences", function()
    local w, s0, tip = finger {}
    local ctl = cq.open_loop { steps = 40, outputs = 2, init = 0.6 }
    for i = 0, ctl.params[1].n - 1 do ctl.params[1].v[i] = 0.5 + 0.3 * G.prand(i, 3) end
    local R = cq.rollout { world = w, steps = 40, controller = ctl,
      final = function(t, s) local c = t:centroid(s, "x", tip) return t:add(t:index(c, 1), t:scale(t:index(c, 2), 0.5)) end }
    local an, fd, rel = G.rollout_params(R, s0, ctl.params, 4, 1e-5)
    print(string.format("  cable: dL/du . d = %.10g (fd %.10g, rel %.1e)", an, fd, rel))
    assert.is_true(rel <= 1e-5)
  end)
end)

describe("actuator written in Lua (seed 000 Listing 3)", function()
  it("state-dependent particle forces are differentiated through the tape", function()
    local w, s0, tip = finger { cables = false }
    local n = w.n
    -- pulls the top third of the finger toward a point, with strength u1 (1 + u2 * height)
    local top = {}
    for p = 1, n do if s0:get("x", p)[2] > 0.2 then top[#top + 1] = p end end
    local actuator = function(t, s, u, k)
      local f = t:const(2 * n)
      local dirs = {}
      for _, p in ipairs(top) do
        local x = s:get("x", p)
        local m = 20 * w.params.mass[p - 1] -- force per unit actuation: an acceleration of about 20 * distance
        dirs[#dirs + 1] = { p, m * (0.3 - x[1]), m * (0.35 - x[2]), m }
      end
      local u1, u2 = u.v[0], u.v[1]
      for _, d in ipairs(dirs) do
        local p = d[1]
        f.v[p - 1] = u1 * (1 + u2) * d[2]
        f.v[n + p - 1] = u1 * (1 + u2) * d[3]
      end
      f.back = function(f, sink)
        for _, d in ipairs(dirs) do
          local p = d[1]
          local gx, gy = f.g[p - 1], f.g[n + p - 1]
          u.g[0] = u.g[0] + (1 + u2) * (gx * d[2] + gy * d[3])
          u.g[1] = u.g[1] + u1 * (gx * d[2] + gy * d[3])
          sink.x[p - 1] = sink.x[p - 1] - u1 * (1 + u2) * d[4] * gx -- d(m (0.3 - x))/dx = -m
          sink.x[n + p - 1] = sink.x[n + p - 1] - u1 * (1 + u2) * d[4] * gy
        end
      end
      return f
    end
    -- a world with 2 (unused) engine actuators carries the controller's 2 outputs to the Lua actuator
    local r = cq.robot { dim = 2 }
    local obs = cq.centroid_observer { groups = { tip }, fields = { "x", "v" } }
    local ctl = cq.mlp { inputs = 4, outputs = 2, hidden = { 6 }, activation = "tanh", seed = 2, scale = 2 }
    local w2 = cq.world { dim = 2, res = { 64, 64 }, dx = 1 / 64, dt = 2e-3, substeps = 2, gravity = { 0, -1 }, n = n,
      n_actuators = 2, precision = "f64", threads = 2, walls = { floor = { type = "sticky", thickness = 3 } } }
    for _, name in ipairs { "mass", "vol0", "E", "nu", "material" } do w2:fill(name, w.params[name]) end
    w2:commit()
    local R = cq.rollout { world = w2, steps = 40, controller = ctl, observer = obs, actuator = actuator,
      final = function(t, s) return t:index(t:centroid(s, "x", tip), 1) end }
    local s2 = w2:state()
    s2:copy_from(s0)
    local L = R:forward(s2)
    R:backward()
    local d, an = G.param_direction(ctl.params, 5)
    local fd = G.fd_params(ctl.params, d, function() return R:forward(s2) end, 1e-5)
    local rel = math.abs(an - fd) / math.abs(fd)
    print(string.format("  Lua actuator: tip x %.5f; dL/dweights . d = %.10g (fd %.10g, rel %.1e)", L, an, fd, rel))
    assert.is_true(rel <= 1e-5)
  end)
end)

describe("stress actuator written in Lua (seed 000 Listing 3: a dim x dim tensor per particle)", function()
  local D = 2
  -- A copy of the finger's world with `actuators` engine actuators (none assigned: the controller's outputs only
  -- reach the Lua actuator) or, with `pressure`, actuator 1 a built-in stress actuator on the particles `pressure`.
  local function copy_world(w, actuators, pressure, axis)
    -- backend "cpu": the checks below compare runs bit for bit, which the GPU's atomic sums do not repeat
    local w2 = cq.world { dim = 2, res = { 64, 64 }, dx = 1 / 64, dt = 2e-3, substeps = 2, gravity = { 0, -1 },
      n = w.n, n_actuators = actuators, precision = "f64", threads = 2, backend = "cpu",
      walls = { floor = { type = "sticky", thickness = 3 } } }
    for _, name in ipairs { "mass", "vol0", "E", "nu", "material" } do w2:fill(name, w.params[name]) end
    if pressure then
      w2:set_actuator(1, "stress")
      for _, p in ipairs(pressure) do
        w2:fill("act_id", 0, p, p)
        w2:fill("act_axis", axis, p, p)
      end
    end
    return w2:commit()
  end

  -- The actuated particles: the upper right half of the finger.
  local function upper_right(s0, n)
    local idx = {}
    for p = 1, n do
      local x = s0:get("x", p)
      if x[1] > 0.45 + 2 / 64 and x[2] > 0.15 then idx[#idx + 1] = p end
    end
    return idx
  end

  -- A_p = c (u1 M1 + u2 h_p M2) on the particles idx, zero elsewhere; h_p = (y_p - 0.05) / 0.25 depends on the state.
  -- M1, M2 are not symmetric, so the adjoint's use of A and A^T is checked too.
  local M1, M2, c = { { 0.3, 0.2 }, { -0.1, 1.0 } }, { { -0.4, 0.0 }, { 0.25, 0.5 } }, 8
  local function stress_actuator(n, idx)
    return function(t, s, u, k)
      local A = t:const(D * D * n)
      local u1, u2 = u.v[0], u.v[1]
      local h = {}
      for q, p in ipairs(idx) do
        h[q] = (s.x[n + p - 1] - 0.05) / 0.25
        for i = 0, D - 1 do
          for j = 0, D - 1 do A.v[(i * D + j) * n + p - 1] = c * (u1 * M1[i + 1][j + 1] + u2 * h[q] * M2[i + 1][j + 1]) end
        end
      end
      A.back = function(A, sink)
        for q, p in ipairs(idx) do
          local d1, d2 = 0, 0
          for i = 0, D - 1 do
            for j = 0, D - 1 do
              local g = A.g[(i * D + j) * n + p - 1]
              d1, d2 = d1 + g * M1[i + 1][j + 1], d2 + g * M2[i + 1][j + 1]
            end
          end
          u.g[0] = u.g[0] + c * d1
          u.g[1] = u.g[1] + c * h[q] * d2
          sink.x[n + p - 1] = sink.x[n + p - 1] + c * u2 * d2 / 0.25
        end
      end
      return A
    end
  end

  local function rel_err(a, b) return math.abs(a - b) / math.max(math.abs(a), math.abs(b), 1e-300) end

  -- dL/dv0 along a fixed direction: analytic (from memo.grad after backward) and central differences.
  local function check_v0(R, s0, salt)
    local n, an = s0.n, 0
    for i = 0, D * n - 1 do an = an + R.memo.grad.v[i] * G.prand(i, salt) end
    local fd = G.derivative(function(h)
      local s = s0:copy()
      for i = 0, D * n - 1 do s.v[i] = s.v[i] + h * G.prand(i, salt) end
      return R:forward(s)
    end, 1e-5)
    return an, fd, rel_err(an, fd)
  end

  it("closed loop: gradients w.r.t. controller weights and initial velocity match central differences", function()
    local w, s0, tip = finger { cables = false }
    local n = w.n
    local idx = upper_right(s0, n)
    local w2 = copy_world(w, 2)
    local s2 = w2:state()
    s2:copy_from(s0)
    local obs = cq.centroid_observer { groups = { tip }, fields = { "x", "v" } }
    local ctl = cq.mlp { inputs = 4, outputs = 2, hidden = { 6 }, activation = "tanh", seed = 3, scale = 2 }
    local R = cq.rollout { world = w2, steps = 40, controller = ctl, observer = obs,
      actuator = stress_actuator(n, idx), checkpoint_every = 1,
      final = function(t, s) local ce = t:centroid(s, "x", tip) return t:add(t:index(ce, 1), t:scale(t:index(ce, 2), 0.3)) end }
    local L = R:forward(s2)
    -- the stress acts: the tip ends elsewhere than with the actuator switched off
    local R0 = cq.rollout { world = w2, steps = 40, controller = ctl, observer = obs,
      actuator = function(t) return t:const(D * D * n) end, final = R.final }
    local L0 = R0:forward(s2)
    R:forward(s2)
    R:backward()
    local d, an = G.param_direction(ctl.params, 7)
    local fd = G.fd_params(ctl.params, d, function() return R:forward(s2) end, 1e-5)
    local rel = rel_err(an, fd)
    print(string.format("  Lua stress: loss %.6f (actuator off %.6f), %d particles actuated; dL/dweights . d = %.10g " ..
      "(fd %.10g, rel %.1e)", L, L0, #idx, an, fd, rel))
    assert.is_true(math.abs(L - L0) > 1e-3)
    assert.is_true(rel <= 1e-5)
    R:forward(s2)
    R:backward()
    local av, fv, rv = check_v0(R, s2, 71)
    print(string.format("  Lua stress: dL/dv0 . d = %.10g (fd %.10g, rel %.1e)", av, fv, rv))
    assert.is_true(rv <= 1e-5)
  end)

  it("open loop: gradients w.r.t. the actuation sequence; checkpointed gradients equal full-memory ones", function()
    local w, s0, tip = finger { cables = false }
    local n = w.n
    local idx = upper_right(s0, n)
    local w2 = copy_world(w, 2)
    local s2 = w2:state()
    s2:copy_from(s0)
    local function run(ck)
      local ctl = cq.open_loop { steps = 40, outputs = 2, init = 0.5 }
      for i = 0, ctl.params[1].n - 1 do ctl.params[1].v[i] = 0.5 + 0.4 * G.prand(i, 8) end
      local R = cq.rollout { world = w2, steps = 40, controller = ctl, actuator = stress_actuator(n, idx),
        checkpoint_every = ck, final = function(t, s) return t:index(t:centroid(s, "x", tip), 1) end }
      R:forward(s2)
      R:backward()
      local g = { u = {}, v = {} }
      for i = 0, ctl.params[1].n - 1 do g.u[i] = ctl.params[1].g[i] end
      for i = 0, D * n - 1 do g.v[i] = R.memo.grad.v[i] end
      return R, ctl, g
    end
    local R, ctl, full = run(1)
    local d, an = G.param_direction(ctl.params, 9)
    local fd = G.fd_params(ctl.params, d, function() return R:forward(s2) end, 1e-5)
    local rel = rel_err(an, fd)
    print(string.format("  Lua stress, open loop: dL/du . d = %.10g (fd %.10g, rel %.1e)", an, fd, rel))
    assert.is_true(rel <= 1e-5)
    local Rc, _, ck = run(7) -- 80 substeps in segments of 7: segments straddle control steps
    assert.is_true(Rc.memo:stored_states() < 80)
    local worst = 0
    for _, f in ipairs { "u", "v" } do
      for i, x in pairs(full[f]) do worst = math.max(worst, math.abs(x - ck[f][i]) / math.max(math.abs(x), 1e-12)) end
    end
    print(string.format("  Lua stress: checkpoint_every = 7 (%d stored states) vs 1: max rel diff of dL/du, dL/dv0 %.1e",
      Rc.memo:stored_states(), worst))
    assert.is_true(worst <= 1e-12)
  end)

  it("a user stress equal to a built-in pressure actuator's gives the same trajectory and gradients", function()
    local w, s0, tip = finger { cables = false }
    local n = w.n
    local idx = upper_right(s0, n)
    local axis = { 3, 10 } -- material-space stress per unit actuation (E = 30)
    -- the built-in actuator's blocks would run as SIMD lanes (engine/backends/cpu/cpu_loops.h), whose logarithm may differ from the
    -- scalar one in the last bit; with the lanes off both worlds run the same formulas, so they must agree bit for bit
    local wb, wu = G.with_env("CQ_SIMD", "0", function() return copy_world(w, 1, idx, axis), copy_world(w, 1) end)
    local sb, su = wb:state(), wu:state()
    sb:copy_from(s0)
    su:copy_from(s0)
    local final = function(t, s) local ce = t:centroid(s, "x", tip) return t:add(t:index(ce, 1), t:index(ce, 2)) end
    local function make(world, actuator)
      local ctl = cq.open_loop { steps = 40, outputs = 1, init = 0 }
      for i = 0, ctl.params[1].n - 1 do ctl.params[1].v[i] = 0.8 * G.prand(i, 11) end
      return cq.rollout { world = world, steps = 40, controller = ctl, actuator = actuator, final = final,
        checkpoint_every = 1 }, ctl
    end
    local Rb, cb = make(wb, nil)
    local Ru, cu = make(wu, function(t, s, u, k)
      local A = t:const(D * D * n)
      for _, p in ipairs(idx) do
        for a = 0, D - 1 do A.v[(a * D + a) * n + p - 1] = u.v[0] * axis[a + 1] end
      end
      A.back = function(A)
        for _, p in ipairs(idx) do
          for a = 0, D - 1 do u.g[0] = u.g[0] + axis[a + 1] * A.g[(a * D + a) * n + p - 1] end
        end
      end
      return A
    end)
    local Lb, Lu = Rb:forward(sb), Ru:forward(su)
    -- the same control steps with world:step: built-in actuation u vs. the stress diag(u axis) (cq_step_ext)
    local xb, xu, xo, A = sb:copy(), su:copy(), sb:copy(), ffi.new("double[?]", D * D * n)
    local dx, moved = 0, 0
    for k = 0, 39 do
      local uk = cb.params[1].v[k]
      for _, p in ipairs(idx) do for a = 0, D - 1 do A[(a * D + a) * n + p - 1] = uk * axis[a + 1] end end
      wb:step(xb, { uk })
      wu:step(xu, { 0 }, nil, A)
      wb:step(xo, { 0 }) -- unactuated
      for i = 0, D * n - 1 do
        dx = math.max(dx, math.abs(xb.x[i] - xu.x[i]), math.abs(xb.v[i] - xu.v[i]))
        moved = math.max(moved, math.abs(xb.x[i] - xo.x[i]))
      end
    end
    Rb:backward()
    Ru:backward()
    local dg, gmax = 0, 0
    for i = 0, cb.params[1].n - 1 do
      dg = math.max(dg, math.abs(cb.params[1].g[i] - cu.params[1].g[i]))
      gmax = math.max(gmax, math.abs(cb.params[1].g[i]))
    end
    print(string.format("  built-in pressure vs Lua stress: loss %.12f / %.12f, max |x, v diff| over 40 steps %.1e " ..
      "(world:step; the actuation moves particles by up to %.4f); max |dL/du diff| %.1e (max |dL/du| %.2e)", Lb, Lu, dx, moved, dg, gmax))
    assert.is_true(moved > 1e-3)
    assert.are.equal(Lb, Lu)
    assert.are.equal(0, dx)
    assert.is_true(dg <= 1e-12 * gmax)
  end)

  it("engine: dL/dA from cq_memo_grad_stress matches central differences in 2D and 3D", function()
    for _, dim in ipairs { 2, 3 } do
      local w, s0 = G.scene { dim = dim, bc = "sticky" }
      local n, len, steps = w.n, dim * dim * w.n, 6
      local memo = w:memo { steps = steps, checkpoint_every = 4 }
      local A = {}
      for k = 1, steps do
        A[k] = ffi.new("double[?]", len)
        for i = 0, len - 1 do A[k][i] = (i % n) % 2 == 0 and 6 * G.prand(i + 1000 * k, 80) or 0 end
      end
      local function loss(t, dir)
        memo:begin(s0)
        local tmp = ffi.new("double[?]", len)
        for k = 1, steps do
          for i = 0, len - 1 do tmp[i] = A[k][i] + t * dir(k, i) end
          memo:step({ 0.3, -0.2 }, nil, tmp)
        end
        local L = 0
        for i = 0, n * dim - 1 do L = L + G.prand(i, 81) * memo.state.x[i] + G.prand(i, 82) * memo.state.v[i] end
        return L
      end
      local dir = function(k, i) return (i % n) % 2 == 0 and G.prand(i + 1000 * k, 83) or 0 end
      loss(0, dir)
      local an = 0
      memo:backward(function(k, m)
        if k == steps then
          for i = 0, n * dim - 1 do m.grad.x[i] = m.grad.x[i] + G.prand(i, 81); m.grad.v[i] = m.grad.v[i] + G.prand(i, 82) end
        else -- grad_stress is dL/dA of control step k + 1 (1-based)
          for i = 0, len - 1 do an = an + m.grad_stress[i] * dir(k + 1, i) end
        end
      end)
      local best
      for _, h in ipairs(G.steps) do
        local fd = G.derivative(function(t) return loss(t, dir) end, h)
        local rel = rel_err(an, fd)
        if not best or rel < best[2] then best = { fd, rel, h } end
        if rel <= 1e-6 then break end
      end
      print(string.format("  engine %dD: dL/dA . d = %.10g (fd %.10g, rel %.1e, h %g)", dim, an, best[1], best[2], best[3]))
      assert.is_true(best[2] <= 1e-5)
    end
  end)

  it("a wrong size from the Lua actuator, or a non-finite stress, is a clear error", function()
    local w, s0, tip = finger { cables = false }
    local n = w.n
    local w2 = copy_world(w, 1)
    local s2 = w2:state()
    s2:copy_from(s0)
    local R = cq.rollout { world = w2, steps = 2, controller = cq.open_loop { steps = 2, outputs = 1 },
      actuator = function(t) return t:const(3 * n) end, final = function(t, s) return t:index(t:centroid(s, "x", tip), 1) end }
    local ok, err = pcall(R.forward, R, s2)
    print("  " .. tostring(err))
    assert.is_false(ok)
    assert.is_truthy(err:find(string.format("gives %d values, expected dim * n = %d (forces) or dim * dim * n = %d " ..
      "(stress tensors)", 3 * n, 2 * n, 4 * n), 1, true))
    local bad = ffi.new("double[?]", 4 * n)
    bad[2 * n + 5] = 0 / 0
    ok, err = pcall(w2.step, w2, s2, { 0 }, nil, bad)
    print("  " .. tostring(err))
    assert.is_false(ok)
    assert.is_truthy(err:find("step 1: stress of particle 6, entry (2, 1) is not finite", 1, true))
  end)
end)
