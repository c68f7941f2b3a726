-- Private: robots from Gmsh meshes for robot:gmsh (seed 003 sec. 4.1): a .geo file meshed by gmsh (a subprocess:
-- GPL, never linked) or a .msh file, read by the host's MSH 4.1 reader (engine/host/msh.h via ffi.C); one particle per
-- tetrahedron (2D: triangle) at its centroid with its volume (area), or with spacing one per point of the world's
-- lattice inside an element (engine/host/msh_lattice.c); groups per physical volume (surface), and the chamber walls
-- of every physical surface (curve): for each face, the element owning it, its area and the unit normal pointing from
-- the cavity into the solid, handed to the element's particle or, split into pieces, to the nearest particles.
local ffi = require "ffi"
local check = require "cq._check"
local warn_ = require "cq._warn"
local chambers_ = require "cq._chamber"
local proc = require "cq._proc"
require "cq._ffi" -- declares cqh_msh_* (engine/host/msh.h)

local M = {}
M.OPTIONS = check.option_set("robot:gmsh", { "path", "scale", "offset", "material", "groups", "mesh_size", "velocity",
  "name", "spacing" })
M.MAX_LATTICE = 5e7 -- lattice points over a mesh's bounding box with spacing (an int each while filling)
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
-- a hash of the sorted node list built once over the wanted faces, then one pass over the elements' faces). carry(sum,
-- nodes, area, normal, element) hands a wall face to the particles that carry it (cq._chamber.add_sample's sums).
local function chambers(P, dim, els, k, faces, groups_of, n_nodes, carry)
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
        carry(ch.sum, n, area, normal, owner[f][1], name)
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
    local t = chambers_.wall_of(ch.sum, dim)
    t.face_area, t.unmatched, t.unmatched_at = ch.face_area, ch.unmatched, ch.unmatched_at
    out[name] = t
  end
  return out, count
end

-- The body's outline at the lattice's resolution (robot:gmsh{spacing}): inside(x) is true where the lattice point
-- nearest x (the centre of the lattice cell holding x) is one of the body's, or lies in a space the body encloses (a
-- cavity: points that no path of empty neighbours, along the axes, joins to the border of the lattice's box).
local function outline(f, h, dim)
  local n = { f.count[0], f.count[1], f.count[2] }
  local o = { f.origin[0], f.origin[1], f.origin[2] }
  local N = n[1] * n[2] * n[3]
  local mark = ffi.new("uint8_t[?]", N) -- 0 enclosed (until reached), 1 the body's, 2 outside
  local floor = math.floor
  for j = 0, f.n - 1 do
    local c1, c2 = floor((f.x[3 * j] - o[1]) / h), floor((f.x[3 * j + 1] - o[2]) / h)
    local c3 = dim == 3 and floor((f.x[3 * j + 2] - o[3]) / h) or 0
    mark[(c1 * n[2] + c2) * n[3] + c3] = 1
  end
  local stack, top = ffi.new("int32_t[?]", N), 0
  local function reach(i)
    if mark[i] == 0 then
      mark[i] = 2
      stack[top] = i
      top = top + 1
    end
  end
  for c1 = 0, n[1] - 1 do
    for c2 = 0, n[2] - 1 do
      for c3 = 0, n[3] - 1 do
        if c1 == 0 or c1 == n[1] - 1 or c2 == 0 or c2 == n[2] - 1 or (dim == 3 and (c3 == 0 or c3 == n[3] - 1)) then
          reach((c1 * n[2] + c2) * n[3] + c3)
        end
      end
    end
  end
  local stride = { n[2] * n[3], n[3], 1 }
  while top > 0 do
    top = top - 1
    local i = stack[top]
    local c = { floor(i / stride[1]), floor(i / n[3]) % n[2], i % n[3] }
    for a = 1, dim do
      if c[a] > 0 then reach(i - stride[a]) end
      if c[a] < n[a] - 1 then reach(i + stride[a]) end
    end
  end
  return function(x)
    local i = 0
    for a = 1, dim do
      local c = floor((x[a] - o[a]) / h)
      if not (c >= 0 and c < n[a]) then return false end
      i = i + c * stride[a]
    end
    return mark[i] ~= 2
  end
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
  if opts.spacing ~= nil then check.number(where, "spacing", opts.spacing, 0, math.huge, { open_lo = true }) end
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
  -- the sampling: one particle per element at its centroid with its volume, or (spacing) one per lattice point inside
  -- an element with volume spacing^dim; element_of(j): sample j's element (0-based), j = 1.. in element or lattice order
  local h = opts.spacing
  local samples, n_samples = nil, els.n
  if h then
    local X = ffi.new("double[?]", 3 * m.n_nodes)
    for n = 0, m.n_nodes - 1 do
      for a = 1, 3 do X[3 * n + a - 1] = P[n][a] end
    end
    local err = ffi.new("char[512]")
    local f = ffi.C.cqh_msh_lattice_fill(X, m.n_nodes, els.nodes, els.n, k, h, M.MAX_LATTICE, err, 512)
    if f == nil then check.fail(where, "spacing: " .. ffi.string(err), h) end
    samples = ffi.gc(f, ffi.C.cqh_msh_lattice_free)
    n_samples = samples.n
    if n_samples == 0 then
      check.fail(where, string.format("spacing: no lattice point lies inside the mesh's elements (%s); a smaller " ..
        "spacing", opts.path), h)
    end
  end
  local function element_of(j) return samples and samples.element[j - 1] or j - 1 end
  local order, buckets = {}, {}
  for j = 1, n_samples do
    local i = element_of(j)
    local names = els.entity[i] >= 0 and groups_of[els.entity[i]] or {}
    local home = names[1] or ""
    for l = 2, #names do
      local given = opts.groups and opts.groups[names[l]]
      if given ~= nil and given ~= opts.groups[home] then
        check.fail(where, string.format("groups: '%s' and '%s' give different materials to the elements they share",
          home, names[l]), names[l])
      end
    end
    if not buckets[home] then buckets[home] = {}; order[#order + 1] = home end
    local b = buckets[home]
    b[#b + 1] = j
  end
  r:_room(where, n_samples, h and "spacing = " .. tostring(h) or "mesh_size = " .. tostring(opts.mesh_size))
  local label = opts.name or opts.path:match("([^/]+)$")
  local vel = opts.velocity or {}
  local all = { first = #r.x + 1, particles = {}, name = label, material = default, groups = {} }
  local particle_of, element_at, volume, shapes = {}, {}, 0, {}
  for i = 0, els.n - 1 do -- every element is checked before any group is added to the robot
    local _, v = element_shape(P, els, k, i, dim)
    if not (v > 0) then
      local what = dim == 3 and "tetrahedron %d has no volume (its nodes are coplanar)" or
        "triangle %d has no area (its nodes are collinear)"
      check.raise(string.format("%s: %s: " .. what, where, opts.path, i + 1))
    end
    volume = volume + v
  end
  for b, home in ipairs(order) do
    local xs, vols = {}, {}
    for l, j in ipairs(buckets[home]) do
      if samples then
        local x = samples.x + 3 * (j - 1)
        xs[l], vols[l] = dim == 2 and { x[0], x[1] } or { x[0], x[1], x[2] }, h ^ dim
      else
        local c, v = element_shape(P, els, k, j - 1, dim)
        xs[l], vols[l] = dim == 2 and { c[1], c[2] } or c, v
      end
    end
    shapes[b] = { xs, vols }
  end
  for b, home in ipairs(order) do
    local xs, vols = shapes[b][1], shapes[b][2]
    local g = r:_add_group(xs, 0, mats[home] or default, vel, home ~= "" and (label .. " " .. home) or label)
    for l, j in ipairs(buckets[home]) do
      local p = g.first + l - 1
      r.vol[p] = vols[l] -- per-element volumes: _add_group gives one to all
      if not samples then particle_of[j - 1] = p end -- element -> its particle, for the walls' faces
      element_at[p] = element_of(j)
    end
  end
  all.last = #r.x
  for p = all.first, all.last do all.particles[#all.particles + 1] = p end
  if samples then
    all.inside = outline(samples, h, dim)
  else -- (one particle per element: no lattice to tell inside from outside at)
    all.inside = function()
      check.raise(where .. ": group.inside needs the mesh sampled on a lattice: robot:gmsh{spacing = ...} (docs/api.md, " ..
        "\"Sampling on a lattice\")")
    end
  end
  -- .groups[name]: every physical group of the elements' dimension, in the form robot:select returns
  for p = all.first, all.last do
    local i = element_at[p]
    for _, name in ipairs(els.entity[i] >= 0 and groups_of[els.entity[i]] or {}) do
      local g = all.groups[name]
      if not g then
        g = { particles = {}, name = name, material = mats[name] or default, parent = all }
        all.groups[name] = g
      end
      g.particles[#g.particles + 1] = p
    end
  end
  for _, g in pairs(all.groups) do
    table.sort(g.particles)
    g.first, g.last = g.particles[1], g.particles[#g.particles]
  end
  local fk = k - 1
  local carry
  if samples then -- each face split into pieces no longer than spacing / SUB, each piece to the nearest particle
    local nearest = chambers_.nearest(r.x, all.particles, h, dim)
    local SUB = chambers_.SUB
    carry = function(sum, n, area, normal, _, name)
      local A, B, C = P[n[1]], P[n[2]], P[n[3] or n[2]]
      local edge = 0
      for _, e in ipairs { { A, B }, { B, C }, { C, A } } do
        local d2 = 0
        for a = 1, dim do d2 = d2 + (e[1][a] - e[2][a]) ^ 2 end
        edge = math.max(edge, math.sqrt(d2))
      end
      local q = math.max(1, math.ceil(edge * SUB / h))
      local function emit(u, v, dA) -- the piece centred at A + u (B - A) + v (C - A)
        local x = {}
        for a = 1, dim do x[a] = A[a] + u * (B[a] - A[a]) + v * (C[a] - A[a]) end
        local p = nearest(x)
        if not p then
          local at = {}
          for a = 1, dim do at[a] = string.format("%.4g", x[a]) end
          check.fail(where, string.format("the physical %s '%s' has a point (%s) with no particle within 2 spacings: " ..
            "the solid behind it is thinner than the spacing resolves; a smaller spacing", dim == 3 and "surface" or
            "curve", name, table.concat(at, ", ")), h)
        end
        chambers_.add_sample(sum, p, r.x, x, normal, dA, dim)
      end
      if fk == 2 then
        for i = 0, q - 1 do emit((i + 0.5) / q, 0, area / q) end
      else
        local dA = area / (q * q)
        for i = 0, q - 1 do
          for j = 0, q - 1 - i do
            emit((i + 1 / 3) / q, (j + 1 / 3) / q, dA)
            if i + j <= q - 2 then emit((i + 2 / 3) / q, (j + 2 / 3) / q, dA) end
          end
        end
      end
    end
  else -- each face to its element's particle
    carry = function(sum, n, area, normal, e)
      local p = particle_of[e]
      local s = sum[p] or { 0, 0, 0, o = { 0, 0, 0 }, A = 0 }
      local ec = element_shape(P, els, k, e, dim) -- the particle: its element's centroid
      for a = 1, 3 do
        local fc = 0 -- the face's centroid
        for j = 1, fk do fc = fc + P[n[j]][a] / fk end
        s[a] = s[a] + area * normal[a]
        s.o[a] = s.o[a] + area * (fc - ec[a])
      end
      s.A = s.A + area
      sum[p] = s
    end
  end
  all.chambers, all.faces = chambers(P, dim, els, k, faces, entity_groups(m, dim - 1), m.n_nodes, carry)
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
