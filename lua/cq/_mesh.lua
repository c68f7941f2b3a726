-- Private: triangle meshes for robot:mesh through the host's loaders (engine/host/mesh.h via ffi.C): read and check an
-- OBJ / STL file, place it and fill it with particles. Errors name the file and the problem at the user's line.
local ffi = require "ffi"
local check = require "cq._check"
require "cq._ffi" -- declares cqh_mesh_* (engine/host/mesh.h)

local M = {}

M.FORMATS = { obj = ffi.C.CQH_MESH_OBJ, stl = ffi.C.CQH_MESH_STL }

-- ffi.C with the cqh_mesh_* symbols, or a clear error (they live in build/bin/cqlua, exported with -Wl,-E).
local function lib(where)
  if not pcall(function() return ffi.C.cqh_mesh_read end) then
    check.raise(where .. ": cqh_mesh_read is not available: run the script with build/bin/cqlua (make)")
  end
  return ffi.C
end

--- The format ("obj" or "stl") given, or told by the file name's extension.
function M.format(where, path, format)
  if format ~= nil then return check.oneof(where, "format", format, { "obj", "stl" }) end
  local ext = path:match("%.(%w+)$")
  ext = ext and ext:lower()
  if not M.FORMATS[ext] then
    check.fail(where, "cannot tell the mesh format from the file name (known: .obj, .stl); set format = \"obj\" or \"stl\"",
      path)
  end
  return ext
end

--- Reads and checks a mesh file: a cqh_mesh* (freed by the garbage collector) or an error naming the file.
function M.read(where, path, format, max_triangles)
  local C = lib(where)
  local err = ffi.new("char[512]")
  local m = C.cqh_mesh_read(path, M.FORMATS[format], max_triangles, err, 512)
  if m == nil then check.raise(string.format("%s: %s: %s", where, path, ffi.string(err))) end
  return ffi.gc(m, C.cqh_mesh_free)
end

--- Places the mesh (linear: 9 numbers, row-major; offset: the bounding box's lower corner) and fills it at spacing:
--- a cqh_lattice* (freed by the garbage collector) or an error naming the file.
function M.fill(where, path, mesh, linear, offset, spacing, max_points)
  local C = lib(where)
  local err = ffi.new("char[512]")
  local f = C.cqh_mesh_lattice(mesh, ffi.new("double[9]", linear), ffi.new("double[3]", offset), spacing, max_points,
    err, 512)
  if f == nil then check.raise(string.format("%s: %s: %s", where, path, ffi.string(err))) end
  return ffi.gc(f, C.cqh_lattice_free)
end

return M
