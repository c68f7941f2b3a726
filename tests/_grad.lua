-- Test helper: small scenes and central finite-difference checks of every gradient kind the engine provides.
local cq = require "cq"
local M = {}

-- Deterministic pseudo-random numbers in [-1, 1] (so every run checks the same directions).
local function prand(i, salt) return math.sin(12.9898 * i + 78.233 * salt) * 43758.5453 % 2 - 1 end
M.prand = prand

--- A block of side^dim particles (2 per cell) moving toward the floor and the left wall, half of it actuated
--- (actuator 1: stress, actuator 2: force, or a chamber with opts.act2 = "chamber" or "cavity": its particles carry a wall
--- normal and area). opts: dim, material, inc_p, params ({field = value}: more per-particle parameters), bc,
--- friction, moving, precision, backend, steps, substeps, gravity, strain (initial F spread), act2, E (mean Young's
--- modulus, default 30), integrator, implicit, volumetric, volumetric_groups, volumetric_own, fluid and
--- fluid_contact (cq.world's options), mixed_fluid ({bulk, visc}: the half of the block along its last axis a fluid
--- of them, the other half the solid material), particle_damping (the damping parameter of every third particle from
--- the second on; every third from the third 0, the rest -1: the world's damping, none for a fluid).
function M.scene(opts)
  local dim = opts.dim
  local side = opts.side or (dim == 2 and 6 or 4)
  local n = side ^ dim
  local walls = { all = { type = opts.bc, friction = opts.friction or 0.4, thickness = 2 } }
  if opts.moving then
    walls.floor = { type = opts.bc, friction = opts.friction or 0.4, thickness = 2,
      velocity = dim == 2 and { 0.1, 0 } or { 0.1, 0, 0.05 },
      oscillation = { amplitude = dim == 2 and { 0, 0.2 } or { 0, 0.2, 0 }, omega = 40, phase = 0.3 } }
  end
  local w = cq.world { dim = dim, res = dim == 2 and { 20, 20 } or { 14, 14, 14 }, dx = 1 / 16, dt = opts.dt or 2e-3,
    substeps = opts.substeps or 1, gravity = dim == 2 and { 0, -6 } or { 0, -6, 0 }, n = n, n_actuators = 2,
    precision = opts.precision or "f64", threads = opts.threads or 2, walls = walls,
    backend = opts.backend or "cpu", -- FD checks run on the CPU reference; tests/gpu_spec.lua compares CUDA to it
    integrator = opts.integrator, implicit = opts.implicit, volumetric = opts.volumetric, damping = opts.damping,
    fluid = opts.fluid, fluid_rest = opts.fluid_rest, fluid_contact = opts.fluid_contact,
    volumetric_groups = opts.volumetric_groups, volumetric_own = opts.volumetric_own }
  w:fill("material", opts.material or "neohookean")
  w:fill("inc_p", opts.inc_p or 0)
  w:fill("E", function(p) return (opts.E or 30) * (1 + 0.2 * prand(p, 1)) end)
  w:fill("nu", function(p) return 0.3 + 0.05 * prand(p, 2) end)
  w:fill("mass", function(p) return 1 + 0.1 * prand(p, 3) end)
  w:fill("vol0", function(p) return 1 + 0.1 * prand(p, 4) end)
  w:fill("act_id", function(p) return p % 3 == 0 and 0 or (p % 3 == 1 and 1 or -1) end)
  w:fill("act_axis", dim == 2 and { 0.3, 1 } or { 0.3, 1, -0.5 })
  w:fill("act_w", function(p) return 1 + 0.2 * prand(p, 5) end)
  if opts.act2 == "chamber" or opts.act2 == "cavity" then -- wall normals (times a max pressure of 8) and areas
    for p = 1, n do
      if p % 3 == 1 then w:fill("act_axis", { 8 * prand(p, 6), 8 * prand(p, 7), dim == 3 and 8 * prand(p, 8) or nil }, p, p) end
    end
    w:fill("wall_area", function(p) return p % 3 == 1 and 0.5 + 0.2 * prand(p, 9) or 0 end)
    for p = 1, n do -- where on its surface each wall's pressure acts (engine/stages/chamber.h wall_surface_load)
      if p % 3 == 1 then
        local o = {}
        for a = 1, dim do o[a] = 0.3 * w.dx * prand(p, 9 + a) end
        w:fill("wall_offset", o, p, p)
      end
    end
  end
  -- more model parameters (opts.params = {name = typical value, or a vector}), each varied by +-20 % across
  -- particles (a vector: each component by 0.3 of the vector's largest)
  local salt = 6
  for _, name in ipairs(opts.params and M.param_kinds or {}) do
    local value = opts.params[name]
    if type(value) == "table" then
      salt = salt + 1
      local big = 0
      for a = 1, dim do big = math.max(big, math.abs(value[a])) end
      w:fill(name, function(p)
        local x = {}
        for a = 1, dim do x[a] = value[a] + 0.3 * big * prand(p * 3 + a, salt) end
        return x
      end)
    elseif value then
      salt = salt + 1
      w:fill(name, function(p) return value * (1 + 0.2 * prand(p, salt)) end)
    end
  end
  if opts.mixed_fluid then -- the particles placed in the block's upper half (index order: the last axis fastest)
    local upper = function(p) return (p - 1) % side >= side / 2 end
    local MAT = require("cq._registry").MATERIAL
    local fluid, material = MAT.fluid, MAT[opts.material or "neohookean"]
    w:fill("material", function(p) return upper(p) and fluid or material end)
    w:fill("bulk", function(p) return upper(p) and opts.mixed_fluid.bulk * (1 + 0.2 * prand(p, 61)) or 0 end)
    w:fill("visc", function(p) return upper(p) and opts.mixed_fluid.visc * (1 + 0.2 * prand(p, 62)) or 0 end)
  end
  if opts.particle_damping then
    w:fill("damping", function(p) return ({ -1, opts.particle_damping, 0 })[(p - 1) % 3 + 1] end)
  end
  w:set_actuator(1, "stress")
  w:set_actuator(2, opts.act2 or "force")
  w:commit()
  local s = w:state()
  local p = 0
  local function place(idx, d)
    if d > dim then
      p = p + 1
      local x, v, F, C = {}, {}, {}, {}
      for a = 1, dim do
        x[a] = 3.2 / 16 + idx[a] * 0.5 / 16 + 0.004 * prand(p, 10 + a)
        v[a] = 0.2 * prand(p, 20 + a)
      end
      v[1], v[2] = v[1] - 0.6, v[2] - 0.8
      for i = 1, dim * dim do
        F[i] = ((i - 1) % (dim + 1) == 0 and 1 or 0) + (opts.strain or 0.02) * prand(p, 30 + i)
        C[i] = 0.2 * prand(p, 40 + i)
      end
      s:set("x", p, x); s:set("v", p, v); s:set("F", p, F); s:set("C", p, C)
      return
    end
    for i = 0, side - 1 do idx[d] = i; place(idx, d + 1) end
  end
  place({}, 1)
  if opts.fluid == "grid" then
    -- the rest fill (fluid_rest = "initial") from the block spread 4 % about its centre, so that s's nodes are not
    -- all at their rest fill (where the pressure has its kink, which central differences would straddle), and none
    -- of them is outside it (a rest fill of 1 against s's ~10^3: vol0 = 1 in cells of 1/16)
    local spread = s:copy()
    for a = 0, dim - 1 do
      local mean = 0
      for q = 0, n - 1 do mean = mean + s.x[a * n + q] / n end
      for q = 0, n - 1 do spread.x[a * n + q] = mean + 1.04 * (s.x[a * n + q] - mean) end
    end
    w:step(spread, { 0, 0 })
  end
  return w, s
end

--- Loss = sum wx.x_T + wv.v_T + 0.5 * sum wy.x_mid (a running loss at the middle control step).
function M.problem(w, s0, steps, checkpoint_every)
  local n, dim = w.n, w.dim
  local memo = w:memo { steps = steps, checkpoint_every = checkpoint_every or 0 }
  local mid = math.floor(steps / 2)
  local P = { w = w, s0 = s0, memo = memo, steps = steps }
  P.u = function(k, a) return 0.4 * math.sin(0.3 * k + a) end
  local function wx(i) return prand(i, 51) end
  local function wv(i) return prand(i, 52) end
  local function wy(i) return 0.5 * prand(i, 53) end
  function P.loss(s_init)
    memo:begin(s_init or s0)
    local L = 0
    for k = 1, steps do
      memo:step({ P.u(k, 1), P.u(k, 2) })
      if k == mid then
        local x = memo.state.x
        for i = 0, n * dim - 1 do L = L + wy(i) * x[i] end
      end
    end
    local x, v = memo.state.x, memo.state.v
    for i = 0, n * dim - 1 do L = L + wx(i) * x[i] + wv(i) * v[i] end
    return L
  end
  function P.backward()
    memo:backward(function(k, m)
      local gx, gv = m.grad.x, m.grad.v
      if k == steps then for i = 0, n * dim - 1 do gx[i] = gx[i] + wx(i); gv[i] = gv[i] + wv(i) end end
      if k == mid then for i = 0, n * dim - 1 do gx[i] = gx[i] + wy(i) end end
    end)
    -- copy gradients out (the memo reuses its buffers)
    local g = { act = {} }
    for _, f in ipairs { "x", "v", "C", "F" } do
      local len = (f == "x" or f == "v") and n * dim or n * dim * dim
      g[f] = {}
      for i = 0, len - 1 do g[f][i] = memo.grad[f][i] end
    end
    for _, f in ipairs(M.param_kinds) do
      g[f] = {}
      for i = 0, n * M.param_len[f](dim) - 1 do g[f][i] = memo.grad_params[f][i] end
    end
    for k = 1, steps do g.act[k] = { memo:grad_u(k, 1), memo:grad_u(k, 2) } end
    return g
  end
  return P
end

-- Richardson-extrapolated central difference of t -> f(t) at 0 (4th order): truncation ~ h^4.
local function derivative(f, h)
  local d1 = (f(h) - f(-h)) / (2 * h)
  local d2 = (f(h / 2) - f(-h / 2)) / h
  return (4 * d2 - d1) / 3
end
M.derivative = derivative

--- Directional derivative of f() along direction d (d[k][i] for params[k], 0-based entries) of a list of
--- parameters ({n, v} arrays), by Richardson-extrapolated central differences with step h.
function M.fd_params(params, d, f, h)
  return derivative(function(t)
    for k, p in ipairs(params) do for i = 0, p.n - 1 do p.v[i] = p.v[i] + t * d[k][i] end end
    local L = f()
    for k, p in ipairs(params) do for i = 0, p.n - 1 do p.v[i] = p.v[i] - t * d[k][i] end end
    return L
  end, h)
end

--- A fixed pseudo-random direction over params (salt selects it) and the analytic derivative sum g . d.
function M.param_direction(params, salt)
  local d, analytic = {}, 0
  for k, p in ipairs(params) do
    d[k] = {}
    for i = 0, p.n - 1 do d[k][i] = prand(100 * k + i, salt); analytic = analytic + p.g[i] * d[k][i] end
  end
  return d, analytic
end

--- A rollout's dL/d(params) along a fixed pseudo-random direction (salt) against central differences (step h), from
--- state s0: returns analytic, fd, relative error.
function M.rollout_params(R, s0, params, salt, h)
  R:forward(s0)
  R:backward()
  local d, analytic = M.param_direction(params, salt)
  local fd = M.fd_params(params, d, function() return R:forward(s0) end, h)
  return analytic, fd, math.abs(analytic - fd) / math.abs(fd)
end

--- Checks dL/d(kind) along a fixed pseudo-random direction; returns analytic, fd, relative error, step used. The
--- relative error is inf when |analytic| is below floor (default M.FLOOR): a vanishing gradient never passes.
function M.check(P, g, kind, tol, floor)
  local w, s0, n, dim = P.w, P.s0, P.w.n, P.w.dim
  local analytic, f = 0, nil
  if kind == "x" or kind == "v" or kind == "C" or kind == "F" then
    local len = (kind == "x" or kind == "v") and n * dim or n * dim * dim
    for i = 0, len - 1 do analytic = analytic + g[kind][i] * prand(i, 60) end
    f = function(t)
      local s = s0:copy()
      for i = 0, len - 1 do s[kind][i] = s[kind][i] + t * prand(i, 60) end
      return P.loss(s)
    end
  elseif kind == "act" then
    for k = 1, P.steps do analytic = analytic + g.act[k][1] * prand(k, 61) + g.act[k][2] * prand(k, 62) end
    local u0 = P.u
    f = function(t)
      P.u = function(k, a) return u0(k, a) + t * prand(k, 60 + a) end
      local L = P.loss()
      P.u = u0
      return L
    end
  elseif M.param_len[kind](w.dim) > 1 then -- a vector parameter: each component moved (through world:fill)
    local arr, base, dim = w.params[kind], {}, w.dim
    for i = 0, n * dim - 1 do base[i] = arr[i]; analytic = analytic + g[kind][i] * prand(i, 63) end
    local function at(t)
      return function(p)
        local x = {}
        for a = 1, dim do local i = (a - 1) * n + p - 1; x[a] = base[i] + t * prand(i, 63) end
        return x
      end
    end
    f = function(t)
      w:fill(kind, at(t))
      local L = P.loss()
      w:fill(kind, at(0))
      return L
    end
  else -- per-particle parameter, relative perturbation (written through world:fill, as users do)
    local arr, base = w.params[kind], {}
    for i = 0, n - 1 do base[i] = arr[i]; analytic = analytic + g[kind][i] * prand(i, 63) * base[i] end
    f = function(t)
      w:fill(kind, function(p) return base[p - 1] * (1 + t * prand(p - 1, 63)) end)
      local L = P.loss()
      w:fill(kind, function(p) return base[p - 1] end)
      return L
    end
  end
  local best
  for _, h in ipairs(M.steps) do
    local fd = derivative(f, h)
    local rel = math.abs(analytic - fd) / math.max(math.abs(analytic), math.abs(fd), 1e-300)
    if not best or rel < best[2] then best = { fd, rel, h } end
    if rel <= (tol or 1e-6) then break end
  end
  -- A gradient that vanishes (or nearly) would agree with any FD at a relative tolerance: the floor keeps such a
  -- check from passing. Every scene here moves and loads every particle: the smallest directional derivative of the
  -- gradient matrix is 1.8e-4 (dL/dC), so M.FLOOR = 1e-5 sits well below every real one and far above roundoff.
  if math.abs(analytic) < (floor or M.FLOOR) then
    return analytic, best[1], math.huge, best[3]
  end
  return analytic, best[1], best[2], best[3]
end
M.FLOOR = 1e-5

-- Every differentiable per-particle parameter of the engine's field table (engine/core/fields.h).
M.param_kinds, M.param_len = {}, {} -- param_len[name](dim): its values per particle
for _, f in ipairs(cq.fields("f64").param) do
  if f.diff then
    M.param_kinds[#M.param_kinds + 1] = f.name
    M.param_len[f.name] = function(dim) return f.shape == 0 and 1 or f.shape == 1 and dim or dim * dim end
  end
end
M.kinds = { "x", "v", "C", "F", "act" }
for _, k in ipairs(M.param_kinds) do M.kinds[#M.kinds + 1] = k end
-- FD steps tried in order: a step can straddle a contact switch (a node whose velocity crosses the wall's
-- tangent plane changes the derivative there) or drown in roundoff, so a check passes when one step of this short
-- ladder agrees (small derivatives such as dL/dC need the larger steps). A wrong gradient agrees at none.
M.steps = { 1e-5, 1e-3, 1e-6, 1e-7, 1e-2 }
--- Largest |difference| between two M.problem backward results (every state and parameter kind and the actuation
--- of every step), and the largest |gradient|, for comparing checkpointed with full-memory (or GPU with CPU) runs.
function M.max_grad_diff(g1, g2, steps, n_act)
  local maxdiff, maxabs = 0, 0
  for _, kind in ipairs { "x", "v", "C", "F", unpack(M.param_kinds) } do
    for i, a in pairs(g1[kind]) do
      maxdiff = math.max(maxdiff, math.abs(a - g2[kind][i]))
      maxabs = math.max(maxabs, math.abs(a))
    end
  end
  for k = 1, steps do
    for a = 1, n_act or 2 do maxdiff = math.max(maxdiff, math.abs(g1.act[k][a] - g2.act[k][a])) end
  end
  return maxdiff, maxabs
end

--- Asserts that every gradient kind (M.kinds: the state, the actuation and each differentiable parameter of
--- engine/core/fields.h) is in common or in the kinds list of some case; what names a case in the message.
function M.assert_every_kind_checked(common, cases, what)
  local assert = require "luassert"
  local checked = {}
  for _, k in ipairs(common) do checked[k] = true end
  for _, case in ipairs(cases) do for _, k in ipairs(case.kinds) do checked[k] = true end end
  for _, k in ipairs(M.kinds) do assert.is_true(checked[k], k .. " is in no " .. what .. "'s list") end
end

--- fn() with the environment variable name set to value (nil: unset) while it runs, for the settings the engine
--- reads when a world is made (CQ_SIMD, CQ_FIXED_THREADS); returns fn's results, and raises its error after restoring.
function M.with_env(name, value, fn)
  local ffi = require "ffi"
  pcall(ffi.cdef, "int setenv(const char*, const char*, int); int unsetenv(const char*);")
  local old = os.getenv(name)
  local function set(v) if v then ffi.C.setenv(name, v, 1) else ffi.C.unsetenv(name) end end
  set(value)
  local out = { pcall(fn) }
  set(old)
  if not out[1] then error(out[2], 0) end
  return unpack(out, 2)
end

--- Runs run(threads) -> world, state (the world made and stepped) with 1 and then 2 threads, with CQ_FIXED_THREADS
--- set (2 threads even when other jobs keep the cores busy: the CPU backend reads it when a world is made); checks
--- that both thread counts ran and returns the number of state entries (x, v, C, F) on which the two runs differ.
function M.thread_state_diffs(run)
  local out, used = {}, {}
  for _, threads in ipairs { 1, 2 } do
    local w, s = M.with_env("CQ_FIXED_THREADS", "1", function() return run(threads) end)
    out[threads], used[threads] = s, w:threads_used()
    out.dim = w.dim
  end
  require("luassert").are.same({ 1, 2 }, used)
  local ndiff = 0
  for _, f in ipairs { "x", "v", "C", "F" } do
    local len = (f == "x" or f == "v") and out.dim or out.dim * out.dim
    for i = 0, len * out[1].n - 1 do if out[1][f][i] ~= out[2][f][i] then ndiff = ndiff + 1 end end
  end
  print("  differing state entries between 1 and 2 threads: " .. ndiff)
  return ndiff
end

--- The split-substep scene (implicit.max_split): a stiff block thrown at 1 m/s along x with nothing in its way, which
--- at dt = 0.08 would cross 1.3 cells per substep. opts: substeps (1), max_split, backend ("cpu"), precond (the
--- engine's default). Returns the world and state.
function M.thrown_block(opts)
  local r = cq.robot { dim = 2 }
  r:box { offset = { 0.5, 0.5 }, size = { 0.25, 0.25 }, spacing = 1 / 32,
    material = { model = "neohookean", E = 3000, nu = 0.3, density = 1 } }
  local w, s = r:world { res = { 48, 24 }, dx = 1 / 16, dt = 0.08, substeps = opts.substeps or 1, gravity = { 0, 0 },
    backend = opts.backend or "cpu", threads = 1, walls = { all = { type = "slip" } }, integrator = "implicit",
    implicit = { tol = opts.tol or 1e-12, max_split = opts.max_split, precond = opts.precond } }
  for p = 0, w.n - 1 do
    s.v[p], s.v[w.n + p] = 1 + 0.1 * M.prand(p, 1), 0.1 * M.prand(p, 2)
    s.F[p] = 1 + 0.02 * M.prand(p, 3)
  end
  return w, s
end

--- 3 steps of w from s through a memo, then dL/d(x0, v0, E) for L = w . x_T: { x, gx, gv, gE } (0-based arrays).
function M.thrown_run(w, s)
  local memo = w:memo { steps = 3 }
  memo:begin(s)
  for _ = 1, 3 do memo:step() end
  local out = { x = {} }
  for i = 0, 2 * w.n - 1 do out.x[i] = memo.state.x[i] end
  memo:backward(function(k, m)
    if k == 3 then for i = 0, 2 * w.n - 1 do m.grad.x[i] = m.grad.x[i] + M.prand(i, 9) end end
  end)
  out.gx, out.gv, out.gE = {}, {}, {}
  for i = 0, 2 * w.n - 1 do out.gx[i], out.gv[i] = memo.grad.x[i], memo.grad.v[i] end
  for i = 0, w.n - 1 do out.gE[i] = memo.grad_params.E[i] end
  return out
end

return M
