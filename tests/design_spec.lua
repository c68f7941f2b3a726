-- Design variables (lua/cq/design.lua): every map and target field, FD-checked through a rollout's backward in f64,
-- per variable; passive rollouts (no controller, no actuators); the design's errors.
local ffi = require "ffi"
local cq = require "cq"
local G = require "tests._grad"

-- Two boxes on a sticky floor: A (actuated, stress actuator along y) and B (passive), an open-loop controller.
local function scene(opts)
  opts = opts or {}
  local robot = cq.robot { dim = 2 }
  local mat = { model = "neohookean", E = 40, nu = 0.3, density = 1 }
  local A = robot:box { offset = { 0.3, 0.1 }, size = { 0.1, 0.08 }, spacing = 1 / 48, material = mat, name = "A",
    velocity = opts.passive and { 1.5, 0 } or nil }
  local B = robot:box { offset = { 0.4, 0.1 }, size = { 0.08, 0.12 }, spacing = 1 / 48, material = mat, name = "B" }
  if not opts.passive then robot:pressure_actuator { groups = { A }, axis = 2, max = 8 } end
  local world, s0 = robot:world { res = { 32, 32 }, dx = 1 / 32, dt = 4e-3, substeps = 8, gravity = { 0, -4 },
    walls = { all = { type = "sticky", thickness = 2 } } }
  return world, s0, A, B
end

-- Loss: squared distance of B's centroid to a target plus, when actuated, a running actuation cost.
local function rollout(world, design, steps, ctl, B)
  local O = cq.objectives
  return cq.rollout { world = world, steps = steps, controller = ctl, design = design,
    final = O.distance_to_target({ 0.5, 0.3 }, B.particles),
    running = ctl and function(t, s, u) return t:scale(t:dot(u, u), 1e-3) end or nil }
end

-- Relative error of the analytic directional derivative of the loss along a fixed direction over params, against
-- Richardson central differences; returns rel, analytic, fd.
local function fd_check(run, s0, params, salt)
  run:forward(s0)
  run:backward()
  local d, analytic = G.param_direction(params, salt)
  local best
  for _, h in ipairs { 1e-5, 1e-4, 1e-6 } do
    local fd = G.fd_params(params, d, function() return run:forward(s0) end, h)
    local rel = math.abs(fd - analytic) / math.max(math.abs(analytic), 1e-300)
    if not best or rel < best[1] then best = { rel, analytic, fd } end
    if rel < 1e-6 then break end
  end
  return best[1], best[2], best[3]
end

describe("cq.design", function()
  it("fills the gradients of every map and field through a rollout's backward (FD, f64, per variable)", function()
    local world, s0, A, B = scene()
    local design = cq.design { world = world }
    local vars = {
      design:variable { name = "E", field = "E", per = "particle", init = function(i) return 1 + 0.1 * G.prand(i, 1) end },
      design:variable { name = "nu", field = "nu", map = "sigmoid", range = { 0.2, 0.45 } },
      design:variable { name = "density", field = "density", per = "group", groups = { A, B }, init = { 1.2, 0.8 } },
      design:variable { name = "act_w", field = "act_w", per = "particle", groups = { A }, map = "sigmoid",
        range = { 0, 1 }, init = 1.5 },
      design:stretch { name = "height", axis = 2, origin = 0.1, groups = { B }, init = 1.1 },
      design:variable { name = "E_exp", field = "E", groups = { B }, map = "exp", init = 0.2 },
      design:variable { name = "vol0", field = "vol0", per = "group", groups = { A }, map = "linear",
        scale = 1 / 48 ^ 2, init = 1.05 },
      design:variable { name = "mass", field = "mass", groups = { A },
        map = function(th, b) return b * (1 + th * th), 2 * th * b, 1 + th * th end, init = 0.3 },
    }
    local ctl = cq.open_loop { steps = 12, outputs = 1, init = function(i) return 0.5 * math.sin(i) end }
    local run = rollout(world, design, 12, ctl, B)
    for k, v in ipairs(vars) do
      local rel, analytic, fd = fd_check(run, s0, { v }, 70 + k)
      print(string.format("  %-8s dL/dtheta . d = %12.5e  FD %12.5e  rel. error %.1e", v.name, analytic, fd, rel))
      assert.is_true(math.abs(analytic) > 1e-8, v.name .. ": the gradient must not vanish")
      assert.is_true(rel < 1e-5, v.name)
    end
    local rel = fd_check(run, s0, run:parameters(), 90)
    print(string.format("  all design variables and the controller together: rel. error %.1e", rel))
    assert.is_true(rel < 1e-5)
  end)

  it("maps values as documented (scale, linear, exp, sigmoid, density, stretch) and leaves s0 alone", function()
    local world, s0, A, B = scene()
    local design = cq.design { world = world }
    local a, b = A.particles[1], B.particles[1]
    local E0, m0, v0, mb = world.params.E[a - 1], world.params.mass[a - 1], world.params.vol0[a - 1], world.params.mass[b - 1]
    design:variable { field = "E", per = "particle", init = 2 }
    design:variable { name = "Eb", field = "E", groups = { B }, map = "linear", scale = 10, offset = 5, init = 3 }
    design:variable { field = "nu", map = "sigmoid", range = { 0.2, 0.4 }, init = 0 }
    design:stretch { axis = 2, origin = 0.1, groups = { A }, init = 2 }
    design:variable { field = "density", groups = { A }, init = 3 }
    local s = design:apply(s0)
    assert.are.equal(2 * E0, world.params.E[a - 1])
    assert.are.equal(35, world.params.E[b - 1])
    assert.is_true(math.abs(world.params.nu[a - 1] - 0.3) < 1e-15)
    assert.is_true(math.abs(world.params.vol0[a - 1] - 2 * v0) < 1e-15)
    assert.is_true(math.abs(world.params.mass[a - 1] - 3 * 2 * m0) < 1e-15) -- density 3 x stretched volume
    assert.are.equal(mb, world.params.mass[b - 1])
    assert.is_true(math.abs(s:get("x", a)[2] - (0.1 + 2 * (s0:get("x", a)[2] - 0.1))) < 1e-15)
    assert.are_not.equal(s0, s)
    assert.are.equal(s0:get("x", b)[2], s:get("x", b)[2])
  end)

  it("differentiates a passive rollout (no controller, no actuators): the density of a ball", function()
    local world, s0, A, B = scene { passive = true }
    assert.are.equal(0, world.n_actuators)
    local design = cq.design { world = world }
    local rho = design:variable { field = "density", groups = { A }, init = 1.5 }
    local run = rollout(world, design, 10, nil, B)
    local rel, analytic, fd = fd_check(run, s0, { rho }, 80)
    print(string.format("  passive: dL/drho %.5e FD %.5e rel. error %.1e", analytic, fd, rel))
    assert.is_true(math.abs(analytic) > 1e-8)
    assert.is_true(rel < 1e-5)
  end)

  it("design:layout (seed 004 eqs. 11-16): the filter's rows are the brute-force weights summing to 1, the " ..
    "projection maps -1 and 1 to eps and 1, and its gradient matches FD through a rollout (f64)", function()
    local topology = require "cq.topology"
    local world, s0, A, B = scene()
    -- the filter against O(m^2) sums, over every particle, at 1.5 spacings and p = 2
    local n, R = world.n, 1.5 / 48
    local function pos(i) return { s0.x[i], s0.x[n + i] } end
    local f = topology.filter("test", n, 2, pos, R, 2)
    local worst, rows_ok = 0, true
    for i = 0, n - 1 do
      local xi, want, sum = pos(i), {}, 0
      for j = 0, n - 1 do
        local xj = pos(j)
        local r = math.sqrt((xi[1] - xj[1]) ^ 2 + (xi[2] - xj[2]) ^ 2)
        if r < R then want[j] = (1 - r / R) ^ 2 sum = sum + want[j] end
      end
      local got, total, count = {}, 0, 0
      for k = f.start[i], f.start[i + 1] - 1 do got[f.nbr[k]] = f.w[k] total = total + f.w[k] count = count + 1 end
      for j, v in pairs(want) do worst = math.max(worst, math.abs((got[j] or 0) - v / sum)) count = count - 1 end
      rows_ok = rows_ok and count == 0 and math.abs(total - 1) < 1e-12 and got[i] ~= nil
    end
    print(string.format("  filter: %d particles, %d weights, worst difference from the brute force %.1e", n, f.nnz,
      worst))
    assert.is_true(rows_ok and worst < 1e-14 and f.nnz > 5 * n)
    assert.are.equal(1e-5, (1 - 1e-5) * topology.project(4, -1) + 1e-5)
    assert.are.equal(1, topology.project(4, 1))
    -- values: every phi = 1 keeps E and the density, every phi = -1 scales them by eps
    local E0, m0 = world.params.E[0], world.params.mass[0]
    for _, case in ipairs { { 1, 1 }, { -1, 1e-5 } } do
      local design = cq.design { world = world }
      design:layout { state = s0, radius = R, init = case[1] }
      design:apply(s0)
      assert.is_true(math.abs(world.params.E[0] / E0 - case[2]) < 1e-12)
      assert.is_true(math.abs(world.params.mass[0] / m0 - case[2]) < 1e-12)
    end
    -- the gradient: phi varied over [-0.8, 0.8], filtered and projected, E and mass of every particle follow (a
    -- fresh world: design:apply above left its parameters scaled)
    world, s0, A, B = scene()
    local design = cq.design { world = world }
    local phi = design:layout { state = s0, radius = R, p = 2, beta = 4, init = function(i) return 0.8 * G.prand(i, 3) end }
    local ctl = cq.open_loop { steps = 12, outputs = 1, init = function(i) return 0.5 * math.sin(i) end }
    local run = rollout(world, design, 12, ctl, B)
    local rel, analytic, fd = fd_check(run, s0, { phi }, 85)
    print(string.format("  layout: dL/dphi . d = %.5e  FD %.5e  rel. error %.1e", analytic, fd, rel))
    assert.is_true(math.abs(analytic) > 1e-8)
    assert.is_true(rel < 1e-5)
  end)

  it("cq.pulses (seed 004 eqs. 24-26) and the layout's binarization constraint (eq. 22): gradients through a " ..
    "rollout and of the constraint match FD (f64)", function()
    local world, s0, A, B = scene()
    local design = cq.design { world = world }
    local phi = design:layout { state = s0, radius = 1.5 / 48, init = function(i) return 0.3 + 0.4 * G.prand(i, 5) end }
    local ctl = cq.pulses { outputs = 1, steps = 12, dt = 4e-3, dt_pul = 4e-3, sigma = 6e-3, amplitude = 0.3,
      a_pul = 1.5, init_sgn = function(i) return 0.9 * G.prand(i, 6) end,
      init_abs = function(i) return 0.9 * G.prand(i, 7) end }
    assert.are.equal(12, ctl.n_pulses)
    local run = rollout(world, design, 12, ctl, B)
    local rel, analytic, fd = fd_check(run, s0, ctl.params, 87)
    print(string.format("  pulses: dL/dalpha . d = %.5e  FD %.5e  rel. error %.1e", analytic, fd, rel))
    assert.is_true(math.abs(analytic) > 1e-8 and rel < 1e-5)
    -- C_mat and its gradient (design:apply sets gamma)
    local C = design:binarization(phi)
    design:apply(s0)
    phi:zero_grad()
    local c0 = C(1)
    local d, an = G.param_direction({ phi }, 88)
    local fdc = G.fd_params({ phi }, d, function() design:apply(s0) return C(0) end, 1e-6)
    print(string.format("  C_mat %.4f; dC/dphi . d = %.5e  FD %.5e", c0, an, fdc))
    assert.is_true(c0 > 0 and c0 <= 0.25)
    assert.is_true(math.abs(an - fdc) <= 1e-7 * math.abs(fdc) and math.abs(an) > 1e-6)
    -- C reads phi's current values, not the last design:apply's (cq.augmented_lagrangian asks for it after a step):
    -- after a step of phi, before and after applying it, C equals the mean of the applied gamma (1 - gamma)
    design:apply(s0)
    local before = C(0)
    for i = 0, phi.n - 1 do phi.v[i] = phi.v[i] + 0.3 * G.prand(i, 90) end
    local stepped = C(0)
    design:apply(s0)
    local op, ref = design.ops[1], 0
    for i = 0, op.m - 1 do ref = ref + op.gamma[i] * (1 - op.gamma[i]) end
    print(string.format("  C_mat before a step %.6f, after %.6f (applied: %.6f)", before, stepped, ref / op.m))
    assert.is_true(math.abs(stepped - before) > 1e-4)
    assert.are.equal(ref / op.m, stepped)
    local Cs = ctl.binarization.sgn
    ctl.params[1]:zero_grad()
    local cs0 = Cs(1)
    d, an = G.param_direction({ ctl.params[1] }, 89)
    fdc = G.fd_params({ ctl.params[1] }, d, function() return Cs(0) end, 1e-6)
    assert.is_true(cs0 > 0 and cs0 <= 1 and math.abs(an - fdc) <= 1e-7 * math.abs(fdc))
  end)

  it("design:actuators (seed 004 eqs. 18-21, 23): the softmax weights sum to 1, u_i = ((1-eps) gamma^3 + eps) " ..
    "sum_j xi_ij u_j reaches the engine, and dL/dpsi, dL/dphi (through E, mass, gamma^3 and the mass-weighted " ..
    "centroid) and dL/dalpha match FD " ..
    "(f64); C_act and its gradient", function()
    -- a 12 x 8 block (one actuator per particle) on a sticky floor
    local nx, ny, h = 12, 8, 1 / 64
    local n = nx * ny
    local world = cq.world { dim = 2, res = { 32, 32 }, dx = 1 / 32, dt = 4e-3, substeps = 8, gravity = { 0, -4 }, n = n,
      n_actuators = n, precision = "f64", walls = { all = { type = "sticky", thickness = 2 } } }
    world:fill("vol0", h * h); world:fill("mass", h * h); world:fill("E", 40); world:fill("nu", 0.3)
    world:fill("material", "neohookean")
    world:commit()
    local s0 = world:state()
    for p = 0, n - 1 do s0.x[p], s0.x[n + p] = 0.4 + (p % nx + 0.5) * h, 2 / 32 + (math.floor(p / nx) + 0.5) * h end
    local design = cq.design { world = world }
    local phi = design:layout { state = s0, radius = 1.5 * h, init = function(i) return 0.2 + 0.6 * G.prand(i, 11) end }
    local psi = design:actuators { state = s0, outputs = 2, layout = phi, radius = 1.5 * h,
      init = function(i) return 0.5 * G.prand(i, 12) end }
    assert.are.equal(n * 3, psi.n)
    local pulses = cq.pulses { outputs = 2, steps = 10, dt = 4e-3, dt_pul = 8e-3, sigma = 8e-3, amplitude = 6,
      a_pul = 1.5, init_sgn = function(i) return 0.9 * G.prand(i, 13) end,
      init_abs = function(i) return 0.9 * G.prand(i, 14) end }
    local ctl = psi.controller(pulses)
    local idx = {}
    for p = 1, n do idx[p] = p end
    -- the walker's objective (seed 004 eq. 32): -(x_g(T) - x_g(0)) . e_x with mass weights, which depend on phi
    local function xg(t, s) return t:index(t:mass_centroid(s, "x", idx), 1) end
    local run = cq.rollout { world = world, steps = 10, controller = ctl, design = design,
      final = function(t, s) return t:scale(xg(t, s), -1) end,
      running = function(t, s, u, k) return k == 0 and xg(t, s) or t:const({ 0 }) end }
    run:forward(s0)
    -- the weights: each particle's xi sums to 1; the engine's act_w is (1 - eps) gamma^3 + eps
    local op = design.ops[2]
    for i = 0, n - 1 do
      local sum = op.xi[3 * i] + op.xi[3 * i + 1] + op.xi[3 * i + 2]
      assert.is_true(math.abs(sum - 1) < 1e-12)
      local gamma = design.ops[1].gamma[i]
      assert.is_true(math.abs(world.params.act_w[i] - ((1 - 1e-5) * gamma ^ 3 + 1e-5)) < 1e-12)
      assert.are.equal(i, world.params.act_id[i])
    end
    for _, case in ipairs { { { psi }, "psi" }, { { phi }, "phi" }, { pulses.params, "alpha" } } do
      local rel, analytic, fd = fd_check(run, s0, case[1], 91)
      print(string.format("  actuators: dL/d%-5s . d = %.5e  FD %.5e  rel. error %.1e", case[2], analytic, fd, rel))
      assert.is_true(math.abs(analytic) > 1e-9, case[2])
      assert.is_true(rel < 1e-5, case[2])
    end
    -- C_act (eq. 23): 1 - |xi|^2 averaged, in [0, K / (K + 1)], and its gradient
    local C = design:binarization(psi)
    design:apply(s0)
    psi:zero_grad()
    local c0 = C(1)
    local d, an = G.param_direction({ psi }, 92)
    local fdc = G.fd_params({ psi }, d, function() design:apply(s0) return C(0) end, 1e-6)
    print(string.format("  C_act %.4f; dC/dpsi . d = %.5e  FD %.5e", c0, an, fdc))
    assert.is_true(c0 > 0 and c0 <= 2 / 3)
    assert.is_true(math.abs(an - fdc) <= 1e-7 * math.abs(fdc) and math.abs(an) > 1e-6)
    -- at psi's current values, as C_mat: after a step, C_act is the mean of the applied 1 - |xi|^2 before any apply
    design:apply(s0)
    local before = C(0)
    for i = 0, psi.n - 1 do psi.v[i] = psi.v[i] + 0.5 * G.prand(i, 93) end
    local stepped = C(0)
    design:apply(s0)
    local ref = 0
    for q = 0, op.m * op.width - 1 do ref = ref - op.xi[q] * op.xi[q] end
    print(string.format("  C_act before a step %.6f, after %.6f (applied: %.6f)", before, stepped, 1 + ref / op.m))
    assert.is_true(math.abs(stepped - before) > 1e-4)
    assert.are.equal(1 + ref / op.m, stepped)
  end)

  it("t:spin (seed 004 eq. 36's angular velocity about the mass centre): the rotation of a spinning block in 2D and " ..
    "3D, and dL/dphi through it (mass weights and dynamics) matches FD (f64)", function()
    for _, dim in ipairs { 2, 3 } do
      local side, h = dim == 2 and 10 or 5, 1 / 64
      local n = side ^ dim
      local w = cq.world { dim = dim, res = dim == 2 and { 32, 32 } or { 24, 24, 24 }, dx = 1 / 32, dt = 4e-3,
        substeps = 8, n = n, precision = "f64", walls = { all = { type = "slip", thickness = 2 } } }
      w:fill("vol0", h ^ dim); w:fill("mass", h ^ dim); w:fill("E", 40); w:fill("nu", 0.3)
      w:fill("material", "neohookean")
      w:commit()
      local s0 = w:state()
      local omega = 3
      for p = 0, n - 1 do
        local c = { p % side, math.floor(p / side) % side, math.floor(p / side ^ 2) }
        local x = {}
        for a = 1, dim do x[a] = 0.3 + (c[a] + 0.5) * h; s0.x[(a - 1) * n + p] = x[a] end
        -- a rigid rotation about the block's centre, around y in 3D (z in 2D)
        local cx, cz = 0.3 + side * h / 2, 0.3 + side * h / 2
        if dim == 2 then s0.v[p], s0.v[n + p] = -omega * (x[2] - cz), omega * (x[1] - cx)
        else s0.v[p], s0.v[2 * n + p] = omega * (x[3] - cz), -omega * (x[1] - cx) end
      end
      local t0 = require("cq.tape").new()
      local spin0 = t0:spin(s0, 2).v[0]
      -- a rigid rotation at omega: eq. 36 divides by the whole sum m |r|^2, so a cube about y gives 2/3 omega
      assert.is_true(math.abs(spin0 - (dim == 2 and omega or omega * 2 / 3)) < 1e-12)
      local design = cq.design { world = w }
      local phi = design:layout { state = s0, radius = 1.5 * h, init = function(i) return 0.7 * G.prand(i, 31) end }
      local run = cq.rollout { world = w, steps = 6, design = design,
        final = function(t, st) return t:scale(t:spin(st, 2), 1e-2) end,
        running = function(t, st) return t:scale(t:spin(st, 2), 1e-2) end }
      local rel, analytic, fd = fd_check(run, s0, { phi }, 93 + dim)
      print(string.format("  spin %dD: omega(0) %.6f; dL/dphi . d = %.5e  FD %.5e  rel. error %.1e", dim, spin0,
        analytic, fd, rel))
      assert.is_true(math.abs(analytic) > 1e-9 and rel < 1e-5)
    end
  end)

  it("t:spin and t:mass_centroid of the whole body (the engine's mass moments, engine/stages/moments.h) equal the Lua loops " ..
    "over a list of every particle, in value, dL/dx, dL/dv and dL/dmass, through a memo's gradient and a plain " ..
    "table (f64, 2D and 3D)", function()
    for _, dim in ipairs { 2, 3 } do
      local n = dim == 2 and 150 or 120
      local w = cq.world { dim = dim, res = dim == 2 and { 32, 32 } or { 16, 16, 16 }, dx = 1 / 32, dt = 4e-3,
        substeps = 8, n = n, precision = "f64" }
      w:fill("vol0", 1e-4); w:fill("E", 40); w:fill("nu", 0.3); w:fill("material", "neohookean")
      w:fill("mass", function(p) return 1e-4 * (1.5 + 0.5 * G.prand(p, 61)) end)
      w:commit()
      local s0 = w:state()
      for p = 0, n - 1 do
        for a = 0, dim - 1 do
          s0.x[a * n + p] = 0.2 + 0.1 * (1 + G.prand(a * n + p, 62))
          s0.v[a * n + p] = G.prand(a * n + p, 63)
        end
      end
      local memo = w:memo { steps = 1 }
      memo:begin(s0); memo:step(); memo:backward_begin()
      local all = {}
      for p = 1, n do all[p] = p end
      local axes = dim == 3 and { 1, 2, 3 } or { 1 }
      -- each objective's value and gradients into memo.grad (x, v) and grad_params.mass
      local function grads(f, idx)
        memo:backward_begin()
        local t = require("cq.tape").new()
        local y = f(t, memo.bstate, idx)
        t:backward(y, 1, memo.grad)
        local out = { y.v[0] }
        for k = 0, dim * n - 1 do out[#out + 1] = memo.grad.x[k]; out[#out + 1] = memo.grad.v[k] end
        for p = 0, n - 1 do out[#out + 1] = memo.grad_params.mass[p] end
        return out
      end
      local objectives = {}
      for _, axis in ipairs(axes) do
        objectives[#objectives + 1] = { "spin about axis " .. axis, function(t, s, idx) return t:spin(s, axis, idx) end }
      end
      for _, field in ipairs { "x", "v" } do
        objectives[#objectives + 1] = { "mass_centroid(" .. field .. ")", function(t, s, idx)
          local weights = { 0.3, -0.7, 0.2 }
          return t:dot(t:mass_centroid(s, field, idx), t:const({ unpack(weights, 1, dim) }))
        end }
      end
      for _, case in ipairs(objectives) do
        local a, b = grads(case[2], nil), grads(case[2], all)
        local worst, scale = 0, 0
        for k = 1, #a do scale = math.max(scale, math.abs(b[k])) end
        for k = 1, #a do worst = math.max(worst, math.abs(a[k] - b[k])) end
        print(string.format("  %dD %-22s value %.6e / %.6e, max |difference| %.1e of %.1e", dim, case[1], a[1], b[1],
          worst, scale))
        assert.is_true(scale > 0 and worst <= 1e-11 * scale, case[1])
      end
      -- a sink that is not an engine state (plain arrays): the adjoint in Lua, the same numbers
      local t = require("cq.tape").new()
      local y = t:spin(memo.bstate, dim == 3 and 2 or 1)
      local gx, gv = ffi.new("double[?]", dim * n), ffi.new("double[?]", dim * n)
      t:backward(y, 1, { x = gx, v = gv })
      memo:backward_begin()
      local t2 = require("cq.tape").new()
      t2:backward(t2:spin(memo.bstate, dim == 3 and 2 or 1), 1, memo.grad)
      local worst = 0
      for k = 0, dim * n - 1 do
        worst = math.max(worst, math.abs(gx[k] - memo.grad.x[k]), math.abs(gv[k] - memo.grad.v[k]))
      end
      assert.is_true(worst <= 1e-12 * math.abs(y.v[0]) + 1e-14)
    end
  end)

  it("design:actuators keeps the engine's sign, seed 004's eq. 7 negated: a positive cq.pulses signal contracts " ..
    "the body, a negative one expands it", function()
    local nx, ny, h = 8, 8, 1 / 64
    local n = nx * ny
    local widths = {}
    for _, sgn in ipairs { 1, -1 } do
      local world = cq.world { dim = 2, res = { 32, 32 }, dx = 1 / 32, dt = 4e-3, substeps = 8, gravity = { 0, 0 },
        n = n, n_actuators = n, precision = "f64" }
      world:fill("vol0", h * h); world:fill("mass", h * h); world:fill("E", 40); world:fill("nu", 0.3)
      world:fill("material", "neohookean")
      world:commit()
      local s0 = world:state()
      for p = 0, n - 1 do s0.x[p], s0.x[n + p] = 0.4 + (p % nx + 0.5) * h, 0.4 + (math.floor(p / nx) + 0.5) * h end
      local design = cq.design { world = world }
      -- every particle on signal 1 (xi = 0.9999 against the passive column)
      local psi = design:actuators { state = s0, outputs = 1, radius = 1.5 * h, beta = 1,
        init = function(i) return i % 2 == 1 and 10 or 0 end }
      local pulses = cq.pulses { outputs = 1, steps = 10, dt = 4e-3, dt_pul = 4e-3, amplitude = 4, a_pul = 2,
        init_sgn = sgn, init_abs = 1 }
      local run = cq.rollout { world = world, steps = 10, controller = psi.controller(pulses), design = design,
        final = function(t) return t:const({ 0 }) end }
      run:forward(s0)
      local tr = run:trajectory()
      local s = run.memo.state
      local lo, hi = math.huge, -math.huge
      for p = 0, n - 1 do lo, hi = math.min(lo, s.x[p]), math.max(hi, s.x[p]) end
      widths[sgn] = { hi - lo, tr:u(5)[1] }
    end
    local w0 = (8 - 1) * h
    print(string.format("  width %.5f at rest; signal %+.3f -> %.5f, signal %+.3f -> %.5f", w0, widths[1][2],
      widths[1][1], widths[-1][2], widths[-1][1]))
    assert.is_true(widths[1][2] > 3 and widths[-1][2] < -3) -- particle 1's actuation: +-4 xi (the pulses saturate)
    assert.is_true(widths[1][1] < w0 * 0.99, "a positive signal contracts")
    assert.is_true(widths[-1][1] > w0 * 1.01, "a negative signal expands")
  end)

  it("run:backward{accumulate, weight}: a loss of two rollouts (B's rise from step 3 to step 12, squared) gets " ..
    "the gradient of central differences (f64), controller and design variables alike", function()
    local world, s0, A, B = scene()
    local design = cq.design { world = world }
    design:variable { name = "E", field = "E", per = "group", groups = { A, B }, init = { 1.1, 0.9 } }
    design:variable { name = "act_w", field = "act_w", groups = { A }, map = "sigmoid", range = { 0, 1 }, init = 1 }
    design:variable { name = "density", field = "density", groups = { B }, init = 1.2 }
    local ctl = cq.open_loop { steps = 12, outputs = 1, init = function(i) return 0.5 * math.sin(i) end }
    local function height(t, s) return t:index(t:centroid(s, "x", B.particles), 2) end
    local run3 = cq.rollout { world = world, steps = 3, controller = ctl, design = design, final = height }
    local run12 = cq.rollout { world = world, steps = 12, controller = ctl, design = design, final = height }
    local params = run12:parameters()
    local function F() return (run12:forward(s0) - run3:forward(s0)) ^ 2 end
    -- dF/dp = w (dh12/dp - dh3/dp), w = 2 (h12 - h3): run3 (the last forward) first with weight -w, then run12
    -- forward again (run3's forward applied the design after run12's recording) and its backward added with weight w
    local function gradient(accumulate)
      local rise = run12:forward(s0) - run3:forward(s0)
      run3:backward { weight = -2 * rise }
      run12:forward(s0)
      run12:backward { accumulate = accumulate, weight = 2 * rise }
      return rise
    end
    local rise = gradient(true)
    local d, analytic = G.param_direction(params, 61)
    local best
    for _, h in ipairs { 1e-5, 1e-4, 1e-6 } do
      local fd = G.fd_params(params, d, F, h)
      local rel = math.abs(fd - analytic) / math.abs(fd)
      if not best or rel < best[1] then best = { rel, fd } end
      if rel < 1e-6 then break end
    end
    print(string.format("  rise %.5e: dF . d = %.6e, FD %.6e, rel. error %.1e", rise, analytic, best[2], best[1]))
    assert.is_true(math.abs(rise) > 1e-4 and math.abs(analytic) > 1e-8)
    assert.is_true(best[1] < 1e-5)
    -- per parameter group: the controller's and each design variable's share of the directional derivative
    for k, p in ipairs(params) do
      local dk = {}
      for j = 1, #params do dk[j] = {} for i = 0, params[j].n - 1 do dk[j][i] = j == k and d[k][i] or 0 end end
      local ak = 0
      for i = 0, p.n - 1 do ak = ak + p.g[i] * d[k][i] end
      local fd = G.fd_params(params, dk, F, 1e-5)
      print(string.format("  %-8s dF . d = %12.5e  FD %12.5e", p.name or "control", ak, fd))
      assert.is_true(math.abs(ak - fd) <= 1e-5 * math.abs(fd) and math.abs(fd) > 1e-9, p.name or "control")
    end
    -- without accumulate the second backward replaces the first: the gradient of w h12 alone, not F's
    gradient(false)
    local _, alone = G.param_direction(params, 61)
    assert.is_true(math.abs(alone - analytic) > 1e-2 * math.abs(analytic))
    -- the options are checked
    local function err(o) local ok, e = pcall(run12.backward, run12, o) assert.is_false(ok) return e end
    assert.matches("run:backward: weight must be finite %(got inf%)", err { weight = math.huge })
    assert.matches("run:backward: weight must be a number %(got \"2\"%)", err { weight = "2" })
    assert.matches("run:backward: accumulate must be true or false %(got 1%)", err { accumulate = 1 })
    assert.matches("run:backward: unknown option 'acumulate'", err { acumulate = true })
    assert.matches("design:backward: accumulate must be true or false", select(2, pcall(design.backward, design,
      run12.memo, { accumulate = "yes" })))
  end)

  -- A toy layout for Algorithm 1. Task: gamma_i = (p_i + 1) / 2 near targets; constraint: mean gamma (1 - gamma)
  -- <= 5 % of its maximum 1/4. Returns p, loss and cmat (the constraint's f(w)).
  local function toy_layout()
    local targets = { 0.3, 0.8, 0.45, 0.6, 0.1 }
    local p = cq.param { n = #targets, init = 0 }
    p.bounds = { -1, 1 }
    local function loss()
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
    return p, loss, cmat, targets
  end

  it("cq.augmented_lagrangian (seed 004 Algorithm 1) binarises a toy layout: feasible, each entry on its target's " ..
    "side", function()
    local p, loss, cmat, targets = toy_layout()
    local r = cq.augmented_lagrangian { params = { p }, loss = loss, constraints = { { cmat, 0.05 * 0.25 } }, lr = 0.02,
      tau0 = 1e-3 }
    local gam = {}
    for i = 0, p.n - 1 do gam[i + 1] = string.format("%.3f", (p.v[i] + 1) / 2) end
    print(string.format("  %d iterations, %d outer; C_mat %.4f (limit 0.0125); kappa %.3g, tau %.3g; gamma %s",
      r.iterations, r.outer, cmat(0), r.kappa[1], r.tau[1], table.concat(gam, " ")))
    assert.is_true(r.feasible and cmat(0) <= 0.0125 + 1e-12)
    for i, t in ipairs(targets) do
      if math.abs(t - 0.5) > 0.1 then assert.is_true(((p.v[i - 1] + 1) / 2 > 0.5) == (t > 0.5), "entry " .. i) end
    end
    -- stopped inside an outer iteration (no multiplier update for it, not counted) and resumed from the state
    for i = 0, p.n - 1 do p.v[i] = 0 end
    local state, stops = {}, 0
    local r1 = cq.augmented_lagrangian { params = { p }, loss = loss, constraints = { { cmat, 0.05 * 0.25 } },
      lr = 0.02, tau0 = 1e-3, inner_max = 30, state = state,
      on_iteration = function(s) if s == 45 then stops = stops + 1 return true end end }
    assert.is_true(r1.stopped and state.iterations == 45 and state.outer == 1) -- outer 2 unfinished: not counted
    assert.are.equal(1, stops)
    local r2 = cq.augmented_lagrangian { params = { p }, loss = loss, constraints = { { cmat, 0.05 * 0.25 } },
      lr = 0.02, tau0 = 1e-3, inner_max = 30, state = state }
    print(string.format("  stopped at 45 (outer %d), resumed to %d iterations, outer %d, feasible %s", r1.outer,
      r2.iterations, r2.outer, tostring(r2.feasible)))
    assert.is_true(r2.feasible and r2.iterations > 45 and cmat(0) <= 0.0125 + 1e-12)
    -- the resumed run goes on with the stopped inner loop (its count, convergence window, Adam moments), through a
    -- JSON round trip of the state as examples/topo.lua saves it: the same steps as the run that was not stopped
    local function traced(state_, stop_at)
      local trace = {}
      local r = cq.augmented_lagrangian { params = { p }, loss = loss, constraints = { { cmat, 0.05 * 0.25 } },
        lr = 0.02, tau0 = 1e-3, inner_max = 30, state = state_,
        on_iteration = function(s, L) trace[#trace + 1] = { s, L } return s == stop_at end }
      return r, trace
    end
    for i = 0, p.n - 1 do p.v[i] = 0 end
    local whole, whole_trace = traced({})
    local final = {}
    for i = 0, p.n - 1 do final[i + 1] = p.v[i] end
    for i = 0, p.n - 1 do p.v[i] = 0 end
    local saved = {}
    local _, first = traced(saved, 45)
    assert.are.equal(15, saved.inner.count) -- stopped in the second inner loop of 30
    local json = require "cq.json"
    local rest_state = json.decode(json.encode(saved))
    local rest, rest_trace = traced(rest_state)
    for _, row in ipairs(rest_trace) do first[#first + 1] = row end
    assert.are.equal(whole.iterations, rest.iterations)
    assert.are.same(whole_trace, first)
    for i = 0, p.n - 1 do assert.are.equal(final[i + 1], p.v[i]) end
    assert.is_nil(rest_state.inner) -- a finished run's state holds no inner loop
  end)

  it("cq.augmented_lagrangian recovers from a numerical failure of the loss: back to the last evaluated point, " ..
    "the step halved; other errors, and failures with nothing to go back to, are raised", function()
    local p, task, cmat = toy_layout()
    local evals, fail_at, seen = 0, {}, {}
    local function loss() -- the toy's task, recording each evaluation's parameters, failing where fail_at says
      evals = evals + 1
      local v = {}
      for i = 0, p.n - 1 do v[i + 1] = p.v[i] end
      seen[evals] = v
      if fail_at[evals] then error(fail_at[evals], 0) end
      return task()
    end
    local function run(opts)
      for i = 0, p.n - 1 do p.v[i] = 0 end
      evals, seen = 0, {}
      opts.params, opts.loss, opts.constraints, opts.lr = { p }, loss, { { cmat, 0.05 * 0.25 } }, 0.02
      return cq.augmented_lagrangian(opts)
    end
    -- evaluations 3 and 4 blow up: the 4th evaluates the 2nd's parameters plus half the 3rd's step, the 5th plus
    -- a quarter of it (Adam's step is linear in its step size, and its moments and the gradients are restored)
    fail_at = { [3] = "memo:step: blow-up at step 7: J = det F <= 0", [4] = "run:forward: the loss is not finite" }
    local notes = {}
    local r = run { on_recover = function(s, msg, f) notes[#notes + 1] = { s, msg, f } end }
    assert.are.equal(2, r.recoveries)
    assert.are.same({ 3, 3 }, { notes[1][1], notes[2][1] })
    assert.are.same({ 0.5, 0.25 }, { notes[1][3], notes[2][3] })
    assert.matches("blow%-up at step 7", notes[1][2])
    for i = 1, p.n do
      local full = seen[3][i] - seen[2][i]
      assert.is_true(math.abs(full) > 1e-3)
      assert.near(0.5 * full, seen[4][i] - seen[2][i], 1e-12 * math.abs(full) + 1e-15)
      assert.near(0.25 * full, seen[5][i] - seen[2][i], 1e-12 * math.abs(full) + 1e-15)
    end
    print(string.format("  2 failures recovered: %d iterations (%d evaluations), feasible %s, C_mat %.4f", r.iterations,
      evals, tostring(r.feasible), cmat(0)))
    assert.is_true(r.feasible and cmat(0) <= 0.0125 + 1e-12 and r.iterations == evals - 2)
    -- a bug in the script is raised at once; so is a failure of the first evaluation, and a 6th failure in a row
    fail_at = { [3] = "attempt to index a nil value" }
    assert.matches("attempt to index a nil value", select(2, pcall(run, {})))
    fail_at = { [1] = "memo:step: blow-up at step 1" }
    assert.matches("the loss failed at iteration 1, before any evaluation of this run succeeded, so there is nothing " ..
      "to go back to: memo:step: blow%-up", select(2, pcall(run, {})))
    fail_at = setmetatable({}, { __index = function(_, k) return k > 2 and "memo:step: blow-up" or nil end })
    assert.matches("iteration 3 failed 6 times in a row, each time after shrinking the step size by 0.5",
      select(2, pcall(run, {})))
    -- recover = false: the first failure is raised
    fail_at = { [3] = "memo:step: blow-up at step 7" }
    assert.matches("blow%-up at step 7", select(2, pcall(run, { recover = false })))
    local function same(a, b) for i = 1, p.n do assert.are.equal(a[i], b[i]) end end
    -- a non-finite gradient is a failure too: the 4th evaluation is at half the 3rd's step
    fail_at, notes = {}, {}
    local nan_at = 3
    local function nan_loss() local L = loss() if evals == nan_at then p.g[1] = 0 / 0 end return L end
    for i = 0, p.n - 1 do p.v[i] = 0 end
    evals, seen = 0, {}
    local rn = cq.augmented_lagrangian { params = { p }, loss = nan_loss, constraints = { { cmat, 0.05 * 0.25 } },
      lr = 0.02, inner_max = 30, outer_max = 1, on_recover = function(s, msg) notes[#notes + 1] = msg end }
    assert.are.equal(1, rn.recoveries)
    assert.matches("the gradient of parameter 1, entry 2, is nan", notes[1])
    for i = 1, p.n do assert.near(0.5 * (seen[3][i] - seen[2][i]), seen[4][i] - seen[2][i], 1e-12) end
    -- the first evaluation of a new inner loop fails (30 iterations each): back to the 30th's parameters, evaluated
    -- again (its gradients and moments belonged to the old multipliers)
    fail_at = { [31] = "memo:step: blow-up at step 3" }
    local r3 = run { inner_max = 30, outer_max = 2 }
    assert.are.equal(1, r3.recoveries)
    same(seen[30], seen[32])
    assert.are_not.equal(seen[30][1], seen[31][1])
    -- likewise the first evaluation of a resumed run: back to the parameters evaluated last before the stop
    local state = {}
    fail_at = {}
    run { inner_max = 30, state = state, on_iteration = function(s) return s == 45 end }
    local at45 = seen[45]
    same(at45, state.last_values[1])
    fail_at = { [1] = "memo:step: blow-up at step 3" }
    evals, seen = 0, {} -- (not reset to 0: the stopped run's parameters)
    local rr = cq.augmented_lagrangian { params = { p }, loss = loss, constraints = { { cmat, 0.05 * 0.25 } },
      lr = 0.02, inner_max = 30, state = state }
    same(at45, seen[2])
    assert.is_true(rr.feasible and rr.recoveries == 1)
  end)

  it("raises clear errors at the user's call site", function()
    local world, s0, A, B = scene()
    local design = cq.design { world = world }
    local function err(f) local ok, e = pcall(f) assert.is_false(ok) return e end
    assert.matches("design_spec.lua:%d+: design:variable: field must be density or a differentiable particle " ..
      "parameter %(E, act_w, alpha1, alpha2, alpha3, bulk, c01, c10, c20, c30, fiber_E, lambda_m, mass, mu, mu1, " ..
      "mu2, mu3, nu, visc, vol0, wall_area%) %(got \"material\"%)", err(function() design:variable { field = "material" } end))
    assert.matches('per = "group" needs groups', err(function() design:variable { field = "E", per = "group" } end))
    assert.matches('map = "sigmoid" needs range', err(function() design:variable { field = "E", map = "sigmoid" } end))
    assert.matches("init must have 2 values", err(function()
      design:variable { field = "E", per = "group", groups = { A, B }, init = { 1 } } end))
    assert.matches("each particle may appear once", err(function()
      design:variable { field = "E", per = "group", groups = { A, A } } end))
    assert.matches("bounds must be {lo, hi}", err(function() design:variable { field = "E", bounds = { 2, 1 } } end))
    local v = design:variable { field = "E" }
    assert.matches("name must be unique", err(function() design:variable { field = "E" } end))
    v.v[0] = 0 / 0
    assert.matches("design variable E%[1%] is nan", err(function() design:apply(s0) end))
    assert.matches("call design:apply first", err(function() cq.design { world = world }:backward({}) end))
  end)
end)
