--- Material tables for the robot builder (robot:box, robot:image, robot:mesh, ...): defaults, per-model checks and
--- presets. A material is { model = <engine model name>, density, <the model's parameters> } or { preset = name,
--- <overrides> }. Models and the parameters they read (engine/material_<model>.h; stresses in the caller's units):
---   neohookean, corotated: E, nu (+ optional inc_p, seed 000 eq. 14; + optional bulk)
---   mooney_rivlin: c10, c01, bulk (K = 2 / D1);  yeoh: c10, c20, c30, bulk;  fluid: bulk (its lambda)
--- visc (dynamic viscosity) adds mu_v (grad v + grad v^T) to any model.
--- bulk adds (bulk/2)(J - 1)^2 to any model: the volumetric stiffness that keeps J near 1 (docs/api.md).
local check = require "cq._check"
local M = {}

local KEYS = check.option_set("robot material",
  { "preset", "model", "E", "nu", "density", "inc_p", "bulk", "visc", "c10", "c01", "c20", "c30" })

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
  mooney_rivlin = { "c10", "c01", "bulk" }, yeoh = { "c10", "bulk" }, fluid = { "bulk" },
}

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
  local hyper = model == "mooney_rivlin" or model == "yeoh" or model == "fluid" -- no E, nu; bulk required
  local out = { model = model, density = get("density") or 1, inc_p = get("inc_p") or 0, bulk = get("bulk") or 0,
    E = get("E") or 10, nu = get("nu") or 0.3, c10 = get("c10") or 0, c01 = get("c01") or 0, c20 = get("c20") or 0,
    c30 = get("c30") or 0, visc = get("visc") or 0 }
  for _, k in ipairs(NEEDS[model]) do
    if hyper and get(k) == nil then
      check.raise(string.format("%s: material.%s is required by model %s (needs %s)", where, k, model,
        table.concat(NEEDS[model], ", ")))
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
    end
  else
    check.number(where, "material.E", out.E, 0, math.huge, { open_lo = true })
    check.number(where, "material.nu", out.nu, -1, 0.5, { open_lo = true, open_hi = true })
  end
  if out.inc_p ~= 0 then check.number(where, "material.inc_p", out.inc_p, 2, math.huge) end
  return out
end

--- The per-particle engine fields a resolved material sets (besides material, mass and vol0).
M.fields = { "E", "nu", "inc_p", "bulk", "visc", "c10", "c01", "c20", "c30" }

return M
