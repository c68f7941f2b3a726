-- ChainQueen (seed 002, Table III) accuracy cases: A1 and A2 against analytic gradients, B (billiards) and
-- C (finger controller) against central differences in float64.
local cq = require "cq"
local G = require "tests._grad"

-- Two cubes of side^3 particles (2 per cell), A moving toward B; no gravity.
local function cubes(opts)
  local side, res, dx = 4, 32, 1 / 32
  local n = 2 * side ^ 3
  local walls = opts.wall and { right = { type = "slip", thickness = 3 } } or nil
  local w = cq.world { dim = 3, res = { res, res, res }, dx = dx, dt = opts.dt, n = n, precision = opts.precision,
    threads = 2, walls = walls }
  w:fill("E", 100); w:fill("nu", 0.3); w:fill("mass", (dx / 2) ^ 3); w:fill("vol0", (dx / 2) ^ 3)
  w:commit()
  local s, p = w:state(), 0
  for c = 1, 2 do
    local o = c == 1 and opts.a or opts.b
    for i = 0, side - 1 do for j = 0, side - 1 do for k = 0, side - 1 do
      p = p + 1
      s:set("x", p, { o[1] + (i + 0.5) * dx / 2, o[2] + (j + 0.5) * dx / 2, o[3] + (k + 0.5) * dx / 2 })
      if c == 1 then s:set("v", p, opts.va) end
    end end end
  end
  return w, s, side ^ 3
end

-- Mean of axis `axis` over all particles after T steps, and its gradient w.r.t. cube A's initial velocity along
-- the same axis (sum over A's particles); analytic value T dt nA / n by momentum conservation along that axis.
local function mean_grad(w, s, nA, T, axis)
  local memo = w:memo { steps = T }
  memo:begin(s)
  for _ = 1, T do memo:step() end
  local n = w.n
  memo:backward(function(k, m)
    if k == T then for p = 0, n - 1 do m.grad.x[(axis - 1) * n + p] = 1 / n end end
  end)
  local g = 0
  for p = 0, nA - 1 do g = g + memo.grad.v[(axis - 1) * n + p] end
  local analytic = T * w.dt * nA / n
  return g, analytic, math.abs(g - analytic) / analytic, memo
end

describe("A1 (3D, colliding cubes): final mean position w.r.t. initial velocity", function()
  it("float64, 100 steps: matches the analytic gradient", function()
    local w, s, nA = cubes { precision = "f64", dt = 5e-4, a = { 0.3, 0.45, 0.45 }, b = { 0.375, 0.45, 0.45 },
      va = { 1.0, 0, 0 } }
    local g, a, rel, memo = mean_grad(w, s, nA, 100, 1)
    local sb = memo.state:mean("v", { w.n })
    print(string.format("  A1 f64 100 steps: gradient %.15g analytic %.15g rel. error %.2e (B moving at %.3f)", g, a,
      rel, sb[1]))
    assert.is_true(sb[1] > 0.05) -- the cubes did collide
    assert.is_true(rel <= 1e-10)
  end)
  it("float32, 1000 steps: relative error <= 1.5e-5 (ChainQueen: 1.43e-5)", function()
    local w, s, nA = cubes { precision = "f32", dt = 5e-4, a = { 0.3, 0.45, 0.45 }, b = { 0.375, 0.45, 0.45 },
      va = { 0.3, 0, 0 } }
    local g, a, rel = mean_grad(w, s, nA, 1000, 1)
    print(string.format("  A1 f32 1000 steps: gradient %.9g analytic %.9g rel. error %.2e", g, a, rel))
    assert.is_true(rel <= 1.5e-5)
  end)
end)

describe("A2 (A1 with a frictionless wall)", function()
  it("tangential gradient is analytic in float64 and float32 after the cubes hit the wall", function()
    for _, prec in ipairs { "f64", "f32" } do
      local w, s, nA = cubes { precision = prec, dt = 5e-4, wall = true, a = { 0.70, 0.45, 0.45 },
        b = { 0.78, 0.45, 0.45 }, va = { 0.5, 0.1, 0 } }
      local T = prec == "f64" and 400 or 1000
      local g, a, rel, memo = mean_grad(w, s, nA, T, 2)
      local vx = memo.state:mean("v")[1]
      print(string.format("  A2 %s %d steps: gradient %.12g analytic %.12g rel. error %.2e (mean vx after wall %.3f)",
        prec, T, g, a, rel, vx))
      assert.is_true(vx < 0.2) -- the wall took x momentum out
      assert.is_true(rel <= (prec == "f64" and 1e-10 or 3e-5))
    end
  end)
end)

describe("B (2D colliding billiards)", function()
  it("gradient of B's final position w.r.t. A's initial velocity and density matches central differences", function()
    local dx, r = 1 / 64, 0.05
    local pts, ball = {}, {}
    for c, o in ipairs { { 0.3, 0.5 }, { 0.42, 0.52 } } do
      for i = -8, 8 do for j = -8, 8 do
        local x, y = (i + 0.5) * dx / 2, (j + 0.5) * dx / 2
        if x * x + y * y <= r * r then pts[#pts + 1] = { o[1] + x, o[2] + y }; ball[#ball + 1] = c end
      end end
    end
    local n = #pts
    local w = cq.world { dim = 2, res = { 64, 64 }, dx = dx, dt = 1e-3, n = n, precision = "f64", threads = 2 }
    w:fill("E", 50); w:fill("nu", 0.3); w:fill("mass", (dx / 2) ^ 2); w:fill("vol0", (dx / 2) ^ 2)
    w:commit()
    local T, target = 150, { 0.6, 0.55 }
    local memo = w:memo { steps = T }
    local function run(vx, dens)
      local s = w:state()
      for p = 1, n do
        s:set("x", p, pts[p])
        if ball[p] == 1 then s:set("v", p, { vx, 0.05 }); w:fill("mass", dens * (dx / 2) ^ 2, p, p) end
      end
      memo:begin(s)
      for _ = 1, T do memo:step() end
      local L, nb = 0, 0
      for p = 1, n do if ball[p] == 2 then nb = nb + 1 end end
      local c = { 0, 0 }
      for p = 1, n do if ball[p] == 2 then local x = memo.state:get("x", p); c[1] = c[1] + x[1] / nb; c[2] = c[2] + x[2] / nb end end
      for a = 1, 2 do L = L + (c[a] - target[a]) ^ 2 end
      return L, c, nb
    end
    local L, c, nb = run(1.0, 1.5)
    memo:backward(function(k, m)
      if k == T then
        for p = 1, n do if ball[p] == 2 then
          for a = 1, 2 do m.grad.x[(a - 1) * n + p - 1] = 2 * (c[a] - target[a]) / nb end
        end end
      end
    end)
    local gv, gd = 0, 0
    for p = 1, n do if ball[p] == 1 then
      gv = gv + memo.grad.v[p - 1]
      gd = gd + memo.grad_params.mass[p - 1] * (dx / 2) ^ 2
    end end
    local fv = G.derivative(function(t) return (run(1.0 + t, 1.5)) end, 1e-5)
    local fdd = G.derivative(function(t) return (run(1.0, 1.5 + t)) end, 1e-5)
    local ev, ed = math.abs(gv - fv) / math.abs(fv), math.abs(gd - fdd) / math.abs(fdd)
    print(string.format("  B: dL/dvA %.12g (fd %.12g, rel %.1e); dL/d densityA %.12g (fd %.12g, rel %.1e); B moved to (%.3f, %.3f)",
      gv, fv, ev, gd, fdd, ed, c[1], c[2]))
    assert.is_true(c[1] > 0.45) -- ball B was hit
    assert.is_true(ev <= 1e-6 and ed <= 1e-6)
  end)
end)

describe("C (2D finger, one controller parameter used at every step)", function()
  it("matches central differences", function()
    local dx = 1 / 64
    local pts = {}
    for i = 0, 7 do for j = 0, 31 do pts[#pts + 1] = { 0.45 + (i + 0.5) * dx / 2, 3 * dx + (j + 0.5) * dx / 2 } end end
    local n = #pts
    local w = cq.world { dim = 2, res = { 64, 64 }, dx = dx, dt = 1e-3, substeps = 2, gravity = { 0, -1 }, n = n,
      n_actuators = 2, precision = "f64", threads = 2, walls = { floor = { type = "sticky", thickness = 4 } } }
    w:fill("E", 30); w:fill("nu", 0.3); w:fill("mass", (dx / 2) ^ 2); w:fill("vol0", (dx / 2) ^ 2)
    w:fill("act_axis", { 0, 1 })
    w:fill("act_id", function(p) return (p - 1) < n / 2 and 0 or 1 end)
    w:commit()
    local s0 = w:state()
    for p = 1, n do s0:set("x", p, pts[p]) end
    local T = 100
    local memo = w:memo { steps = T }
    local tip = {}
    for p = 1, n do if pts[p][2] > 3 * dx + 0.14 then tip[#tip + 1] = p end end
    local function u(theta, k) return math.tanh(theta * math.sin(0.2 * k)), math.tanh(-theta * math.sin(0.2 * k)) end
    local function run(theta)
      memo:begin(s0)
      for k = 1, T do memo:step({ u(theta, k) }) end
      return memo.state:mean("x", tip)[1]
    end
    local theta = 0.8
    local L = run(theta)
    memo:backward(function(k, m)
      if k == T then for _, p in ipairs(tip) do m.grad.x[p - 1] = m.grad.x[p - 1] + 1 / #tip end end
    end)
    local g = 0
    for k = 1, T do
      local u1, u2 = u(theta, k)
      g = g + memo:grad_u(k, 1) * (1 - u1 * u1) * math.sin(0.2 * k) - memo:grad_u(k, 2) * (1 - u2 * u2) * math.sin(0.2 * k)
    end
    local fd = G.derivative(function(t) return run(theta + t) end, 1e-5)
    local rel = math.abs(g - fd) / math.abs(fd)
    print(string.format("  C: dL/dtheta %.12g fd %.12g rel. error %.2e (tip moved %.4f)", g, fd, rel, L - 0.45 - 4 * dx / 2))
    assert.is_true(rel <= 1e-6)
  end)
end)
