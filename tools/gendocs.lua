-- tools/gendocs.lua: the reference tables of docs/api.md that come from the engine's tables (fields.h, registry.h),
-- written between the markers <!-- generated: NAME --> and <!-- end -->, and a check that every option table
-- (<!-- options: WHERE -->) lists exactly the options the code accepts (lua/cq/_check.lua option sets).
--
-- usage: cqlua tools/gendocs.lua          rewrite the generated sections of docs/api.md
--        cqlua tools/gendocs.lua --check  exit 1 (with what differs) when docs/api.md is out of date
-- tests/docs_spec.lua runs the check, so the reference cannot go stale.
package.path = "./?.lua;" .. package.path
local cq = require "cq"
local check = require "cq._check"
local registry = require "cq._registry"

local M = {}
M.FILE = "docs/api.md"

-- Every public module of the package (lua/cq/*.lua not starting with "_", and each sub-package's modules, e.g.
-- lua/cq/study/*.lua): they declare their option sets when loaded, so a new module's options are checked without
-- listing it here.
do
  local function load_dir(dir, prefix)
    local p = assert(io.popen("ls -p '" .. dir .. "'"))
    for file in p:lines() do
      local m = file:match("^([%a][%w_]*)%.lua$")
      local sub = file:match("^([%a][%w_]*)/$")
      if m == "init" and prefix ~= "cq" then require(prefix)
      elseif m and m ~= "init" then require(prefix .. "." .. m)
      elseif sub then load_dir(dir .. "/" .. sub, prefix .. "." .. sub) end
    end
    p:close()
  end
  load_dir((require("cq._paths").lua or "lua") .. "/cq", "cq")
end

local TYPE = { [0] = "real", [1] = "int32", [2] = "uint8" }
local PER = { [0] = "1", [1] = "`dim`", [2] = "`dim x dim`", [3] = "actuator" }

local function default_text(f)
  if f.name == "material" then return registry.name_of(registry.MATERIAL, f.default) end
  return string.format("%g", f.default)
end

-- The material table's keys (robot builder): every model's parameters, from the engine (lua/cq/materials.lua).
local function material_keys(params)
  local materials = require "cq.materials"
  local models, names = materials.models(), {}
  for name in pairs(models) do names[#names + 1] = name end
  table.sort(names, function(a, b) return models[a].id < models[b].id end)
  local quoted = {}
  for i, name in ipairs(names) do quoted[i] = "`" .. name .. "`" end
  local presets = {}
  for name in pairs(materials.presets) do presets[#presets + 1] = "`\"" .. name .. "\"`" end
  table.sort(presets)
  local rows = { "| key | default | valid range | models | meaning |", "| --- | --- | --- | --- | --- |",
    "| `preset` | nil | " .. table.concat(presets, ", ") .. " | any | start from a preset (below); the other keys " ..
      "override it |",
    "| `model` | `\"neohookean\"` | " .. table.concat(quoted, ", ") .. " | | the constitutive model (their formulas: " ..
      "the material table under Registries and fields, below); sets the particle parameter `material` |",
    "| `density` | `1` | > 0 | every model | mass per unit rest volume |" }
  local every = { bulk = true, visc = true, inc_p = true, damping = true }
  local families = {}
  for _, f in ipairs(params) do
    local users, required = {}, {}
    for _, name in ipairs(names) do
      local m = models[name]
      for _, p in ipairs(m.params) do
        if p == f.name then
          users[#users + 1] = name
          if m.required[p] then required[#required + 1] = name end
        end
      end
    end
    if #users > 0 or every[f.name] then
      local who = every[f.name] and "every model" or table.concat(users, ", ")
      if #required > 0 then who = who .. "; **required** by " .. table.concat(required, ", ") end
      rows[#rows + 1] = string.format("| `%s` | %s | %s%s | %s | %s |", f.name, default_text(f), f.range,
        f.shape == 1 and " (each of `dim` numbers)" or "", who, f.doc)
      local base, k = f.name:match("^(%a[%a_]-)(%d)$") -- mu1, mu2, ...: a family (lua/cq/materials.lua)
      if base and k == "1" and #users > 0 then families[base] = { users = users, size = 1 } end
      if base and families[base] and tonumber(k) == families[base].size + 1 then families[base].size = tonumber(k) end
    end
  end
  local bases = {}
  for base in pairs(families) do bases[#bases + 1] = base end
  table.sort(bases)
  for _, base in ipairs(bases) do
    local fam = families[base]
    rows[#rows + 1] = string.format("| `%s` | nil | a list of 1 to %d numbers, all lists of a model the same length " ..
      "| %s | for %s: `%s1` ... `%s%d` given as one list (terms left out are 0); not with those keys |", base,
      fam.size, table.concat(fam.users, ", "), table.concat(fam.users, ", "), base, base, fam.size)
  end
  return table.concat(rows, "\n")
end

-- The generated sections, by name.
local function sections()
  local fields = cq.fields("f64")
  local out = {}
  local t = { "| `params.` | type | per particle | default | valid (checked before every step that follows a change) | " ..
    "differentiable | meaning |", "| --- | --- | --- | --- | --- | --- | --- |" }
  for _, f in ipairs(fields.param) do
    t[#t + 1] = string.format("| `%s` | %s | %s | %s | %s | %s | %s |", f.name, TYPE[f.type], PER[f.shape],
      default_text(f), f.range, f.diff and "yes" or "no", f.doc)
  end
  out.params = table.concat(t, "\n")
  t = { "| field | per particle | meaning |", "| --- | --- | --- |" }
  for _, f in ipairs(fields.state) do t[#t + 1] = string.format("| `%s` | %s | %s |", f.name, PER[f.shape], f.doc) end
  out.state = table.concat(t, "\n")
  t = { "| control | size | meaning |", "| --- | --- | --- |" }
  for _, f in ipairs(fields.control) do
    local size = f.shape == 3 and "`n_actuators`" or (f.shape == 1 and "`dim * n`" or "`dim * dim * n`")
    t[#t + 1] = string.format("| `%s` | %s | %s |", f.name, size, f.doc)
  end
  out.control = table.concat(t, "\n")
  local function list(title, lst)
    local rows = { "| " .. title .. " | meaning |", "| --- | --- |" }
    local i = 0
    while lst[i] do rows[#rows + 1] = string.format("| `%s` | %s |", lst[i].name, lst[i].doc); i = i + 1 end
    return table.concat(rows, "\n")
  end
  out.materials = list("material", registry.MATERIAL)
  out.material_keys = material_keys(fields.param)
  out.boundaries = list("wall / node `type`", registry.BC)
  out.actuators = list("actuator kind", registry.ACTUATOR)
  out.integrators = list("integrator", registry.INTEGRATOR)
  out.checks = list("blow-up check (`world:blowup().check`)", registry.CHECK)
  return out
end

-- The option names in the table that follows an <!-- options: WHERE --> marker (first column, backticked).
local function documented_options(text)
  local docs = {}
  for where, body in text:gmatch("<!%-%- options: ([^>]-) %-%->\n(.-)\n\n") do
    local set = {}
    for name in body:gmatch("\n| `([%w_]+)`") do set[name] = true end
    docs[where] = set
  end
  return docs
end

--- The docs text with every generated section replaced, and a list of problems (missing markers, option tables
--- that differ from the code).
function M.render(text)
  local problems = {}
  local gen = sections()
  for name, body in pairs(gen) do
    local pattern = "(<!%-%- generated: " .. name .. " %-%->\n)(.-)(<!%-%- end %-%->)"
    local found
    text, found = text:gsub(pattern, function(open, _, close) return open .. body .. "\n" .. close end)
    if found == 0 then problems[#problems + 1] = "no <!-- generated: " .. name .. " --> section" end
  end
  local docs = documented_options(text)
  local wheres = {}
  for where in pairs(check.option_sets) do wheres[#wheres + 1] = where end
  table.sort(wheres)
  for _, where in ipairs(wheres) do
    local code, doc = check.option_sets[where], docs[where]
    if not doc then
      problems[#problems + 1] = "no option table for " .. where .. " (<!-- options: " .. where .. " -->)"
    else
      for name in pairs(code) do
        if not doc[name] then problems[#problems + 1] = where .. ": option `" .. name .. "` is not documented" end
      end
      for name in pairs(doc) do
        if not code[name] then problems[#problems + 1] = where .. ": documented option `" .. name .. "` does not exist" end
      end
    end
  end
  for where in pairs(docs) do
    if not check.option_sets[where] then problems[#problems + 1] = "option table for unknown function " .. where end
  end
  return text, problems
end

if arg and arg[0] and arg[0]:match("gendocs%.lua$") then
  local check_only = arg[1] == "--check"
  local f = assert(io.open(M.FILE))
  local text = f:read("*a")
  f:close()
  local new, problems = M.render(text)
  for _, p in ipairs(problems) do print("gendocs: " .. p) end
  if check_only then
    if new ~= text then print("gendocs: generated sections of " .. M.FILE .. " are out of date (run cqlua tools/gendocs.lua)") end
    os.exit((new == text and #problems == 0) and 0 or 1)
  end
  if new ~= text then
    f = assert(io.open(M.FILE, "w"))
    f:write(new)
    f:close()
    print("gendocs: " .. M.FILE .. " updated")
  end
  os.exit(#problems == 0 and 0 or 1)
end

return M
