-- Physics invariants of the MLS-MPM engine, measured through the Lua layer (FFI views of the state):
-- conservation of linear and angular momentum (APIC affine term included), exact symplectic-Euler free fall,
-- and bounded energy of an elastic block bouncing on a floor.
--
-- Run: build/bin/cqlua tests/run.lua tests/physics_spec.lua
-- (or: busted --lua=luajit --lpath='lua/?.lua;lua/?/init.lua' tests/physics_spec.lua)
package.loaded["cq._paths"] = package.loaded["cq._paths"] or { lib = "build/lib" }
local cq = require "cq"

-- Deterministic pseudo-random numbers in [-0.5, 0.5).
local function lcg(seed)
  local s = seed
  return function()
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 2147483648 - 0.5
  end
end

local function norm3(a) return math.sqrt(a[1] * a[1] + a[2] * a[2] + a[3] * a[3]) end
local function sub3(a, b) return { a[1] - b[1], a[2] - b[2], a[3] - b[3] } end

-- Positions of a block of npa^dim particles, spacing h, centered at c (a list of coordinate tables).
local function block_positions(dim, npa, h, c)
  local out = {}
  local function rec(a, pos)
    if a > dim then
      local x = {}
      for b = 1, dim do x[b] = pos[b] end
      out[#out + 1] = x
      return
    end
    for k = 0, npa - 1 do
      pos[a] = c[a] + (k - (npa - 1) / 2) * h
      rec(a + 1, pos)
    end
  end
  rec(1, {})
  return out
end

-- Total linear momentum P = sum m v and angular momentum about the origin, both as 3-vectors. With
-- affine = true, L includes the APIC affine part: for quadratic B-splines D_p = sum_i w_ip (x_i - x_p)(x_i - x_p)^T
-- = dx^2/4 I, B_p = C_p D_p, and the particle carries sum_i w_ip (x_i - x_p) x m_p C_p (x_i - x_p)
-- = m_p dx^2/4 eps_abc C_cb, i.e. L_x += m dx^2/4 (C_zy - C_yz), L_y += .. (C_xz - C_zx), L_z += .. (C_yx - C_xy).
local function momenta(w, s, affine)
  local n, dim = w.n, w.dim
  local m, X, V, C = w.params.mass, s.x, s.v, s.C
  local D = affine and w.dx * w.dx / 4 or 0
  local P, L = { 0, 0, 0 }, { 0, 0, 0 }
  local function c(p, a, b) return C[((a - 1) * dim + (b - 1)) * n + p] end
  for p = 0, n - 1 do
    local mp = m[p]
    local x = { X[p], X[n + p], dim == 3 and X[2 * n + p] or 0 }
    local v = { V[p], V[n + p], dim == 3 and V[2 * n + p] or 0 }
    for a = 1, 3 do P[a] = P[a] + mp * v[a] end
    L[3] = L[3] + mp * (x[1] * v[2] - x[2] * v[1]) + mp * D * (c(p, 2, 1) - c(p, 1, 2))
    if dim == 3 then
      L[1] = L[1] + mp * (x[2] * v[3] - x[3] * v[2]) + mp * D * (c(p, 3, 2) - c(p, 2, 3))
      L[2] = L[2] + mp * (x[3] * v[1] - x[1] * v[3]) + mp * D * (c(p, 1, 3) - c(p, 3, 1))
    end
  end
  return P, L
end

-- An elastic block with a rotating, noisy velocity field, random affine C and a stretched + sheared F, in a
-- world without gravity, walls or damping.
local function spinning_block(dim, precision)
  local res = dim == 2 and 64 or 16
  local dx = 1 / res
  local npa = dim == 2 and 20 or 8
  local h = dx / 2 -- 2 particles per cell and axis
  local w = cq.world { dim = dim, res = res, dx = dx, dt = 5e-4, n = npa ^ dim, precision = precision }
  local vol = h ^ dim
  w:fill("vol0", vol)
  w:fill("mass", vol * 1.0) -- density 1
  w:fill("E", 100)
  w:fill("nu", 0.3)
  w:commit()
  local s = w:state()
  local rnd = lcg(12345 + dim)
  local center = { 0.52, 0.47, 0.5 }
  local omega = dim == 2 and { 0, 0, 3 } or { 1.5, -2, 3 }
  local v0 = { 0.3, -0.2, 0.1 }
  for p, x in ipairs(block_positions(dim, npa, h, center)) do
    s:set("x", p, x)
    local r = { x[1] - center[1], x[2] - center[2], dim == 3 and x[3] - center[3] or 0 }
    local wr = { omega[2] * r[3] - omega[3] * r[2], omega[3] * r[1] - omega[1] * r[3], omega[1] * r[2] - omega[2] * r[1] }
    local v = {}
    for a = 1, dim do v[a] = v0[a] + wr[a] + 0.05 * rnd() end
    s:set("v", p, v)
    local F, Cm = {}, {}
    for i = 1, dim do
      for j = 1, dim do
        F[(i - 1) * dim + j] = (i == j and 1 or 0) + (i == 1 and j == 1 and 0.05 or 0) + 0.04 * rnd()
        Cm[(i - 1) * dim + j] = 0.5 * rnd()
      end
    end
    s:set("F", p, F)
    s:set("C", p, Cm)
  end
  return w, s
end

describe("momentum conservation (no gravity, no walls)", function()
  for _, dim in ipairs({ 2, 3 }) do
    it(dim .. "D: linear and APIC angular momentum are conserved over 100 steps", function()
      local w, s = spinning_block(dim, "f64")
      local F0 = s:get("F", 1)
      local P0, L0 = momenta(w, s, true)
      local _, L0_plain = momenta(w, s, false)
      assert.is_true(norm3(P0) > 1e-3 and norm3(L0) > 1e-3)
      local dP, dL, dL_plain = 0, 0, 0
      for _ = 1, 100 do
        w:step(s)
        local P, L = momenta(w, s, true)
        local _, Lp = momenta(w, s, false)
        dP = math.max(dP, norm3(sub3(P, P0)) / norm3(P0))
        dL = math.max(dL, norm3(sub3(L, L0)) / norm3(L0))
        dL_plain = math.max(dL_plain, norm3(sub3(Lp, L0_plain)) / norm3(L0_plain))
      end
      -- stresses really acted: F changed
      local F1, dF = s:get("F", 1), 0
      for k = 1, dim * dim do dF = math.max(dF, math.abs(F1[k] - F0[k])) end
      print(string.format("%dD: n=%d |P0|=%.6g |L0|=%.6g  max rel drift: P %.3e  L(with affine) %.3e  " ..
        "L(x*mv only) %.3e  max |dF| of particle 1 %.3g", dim, w.n, norm3(P0), norm3(L0), dP, dL, dL_plain, dF))
      assert.is_true(dF > 1e-3)
      assert.is_true(dP < 1e-12, "linear momentum drift " .. dP)
      assert.is_true(dL < 1e-10, "angular momentum drift " .. dL)
      -- the affine term matters: without it the particle angular momentum is not conserved
      assert.is_true(dL_plain > 1e3 * dL and dL_plain > 1e-6, "x*mv-only drift " .. dL_plain)
    end)
  end

  it("2D f32: linear momentum is conserved to float precision", function()
    local w, s = spinning_block(2, "f32")
    local P0 = momenta(w, s, true)
    local dP = 0
    for _ = 1, 100 do
      w:step(s)
      dP = math.max(dP, norm3(sub3(momenta(w, s, true), P0)) / norm3(P0))
    end
    print(string.format("2D f32: max rel drift of P over 100 steps %.3e", dP))
    assert.is_true(dP < 1e-4, "f32 linear momentum drift " .. dP)
  end)
end)

describe("free fall (gravity, no walls)", function()
  local g, dt, N = 9.8, 1e-3, 250
  local dx = 1 / 64
  local h = dx / 2

  local function falling_block(deformed)
    local npa = 16
    local w = cq.world { dim = 2, res = 64, dx = dx, dt = dt, n = npa * npa, gravity = { 0, -g } }
    w:fill("vol0", h * h)
    w:fill("mass", h * h)
    w:fill("E", 100)
    w:fill("nu", 0.3)
    w:commit()
    local s = w:state()
    local c = { 0.45, 0.78 }
    for p, x in ipairs(block_positions(2, npa, h, c)) do
      s:set("x", p, x)
      if deformed then -- spin + stretch: internal forces act, but cancel in the mean
        s:set("v", p, { 0.1 - 2 * (x[2] - c[2]), 0.5 + 2 * (x[1] - c[1]) })
        s:set("F", p, { 1.05, 0.02, -0.01, 0.96 })
      else
        s:set("v", p, { 0.1, 0.5 })
      end
    end
    return w, s
  end

  -- symplectic Euler: v_n = v0 - n g dt, y_n = y0 + n dt v0 - g dt^2 n (n + 1) / 2
  local function check_com(w, s, label, on_step)
    local x0, v0 = s:mean("x"), s:mean("v")
    for _ = 1, N do
      w:step(s)
      if on_step then on_step() end
    end
    local x, v = s:mean("x"), s:mean("v")
    local ey = x0[2] + N * dt * v0[2] - g * dt * dt * N * (N + 1) / 2
    local ex = x0[1] + N * dt * v0[1]
    local evy = v0[2] - N * g * dt
    local ry, rx, rv = math.abs(x[2] - ey) / math.abs(ey), math.abs(x[1] - ex) / math.abs(ex),
        math.abs(v[2] - evy) / math.abs(evy)
    print(string.format("%s: after %d steps COM y=%.15g expected %.15g (rel %.2e), x rel %.2e, vy rel %.2e",
      label, N, x[2], ey, ry, rx, rv))
    assert.is_true(ey < x0[2] - 0.1) -- it really fell
    assert.is_true(ry < 1e-10, "COM y error " .. ry)
    assert.is_true(rx < 1e-10, "COM x error " .. rx)
    assert.is_true(rv < 1e-10, "COM vy error " .. rv)
  end

  it("the center of mass of a spinning, stretched block follows the discrete parabola", function()
    local w, s = falling_block(true)
    check_com(w, s, "deformed block")
  end)

  it("world:set_gravity changes the acceleration from the next step on, and a memo recorded before refuses backward",
    function()
    local cq = require "cq"
    local w = cq.world { dim = 2, res = { 16, 16 }, dx = 1 / 16, dt = 1e-2, n = 1, gravity = { 0, -1 }, precision = "f64" }
    w:fill("vol0", 1e-3); w:fill("mass", 1e-3); w:fill("E", 10); w:fill("nu", 0.3)
    w:commit()
    local s = w:state()
    s.x[0], s.x[1] = 0.5, 0.5
    local memo = w:memo { steps = 2 }
    memo:begin(s)
    memo:step()
    local v1 = memo.state.v[1]
    w:set_gravity { 0.5, -5 }
    memo:step()
    assert.is_true(math.abs(v1 + 0.01) < 1e-12)
    assert.is_true(math.abs(memo.state.v[1] - v1 + 0.05) < 1e-12 and math.abs(memo.state.v[0] - 0.005) < 1e-12)
    assert.has_error(function() memo:backward() end)
    assert.has_error(function() w:set_gravity { 0, 0 / 0 } end, "world:set_gravity: gravity[2] must be a finite number (got nan)")
  end)

  it("an undeformed block falls rigidly: COM on the parabola and F stays I", function()
    local w, s = falling_block(false)
    local n, maxdev = w.n, 0
    check_com(w, s, "undeformed block", function()
      local F = s.F
      for q = 0, n - 1 do
        maxdev = math.max(maxdev, math.abs(F[q] - 1), math.abs(F[n + q]), math.abs(F[2 * n + q]),
          math.abs(F[3 * n + q] - 1))
      end
    end)
    print(string.format("undeformed block: max |F - I| over all particles and steps %.3e", maxdev))
    assert.is_true(maxdev < 1e-10, "F drifted from I by " .. maxdev)
  end)
end)

describe("energy of an elastic block bouncing on a floor", function()
  local g, dx = 9.8, 1 / 64
  local h = dx / 2
  local thick = 3
  local y_floor = thick * dx -- potential energy measured from the floor plane

  -- kinetic + gravitational + NeoHookean elastic energy, psi = mu/2 (tr F^T F - 2) - mu log J + la/2 (log J)^2
  local function energy(w, s)
    local n = w.n
    local X, V, F = s.x, s.v, s.F
    local m, vol0, E, nu = w.params.mass, w.params.vol0, w.params.E, w.params.nu
    local K, U, W = 0, 0, 0
    for q = 0, n - 1 do
      local vx, vy = V[q], V[n + q]
      K = K + 0.5 * m[q] * (vx * vx + vy * vy)
      U = U + m[q] * g * (X[n + q] - y_floor)
      local a, b, c, d = F[q], F[n + q], F[2 * n + q], F[3 * n + q]
      local J = a * d - b * c
      local mu = E[q] / (2 * (1 + nu[q]))
      local la = E[q] * nu[q] / ((1 + nu[q]) * (1 - 2 * nu[q]))
      local lJ = math.log(J)
      W = W + vol0[q] * (mu / 2 * (a * a + b * b + c * c + d * d - 2) - mu * lJ + la / 2 * lJ * lJ)
    end
    return K + U + W, K, U, W
  end

  for _, walltype in ipairs({ "slip", "separate" }) do
    it("is conserved in free fall, never rises by 2% and loses at most 60% over 1000 steps (" .. walltype .. " floor)", function()
      local npa = 16
      local w = cq.world { dim = 2, res = 64, dx = dx, dt = 1e-3, n = npa * npa, gravity = { 0, -g },
        walls = { floor = { type = walltype, thickness = thick } } }
      w:fill("vol0", h * h)
      w:fill("mass", h * h)
      w:fill("E", 100)
      w:fill("nu", 0.3)
      w:commit()
      local s = w:state()
      for p, x in ipairs(block_positions(2, npa, h, { 0.5, 0.36 })) do s:set("x", p, x) end
      local E0 = energy(w, s)
      local maxrel, minE, maxW, miny = -math.huge, math.huge, 0, math.huge
      local all_finite, fall_dev, y_contact = true, 0, y_floor + 16 * h / 2 + 2 * dx -- COM height at first contact
      for _ = 1, 1000 do
        w:step(s)
        local Et, _, _, W = energy(w, s)
        if Et ~= Et or Et == math.huge or Et == -math.huge then all_finite = false end
        if s:mean("x")[2] > y_contact and miny > y_contact then fall_dev = math.max(fall_dev, math.abs(Et - E0) / E0) end
        maxrel = math.max(maxrel, (Et - E0) / E0)
        minE = math.min(minE, Et)
        maxW = math.max(maxW, W)
        miny = math.min(miny, s:mean("x")[2])
      end
      local Ef = energy(w, s)
      print(string.format("%s floor: E0=%.6g  final %.6g  min %.6g  max rel drift above E0 %.3e  " ..
        "peak elastic energy %.3g (%.1f%% of E0)  lowest COM y %.4f  |dE|/E0 in free fall %.2e", walltype, E0, Ef,
        minE, maxrel, maxW, 100 * maxW / E0, miny, fall_dev))
      assert.is_true(all_finite)
      -- in free fall only time stepping changes the energy: symplectic Euler's error is about dt |v| / (2 height)
      -- of E0, 4e-3 at the impact speed 2.3 from height 0.3
      assert.is_true(fall_dev < 5e-3, "energy changed by " .. fall_dev .. " before the block touched the floor")
      assert.is_true(maxrel < 0.02, "energy rose by " .. maxrel)
      -- MPM's transfers dissipate, but boundedly: 0.56 of E0 is left after 1000 steps (measured)
      assert.is_true(minE > 0.4 * E0, "energy fell to " .. minE / E0 .. " of E0")
      -- the block really hit the floor and deformed
      assert.is_true(miny < 0.2)
      assert.is_true(maxW > 0.01 * E0)
    end)
  end
end)

describe("determinism", function()
  -- the third and fourth scenes have only stress actuators: their P2G adjoint runs as SIMD lanes (engine/backends/cpu/cpu_loops.h);
  -- the last two a solid and a grid fluid on two velocity fields (fluid_contact = "separate"), wide enough for several
  -- slabs, whose scatters reach both fields' copies of the grid and the fill's physical nodes
  for _, cfg in ipairs { { dim = 3 }, { dim = 2 }, { dim = 2, act2 = "stress" }, { dim = 3, act2 = "stress" },
    { dim = 2, fields = true, side = 16 }, { dim = 3, fields = true, side = 8 } } do
    local name = string.format("%dD%s", cfg.dim, cfg.act2 and ", stress actuators only (SIMD lanes)" or
      (cfg.fields and ", a solid and a fluid on two velocity fields" or ""))
    it("gives bit-identical states and gradients with 1 and 2 threads, " .. name, function()
      local G = require "tests._grad"
      local out = {}
      for _, threads in ipairs { 1, 2 } do
        -- CQ_FIXED_THREADS: 2 threads even when other processes keep the cores busy (the backend would take 1)
        local w, s0 = G.with_env("CQ_FIXED_THREADS", "1", function()
          return G.scene { dim = cfg.dim, act2 = cfg.act2, bc = "friction", threads = threads, side = cfg.side,
            mixed_fluid = cfg.fields and { bulk = 35, visc = 0.15 }, fluid = cfg.fields and "grid" or nil,
            fluid_contact = cfg.fields and "separate" or nil }
        end)
        local P = G.problem(w, s0, 60)
        local L = P.loss()
        local g = P.backward()
        out[threads] = { L = L, g = g, x = P.memo.state:get("x", 7), simd = w:solver_stats().simd_particles }
      end
      local same = out[1].L == out[2].L and out[1].x[1] == out[2].x[1]
      local ndiff = 0
      for _, kind in ipairs { "x", "v", "C", "F", unpack(G.param_kinds) } do
        for i, a in pairs(out[1].g[kind]) do if a ~= out[2].g[kind][i] then ndiff = ndiff + 1 end end
      end
      print(string.format("  loss 1 thread %.17g, 2 threads %.17g; differing gradient entries: %d; SIMD lanes %d", out[1].L,
        out[2].L, ndiff, out[1].simd))
      assert.is_true(same)
      assert.are.equal(0, ndiff)
      if cfg.act2 then assert.is_true(out[1].simd > 0 and out[1].simd == out[2].simd) end
    end)
  end
end)

describe("walls", function()
  -- A block sliding along the floor keeps its speed on a slip floor and stops on a sticky one.
  local function slide(walls)
    local r = cq.robot { dim = 2 }
    r:box { offset = { 0.3, 0.03 }, size = { 0.1, 0.05 }, spacing = 1 / 64, velocity = { 1, 0 },
      material = { E = 100, density = 1 } }
    local w, s = r:world { res = { 32, 32 }, dx = 1 / 32, dt = 2e-3, substeps = 2, gravity = { 0, -10 }, threads = 1,
      backend = "cpu", walls = walls }
    for _ = 1, 20 do w:step(s) end
    return s:mean("v")[1]
  end
  it("named walls override 'all', whichever order the table lists them in", function()
    local slip = slide { all = { type = "slip" } }
    local sticky_floor = slide { all = { type = "slip" }, floor = { type = "sticky" } }
    local sticky_all = slide { all = { type = "sticky" } }
    local slip_floor = slide { all = { type = "sticky" }, floor = { type = "slip" } }
    print(string.format("  mean vx after 40 ms: slip %.3f, all slip + sticky floor %.3f, sticky %.3f, all sticky + slip floor %.3f",
      slip, sticky_floor, sticky_all, slip_floor))
    -- frictionless slip keeps the initial speed 1; sticky walls stop the block (without reversing it)
    assert.is_true(math.abs(slip - 1) < 0.01 and math.abs(slip_floor - 1) < 0.01)
    assert.is_true(sticky_floor >= 0 and sticky_floor < 0.05 and sticky_all >= 0 and sticky_all < 0.05)
  end)

  -- Seed 004's no-slip walls (its eq. 9: Coulomb friction with an infinite coefficient) stop a node moving into
  -- the wall, tangential part included, and leave one moving away or along it free; "sticky" stops every wall node.
  -- A block whose first column touches the left wall's nodes, pushed away from, along and into the wall.
  local function push(wall, velocity)
    local r = cq.robot { dim = 2 }
    r:box { offset = { 3 / 32, 0.3 }, size = { 0.1, 0.1 }, spacing = 1 / 64, velocity = velocity,
      material = { E = 100, density = 1 } }
    local w, s = r:world { res = { 32, 32 }, dx = 1 / 32, dt = 2e-3, substeps = 2, gravity = { 0, 0 }, threads = 1,
      backend = "cpu", walls = { all = { type = "slip", thickness = 3 }, left = wall } }
    for _ = 1, 10 do w:step(s) end
    return s:mean("v")
  end
  it("no-slip walls (friction = inf, seed 004 eq. 9) free a body moving away or along, and stop one moving in", function()
    local no_slip = { type = "friction", friction = math.huge, thickness = 3 }
    local sticky = { type = "sticky", thickness = 3 }
    local away_n, away_s = push(no_slip, { 1, 0 }), push(sticky, { 1, 0 })
    local along_n, along_s = push(no_slip, { 0, 1 }), push(sticky, { 0, 1 })
    local in_n, in_s = push(no_slip, { -1, 0.5 }), push(sticky, { -1, 0.5 })
    print(string.format("  mean v after 40 ms, no-slip / sticky: away vx %.4f / %.4f, along vy %.4f / %.4f, " ..
      "into vy %.4f / %.4f", away_n[1], away_s[1], along_n[2], along_s[2], in_n[2], in_s[2]))
    assert.are.equal(1, away_n[1]) -- no wall node ever sees an approaching velocity
    assert.is_true(away_s[1] < 0.995)
    assert.is_true(along_n[2] > along_s[2] + 0.02)
    assert.are.equal(in_s[1], in_n[1]); assert.are.equal(in_s[2], in_n[2]) -- approaching: both stop the node
  end)
end)
