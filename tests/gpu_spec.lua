-- CUDA backend (issue 4). Tests named #gpu compare CUDA against the CPU on the scenes of tests/_grad.lua: forward
-- states over 100 steps and every gradient kind (x, v, C, F, actuation, E, nu, mass, vol0), relative error
-- <= 1e-4 in float32 and <= 1e-10 in float64, cables, the CPU's error messages, and checkpointed against
-- full-memory backward on the GPU. Without a usable GPU they are skipped with the reason. The other tests run
-- everywhere: backend selection ("auto" falls back to the CPU with identical results, "cuda" is a clear error).
local cq = require "cq"
local ffi = require "ffi"
local C = require "cq._ffi"
local G = require "tests._grad"

local TOL = { f32 = 1e-4, f64 = 1e-10 }

-- nil when a CUDA device is usable for this precision, else the reason.
local function no_gpu(precision)
  local lib, why = C.cuda_lib(precision or "f64")
  return not lib and why or nil
end

-- A #gpu test: skipped (pending, with the reason) when no GPU is usable.
local function gpu_it(name, precision, body)
  it(name .. " #gpu", function()
    local why = no_gpu(precision)
    if why then pending("skipped: no GPU (" .. why .. ")") end
    body()
  end)
end

-- Largest |a - b| over max |b| (b: the CPU reference) of two arrays of len entries (0-based).
local function rel_err(a, b, len)
  local d, m = 0, 0
  for i = 0, len - 1 do
    d = math.max(d, math.abs(a[i] - b[i]))
    m = math.max(m, math.abs(b[i]))
  end
  return m > 0 and d / m or d
end

local function field_len(w, f) return (f == "x" or f == "v") and w.n * w.dim or w.n * w.dim * w.dim end

-- Steps the CPU world wc (state sc) and the CUDA world wg (sg) side by side with the same actuation: the worst
-- relative error of x, v, C and F over the steps.
local function compare_forward(wc, sc, wg, sg, steps)
  local worst = 0
  for k = 1, steps do
    local u = { 0.4 * math.sin(0.3 * k + 1), 0.4 * math.sin(0.3 * k + 2) }
    wc:step(sc, u)
    wg:step(sg, u)
    for _, f in ipairs { "x", "v", "C", "F" } do worst = math.max(worst, rel_err(sg[f], sc[f], field_len(wc, f))) end
  end
  return worst
end

-- The loss and every gradient kind (G.kinds) of G.problem over steps on the CPU world wc and the CUDA world wg: the
-- worst relative error and a line of the errors per kind.
local function compare_gradients(wc, s0c, wg, s0g, steps)
  local Pc, Pg = G.problem(wc, s0c, steps), G.problem(wg, s0g, steps)
  local Lc, Lg = Pc.loss(), Pg.loss()
  local gc, gg = Pc.backward(), Pg.backward()
  local worst, line = math.abs(Lg - Lc) / math.abs(Lc), { string.format("loss %.1e", math.abs(Lg - Lc) / math.abs(Lc)) }
  for _, kind in ipairs(G.kinds) do
    local rel
    if kind == "act" then
      local a, b = {}, {}
      for k = 1, steps do
        a[2 * k - 2], a[2 * k - 1], b[2 * k - 2], b[2 * k - 1] = gg.act[k][1], gg.act[k][2], gc.act[k][1], gc.act[k][2]
      end
      rel = rel_err(a, b, 2 * steps)
    else
      rel = rel_err(gg[kind], gc[kind], (kind == "x" or kind == "v" or kind == "C" or kind == "F") and
        field_len(wc, kind) or wc.n * G.param_len[kind](wc.dim))
    end
    worst = math.max(worst, rel)
    line[#line + 1] = string.format("%s %.1e", kind, rel)
  end
  return worst, table.concat(line, " ")
end

-- { model, inc_p, more parameters, label, actuator 2 kind }: every material, optional term and actuator kind of the
-- engine (as tests/gradient_spec.lua)
local materials = { { "corotated", 0 }, { "neohookean", 0 }, { "neohookean", 2, nil, "neohookean+incompressible" },
  { "neohookean", 0, { bulk = 30 }, "neohookean+bulk" },
  { "mooney_rivlin", 0, { c10 = 4, c01 = 1.5, bulk = 40, visc = 0.2 }, "mooney_rivlin+visc" },
  { "yeoh", 0, { c10 = 4, c20 = 3, c30 = 5, bulk = 40 } }, { "fluid", 0, { bulk = 35, visc = 0.15 } },
  { "ogden", 0, { mu1 = 6, alpha1 = 1.3, mu2 = 0.2, alpha2 = 5, mu3 = -1, alpha3 = -2, bulk = 40 } },
  { "arruda_boyce", 0, { mu = 12, lambda_m = 2, bulk = 40 } },
  { "fiber_reinforced", 0, { fiber_E = 80, fiber_dir = { 1, 0.6, -0.4 } } },
  { "neohookean", 0, nil, "neohookean, chamber", "chamber" },
  { "neohookean", 0, nil, "neohookean, cavity", "cavity" },
  { "mooney_rivlin", 0, { c10 = 4, c01 = 1.5, bulk = 150 }, "mooney_rivlin, averaged bulk", nil, "averaged" },
  -- volumetric_own = 4 (element 8): K_s = 4 M, cq_params.vol_own set by the CUDA backend's views
  { "mooney_rivlin", 0, { c10 = 4, c01 = 1.5, bulk = 150 }, "mooney_rivlin, averaged bulk, own share 4", nil,
    "averaged", nil, 4 },
  -- a fluid in the groups (engine/terms/volumetric.h since e15bea3: K_s = 1e-3 K on its own J, the rest on its group's)
  { "fluid", 0, { bulk = 35, visc = 0.15 }, "fluid, averaged bulk", nil, "averaged" },
  -- grid fluid (engine/terms/fill.h): the pressure from the grid's node fills, its adjoint
  { "fluid", 0, { bulk = 35, visc = 0.15 }, "fluid, grid fluid", nil, nil, "grid" },
  -- the default volumetric = "solids" (engine/core/model.h cqi_vol_active): bulk 450 +-20 % exceeds 16 times the
  -- model's P-wave modulus (8/3 (c10 + c01), at most 282 here) on every particle, so each takes the averaged term with
  -- the groups of its initial state and an own share of 16. tol32: the stiff bulk term (30 shear moduli) amplifies
  -- the backends' different orders of summation about 3,000-fold over 100 steps, in f64 as in f32: on an H100
  -- (2026-11-28) f64 agreed to 2.4-3.1e-13 (the other materials about 1e-14), f32 to 1.1-1.9e-4
  { "mooney_rivlin", 0, { c10 = 4, c01 = 1.5, bulk = 450 }, "mooney_rivlin, the default solids term", tol32 = 4e-4 },
  -- per-material damping (g2p.h damping_factor): particles at the world's 2/s, at 6/s and at 0
  { "neohookean", 0, nil, "neohookean, own damping", damping = 2, particle_damping = 6 },
  { "fluid", 0, { bulk = 35, visc = 0.15 }, "fluid, own damping", damping = 2, particle_damping = 6 } }
local bcs = { "sticky", "slip", "separate", "friction", "moving" }

-- The averaged bulk term in f32 takes the fixed groups (volumetric_groups = "initial"): with the current ones a
-- particle changes group where it crosses a cell's middle, a jump of its pressure, and the CPU's and the GPU's f32
-- rounding put a particle on different sides of it now and then (on an H200 the 2D fluid case with friction walls
-- went 4.7e-4 forward and 4.8e-3 in its gradients with the current groups, 2.5e-5 with the fixed ones, from step
-- 36 on: docs/results/history.md, issue 14, "Fifth session"). f64 keeps the current groups.
local function scene_opts(dim, mat, bc, precision, backend)
  return { dim = dim, material = mat[1], inc_p = mat[2], params = mat[3], bc = bc == "moving" and "friction" or bc,
    moving = bc == "moving", precision = precision, backend = backend, act2 = mat[5], volumetric = mat[6],
    fluid = mat[7], volumetric_groups = mat[6] == "averaged" and precision == "f32" and "initial" or nil,
    volumetric_own = mat[8], damping = mat.damping, particle_damping = mat.particle_damping }
end

describe("backend selection", function()
  it('backend = "cuda" without a usable GPU is a clear error', function()
    if not no_gpu("f64") then
      assert.are.equal("cuda", cq.world { dim = 2, n = 4, backend = "cuda" }.backend)
      return
    end
    local ok, err = pcall(cq.world, { dim = 2, n = 4, backend = "cuda" })
    assert.is_false(ok)
    print("  " .. tostring(err))
    assert.truthy(tostring(err):find('cq.world: backend = "cuda" but no CUDA device is available (', 1, true))
    assert.truthy(tostring(err):find('); use backend = "cpu" or "auto"', 1, true))
  end)

  it("rejects an unknown backend", function()
    local ok, err = pcall(cq.world, { dim = 2, n = 4, backend = "gpu" })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("backend", 1, true))
  end)

  it('backend = "auto" falls back to the CPU without a GPU, with identical results', function()
    if not no_gpu("f64") then
      assert.are.equal("cuda", cq.world { dim = 2, n = 4 }.backend)
      return
    end
    for _, precision in ipairs { "f32", "f64" } do
      local wa, sa = G.scene { dim = 2, bc = "friction", precision = precision, backend = "auto" }
      local wc, sc = G.scene { dim = 2, bc = "friction", precision = precision, backend = "cpu" }
      assert.are.equal("cpu", wa.backend)
      assert.are.equal("cpu", cq.world { dim = 2, n = 4, precision = precision }.backend) -- the default is auto
      for k = 1, 20 do
        wa:step(sa, { 0.3 * math.sin(k), 0.2 })
        wc:step(sc, { 0.3 * math.sin(k), 0.2 })
      end
      for _, f in ipairs { "x", "v", "C", "F" } do
        for i = 0, field_len(wa, f) - 1 do assert.are.equal(sc[f][i], sa[f][i]) end
      end
    end
  end)
end)

for _, precision in ipairs { "f32", "f64" } do
  for _, dim in ipairs { 2, 3 } do
    describe(string.format("CUDA vs CPU, %dD %s", dim, precision), function()
      for _, mat in ipairs(materials) do
        local tol = precision == "f32" and mat.tol32 or TOL[precision]
        for _, bc in ipairs(bcs) do
          local name = (mat[4] or mat[1]) .. ", " .. bc .. " walls" ..
            (mat[6] == "averaged" and precision == "f32" and ", fixed groups" or "")
          gpu_it("forward states over 100 steps, " .. name, precision, function()
            local wc, sc = G.scene(scene_opts(dim, mat, bc, precision, "cpu"))
            local wg, sg = G.scene(scene_opts(dim, mat, bc, precision, "cuda"))
            assert.are.equal("cuda", wg.backend)
            local worst = compare_forward(wc, sc, wg, sg, 100)
            print(string.format("  %dD %s %-30s forward max rel. error %.2e", dim, precision, name, worst))
            assert.is_true(worst <= tol, string.format("forward relative error %.3e > %.0e", worst, tol))
          end)
          gpu_it("every gradient kind over 100 steps, " .. name, precision, function()
            local wc, s0c = G.scene(scene_opts(dim, mat, bc, precision, "cpu"))
            local wg, s0g = G.scene(scene_opts(dim, mat, bc, precision, "cuda"))
            local worst, line = compare_gradients(wc, s0c, wg, s0g, 100)
            print(string.format("  %dD %s %-30s gradient rel. errors: %s", dim, precision, name, line))
            assert.is_true(worst <= tol, string.format("worst gradient relative error %.3e > %.0e", worst, tol))
          end)
        end
      end

      gpu_it("cables: forward states and gradients", precision, function()
        local tol = TOL[precision]
        local function cable_scene(backend)
          local w, s0 = G.scene { dim = dim, bc = "friction", precision = precision, backend = backend }
          w:set_actuator(2, "cable")
          local side = dim == 2 and 6 or 4
          local path = {}
          for i = 1, side do path[i] = (i - 1) * side + 1 end -- particles along axis 1 of the block
          w:add_cable(2, path, 400, 0.25)
          return w, s0
        end
        local wc, s0c = cable_scene("cpu")
        local wg, s0g = cable_scene("cuda")
        local Pc, Pg = G.problem(wc, s0c, 100), G.problem(wg, s0g, 100)
        local Lc, Lg = Pc.loss(), Pg.loss()
        local gc, gg = Pc.backward(), Pg.backward()
        local worst = math.abs(Lg - Lc) / math.abs(Lc)
        for _, kind in ipairs { "x", "v", "C", "F" } do worst = math.max(worst, rel_err(gg[kind], gc[kind], field_len(wc, kind))) end
        for _, kind in ipairs(G.param_kinds) do
          worst = math.max(worst, rel_err(gg[kind], gc[kind], wc.n * G.param_len[kind](wc.dim)))
        end
        local a, b = {}, {}
        for k = 1, 100 do a[k - 1], b[k - 1] = gg.act[k][2], gc.act[k][2] end
        worst = math.max(worst, rel_err(a, b, 100))
        print(string.format("  %dD %s cables: max rel. error %.2e", dim, precision, worst))
        assert.is_true(worst <= tol, string.format("relative error %.3e > %.0e", worst, tol))
      end)
    end)
  end
end

-- The implicit integrator (engine/integrators/integrator_implicit.c) through the CUDA primitives, f64 only (f32 stalls on stiff
-- materials, docs/api.md): the scenes of tests/implicit_spec.lua's gradient checks (mean E = 3000 at dt = 5e-3,
-- about 6x the explicit limit), solved to 1e-13 with the mass preconditioner on both backends, so that the CPU and
-- the GPU run the same algorithm and differ only in the order of their sums.
local IMPLICIT_CASES = {
  { dim = 2, bc = "slip", name = "neohookean, slip walls" },
  { dim = 3, bc = "slip", side = 3, name = "neohookean, slip walls" },
  { dim = 2, bc = "friction", material = "mooney_rivlin", params = { c10 = 375, c01 = 150, bulk = 3000, visc = 0.2 },
    name = "mooney_rivlin+visc, friction walls" },
  { dim = 2, bc = "friction", moving = true, act2 = "chamber", strain = 0.1,
    name = "neohookean, chamber, moving friction floor" },
  { dim = 2, bc = "friction", material = "mooney_rivlin", params = { c10 = 375, c01 = 150, bulk = 9e4 },
    volumetric = "averaged", name = "mooney_rivlin, averaged bulk, friction walls" },
  -- the chamber and cavity walls' Nanson force inside the solve (implicit.h: nanson_force_jvp, cofactor_jvp; the
  -- adjoint's BiCGStab), and the lagged pressure's geometric term (E_geo) with the groups' pressure pg
  { dim = 2, bc = "friction", moving = true, act2 = "chamber", strain = 0.1, implicit_pressure = "implicit",
    name = "neohookean, chamber in the solve, moving friction floor" },
  { dim = 2, bc = "friction", moving = true, act2 = "cavity", strain = 0.1, implicit_pressure = "implicit",
    name = "neohookean, cavity in the solve, moving friction floor" },
  { dim = 2, bc = "friction", material = "mooney_rivlin", params = { c10 = 375, c01 = 150, bulk = 9e4 },
    act2 = "cavity", strain = 0.1, volumetric = "averaged", name = "mooney_rivlin, averaged bulk, cavity lagged" },
  { dim = 3, bc = "slip", side = 3, material = "mooney_rivlin", params = { c10 = 375, c01 = 150, bulk = 9e4 },
    volumetric = "averaged", name = "mooney_rivlin, averaged bulk, slip walls" },
  -- the default volumetric = "solids": bulk 9e4 +-20 % is over 16 times the model's 8/3 (c10 + c01) on every particle
  { dim = 2, bc = "friction", material = "mooney_rivlin", params = { c10 = 375, c01 = 150, bulk = 9e4 },
    name = "mooney_rivlin, the default solids term, friction walls" },
  { dim = 3, bc = "slip", side = 3, material = "mooney_rivlin", params = { c10 = 375, c01 = 150, bulk = 9e4 },
    name = "mooney_rivlin, the default solids term, slip walls" },
  -- a fluid in the groups, as tests/implicit_spec.lua's gradient case
  { dim = 2, bc = "slip", material = "fluid", params = { bulk = 3000, visc = 0.05 }, volumetric = "averaged",
    name = "fluid+visc, averaged bulk, slip walls" },
  -- grid fluid inside the solve (engine/terms/fill.h), as tests/implicit_spec.lua's gradient case
  { dim = 2, bc = "slip", material = "fluid", params = { bulk = 3000, visc = 0.05 }, fluid = "grid",
    name = "fluid+visc, grid fluid, slip walls" },
}
describe("CUDA vs CPU, implicit integrator, f64", function()
  for _, case in ipairs(IMPLICIT_CASES) do
    local function scene(backend)
      local o = { backend = backend, integrator = "implicit", E = 3000, dt = 5e-3,
        implicit = { tol = 1e-13, precond = "mass", pressure = case.implicit_pressure } }
      for k, v in pairs(case) do if k ~= "name" and k ~= "implicit_pressure" then o[k] = v end end
      return G.scene(o)
    end
    gpu_it(case.dim .. "D " .. case.name .. ": forward states and every gradient kind over 20 steps", "f64", function()
      local wc, sc = scene("cpu")
      local wg, sg = scene("cuda")
      local worst = compare_forward(wc, sc, wg, sg, 20)
      local wc2, s0c = scene("cpu")
      local wg2, s0g = scene("cuda")
      local gworst, line = compare_gradients(wc2, s0c, wg2, s0g, 20)
      print(string.format("  implicit %dD %s: forward %.1e; gradients: %s", case.dim, case.name, worst, line))
      assert.is_true(worst <= TOL.f64, string.format("forward relative error %.3e > %.0e", worst, TOL.f64))
      assert.is_true(gworst <= TOL.f64, string.format("worst gradient relative error %.3e > %.0e", gworst, TOL.f64))
    end)
  end
  -- Split substeps (implicit.max_split, tests/implicit_spec.lua): a stiff block thrown at 1 m/s, whose particles
  -- would cross 1.3 cells per substep, is solved in halves; the GPU must take the same splits and give the CPU's
  -- states and gradients through a memo.
  gpu_it("split substeps: the CPU's splits, states and gradients", "f64", function()
    local function thrown(backend)
      local w, s = G.thrown_block { backend = backend, max_split = 6, tol = 1e-13, precond = "mass" }
      local out = G.thrown_run(w, s)
      out.splits, out.n = w:solver_stats().splits, w.n
      return out
    end
    local c, g = thrown("cpu"), thrown("cuda")
    local ex, egx, egv, egE = rel_err(g.x, c.x, 2 * c.n), rel_err(g.gx, c.gx, 2 * c.n), rel_err(g.gv, c.gv, 2 * c.n),
      rel_err(g.gE, c.gE, c.n)
    print(string.format("  splits cpu %d gpu %d; x %.1e, dL/dx %.1e, dL/dv %.1e, dL/dE %.1e", c.splits, g.splits, ex,
      egx, egv, egE))
    assert.is_true(c.splits >= 3)
    assert.are.equal(c.splits, g.splits)
    assert.is_true(math.max(ex, egx, egv, egE) <= TOL.f64)
  end)
  -- implicit.error_tol and implicit.adapt (tests/implicit_spec.lua): the estimate is read back from the device, so the
  -- GPU must find the CPU's estimate and, with adapt, take the CPU's halvings and reach its loss.
  gpu_it("implicit.adapt: the CPU's error estimate, halvings and loss", "f64", function()
    local function run(backend)
      local w, s0 = G.scene { dim = 2, bc = "slip", integrator = "implicit", E = 3000, dt = 0.02, backend = backend,
        implicit = { tol = 1e-13, adapt = true, error_tol = 0.045, precond = "mass" } }
      local P = G.problem(w, s0, 6)
      local loss = P.loss()
      local st = w:solver_stats(true)
      return { loss = loss, splits = st.error_splits, emax = st.error_max }
    end
    local c, g = run("cpu"), run("cuda")
    print(string.format("  halvings cpu %d gpu %d; largest estimate %.9g / %.9g cells; loss %.12g / %.12g", c.splits,
      g.splits, c.emax, g.emax, c.loss, g.loss))
    assert.is_true(c.splits >= 1)
    assert.are.equal(c.splits, g.splits)
    assert.is_true(math.abs(c.emax - g.emax) <= TOL.f64 * c.emax)
    assert.is_true(math.abs(c.loss - g.loss) <= TOL.f64 * math.abs(c.loss))
  end)
  gpu_it("the factorised preconditioner is a clear error on the GPU", "f64", function()
    local ok, err = pcall(function()
      local w, s = G.scene { dim = 2, bc = "slip", backend = "cuda", integrator = "implicit", implicit = { precond = "factor" } }
      w:step(s)
    end)
    assert.is_false(ok)
    print("  " .. tostring(err))
    assert.truthy(tostring(err):find("factor", 1, true))
  end)
end)

-- The tests' scenes are one block of particles, which the GPU scatters straight to global memory; larger scenes go
-- through the block-local shared-memory scatter (cuda/cuda_loops.cuh). CQ_CUDA_LOCAL_MIN_BLOCKS=0 (read when a world
-- is made) sends these through it too.
pcall(ffi.cdef, "int setenv(const char* name, const char* value, int overwrite); int unsetenv(const char* name);")
describe("CUDA vs CPU through the block-local scatter", function()
  for _, dim in ipairs { 2, 3 } do
    for _, precision in ipairs { "f32", "f64" } do
      gpu_it(string.format("%dD %s neohookean, chamber, friction walls: forward and every gradient kind", dim, precision),
        precision, function()
          local mat
          for _, m in ipairs(materials) do if m[4] == "neohookean, chamber" then mat = m end end
          local wc, sc = G.scene(scene_opts(dim, mat, "friction", precision, "cpu"))
          ffi.C.setenv("CQ_CUDA_LOCAL_MIN_BLOCKS", "0", 1)
          local ok, wg, sg = pcall(G.scene, scene_opts(dim, mat, "friction", precision, "cuda"))
          local ok2, wg2, s0g = pcall(G.scene, scene_opts(dim, mat, "friction", precision, "cuda"))
          ffi.C.unsetenv("CQ_CUDA_LOCAL_MIN_BLOCKS")
          assert(ok and ok2, tostring(wg) .. " " .. tostring(wg2))
          local fwd = compare_forward(wc, sc, wg, sg, 60)
          local wc2, s0c = G.scene(scene_opts(dim, mat, "friction", precision, "cpu"))
          local worst, line = compare_gradients(wc2, s0c, wg2, s0g, 60)
          print(string.format("  %dD %s local scatter: forward %.2e; gradients %s", dim, precision, fwd, line))
          assert.is_true(fwd <= TOL[precision] and worst <= TOL[precision])
        end)
    end
  end
end)

describe("CUDA backend", function()
  gpu_it("checkpointed backward equals full-memory backward on the GPU", "f64", function()
    local w, s0 = G.scene { dim = 2, bc = "friction", substeps = 3, dt = 6e-3, backend = "cuda" }
    local steps = 40 -- 120 substeps
    local full, ck = G.problem(w, s0, steps, 1), G.problem(w, s0, steps, 11)
    local L1, L2 = full.loss(), ck.loss()
    local g1, g2 = full.backward(), ck.backward()
    local maxdiff, maxabs = G.max_grad_diff(g1, g2, steps)
    maxdiff, maxabs = math.max(maxdiff, math.abs(L1 - L2)), math.max(maxabs, math.abs(L1))
    print(string.format("  stored states: full %d, checkpointed %d; max |difference| %.3e (max |g| %.3e)",
      full.memo:stored_states(), ck.memo:stored_states(), maxdiff, maxabs))
    assert.is_true(maxdiff <= 1e-10 * maxabs)
  end)

  gpu_it("stops the backward pass at a non-finite gradient with the CPU's message (the scan runs on the GPU)", "f64",
    function()
      local msgs = {}
      for _, backend in ipairs { "cpu", "cuda" } do
        local w, s0 = G.scene { dim = 2, bc = "slip", backend = backend }
        local P = G.problem(w, s0, 6)
        P.loss()
        local m = P.memo
        m:backward_begin()
        m:backward_step()
        m.grad.x[5] = 0 / 0
        local ok, err = pcall(m.backward_step, m)
        assert.is_false(ok)
        msgs[backend] = tostring(err):gsub("^.-backward", "backward"):gsub("%-?nan", "nan") -- the sign of a NaN may differ
      end
      print("  " .. msgs.cuda)
      assert.truthy(msgs.cuda:find("nonfinite_gradient", 1, true))
      assert.are.equal(msgs.cpu, msgs.cuda)
    end)

  -- CUDA states live in managed memory (cuda/README.md): steps run on them in place and the host faults in the pages
  -- it touches, so writes and reads between steps, and steps with none, must all see the same state as the CPU.
  gpu_it("a state kept on the device between steps sees the host's reads and writes, as on the CPU", "f64", function()
    local w, s, mc, mg = {}, {}, nil, nil
    for _, backend in ipairs { "cpu", "cuda" } do
      w[backend], s[backend] = G.scene { dim = 3, bc = "slip", backend = backend }
    end
    local function worst()
      local e = 0
      for _, f in ipairs { "x", "v", "C", "F" } do
        e = math.max(e, rel_err(s.cuda[f], s.cpu[f], field_len(w.cpu, f)))
      end
      return e
    end
    for _, backend in ipairs { "cpu", "cuda" } do -- ten steps the host does not look at
      for k = 1, 10 do w[backend]:step(s[backend], { 0.3 * math.sin(k), 0.2 }) end
    end
    local e1 = worst()
    for _, backend in ipairs { "cpu", "cuda" } do -- a host write to one page, then steps
      local v = s[backend].v
      v[0], v[w.cpu.n] = v[0] + 0.05, v[w.cpu.n] - 0.03
      for k = 1, 10 do w[backend]:step(s[backend], { 0.2, 0.3 * math.cos(k) }) end
    end
    local e2 = worst()
    local loss = {}
    for _, backend in ipairs { "cpu", "cuda" } do -- a recording that starts from the device-resident state
      local m = w[backend]:memo { steps = 5 }
      m:begin(s[backend])
      for _ = 1, 5 do m:step { 0.1, -0.1 } end
      m:backward(function(k, mm) if k == 5 then mm.grad.x[1] = 1 end end)
      loss[backend] = { m.state.x[1], m.grad.v[2], m.grad_params.E[2] }
      if backend == "cpu" then mc = m else mg = m end
    end
    local rec = 0
    for i = 1, 3 do
      assert.is_true(loss.cpu[i] ~= 0) -- each compared value is non-trivial
      rec = math.max(rec, math.abs(loss.cuda[i] - loss.cpu[i]) / math.abs(loss.cpu[i]))
    end
    print(string.format("  after 10 unread steps %.1e; after a host write %.1e; recording and gradients %.1e", e1,
      e2, rec))
    assert.is_true(e1 <= 1e-10 and e2 <= 1e-10 and rec <= 1e-10)
    mc:release(); mg:release()
  end)

  -- The GPU checks a control step's substeps once, at its end (cuda/README.md "Batches"): a blow-up in its middle must
  -- still name the CPU's substep and particle, and leave the state where the CPU leaves it.
  gpu_it("a blow-up in the middle of a control step: the CPU's message, substep and state (step and recording)", "f64",
    function()
      local out = {}
      for _, backend in ipairs { "cpu", "cuda" } do
        local w, s = G.scene { dim = 2, bc = "slip", substeps = 4, backend = backend }
        local s0, err = s:copy(), nil
        for _ = 1, 10 do
          local ok, e = pcall(w.step, w, s, { 0, 3e4 })
          if not ok then err = e break end
        end
        local m = w:memo { steps = 10 }
        m:begin(s0)
        local ok, merr
        for _ = 1, 10 do
          ok, merr = pcall(m.step, m, { 0, 3e4 })
          if not ok then break end
        end
        out[backend] = { msg = tostring(err):gsub("^.-world:step: ", ""), sub = s:substep(), s = s,
          mmsg = tostring(merr):gsub("^.-memo:step: ", ""), msub = m.state:substep(), mx = m.state.x[0] }
      end
      print("  " .. out.cuda.msg)
      assert.truthy(out.cpu.msg:find("after substep 2 of 4", 1, true))
      assert.are.equal(out.cpu.msg, out.cuda.msg)
      assert.are.equal(out.cpu.mmsg, out.cuda.mmsg)
      assert.are.equal(out.cpu.sub, out.cuda.sub)
      assert.are.equal(out.cpu.msub, out.cuda.msub)
      assert.is_true(rel_err(out.cuda.s.x, out.cpu.s.x, 2 * out.cpu.s.n) <= 1e-10)
      assert.is_true(math.abs(out.cuda.mx - out.cpu.mx) <= 1e-10)
    end)

  gpu_it("reports a particle leaving the grid with the CPU's message", "f64", function()
    local msgs = {}
    for _, backend in ipairs { "cpu", "cuda" } do
      local w, s = G.scene { dim = 2, bc = "slip", backend = backend }
      s.x[3] = -0.5
      local ok, err = pcall(w.step, w, s)
      assert.is_false(ok)
      msgs[backend] = tostring(err):gsub("^.-cq%.world:step: ", "")
    end
    assert.are.equal(msgs.cpu, msgs.cuda)
  end)
  gpu_it("one actuator per particle (seed 004's actuator layout): dL/du summed on the device with one global " ..
    "atomic per particle, the design gradients equal the CPU's", "f64", function()
    local out = {}
    for _, backend in ipairs { "cpu", "cuda" } do
      local nx, ny, h = 20, 16, 1 / 64 -- 320 particles: more actuators than the shared-memory sums hold (256)
      local n = nx * ny
      local w = cq.world { dim = 2, res = { 32, 32 }, dx = 1 / 32, dt = 4e-3, substeps = 8, gravity = { 0, -4 }, n = n,
        n_actuators = n, precision = "f64", backend = backend, walls = { all = { type = "sticky", thickness = 2 } } }
      w:fill("vol0", h * h); w:fill("mass", h * h); w:fill("E", 40); w:fill("nu", 0.3); w:fill("material", "neohookean")
      w:commit()
      local s0 = w:state()
      for p = 0, n - 1 do s0.x[p], s0.x[n + p] = 0.3 + (p % nx + 0.5) * h, 2 / 32 + (math.floor(p / nx) + 0.5) * h end
      local design = cq.design { world = w }
      local phi = design:layout { state = s0, radius = 1.5 * h, init = function(i) return 0.6 * G.prand(i, 21) end }
      local psi = design:actuators { state = s0, outputs = 2, layout = phi, radius = 1.5 * h,
        init = function(i) return 0.5 * G.prand(i, 22) end }
      local pulses = cq.pulses { outputs = 2, steps = 8, dt = 4e-3, dt_pul = 8e-3, sigma = 8e-3, amplitude = 6,
        init_sgn = function(i) return 0.9 * G.prand(i, 23) end, init_abs = function(i) return 0.9 * G.prand(i, 24) end }
      local run = cq.rollout { world = w, steps = 8, controller = psi.controller(pulses), design = design,
        final = function(t, st) return t:index(t:mass_centroid(st, "x"), 1) end }
      local L = run:forward(s0)
      run:backward()
      out[backend] = { L = L, psi = psi.g, phi = phi.g, n = n }
    end
    local e_psi = rel_err(out.cuda.psi, out.cpu.psi, 3 * out.cpu.n)
    local e_phi = rel_err(out.cuda.phi, out.cpu.phi, out.cpu.n)
    print(string.format("  loss %.3e / %.3e; dL/dpsi rel. error %.1e, dL/dphi %.1e", out.cpu.L, out.cuda.L, e_psi, e_phi))
    assert.is_true(math.abs(out.cuda.L - out.cpu.L) <= 1e-10 * math.abs(out.cpu.L))
    assert.is_true(e_psi <= 1e-10 and e_phi <= 1e-10)
  end)
  for _, precision in ipairs { "f64", "f32" } do
    gpu_it("t:spin and t:mass_centroid of the whole body from the engine's mass moments (a block reduction on the GPU, " ..
      "its adjoint into the memo's gradients in place), and the trajectory read where the state is: loss, dL/dphi and the " ..
      "recorded x equal the CPU's, " .. precision, precision,
      function()
      local out = {}
      for _, backend in ipairs { "cpu", "cuda" } do
        local side, h = 6, 1 / 64
        local n = side ^ 3
        local w = cq.world { dim = 3, res = { 24, 24, 24 }, dx = 1 / 32, dt = 4e-3, substeps = 8, n = n,
          precision = precision, backend = backend, gravity = { 0, -2, 0 },
          walls = { all = { type = "slip", thickness = 2 } } }
        w:fill("vol0", h ^ 3); w:fill("mass", h ^ 3); w:fill("E", 40); w:fill("nu", 0.3)
        w:fill("material", "neohookean")
        w:commit()
        local s0 = w:state()
        for p = 0, n - 1 do
          local c = { p % side, math.floor(p / side) % side, math.floor(p / side ^ 2) }
          local x = {}
          for a = 1, 3 do x[a] = 0.3 + (c[a] + 0.5) * h; s0.x[(a - 1) * n + p] = x[a] end
          s0.v[p], s0.v[2 * n + p] = 3 * (x[3] - 0.35), -3 * (x[1] - 0.35) -- spinning about y
        end
        local design = cq.design { world = w }
        local phi = design:layout { state = s0, radius = 1.5 * h, init = function(i) return 0.7 * G.prand(i, 41) end }
        local run = cq.rollout { world = w, steps = 6, design = design,
          final = function(t, st) return t:index(t:mass_centroid(st, "x"), 2) end,
          running = function(t, st) return t:add(t:scale(t:spin(st, 2), 1e-2),
            t:scale(t:index(t:mass_centroid(st, "v"), 1), 1e-2)) end }
        local L = run:forward(s0)
        -- the trajectory, read by the engine where the state is: the last step's x equals the state's
        local traj, last = run:trajectory(), run.memo.state.x
        for i = 0, 3 * n - 1 do assert.are.equal(tonumber(last[i]), traj.data.x[6 * 3 * n + i]) end
        run:backward()
        out[backend] = { L = L, phi = phi.g, n = n, x = traj.data.x }
      end
      local e_phi = rel_err(out.cuda.phi, out.cpu.phi, out.cpu.n)
      local e_x = rel_err(out.cuda.x, out.cpu.x, 7 * 3 * out.cpu.n)
      print(string.format("  %s loss %.6e / %.6e; dL/dphi rel. error %.1e; recorded x %.1e", precision, out.cpu.L,
        out.cuda.L, e_phi, e_x))
      local tol = precision == "f64" and 1e-10 or 1e-4
      assert.is_true(math.abs(out.cuda.L - out.cpu.L) <= tol * math.abs(out.cpu.L))
      assert.is_true(e_phi <= tol and e_x <= tol)
    end)
  end
end)
