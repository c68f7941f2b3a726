-- Saving and loading controllers, designs, optimizers and keepers as JSON (lua/cq/json.lua): exact doubles, written
-- atomically. The file is an object with "format": "cqlua", "version": 1 and one entry per saved object:
--   parameters (a controller, a design, a rollout or a list of cq.param): a list of
--     {"name": ..., "n": count, "rows": r (matrices), "values": [...]};
--   an optimizer or a cq.keep_best: its state() ({"kind", "t", "lr": [per group], "slots": [{"m": [...], ...}]});
--   "extra": any JSON-able table the caller adds (e.g. the iteration).
local check = require "cq._check"
local json = require "cq.json"

local M = {}
M.VERSION = 1

-- The parameters an object holds: a list of cq.param, a controller or design (.params), a rollout (:parameters()).
local function params_of(obj)
  if type(obj) ~= "table" then return nil end
  if type(obj.n) == "number" and obj.v ~= nil then return nil end -- a single parameter: wrap it in a list
  if getmetatable(obj) == require("cq.rollout").Rollout then return obj:parameters() end
  if type(obj.params) == "table" and type(obj.state) ~= "function" then return obj.params end
  if #obj > 0 and type(obj[1]) == "table" and type(obj[1].n) == "number" and obj[1].v ~= nil then return obj end
  return nil
end

local function has_state(obj) return type(obj) == "table" and type(obj.state) == "function" and type(obj.load_state) == "function" end

local function bad_object(where, name, obj)
  check.fail(where, "objects." .. tostring(name) .. " must be a controller, design, rollout, list of cq.param, " ..
    "optimizer or keeper", obj)
end

--- The saved form (a JSON-able table) of objects = { name = controller | design | rollout | {params...} | optimizer
--- | keeper, ... } and an optional extra table.
function M.pack(objects, extra, where)
  where = where or "cq.save"
  if type(objects) ~= "table" then check.fail(where, "objects must be a table { name = object, ... }", objects) end
  if extra ~= nil and type(extra) ~= "table" then check.fail(where, "extra must be nil or a table", extra) end
  local doc = { format = "cqlua", version = M.VERSION, extra = extra }
  for name, obj in pairs(objects) do
    if type(name) ~= "string" or name == "format" or name == "version" or name == "extra" then
      check.fail(where, "object names must be strings other than format, version and extra", name)
    end
    local params = params_of(obj)
    if params then
      local list = {}
      for i, p in ipairs(params) do
        local values = {}
        for j = 0, p.n - 1 do values[j + 1] = p.v[j] end
        list[i] = { name = p.name, n = p.n, rows = p.rows, values = values }
      end
      doc[name] = list
    elseif has_state(obj) then
      doc[name] = obj:state()
    else
      bad_object(where, name, obj)
    end
  end
  return doc
end

-- The names of objects in a fixed order, so that the mismatch a file reports does not depend on pairs().
local function names_of(objects)
  local names = {}
  for name in pairs(objects) do names[#names + 1] = name end
  table.sort(names, function(a, b) return tostring(a) < tostring(b) end)
  return names
end

-- Checks the saved list of parameters for the holder name against its params; returns the function that writes it.
local function check_params(where, source, name, params, saved)
  if type(saved) ~= "table" or #saved ~= #params then
    check.raise(string.format("%s: %s has %d parameters for %s, the object %d", where, source,
      type(saved) == "table" and #saved or 0, name, #params))
  end
  for i, p in ipairs(params) do
    local e = saved[i]
    if type(e) ~= "table" or e.n ~= p.n or type(e.values) ~= "table" or #e.values ~= p.n then
      check.raise(string.format("%s: %s: %s[%d] has %s values, the parameter %d", where, source, name, i,
        type(e) == "table" and tostring(e.n) or "no", p.n))
    end
    if p.name and e.name and p.name ~= e.name then
      check.raise(string.format("%s: %s: %s[%d] is %q, the parameter %q", where, source, name, i, e.name, p.name))
    end
    if p.rows and e.rows ~= nil and e.rows ~= p.rows then
      check.raise(string.format("%s: %s: %s[%d] has %s rows, the parameter %d", where, source, name, i,
        tostring(e.rows), p.rows))
    end
    for j = 1, p.n do
      local x = e.values[j] -- (1e999 reads as inf: cq.save never writes one)
      if type(x) ~= "number" or x ~= x or x == math.huge or x == -math.huge then
        check.raise(string.format("%s: %s: %s[%d] value %d is not %s (got %s)", where, source, name, i, j,
          type(x) == "number" and "finite" or "a number", check.fmt(x)))
      end
    end
  end
  return function()
    for i, p in ipairs(params) do
      local values = saved[i].values
      for j = 0, p.n - 1 do p.v[j] = values[j + 1] end
    end
  end
end

--- Loads a pack()ed table into the same kinds of objects (sizes and names must match); source names it in errors.
--- Returns its extra table (or an empty one). Atomic: every object is checked before any is written, so a failed
--- load leaves them all as they were (an object with state() / load_state() but no _prepare_state() is loaded
--- last and, should a later one fail, given its old state() back).
function M.unpack(doc, objects, where, source)
  where, source = where or "cq.load", source or "the saved data"
  if type(objects) ~= "table" then check.fail(where, "objects must be a table { name = object, ... }", objects) end
  if type(doc) ~= "table" or doc.format ~= "cqlua" then
    check.raise(where .. ": " .. source .. " is not a cqlua save file (no \"format\": \"cqlua\")")
  end
  if doc.version ~= M.VERSION then
    check.raise(string.format("%s: %s has version %s; this cqlua reads version %d", where, source,
      tostring(doc.version), M.VERSION))
  end
  if doc.extra ~= nil and type(doc.extra) ~= "table" then
    check.raise(string.format("%s: %s: extra must be an object (got %s)", where, source, check.fmt(doc.extra)))
  end
  local commits, others = {}, {} -- checked writes; objects that can only load (and be given their old state back)
  -- a parameter under two names (two lists, a controller and a rollout holding it) would take the later one's
  -- values: refused
  local named = {}
  for _, name in ipairs(names_of(objects)) do
    for i, prm in ipairs(params_of(objects[name]) or {}) do
      local here = string.format("objects.%s's parameter %d", tostring(name), i)
      if named[prm] then
        check.fail(where, string.format("%s is %s again (one parameter, loaded twice)", here, named[prm]), prm)
      end
      named[prm] = here
    end
  end
  for _, name in ipairs(names_of(objects)) do
    local obj, saved = objects[name], doc[name]
    if saved == nil then check.raise(string.format("%s: %s holds no %s", where, source, tostring(name))) end
    local params = params_of(obj)
    if params then
      commits[#commits + 1] = check_params(where, source, name, params, saved)
    elseif has_state(obj) then
      if type(obj._prepare_state) == "function" then commits[#commits + 1] = obj:_prepare_state(saved)
      else others[#others + 1] = { obj, saved } end
    else
      bad_object(where, name, obj)
    end
  end
  for k, o in ipairs(others) do
    o.old = o[1]:state()
    local ok, err = pcall(o[1].load_state, o[1], o[2])
    if not ok then -- undo: this object (it may have loaded part of its state) and those before it
      for j = k, 1, -1 do pcall(others[j][1].load_state, others[j][1], others[j].old) end
      error(err, 0)
    end
  end
  for _, write in ipairs(commits) do write() end
  return doc.extra or {}
end

--- cq.save(path, objects, extra?): writes pack(objects, extra) as JSON (atomically). Returns path.
function M.save(path, objects, extra)
  if type(path) ~= "string" or path == "" then check.fail("cq.save", "path must be a file name", path) end
  json.write(path, M.pack(objects, extra))
  return path
end

--- cq.load(path, objects): loads what cq.save wrote into the same kinds of objects; returns the extra table.
function M.load(path, objects)
  if type(path) ~= "string" or path == "" then check.fail("cq.load", "path must be a file name", path) end
  return M.unpack(json.read(path), objects, "cq.load", path)
end

return M
