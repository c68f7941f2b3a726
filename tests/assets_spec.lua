-- Robots from images and meshes (robot:image, robot:mesh, robot:select / split) and the assets of scenes/: particle
-- counts, the palette, fills of a cube and a sphere against their analytic volume and area, the surface each
-- particle carries, the same mesh in three file formats, and a clear error for every kind of bad file.
package.path = "./scenes/?.lua;" .. package.path
local ffi = require "ffi"
local cq = require "cq"
local meshes = require "meshes"
local robot_module = require "cq.robot"
local image_module = require "cq._palette"

local TMP = os.tmpname()
os.remove(TMP)
os.execute("mkdir -p '" .. TMP .. "'")
local function tmp(name) return TMP .. "/" .. name end
local function write(name, bytes)
  local f = assert(io.open(tmp(name), "wb"))
  f:write(bytes)
  f:close()
  return tmp(name)
end
local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error, got none")
  e = tostring(e)
  print("  " .. e)
  return e
end
local function has(msg, ...)
  for _, s in ipairs({ ... }) do
    assert.is_truthy(msg:find(s, 1, true), string.format("message %q does not contain %q", msg, s))
  end
end

-- An RGBA PNG from a function (i, j) -> {r, g, b[, a]} (column i, row j from the top, 0-based; nil = white).
local function png(name, w, h, pixel) return require("tests._shell").png(tmp(name), w, h, pixel) end

-- Sums of a surface: total area and the vector sum of area * normal.
local function surface_sums(s)
  local area, v = 0, { 0, 0, 0 }
  for i, a in ipairs(s.area) do
    area = area + a
    for k = 1, 3 do v[k] = v[k] + a * s.normal[i][k] end
  end
  return area, math.sqrt(v[1] ^ 2 + v[2] ^ 2 + v[3] ^ 2)
end

describe("robot:image", function()
  -- 20 x 10 pixels: a 16 x 4 body (rows 2-5), two red 3 x 4 feet and a blue one below it (rows 6-9), a transparent
  -- black pixel, a light grey one (both empty), a mid grey one (body)
  local BODY, RED, BLUE = { 30, 30, 30 }, { 255, 0, 0 }, { 0, 0, 255 }
  local function robot_png()
    return png("robot.png", 20, 10, function(i, j)
      if j >= 2 and j <= 5 and i >= 2 and i <= 17 then return BODY end
      if j >= 6 and (i >= 2 and i <= 4 or i >= 14 and i <= 16) then return RED end
      if j >= 6 and i >= 8 and i <= 10 then return BLUE end
      if i == 0 and j == 0 then return { 0, 0, 0, 0 } end
      if i == 1 and j == 0 then return { 200, 200, 200 } end
      if i == 19 and j == 9 then return { 128, 128, 128 } end
    end)
  end

  it("gives one particle per pixel at spacing = scale, grouped by the palette, with pressure actuators", function()
    local r = cq.robot { dim = 2 }
    local g = r:image { path = robot_png(), scale = 0.01, offset = { 0.1, 0.2 }, max = 3 }
    print(string.format("  %d particles: body %d, red %d, blue %d; actuators %d and %d", #g.particles,
      #g.body.particles, #g.actuated[1].particles, #g.actuated[3].particles, g.actuators[1], g.actuators[3]))
    assert.are.equal(16 * 4 + 1, #g.body.particles)
    assert.are.equal(2 * 3 * 4, #g.actuated[1].particles)
    assert.are.equal(3 * 4, #g.actuated[3].particles)
    assert.is_nil(g.actuated[2])
    assert.are.equal(64 + 1 + 24 + 12, #g.particles)
    assert.are.same({ 1, nil, 2 }, { g.actuators[1], g.actuators[2], g.actuators[3] })
    -- positions: pixel centres, y up from the image's bottom edge; the first body particle is column 2, row 5
    local x = r.x[g.body.first]
    assert.is_true(math.abs(x[1] - (0.1 + 2.5 * 0.01)) < 1e-12 and math.abs(x[2] - (0.2 + 4.5 * 0.01)) < 1e-12)
    local w = r:world { res = 64, dx = 1 / 64, dt = 1e-3 }
    assert.are.equal(#g.particles, w.n)
    assert.is_true(math.abs(w.params.vol0[0] - 1e-4) < 1e-18)
    assert.are.equal(0, w.params.act_id[g.actuated[1].first - 1])
    assert.are.equal(1, w.params.act_id[g.actuated[3].first - 1])
    assert.are.equal(-1, w.params.act_id[g.body.first - 1])
    assert.are.equal(3, w.params.act_axis[w.n + g.actuated[3].first - 1]) -- axis 2 (default), times max
    -- a coarser spacing resamples: 10 x 5 lattice points, each taking the pixel under it (odd columns and rows)
    local r2 = cq.robot { dim = 2 }
    local g2 = r2:image { path = tmp("robot.png"), scale = 0.01, spacing = 0.02, offset = { 0, 0 }, actuators = false }
    print(string.format("  spacing 2 pixels: %d particles (body %d, red %d, blue %d)", #g2.particles,
      #g2.body.particles, #g2.actuated[1].particles, #g2.actuated[3].particles))
    assert.are.same({ 8 * 2, 2 * 2, 1 * 2 }, { #g2.body.particles, #g2.actuated[1].particles, #g2.actuated[3].particles })
    assert.are.equal(0, #r2.actuators)
  end)

  it("classifies colours by hue (shades and antialiased edges), greys by brightness, and takes a custom palette", function()
    local colours = { { 255, 128, 128 }, { 128, 0, 0 }, { 255, 100, 0 }, { 20, 200, 40 }, { 250, 250, 0 }, { 200, 0, 220 },
      { 0, 230, 230 }, { 100, 100, 100 }, { 191, 191, 191 }, { 192, 192, 192 }, { 255, 255, 255 }, { 0, 0, 0, 127 },
      { 0, 0, 0, 128 } }
    local expect = { 1, 1, 1, 2, 4, 5, 6, image_module.BODY, image_module.BODY, image_module.EMPTY, image_module.EMPTY,
      image_module.EMPTY, image_module.BODY }
    local hues = image_module.hues("test", robot_module.PALETTE)
    for i, c in ipairs(colours) do
      assert.are.equal(expect[i], image_module.classify(c[1], c[2], c[3], c[4] or 255, hues), table.concat(c, ","))
    end
    -- a custom palette: blue is actuator 1, red actuator 2; green is no palette colour
    local img = cq.frames.image(3, 1)
    img:set(0, 0, { 0, 0, 255 })
    img:set(1, 0, { 255, 0, 0 })
    img:set(2, 0, { 0, 0, 0 })
    local r = cq.robot { dim = 2 }
    local g = r:image { image = img, scale = 0.1, offset = { 0, 0 }, palette = { { 0, 0, 255 }, { 255, 0, 0 } } }
    assert.are.same({ 1, 1, 1 }, { #g.actuated[1].particles, #g.actuated[2].particles, #g.body.particles })
    assert.is_true(math.abs(r.x[g.actuated[1].first][1] - 0.05) < 1e-15)
    assert.is_true(math.abs(r.x[g.actuated[2].first][1] - 0.15) < 1e-15)
  end)
end)

describe("robot:mesh", function()
  it("fills a cube exactly: particle count, volume, surface area 6 and vector area 0", function()
    local cube = meshes.box({ 0, 0, 0 }, { 1, 1, 1 })
    meshes.write_obj(tmp("cube.obj"), cube)
    local r = cq.robot { dim = 3 }
    local g = r:mesh { path = tmp("cube.obj"), spacing = 0.1, offset = { 0.25, 0.5, 0.75 } }
    local area, vec = surface_sums(g.surface)
    print(string.format("  %d particles (volume %g), %d on the surface, area %.15g, |sum area n| = %.3g",
      #g.particles, #g.particles * 1e-3, #g.surface.particles, area, vec))
    assert.are.equal(1000, #g.particles)
    assert.are.same({ 10, 10, 10 }, g.lattice)
    assert.are.equal(1000 - 8 ^ 3, #g.surface.particles) -- the outer layer
    assert.is_true(math.abs(area - 6) < 1e-12 and vec < 1e-12)
    assert.is_true(math.abs(g.mesh.volume - 1) < 1e-12 and g.mesh.triangles == 12 and g.mesh.vertices == 8)
    local x = r.x[g.first]
    assert.is_true(math.abs(x[1] - 0.3) < 1e-12 and math.abs(x[2] - 0.55) < 1e-12 and math.abs(x[3] - 0.8) < 1e-12)
    -- a face particle carries a unit normal; a corner particle the mean of three faces' normals
    local corner = g.surface.normal[1]
    assert.is_true(math.abs(corner[1] + 1 / 3) < 1e-12 and math.abs(corner[2] + 1 / 3) < 1e-12)
  end)

  it("fills a sphere: volume and area within the lattice error, normals outward", function()
    local R, h = 1, 0.1
    meshes.write_obj(tmp("sphere.obj"), meshes.uv_sphere({ 0, 0, 0 }, R, 48, 24))
    local r = cq.robot { dim = 3 }
    local g = r:mesh { path = tmp("sphere.obj"), spacing = h, offset = { 0, 0, 0 } }
    local area, vec = surface_sums(g.surface)
    local vol = #g.particles * h ^ 3
    local c, worst, shortest = { R, R, R }, math.huge, math.huge
    for i, p in ipairs(g.surface.particles) do
      local n, x = g.surface.normal[i], r.x[p]
      local d = math.sqrt((x[1] - c[1]) ^ 2 + (x[2] - c[2]) ^ 2 + (x[3] - c[3]) ^ 2)
      worst = math.min(worst, (n[1] * (x[1] - c[1]) + n[2] * (x[2] - c[2]) + n[3] * (x[3] - c[3])) / d)
      shortest = math.min(shortest, math.sqrt(n[1] ^ 2 + n[2] ^ 2 + n[3] ^ 2))
    end
    print(string.format("  %d particles: volume %.4f vs 4/3 pi = %.4f (%.2f%%); area %.4f (mesh %.4f) vs 4 pi = %.4f " ..
      "(%.2f%%); |sum area n| = %.2g; min n.(x-c)/|x-c| = %.3f, min |n| = %.4f", #g.particles, vol, 4 / 3 * math.pi,
      100 * (vol / (4 / 3 * math.pi) - 1), area, g.surface.mesh_area, 4 * math.pi, 100 * (area / (4 * math.pi) - 1), vec,
      worst, shortest))
    assert.is_true(math.abs(vol / (4 / 3 * math.pi) - 1) < 0.02)
    assert.is_true(math.abs(area - g.surface.mesh_area) < 1e-12 * area)
    assert.is_true(math.abs(area / (4 * math.pi) - 1) < 0.005) -- the 48 x 24 mesh's own error: 0.36%
    assert.is_true(vec < 1e-12 * area)
    assert.is_true(worst > 0.8 and shortest > 0.99)
  end)

  it("gives identical particles and surfaces from OBJ, binary STL and ASCII STL of one mesh", function()
    local mesh = meshes.quantize(meshes.uv_sphere({ 0.3, 0.2, 0.1 }, 0.4, 20, 10), 2 ^ -12)
    meshes.write_obj(tmp("s.obj"), mesh)
    meshes.write_stl(tmp("s.stl"), mesh)
    meshes.write_stl_ascii(tmp("s_ascii.stl"), mesh)
    local r = cq.robot { dim = 3 }
    local a = r:mesh { path = tmp("s.obj"), spacing = 0.045, offset = { 0, 0, 0 }, scale = 1.5 }
    local b = r:mesh { path = tmp("s.stl"), spacing = 0.045, offset = { 0, 0, 0 }, scale = 1.5 }
    local c = r:mesh { path = tmp("s_ascii.stl"), spacing = 0.045, offset = { 0, 0, 0 }, scale = 1.5, format = "stl" }
    print(string.format("  %d particles, %d on the surface, from each of the three files", #a.particles, #a.surface.particles))
    assert.is_true(#a.particles > 1000)
    for _, other in ipairs { b, c } do
      assert.are.equal(#a.particles, #other.particles)
      for i = 1, #a.particles do assert.are.same(r.x[a.particles[i]], r.x[other.particles[i]]) end
      assert.are.same(#a.surface.area, #other.surface.area)
      for i = 1, #a.surface.area do
        assert.are.equal(a.surface.area[i], other.surface.area[i])
        assert.are.same(a.surface.normal[i], other.surface.normal[i])
        assert.are.equal(a.surface.particles[i] - a.first, other.surface.particles[i] - other.first)
      end
    end
  end)

  it("places a z-up file with up = \"z\" (its bounding box's lower corner at offset) and scales it", function()
    meshes.write_stl(tmp("tall.stl"), meshes.box({ -1, -1, -1 }, { 1, 0, 2 })) -- 2 x 1 x 3, tall along z
    local r = cq.robot { dim = 3 }
    local g = r:mesh { path = tmp("tall.stl"), up = "z", scale = 0.5, spacing = 0.1, offset = { 1, 2, 3 } }
    print(string.format("  lattice %d x %d x %d", g.lattice[1], g.lattice[2], g.lattice[3]))
    assert.are.same({ 10, 15, 5 }, g.lattice) -- x 2 * 0.5, y (the file's z) 3 * 0.5, z (the file's y) 1 * 0.5
    assert.are.equal(750, #g.particles)
    local x = r.x[g.first]
    assert.is_true(math.abs(x[1] - 1.05) < 1e-12 and math.abs(x[2] - 2.05) < 1e-12 and math.abs(x[3] - 3.05) < 1e-12)
  end)
end)

describe("robot:select and robot:split", function()
  it("split a filled mesh into quadrants usable as pressure actuators, with their part of the surface", function()
    meshes.write_obj(tmp("cube.obj"), meshes.box({ 0, 0, 0 }, { 1, 1, 1 }))
    local r = cq.robot { dim = 3 }
    local g = r:mesh { path = tmp("cube.obj"), spacing = 0.1, offset = { 0, 0, 0 } }
    local low = r:select { group = g, where = function(x) return x[2] < 0.3 end, name = "bottom" }
    assert.are.equal(300, #low.particles)
    assert.are.equal("bottom", low.name)
    local legs = r:split { group = low, by = function(x) return (x[1] < 0.5 and 1 or 2) + (x[3] < 0.5 and 0 or 2) end }
    local total_area = 0
    for q = 1, 4 do
      assert.are.equal(75, #legs[q].particles)
      local a = surface_sums(legs[q].surface)
      total_area = total_area + a
      r:pressure_actuator { groups = { legs[q] }, axis = 2, max = 2 }
    end
    local bottom_area = surface_sums(low.surface)
    print(string.format("  4 quadrants of 75 particles; surface area of the bottom layers %.4f = sum over quadrants %.4f",
      bottom_area, total_area))
    assert.is_true(math.abs(bottom_area - total_area) < 1e-12)
    local w = r:world { res = 32, dx = 1 / 16, dt = 1e-4 }
    assert.are.equal(4, w.n_actuators)
    assert.are.equal(3, w.params.act_id[legs[4].particles[1] - 1])
    assert.are.equal(-1, w.params.act_id[g.last - 1]) -- the top corner is no leg
    has(err_of(r.select, r, { group = g, where = function() return false end }), "robot:select", "keeps no particle")
    has(err_of(r.split, r, { group = g }), "robot:split", "by must be a function")
  end)
end)

describe("scenes/make_assets.lua", function()
  it("regenerates the committed assets byte for byte", function()
    local paths = package.loaded["cq._paths"] or {}
    local out = tmp("assets")
    os.execute("mkdir -p '" .. out .. "'")
    local pipe = assert(io.popen(string.format("%q scenes/make_assets.lua %q 2>&1; echo rc=$?", paths.exe, out)))
    local log = pipe:read("*a")
    pipe:close()
    assert.is_truthy(log:find("rc=0", 1, true), log)
    for _, name in ipairs { "rhino.png", "creature.obj", "creature.stl", "creature_ascii.stl" } do
      local new, old = read(out .. "/" .. name), read("scenes/" .. name)
      print(string.format("  %-20s %7d bytes, identical: %s", name, #new, tostring(new == old)))
      assert.is_true(new == old, name .. " differs from what scenes/make_assets.lua makes")
    end
  end)

  it("loads the rhino (about 20,000 particles, four foot actuators) and the creature (about 22,000)", function()
    local r = cq.robot { dim = 2 }
    local rhino = r:image { path = "scenes/rhino.png", scale = 1 / 256, offset = { 0.1, 0.02 }, max = 2 }
    local coarse = cq.robot { dim = 2 }:image { path = "scenes/rhino.png", scale = 1 / 256, spacing = 4 / 256,
      offset = { 0.1, 0.02 } }
    local feet = {}
    for k = 1, 4 do feet[k] = #rhino.actuated[k].particles end
    print(string.format("  rhino: %d particles at spacing 1/256 (feet %s), %d at 4/256", #rhino.particles,
      table.concat(feet, ", "), #coarse.particles))
    assert.are.equal(19666, #rhino.particles)
    assert.are.same({ 540, 540, 540, 540 }, feet)
    assert.are.same({ 1, 2, 3, 4 }, rhino.actuators)
    assert.are.equal(1234, #coarse.particles)
    local counts = {}
    local c3 = cq.robot { dim = 3 }
    for _, f in ipairs { "creature.obj", "creature.stl", "creature_ascii.stl" } do
      counts[#counts + 1] = #c3:mesh { path = "scenes/" .. f, scale = 0.01, spacing = 1 / 32, offset = { 0.1, 0, 0.1 } }.particles
    end
    local creature = c3:mesh { path = "scenes/creature.stl", scale = 0.01, spacing = 1 / 128, offset = { 0.1, 0, 0.1 } }
    -- the legs: the particles below the body, one group per quadrant around their centroid
    local low = c3:select { group = creature, where = function(x) return x[2] < 0.06 end }
    local cx, cz = 0, 0
    for _, p in ipairs(low.particles) do cx, cz = cx + c3.x[p][1] / #low.particles, cz + c3.x[p][3] / #low.particles end
    local legs = c3:split { group = low, by = function(x) return (x[1] < cx and 1 or 2) + (x[3] < cz and 0 or 2) end }
    local sizes = {}
    for q = 1, 4 do sizes[q] = #legs[q].particles end
    print(string.format("  creature: %d particles at spacing 1/128 (scale 0.01), %d on the surface; legs %s; %d at " ..
      "1/32 from each file", #creature.particles, #creature.surface.particles, table.concat(sizes, ", "), counts[1]))
    assert.are.equal(21468, #creature.particles)
    assert.are.same({ 348, 348, 348 }, counts)
    for q = 1, 4 do assert.is_true(math.abs(sizes[q] / (#low.particles / 4) - 1) < 0.1) end
    assert.is_false(creature.mesh.flipped)
  end)
end)

describe("bad files give clear errors at the caller's line", function()
  local cube = meshes.box({ 0, 0, 0 }, { 1, 1, 1 })
  local function mesh_err(path, opts)
    local r = cq.robot { dim = 3 }
    local o = { path = path, spacing = 0.25, offset = { 0, 0, 0 } }
    for k, v in pairs(opts or {}) do o[k] = v end
    local e = err_of(r.mesh, r, o)
    assert.is_truthy(e:find("^[^:]*assets_spec%.lua:%d+: robot:mesh: "), "not at the caller's line: " .. e)
    return e
  end
  local function image_err(path, opts)
    local r = cq.robot { dim = 2 }
    local o = { path = path, scale = 0.01, offset = { 0, 0 } }
    for k, v in pairs(opts or {}) do o[k] = v end
    local e = err_of(r.image, r, o)
    assert.is_truthy(e:find("^[^:]*assets_spec%.lua:%d+: robot:image: "), "not at the caller's line: " .. e)
    return e
  end
  -- the cube's OBJ text with its triangles changed by edit(triangles)
  local function obj_with(name, edit)
    local m = { vertices = cube.vertices, triangles = {} }
    for i, t in ipairs(cube.triangles) do m.triangles[i] = { t[1], t[2], t[3] } end
    edit(m)
    meshes.write_obj(tmp(name), m)
    return tmp(name)
  end

  it("missing, empty, a directory, unknown format", function()
    has(mesh_err(tmp("nowhere.obj")), "nowhere.obj", "cannot open the file: No such file or directory")
    has(mesh_err(write("empty.stl", "")), "empty.stl", "the file is empty")
    has(mesh_err(write("empty.obj", "")), "empty.obj", "the file is empty")
    has(image_err(write("empty.png", "")), "empty.png", "the file is empty")
    has(image_err(TMP), "this is a directory")
    has(mesh_err(write("cube.ply", "ply\n")), "cannot tell the mesh format from the file name")
    has(image_err(tmp("nowhere.png")), "nowhere.png", "No such file")
  end)

  it("PNG: not a PNG, truncated, too large, no robot pixels, a colour outside the palette", function()
    has(image_err(write("text.png", "hello, not an image\n")), "text.png", "not a PNG file")
    local whole = read(png("whole.png", 32, 32, function(i, j) return { (i * 7) % 256, (j * 13) % 256, 0 } end))
    has(image_err(write("half.png", whole:sub(1, math.floor(#whole / 2)))), "half.png", "truncated")
    local max = image_module.MAX_PIXELS
    image_module.MAX_PIXELS = 100
    local e = image_err(tmp("whole.png"))
    image_module.MAX_PIXELS = max
    has(e, "whole.png", "32 x 32 pixels, more than the limit of 100")
    has(image_err(png("blank.png", 8, 8, function() end)), "blank.png", "no robot pixels")
    has(image_err(png("brown.png", 4, 4, function(i, j) if i == 2 and j == 1 then return { 0, 200, 0 } end end),
      { palette = { { 255, 0, 0 } } }), "brown.png", "pixel (2, 1)", "#00C800", "palette")
    has(image_err(tmp("whole.png"), { scale = -1 }), "scale (the size of a pixel) must be > 0")
    has(err_of(cq.robot { dim = 3 }.image, cq.robot { dim = 3 }, { path = tmp("whole.png"), scale = 1, offset = { 0, 0 } }),
      "needs a 2D robot")
  end)

  it("STL: truncated, extra bytes, not STL, malformed and truncated ASCII, non-finite vertices", function()
    meshes.write_stl(tmp("cube.stl"), cube)
    local bytes = read(tmp("cube.stl"))
    has(mesh_err(write("short.stl", bytes:sub(1, 600))), "short.stl",
      "truncated binary STL: its header says 12 triangles (684 bytes) but the file has 600 bytes")
    has(mesh_err(write("long.stl", bytes .. "xx")), "its header says 12 triangles (684 bytes) but the file has 686 bytes")
    has(mesh_err(write("tiny.stl", "abc")), "not an STL file")
    local nan = bytes:sub(1, 84 + 12) .. ffi.string(ffi.new("float[1]", 0 / 0), 4) .. bytes:sub(84 + 17)
    has(mesh_err(write("nan.stl", nan)), "triangle 1, corner 1 has a non-finite coordinate (", "nan")
    meshes.write_stl_ascii(tmp("cube_ascii.stl"), cube)
    local text = read(tmp("cube_ascii.stl"))
    has(mesh_err(write("typo.stl", (text:gsub("outer loop", "outer lop", 1)))), "ASCII STL line 3: expected 'loop' (after 'outer'), found 'lop'")
    has(mesh_err(write("cut.stl", text:sub(1, 300))), "truncated ASCII STL")
    has(mesh_err(write("word.stl", (text:gsub("vertex 0 0 0", "vertex 0 zero 0", 1)))), "coordinate 'zero' is not a decimal number")
    has(mesh_err(write("inf.stl", (text:gsub("vertex 0 0 0", "vertex 0 1e999 0", 1)))), "non-finite coordinate (inf)")
  end)

  it("inputs the fuzzers once crashed on (tests/fuzz/found/) give messages", function()
    local n = 0
    for _, kind in ipairs { "png", "obj", "stl" } do
      local ls = io.popen("ls tests/fuzz/found/" .. kind .. " 2>/dev/null")
      for name in ls:lines() do
        local path = "tests/fuzz/found/" .. kind .. "/" .. name
        local e = kind == "png" and image_err(path) or mesh_err(path, { format = kind })
        has(e, path)
        n = n + 1
      end
      ls:close()
    end
    assert.is_true(n >= 2)
  end)

  it("OBJ and every format: open, non-manifold, inconsistent, degenerate, flat, bad index, too large", function()
    meshes.write_obj(tmp("cube.obj"), cube)
    has(mesh_err(obj_with("open.obj", function(m) table.remove(m.triangles) end)), "open.obj",
      "open mesh: 3 edges belong to one triangle only", "watertight")
    has(mesh_err(obj_with("flip.obj", function(m) local t = m.triangles[5]; t[2], t[3] = t[3], t[2] end)),
      "inconsistent orientation: triangles")
    -- two tetrahedra sharing the edge (0,0,0)-(0,0,1): four triangles on that edge
    has(mesh_err(write("bowtie.obj", "v 0 0 0\nv 0 0 1\nv 1 0 0\nv 0 1 0\nv -1 0 0\nv 0 -1 0\n" ..
      "f 1 2 3\nf 1 3 4\nf 1 4 2\nf 2 4 3\nf 1 2 5\nf 1 5 6\nf 1 6 2\nf 2 6 5\n")),
      "non-manifold: the edge (0, 0, 0)-(0, 0, 1) is shared by 4 triangles")
    has(mesh_err(obj_with("repeat.obj", function(m) m.triangles[3][2] = m.triangles[3][1] end)),
      "degenerate triangle 3: corners 1 and 2 are the same point")
    has(mesh_err(write("collinear.obj", "v 0 0 0\nv 1 0 0\nv 2 0 0\nv 0 1 0\nf 1 2 3\nf 1 3 4\nf 1 4 2\nf 2 4 3\n")),
      "degenerate triangle 1: its corners are collinear")
    has(mesh_err(write("flat.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nf 1 3 2\n")), "encloses no volume")
    has(mesh_err(write("index.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n")), "OBJ face 1 refers to vertex 9, but the file has 3 vertices")
    has(mesh_err(write("inf.obj", "v 0 0 1e999\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")), "OBJ vertex 1 has a non-finite coordinate (inf)")
    has(mesh_err(write("nan.obj", "v 0 0 0\nv nan 0 0\nv 0 1 0\nf 1 2 3\n")), "OBJ line 2: vertex coordinate 'nan' is not a number")
    has(mesh_err(write("comma.obj", "v 0 0 0\nv 1,5 0 0\nv 0 1 0\nf 1 2 3\n")), "OBJ line 2: vertex coordinate '1,5'")
    has(mesh_err(write("short.obj", "v 0 0\nf 1 1 1\n")), "OBJ line 1: a vertex needs 3 coordinates (it has 2)")
    has(mesh_err(write("noface.obj", "# nothing\nv 0 0 0\n")), "the OBJ file has no faces")
    local max = robot_module.MAX_TRIANGLES
    robot_module.MAX_TRIANGLES = 10
    local e = mesh_err(tmp("cube.obj"))
    robot_module.MAX_TRIANGLES = max
    has(e, "the OBJ file has 12 faces, more than the limit of 10 triangles")
    has(mesh_err(tmp("cube.obj"), { spacing = 1e-4 }), "has 1e+12 points, more than the limit of 5e+07", "larger spacing")
    has(mesh_err(tmp("cube.obj"), { spacing = 2, scale = 0.01 }), "no lattice point at spacing 2 is inside")
    has(err_of(cq.robot { dim = 2 }.mesh, cq.robot { dim = 2 }, { path = tmp("cube.obj"), offset = { 0, 0 } }), "needs a 3D robot")
  end)
end)
