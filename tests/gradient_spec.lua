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
  -- actuator 2 a pneumatic chamber: gradients w.r.t. the pressure signal ("act"), the state and the wall geometry
  { name = "neohookean, chamber", model = "neohookean", act2 = "chamber", strain = 0.1,
    kinds = { "E", "nu", "wall_area" }, bcs = { "friction", "moving" } },
  -- a closed cavity: the chamber's forces made free of net force and torque (engine/chamber.h), which couples every
  -- wall particle to every other through the walls' sums
  { name = "neohookean, cavity", model = "neohookean", act2 = "cavity", strain = 0.1,
    kinds = { "E", "wall_area" }, bcs = { "slip", "moving" } },
}
local COMMON = { "x", "v", "C", "F", "act", "mass", "vol0", "act_w" }
local TOL = 1e-6

describe("the gradient matrix", function()
  it("checks every differentiable parameter of engine/fields.h for some material", function()
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
            strain = mat.strain, act2 = mat.act2, bc = bc == "moving" and "friction" or bc, moving = bc == "moving" }
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
