-- The hyperelastic models of seed 003 (Mooney-Rivlin, Yeoh, Ogden) and the bulk-modulus volumetric term: Cauchy
-- stresses against the textbook closed form, Mooney-Rivlin with c01 = 0 against the isochoric NeoHookean model, Ogden
-- against both, Ogden's adjoint at repeated stretches (tests/c/material_test.c), the volume change under load with and
-- without the bulk term, presets and parameter errors. (Their gradients are in tests/gradient_spec.lua.)
local cq = require "cq"

-- A one-particle world of the given material (a table of fields) with F set; returns world, state.
local function particle(dim, fields, F)
  local w = cq.world { dim = dim, res = 8, n = 1, n_actuators = 1, precision = "f64" }
  for k, v in pairs(fields) do w:fill(k, v) end
  w:commit()
  local s = w:state()
  s:set("F", 1, F)
  return w, s
end

-- Textbook Cauchy stress of Psi = W(I1bar, I2bar) + (K/2)(J - 1)^2 for F = diag(l) (3 stretches; Holzapfel 2000,
-- eq. 6.103 in principal form): sigma_i = (2/J) dev[(W1 + I1bar W2) bbar - W2 bbar^2]_i + K (J - 1).
local function closed_form(l, W, K)
  local J = l[1] * l[2] * l[3]
  local bb, I1bar, I2bar = {}, 0, 0
  for i = 1, 3 do bb[i] = J ^ (-2 / 3) * l[i] * l[i]; I1bar = I1bar + bb[i] end
  I2bar = bb[1] * bb[2] + bb[2] * bb[3] + bb[1] * bb[3]
  local W1, W2 = W(I1bar, I2bar)
  local t, mean = {}, 0
  for i = 1, 3 do t[i] = 2 * ((W1 + I1bar * W2) * bb[i] - W2 * bb[i] * bb[i]); mean = mean + t[i] / 3 end
  local sig = {}
  for i = 1, 3 do sig[i] = (t[i] - mean) / J + K * (J - 1) end
  return sig
end

-- Ogden in principal stretches (Holzapfel 2000, eq. 6.186 with the volumetric term): sigma_i = (1/J) sum_k mu_k
-- (lbar_i^alpha_k - (1/3) sum_j lbar_j^alpha_k) + K (J - 1), lbar_i = J^(-1/3) l_i.
local function ogden_closed_form(l, mu, alpha, K)
  local J = l[1] * l[2] * l[3]
  local sig = { K * (J - 1), K * (J - 1), K * (J - 1) }
  for k = 1, #mu do
    local p, mean = {}, 0
    for i = 1, 3 do p[i] = (J ^ (-1 / 3) * l[i]) ^ alpha[k]; mean = mean + p[i] / 3 end
    for i = 1, 3 do sig[i] = sig[i] + mu[k] * (p[i] - mean) / J end
  end
  return sig
end

local function rel(a, b) return math.abs(a - b) / math.max(1e-12, math.abs(b)) end

local MODELS = {
  mooney_rivlin = { fields = { material = "mooney_rivlin", c10 = 3, c01 = 1.2, bulk = 50 },
    W = function() return 3, 1.2 end },
  yeoh = { fields = { material = "yeoh", c10 = 3, c20 = -0.4, c30 = 0.25, bulk = 50 },
    W = function(I1bar) local t = I1bar - 3; return 3 - 0.8 * t + 0.75 * t * t, 0 end },
  ogden = { fields = { material = "ogden", mu1 = 6, alpha1 = 1.3, mu2 = 0.2, alpha2 = 5, mu3 = -1, alpha3 = -2,
    bulk = 50 }, sigma = function(l) return ogden_closed_form(l, { 6, 0.2, -1 }, { 1.3, 5, -2 }, 50) end },
  -- Arruda-Boyce's series (Abaqus' form): W1 = mu sum_i i C_i I1bar^(i-1) / lambda_m^(2i-2), W2 = 0
  arruda_boyce = { fields = { material = "arruda_boyce", mu = 5, lambda_m = 1.7, bulk = 50 },
    W = function(I1)
      local C, W1 = { 1 / 2, 1 / 20, 11 / 1050, 19 / 7000, 519 / 673750 }, 0
      for i = 1, 5 do W1 = W1 + 5 * i * C[i] * I1 ^ (i - 1) / 1.7 ^ (2 * i - 2) end
      return W1, 0
    end },
}
local function expected(M, l) return M.sigma and M.sigma(l) or closed_form(l, M.W, M.fields.bulk) end

describe("hyperelastic models (seed 003 Table 1)", function()
  it("give the closed-form Cauchy stress under uniaxial stretch and a general volume-changing stretch (3D)", function()
    for name, M in pairs(MODELS) do
      for _, l in ipairs { { 1.5, 1 / math.sqrt(1.5), 1 / math.sqrt(1.5) }, { 0.7, 1.1, 1.05 }, { 2.2, 0.8, 0.9 } } do
        local w, s = particle(3, M.fields, { l[1], 0, 0, 0, l[2], 0, 0, 0, l[3] })
        local sig, e = w:stress(s), expected(M, l)
        local worst = math.max(rel(sig[0], e[1]), rel(sig[4], e[2]), rel(sig[8], e[3]))
        for _, off in ipairs { 1, 2, 3, 5, 6, 7 } do worst = math.max(worst, math.abs(sig[off]) / math.abs(e[1])) end
        print(string.format("  3D %-13s stretch (%.3f %.3f %.3f): sigma_11 %.10f (closed form %.10f), rel %.1e",
          name, l[1], l[2], l[3], sig[0], e[1], worst))
        assert.is_true(worst < 1e-12)
      end
    end
  end)

  it("are their plane-strain slices in 2D (out-of-plane stretch 1)", function()
    for name, M in pairs(MODELS) do
      for _, l in ipairs { { 1.4, 0.8 }, { 0.75, 1.2 } } do
        local w, s = particle(2, M.fields, { l[1], 0, 0, l[2] })
        local sig, e = w:stress(s), expected(M, { l[1], l[2], 1 })
        local worst = math.max(rel(sig[0], e[1]), rel(sig[3], e[2]), math.abs(sig[1]) + math.abs(sig[2]))
        print(string.format("  2D %-13s stretch (%.2f %.2f): sigma_11 %.10f (closed form %.10f), rel %.1e", name,
          l[1], l[2], sig[0], e[1], worst))
        assert.is_true(worst < 1e-12)
      end
    end
  end)

  it("Mooney-Rivlin with c01 = 0 is the isochoric NeoHookean model (and Yeoh with c20 = c30 = 0)", function()
    -- Psi = (mu/2)(I1bar - 3) + (K/2)(J - 1)^2: sigma = (mu/J) dev(bbar) + K (J - 1) I, mu = 2 c10; a general F
    local F = { 1.2, 0.3, -0.1, 0.05, 0.9, 0.2, 0.1, -0.15, 1.1 }
    local mu, K = 4, 30
    local mr_w, mr_s = particle(3, { material = "mooney_rivlin", c10 = mu / 2, c01 = 0, bulk = K }, F)
    local ye_w, ye_s = particle(3, { material = "yeoh", c10 = mu / 2, bulk = K }, F)
    local a, b = mr_w:stress(mr_s), ye_w:stress(ye_s)
    -- the closed form, from b = F F^T
    local Fm = function(i, j) return F[(i - 1) * 3 + j] end
    local J = Fm(1, 1) * (Fm(2, 2) * Fm(3, 3) - Fm(2, 3) * Fm(3, 2)) - Fm(1, 2) * (Fm(2, 1) * Fm(3, 3) - Fm(2, 3) * Fm(3, 1))
      + Fm(1, 3) * (Fm(2, 1) * Fm(3, 2) - Fm(2, 2) * Fm(3, 1))
    local bm, tr = {}, 0
    for i = 1, 3 do
      bm[i] = {}
      for j = 1, 3 do
        local t = 0
        for k = 1, 3 do t = t + Fm(i, k) * Fm(j, k) end
        bm[i][j] = J ^ (-2 / 3) * t
      end
      tr = tr + bm[i][i]
    end
    local worst_mr, worst_ye = 0, 0
    for i = 1, 3 do
      for j = 1, 3 do
        local e = mu / J * (bm[i][j] - (i == j and tr / 3 or 0)) + (i == j and K * (J - 1) or 0)
        local k = (i - 1) * 3 + j - 1
        worst_mr = math.max(worst_mr, math.abs(a[k] - e))
        worst_ye = math.max(worst_ye, math.abs(b[k] - e))
      end
    end
    print(string.format("  max |sigma - closed form|: mooney_rivlin (c01 = 0) %.1e, yeoh (c20 = c30 = 0) %.1e",
      worst_mr, worst_ye))
    assert.is_true(worst_mr < 1e-12 and worst_ye < 1e-12)
  end)
end)

describe("Arruda-Boyce (beyond the seeds)", function()
  it("approaches the isochoric NeoHookean model as lambda_m grows, and its small-strain shear modulus is mu0 = " ..
    "mu (1 + 3/(5 lm^2) + 99/(175 lm^4) + 513/(875 lm^6) + 42039/(67375 lm^8))", function()
    local F = { 1.2, 0.3, -0.1, 0.05, 0.9, 0.2, 0.1, -0.15, 1.1 }
    local wa, sa = particle(3, { material = "arruda_boyce", mu = 4, lambda_m = 1e4, bulk = 30 }, F)
    local wb, sb = particle(3, { material = "mooney_rivlin", c10 = 2, c01 = 0, bulk = 30 }, F)
    local a, b, d, m = wa:stress(sa), wb:stress(sb), 0, 0
    for i = 0, 8 do d = math.max(d, math.abs(a[i] - b[i])); m = math.max(m, math.abs(b[i])) end
    print(string.format("  lambda_m = 1e4: max |sigma - sigma_neohookean| / max |sigma| %.1e", d / m))
    assert.is_true(d / m < 1e-7)
    -- simple shear gamma: sigma_12 = mu0 gamma + O(gamma^3)
    for _, lm in ipairs { 1.5, 3, 8 } do
      local g = 1e-4
      local w, s = particle(3, { material = "arruda_boyce", mu = 4, lambda_m = lm, bulk = 30 }, { 1, g, 0, 0, 1, 0, 0, 0, 1 })
      local mu0 = 4 * (1 + 3 / (5 * lm ^ 2) + 99 / (175 * lm ^ 4) + 513 / (875 * lm ^ 6) + 42039 / (67375 * lm ^ 8))
      local sig = w:stress(s)
      print(string.format("  lambda_m = %g: sigma_12 / gamma %.8f, mu0 %.8f", lm, sig[1] / g, mu0))
      assert.is_true(rel(sig[1] / g, mu0) < 1e-6)
    end
  end)
end)

describe("fiber-reinforced (beyond the seeds)", function()
  -- Closed form: sigma = (1/J)[mu (b - I) + lambda log(J) I] + (fiber_E / (2J)) max(I4 - 1, 0) (F a)(F a)^T, a the unit
  -- fiber direction, I4 = |F a|^2, mu and lambda from E and nu (3D relations, as lame.h)
  local E, nu, Ef = 12, 0.3, 90
  local mu, la = E / (2 * (1 + nu)), E * nu / ((1 + nu) * (1 - 2 * nu))
  local function closed(F, d, dim, fiber_E)
    local Ef = fiber_E or Ef
    local Fm = function(i, j) return F[(i - 1) * dim + j] end
    local J = dim == 2 and Fm(1, 1) * Fm(2, 2) - Fm(1, 2) * Fm(2, 1) or
      Fm(1, 1) * (Fm(2, 2) * Fm(3, 3) - Fm(2, 3) * Fm(3, 2)) - Fm(1, 2) * (Fm(2, 1) * Fm(3, 3) - Fm(2, 3) * Fm(3, 1)) +
      Fm(1, 3) * (Fm(2, 1) * Fm(3, 2) - Fm(2, 2) * Fm(3, 1))
    local len, a, w, I4 = 0, {}, {}, 0
    for i = 1, dim do len = len + d[i] ^ 2 end
    for i = 1, dim do a[i] = d[i] / math.sqrt(len) end
    for i = 1, dim do
      w[i] = 0
      for j = 1, dim do w[i] = w[i] + Fm(i, j) * a[j] end
      I4 = I4 + w[i] ^ 2
    end
    local sig = {}
    for i = 1, dim do
      for j = 1, dim do
        local b = 0
        for k = 1, dim do b = b + Fm(i, k) * Fm(j, k) end
        sig[(i - 1) * dim + j] = (mu * (b - (i == j and 1 or 0)) + (i == j and la * math.log(J) or 0)) / J +
          Ef / (2 * J) * math.max(I4 - 1, 0) * w[i] * w[j]
      end
    end
    return sig
  end
  local function check_at(dim, F, d)
    local w, s = particle(dim, { material = "fiber_reinforced", E = E, nu = nu, fiber_E = Ef, fiber_dir = d }, F)
    local sig, e, worst, big = w:stress(s), closed(F, d, dim), 0, 0
    for i = 1, dim * dim do
      worst = math.max(worst, math.abs(sig[i - 1] - e[i]))
      big = math.max(big, math.abs(e[i]))
    end
    return worst / big, sig, e
  end

  it("gives the closed-form Cauchy stress stretched along the fibers, across them and in compression, for any F " ..
    "and fiber direction, in 2D and 3D (the direction normalised)", function()
    local cases = {
      { "3D stretched along the fibers", 3, { 1.3, 0, 0, 0, 0.9, 0, 0, 0, 0.9 }, { 1, 0, 0 } },
      { "3D stretched across the fibers (slack)", 3, { 1.3, 0, 0, 0, 0.9, 0, 0, 0, 0.9 }, { 0, 1, 0 } },
      { "3D compressed along the fibers (slack)", 3, { 0.8, 0, 0, 0, 1.1, 0, 0, 0, 1.1 }, { 1, 0, 0 } },
      { "3D general F, oblique fibers (x 5)", 3, { 1.2, 0.3, -0.1, 0.05, 0.9, 0.2, 0.1, -0.15, 1.1 }, { 5, 2.5, -1 } },
      { "2D stretched along the fibers", 2, { 1.25, 0, 0, 0.92 }, { 1, 0 } },
      { "2D general F, oblique fibers", 2, { 1.3, 0.25, -0.1, 0.85 }, { 0.6, -0.8 } },
    }
    for _, c in ipairs(cases) do
      local r, sig, e = check_at(c[2], c[3], c[4])
      print(string.format("  %-40s sigma_11 %.10f (closed form %.10f), rel %.1e", c[1], sig[0], e[1], r))
      assert.is_true(r < 1e-12, c[1])
    end
  end)

  it("under uniaxial stress (both lateral stresses 0, the lateral stretches found by Newton on the closed form) " ..
    "the fibers carry load only while stretched", function()
    local function F_of(l, r2, r3) return { l, 0, 0, 0, r2, 0, 0, 0, r3 } end
    local axial = {}
    for _, c in ipairs { { "along", { 1, 0, 0 } }, { "across", { 0, 1, 0 } }, { "none", { 0, 0, 0 } } } do
      for _, l in ipairs { 1.2, 0.85 } do
        -- residuals sigma_22, sigma_33 in the lateral stretches (r2, r3); "none": the matrix alone (fiber_E 0)
        local function res(r2, r3)
          local e = c[1] == "none" and closed(F_of(l, r2, r3), { 1, 0, 0 }, 3, 0) or closed(F_of(l, r2, r3), c[2], 3)
          return e[5], e[9], e[1]
        end
        local r2, r3, h = 1, 1, 1e-7
        for _ = 1, 60 do
          local f2, f3 = res(r2, r3)
          local a2, a3 = res(r2 + h, r3)
          local b2, b3 = res(r2, r3 + h)
          local j11, j12, j21, j22 = (a2 - f2) / h, (b2 - f2) / h, (a3 - f3) / h, (b3 - f3) / h
          local det = j11 * j22 - j12 * j21
          r2, r3 = r2 - (j22 * f2 - j12 * f3) / det, r3 - (j11 * f3 - j21 * f2) / det
        end
        local _, _, s11 = res(r2, r3)
        axial[c[1] .. l] = s11
        if c[1] ~= "none" then
          local rr, sig, e = check_at(3, F_of(l, r2, r3), c[2])
          print(string.format("  fibers %-6s axial stretch %.2f: lateral stretches %.6f %.6f, sigma_11 %.8f (closed " ..
            "form %.8f), lateral %.1e %.1e, rel %.1e", c[1], l, r2, r3, sig[0], e[1], sig[4], sig[8], rr))
          assert.is_true(rr < 1e-12 and math.abs(sig[4]) + math.abs(sig[8]) < 1e-8 * math.abs(sig[0]))
        end
      end
    end
    -- stretched along them the fibers stiffen the axis several times; across them, or in compression, they are slack
    -- and the response is the matrix's
    print(string.format("  sigma_11 at 1.2: along %.4f, across %.4f, matrix %.4f; at 0.85: along %.4f, matrix %.4f",
      axial["along1.2"], axial["across1.2"], axial["none1.2"], axial["along0.85"], axial["none0.85"]))
    assert.is_true(axial["along1.2"] > 3 * axial["none1.2"])
    assert.is_true(rel(axial["across1.2"], axial["none1.2"]) < 1e-12 and rel(axial["along0.85"], axial["none0.85"]) < 1e-12)
  end)
end)

describe("Ogden (seed 003 Table 1)", function()
  -- max |a - b| / max |b| over the Cauchy stresses of two one-particle worlds at the same F
  local function diff(dim, fa, fb, F)
    local wa, sa = particle(dim, fa, F)
    local wb, sb = particle(dim, fb, F)
    local a, b, d, m = wa:stress(sa), wb:stress(sb), 0, 0
    for i = 0, dim * dim - 1 do d = math.max(d, math.abs(a[i] - b[i])); m = math.max(m, math.abs(b[i])) end
    return d / m
  end
  local F3, F2 = { 1.2, 0.3, -0.1, 0.05, 0.9, 0.2, 0.1, -0.15, 1.1 }, { 1.3, 0.25, -0.1, 0.85 }

  it("with one term alpha = 2 is the isochoric NeoHookean model (Mooney-Rivlin, c01 = 0, mu1 = 2 c10)", function()
    for dim, F in pairs { [2] = F2, [3] = F3 } do
      local r = diff(dim, { material = "ogden", mu1 = 5, alpha1 = 2, bulk = 30 },
        { material = "mooney_rivlin", c10 = 2.5, c01 = 0, bulk = 30 }, F)
      print(string.format("  %dD max |sigma_ogden - sigma_neohookean| / max |sigma| %.1e", dim, r))
      assert.is_true(r < 1e-12)
    end
  end)

  it("with alpha = (2, -2) is Mooney-Rivlin (mu1 = 2 c10, mu2 = -2 c01)", function()
    for dim, F in pairs { [2] = F2, [3] = F3 } do
      local r = diff(dim, { material = "ogden", mu1 = 6, alpha1 = 2, mu2 = -2.4, alpha2 = -2, bulk = 30 },
        { material = "mooney_rivlin", c10 = 3, c01 = 1.2, bulk = 30 }, F)
      print(string.format("  %dD max |sigma_ogden - sigma_mooney_rivlin| / max |sigma| %.1e", dim, r))
      assert.is_true(r < 1e-12)
    end
  end)

  it("has a finite, exact adjoint at repeated stretches (F = I, two equal stretches; tests/c/material_test.c)", function()
    local paths = package.loaded["cq._paths"] or {}
    local exe = (paths.lib or "build/lib"):gsub("/lib$", "") .. "/test/material_test"
    local p = assert(io.popen(exe .. " 2>&1; echo \"rc=$?\""))
    local out = p:read("*a")
    p:close()
    print((out:gsub("\n?rc=%d+%s*$", ""):gsub("([^\n]+)", "  %1")))
    assert.is_truthy(out:find("rc=0%s*$"), "material_test failed (built by make test: make " .. exe .. ")")
    local cases = 0
    for line in out:gmatch("[^\n]+") do if line:match("^ok ") then cases = cases + 1 end end
    assert.are.equal(15, cases)
    assert.is_truthy(out:find("0 failures", 1, true))
  end)
end)

-- A square block (E = 10, nu = 0.3, density 1, side 0.25) standing on a sticky floor under gravity g = 6: the weight
-- compresses its bottom by 10-25 %. Returns the worst |J - 1| after 1 s and the largest vertical
-- compression of a particle (1 - F_yy).
local function squeeze(material)
  local robot = cq.robot { dim = 2 }
  local h = 1 / 64
  robot:box { offset = { 0.3, 3 * h }, size = { 0.25, 0.25 }, spacing = h / 2, material = material } -- on the floor
  local world, s0 = robot:world { res = { 64, 64 }, dx = h, dt = 1e-2, substeps = 40, gravity = { 0, -6 },
    walls = { all = { type = "sticky", thickness = 3 } } }
  local memo = world:memo { steps = 100 }
  memo:begin(s0)
  for _ = 1, 100 do memo:step() end
  local n, F, worst, strain = world.n, memo.state.F, 0, 0
  for p = 0, n - 1 do
    local J = F[p] * F[3 * n + p] - F[n + p] * F[2 * n + p]
    worst = math.max(worst, math.abs(J - 1))
    strain = math.max(strain, 1 - F[3 * n + p])
  end
  return worst, strain
end

describe("the bulk term (bulk/2)(J - 1)^2", function()
  it("keeps J within 2 % of 1 (bulk = 100 E) where E and nu alone, and seed 000 eq. 14, change the volume by 20 %",
    function()
    local plain, strain = squeeze { E = 10, nu = 0.3 }
    local eq14 = squeeze { E = 10, nu = 0.3, inc_p = 2 }
    local bulk, strain_b = squeeze { E = 10, nu = 0.3, bulk = 1000 }
    print(string.format("  max |J - 1| at %.0f %% compression: E, nu alone %.4f; + eq. 14 (p = 2) %.4f; " ..
      "+ bulk = 100 E %.4f (compression %.0f %%)", 100 * strain, plain, eq14, bulk, 100 * strain_b))
    assert.is_true(strain > 0.1 and strain_b > 0.1) -- the block is squeezed in both cases
    assert.is_true(plain > 0.1 and eq14 > 0.1)     -- eq. 14 is no stiffer than nu alone (docs/api.md)
    assert.is_true(bulk < 0.02)
  end)
end)

describe("materials in the robot builder", function()
  it("take presets and check each model's parameters at the call site", function()
    local robot = cq.robot { dim = 2 }
    robot:box { offset = { 0.1, 0.1 }, size = { 0.05, 0.05 }, spacing = 0.025, material = { preset = "dragonskin30" } }
    local w = robot:world { res = { 16, 16 }, dx = 1 / 16, dt = 1e-8, substeps = 1 }
    assert.are.equal(cq.MATERIAL.mooney_rivlin, w.params.material[0])
    assert.are.equal(1.19e3, w.params.c10[0])
    assert.are.equal(23.028e3, w.params.c01[0])
    assert.are.equal(1.75e9, w.params.bulk[0])
    local cases = {
      { { model = "mooney_rivlin", c10 = 1, c01 = 1 }, "material.bulk is required by model mooney_rivlin" },
      { { model = "mooney_rivlin", c10 = -1, c01 = 1, bulk = 5 }, "material.c10" },
      { { model = "yeoh", c10 = 0, bulk = 5 }, "robot:box: material (yeoh): c10 must be > 0 (got 0)" },
      { { model = "yeoh", c10 = 1, bulk = 0 }, "material (yeoh): bulk" },
      { { model = "ogden", mu = { 1 }, alpha = { 2 } }, "material.bulk is required by model ogden" },
      { { model = "ogden", mu = { 1, 2 }, alpha = { 2 }, bulk = 5 }, "the lists material.alpha and material.mu must have the same length (got 1 and 2)" },
      { { model = "ogden", mu = { 1, -2 }, alpha = { 2, 3 }, bulk = 5 }, "material (ogden): mu2 * alpha2 must be > 0 (same signs; got mu2 = -2, alpha2 = 3)" },
      { { model = "ogden", mu = { 1, 2 }, alpha = { 2, 0 }, bulk = 5 }, "alpha2 must be != 0 where mu2 != 0" },
      { { model = "ogden", mu = { 1, 2, 3, 4 }, alpha = { 1, 2, 3 }, bulk = 5 }, "material.mu must be a list of 1 to 3" },
      { { model = "ogden", mu = { 1 }, alpha = { 2 }, mu2 = 1, bulk = 5 }, "material.mu2 cannot be given with the list material.mu" },
      { { model = "ogden", mu3 = 1, alpha3 = -1, bulk = 5 }, "mu3 * alpha3 must be > 0" },
      { { model = "ogden", alpha1 = 2, bulk = 5 }, "(ogden): needs at least one term: mu1, mu2 or mu3 != 0" },
      { { model = "ogre", E = 1 }, "material.model" },
      { { preset = "rubber" }, "material.preset" },
      { { E = 10, bulk = -1 }, "material.bulk" },
      -- a key of another model is refused, naming what this one takes
      { { E = 10, c10 = 3 }, "material.c10 is not a parameter of model neohookean (it takes E, nu; every model takes" },
      { { model = "mooney_rivlin", c10 = 1, c01 = 1, bulk = 5, E = 3 }, "material.E is not a parameter of model mooney_rivlin (it takes c10, c01, bulk" },
      { { model = "arruda_boyce", mu = 1, bulk = 5 }, "material.lambda_m is required by model arruda_boyce (needs mu, lambda_m, bulk)" },
      { { model = "arruda_boyce", mu = 1, lambda_m = 0, bulk = 5 }, "material (arruda_boyce): mu and lambda_m must be > 0" },
      { { model = "fiber_reinforced", fiber_E = 5 }, "material.fiber_dir is required by model fiber_reinforced" },
      { { model = "fiber_reinforced", fiber_E = 5, fiber_dir = { 0, 0 } }, "fiber_dir must be a non-zero vector" },
      { { model = "fiber_reinforced", fiber_E = -5, fiber_dir = { 1, 0 } }, "material.fiber_E must be >= 0" },
      { { model = "fiber_reinforced", fiber_E = 5, fiber_dir = { 1, 0, 0 } }, "material.fiber_dir must be a list of 2 numbers" },
      { { model = "arruda_boyce", mu = { 1, 2 }, lambda_m = 2, bulk = 5 }, "material.mu must be a number (got a table of 2)" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(function() cq.robot { dim = 2 }:box { offset = { 0.1, 0.1 }, size = { 0.05, 0.05 },
        material = c[1] } end)
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find(c[2], 1, true), tostring(err))
    end
  end)

  it("take Ogden's terms as lists or as mu1 .. alpha3 and give them to the engine", function()
    local robot = cq.robot { dim = 2 }
    robot:box { offset = { 0.1, 0.1 }, size = { 0.05, 0.05 }, spacing = 0.025,
      material = { model = "ogden", mu = { 6, -1 }, alpha = { 1.3, -2 }, bulk = 40 } }
    robot:box { offset = { 0.3, 0.1 }, size = { 0.05, 0.05 }, spacing = 0.025,
      material = { model = "ogden", mu2 = 0.2, alpha2 = 5, bulk = 40 } }
    local w = robot:world { res = { 32, 32 }, dx = 1 / 32, dt = 1e-8, substeps = 1 }
    local P, last = w.params, w.n - 1
    assert.are.equal(cq.MATERIAL.ogden, P.material[0])
    assert.are.same({ 6, 1.3, -1, -2, 0, 0 }, { P.mu1[0], P.alpha1[0], P.mu2[0], P.alpha2[0], P.mu3[0], P.alpha3[0] })
    assert.are.same({ 0, 0, 0.2, 5, 0, 0 },
      { P.mu1[last], P.alpha1[last], P.mu2[last], P.alpha2[last], P.mu3[last], P.alpha3[last] })
  end)

  it("refuses an Ogden particle with a term of mu alpha <= 0, or none, at commit (engine check)", function()
    for _, c in ipairs {
      { { mu1 = 1, alpha1 = 2, mu2 = 1, alpha2 = -2, bulk = 5 }, "mu2 * alpha2 must be > 0 (same signs; got mu2 = 1, alpha2 = -2)" },
      { { mu3 = 1, bulk = 5 }, "alpha3 must be != 0 where mu3 != 0" },
      { { alpha1 = 2, bulk = 5 }, "needs at least one term" },
      { { mu1 = 1, alpha1 = 2 }, "bulk (the bulk modulus K of its volumetric term) must be > 0" } } do
      local w = cq.world { dim = 3, res = 8, n = 1, n_actuators = 1 }
      w:fill("material", "ogden")
      for k, v in pairs(c[1]) do w:fill(k, v) end
      local ok, err = pcall(function() w:commit() end)
      assert.is_false(ok)
      print("  " .. tostring(err):gsub("\n.*", ""))
      assert.is_truthy(tostring(err):find("particle 1 (ogden): " .. c[2], 1, true))
    end
  end)

  it("refuses a hyperelastic particle without its bulk modulus at commit (engine check)", function()
    local w = cq.world { dim = 2, res = 8, n = 1, n_actuators = 1 }
    w:fill("material", "mooney_rivlin")
    w:fill("c10", 1)
    local ok, err = pcall(function() w:commit() end)
    assert.is_false(ok)
    print("  " .. tostring(err):gsub("\n.*", ""))
    assert.is_truthy(tostring(err):find("bulk", 1, true))
  end)
end)
