-- Finite-difference checks (float64, central differences with Richardson extrapolation, steps from G.steps) of every gradient kind:
-- initial x, v, C, F, the actuation of every control step (stress, force, chamber and cavity actuators), every
-- differentiable per-particle parameter (E, nu, mass, rest volume, each material's own, a chamber wall's area), for each material, each boundary type (and a moving, vibrating floor), in 2D and 3D, over
-- 100 steps with collisions against the walls and a running loss at the middle step.
local G = require "tests._grad"

-- Each material with the parameters its model reads (every other kind is checked for every material); the new
-- models run against the two hardest boundaries (friction, and the moving vibrating floor).
local ALL_BCS = { "sticky", "slip", "separate", "friction", "moving" }
local materials = {
  { name = "corotated", model = "corotated", kinds = { "E", "nu" } },
  { name = "neohookean", model = "neohookean", kinds = { "E", "nu" } },
  { name = "neohookean+incompressible", model = "neohookean", inc_p = 2, kinds = { "E", "nu" } },
  { name = "neohookean+bulk", model = "neohookean", params = { bulk = 30 }, kinds = { "E", "nu", "bulk" },
    bcs = { "friction", "moving" } },
  { name = "mooney_rivlin+visc", model = "mooney_rivlin", params = { c10 = 4, c01 = 1.5, bulk = 40, visc = 0.2 },
    kinds = { "c10", "c01", "bulk", "visc" }, bcs = { "friction", "moving" } },
  { name = "fluid", model = "fluid", params = { bulk = 35, visc = 0.15 }, kinds = { "bulk", "visc" },
    bcs = { "friction", "moving" } },
  { name = "yeoh", model = "yeoh", params = { c10 = 4, c20 = 3, c30 = 5, bulk = 40 }, strain = 0.1,
    kinds = { "c10", "c20", "c30", "bulk" }, bcs = { "friction", "moving" } },
  { name = "ogden", model = "ogden", params = { mu1 = 6, alpha1 = 1.3, mu2 = 0.2, alpha2 = 5, mu3 = -1, alpha3 = -2,
    bulk = 40 }, strain = 0.1, kinds = { "mu1", "alpha1", "mu2", "alpha2", "mu3", "alpha3", "bulk" },
    bcs = { "friction", "moving" } },
  -- beyond the seeds: Arruda-Boyce with a low locking stretch (its higher terms matter), and the fiber-reinforced
  -- material with the fibers stretched in some particles and slack in others (direction varied per particle)
  { name = "arruda_boyce", model = "arruda_boyce", params = { mu = 12, lambda_m = 2, bulk = 40 }, strain = 0.1,
    kinds = { "mu", "lambda_m", "bulk" }, bcs = { "friction", "moving" } },
  { name = "fiber_reinforced", model = "fiber_reinforced", params = { fiber_E = 80, fiber_dir = { 1, 0.6, -0.4 } },
    strain = 0.1, kinds = { "E", "nu", "fiber_E", "fiber_dir" }, bcs = { "friction", "moving" } },
  -- volumetric = "averaged" (engine/terms/volumetric.h): the bulk term on each grid node's volume-averaged J, every
  -- particle keeping K_s = its model's P-wave modulus (< K here) on its own: c10 and c01 reach the loss through K_s too
  { name = "mooney_rivlin, averaged bulk", model = "mooney_rivlin", params = { c10 = 4, c01 = 1.5, bulk = 150 },
    volumetric = "averaged", kinds = { "c10", "c01", "bulk" }, bcs = { "friction", "moving" } },
  -- the same with volumetric_own = 4: K_s = 4 M (still < K), so c10 and c01 reach the loss through 4 M
  { name = "mooney_rivlin, averaged bulk, own share 4", model = "mooney_rivlin", params = { c10 = 4, c01 = 1.5,
    bulk = 150 }, volumetric = "averaged", volumetric_own = 4, kinds = { "c10", "c01", "bulk" }, bcs = { "friction" } },
  -- a fluid in the groups: its own share K_s = 1e-3 K (volumetric.h vol_own_bulk), the rest on its group's J, and
  -- its J projected to its group's mean at each substep's start like a solid's. Slip walls: a particle's group is
  -- discrete, and against friction walls this fluid has particles that cross a group's edge within the FD step down
  -- to 1e-7 (dL/dx jumps between steps; the analytic value agrees wherever the FD is smooth)
  { name = "fluid, averaged bulk", model = "fluid", params = { bulk = 35, visc = 0.15 }, volumetric = "averaged",
    kinds = { "bulk", "visc" }, bcs = { "slip" } },
  -- the same with volumetric_groups = "initial": each particle's group fixed in the first state, so no particle
  -- crosses a group's edge and the loss is smooth in every input: the friction walls the case above avoids
  { name = "fluid, averaged bulk, initial groups", model = "fluid", params = { bulk = 35, visc = 0.15 },
    volumetric = "averaged", volumetric_groups = "initial", kinds = { "bulk", "visc" }, bcs = { "friction", "moving" } },
  -- grid fluid (engine/terms/fill.h): the pressure from the grid's node fills, its force in P2G's momentum; the adjoint
  -- through the weights' derivatives into x, the volumes V0 det F into vol0 and F, and the bulk modulus
  { name = "fluid, grid fluid", model = "fluid", params = { bulk = 35, visc = 0.15 }, fluid = "grid",
    kinds = { "bulk", "visc" }, bcs = { "slip", "moving" } },
  -- fluid_contact = "separate": the block's half a grid fluid on its own copy of the grid's velocities, the other half
  -- a solid on the first; they meet only through the fill's pressure (kernel_types.h field_nodes)
  { name = "neohookean + fluid, separate fields", model = "neohookean", mixed_fluid = { bulk = 35, visc = 0.15 },
    fluid = "grid", fluid_contact = "separate", kinds = { "E", "nu", "bulk", "visc" }, bcs = { "slip", "moving" } },
  -- actuator 2 a pneumatic chamber: gradients w.r.t. the pressure signal ("act"), the state and the wall geometry
  { name = "neohookean, chamber", model = "neohookean", act2 = "chamber", strain = 0.1,
    kinds = { "E", "nu", "wall_area" }, bcs = { "friction", "moving" } },
  -- a closed cavity: the chamber's forces made free of net force and torque (engine/stages/chamber.h), which couples every
  -- wall particle to every other through the walls' sums
  { name = "neohookean, cavity", model = "neohookean", act2 = "cavity", strain = 0.1,
    kinds = { "E", "wall_area" }, bcs = { "slip", "moving" } },
  -- only stress actuators: the P2G adjoint of each full block of 16 particles runs as SIMD lanes on the CPU
  -- (engine/backends/cpu/cpu_loops.h; simd = the dimensions that have the path)
  { name = "neohookean, stress only (SIMD)", model = "neohookean", act2 = "stress", kinds = { "E", "nu" },
    bcs = { "friction", "moving" }, simd = { [2] = true, [3] = true } },
  { name = "corotated, stress only (SIMD)", model = "corotated", act2 = "stress", kinds = { "E", "nu" },
    bcs = { "friction", "moving" }, simd = { [2] = true } },
  -- per-material damping (g2p.h damping_factor): particles at the world's rate 2/s, at 6/s and at 0, each scaling
  -- the velocity it gathers by exp(-(its rate - 2) dt); a fluid's default is none
  { name = "neohookean, own damping", model = "neohookean", damping = 2, particle_damping = 6, kinds = { "E", "nu" },
    bcs = { "sticky", "friction" } },
  { name = "fluid, own damping", model = "fluid", params = { bulk = 35, visc = 0.15 }, damping = 2,
    particle_damping = 6, kinds = { "bulk" }, bcs = { "slip" } },
}
local COMMON = { "x", "v", "C", "F", "act", "mass", "vol0", "act_w" }
local TOL = 1e-6

describe("the gradient matrix", function()
  it("checks every differentiable parameter of engine/core/fields.h for some material", function()
    G.assert_every_kind_checked(COMMON, materials, "material")
  end)
end)

for _, dim in ipairs { 2, 3 } do
  describe(dim .. "D gradients vs central differences", function()
    for _, mat in ipairs(materials) do
      for _, bc in ipairs(mat.bcs or ALL_BCS) do
        local name = mat.name .. ", " .. bc .. " walls"
        it(name, function()
          local w, s0 = G.scene { dim = dim, material = mat.model, inc_p = mat.inc_p, params = mat.params,
            strain = mat.strain, act2 = mat.act2, bc = bc == "moving" and "friction" or bc, moving = bc == "moving",
            volumetric = mat.volumetric, fluid = mat.fluid, fluid_contact = mat.fluid_contact,
            mixed_fluid = mat.mixed_fluid, volumetric_groups = mat.volumetric_groups,
            volumetric_own = mat.volumetric_own, damping = mat.damping, particle_damping = mat.particle_damping }
          local P = G.problem(w, s0, 100)
          P.loss()
          local g = P.backward()
          local worst, line = 0, {}
          local kinds = { unpack(COMMON) }
          for _, k in ipairs(mat.kinds) do kinds[#kinds + 1] = k end
          for _, kind in ipairs(kinds) do
            local _, _, rel, h = G.check(P, g, kind, TOL)
            worst = math.max(worst, rel)
            line[#line + 1] = string.format("%s %.1e%s", kind, rel, h ~= G.steps[1] and ("@" .. h) or "")
          end
          print(string.format("  %dD %-26s rel. errors: %s", dim, name, table.concat(line, " ")))
          assert.is_true(worst <= TOL, string.format("worst relative error %.3e > %.0e", worst, TOL))
          if mat.simd and mat.simd[dim] then
            assert.is_true(w:solver_stats().simd_particles > 0, "the SIMD path did not run")
          end
        end)
      end
    end
  end)
end

describe("checkpointing", function()
  it("gives the same gradients as storing every state, with O(sqrt N) states", function()
    local w, s0 = G.scene { dim = 2, bc = "friction", substeps = 3, dt = 6e-3 }
    local steps = 40 -- 120 substeps
    local full = G.problem(w, s0, steps, 1)
    local ck = G.problem(w, s0, steps, 11)
    local L1, L2 = full.loss(), ck.loss()
    local g1, g2 = full.backward(), ck.backward()
    assert.are.equal(L1, L2)
    local maxdiff, maxabs = G.max_grad_diff(g1, g2, steps)
    print(string.format("  stored states: full %d, checkpointed %d; max |difference| %.3e (max |g| %.3e)",
      full.memo:stored_states(), ck.memo:stored_states(), maxdiff, maxabs))
    assert.is_true(maxdiff <= 1e-13 * maxabs)
    assert.are.equal(120, full.memo:stored_states())
    assert.is_true(ck.memo:stored_states() <= 2 * math.ceil(math.sqrt(120)) + 1)
  end)
end)

describe("the memo's kept P2G records (engine/core/memo.c, integrator.h cqi_kept)", function()
  -- The gradients of one problem whose adjoint substeps take P2G from the memo's records, or recompute it
  -- (CQ_KEEP=0, read when a world's backend is made), with every state kept or checkpointed (every 4th substep).
  local function run(dim, keep, every)
    local w, s0 = G.with_env("CQ_KEEP", keep and "1" or "0", function()
      return G.scene { dim = dim, material = "neohookean", act2 = "stress", bc = "friction" }
    end)
    local P = G.problem(w, s0, 60, every)
    local L = P.loss()
    w:solver_stats(true)
    local g = P.backward()
    return L, g, w:solver_stats().kept_substeps
  end
  for _, dim in ipairs { 2, 3 } do
    it(dim .. "D: the same gradients as recomputing P2G, every substep's record used when every state is kept", function()
      local L0, g0, k0 = run(dim, false)
      local L1, g1, k1 = run(dim, true)
      local L2, g2, k2 = run(dim, true, 4)
      assert.are.equal(L0, L1)
      assert.are.equal(L0, L2)
      local d1, big = G.max_grad_diff(g1, g0, 60)
      local d2 = G.max_grad_diff(g2, g0, 60)
      print(string.format("  %dD: adjoint substeps from records: %d (every state kept), %d (checkpointed), %d " ..
        "(CQ_KEEP=0); max |difference| %.2e and %.2e of max |gradient| %.2e", dim, k1, k2, k0, d1, d2, big))
      assert.are.equal(0, k0)
      assert.are.equal(60, k1) -- G.problem: one substep per step
      assert.are.equal(45, k2) -- the last substep of each segment of 4 has no record: it is not recomputed
      assert.is_true(d1 <= 1e-12 * big and d2 <= 1e-12 * big)
    end)
  end
end)

describe("the CPU's SIMD lanes (engine/backends/cpu/cpu_loops.h)", function()
  -- The gradients of one problem with the SIMD path on or off (CQ_SIMD is read when a world's backend is made).
  local function gradients(dim, simd)
    local w, s0 = G.with_env("CQ_SIMD", simd and "1" or "0", function()
      return G.scene { dim = dim, material = "neohookean", act2 = "stress", bc = "friction" }
    end)
    local P = G.problem(w, s0, 100)
    P.loss()
    local g = P.backward()
    return g, w:solver_stats().simd_particles, w.n
  end
  for _, dim in ipairs { 2, 3 } do
    it(dim .. "D: the same gradients as particle by particle, to the vector logarithm's last bits", function()
      local g1, n1, n = gradients(dim, true)
      local g0, n0 = gradients(dim, false)
      local full = math.floor(n / 16) * 16 -- particles in full blocks: every one of them runs as a lane
      assert.are.equal(0, n0)
      assert.are.equal(0, n1 % full)
      assert.is_true(n1 > 0)
      local diff, big = G.max_grad_diff(g1, g0, 100)
      print(string.format("  %dD: %d of %d particles in lanes; max |SIMD - scalar| %.2e of max |gradient| %.2e", dim,
        full, n, diff, big))
      assert.is_true(diff <= 1e-10 * big, string.format("SIMD and scalar gradients differ by %.3e", diff))
    end)
  end
end)
