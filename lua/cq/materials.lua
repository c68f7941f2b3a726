--- Material tables for the robot builder (robot:box, robot:image, robot:mesh, ...). A material is { model = <engine
--- model name>, density, <the model's parameters> } or { preset = name, <overrides> }. Which parameters a model takes,
--- which it requires, their defaults and valid ranges, and its own rules all come from the engine (the model's header
--- engine/materials/material_<model>.h and its line in engine/core/registry.h, through cq_material_info, cq_param_bounds and
--- cq_material_check): this file holds the presets and nothing a model defines. M.models() lists them.
--- Every model also takes density (1), visc (dynamic viscosity, 0), bulk (the volumetric term (bulk/2)(J - 1)^2, 0;
--- required where the model lists it), inc_p (seed 000 eq. 14's exponent, 0) and damping (its velocity damping rate,
--- 1/s; -1, the default: the world's damping for a solid, none for a fluid).
local ffi = require "ffi"
local check = require "cq._check"
local C = require "cq._ffi"
local registry = require "cq._registry"
local M = {}

--- Presets (SI units: Pa, kg/m^3). The fiber-reinforced model has none: its fibers' modulus depends on the winding
--- (its density and the thread), so a preset would only be a guess. dragonskin30: seed 003's Mooney-Rivlin fit of DragonSkin-30 silicone (its table
--- calls them C01 = 1.19 kPa on I1bar and C10 = 23.028 kPa on I2bar; here the usual names: c10 multiplies I1bar),
--- 1/D1 = k/2 with k = 1.75 GPa; density 1080 kg/m^3 (Smooth-On's datasheet).
M.presets = {
  dragonskin30 = { model = "mooney_rivlin", c10 = 1.19e3, c01 = 23.028e3, bulk = 1.75e9, density = 1080 },
  water = { model = "fluid", bulk = 2.2e9, visc = 1.0e-3, density = 1000 }, -- at 20 C
  -- natural rubber: Arruda and Boyce's (1993) eight-chain fit of Treloar's data, n k theta = 0.27 MPa, N = 26.5 chain
  -- links (lambda_m = sqrt(N)); bulk modulus 2 GPa and density 920 kg/m^3, typical of natural rubber
  natural_rubber = { model = "arruda_boyce", mu = 0.27e6, lambda_m = math.sqrt(26.5), bulk = 2e9, density = 920 },
}

-- Parameters every model takes, with their defaults; density is not an engine field (mass = density * volume).
local CORE = { density = 1, visc = 0, bulk = 0, inc_p = 0, damping = -1 }
-- Fields the robot builder sets itself, not from the material.
local BUILDER = { mass = true, vol0 = true, act_axis = true, act_w = true, wall_area = true, material = true,
  act_id = true }

-- The engine's tables, read once: models (name -> {params = {name...}, required = {name = true}, enu}), every
-- parameter field (name -> {default, shape, lo, hi, bounds, index}) and the option names.
local T
local function tables()
  if T then return T end
  local lib = C.tables_lib()
  T = { models = {}, fields = {}, order = {}, keys = {} }
  for i, f in ipairs(registry.fields(lib, "param")) do
    local lo, hi, bounds = ffi.new("double[1]"), ffi.new("double[1]"), ffi.new("int[1]")
    assert(lib.cq_param_bounds(f.name, lo, hi, bounds) == 0)
    T.fields[f.name] = { default = f.default, shape = f.shape, type = f.type, lo = lo[0], hi = hi[0],
      bounds = bounds[0], index = i }
    T.order[i] = f.name
  end
  local enu, uses = ffi.new("int[1]"), ffi.new("const char*[1]")
  local id = 0
  while registry.MATERIAL[id] do
    assert(lib.cq_material_info(id, enu, uses) == 0)
    local m = { id = id, params = {}, required = {}, enu = enu[0] == 1 }
    for name, mark in ffi.string(uses[0]):gmatch("(%w[%w_]*)([!?])") do
      m.params[#m.params + 1] = name
      m.required[name] = mark == "!" or nil
      T.keys[name] = true
    end
    T.models[registry.MATERIAL[id].name] = m
    id = id + 1
  end
  for k in pairs(CORE) do T.keys[k] = true end
  T.keys.preset, T.keys.model = true, true
  -- families of numbered parameters (mu1, mu2, ... with one digit, from 1 on) may also be given as one list (mu =
  -- {...})
  T.families = {}
  for _, name in ipairs(T.order) do
    local base, k = name:match("^(%a[%a_]-)(%d)$")
    k = tonumber(k)
    if base and (k == 1 or T.families[base] == k - 1) then T.families[base] = k end
  end
  for base in pairs(T.families) do
    if not T.fields[base .. "1"] then T.families[base] = nil end
    for _, m in pairs(T.models) do
      for _, p in ipairs(m.params) do if p == base .. "1" then T.keys[base] = true end end
    end
  end
  return T
end

--- The models and what each takes: name -> {params = {names in order}, required = {name = true}, enu = written on E
--- and nu}.
function M.models() return tables().models end

--- Every option a material table may hold (for the option set and its docs).
function M.keys()
  local out = {}
  for k in pairs(tables().keys) do out[#out + 1] = k end
  table.sort(out)
  return out
end

-- A number within a field's range, named material.<name> in the message.
local function in_range(where, label, v, f)
  local lo, hi = f.lo, f.hi
  if f.bounds == 4 then return check.number(where, label, v, -math.huge, math.huge) end -- CQ_CUSTOM: the engine's
  return check.number(where, label, v, lo, hi, { open_lo = f.bounds % 2 == 1, open_hi = f.bounds >= 2 })
end

-- The model's numbered families given as lists (mu = {...}, alpha = {...}) into their members mu1, ... (into out,
-- and marked in given): every such list must have 1 to the family's size entries and the same length as the others,
-- and its members may not be given as well.
local function expand_lists(where, get, takes, out, given)
  local t = tables()
  local lists, n = {}, nil
  local bases = {}
  for base in pairs(t.families) do bases[#bases + 1] = base end
  table.sort(bases)
  for _, base in ipairs(bases) do
    local size, v = t.families[base], get(base)
    if v ~= nil and takes[base .. "1"] and not takes[base] then
      if type(v) ~= "table" or #v < 1 or #v > size then
        check.fail(where, "material." .. base .. " must be a list of 1 to " .. size .. " numbers",
          type(v) == "table" and ("a list of " .. #v) or v)
      end
      for k = 1, size do
        if get(base .. k) ~= nil then
          check.raise(string.format("%s: material.%s%d cannot be given with the list material.%s", where, base, k, base))
        end
      end
      lists[#lists + 1] = "material." .. base
      if n and #v ~= n then
        check.raise(string.format("%s: the lists %s must have the same length (got %d and %d)", where,
          table.concat(lists, " and "), n, #v))
      end
      n = #v
      for k = 1, size do
        out[base .. k] = check.number(where, "material." .. base .. "[" .. k .. "]", v[k] or 0, -math.huge, math.huge)
        given[base .. k] = true
      end
    end
  end
end

--- Fills defaults and checks a material table (where: the caller, for messages; dim: the robot's, for vector
--- parameters). Returns a new table with every field the engine reads (M.fields()), the model and the density.
local KEYS = check.option_set("robot material", M.keys()) -- every model's keys (docs/api.md's table)
function M.resolve(where, m, dim)
  m = m or {}
  local t = tables()
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
  local names = {}
  for k in pairs(t.models) do names[#names + 1] = k end
  table.sort(names)
  local model = check.oneof(where, "material.model", get("model") or "neohookean", names)
  local mm = t.models[model]
  local takes = {}
  for _, p in ipairs(mm.params) do takes[p] = true end
  -- every key must be the model's (or a list of one of its families) or every model's
  for _, source in ipairs { base, m } do
    for k in pairs(source) do
      if k ~= "preset" and k ~= "model" and CORE[k] == nil and not takes[k] and not takes[k .. "1"] then
        check.raise(string.format("%s: material.%s is not a parameter of model %s (it takes %s; every model takes " ..
          "density, visc, bulk, inc_p and damping)", where, k, model, #mm.params > 0 and table.concat(mm.params, ", ") or
          "no other"))
      end
    end
  end
  local out, given = { model = model }, {}
  for name, f in pairs(t.fields) do
    if not BUILDER[name] and f.type == 0 then out[name] = f.default end
  end
  expand_lists(where, get, takes, out, given)
  local required = {}
  for _, p in ipairs(mm.params) do if mm.required[p] then required[#required + 1] = p end end
  for _, name in ipairs(mm.params) do
    local v, f = get(name), t.fields[name]
    if v == nil and not given[name] and mm.required[name] then
      check.raise(string.format("%s: material.%s is required by model %s (needs %s)", where, name, model,
        table.concat(required, ", ")))
    elseif v ~= nil and f.shape == 0 then
      out[name] = in_range(where, "material." .. name, v, f)
    elseif v ~= nil then
      if type(v) ~= "table" or (dim and #v ~= dim) then
        check.fail(where, "material." .. name .. " must be a list of " .. (dim or "dim") .. " numbers (a vector)", v)
      end
      out[name] = {}
      for c, x in ipairs(v) do out[name][c] = in_range(where, "material." .. name .. "[" .. c .. "]", x, f) end
    end
  end
  for k, dflt in pairs(CORE) do
    local v = get(k)
    if v ~= nil then out[k] = v elseif k == "density" then out[k] = dflt end
  end
  out.density = check.number(where, "material.density", out.density, 0, math.huge, { open_lo = true })
  out.visc = in_range(where, "material.visc", out.visc, t.fields.visc)
  out.bulk = in_range(where, "material.bulk", out.bulk, t.fields.bulk)
  -- inc_p's own rule (a core parameter the engine checks by code): 0 (off) or >= 2
  if out.inc_p ~= 0 then check.number(where, "material.inc_p", out.inc_p, 2, math.huge) end
  -- damping's: -1 (the default: the world's for a solid, none for a fluid) or a rate >= 0
  if out.damping ~= -1 and not (type(out.damping) == "number" and out.damping >= 0 and out.damping < math.huge) then
    check.fail(where, "material.damping must be -1 (the default: the world's damping for a solid, none for a fluid) " ..
      "or a finite rate >= 0 (1/s)", out.damping)
  end
  -- the model's own rules, by the engine's check
  local values = ffi.new("double[?]", 9 * #t.order)
  local k = 0
  for _, name in ipairs(t.order) do
    local f, v = t.fields[name], out[name]
    for c = 1, f.shape == 0 and 1 or f.shape == 1 and 3 or 9 do
      values[k] = type(v) == "table" and (v[c] or 0) or (type(v) == "number" and v or f.default)
      k = k + 1
    end
  end
  local why = ffi.new("char[400]")
  if C.tables_lib().cq_material_check(mm.id, 3, values, why, 400) ~= 1 then
    check.raise(string.format("%s: material (%s): %s", where, model, ffi.string(why)))
  end
  return out
end

--- The per-particle engine fields a resolved material sets (besides material, mass and vol0): every real parameter
--- that is not the builder's own, in the table's order.
function M.fields()
  local t, out = tables(), {}
  for _, name in ipairs(t.order) do
    local f = t.fields[name]
    if not BUILDER[name] and f.type == 0 then out[#out + 1] = name end
  end
  return out
end

return M
