-- Private: robots from Gmsh meshes for robot:gmsh (seed 003 sec. 4.1): a .geo file meshed by gmsh (a subprocess:
-- GPL, never linked) or a .msh file, read by the host's MSH 4.1 reader (engine/host/msh.h via ffi.C); one particle per
-- tetrahedron (2D: triangle) at its centroid with its volume (area), groups per physical volume (surface), and the
-- chamber walls of every physical surface (curve): for each face, the element owning it, its area and the unit
-- normal pointing from the cavity into the solid.
local ffi = require "ffi"
local check = require "cq._check"
local warn_ = require "cq._warn"
local chambers_ = require "cq._chamber"
local proc = require "cq._proc"
require "cq._ffi" -- declares cqh_msh_* (engine/host/msh.h)

local M = {}
M.OPTIONS = check.option_set("robot:gmsh", { "path", "scale", "offset", "material", "groups", "mesh_size", "velocity",
  "name" })
M.GMSH = "gmsh"      -- the program run for .geo files (a test points it elsewhere to see the message without it)
M.MAX_BYTES = 2 ^ 31 -- .msh files larger than this are refused before they are read

-- Runs gmsh on a .geo file for a dim-D mesh in a temporary MSH 4.1 file (binary: smaller and faster to read); returns
-- its path. mesh_size: passed as -clmax and as the .geo's parameter `mesh_size` (-setnumber), so a file that sets
-- its own size from that parameter (scenes/finger.geo) follows it too.
local function run_gmsh(where, path, dim, mesh_size)
  local exe = proc.which(M.GMSH)
  if not exe then
    check.raise(string.format("%s: %s: meshing a .geo file needs gmsh, which is not on PATH (install it: make deps-gmsh, " ..
      "or apt-get install gmsh), or mesh it yourself: gmsh -%d -format msh41 %s", where, path, dim, path))
  end
  local f = io.open(path, "rb")
  if not f then check.raise(string.format("%s: %s: cannot open the .geo file", where, path)) end
  f:close()
  local base = os.tmpname() -- a new empty file; the mesh goes next to it
  local out = base .. ".msh"
  local args = { proc.quote(exe), "-" .. dim, "-format msh41 -bin -v 2" }
  if mesh_size then
    local h = string.format("%.17g", mesh_size)
    args[#args + 1] = "-clmax " .. h .. " -setnumber mesh_size " .. h
  end
  args[#args + 1] = "-o " .. proc.quote(out) .. " " .. proc.quote(path) .. " >/dev/null"
  local ok, why = proc.run(table.concat(args, " "))
  os.remove(base)
  if not ok then
    os.remove(out)
    check.raise(string.format("%s: %s: gmsh failed (%s)", where, path, why))
  end
  return out
end

-- The mesh of path (.geo: meshed by gmsh; .msh: read as it is): a cqh_msh* freed by the garbage collector.
function M.load(where, path, dim, mesh_size)
  if not pcall(function() return ffi.C.cqh_msh_read end) then
    check.raise(where .. ": cqh_msh_read is not available: run the script with build/bin/cqlua (make)")
  end
  local ext = (path:match("%.(%w+)$") or ""):lower()
  if ext ~= "geo" and ext ~= "msh" then
    check.fail(where, "path must be a Gmsh .geo file (meshed by gmsh) or a .msh file (MSH 4.1)", path)
  end
  if ext == "msh" and mesh_size then
    check.fail(where, "mesh_size needs a .geo file (a .msh file is already meshed)", mesh_size)
  end
  local file = ext == "geo" and run_gmsh(where, path, dim, mesh_size) or path
  local err = ffi.new("char[512]")
  local m = ffi.C.cqh_msh_read(file, M.MAX_BYTES, err, 512)
  if file ~= path then os.remove(file) end
  if m == nil then
    check.raise(string.format("%s: %s: %s", where, path, ffi.string(err)))
  end
  return ffi.gc(m, ffi.C.cqh_msh_free)
end

-- The physical groups of each entity of dimension d (by index; other entities have none), as lists of names:
-- name[dim][tag] from $PhysicalNames, the tag itself for unnamed groups.
local function entity_groups(m, d)
  local name = { [0] = {}, {}, {}, {} }
  for i = 0, m.n_names - 1 do name[m.name_dim[i]][m.name_tag[i]] = ffi.string(m.names[i]) end
  local groups = {}
  for e = 0, m.n_entities - 1 do
    local list = {}
    if m.entity_dim[e] == d then
      for k = m.entity_first[e], m.entity_first[e + 1] - 1 do
        local tag = m.entity_physicals[k]
        list[#list + 1] = name[d][tag] or tostring(tag)
      end
    end
    groups[e] = list
  end
  return groups
end

-- Centroid and measure (volume of a tetrahedron, area of a triangle) of element i of els (k nodes each), placed.
local function element_shape(P, els, k, i, dim)
  local c = { 0, 0, 0 }
  local v = {}
  for j = 0, k - 1 do
    local n = els.nodes[k * i + j]
    v[j] = P[n]
    for a = 1, 3 do c[a] = c[a] + P[n][a] / k end
  end
  local ux, uy, uz = v[1][1] - v[0][1], v[1][2] - v[0][2], v[1][3] - v[0][3]
  local wx, wy, wz = v[2][1] - v[0][1], v[2][2] - v[0][2], v[2][3] - v[0][3]
  if dim == 2 then return c, math.abs(ux * wy - uy * wx) / 2 end
  local tx, ty, tz = v[3][1] - v[0][1], v[3][2] - v[0][2], v[3][3] - v[0][3]
  return c, math.abs(ux * (wy * tz - wz * ty) - uy * (wx * tz - wz * tx) + uz * (wx * ty - wy * tx)) / 6
end

-- The wall of a face (nodes a, b[, c]) of an element whose other node is d: its area (length in 2D) and unit
-- normal pointing towards d, i.e. from the face into the solid (the solid's outward normal there, negated).
local function wall(P, dim, a, b, c, d)
  local A, B, D = P[a], P[b], P[d]
  local nx, ny, nz
  if dim == 2 then
    nx, ny, nz = -(B[2] - A[2]), B[1] - A[1], 0
  else
    local C = P[c]
    local ux, uy, uz = B[1] - A[1], B[2] - A[2], B[3] - A[3]
    local wx, wy, wz = C[1] - A[1], C[2] - A[2], C[3] - A[3]
    nx, ny, nz = uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx
  end
  local len = math.sqrt(nx * nx + ny * ny + nz * nz)
  if (D[1] - A[1]) * nx + (D[2] - A[2]) * ny + (D[3] - A[3]) * nz < 0 then nx, ny, nz = -nx, -ny, -nz end
  local measure = dim == 2 and len or len / 2
  return measure, { nx / len, ny / len, nz / len }
end

-- The faces (node lists, the other node last) of an element of k nodes: 4 triangles of a tetrahedron, 3 edges of a
-- triangle.
local FACES = { [4] = { { 0, 1, 2, 3 }, { 0, 1, 3, 2 }, { 0, 2, 3, 1 }, { 1, 2, 3, 0 } },
  [3] = { { 0, 1, 2 }, { 0, 2, 1 }, { 1, 2, 0 } } }

-- The chamber tables of the face groups: for each face of a group, the element sharing all its nodes (found through
-- a hash of the sorted node list built once over the wanted faces, then one pass over the elements' faces).
local function chambers(P, dim, els, k, faces, groups_of, n_nodes, particle_of)
  local fk = k - 1
  local wanted = {} -- wanted[lo * n_nodes + mid][hi] = face index (0-based); 2D: lo, hi and hi
  local function key(a, b, c)
    if c == nil then
      if a > b then a, b = b, a end
      return a * n_nodes + b, b
    end
    if a > b then a, b = b, a end
    if b > c then b, c = c, b end
    if a > b then a, b = b, a end
    return a * n_nodes + b, c
  end
  local fn = faces.nodes
  for f = 0, faces.n - 1 do
    local k1, k2 = key(fn[fk * f], fn[fk * f + 1], fk == 3 and fn[fk * f + 2] or nil)
    wanted[k1] = wanted[k1] or {}
    wanted[k1][k2] = f
  end
  local owner, twice = {}, {} -- face -> { element, other node }
  local en = els.nodes
  for i = 0, els.n - 1 do
    local base = k * i
    for _, face in ipairs(FACES[k]) do
      local k1, k2 = key(en[base + face[1]], en[base + face[2]], fk == 3 and en[base + face[3]] or nil)
      local f = wanted[k1] and wanted[k1][k2]
      if f then
        if owner[f] then twice[f] = true end
        owner[f] = { i, els.nodes[k * i + face[k]] }
      end
    end
  end
  local out, count = {}, {}
  for f = 0, faces.n - 1 do
    local names = faces.entity[f] >= 0 and groups_of[faces.entity[f]] or {}
    for _, name in ipairs(names) do
      count[name] = (count[name] or 0) + 1
      local ch = out[name]
      if not ch then
        ch = { sum = {}, face_area = 0, unmatched = 0, unmatched_at = {} }
        out[name] = ch
      end
      if owner[f] and not twice[f] then
        local n = {}
        for j = 1, fk do n[j] = faces.nodes[fk * f + j - 1] end
        local area, normal = wall(P, dim, n[1], n[2], n[3], owner[f][2])
        local p = particle_of[owner[f][1]]
        local s = ch.sum[p] or { 0, 0, 0, o = { 0, 0, 0 }, A = 0 }
        local ec = element_shape(P, els, k, owner[f][1], dim) -- the particle: its element's centroid
        for a = 1, 3 do
          local fc = 0 -- the face's centroid
          for j = 1, fk do fc = fc + P[n[j]][a] / fk end
          s[a] = s[a] + area * normal[a]
          s.o[a] = s.o[a] + area * (fc - ec[a])
        end
        s.A = s.A + area
        ch.sum[p] = s
        ch.face_area = ch.face_area + area
      else
        ch.unmatched = ch.unmatched + 1 -- on no element (not meshed) or between two (an interface, not a wall)
        if #ch.unmatched_at < 3 then -- where: the face's centroid, and why
          local c = { 0, 0, 0 }
          for j = 1, fk do
            local X = P[faces.nodes[fk * f + j - 1]]
            for a = 1, dim do c[a] = c[a] + X[a] / fk end
          end
          ch.unmatched_at[#ch.unmatched_at + 1] = { c, owner[f] and "between two elements" or "on no element" }
        end
      end
    end
  end
  for name, ch in pairs(out) do
    local t = { particles = {}, normal = {}, area = {}, offset = {}, face_area = ch.face_area, unmatched = ch.unmatched,
      unmatched_at = ch.unmatched_at }
    for p in pairs(ch.sum) do t.particles[#t.particles + 1] = p end
    table.sort(t.particles)
    for i, p in ipairs(t.particles) do
      local s = ch.sum[p]
      local len = math.sqrt(s[1] ^ 2 + s[2] ^ 2 + s[3] ^ 2)
      t.area[i] = len
      t.normal[i] = dim == 2 and { s[1] / len, s[2] / len } or { s[1] / len, s[2] / len, s[3] / len }
      t.offset[i] = dim == 2 and { s.o[1] / s.A, s.o[2] / s.A } or { s.o[1] / s.A, s.o[2] / s.A, s.o[3] / s.A }
    end
    out[name] = t
  end
  return out, count
end

--- robot:gmsh (lua/cq/robot.lua): adds the particles of the mesh to robot r; returns the group (docs/api.md).
function M.build(r, where, opts, material)
  check.options(where, opts, M.OPTIONS)
  local dim = r.dim
  if type(opts.path) ~= "string" or opts.path == "" then
    check.fail(where, "path must be a .geo or .msh file name", opts.path)
  end
  local s = check.number(where, "scale", opts.scale or 1, 0, math.huge, { open_lo = true })
  check.vector(where, "offset", opts.offset, dim)
  if opts.mesh_size ~= nil then check.number(where, "mesh_size", opts.mesh_size, 0, math.huge, { open_lo = true }) end
  if opts.velocity then check.vector(where, "velocity", opts.velocity, dim) end
  if opts.groups ~= nil and type(opts.groups) ~= "table" then
    check.fail(where, "groups must be a table { [physical name] = material }", opts.groups)
  end
  local default = material(where, opts.material, dim)
  local m = M.load(where, opts.path, dim, opts.mesh_size)
  local els, faces, k = m.tets, m.triangles, 4
  if dim == 2 then els, faces, k = m.triangles, m.lines, 3 end
  if els.n == 0 then
    check.raise(string.format("%s: %s: the mesh has no %s (it has %d tetrahedra, %d triangles and %d elements of " ..
      "other kinds%s)", where, opts.path, dim == 3 and "tetrahedra (4-node, type 4)" or "triangles (3-node, type 2)",
      m.tets.n, m.triangles.n, m.n_skipped, dim == 3 and "; a 2D mesh belongs to cq.robot{dim = 2}; second-order " ..
      "elements need gmsh -order 1" or ""))
  end
  -- placement: x -> offset + s (x_file - lower corner of the elements' nodes)
  local lo, hi = { math.huge, math.huge, math.huge }, { -math.huge, -math.huge, -math.huge }
  for j = 0, k * els.n - 1 do
    local n = els.nodes[j]
    for a = 1, 3 do
      local x = m.nodes[3 * n + a - 1]
      if x < lo[a] then lo[a] = x end
      if x > hi[a] then hi[a] = x end
    end
  end
  if dim == 2 and hi[3] - lo[3] > 1e-9 * math.max(hi[1] - lo[1], hi[2] - lo[2]) then
    check.raise(string.format("%s: %s: a 2D robot needs a mesh in a plane z = constant (its z runs from %g to %g)",
      where, opts.path, lo[3], hi[3]))
  end
  local P = setmetatable({}, { __index = function(t, n) -- placed node positions, made on first use
    local p = { 0, 0, 0 }
    for a = 1, dim do p[a] = opts.offset[a] + s * (m.nodes[3 * n + a - 1] - lo[a]) end
    t[n] = p
    return p
  end })
  local groups_of = entity_groups(m, dim)
  -- materials of the named groups; an element's home group is its entity's first physical group
  local mats, known = {}, {}
  for _, names in pairs(groups_of) do
    for _, n in ipairs(names) do known[n] = true end
  end
  for name, mat in pairs(opts.groups or {}) do
    if not known[name] then
      local list = {}
      for n in pairs(known) do list[#list + 1] = string.format("%q", n) end
      table.sort(list)
      check.fail(where, string.format("groups: the mesh has no physical %s named %s (it has: %s)",
        dim == 3 and "volume" or "surface", tostring(name), #list > 0 and table.concat(list, ", ") or "none"), name)
    end
    mats[name] = material(where .. " groups." .. name, mat, dim)
  end
  local order, buckets = {}, {}
  for i = 0, els.n - 1 do
    local names = els.entity[i] >= 0 and groups_of[els.entity[i]] or {}
    local home = names[1] or ""
    for j = 2, #names do
      local given = opts.groups and opts.groups[names[j]]
      if given ~= nil and given ~= opts.groups[home] then
        check.fail(where, string.format("groups: '%s' and '%s' give different materials to the elements they share",
          home, names[j]), names[j])
      end
    end
    if not buckets[home] then buckets[home] = {}; order[#order + 1] = home end
    local b = buckets[home]
    b[#b + 1] = i
  end
  r:_room(where, els.n, "mesh_size = " .. tostring(opts.mesh_size))
  local label = opts.name or opts.path:match("([^/]+)$")
  local vel = opts.velocity or {}
  local all = { first = #r.x + 1, particles = {}, name = label, material = default, groups = {} }
  local particle_of, volume, shapes = {}, 0, {}
  for b, home in ipairs(order) do -- every element is checked before any group is added to the robot
    local xs, vols = {}, {}
    for j, i in ipairs(buckets[home]) do
      local c, v = element_shape(P, els, k, i, dim)
      if not (v > 0) then
        local what = dim == 3 and "tetrahedron %d has no volume (its nodes are coplanar)" or
          "triangle %d has no area (its nodes are collinear)"
        check.raise(string.format("%s: %s: " .. what, where, opts.path, i + 1))
      end
      xs[j], vols[j] = dim == 2 and { c[1], c[2] } or c, v
      volume = volume + v
    end
    shapes[b] = { xs, vols }
  end
  for b, home in ipairs(order) do
    local xs, vols = shapes[b][1], shapes[b][2]
    local g = r:_add_group(xs, 0, mats[home] or default, vel, home ~= "" and (label .. " " .. home) or label)
    for j, i in ipairs(buckets[home]) do
      local p = g.first + j - 1
      r.vol[p] = vols[j] -- per-element volumes: _add_group gives one to all
      particle_of[i] = p
    end
  end
  all.last = #r.x
  for p = all.first, all.last do all.particles[#all.particles + 1] = p end
  -- .groups[name]: every physical group of the elements' dimension, in the form robot:select returns
  for i = 0, els.n - 1 do
    for _, name in ipairs(els.entity[i] >= 0 and groups_of[els.entity[i]] or {}) do
      local g = all.groups[name]
      if not g then
        g = { particles = {}, name = name, material = mats[name] or default, parent = all }
        all.groups[name] = g
      end
      g.particles[#g.particles + 1] = particle_of[i]
    end
  end
  for _, g in pairs(all.groups) do
    table.sort(g.particles)
    g.first, g.last = g.particles[1], g.particles[#g.particles]
  end
  all.chambers, all.faces = chambers(P, dim, els, k, faces, entity_groups(m, dim - 1), m.n_nodes, particle_of)
  -- a physical surface whose faces are not all walls of the mesh: say so, and where (a surface left unmeshed, a tag
  -- on an interface between two volumes), rather than leave them out of its wall silently
  local names = {}
  for name in pairs(all.chambers) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    local ch = all.chambers[name]
    if ch.unmatched > 0 then
      local at = {}
      for _, u in ipairs(ch.unmatched_at) do
        local xyz = {}
        for a = 1, dim do xyz[a] = string.format("%.4g", u[1][a]) end
        at[#at + 1] = string.format("(%s) %s", table.concat(xyz, ", "), u[2])
      end
      warn_.warn(string.format("cqlua: warning: %s: %s: %d of the %d faces of the physical %s '%s' are not walls of " ..
        "the mesh (on no element: not meshed; or between two elements: an interface inside the solid) and are left " ..
        "out of its chamber wall%s; the first at %s", where, opts.path, ch.unmatched, all.faces[name],
        dim == 3 and "surface" or "curve", name, #ch.particles == 0 and " (which is empty)" or "",
        table.concat(at, "; ")))
    end
  end
  chambers_.named(where, all.chambers, dim == 3 and "physical surface" or "physical curve")
  all.mesh = { path = opts.path, nodes = m.n_nodes, elements = els.n, volume = volume }
  return all
end

return M
