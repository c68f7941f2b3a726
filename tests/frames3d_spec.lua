-- 3D frames through the same cq.frames API as 2D: particles land where the camera projects them, in their group's
-- colour, over a floor with shadows under a sky; cameras frame the robot or look where told; write() makes one PNG
-- per step; colour fields (speed, J, von Mises, E) map through the colour map with a colour bar, in 2D too.
local cq = require "cq"
local frames = require "cq.frames"
local colors = require "cq._colors"

-- Two 4x4x4 boxes on the floor (group 1 actuated, group 2 passive, E 20 and 40), recorded for 3 steps.
local function scene()
  local robot = cq.robot { dim = 3 }
  local a = robot:box { offset = { 0.3, 0.13, 0.3 }, size = { 0.08, 0.08, 0.08 }, count = { 4, 4, 4 }, name = "a",
    material = { E = 20 } }
  local b = robot:box { offset = { 0.4, 0.13, 0.3 }, size = { 0.08, 0.08, 0.08 }, count = { 4, 4, 4 }, name = "b",
    material = { E = 40 } }
  robot:pressure_actuator { groups = { a }, axis = 2, max = 2 }
  local world, s0 = robot:world { res = { 24, 16, 24 }, dx = 1 / 24, dt = 0.01, substeps = 4, gravity = { 0, -4, 0 },
    walls = { all = { type = "friction", friction = math.huge } } }
  local tr = cq.trajectory { world = world, steps = 3, record = { "x", "v", "F" } }
  local s = s0:copy()
  tr:record_state(0, s)
  for k = 0, 2 do
    world:step(s, { 1 })
    tr:record_action(k, { 1 })
    tr:record_state(k + 1, s)
  end
  return world, s, tr, a, b
end

local function saturation(r, g, b) return math.max(r, g, b) - math.min(r, g, b) end
local function luminance(img, i, j) local r, g, b = img:pixel(i, j); return (r + g + b) / 3 end

-- True when the right half of img holds both end colours of colour map name (the colour bar).
local function has_colorbar(img, name)
  local top, bottom = colors.map(name, 1, 0, 1), colors.map(name, 0, 0, 1)
  local found = {}
  for j = 0, math.floor(img.h * 2 / 3) do
    for i = math.floor(img.w / 2), img.w - 1 do
      local r, g, b = img:pixel(i, j)
      if r == top[1] and g == top[2] and b == top[3] then found.top = true end
      if r == bottom[1] and g == bottom[2] and b == bottom[3] then found.bottom = true end
    end
  end
  return found.top and found.bottom or false
end

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  return d
end

describe("cq.frames in 3D", function()
  it("draws every particle where the camera projects it, in its group's colour, over floor and sky", function()
    local world, s, _, a, b = scene()
    local img = frames.render_state { world = world, state = s, color = "group", width = 320 }
    assert.are.same({ 320, 240 }, { img.w, img.h })
    local inside, nearest = 0, {}
    for p = 1, world.n do
      local x = s:get("x", p)
      local i, j = img:to_pixel(x[1], x[2], x[3])
      assert.is_not_nil(i) -- the automatic camera frames the whole robot
      if saturation(img:pixel(i, j)) > 40 then inside = inside + 1 end -- robot colours are saturated, floor and sky grey
      local g = p <= a.last and 1 or 2
      local _, _, depth = img.camera:to_pixel(x[1], x[2], x[3])
      if not nearest[g] or depth < nearest[g].depth then nearest[g] = { depth = depth, i = i, j = j } end
    end
    print(string.format("  %d of %d particles project onto robot-coloured pixels", inside, world.n))
    assert.are.equal(world.n, inside)
    -- the particle nearest the camera in each group shows its group's hue (palette 1 blue, 2 orange)
    local r, _, bl = img:pixel(nearest[1].i, nearest[1].j)
    assert.is_true(bl > r + 40)
    r, _, bl = img:pixel(nearest[2].i, nearest[2].j)
    assert.is_true(r > bl + 60)
    -- sky at the top (bluish grey, brightening to the horizon), floor at the bottom (grey)
    local sr, sg, sb = img:pixel(img.w / 2, 0)
    assert.is_true(sb > sr and saturation(sr, sg, sb) < 60)
    assert.is_true(saturation(img:pixel(img.w / 2, img.h - 1)) < 20)
    assert.is_true(b.last == world.n)
  end)

  it("casts the shadow of a ball onto the floor along the light, seen from straight above", function()
    local robot = cq.robot { dim = 3 }
    robot:ball { center = { 0.5, 0.3, 0.5 }, radius = 0.05, spacing = 1 / 64 }
    local world, s = robot:world { res = 24, dx = 1 / 24 }
    local img = frames.render_state { world = world, state = s, width = 200, height = 200,
      camera = { eye = { 0.5, 1.5, 0.5 }, target = { 0.5, 0, 0.5 }, up = { 0, 0, -1 }, orthographic = true } }
    local h = 0.3 - 3 / 24             -- height of the ball's centre above the floor (3 cells)
    local L = { -0.35, 1.0, 0.45 }      -- towards the light (render3d's LIGHT)
    local shadow = { 0.5 - L[1] / L[2] * h, 0.5 - L[3] / L[2] * h }
    local lit = { 0.5 + L[1] / L[2] * h, 0.5 + L[3] / L[2] * h }
    local function brightest(x, z) -- the brightest pixel of a 5 x 5 window (grid lines are darker)
      local ci, cj = img:to_pixel(x, 3 / 24, z)
      local m = 0
      for dj = -2, 2 do for di = -2, 2 do m = math.max(m, luminance(img, ci + di, cj + dj)) end end
      return m
    end
    local in_shadow, in_light = brightest(shadow[1], shadow[2]), brightest(lit[1], lit[2])
    print(string.format("  floor brightness: %.0f in the shadow, %.0f on the other side of the ball", in_shadow, in_light))
    assert.is_true(in_shadow < 0.75 * in_light)
    local ci, cj = img:to_pixel(0.5, 0.35, 0.5) -- the top of the ball, facing the camera
    assert.is_true(saturation(img:pixel(ci, cj)) < 30 and luminance(img, ci, cj) > 60) -- passive grey, lit
  end)

  it("looks from eye to target (perspective and orthographic), framing the robot by default", function()
    local world, s = scene()
    for _, ortho in ipairs { false, true } do
      local img = frames.render_state { world = world, state = s, width = 160, height = 100,
        camera = { eye = { 1, 0.6, 1.2 }, target = { 0.35, 0.1, 0.3 }, orthographic = ortho } }
      local fi, fj = img.camera:to_pixel(0.35, 0.1, 0.3)
      assert.is_true(math.abs(fi - 80) < 1e-9 and math.abs(fj - 50) < 1e-9)
    end
    -- azimuth / elevation: the automatic distance keeps every particle inside the image, with a margin
    for _, cam in ipairs { { azimuth = 0, elevation = 10 }, { azimuth = 90, elevation = 60 }, { azimuth = -30, fov = 60 } } do
      local img = frames.render_state { world = world, state = s, width = 200, camera = cam }
      local i0, i1, j0, j1 = math.huge, -math.huge, math.huge, -math.huge
      for p = 1, world.n do
        local x = s:get("x", p)
        local fi, fj = img.camera:to_pixel(x[1], x[2], x[3])
        i0, i1, j0, j1 = math.min(i0, fi), math.max(i1, fi), math.min(j0, fj), math.max(j1, fj)
      end
      assert.is_true(i0 > 0 and j0 > 0 and i1 < img.w and j1 < img.h)
      assert.is_true(i1 - i0 > 0.35 * img.w or j1 - j0 > 0.35 * img.h) -- and fills a good part of it
    end
  end)

  it("writes one PNG per written step of a 3D trajectory; a quantity gets one colour range and a colour bar", function()
    local world, _, tr = scene()
    local dir = tmpdir()
    local count = frames.write { trajectory = tr, dir = dir, every = 2, width = 160, color = "von_mises" }
    assert.are.equal(3, count) -- k = 0, 2, 3
    local first, last = frames.read(dir .. "/frame_0000.png"), frames.read(dir .. "/frame_0002.png")
    assert.are.same({ 160, 120 }, { last.w, last.h })
    local differ = 0
    for i = 0, 160 * 120 * 3 - 1 do if first.rgb[i] ~= last.rgb[i] then differ = differ + 1 end end
    assert.is_true(differ > 100) -- the boxes moved and their stresses changed
    assert.is_true(has_colorbar(last, "heat")) -- top right: both ends of the colour map
    for i = 0, count - 1 do os.remove(string.format("%s/frame_%04d.png", dir, i)) end
    os.remove(dir)
  end)

  it("names what a colour field needs, unknown cameras and options of the other dimension", function()
    local world, s, tr = scene()
    local short = cq.trajectory { world = world, steps = 1 }
    short:record_state(0, s)
    short:record_state(1, s)
    local function err(f, o) local ok, e = pcall(f, o); assert.is_false(ok); return tostring(e) end
    assert.truthy(err(frames.write, { trajectory = short, dir = tmpdir(), color = "speed" }):find(
      'cq.frames.write: speed needs velocities: record = {"x", "v"}', 1, true))
    assert.truthy(err(frames.write, { trajectory = short, dir = tmpdir(), color = "von_mises" }):find(
      'the stress needs deformation gradients: record = {"x", "F"}', 1, true))
    assert.truthy(err(frames.render_state, { world = world, state = s, color = "pressure" }):find(
      'color must be a function, a list of {r, g, b} or one of actuation, group, speed, J, von_mises, mass, vol0, E, nu',
      1, true))
    assert.truthy(err(frames.render_state, { world = world, state = s, camera = { azimut = 3 } }):find(
      "cq.frames.render_state camera: unknown option 'azimut'", 1, true))
    assert.truthy(err(frames.render_state, { world = world, state = s, camera = { eye = { 1, 1, 1 }, azimuth = 3 } }):find(
      "camera.azimuth cannot be combined with camera.eye", 1, true))
    assert.truthy(err(frames.render_state, { world = world, state = s, view = { 0, 0, 1, 1 } }):find(
      "view must be a table of 6 numbers", 1, true))
    assert.truthy(err(frames.render_state, { world = world, state = s, supersample = 8 }):find(
      "supersample must be in [1, 4] (got 8)", 1, true))
    assert.truthy(err(frames.render_state, { world = world, state = s, range = { 1, 1 } }):find(
      "range must be {lo, hi} with hi > lo", 1, true))
    assert.is_truthy(tr)
  end)
end)

describe("cq.frames colour fields in 2D", function()
  it("map E and von Mises through the colour map (exact colours on discs) and add a colour bar", function()
    local robot = cq.robot { dim = 2 }
    robot:box { offset = { 0.2, 0.2 }, size = { 0.1, 0.1 }, count = { 4, 4 }, material = { E = 10 } }
    robot:box { offset = { 0.5, 0.2 }, size = { 0.1, 0.1 }, count = { 4, 4 }, material = { E = 30 } }
    local world, s = robot:world { res = 32, dx = 1 / 32 }
    local function color_at(img, p) local x = s:get("x", p); return { img:pixel(img:to_pixel(x[1], x[2])) } end
    local img = frames.render_state { world = world, state = s, color = "E", width = 320, radius = 0 }
    assert.are.same(colors.map("heat", 0, 0, 1), color_at(img, 1))
    assert.are.same(colors.map("heat", 1, 0, 1), color_at(img, 32))
    -- stretch particle 5 by 1.3 along x: its von Mises value sets its colour in a fixed range
    s:set("F", 5, { 1.3, 0, 0, 1 })
    local sig = world:stress(s)
    local vm = require("cq._measures").von_mises(sig, 2, world.n, require("ffi").new("double[?]", world.n))
    img = frames.render_state { world = world, state = s, color = "von_mises", range = { 0, 10 }, width = 320, radius = 0 }
    print(string.format("  particle 5 stretched by 1.3: von Mises %.4f (plane-stress form of the Cauchy stress)", vm[4]))
    assert.is_true(vm[4] > 1 and vm[0] == 0)
    assert.are.same(colors.map("heat", vm[4], 0, 10), color_at(img, 5))
    assert.are.same(colors.map("heat", 0, 0, 10), color_at(img, 1))
    -- a colour bar for quantities, none for the default colouring by actuation (whose frames stay as they were)
    assert.is_true(has_colorbar(img, "heat"))
    assert.is_false(has_colorbar(frames.render_state { world = world, state = s, width = 320 }, "heat"))
  end)
end)
