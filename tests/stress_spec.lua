-- world:stress (engine cq_world_stress): the Cauchy stress of the step's own material and actuation bodies, against
-- closed forms for uniaxial stretch (NeoHookean, fixed corotated), rotated frames, the actuation term and the
-- derived J and von Mises values that frames and exports show.
local cq = require "cq"
local measures = require "cq._measures"

local E, NU = 10, 0.3
local MU, LA = E / (2 * (1 + NU)), E * NU / ((1 + NU) * (1 - 2 * NU))

-- A one-particle world of the given material and precision with F set; returns world, state.
local function particle(dim, model, F, precision)
  local w = cq.world { dim = dim, res = 8, n = 1, n_actuators = 1, precision = precision }
  w:fill("material", model)
  w:fill("E", E)
  w:fill("nu", NU)
  w:commit()
  local s = w:state()
  s:set("F", 1, F)
  return w, s
end

local function rel(a, b) return math.abs(a - b) / math.max(1e-12, math.abs(b)) end

-- Rotation by angle t about axis z (3D) and its product with diag(l, 1, 1).
local function rotated_stretch(t, l)
  local c, s = math.cos(t), math.sin(t)
  return { c * l, -s, 0, s * l, c, 0, 0, 0, 1 }, { { c, -s, 0 }, { s, c, 0 }, { 0, 0, 1 } }
end

describe("world:stress", function()
  it("equals the closed-form Cauchy stress of uniaxial stretch (NeoHookean and corotated, 2D and 3D)", function()
    for _, l in ipairs { 0.8, 1.3 } do
      for _, dim in ipairs { 2, 3 } do
        local F = dim == 2 and { l, 0, 0, 1 } or { l, 0, 0, 0, 1, 0, 0, 0, 1 }
        -- sigma = P F^T / J with F = diag(l, 1[, 1]), J = l
        local expect = {
          neohookean = { (MU * (l * l - 1) + LA * math.log(l)) / l, LA * math.log(l) / l },
          corotated = { 2 * MU * (l - 1) + LA * (l - 1), LA * (l - 1) },
        }
        for model, e in pairs(expect) do
          local w, s = particle(dim, model, F)
          local sig = w:stress(s)
          local worst = math.max(rel(sig[0], e[1]), rel(sig[dim + 1], e[2]), math.abs(sig[1]), math.abs(sig[dim]))
          if dim == 3 then worst = math.max(worst, rel(sig[8], e[2]), math.abs(sig[2]), math.abs(sig[5])) end
          print(string.format("  %dD %-10s stretch %.1f: sigma_11 %.10f (closed form %.10f), worst rel error %.1e",
            dim, model, l, sig[0], e[1], worst))
          assert.is_true(worst < 1e-12)
          -- von Mises: |sigma_11 - sigma_22| for a uniaxial state in 3D
          if dim == 3 then
            local vm = measures.von_mises(sig, 3, 1, require("ffi").new("double[1]"))[0]
            assert.is_true(rel(vm, math.abs(e[1] - e[2])) < 1e-12)
          end
        end
      end
    end
  end)

  it("rotates with the body: F = R diag(l, 1, 1) gives R sigma R^T, with the same von Mises value", function()
    local l, t = 1.25, 0.6
    local F, R = rotated_stretch(t, l)
    for _, model in ipairs { "neohookean", "corotated" } do
      local w0, s0 = particle(3, model, { l, 0, 0, 0, 1, 0, 0, 0, 1 })
      local w, s = particle(3, model, F)
      local a, b = w0:stress(s0), w:stress(s)
      local worst = 0
      for i = 1, 3 do
        for j = 1, 3 do
          local r = 0 -- (R a R^T)_ij
          for k = 1, 3 do for m = 1, 3 do r = r + R[i][k] * a[(k - 1) * 3 + m - 1] * R[j][m] end end
          worst = math.max(worst, math.abs(b[(i - 1) * 3 + j - 1] - r))
        end
      end
      local out = require("ffi").new("double[2]")
      local vm0, vm = measures.von_mises(a, 3, 1, out)[0], measures.von_mises(b, 3, 1, out)[0]
      print(string.format("  %-10s |sigma(R F) - R sigma(F) R^T| = %.1e, von Mises %.10f vs %.10f", model, worst, vm, vm0))
      assert.is_true(worst < 1e-12)
      assert.is_true(rel(vm, vm0) < 1e-12)
    end
  end)

  it("adds the actuation stress F A F^T / J of a stress actuator at u, and a user stress tensor", function()
    local w = cq.world { dim = 3, res = 8, n = 1, n_actuators = 1 }
    w:fill("act_id", 0)
    w:fill("act_axis", { 0, 2, 0 }) -- A = diag(0, 2 u, 0)
    w:commit()
    local s = w:state()
    local F = { 1.1, 0.2, 0, 0, 0.9, 0.1, 0, 0, 1.05 }
    s:set("F", 1, F)
    local passive, active = w:stress(s), w:stress(s, { 0.5 })
    local J = 1.1 * (0.9 * 1.05) - 0.2 * (0 * 1.05 - 0.1 * 0)
    local worst = 0
    for i = 1, 3 do
      for j = 1, 3 do -- (F A F^T)_ij = 2 u F_i2 F_j2 with u = 0.5
        local expect = F[(i - 1) * 3 + 2] * F[(j - 1) * 3 + 2] / J
        worst = math.max(worst, math.abs(active[(i - 1) * 3 + j - 1] - passive[(i - 1) * 3 + j - 1] - expect))
      end
    end
    print(string.format("  stress actuator: |(sigma(u) - sigma(0)) - F A F^T / J| = %.1e", worst))
    assert.is_true(worst < 1e-12)
    local user = require("ffi").new("double[9]")
    user[4] = 1 -- A_22 = 1, the same as u = 0.5 on axis 2 with max 2
    local with_user = w:stress(s, nil, user)
    for e = 0, 8 do assert.is_true(math.abs(with_user[e] - active[e]) < 1e-12) end
  end)

  it("agrees between the f32 and f64 libraries and gives J = det F", function()
    local F = { 1.2, 0.1, -0.05, 0.02, 0.95, 0.03, 0.0, -0.04, 1.1 }
    local w64, s64 = particle(3, "corotated", F, "f64")
    local w32, s32 = particle(3, "corotated", F, "f32")
    local a, b = w64:stress(s64), w32:stress(s32)
    local worst = 0
    for e = 0, 8 do worst = math.max(worst, math.abs(a[e] - b[e]) / 5) end
    print(string.format("  f32 vs f64 stress: max difference / |sigma| scale = %.1e", worst))
    assert.is_true(worst < 1e-5)
    local J = measures.J(s64.F, 3, 1, require("ffi").new("double[1]"))[0]
    local det = F[1] * (F[5] * F[9] - F[6] * F[8]) - F[2] * (F[4] * F[9] - F[6] * F[7]) + F[3] * (F[4] * F[8] - F[5] * F[7])
    assert.is_true(math.abs(J - det) < 1e-15)
  end)

  it("names bad arguments: a state of another world, a short output array, non-finite actuation", function()
    local w, s = particle(3, "neohookean", { 1, 0, 0, 0, 1, 0, 0, 0, 1 })
    local other = cq.world { dim = 3, res = 8, n = 2 }
    local ok, err = pcall(w.stress, w, other:state())
    assert.is_false(ok)
    assert.truthy(tostring(err):find("world:stress: s must be a state of a world with 1 particles in 3D", 1, true))
    ok, err = pcall(w.stress, w, s, nil, nil, require("ffi").new("double[3]"))
    assert.truthy(tostring(err):find("world:stress: out must be an FFI array of 9 doubles", 1, true))
    ok, err = pcall(w.stress, w, s, { 0 / 0 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("world:stress: u[1] is not finite", 1, true))
  end)
end)
