-- Private: the engine's registries (engine/core/registry.h) and field tables (engine/core/fields.h), read from the library:
-- never a hand-written copy.
local ffi = require "ffi"
local C = require "cq._ffi"

local M = {}

-- name -> id of a registry list.
local function list(id)
  local lib, out, i = C.tables_lib(), {}, 0
  local doc = ffi.new("const char*[1]")
  while true do
    local name = lib.cq_name(id, i, doc)
    if name == nil then return out end
    out[ffi.string(name)] = i
    out[i] = { name = ffi.string(name), doc = ffi.string(doc[0]) } -- id -> entry, for names() and docs
    i = i + 1
  end
end

-- The lists, read from the library on first use (M.BC, M.ACTUATOR, M.MATERIAL, M.INTEGRATOR, M.BACKEND, M.CHECK).
local LISTS = { BC = "BOUNDARY", ACTUATOR = "ACTUATOR", MATERIAL = "MATERIAL", INTEGRATOR = "INTEGRATOR",
  BACKEND = "BACKEND", CHECK = "CHECK" }
setmetatable(M, { __index = function(t, k)
  if LISTS[k] then local v = list(C.LIST[LISTS[k]]); rawset(t, k, v); return v end
end })

--- "a, b, c": the names of a list in id order (for messages).
function M.names(t)
  local out, i = {}, 0
  while t[i] do out[#out + 1] = t[i].name; i = i + 1 end
  return table.concat(out, ", ")
end

function M.name_of(t, id) return t[id] and t[id].name end

--- The id of a name in a list, or nil when name is not one of its names (a number is an id's index, never a name:
--- t[1] is an entry table).
function M.id(t, name)
  if type(name) ~= "string" then return nil end
  return t[name]
end

--- The plain name -> id table of a list (cq.BC, cq.MATERIAL, cq.ACTUATOR).
function M.ids(t)
  local out, i = {}, 0
  while t[i] do out[t[i].name] = i; i = i + 1 end
  return out
end

local KIND = { state = C.FIELDS.STATE, param = C.FIELDS.PARAM, control = C.FIELDS.CONTROL }
local SHAPE = { [0] = "scalar", "vector", "matrix", "per actuator" }

--- The field table kind ("state", "param" or "control") of lib: {name, type, shape, shape_name, diff, doc, range,
--- default}.
function M.fields(lib, kind)
  local out, i = {}, 0
  local name, doc, range = ffi.new("const char*[1]"), ffi.new("const char*[1]"), ffi.new("const char*[1]")
  local ty, shape, diff, dflt = ffi.new("int[1]"), ffi.new("int[1]"), ffi.new("int[1]"), ffi.new("double[1]")
  while lib.cq_field_info(KIND[kind], i, name, ty, shape, diff, doc, range, dflt) ~= 0 do
    out[#out + 1] = { name = ffi.string(name[0]), type = ty[0], shape = shape[0], shape_name = SHAPE[shape[0]],
      diff = diff[0] == 1, doc = ffi.string(doc[0]), range = ffi.string(range[0]), default = dflt[0] }
    i = i + 1
  end
  return out
end

--- Components per particle of a field shape in dimension dim.
function M.shape_len(shape, dim) return shape == 0 and 1 or shape == 1 and dim or dim * dim end

return M
