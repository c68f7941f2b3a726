-- Robots from Gmsh meshes (robot:gmsh, engine/host/msh.c, lua/cq/_msh.lua): hand-written MSH 4.1 files read the same in
-- ASCII and binary (both byte orders, 4- and 8-byte size_t, compact and sparse node tags); meshes made by gmsh give
-- particles whose volumes and chamber walls match the geometry exactly (a cube, a box with a box cavity, the finger
-- of scenes/ in 3D and 2D); every kind of bad file and option gets a message naming the problem.
package.path = "./tests/?.lua;" .. package.path
local ffi = require "ffi"
local cq = require "cq"
local E = require "tests._errors"
local err_of, has = E.err_of, E.has
local files = require "_msh_files"
local msh = require "cq._msh"

local S = require "tests._shell"
local TMP = S.tmpdir()
local function write(name, bytes) -- a file in TMP; its path
  S.write_file(TMP .. "/" .. name, bytes)
  return TMP .. "/" .. name
end
local function close(a, b, rel, what)
  assert.is_true(math.abs(a - b) <= rel * math.max(math.abs(b), 1e-300),
    string.format("%s: %.17g, expected %.17g (relative %.3g)", what or "value", a, b, math.abs(a - b) / math.abs(b)))
end

-- The reader on bytes in memory: a Lua table of everything it returns, or nil and the message.
local function parse(bytes)
  local err = ffi.new("char[512]")
  local m = ffi.C.cqh_msh_parse(bytes, #bytes, err, 512)
  if m == nil then return nil, ffi.string(err) end
  local t = { nodes = {}, names = {}, entities = {}, skipped = m.n_skipped }
  for i = 0, 3 * m.n_nodes - 1 do t.nodes[i + 1] = m.nodes[i] end
  for kind, k in pairs { lines = 2, triangles = 3, tets = 4 } do
    local e = m[kind]
    t[kind] = { nodes = {}, entity = {} }
    for i = 0, k * e.n - 1 do t[kind].nodes[i + 1] = e.nodes[i] end
    for i = 0, e.n - 1 do t[kind].entity[i + 1] = e.entity[i] end
  end
  for e = 0, m.n_entities - 1 do
    local p = {}
    for j = m.entity_first[e], m.entity_first[e + 1] - 1 do p[#p + 1] = m.entity_physicals[j] end
    t.entities[e + 1] = { m.entity_dim[e], m.entity_tag[e], p }
  end
  for i = 0, m.n_names - 1 do t.names[i + 1] = { m.name_dim[i], m.name_tag[i], ffi.string(m.names[i]) } end
  ffi.C.cqh_msh_free(m)
  return t
end
local function parse_error(bytes)
  local t, e = parse(bytes)
  assert.is_nil(t, "expected the reader to refuse the file")
  print("  " .. e)
  return e
end

-- Writes a .geo file and returns its path.
local function geo(name, text) return write(name .. ".geo", 'SetFactory("OpenCASCADE");\n' .. text) end

-- Sum of the particles' volumes, their volume-weighted centroid, and the sums of a chamber table.
local function volume_of(r, particles)
  local v, c = 0, { 0, 0, 0 }
  for _, p in ipairs(particles) do
    v = v + r.vol[p]
    for a = 1, r.dim do c[a] = c[a] + r.vol[p] * r.x[p][a] end
  end
  for a = 1, r.dim do c[a] = c[a] / v end
  return v, c
end
local function wall_sums(ch)
  local area, vec = 0, { 0, 0, 0 }
  for i, a in ipairs(ch.area) do
    area = area + a
    for k = 1, #ch.normal[i] do vec[k] = vec[k] + a * ch.normal[i][k] end
  end
  return area, vec
end

describe("MSH 4.1 reader", function()
  it("reads the same mesh from ASCII and binary files (both byte orders, 4- and 8-byte size_t, sparse tags)", function()
    local cube = files.cube()
    local ref = assert(parse(files.ascii(cube)))
    assert.are.equal(8 * 3, #ref.nodes)
    assert.are.equal(6 * 4, #ref.tets.nodes)
    assert.are.equal(12 * 3, #ref.triangles.nodes)
    assert.are.equal(2, #ref.lines.nodes)
    assert.are.equal(1, ref.skipped) -- the point element
    assert.are.same({ { 3, 1, "cube" }, { 2, 2, "skin" } }, ref.names)
    assert.are.same({ 3, 1, { 1 } }, ref.entities[ref.tets.entity[1] + 1])
    assert.are.same({ 2, 1, { 2 } }, ref.entities[ref.triangles.entity[1] + 1])
    assert.are.same({ 1, 0, 0 }, { ref.nodes[4], ref.nodes[5], ref.nodes[6] }) -- the parametric node's x, y, z
    for _, variant in ipairs {
      { "binary", files.binary(cube) },
      { "binary, other byte order", files.binary(cube, { swap = true }) },
      { "binary, 4-byte size_t", files.binary(cube, { size = 4 }) },
      { "ASCII, sparse node tags", files.ascii(files.cube(1000003)) },
      { "binary, sparse node tags", files.binary(files.cube(1000003)) },
    } do
      local t, e = parse(variant[2])
      assert.is_not_nil(t, variant[1] .. ": " .. tostring(e))
      assert.are.same(ref, t, variant[1])
    end
  end)

  it("reads gmsh's own ASCII and binary output of one mesh identically", function()
    local path = geo("two", "Box(1) = {0, 0, 0, 1, 2, 3};\nPhysical Volume(\"v\") = {1};\n")
    local a, b = TMP .. "/two_a.msh", TMP .. "/two_b.msh"
    assert.is_true(require("cq._proc").run(string.format("gmsh -3 -format msh41 -v 0 -clmax 0.7 -o '%s' '%s' " ..
      ">/dev/null", a, path)))
    assert.is_true(require("cq._proc").run(string.format("gmsh '%s' -save -format msh41 -bin -v 0 -o '%s' >/dev/null",
      a, b)))
    local fa, fb = assert(io.open(a, "rb")), assert(io.open(b, "rb"))
    local ta, tb = assert(parse(fa:read("*a"))), assert(parse(fb:read("*a")))
    fa:close(); fb:close()
    assert.is_true(#ta.tets.nodes > 4 * 20)
    assert.are.same(ta, tb)
  end)

  it("skips element types it does not keep: listed ones in both encodings, others in ASCII by their line", function()
    local mesh = files.cube()
    -- a quadrangle (type 3, 4 nodes) and an element of a type this reader does not list (99, 3 nodes here)
    table.insert(mesh.elements, 3, { 2, 1, 3, { { 21, 1, 2, 4, 3 } } })
    table.insert(mesh.elements, 4, { 2, 1, 99, { { 22, 5, 6, 8 }, { 23, 1, 2, 3 } } })
    local ref = assert(parse(files.ascii(files.cube())))
    local t = assert(parse(files.ascii(mesh)))
    assert.are.equal(4, t.skipped)
    t.skipped = 1
    assert.are.same(ref, t)
    local quad_only = files.cube()
    table.insert(quad_only.elements, 3, { 2, 1, 3, { { 21, 1, 2, 4, 3 } } })
    assert.are.equal(2, assert(parse(files.binary(quad_only))).skipped)
    has(parse_error(files.binary(mesh)), "MSH $Elements, byte",
      "element type 99 is not a fixed-size Gmsh type this reader knows, and its node count cannot be told in a " ..
      "binary file")
  end)

  it("gives messages for the inputs the fuzzer once failed on (tests/fuzz/found/msh/)", function()
    local ls, n = io.popen("ls tests/fuzz/found/msh"), 0
    for name in ls:lines() do
      local f = assert(io.open("tests/fuzz/found/msh/" .. name, "rb"))
      has(parse_error(f:read("*a")), "MSH ")
      f:close()
      n = n + 1
    end
    ls:close()
    assert.is_true(n >= 1)
  end)

  it("names the problem of every kind of bad file", function()
    local text = files.ascii(files.cube())
    local bin = files.binary(files.cube())
    local function line_of(s, pattern) -- 1-based line that follows the newline a pattern "\n..." starts with
      local at = assert(s:find(pattern))
      local _, n = s:sub(1, at):gsub("\n", "")
      return n + 1
    end
    -- truncated in the middle of the nodes
    has(parse_error(text:sub(1, text:find("$EndNodes", 1, true) - 8)), "MSH $Nodes", "the file ends where", "truncated")
    has(parse_error(bin:sub(1, #bin - 40)), "MSH $Elements, byte", "6 elements need at least 240 bytes, but only 214",
      "truncated")
    -- (the last 274 bytes: the tetrahedra's block header, 20 bytes, their 240, "\n$EndElements\n")
    has(parse_error(bin:sub(1, #bin - 270)), "MSH $Elements, byte " .. #bin - 270, -- 0-based: the end of the file
      "the file ends where an element block's entity tag should be (4 bytes wanted, 0 left: truncated file?)")
    -- not a mesh, a wrong header, the legacy version
    has(parse_error("solid cube\nendsolid cube\n"),
      "expected '$MeshFormat' (the start of a Gmsh MSH file), found 'solid'")
    has(parse_error(text:gsub("4.1 0 8", "4.1 7 8", 1)), "MSH $MeshFormat, line 2", "the file type (0 ASCII, 1 binary)",
      "found '7'")
    has(parse_error(text:gsub("4.1 0 8", "2.2 0 8", 1)), "MSH version 2.2 is not supported", "-format msh41")
    -- a node tag that $Nodes does not list, on its line
    local bad = text:gsub("\n15 1 2 4 8\n", "\n15 1 2 99 8\n", 1)
    assert.are_not.equal(text, bad)
    has(parse_error(bad), "MSH $Elements, line " .. line_of(bad, "\n15 1 2 99 8"),
      "element 15 refers to node 99, which $Nodes does not list")
    -- negative and oversized counts
    local neg = text:gsub("\n3 8 1 8\n", "\n3 -8 1 8\n", 1)
    has(parse_error(neg), "MSH $Nodes, line", "the number of nodes (an integer from 0 to 536870911), found '-8'")
    has(parse_error(text:gsub("\n3 8 1 8\n", "\n3 800000 1 8\n", 1)), "800000 nodes need at least",
      "truncated or corrupt")
    -- binary: a data size no size_t has, a broken byte-order check, a count larger than the file
    has(parse_error(bin:gsub("4.1 1 8", "4.1 1 2", 1)), "data size 2", "must be 4 or 8")
    assert.are.equal("\1\0\0\0", bin:sub(21, 24)) -- after "$MeshFormat\n4.1 1 8\n"
    has(parse_error(bin:sub(1, 20) .. "\7\0\0\0" .. bin:sub(25)), "MSH $MeshFormat, byte 20",
      "byte-order check reads 0x00000007")
    local at = bin:find("$Nodes\n", 1, true) + 7 -- the number of node blocks, then of nodes
    local huge = bin:sub(1, at + 7) .. ffi.string(ffi.new("uint64_t[1]", 2 ^ 40), 8) .. bin:sub(at + 16)
    has(parse_error(huge), "MSH $Nodes, byte", "the number of nodes is 1099511627776, expected an integer from 0")
    local many = bin:sub(1, at + 7) .. ffi.string(ffi.new("uint64_t[1]", 100000), 8) .. bin:sub(at + 16)
    has(parse_error(many), "100000 nodes need at least 3200000 bytes")
    -- sections: a block of an unknown entity, an unknown section without its end, elements before nodes
    has(parse_error(text:gsub("\n3 1 4 6\n", "\n3 9 4 6\n", 1)),
      "element block 4 belongs to entity (dimension 3, tag 9), which $Entities does not list")
    has(parse_error(text:gsub("$EndComments", "$EndComment", 1)), "MSH $Comments", "no $EndComments line")
    local nodes = text:match("%$Nodes\n.-%$EndNodes\n")
    has(parse_error(text:gsub("%$Nodes\n.-%$EndNodes\n", "", 1) .. nodes), "$Elements before $Nodes")
    has(parse_error(text:gsub("\n15 1 2 4 8\n", "\n15 1 2 2 8\n", 1)), "element 15 repeats node 2")
    has(parse_error(text:gsub("\n1 0 0 0.5\n", "\n1 0 nan 0.5\n", 1)), "a node coordinate is not a finite number")
    has(parse_error(text:gsub('"skin"', '"skin', 1)), "the name of physical group 2 has no closing quote")
  end)
end)

describe("robot:gmsh", function()
  it("makes one particle per tetrahedron with its volume, and walls from the faces (a hand-written cube)", function()
    local path = write("cube.msh", files.binary(files.cube()))
    local r = cq.robot { dim = 3 }
    r:box { offset = { 0, 0, 0 }, size = { 0.1, 0.1, 0.1 }, count = { 1, 1, 1 } } -- particles before: indices shift
    local g = r:gmsh { path = path, offset = { 2, 3, 4 }, scale = 2 }
    assert.are.equal(6, #g.particles)
    assert.are.equal(2, g.first)
    local v, c = volume_of(r, g.particles)
    close(v, 8, 1e-12, "volume")
    for a = 1, 3 do close(c[a], ({ 3, 4, 5 })[a], 1e-12, "centroid") end
    for _, p in ipairs(g.particles) do close(r.vol[p], 8 / 6, 1e-12, "tetrahedron volume") end
    assert.are.same(g.particles, g.groups.cube.particles)
    assert.are.same({ path = path, nodes = 8, elements = 6, volume = v }, g.mesh)
    -- every tetrahedron owns two boundary faces at right angles: area |sum of area * normal| = 2 sqrt(2) (faces of
    -- area 2), the normal their mean direction, into the cube
    local skin = g.chambers.skin
    assert.are.equal(12, g.faces.skin)
    assert.are.equal(6, #skin.particles)
    close(skin.face_area, 24, 1e-12, "skin area")
    local area, vec = wall_sums(skin)
    close(area, 6 * 2 * math.sqrt(2), 1e-12, "sum of |vector areas|")
    for k = 1, 3 do assert.is_true(math.abs(vec[k]) < 1e-12) end
    for i, p in ipairs(skin.particles) do
      local n, inward = skin.normal[i], 0
      for a = 1, 3 do inward = inward + n[a] * (({ 3, 4, 5 })[a] - r.x[p][a]) end
      assert.is_true(inward > 0, "normal into the solid")
      close(n[1] ^ 2 + n[2] ^ 2 + n[3] ^ 2, 1, 1e-12, "unit normal")
    end
  end)

  it("meshes a cube with gmsh: the particles' volumes sum to its volume, their centroid is its centre", function()
    local path = geo("cube", "Box(1) = {0.25, 0.5, 0, 1, 1, 1};\nPhysical Volume(\"cube\") = {1};\n")
    local r = cq.robot { dim = 3 }
    local g = r:gmsh { path = path, offset = { 0.25, 0.5, 0 }, mesh_size = 0.25 }
    local v, c = volume_of(r, g.particles)
    print(string.format("  %d tetrahedra, volume %.17g, centroid (%.17g, %.17g, %.17g)", #g.particles, v, c[1], c[2],
      c[3]))
    assert.is_true(#g.particles > 200)
    close(v, 1, 1e-9, "volume")
    for a = 1, 3 do close(c[a], ({ 0.75, 1, 0.5 })[a], 1e-9, "centroid") end
    close(g.mesh.volume, 1, 1e-9)
  end)

  it("marks the walls of a box cavity: their area, a zero vector sum, normals away from the cavity", function()
    local path = geo("cavity", [[
Box(1) = {0, 0, 0, 1, 1, 1};
Box(2) = {0.3, 0.2, 0.35, 0.4, 0.5, 0.3};
BooleanDifference(3) = { Volume{1}; Delete; }{ Volume{2}; Delete; };
Physical Volume("solid") = {3};
Physical Surface("cavity") = Surface In BoundingBox{0.29, 0.19, 0.34, 0.71, 0.71, 0.66};
]])
    local r = cq.robot { dim = 3 }
    local g = r:gmsh { path = path, offset = { 0, 0, 0 }, mesh_size = 0.2 }
    local v = volume_of(r, g.particles)
    close(v, 1 - 0.4 * 0.5 * 0.3, 1e-9, "volume")
    local ch = g.chambers.cavity
    local A = 2 * (0.4 * 0.5 + 0.4 * 0.3 + 0.5 * 0.3)
    local area, vec = wall_sums(ch)
    print(string.format("  %d faces on %d particles: area %.17g (cavity %.17g), vector sum (%.3g, %.3g, %.3g)",
      g.faces.cavity, #ch.particles, area, A, vec[1], vec[2], vec[3]))
    assert.are.equal(0, ch.unmatched)
    assert.is_true(g.faces.cavity >= 12)
    close(area, A, 1e-9, "wall area")
    close(ch.face_area, A, 1e-9, "face area")
    for k = 1, 3 do assert.is_true(math.abs(vec[k]) < 1e-12 * A) end
    for i, p in ipairs(ch.particles) do
      local away = 0
      for a = 1, 3 do away = away + ch.normal[i][a] * (r.x[p][a] - ({ 0.5, 0.45, 0.5 })[a]) end
      assert.is_true(away > 0, "the normal points from the cavity into the solid")
    end
  end)

  it("says which faces of a physical curve are no walls, refuses a chamber name the mesh lacks, and warns of an open " ..
    "wall used as a closed chamber", function()
    local path = geo("interface2d", [[
Rectangle(1) = {0, 0, 0, 1, 0.5};
Rectangle(2) = {0, 0.5, 0, 1, 0.5};
Coherence;
Physical Surface("solid") = {1, 2};
Physical Curve("interface") = Curve In BoundingBox{-0.01, 0.49, -1, 1.01, 0.51, 1};
Physical Curve("top") = Curve In BoundingBox{-0.01, 0.99, -1, 1.01, 1.01, 1};
]])
    local robot = require "cq.robot"
    local r = cq.robot { dim = 2 }
    local warned, g = robot.warnings_of(function() return r:gmsh { path = path, offset = { 0, 0 }, mesh_size = 0.25 } end)
    print("  " .. tostring(warned[1]))
    assert.are.equal(1, #warned) -- the interface; the top is a wall
    assert.matches("robot:gmsh: .*interface2d%.geo: (%d+) of the %1 faces of the physical curve 'interface' are not " ..
      "walls of the mesh %(on no element: not meshed; or between two elements: an interface inside the solid%) and " ..
      "are left out of its chamber wall %(which is empty%); the first at %(.-, 0%.5%) between two elements", warned[1])
    assert.are.equal(0, #g.chambers.interface.particles)
    assert.are.equal(g.faces.top, #g.chambers.top.particles > 0 and g.faces.top or -1)
    -- a name the mesh lacks: an error naming those it has, at the user's line
    local ok, e = pcall(function() return g.chambers.chamber end)
    assert.is_false(ok)
    assert.matches("msh_spec%.lua:%d+: robot:gmsh: no chamber wall named \"chamber\" %(the physical curves with a " ..
      "wall here: interface, top%)", e)
    -- the top edge is open: as a closed chamber (the default) it warns; closed = false does not
    warned = robot.warnings_of(function() r:chamber { wall = g.chambers.top } end)
    assert.matches("robot:chamber: the wall of actuator 1 %(%d+ particles%) is not a closed surface: its area vectors " ..
      "N dA sum to 1 of its area", warned[1])
    local r2 = cq.robot { dim = 2 }
    local _, g2 = robot.warnings_of(function() return r2:gmsh { path = path, offset = { 0, 0 }, mesh_size = 0.25 } end)
    assert.are.same({}, robot.warnings_of(function() r2:chamber { wall = g2.chambers.top, closed = false } end))
  end)

  it("loads scenes/finger.geo: the body and layer volumes and the chamber area of its drawing", function()
    local r = cq.robot { dim = 3 }
    local stiff = { model = "neohookean", E = 5e6, nu = 0.3, density = 1100 }
    local g = r:gmsh { path = "scenes/finger.geo", offset = { 0, 0, 0 }, mesh_size = 4, groups = { layer = stiff } }
    -- scenes/finger.geo (mm): the body 100 x 13 x 20 above a 3 mm layer, less 8 chambers 8 x 8 x 12 (no channel
    -- between them by default)
    local body, layer = 100 * 13 * 20 - 8 * 8 * 8 * 12, 100 * 3 * 20
    local cavity_area = 8 * 2 * (8 * 8 + 8 * 12 + 8 * 12)
    print(string.format("  %d particles (%d body, %d layer), %d chamber faces on %d particles", #g.particles,
      #g.groups.body.particles, #g.groups.layer.particles, g.faces.chamber, #g.chambers.chamber.particles))
    assert.are.equal(g.mesh.elements, #g.particles)
    assert.are.equal(#g.particles, #g.groups.body.particles + #g.groups.layer.particles)
    assert.is_true(#g.particles > 2000)
    close((volume_of(r, g.groups.body.particles)), body, 1e-9, "body volume")
    close((volume_of(r, g.groups.layer.particles)), layer, 1e-9, "layer volume")
    for _, p in ipairs(g.groups.layer.particles) do assert.are.equal(5e6, r.mat[p].E) end
    assert.are.equal(r.mat[g.groups.body.first].E, require("cq.materials").resolve("test", nil).E)
    local ch = g.chambers.chamber
    close(ch.face_area, cavity_area, 1e-9, "chamber area")
    local area, vec = wall_sums(ch)
    assert.is_true(area <= cavity_area * (1 + 1e-12)) -- shorter where a particle owns faces at an angle
    for k = 1, 3 do assert.is_true(math.abs(vec[k]) < 1e-9 * cavity_area, "closed cavity") end
    -- the clamped base x = 0: the solid's outward normal there is -x, so the wall normal is +x
    local base = g.chambers.base
    close(base.face_area, 16 * 20, 1e-9, "base area")
    for i = 1, #base.particles do assert.are.same({ 1, 0, 0 }, base.normal[i]) end
  end)

  it("loads scenes/finger2d.geo: triangles as particles, chamber walls from the lines", function()
    local r = cq.robot { dim = 2 }
    local g = r:gmsh { path = "scenes/finger2d.geo", offset = { 0, 0 }, scale = 0.001, mesh_size = 2 }
    local mm2 = 1e-6
    close((volume_of(r, g.groups.body.particles)), (100 * 13 - 8 * 8 * 9) * mm2, 1e-9, "body area")
    close((volume_of(r, g.groups.layer.particles)), 100 * 3 * mm2, 1e-9, "layer area")
    local ch = g.chambers.chamber
    close(ch.face_area, 8 * 2 * (8 + 9) * 1e-3, 1e-9, "chamber perimeter")
    local _, vec = wall_sums(ch)
    for k = 1, 2 do assert.is_true(math.abs(vec[k]) < 1e-12) end
    for i, p in ipairs(ch.particles) do
      local x = r.x[p][1] * 1e3
      local c = math.max(0, math.min(7, math.floor((x - 14) / 11 + 0.5))) -- the nearest chamber (0-based)
      local cx, cy = 14 + 11 * c, 9.5 -- its centre (mm)
      local away = ch.normal[i][1] * (x - cx) + ch.normal[i][2] * (r.x[p][2] * 1e3 - cy)
      assert.is_true(away > 0, "normal from the chamber into the solid")
      assert.are.equal(2, #ch.normal[i])
    end
  end)

  it("samples a mesh on the world's lattice with spacing: every point inside once, groups, walls from the faces",
    function()
      -- the hand-written cube (6 tetrahedra round its diagonal) placed at (2, 3, 4), side 2: its faces lie between the
      -- lattice's points (m + 1/2) 0.25, and the tetrahedra's shared faces run through 64 of them (x = y, ...), each
      -- of which one tetrahedron takes
      local path = write("cube_lattice.msh", files.binary(files.cube()))
      local r = cq.robot { dim = 3 }
      local h = 0.25
      local g = r:gmsh { path = path, offset = { 2, 3, 4 }, scale = 2, spacing = h }
      assert.are.equal(8 * 8 * 8, #g.particles)
      local seen = {}
      for _, p in ipairs(g.particles) do
        close(r.vol[p], h ^ 3, 1e-15, "lattice volume")
        local key = {}
        for a = 1, 3 do
          local m = r.x[p][a] / h - 0.5
          assert.is_true(math.abs(m - math.floor(m + 0.5)) < 1e-12, "on the world's lattice")
          key[a] = math.floor(m + 0.5)
        end
        key = table.concat(key, ",")
        assert.is_nil(seen[key], "each point once")
        seen[key] = true
      end
      assert.are.same(g.particles, g.groups.cube.particles)
      assert.are.equal(6, g.mesh.elements)
      -- the skin: every face piece goes to the nearest particle; the areas sum to the cube's, the vectors to zero
      local skin = g.chambers.skin
      close(skin.face_area, 24, 1e-12, "skin area")
      local area, vec = wall_sums(skin)
      assert.are.equal(8 * 8 * 8 - 6 * 6 * 6, #skin.particles) -- the lattice's outer layer
      -- |sum N dA| per particle: 0.0625 on a face, sqrt 2 times it at an edge, sqrt 3 times at a corner (within the
      -- pieces' split between neighbours)
      close(area, 6 * 36 * 0.0625 + 12 * 6 * 0.0625 * math.sqrt(2) + 8 * 0.0625 * math.sqrt(3), 0.01, "wall area")
      for k = 1, 3 do assert.is_true(math.abs(vec[k]) < 1e-12) end
      for i, p in ipairs(skin.particles) do
        local inward, len = 0, 0
        for a = 1, 3 do
          inward = inward + skin.normal[i][a] * (({ 3, 4, 5 })[a] - r.x[p][a])
          len = len + skin.offset[i][a] ^ 2
        end
        assert.is_true(inward > 0, "normal into the solid")
        assert.is_true(math.sqrt(len) <= math.sqrt(3) / 2 * h + 1e-12, "offset within the particle's cell")
      end
    end)

  it("takes no far lattice point as inside a small element (the fuzzer's case: orientations from its corners)",
    function()
      -- a small tetrahedron near the origin and a long one spanning 1.6e9: the lattice's spacing is 2.7e8, and its
      -- point at 1.3e8 was taken as inside the small one while its orientations were differences from the point
      local X = ffi.new("double[24]", { 0.28, 0, 0, 0.64, 0.1, 0.05, 0.3, 0.35, 0.1, 0.4, 0.1, 0.28,
        -8e8, -8e8, -8e8, 8e8, -8e8, -8e8, -8e8, -8e8 + 1, -8e8, -8e8, -8e8, -8e8 + 1 })
      local nodes = ffi.new("int[8]", { 0, 1, 2, 3, 4, 5, 6, 7 })
      local err = ffi.new("char[512]")
      local f = ffi.C.cqh_msh_lattice_fill(X, 8, nodes, 2, 4, 1.6e9 / 6, 1e5, err, 512)
      assert.is_true(f ~= nil, ffi.string(err))
      assert.are.equal(0, f.n)
      ffi.C.cqh_msh_lattice_free(f)
    end)

  it("samples scenes/finger2d.geo on a lattice: its groups, a closed chamber wall, normals into the solid", function()
    local r = cq.robot { dim = 2 }
    local h = 0.5e-3 -- the drawing's features (mm) lie between the lattice points, so the lattice holds its areas exactly
    local g = r:gmsh { path = "scenes/finger2d.geo", offset = { 0.01, 0.02 }, scale = 0.001, mesh_size = 2, spacing = h }
    local mm2 = 1e-6
    close((volume_of(r, g.groups.body.particles)), (100 * 13 - 8 * 8 * 9) * mm2, 1e-9, "body area")
    close((volume_of(r, g.groups.layer.particles)), 100 * 3 * mm2, 1e-9, "layer area")
    assert.are.equal(#g.particles, #g.groups.body.particles + #g.groups.layer.particles)
    local ch = g.chambers.chamber
    close(ch.face_area, 8 * 2 * (8 + 9) * 1e-3, 1e-9, "chamber perimeter")
    local area, vec = wall_sums(ch)
    close(area, ch.face_area, 1e-9, "wall length (each piece's normal along one axis)")
    for k = 1, 2 do assert.is_true(math.abs(vec[k]) < 1e-15) end
    for i, p in ipairs(ch.particles) do
      local x = (r.x[p][1] - 0.01) * 1e3
      local c = math.max(0, math.min(7, math.floor((x - 14) / 11 + 0.5)))
      local away = ch.normal[i][1] * (x - (14 + 11 * c)) + ch.normal[i][2] * ((r.x[p][2] - 0.02) * 1e3 - 9.5)
      assert.is_true(away > 0, "normal from the chamber into the solid")
    end
    -- its outline: the body's lattice points and its closed chambers inside, the rest of its bounding box and beyond out
    for _, p in ipairs(g.particles) do assert.is_true(g.inside(r.x[p])) end
    for c = 0, 7 do assert.is_true(g.inside({ 0.01 + (14 + 11 * c) * 1e-3, 0.02 + 9.5e-3 }), "chamber " .. c) end
    for _, x in ipairs { { 0.0099, 0.03 }, { 0.1101, 0.03 }, { 0.05, 0.0199 }, { 0.05, 0.0361 }, { -1, 0 } } do
      assert.is_false(g.inside(x))
    end
    -- refused: a spacing that is not a length, one whose lattice would be too large, one no point of which is inside
    has(err_of(r.gmsh, r, { path = "scenes/finger2d.geo", offset = { 0, 0 }, scale = 0.001, spacing = -1 }),
      "robot:gmsh: spacing must be", "-1")
    has(err_of(r.gmsh, r, { path = "scenes/finger2d.geo", offset = { 0, 0 }, scale = 0.001, spacing = 1e-7 }),
      "robot:gmsh: spacing: the lattice over the mesh's bounding box would hold more than 5e+07 points")
    has(err_of(r.gmsh, r, { path = "scenes/finger2d.geo", offset = { 0, 0 }, scale = 0.001, spacing = 1 }),
      "robot:gmsh: spacing: no lattice point lies inside the mesh's elements")
  end)

  it("says what is wrong with a file, a gmsh run or an option", function()
    local r3, r2 = cq.robot { dim = 3 }, cq.robot { dim = 2 }
    local bad = write("bad.geo", "Box(1) = {0, 0, 0, 1, 1};\n")
    has(err_of(function() local g = r3:gmsh { path = bad, offset = { 0, 0, 0 } } return g end), "msh_spec.lua:",
      "robot:gmsh:", "bad.geo: gmsh failed (exit status 1", "line 1")
    local old = msh.GMSH
    msh.GMSH = "gmsh-is-not-here"
    local e = err_of(r3.gmsh, r3, { path = "scenes/finger.geo", offset = { 0, 0, 0 } })
    msh.GMSH = old
    has(e, "needs gmsh, which is not on PATH", "make deps-gmsh")
    has(err_of(r3.gmsh, r3, { path = "scenes/finger.stl", offset = { 0, 0, 0 } }), "a Gmsh .geo file", "or a .msh file")
    has(err_of(r3.gmsh, r3, { path = TMP .. "/none.msh", offset = { 0, 0, 0 } }), "none.msh: cannot open the file")
    local cube = write("cube_ascii.msh", files.ascii(files.cube()))
    has(err_of(r3.gmsh, r3, { path = cube, offset = { 0, 0, 0 }, mesh_size = 1 }), "mesh_size needs a .geo file")
    has(err_of(r3.gmsh, r3, { path = cube, offset = { 0, 0, 0 }, groups = { body = {} } }),
      "the mesh has no physical volume named body (it has: \"cube\")")
    has(err_of(r3.gmsh, r3, { path = cube, offset = { 0, 0 } }), "offset must be a table of 3 numbers")
    has(err_of(r3.gmsh, r3, { path = cube, offset = { 0, 0, 0 }, up = "z" }), "unknown option 'up'")
    has(err_of(r2.gmsh, r2, { path = cube, offset = { 0, 0 } }), "a 2D robot needs a mesh in a plane z = constant")
    local g = r3:gmsh { path = cube, offset = { 0, 0, 0 } }
    has(err_of(function() local inside = g.inside { 0.5, 0.5, 0.5 } return inside end), "msh_spec.lua:", "robot:gmsh: group.inside needs the mesh sampled on a " ..
      "lattice: robot:gmsh{spacing = ...}")
    local surface_only = files.cube()
    table.remove(surface_only.elements, 4) -- the tetrahedra
    local flat = write("flat.msh", files.ascii(surface_only))
    has(err_of(r3.gmsh, r3, { path = flat, offset = { 0, 0, 0 } }), "the mesh has no tetrahedra", "12 triangles")
  end)
end)
