-- tests/_msh_files.lua: small Gmsh MSH 4.1 files written by hand for tests/msh_spec.lua and the fuzzer's seeds
-- (tests/fuzz/seeds.lua): ASCII, and binary in either byte order with a 4- or 8-byte size_t.
local ffi = require "ffi"

local M = {}

-- The unit cube cut into 6 tetrahedra around its diagonal (corner i at (i % 2, floor(i / 2) % 2, floor(i / 4))),
-- node tags tag_step apart: Physical Volume "cube" (tag 1) holds the tetrahedra, Physical Surface "skin" (tag 2) the
-- 12 boundary triangles; a point element (type 15, skipped by the reader), a line (type 1), a parametric node block
-- and a $Comments section (unknown, skipped) come along.
function M.cube(tag_step)
  tag_step = tag_step or 1
  local xyz, tag = {}, {}
  for i = 0, 7 do
    xyz[i] = { i % 2, math.floor(i / 2) % 2, math.floor(i / 4) }
    tag[i] = (i + 1) * tag_step
  end
  local tets = {}
  for _, perm in ipairs { { 1, 2, 4 }, { 1, 4, 2 }, { 2, 1, 4 }, { 2, 4, 1 }, { 4, 1, 2 }, { 4, 2, 1 } } do
    tets[#tets + 1] = { 0, perm[1], perm[1] + perm[2], 7 }
  end
  local seen, tris = {}, {} -- boundary faces: those of one tetrahedron only
  for _, t in ipairs(tets) do
    for skip = 1, 4 do
      local f = {}
      for j = 1, 4 do if j ~= skip then f[#f + 1] = t[j] end end
      local key = table.concat(f, ",")
      seen[key] = (seen[key] or 0) + 1
      if seen[key] == 1 then tris[#tris + 1] = f end
    end
  end
  local boundary = {}
  for _, f in ipairs(tris) do if seen[table.concat(f, ",")] == 1 then boundary[#boundary + 1] = f end end
  local function el(first, list)
    local out = {}
    for i, nodes in ipairs(list) do
      local e = { first + i }
      for _, n in ipairs(nodes) do e[#e + 1] = tag[n] end
      out[i] = e
    end
    return out
  end
  local box = { 0, 0, 0, 1, 1, 1 }
  return {
    names = { { 3, 1, "cube" }, { 2, 2, "skin" } },
    entities = { -- per dimension: tag, coordinates (point) or box, physical tags, bounding entities
      [0] = { { 1, { 0, 0, 0 }, {} } },
      { { 1, box, {}, { 1, -2 } } },
      { { 1, box, { 2 }, { 1 } } },
      { { 1, box, { 1 }, { 1 } } },
    },
    nodes = { -- blocks: dim, entity, parametric, node tags, coordinates (+ u when parametric on a curve)
      { 0, 1, 0, { tag[0] }, { xyz[0] } },
      { 1, 1, 1, { tag[1] }, { { 1, 0, 0, 0.5 } } },
      { 3, 1, 0, { tag[2], tag[3], tag[4], tag[5], tag[6], tag[7] },
        { xyz[2], xyz[3], xyz[4], xyz[5], xyz[6], xyz[7] } },
    },
    elements = { -- blocks: dim, entity, type, elements (tag, node tags)
      { 0, 1, 15, el(0, { { 0 } }) },
      { 1, 1, 1, el(1, { { 0, 1 } }) },
      { 2, 1, 2, el(2, boundary) },
      { 3, 1, 4, el(2 + #boundary, tets) },
    },
    n_tris = #boundary,
    n_tets = #tets,
    max_tag = 8 * tag_step,
  }
end

local function count(blocks, at)
  local n = 0
  for _, b in ipairs(blocks) do n = n + #b[at] end
  return n
end

--- The mesh as ASCII MSH 4.1 text.
function M.ascii(mesh)
  local L = { "$MeshFormat", "4.1 0 8", "$EndMeshFormat", "$Comments", "written by tests/_msh_files.lua",
    "$EndComments", "$PhysicalNames", tostring(#mesh.names) }
  local function add(...) L[#L + 1] = table.concat({ ... }, " ") end
  for _, n in ipairs(mesh.names) do add(n[1], n[2], '"' .. n[3] .. '"') end
  add("$EndPhysicalNames")
  add("$Entities")
  add(#mesh.entities[0], #mesh.entities[1], #mesh.entities[2], #mesh.entities[3])
  for d = 0, 3 do
    for _, e in ipairs(mesh.entities[d]) do
      local row = { e[1], table.concat(e[2], " "), #e[3] }
      for _, p in ipairs(e[3]) do row[#row + 1] = p end
      if d > 0 then
        row[#row + 1] = #e[4]
        for _, b in ipairs(e[4]) do row[#row + 1] = b end
      end
      add(unpack(row))
    end
  end
  add("$EndEntities")
  add("$Nodes")
  add(#mesh.nodes, count(mesh.nodes, 4), 1, mesh.max_tag)
  for _, b in ipairs(mesh.nodes) do
    add(b[1], b[2], b[3], #b[4])
    for _, t in ipairs(b[4]) do add(t) end
    for _, x in ipairs(b[5]) do add(unpack(x)) end
  end
  add("$EndNodes")
  add("$Elements")
  add(#mesh.elements, count(mesh.elements, 4), 1, count(mesh.elements, 4))
  for _, b in ipairs(mesh.elements) do
    add(b[1], b[2], b[3], #b[4])
    for _, e in ipairs(b[4]) do add(unpack(e)) end
  end
  add("$EndElements")
  return table.concat(L, "\n") .. "\n"
end

--- The mesh as binary MSH 4.1: opts.swap writes the other byte order, opts.size the bytes of a size_t (default 8).
function M.binary(mesh, opts)
  opts = opts or {}
  local size = opts.size or 8
  local out = {}
  local function bytes(ctype, v)
    local s = ffi.string(ffi.new(ctype .. "[1]", v), ffi.sizeof(ctype))
    out[#out + 1] = opts.swap and s:reverse() or s
  end
  local function int(v) bytes("int32_t", v) end
  local function sz(v) bytes(size == 8 and "uint64_t" or "uint32_t", v) end
  local function real(v) bytes("double", v) end
  local function text(s) out[#out + 1] = s end
  text("$MeshFormat\n4.1 1 " .. size .. "\n")
  int(1)
  text("\n$EndMeshFormat\n$Comments\nwritten by tests/_msh_files.lua\n$EndComments\n")
  text("$PhysicalNames\n" .. #mesh.names .. "\n")
  for _, n in ipairs(mesh.names) do text(string.format('%d %d "%s"\n', n[1], n[2], n[3])) end
  text("$EndPhysicalNames\n$Entities\n")
  for d = 0, 3 do sz(#mesh.entities[d]) end
  for d = 0, 3 do
    for _, e in ipairs(mesh.entities[d]) do
      int(e[1])
      for _, x in ipairs(e[2]) do real(x) end
      sz(#e[3])
      for _, p in ipairs(e[3]) do int(p) end
      if d > 0 then
        sz(#e[4])
        for _, b in ipairs(e[4]) do int(b) end
      end
    end
  end
  text("\n$EndEntities\n$Nodes\n")
  sz(#mesh.nodes); sz(count(mesh.nodes, 4)); sz(1); sz(mesh.max_tag)
  for _, b in ipairs(mesh.nodes) do
    int(b[1]); int(b[2]); int(b[3]); sz(#b[4])
    for _, t in ipairs(b[4]) do sz(t) end
    for _, x in ipairs(b[5]) do for _, v in ipairs(x) do real(v) end end
  end
  text("\n$EndNodes\n$Elements\n")
  local n = count(mesh.elements, 4)
  sz(#mesh.elements); sz(n); sz(1); sz(n)
  for _, b in ipairs(mesh.elements) do
    int(b[1]); int(b[2]); int(b[3]); sz(#b[4])
    for _, e in ipairs(b[4]) do for _, v in ipairs(e) do sz(v) end end
  end
  text("\n$EndElements\n")
  return table.concat(out)
end

return M
