-- scenes/meshes.lua: triangle meshes made in Lua (a box, a UV sphere, the zero set of a function by marching
-- tetrahedra) and writers for OBJ, binary STL and ASCII STL, for scenes/make_assets.lua and the tests.
-- A mesh is { vertices = { {x, y, z}, ... }, triangles = { {i, j, k}, ... } } (1-based, counter-clockwise from outside).
local ffi = require "ffi"

local M = {}

local function sub(a, b) return { a[1] - b[1], a[2] - b[2], a[3] - b[3] } end
local function cross(a, b) return { a[2] * b[3] - a[3] * b[2], a[3] * b[1] - a[1] * b[3], a[1] * b[2] - a[2] * b[1] } end
local function dot(a, b) return a[1] * b[1] + a[2] * b[2] + a[3] * b[3] end

-- Appends triangle (i, j, k), reversed if its normal points away from `outward` (a direction from inside).
local function add_oriented(mesh, i, j, k, outward)
  local V = mesh.vertices
  local n = cross(sub(V[j], V[i]), sub(V[k], V[i]))
  if dot(n, outward) < 0 then j, k = k, j end
  mesh.triangles[#mesh.triangles + 1] = { i, j, k }
end

--- The box [lo, hi]: 8 vertices, 12 triangles.
function M.box(lo, hi)
  local mesh = { vertices = {}, triangles = {} }
  for k = 0, 1 do for j = 0, 1 do for i = 0, 1 do
    mesh.vertices[#mesh.vertices + 1] = { i == 0 and lo[1] or hi[1], j == 0 and lo[2] or hi[2], k == 0 and lo[3] or hi[3] }
  end end end
  local function v(i, j, k) return 1 + i + 2 * j + 4 * k end
  for axis = 1, 3 do
    for side = 0, 1 do
      local c = {}
      for a = 0, 1 do for b = 0, 1 do
        local ijk = { 0, 0, 0 }
        ijk[axis], ijk[axis % 3 + 1], ijk[(axis + 1) % 3 + 1] = side, a, b
        c[#c + 1] = v(ijk[1], ijk[2], ijk[3])
      end end
      local out = { 0, 0, 0 }
      out[axis] = side == 0 and -1 or 1
      add_oriented(mesh, c[1], c[2], c[4], out)
      add_oriented(mesh, c[1], c[4], c[3], out)
    end
  end
  return mesh
end

--- A UV sphere: `slices` around the axis z, `stacks` from pole to pole.
function M.uv_sphere(center, r, slices, stacks)
  local mesh = { vertices = { { center[1], center[2], center[3] + r } }, triangles = {} }
  for s = 1, stacks - 1 do
    local phi = math.pi * s / stacks
    for l = 0, slices - 1 do
      local theta = 2 * math.pi * l / slices
      mesh.vertices[#mesh.vertices + 1] = { center[1] + r * math.sin(phi) * math.cos(theta),
        center[2] + r * math.sin(phi) * math.sin(theta), center[3] + r * math.cos(phi) }
    end
  end
  mesh.vertices[#mesh.vertices + 1] = { center[1], center[2], center[3] - r }
  local south = #mesh.vertices
  local function ring(s, l) return 2 + (s - 1) * slices + l % slices end
  local function out(i, j, k)
    local V = mesh.vertices
    add_oriented(mesh, i, j, k, sub({ (V[i][1] + V[j][1] + V[k][1]) / 3, (V[i][2] + V[j][2] + V[k][2]) / 3,
      (V[i][3] + V[j][3] + V[k][3]) / 3 }, center))
  end
  for l = 0, slices - 1 do
    out(1, ring(1, l), ring(1, l + 1))
    out(south, ring(stacks - 1, l), ring(stacks - 1, l + 1))
    for s = 1, stacks - 2 do
      out(ring(s, l), ring(s + 1, l), ring(s + 1, l + 1))
      out(ring(s, l), ring(s + 1, l + 1), ring(s, l + 1))
    end
  end
  return mesh
end

-- The six tetrahedra of a cube sharing its diagonal (0,0,0)-(1,1,1) (Kuhn): neighbouring cubes' faces match, so the
-- surface is closed.
local KUHN = {}
for _, p in ipairs { { 1, 2, 3 }, { 1, 3, 2 }, { 2, 1, 3 }, { 2, 3, 1 }, { 3, 1, 2 }, { 3, 2, 1 } } do
  local c, tet = { 0, 0, 0 }, { { 0, 0, 0 } }
  for i = 1, 3 do
    c[p[i]] = 1
    tet[#tet + 1] = { c[1], c[2], c[3] }
  end
  KUHN[#KUHN + 1] = tet
end

--- The surface f(x) = 0 around {x : f(x) < 0} by marching tetrahedra on an n[1] x n[2] x n[3] grid of cells over
--- [lo, hi]: closed, manifold and oriented outwards when f > 0 on the grid's boundary. A vertex sits where f changes
--- sign along a grid edge, kept at least 10% of the edge from either end (so triangles never collapse).
function M.isosurface(f, lo, hi, n)
  local nn = { n[1] + 1, n[2] + 1, n[3] + 1 }
  local function node_id(i, j, k) return (i * nn[2] + j) * nn[3] + k end
  local function node_x(i, j, k)
    return { lo[1] + (hi[1] - lo[1]) * i / n[1], lo[2] + (hi[2] - lo[2]) * j / n[2], lo[3] + (hi[3] - lo[3]) * k / n[3] }
  end
  local value = {}
  for i = 0, n[1] do for j = 0, n[2] do for k = 0, n[3] do
    local x = node_x(i, j, k)
    local v = f(x[1], x[2], x[3])
    value[node_id(i, j, k)] = v == 0 and 1e-9 or v -- a node exactly on the surface counts as outside
  end end end
  local mesh, on_edge = { vertices = {}, triangles = {} }, {}
  local function edge_vertex(a, b) -- a inside, b outside: {node ids, x}
    local key = a.id < b.id and a.id * 1e9 + b.id or b.id * 1e9 + a.id
    if not on_edge[key] then
      local t = math.min(0.9, math.max(0.1, value[a.id] / (value[a.id] - value[b.id])))
      mesh.vertices[#mesh.vertices + 1] = { a.x[1] + t * (b.x[1] - a.x[1]), a.x[2] + t * (b.x[2] - a.x[2]),
        a.x[3] + t * (b.x[3] - a.x[3]) }
      on_edge[key] = #mesh.vertices
    end
    return on_edge[key]
  end
  -- a triangle cutting the edge (a, b) with b outside: b is on its outer side
  local function tri(p, q, r, b)
    add_oriented(mesh, p, q, r, sub(b.x, mesh.vertices[p]))
  end
  for i = 0, n[1] - 1 do for j = 0, n[2] - 1 do for k = 0, n[3] - 1 do
    for _, tet in ipairs(KUHN) do
      local inside, outside = {}, {}
      for _, c in ipairs(tet) do
        local node = { id = node_id(i + c[1], j + c[2], k + c[3]), x = node_x(i + c[1], j + c[2], k + c[3]) }
        if value[node.id] < 0 then inside[#inside + 1] = node else outside[#outside + 1] = node end
      end
      if #inside == 1 then
        local a = inside[1]
        tri(edge_vertex(a, outside[1]), edge_vertex(a, outside[2]), edge_vertex(a, outside[3]), outside[1])
      elseif #inside == 3 then
        local b = outside[1]
        tri(edge_vertex(inside[1], b), edge_vertex(inside[2], b), edge_vertex(inside[3], b), b)
      elseif #inside == 2 then
        local a, b, c, d = inside[1], inside[2], outside[1], outside[2]
        local ac, ad, bd, bc = edge_vertex(a, c), edge_vertex(a, d), edge_vertex(b, d), edge_vertex(b, c)
        tri(ac, ad, bd, c)
        tri(ac, bd, bc, c)
      end
    end
  end end end
  return mesh
end

--- Rounds every coordinate to a multiple of q (a power of two: the values are then exact in float32, so OBJ, binary
--- STL and ASCII STL files hold the same numbers).
function M.quantize(mesh, q)
  for _, v in ipairs(mesh.vertices) do
    for a = 1, 3 do v[a] = math.floor(v[a] / q + 0.5) * q end
  end
  return mesh
end

local function num(x) return string.format("%.17g", x) end

local function normal(mesh, t)
  local V = mesh.vertices
  local n = cross(sub(V[t[2]], V[t[1]]), sub(V[t[3]], V[t[1]]))
  local l = math.sqrt(dot(n, n))
  return l > 0 and { n[1] / l, n[2] / l, n[3] / l } or { 0, 0, 0 }
end

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

--- Wavefront OBJ: v lines, then f lines (1-based).
function M.write_obj(path, mesh, comment)
  local out = { "# " .. (comment or "mesh") .. "\n" }
  for _, v in ipairs(mesh.vertices) do out[#out + 1] = "v " .. num(v[1]) .. " " .. num(v[2]) .. " " .. num(v[3]) .. "\n" end
  for _, t in ipairs(mesh.triangles) do out[#out + 1] = string.format("f %d %d %d\n", t[1], t[2], t[3]) end
  write(path, table.concat(out))
end

--- Binary STL: an 80-byte header, the triangle count, then per triangle its normal and corners as float32 and a zero
--- attribute word (little-endian).
function M.write_stl(path, mesh, header)
  assert(ffi.abi("le"), "binary STL is little-endian")
  local n = #mesh.triangles
  local buf = ffi.new("uint8_t[?]", 84 + 50 * n)
  ffi.copy(buf, (header or "binary STL"):sub(1, 80))
  ffi.cast("uint32_t*", buf + 80)[0] = n
  for i, t in ipairs(mesh.triangles) do
    local f = ffi.cast("float*", buf + 84 + 50 * (i - 1))
    local nrm = normal(mesh, t)
    f[0], f[1], f[2] = nrm[1], nrm[2], nrm[3]
    for c = 1, 3 do
      local v = mesh.vertices[t[c]]
      f[3 * c], f[3 * c + 1], f[3 * c + 2] = v[1], v[2], v[3]
    end
  end
  write(path, ffi.string(buf, 84 + 50 * n))
end

--- ASCII STL.
function M.write_stl_ascii(path, mesh, name)
  name = name or "mesh"
  local out = { "solid " .. name .. "\n" }
  for _, t in ipairs(mesh.triangles) do
    local nrm = normal(mesh, t)
    out[#out + 1] = string.format(" facet normal %.4g %.4g %.4g\n  outer loop\n", nrm[1], nrm[2], nrm[3])
    for c = 1, 3 do
      local v = mesh.vertices[t[c]]
      out[#out + 1] = "   vertex " .. num(v[1]) .. " " .. num(v[2]) .. " " .. num(v[3]) .. "\n"
    end
    out[#out + 1] = "  endloop\n endfacet\n"
  end
  out[#out + 1] = "endsolid " .. name .. "\n"
  write(path, table.concat(out))
end

return M
