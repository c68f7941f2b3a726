-- Pictures of a design's layouts and signals (design:picture, design:colors, design:projection,
-- design:signals_plot in lua/cq/design.lua, drawn by lua/cq/_picture.lua): written PNGs of the asked size, legends
-- in cq.frames' palette, read back from the files; 2D, 3D spheres and 3D slices; bad options named.
local cq = require "cq"
local colors = require "cq._colors"

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  return d
end

-- A block of nx x ny (x nz) particles, one actuator per particle, with a material layout (gamma rising along x) and
-- an actuator layout of K signals (actuator by band along x, the last band passive).
local function scene(dim, K)
  local h = 1 / 64
  local count = dim == 2 and { 12, 8 } or { 6, 5, 4 }
  local n = count[1] * count[2] * (count[3] or 1)
  local world = cq.world { dim = dim, res = dim == 2 and { 32, 32 } or { 16, 16, 16 }, dx = 1 / 32, dt = 4e-3,
    substeps = 4, n = n, n_actuators = n, precision = "f64", walls = { all = { type = "sticky", thickness = 2 } } }
  world:fill("vol0", h ^ dim); world:fill("mass", h ^ dim); world:fill("E", 40); world:fill("nu", 0.3)
  world:fill("material", "neohookean")
  world:commit()
  local s0 = world:state()
  local col = {}
  for p = 0, n - 1 do
    local c = { p % count[1], math.floor(p / count[1]) % count[2], math.floor(p / (count[1] * count[2])) }
    col[p + 1] = c[1]
    for a = 1, dim do s0.x[(a - 1) * n + p] = 0.25 + (c[a] + 0.5) * h end
  end
  local design = cq.design { world = world }
  local phi = design:layout { state = s0, radius = 1.2 * h,
    init = function(i) return -0.9 + 1.8 * col[i] / (count[1] - 1) end }
  local psi = design:actuators { state = s0, outputs = K, layout = phi, radius = 1.2 * h,
    init = function(q)
      local i, j = math.floor((q - 1) / (K + 1)) + 1, (q - 1) % (K + 1) -- particle i, column j (K: passive)
      local band = math.min(K, math.floor(col[i] * (K + 1) / count[1]))
      return j == band and 4 or 0
    end }
  return world, s0, design, phi, psi, n
end

local function same(a, b) return a[1] == b[1] and a[2] == b[2] and a[3] == b[3] end
local function rgb(img, i, j) local r, g, b = img:pixel(i, j); return { r, g, b } end

describe("design:picture", function()
  it("writes the 2D material and actuator layouts at the asked size, legend swatches in cq.frames' PALETTE", function()
    local _, s0, design, phi, psi, n = scene(2, 3)
    local dir = tmpdir()
    local img = design:picture { state = s0, path = dir .. "/sub/layout.png", width = 600, height = 330,
      title = "test layouts" }
    local back = cq.frames.read(dir .. "/sub/layout.png")
    assert.are.same({ 600, 330 }, { back.w, back.h })
    assert.are.same({ img.w, img.h }, { back.w, back.h })
    -- one swatch per actuator and the passive one, each in the frames' colour of that index
    assert.are.equal(4, #img.legend)
    for _, e in ipairs(img.legend) do
      local want = e.actuator == 0 and cq.frames.PASSIVE or cq.frames.PALETTE[e.actuator]
      assert.is_true(same(rgb(back, e.i, e.j), want), e.label)
      assert.is_true(same(e.color, want), e.label)
    end
    -- the colour bar runs through the colour map from gamma = 0 to 1
    local bar = img.colorbar
    assert.is_true(same(rgb(back, bar.i0, bar.j), colors.map("heat", 0, 0, 1)))
    assert.is_true(same(rgb(back, bar.i1, bar.j), colors.map("heat", 1, 0, 1)))
    -- the particles: design:colors gives each its actuator's colour, faded by gamma; the projection agrees
    local lay, act = design:projection(phi), design:projection(psi)
    assert.are.equal(n, #lay.particles)
    assert.are.equal(3, act.outputs)
    local seen = {}
    local unfaded = design:colors { fade = false }
    local faded = design:colors {}
    local material = design:colors { what = "material" }
    for i, p in ipairs(act.particles) do
      local sum = 0
      for _, x in ipairs(act.xi[i]) do sum = sum + x end
      assert.is_true(math.abs(sum - 1) < 1e-12)
      assert.is_true(lay.gamma[i] >= 0 and lay.gamma[i] <= 1)
      assert.are.equal(lay.gamma[i], act.gamma[i])
      local j = act.actuator[i]
      seen[j] = true
      assert.is_true(same(unfaded[p], j == 0 and cq.frames.PASSIVE or cq.frames.PALETTE[j]))
      local want = j == 0 and cq.frames.PASSIVE or cq.frames.PALETTE[j]
      for c = 1, 3 do assert.is_true(math.abs(faded[p][c] - (255 - lay.gamma[i] * (255 - want[c]))) <= 0.5) end
      assert.is_true(same(material[p], colors.map("heat", lay.gamma[i], 0, 1)))
    end
    assert.is_true(seen[0] and seen[1] and seen[2] and seen[3]) -- the bands: every actuator and the passive column
    -- the actuator panel (the right half) shows the particles' colours; the material panel the colour map's ends
    local found = {}
    for j = 0, back.h - 1 do
      for i = 0, back.w - 1 do
        local c = rgb(back, i, j)
        for k = 1, 3 do if same(c, cq.frames.PALETTE[k]) and i >= 300 then found[k] = true end end
      end
    end
    assert.is_true(found[1] or found[2] or found[3])
    os.remove(dir .. "/sub/layout.png")
    os.remove(dir .. "/sub")
    os.remove(dir)
  end)

  it("draws one panel, default sizes, and 3D designs as spheres and as a slice", function()
    local _, s0, design = scene(2, 2)
    local one = design:picture { state = s0, what = "material" }
    assert.are.equal(480, one.w)
    assert.are.equal(0, #one.legend)
    local both = design:picture { state = s0 }
    assert.are.equal(960, both.w)
    local _, s3, d3, _, psi3 = scene(3, 2)
    local img = d3:picture { state = s3, width = 320, height = 200 }
    assert.are.same({ 320, 200 }, { img.w, img.h })
    assert.are.equal(3, #img.legend)
    for _, e in ipairs(img.legend) do
      assert.is_true(same(rgb(img, e.i, e.j), e.actuator == 0 and cq.frames.PASSIVE or cq.frames.PALETTE[e.actuator]))
    end
    -- the sphere view shows shaded particles (not only sky and floor) in both panels
    local function coloured(i0, i1)
      local count = 0
      for j = 0, img.h - 1 do for i = i0, i1 do
        local r, g, b = img:pixel(i, j)
        if math.max(r, g, b) - math.min(r, g, b) > 60 then count = count + 1 end
      end end
      return count
    end
    assert.is_true(coloured(0, 159) > 100 and coloured(160, 319) > 100)
    local slice = d3:picture { state = s3, slice = { axis = "y", at = 0 }, width = 320, what = "actuators" }
    assert.are.equal(320, slice.w)
    -- the bottom layer's actuators: the slice shows only colours of actuators it holds
    local act = d3:projection(psi3)
    local bottom = {}
    for i, p in ipairs(act.particles) do
      if s3.x[s3.n + p - 1] < 0.25 + 1 / 64 then bottom[act.actuator[i]] = true end
    end
    local drawn = 0
    for j = 0, slice.h - 1 do for i = 0, slice.w - 1 do
      local c = rgb(slice, i, j)
      for k = 1, 2 do if same(c, cq.frames.PALETTE[k]) then drawn = drawn + 1 assert.is_true(bottom[k] ~= nil) end end
    end end
    assert.is_true(drawn > 0)
  end)

  it("refuses bad options, naming them", function()
    local _, s0, design, phi, psi = scene(2, 2)
    local function err(opts)
      local ok, e = pcall(design.picture, design, opts)
      assert.is_false(ok)
      return tostring(e)
    end
    assert.truthy(err { state = s0, colour = 1 }:find("unknown option 'colour'", 1, true))
    assert.truthy(err { state = s0, what = "shape" }:find("what must be one of both, material, actuators", 1, true))
    assert.truthy(err { path = "x.png" }:find("state must be a cq state", 1, true))
    assert.truthy(err { state = s0, slice = { axis = "z" } }:find("slice is an option of 3D designs", 1, true))
    assert.truthy(err { state = s0, width = 10 }:find("width must be", 1, true))
    assert.truthy(err { state = s0, height = 40 }:find("height must leave 16 pixels", 1, true))
    assert.truthy(err { state = s0, layout = psi }:find("layout must be a variable of this design made by design:layout",
      1, true))
    assert.truthy(err { state = s0, colormap = "rainbow" }:find("colormap must be one of", 1, true))
    assert.truthy(err { state = s0, fade = "yes" }:find("fade must be true or false", 1, true))
    assert.truthy(err { state = s0, camera = {} }:find("camera is an option of 3D", 1, true))
    local _, s3, d3 = scene(3, 2)
    local ok, e = pcall(d3.picture, d3, { state = s3, slice = { axis = "w" } })
    assert.is_false(ok)
    assert.truthy(tostring(e):find("slice.axis must be", 1, true))
    ok, e = pcall(d3.picture, d3, { state = s3, slice = { at = 2 } })
    assert.truthy(not ok and tostring(e):find("slice.at must be in [0, 1]", 1, true))
    ok, e = pcall(d3.picture, d3, { state = s3, slice = { along = "z" } })
    assert.truthy(not ok and tostring(e):find("unknown option 'along'", 1, true))
    local bare = cq.design { world = s0.world }
    ok, e = pcall(bare.picture, bare, { state = s0 })
    assert.truthy(not ok and tostring(e):find("has no design:layout or design:actuators", 1, true))
    ok, e = pcall(design.projection, design, {})
    assert.truthy(not ok and tostring(e):find("made by design:layout or design:actuators", 1, true))
    ok, e = pcall(design.colors, design, { what = "both" })
    assert.truthy(not ok and tostring(e):find("what must be one of material, actuators", 1, true))
    assert.is_truthy(phi)
  end)
end)

describe("design:signals_plot", function()
  it("draws each signal in its actuator's legend colour and writes the CSV; refuses the mixed controller", function()
    local _, s0, design, _, psi = scene(2, 3)
    local pulses = cq.pulses { outputs = 3, steps = 40, dt = 0.01, amplitude = 5, init_sgn = function(i) return
      math.sin(i) end, init_abs = 0.5 }
    local dir = tmpdir()
    local img = design:signals_plot { controller = pulses, steps = 40, dt = 0.01, path = dir .. "/signals.png",
      csv = dir .. "/signals.csv", width = 500, height = 300, title = "signals (Pa)" }
    local back = cq.frames.read(dir .. "/signals.png")
    assert.are.same({ 500, 300 }, { back.w, back.h })
    local picture = design:picture { state = s0, what = "actuators" }
    assert.are.equal(3, #img.legend)
    for j, e in ipairs(img.legend) do
      assert.are.equal(j, e.actuator)
      assert.is_true(same(rgb(back, e.i, e.j), picture.legend[j].color))
      assert.is_true(same(picture.legend[j].color, cq.frames.PALETTE[j]))
    end
    -- the curves: pixels of each actuator's colour outside its swatch
    local count = {}
    for j = 0, back.h - 1 do for i = 0, back.w - 1 do
      local c = rgb(back, i, j)
      for k = 1, 3 do if same(c, cq.frames.PALETTE[k]) then count[k] = (count[k] or 0) + 1 end end
    end end
    for k = 1, 3 do assert.is_true((count[k] or 0) > 150, "signal " .. k) end
    local lines = {}
    for l in io.lines(dir .. "/signals.csv") do lines[#lines + 1] = l end
    assert.are.equal("t,u1,u2,u3", lines[1])
    assert.are.equal(41, #lines)
    local u = pulses:act(cq.tape(), nil, 7)
    local row = {}
    for v in lines[9]:gmatch("[^,]+") do row[#row + 1] = tonumber(v) end
    assert.is_true(math.abs(row[1] - 0.07) < 1e-12 and math.abs(row[3] - u.v[1]) < 1e-5 * math.abs(u.v[1]) + 1e-12)
    -- seed 004's sign (eq. 7: u > 0 expands) plots -u
    design:signals_plot { controller = pulses, steps = 40, dt = 0.01, csv = dir .. "/signals.csv", sign = "seed004" }
    local flipped = {}
    for l in io.lines(dir .. "/signals.csv") do flipped[#flipped + 1] = l end
    local big = 0
    for k = 2, #lines do
      local a, b, c = {}, {}, 0
      for v in lines[k]:gmatch("[^,]+") do a[#a + 1] = tonumber(v) end
      for v in flipped[k]:gmatch("[^,]+") do b[#b + 1] = tonumber(v) end
      assert.are.equal(a[1], b[1])
      for j = 2, #a do
        assert.are.equal(-a[j], b[j])
        big = math.max(big, math.abs(a[j]))
        c = c + 1
      end
      assert.are.equal(3, c)
    end
    assert.is_true(big > 0.1, "the signals reach " .. big)
    local function err(opts)
      local ok, e = pcall(design.signals_plot, design, opts)
      assert.is_false(ok)
      return tostring(e)
    end
    assert.truthy(err { controller = psi.controller(pulses), steps = 4 }:find("controller must give the actuator " ..
      "layout's 3 signals", 1, true))
    assert.truthy(err { controller = pulses }:find("steps must be an integer", 1, true))
    assert.truthy(err { controller = pulses, steps = 4, colour = 1 }:find("unknown option 'colour'", 1, true))
    assert.truthy(err { controller = 3, steps = 4 }:find("controller must be a controller", 1, true))
    assert.truthy(err { controller = pulses, steps = 4, sign = "paper" }:find("sign", 1, true))
    assert.truthy(err { controller = pulses, steps = 4, height = 40 }:find("height must leave 8 pixels per signal", 1,
      true))
    for _, f in ipairs { "/signals.png", "/signals.csv", "" } do os.remove(dir .. f) end
  end)
end)
