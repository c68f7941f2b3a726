-- Private: the C declarations of engine/core/cq.h (generated, never copied by hand) and loading of the float32 / float64
-- engine libraries.
local ffi = require "ffi"

-- The declarations: engine/core/cq.h and engine/host/png.h run through the C preprocessor by the Makefile (build/lib/cq_ffi.h).
local paths = package.loaded["cq._paths"] or {}
local function read_cdef()
  local tried, dirs = {}, {}
  if paths.lib then dirs[#dirs + 1] = paths.lib end
  if os.getenv("CQ_LIB_PATH") then dirs[#dirs + 1] = os.getenv("CQ_LIB_PATH") end
  dirs[#dirs + 1] = "."
  for _, dir in ipairs(dirs) do
    local path = dir .. "/cq_ffi.h"
    local f = io.open(path, "r")
    if f then
      local text = f:read("*a")
      f:close()
      return text
    end
    tried[#tried + 1] = path
  end
  error("cq: cannot find the FFI declarations cq_ffi.h (run `make`; looked in " .. table.concat(tried, ", ") .. ")", 0)
end
ffi.cdef(read_cdef())

local M = {}
local libs = {}

-- The engine library for a precision ("f32" or "f64"), loaded once; flavor "cuda" = the CUDA build libcq_cuda_*.so.
function M.lib(precision, flavor)
  local key = (flavor or "") .. precision
  if libs[key] then return libs[key] end
  local name = "libcq_" .. (flavor and flavor .. "_" or "") .. precision .. ".so"
  local candidates = {}
  if paths.lib then candidates[#candidates + 1] = paths.lib .. "/" .. name end
  candidates[#candidates + 1] = name
  local errs = {}
  for _, path in ipairs(candidates) do
    local ok, lib = pcall(ffi.load, path)
    if ok then
      libs[key] = lib
      -- the engine stops at the next substep after SIGINT / SIGTERM (engine/host/host.h); other hosts lack the flag
      local has_flag, flag = pcall(function() return ffi.C.cqh_interrupt_flag() end)
      if has_flag then lib.cq_set_interrupt_flag(flag) end
      return lib
    end
    errs[#errs + 1] = tostring(lib)
  end
  error("cq: cannot load the engine library " .. name .. " (run `make`): " .. table.concat(errs, "; "), 0)
end

--- A CPU engine library for what does not depend on the precision (the registries, the field tables, material
--- checks: the same in both): the float64 one, or the float32 one where only it is built (`make demo` builds only
--- that).
function M.tables_lib()
  if libs.f64 then return libs.f64 end
  local ok, lib = pcall(M.lib, "f64")
  if ok then return lib end
  local ok32, lib32 = pcall(M.lib, "f32")
  if ok32 then return lib32 end
  error(lib, 0)
end

-- The CUDA engine library for a precision when it loads and sees a usable device; else nil and the reason.
-- Probed once per precision.
local cuda_probe = {}
function M.cuda_lib(precision)
  local r = cuda_probe[precision]
  if not r then
    local ok, lib = pcall(M.lib, precision, "cuda")
    if not ok then
      r = { nil, "the CUDA engine library is not built or cannot load: " .. tostring(lib) }
    else
      local err = ffi.new("char[256]")
      local count = lib.cq_cuda_device_count(err, 256)
      r = count > 0 and { lib } or { nil, ffi.string(err) }
    end
    cuda_probe[precision] = r
  end
  return r[1], r[2]
end

M.real_ctype = { f32 = ffi.typeof("float*"), f64 = ffi.typeof("double*") }
M.type_ctype = { [0] = nil, [1] = ffi.typeof("int32_t*"), [2] = ffi.typeof("uint8_t*") }
-- Read-only views (parameters): LuaJIT refuses writes through them.
M.const_ctype = { f32 = ffi.typeof("const float*"), f64 = ffi.typeof("const double*"),
  [1] = ffi.typeof("const int32_t*"), [2] = ffi.typeof("const uint8_t*") }
-- Views onto engine memory keep the memory's owner (a world, memo or state handle, freed by the garbage collector)
-- alive: a view kept after its object was released reads stale but valid memory, never freed memory.
local anchors = setmetatable({}, { __mode = "k" })
function M.view(ctype, ptr, owner)
  local v = ffi.cast(ctype, ptr)
  anchors[v] = owner
  return v
end

-- Enum values of cq.h used by the Lua layer (from the generated declarations).
M.LIST = { BOUNDARY = ffi.C.CQ_LIST_BOUNDARY, ACTUATOR = ffi.C.CQ_LIST_ACTUATOR, MATERIAL = ffi.C.CQ_LIST_MATERIAL,
  INTEGRATOR = ffi.C.CQ_LIST_INTEGRATOR, BACKEND = ffi.C.CQ_LIST_BACKEND, CHECK = ffi.C.CQ_LIST_CHECK }
M.FIELDS = { STATE = ffi.C.CQ_FIELDS_STATE, PARAM = ffi.C.CQ_FIELDS_PARAM, CONTROL = ffi.C.CQ_FIELDS_CONTROL }

return M
