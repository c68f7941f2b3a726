-- Atomic loaders and setters (issue 64 item 1): every entry point that loads or sets state checks everything before
-- it writes anything, so a failed call leaves each object as it was. Each test sets known values, makes the call fail
-- in its last check (the one a write-as-you-go implementation reaches after writing the rest), and asserts every
-- value unchanged bit for bit and the error naming the culprit.
local ffi = require "ffi"
local cq = require "cq"
local E = require "tests._errors"
local msh = require "tests._msh_files"

local has = E.has

-- The error of f(...), which must fail, raised at a line of this file (the call is made here, not in tests/_errors).
local function err_of(f, ...)
  local args, n = { ... }, select("#", ...)
  return E.err_of(function() local r = f(unpack(args, 1, n)) return r end)
end

-- The bits of a double, so that a comparison is bit-exact (-0 and 0 differ; NaN equals itself).
local bits_of = ffi.new("union { double d; uint64_t u; }")
local function bits(x)
  bits_of.d = x
  return tostring(bits_of.u)
end

-- A deep copy of v with every number replaced by its bits (tables seen twice, e.g. a shared material, copied once).
local function snap(v, seen)
  if type(v) == "number" then return bits(v) end
  if type(v) ~= "table" then return v end
  seen = seen or {}
  if seen[v] then return "<seen>" end
  seen[v] = true
  local out = {}
  for k, x in pairs(v) do out[k] = snap(x, seen) end
  return out
end

-- The values of a list of parameters (cq.param: p.v[0 .. n-1]), bit for bit.
local function param_bits(params)
  local out = {}
  for i, p in ipairs(params) do
    out[i] = {}
    for j = 0, p.n - 1 do out[i][j + 1] = bits(p.v[j]) end
  end
  return out
end

-- Fills the parameters with distinct known values.
local function set_known(params, salt)
  for i, p in ipairs(params) do for j = 0, p.n - 1 do p.v[j] = salt + i + j / 7 end end
end

-- A field of the world's per-particle parameters (all components), bit for bit.
local function field_bits(w, name)
  local arr, len = w.params[name], w._fields[name].shape == 1 and w.dim or 1
  local out = {}
  for i = 0, len * w.n - 1 do out[i + 1] = bits(tonumber(arr[i])) end
  return out
end

-- A fresh temporary file name, with an optional suffix (the name os.tmpname reserved is removed).
local function tmp(suffix)
  local path = os.tmpname()
  if suffix then os.remove(path) end
  return path .. (suffix or "")
end

-- A file cq.save wrote of objects, decoded for editing (cq.json.write writes the edited copy back), and its path.
local function saved(objects)
  local path = tmp()
  cq.save(path, objects)
  return cq.json.read(path), path
end

local function small_world(n, n_actuators)
  local w = cq.world { dim = 2, res = { 32, 32 }, dx = 1 / 32, dt = 1e-3, n = n, n_actuators = n_actuators or 0 }
  w:fill("vol0", 1e-4); w:fill("mass", 1e-4); w:fill("E", 40); w:fill("nu", 0.3)
  return w
end

describe("cq.load and load_state are atomic", function()
  it("cq.load: an MLP file with a string in b2 (its last parameter) leaves W1, b1, W2 and b2 as they were", function()
    local a, b = cq.mlp { inputs = 3, outputs = 2, hidden = { 4 }, seed = 1 }, cq.mlp { inputs = 3, outputs = 2,
      hidden = { 4 }, seed = 2 }
    local doc, path = saved({ controller = a })
    local last = doc.controller[#doc.controller]
    last.values[#last.values] = "x"
    cq.json.write(path, doc)
    set_known(b.params, 10)
    local before = param_bits(b.params)
    local e = err_of(cq.load, path, { controller = b })
    has(e, "atomic_spec.lua:", "cq.load: ", "controller[4] value 2 is not a number", '"x"')
    assert.are.same(before, param_bits(b.params))
    -- a matrix of the right size but other rows (W2: 2 x 4 saved as 4 x 2) is refused too, writing nothing
    last.values[#last.values] = 0.5
    doc.controller[3].rows = 4
    cq.json.write(path, doc)
    has(err_of(cq.load, path, { controller = b }), "atomic_spec.lua:", "controller[3] has 4 rows, the parameter 2")
    assert.are.same(before, param_bits(b.params))
    os.remove(path)
  end)

  it("cq.load: an optimizer state whose t is refused (checked last) leaves the controller, the design and the " ..
    "optimizer as they were", function()
    local robot = cq.robot { dim = 2 }
    robot:box { offset = { 0.3, 0.1 }, size = { 0.05, 0.05 }, spacing = 1 / 64 }
    local w = robot:world { res = 32 }
    local function objects(seed)
      local ctl = cq.mlp { inputs = 2, outputs = 1, hidden = { 3 }, seed = seed }
      local design = cq.design { world = w }
      design:variable { name = "E", field = "E", per = "particle", init = seed }
      local opt = cq.adam { params = { { params = ctl.params, lr = 1e-3 }, { params = design.params, lr = 0.1 } } }
      for _, p in ipairs(opt.params) do for i = 0, p.n - 1 do p.g[i] = math.sin(i + seed) end end
      opt:step()
      return { controller = ctl, design = design, optimizer = opt }
    end
    local doc, path = saved(objects(1))
    doc.optimizer.t = -1
    cq.json.write(path, doc)
    local b = objects(2)
    local before = { param_bits(b.controller.params), param_bits(b.design.params), snap(b.optimizer:state()) }
    has(err_of(cq.load, path, b), "atomic_spec.lua:", "cq.adam:load_state: t must be >= 0 (got -1)")
    assert.are.same(before, { param_bits(b.controller.params), param_bits(b.design.params), snap(b.optimizer:state()) })
    os.remove(path)
  end)

  it("cq.load: an object with state() / load_state() of its own is given its old state back when it, or a later " ..
    "one, fails", function()
    -- load_state of b writes x, then refuses y: a write-as-you-go object, which cq.load has to undo
    local function object(x, y)
      local o = { x = x, y = y }
      function o:state() return { x = self.x, y = self.y } end
      function o:load_state(st)
        self.x = st.x
        if type(st.y) ~= "number" then error("o:load_state: y must be a number", 0) end
        self.y = st.y
      end
      return o
    end
    local doc, path = saved({ a = object(1, 2), b = object(3, 4) })
    doc.b.y = "four"
    cq.json.write(path, doc)
    local a, b = object(0.5, 0.25), object(0.125, -0)
    local e = err_of(cq.load, path, { a = a, b = b })
    has(e, "y must be a number")
    assert.are.same(snap { 0.5, 0.25, 0.125, -0 }, snap { a.x, a.y, b.x, b.y })
    os.remove(path)
  end)

  it("opt:load_state (Adam, SGD): a refused t, or a string as the last slot value, changes no slot, lr or step " ..
    "count", function()
    for _, make in ipairs { cq.adam, cq.sgd } do
      local p, q = cq.param { n = 3, init = 1 }, cq.param { n = 2, init = 2 }
      local src = make { params = { { params = { p }, lr = 0.5 }, { params = { q }, lr = 0.25 } } }
      for _, r in ipairs { p, q } do for i = 0, r.n - 1 do r.g[i] = i + 1 end end
      src:step()
      local dst = make { params = { { params = { p }, lr = 0.125 }, { params = { q }, lr = 2 } } }
      for _, r in ipairs { p, q } do for i = 0, r.n - 1 do r.g[i] = -i - 0.5 end end
      dst:step()
      local before = snap(dst:state())
      local st = src:state()
      st.t = 1.5
      has(err_of(dst.load_state, dst, st), "atomic_spec.lua:", make == cq.adam and "cq.adam:load_state" or "cq.sgd:load_state",
        "t must be an integer", "1.5")
      assert.are.same(before, snap(dst:state()))
      st = src:state()
      local slot = make == cq.adam and "v" or "velocity"
      st.slots[2][slot][2] = "x"
      has(err_of(dst.load_state, dst, st), "atomic_spec.lua:", "slot " .. slot .. " of parameter 2: value 2 must be a number",
        '"x"')
      assert.are.same(before, snap(dst:state()))
    end
  end)

  it("keeper:load_state: a copy of the wrong size (the last check) leaves loss, iteration, count and copy", function()
    local p, q = cq.param { n = 2, init = 1 }, cq.param { n = 3, init = 2 }
    local src, dst = cq.keep_best { params = { p, q } }, cq.keep_best { params = { p, q } }
    src:consider(5); src:consider(3)
    p.v[0] = 0.75
    dst:consider(7); dst:consider(8); dst:consider(9)
    local before = snap { dst.loss, dst.iteration, dst.count, dst:state() }
    local st = src:state()
    table.remove(st.copy[2])
    has(err_of(dst.load_state, dst, st), "atomic_spec.lua:", "keeper:load_state: copy 2 must have 3 values (got 2)")
    assert.are.same(before, snap { dst.loss, dst.iteration, dst.count, dst:state() })
  end)
end)

describe("world and state setters are atomic", function()
  it("world:fill with a function, a list or a vector function refused at the last particle writes no particle",
    function()
      local n = 6
      local w = small_world(n)
      w:fill("E", function(p) return 10 + p / 3 end)
      w:fill("act_axis", function(p) return { p / 5, -p } end)
      local E0, axis0 = field_bits(w, "E"), field_bits(w, "act_axis")
      has(err_of(w.fill, w, "E", function(p) return p < n and 99 or "oops" end), "atomic_spec.lua:",
        "world:fill: E function must return a number for particle 6", '"oops"')
      assert.are.same(E0, field_bits(w, "E"))
      has(err_of(w.fill, w, "E", { 1, 2, 3, 4, 5, "six" }), "world:fill: E values[6] must be a number", '"six"')
      assert.are.same(E0, field_bits(w, "E"))
      has(err_of(w.fill, w, "E", function(p) if p == n then error("the user's function failed") end return 1 end),
        "the user's function failed")
      assert.are.same(E0, field_bits(w, "E"))
      has(err_of(w.fill, w, "act_axis", function(p) return p < n and { 1, 1 } or { 1 } end),
        "act_axis function's value for particle 6 must be a table of 2 numbers")
      assert.are.same(axis0, field_bits(w, "act_axis"))
      -- fill_lame checks its range before it writes E (it was atomic before this issue too)
      local nu0 = field_bits(w, "nu")
      has(err_of(w.fill_lame, w, 10, 5, 1, n + 1), "world:fill: last must be", tostring(n + 1))
      assert.are.same({ E0, nu0 }, { field_bits(w, "E"), field_bits(w, "nu") })
    end)

  it("world:set_gravity on a released world keeps the world's gravity record", function()
    local w = small_world(2)
    w:set_gravity { 0.5, -3 }
    w:release()
    has(err_of(w.set_gravity, w, { 1, 2 }), "used after release")
    assert.are.same(snap { 0.5, -3 }, snap(w._gravity))
  end)

  it("state:set with a string as the last component, and param:set, change nothing", function()
    local w = small_world(3)
    w:commit()
    local s = w:state()
    s:set("x", 2, { 0.25, 0.5 })
    local x0 = snap(s:get("x", 2))
    has(err_of(s.set, s, "x", 2, { 0.75, "y" }), "atomic_spec.lua:", "state:set: values[2] must be a number", '"y"')
    assert.are.same(x0, snap(s:get("x", 2)))
    local p = cq.param { n = 2, init = 0.5 }
    has(err_of(p.set, p, 2, "z"), "param:set: x must be a number")
    assert.are.same({ { bits(0.5), bits(0.5) } }, param_bits { p })
  end)
end)

-- What a robot holds: positions, velocities, volumes, materials, groups, actuators and their particles.
local function robot_snap(r)
  return snap { x = r.x, v = r.v, vol = r.vol, mat = #r.mat, groups = #r.groups, actuators = #r.actuators,
    act_of = r.act_of, wall_of = r.wall_of, size = r:size() }
end

describe("robot loaders are atomic: a failed call adds no particle, group or actuator", function()
  it("robot:box and robot:ball whose cavity the body does not enclose (the last check), or whose keep function " ..
    "raises", function()
      local r = cq.robot { dim = 2 }
      local g = r:box { offset = { 0.2, 0.2 }, size = { 0.1, 0.1 }, spacing = 0.01 }
      r:pressure_actuator { groups = { g } }
      local before = robot_snap(r)
      has(err_of(r.box, r, { offset = { 0, 0 }, size = { 0.1, 0.1 }, spacing = 0.01,
        cavities = { { offset = { 0.05, 0.02 }, size = { 0.2, 0.02 } } } }), "atomic_spec.lua:",
        "robot:box: cavities[1] (cavity1) is not enclosed by the body")
      assert.are.same(before, robot_snap(r))
      has(err_of(r.ball, r, { center = { 0.5, 0.5 }, radius = 0.05, spacing = 0.01,
        cavities = { { center = { 0.55, 0.5 }, radius = 0.03 } } }), "robot:ball: cavities[1]", "is not enclosed")
      assert.are.same(before, robot_snap(r))
      local seen = 0
      has(err_of(r.box, r, { offset = { 0, 0 }, size = { 0.1, 0.1 }, spacing = 0.01, keep = function()
        seen = seen + 1
        if seen == 100 then error("keep failed at the last point", 0) end
        return true
      end }), "keep failed at the last point")
      assert.are.same(before, robot_snap(r))
    end)

  it("robot:pressure_actuator whose last particle belongs to another actuator, or whose last group is no group",
    function()
      local r = cq.robot { dim = 2 }
      local a = r:box { offset = { 0.2, 0.2 }, size = { 0.04, 0.04 }, spacing = 0.01 }
      local b = r:box { offset = { 0.3, 0.2 }, size = { 0.04, 0.04 }, spacing = 0.01 }
      r:pressure_actuator { groups = { r:select { group = b, where = function(_, p) return p == b.last end } } }
      local before = robot_snap(r)
      has(err_of(r.pressure_actuator, r, { groups = { a, b } }), "atomic_spec.lua:",
        "robot:pressure_actuator: particle " .. b.last .. " already belongs to actuator 1")
      assert.are.same(before, robot_snap(r))
      has(err_of(r.pressure_actuator, r, { groups = { a, a.particles } }), "groups[2] must be a group")
      assert.are.same(before, robot_snap(r))
      has(err_of(r.pressure_actuator, r, { groups = { a, a } }), "particle " .. a.first .. " appears twice in groups")
      assert.are.same(before, robot_snap(r))
    end)

  it("robot:gmsh whose second physical group holds a degenerate triangle", function()
    -- physical surface "a": a good triangle; "b": a triangle with collinear nodes (the last element checked)
    local mesh = {
      names = { { 2, 1, "a" }, { 2, 2, "b" } },
      entities = { [0] = {}, {}, { { 1, { 0, 0, 0, 1, 1, 0 }, { 1 }, {} }, { 2, { 0, 0, 0, 2, 0, 0 }, { 2 }, {} } }, {} },
      nodes = { { 2, 1, 0, { 1, 2, 3, 4 }, { { 0, 0, 0 }, { 1, 0, 0 }, { 0, 1, 0 }, { 2, 0, 0 } } } },
      elements = { { 2, 1, 2, { { 1, 1, 2, 3 } } }, { 2, 2, 2, { { 2, 1, 2, 4 } } } },
      max_tag = 4,
    }
    local path = tmp(".msh")
    local f = assert(io.open(path, "wb"))
    f:write(msh.ascii(mesh))
    f:close()
    local r = cq.robot { dim = 2 }
    r:box { offset = { 0.2, 0.2 }, size = { 0.04, 0.04 }, spacing = 0.01 }
    local before = robot_snap(r)
    has(err_of(r.gmsh, r, { path = path, offset = { 0, 0 } }), "atomic_spec.lua:", "robot:gmsh: ",
      "triangle 2 has no area (its nodes are collinear)")
    assert.are.same(before, robot_snap(r))
    os.remove(path)
  end)

  it("robot:image with no robot pixel and robot:mesh with a mesh enclosing no volume", function()
    local r = cq.robot { dim = 2 }
    r:box { offset = { 0.2, 0.2 }, size = { 0.04, 0.04 }, spacing = 0.01 }
    local before = robot_snap(r)
    has(err_of(r.image, r, { image = cq.frames.image(4, 4), scale = 0.01, offset = { 0, 0 } }), "atomic_spec.lua:",
      "robot:image: image: no robot pixels")
    assert.are.same(before, robot_snap(r))
    local r3 = cq.robot { dim = 3 }
    r3:box { offset = { 0.2, 0.2, 0.2 }, size = { 0.04, 0.04, 0.04 }, spacing = 0.02 }
    before = robot_snap(r3)
    local path = tmp(".obj")
    local f = assert(io.open(path, "w"))
    f:write("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nf 1 3 2\n")
    f:close()
    has(err_of(r3.mesh, r3, { path = path, offset = { 0, 0, 0 }, spacing = 0.1 }), "robot:mesh", "encloses no volume")
    assert.are.same(before, robot_snap(r3))
    os.remove(path)
  end)
end)

-- What a design holds: its variables (names, values, bounds), ops and whether it stretches.
local function design_snap(d)
  local names = {}
  for name in pairs(d.variables) do names[#names + 1] = name end
  table.sort(names)
  return { names = names, values = param_bits(d.params), ops = #d.ops, stretched = d.stretched }
end

describe("design variables are atomic: a refused variable leaves the design (and its world) as they were", function()
  local n, h = 16, 1 / 64
  local function scene()
    local w = small_world(n, n)
    w:fill("material", "neohookean")
    w:commit()
    local s0 = w:state()
    for p = 0, n - 1 do s0.x[p], s0.x[n + p] = 0.4 + (p % 4 + 0.5) * h, 0.4 + (math.floor(p / 4) + 0.5) * h end
    local d = cq.design { world = w }
    d:variable { name = "E", field = "E", per = "particle", init = function(i) return 1 + i / 9 end }
    return w, s0, d
  end

  it("design:variable and design:layout with an init whose last entry is refused", function()
    local _, s0, d = scene()
    local before = design_snap(d)
    has(err_of(d.variable, d, { name = "nu", field = "nu", per = "particle", init = function(i) return i < n and 1 or "x" end }),
      "atomic_spec.lua:", "design:variable: init must give finite values (entry 16)", '"x"')
    assert.are.same(before, design_snap(d))
    has(err_of(d.layout, d, { state = s0, radius = 1.5 * h, init = function(i) return i < n and 0 or 0 / 0 end }),
      "design:layout: init must give finite values (entry 16)", "nan")
    assert.are.same(before, design_snap(d))
  end)

  it("design:stretch with a refused init leaves the design unstretched (design:apply needs no s0)", function()
    local _, _, d = scene()
    local before = design_snap(d)
    has(err_of(d.stretch, d, { axis = 1, origin = 0.4, init = math.huge }), "atomic_spec.lua:",
      "design:stretch: init must give finite values (entry 1)", "inf")
    assert.are.same(before, design_snap(d))
    d:apply() -- no stretch: no s0 needed
  end)

  it("design:actuators with a refused init (or name) leaves the world's act_id and act_axis", function()
    local w, s0, d = scene()
    w:fill("act_id", function(p) return (p * 7) % n end)
    w:fill("act_axis", function(p) return { p / 3, -1 / p } end)
    local before = { design_snap(d), field_bits(w, "act_id"), field_bits(w, "act_axis") }
    has(err_of(d.actuators, d, { state = s0, outputs = 2, radius = 1.5 * h,
      init = function(i) return i < 3 * n and 0 or "x" end }), "atomic_spec.lua:",
      "design:actuators: init must give finite values (entry 48)", '"x"')
    assert.are.same(before, { design_snap(d), field_bits(w, "act_id"), field_bits(w, "act_axis") })
    has(err_of(d.actuators, d, { state = s0, outputs = 2, radius = 1.5 * h, name = "E" }),
      "design:actuators: name must be unique in the design (E exists)")
    assert.are.same(before, { design_snap(d), field_bits(w, "act_id"), field_bits(w, "act_axis") })
  end)
end)

describe("the campaign's last silent acceptances", function()
  it("refuse a parameter loaded twice, a chamber wall particle listed twice, a mixer of the wrong signal count", function()
    local p = cq.param { n = 2, init = 1 }
    local path = os.tmpname()
    cq.save(path, { a = { p }, b = { p } })
    local ok, e = pcall(cq.load, path, { a = { p }, b = { p } })
    os.remove(path)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("cq.load: objects.b's parameter 1 is objects.a's parameter 1 again", 1, true), e)
    local r = cq.robot { dim = 2 }
    local g = r:ball { center = { 0.5, 0.5 }, radius = 0.1, spacing = 0.01,
      material = { model = "neohookean", E = 100, nu = 0.3 },
      cavities = { { center = { 0.5, 0.5 }, radius = 0.05, name = "c" } } }
    local w = g.chambers.c
    local dup = { particles = { w.particles[1], w.particles[1] }, normal = { w.normal[1], w.normal[1] },
      area = { w.area[1], w.area[1] } }
    ok, e = pcall(r.chamber, r, { wall = dup, closed = false })
    assert.is_false(ok)
    assert.truthy(tostring(e):find("robot:chamber: wall.particles[2] repeats wall.particles[1]", 1, true), e)
    local world, s0 = r:world { res = { 64, 64 }, dx = 1 / 64, dt = 1e-4, n_actuators = #g.particles }
    local design = cq.design { world = world }
    local psi = design:actuators { state = s0, outputs = 4, radius = 0.02 }
    ok, e = pcall(psi.controller, cq.pulses { outputs = 3, steps = 10, dt = 1e-3 })
    assert.is_false(ok)
    assert.truthy(tostring(e):find("psi.controller: inner must give the actuator layout's 4 signals (outputs) " ..
      "(got 3 outputs)", 1, true), e)
  end)
end)
