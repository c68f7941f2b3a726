--- Material tables for the robot builder (robot:box, robot:image, robot:mesh, ...): defaults, per-model checks and
--- presets. A material is { model = <engine model name>, density, <the model's parameters> } or { preset = name,
--- <overrides> }. Models and the parameters they read (engine/material_<model>.h; stresses in the caller's units):
---   neohookean, corotated: E, nu (+ optional inc_p, seed 000 eq. 14; + optional bulk)
---   mooney_rivlin: c10, c01, bulk (K = 2 / D1);  yeoh: c10, c20, c30, bulk;  fluid: bulk (its lambda)
---   ogden: mu = {mu_1, ...}, alpha = {alpha_1, ...} (1 to 3 terms) or mu1, alpha1, ..., mu3, alpha3; bulk
--- visc (dynamic viscosity) adds mu_v (grad v + grad v^T) to any model.
--- bulk adds (bulk/2)(J - 1)^2 to any model: the volumetric stiffness that keeps J near 1 (docs/api.md).
local check = require "cq._check"
local M = {}

local KEYS = check.option_set("robot material",
  { "preset", "model", "E", "nu", "density", "inc_p", "bulk", "visc", "c10", "c01", "c20", "c30", "mu", "alpha",
    "mu1", "alpha1", "mu2", "alpha2", "mu3", "alpha3" })

--- Presets (SI units: Pa, kg/m^3). dragonskin30: seed 003's Mooney-Rivlin fit of DragonSkin-30 silicone (its table
--- calls them C01 = 1.19 kPa on I1bar and C10 = 23.028 kPa on I2bar; here the usual names: c10 multiplies I1bar),
--- 1/D1 = k/2 with k = 1.75 GPa; density 1080 kg/m^3 (Smooth-On's datasheet).
M.presets = {
  dragonskin30 = { model = "mooney_rivlin", c10 = 1.19e3, c01 = 23.028e3, bulk = 1.75e9, density = 1080 },
  water = { model = "fluid", bulk = 2.2e9, visc = 1.0e-3, density = 1000 }, -- at 20 C
}

-- The parameters each model needs (besides density).
local NEEDS = {
  neohookean = { "E", "nu" }, corotated = { "E", "nu" },
  mooney_rivlin = { "c10", "c01", "bulk" }, yeoh = { "c10", "bulk" }, fluid = { "bulk" }, ogden = { "mu", "alpha", "bulk" },
}
local OGDEN_TERMS = 3

-- Ogden's terms into out.mu1 .. out.alpha3, from the lists mu = {...}, alpha = {...} or the keys mu1 .. alpha3 (not
-- both), with its checks: at least one term, and mu_k alpha_k > 0 wherever mu_k ~= 0 (each term stiffens).
local function ogden_terms(where, get, out)
  local lists = get("mu") ~= nil or get("alpha") ~= nil
  local name = {}
  for k = 1, OGDEN_TERMS do
    if lists then
      name[k] = { mu = "material.mu[" .. k .. "]", alpha = "material.alpha[" .. k .. "]" }
    else
      name[k] = { mu = "material.mu" .. k, alpha = "material.alpha" .. k }
    end
  end
  if lists then
    for k = 1, OGDEN_TERMS do
      for _, key in ipairs { "mu" .. k, "alpha" .. k } do
        if get(key) ~= nil then
          check.raise(string.format("%s: material.%s cannot be given with the lists material.mu and material.alpha",
            where, key))
        end
      end
    end
    local mu, alpha = get("mu"), get("alpha")
    for _, key in ipairs { "mu", "alpha" } do
      local v = get(key)
      if type(v) ~= "table" or #v < 1 or #v > OGDEN_TERMS then
        check.fail(where, "material." .. key .. " must be a list of 1 to " .. OGDEN_TERMS .. " numbers",
          type(v) == "table" and ("a list of " .. #v) or v)
      end
    end
    if #mu ~= #alpha then
      check.raise(string.format("%s: material.mu and material.alpha must have the same length (got %d and %d)",
        where, #mu, #alpha))
    end
    for k = 1, OGDEN_TERMS do
      out["mu" .. k] = check.number(where, name[k].mu, mu[k] or 0, -math.huge, math.huge)
      out["alpha" .. k] = check.number(where, name[k].alpha, alpha[k] or 0, -math.huge, math.huge)
    end
  else
    for k = 1, OGDEN_TERMS do
      out["mu" .. k] = check.number(where, name[k].mu, get("mu" .. k) or 0, -math.huge, math.huge)
      out["alpha" .. k] = check.number(where, name[k].alpha, get("alpha" .. k) or 0, -math.huge, math.huge)
    end
  end
  local terms = 0
  for k = 1, OGDEN_TERMS do
    local mu, alpha = out["mu" .. k], out["alpha" .. k]
    if mu ~= 0 then
      terms = terms + 1
      if alpha == 0 then
        check.raise(string.format("%s: %s must be ~= 0 where %s ~= 0 (got %s = 0, %s = %s)", where, name[k].alpha,
          name[k].mu, name[k].alpha, name[k].mu, check.fmt(mu)))
      end
      if not (mu * alpha > 0) then
        check.raise(string.format("%s: %s and %s must have the same sign, mu_k alpha_k > 0 (got %s = %s, %s = %s)",
          where, name[k].mu, name[k].alpha, name[k].mu, check.fmt(mu), name[k].alpha, check.fmt(alpha)))
      end
    end
  end
  if terms == 0 then
    check.raise(string.format("%s: model ogden needs at least one term with mu ~= 0 (%s)", where, lists
      and "material.mu = {mu_1, ...}, material.alpha = {alpha_1, ...}" or "material.mu1 and material.alpha1, ..."))
  end
end

--- Fills defaults and checks a material table (where: the caller, for messages). Returns a new table with every
--- field the engine reads.
function M.resolve(where, m)
  m = m or {}
  check.options(where .. ".material", m, KEYS)
  local base = {}
  if m.preset ~= nil then
    local names = {}
    for k in pairs(M.presets) do names[#names + 1] = k end
    table.sort(names)
    check.oneof(where, "material.preset", m.preset, names)
    base = M.presets[m.preset]
  end
  local function get(k) if m[k] ~= nil then return m[k] end return base[k] end
  local model = get("model") or "neohookean"
  local models = {}
  for k in pairs(NEEDS) do models[#models + 1] = k end
  table.sort(models)
  check.oneof(where, "material.model", model, models)
  local hyper = model == "mooney_rivlin" or model == "yeoh" or model == "fluid" or model == "ogden" -- bulk required
  local out = { model = model, density = get("density") or 1, inc_p = get("inc_p") or 0, bulk = get("bulk") or 0,
    E = get("E") or 10, nu = get("nu") or 0.3, c10 = get("c10") or 0, c01 = get("c01") or 0, c20 = get("c20") or 0,
    c30 = get("c30") or 0, visc = get("visc") or 0, mu1 = 0, alpha1 = 0, mu2 = 0, alpha2 = 0, mu3 = 0, alpha3 = 0 }
  local ogden_keys = false -- Ogden's terms may come as mu1 .. alpha3 instead of the lists
  for k = 1, OGDEN_TERMS do ogden_keys = ogden_keys or get("mu" .. k) ~= nil or get("alpha" .. k) ~= nil end
  for _, k in ipairs(NEEDS[model]) do
    if hyper and get(k) == nil and not (ogden_keys and (k == "mu" or k == "alpha")) then
      check.raise(string.format("%s: material.%s is required by model %s (needs %s%s)", where, k, model,
        table.concat(NEEDS[model], ", "), model == "ogden" and "; or mu1, alpha1, ..., mu3, alpha3" or ""))
    end
  end
  check.number(where, "material.density", out.density, 0, math.huge, { open_lo = true })
  check.number(where, "material.visc", out.visc, 0, math.huge)
  check.number(where, "material.bulk", out.bulk, 0, math.huge, { open_lo = hyper })
  if hyper then
    if model == "mooney_rivlin" then
      check.number(where, "material.c10", out.c10, 0, math.huge)
      check.number(where, "material.c01", out.c01, 0, math.huge)
      if not (out.c10 + out.c01 > 0) then
        check.raise(where .. ": material.c10 + material.c01 must be > 0 (got " .. out.c10 + out.c01 .. ")")
      end
    elseif model == "yeoh" then
      check.number(where, "material.c10", out.c10, 0, math.huge, { open_lo = true })
      check.number(where, "material.c20", out.c20, -math.huge, math.huge)
      check.number(where, "material.c30", out.c30, -math.huge, math.huge)
    elseif model == "ogden" then
      ogden_terms(where, get, out)
    end
  else
    check.number(where, "material.E", out.E, 0, math.huge, { open_lo = true })
    check.number(where, "material.nu", out.nu, -1, 0.5, { open_lo = true, open_hi = true })
  end
  if out.inc_p ~= 0 then check.number(where, "material.inc_p", out.inc_p, 2, math.huge) end
  return out
end

--- The per-particle engine fields a resolved material sets (besides material, mass and vol0).
M.fields = { "E", "nu", "inc_p", "bulk", "visc", "c10", "c01", "c20", "c30", "mu1", "alpha1", "mu2", "alpha2", "mu3",
  "alpha3" }

return M
