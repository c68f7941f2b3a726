-- cq.save / cq.load and cq.json (lua/cq/save.lua, lua/cq/json.lua): controllers, design variables and optimizer state
-- round-trip bit for bit; mismatches and malformed files give clear errors; rollouts refuse non-finite losses and
-- gradients.
local cq = require "cq"

local function tmp() return os.tmpname() end
local function err(f, ...) local ok, e = pcall(f, ...) assert.is_false(ok) return e end
local function write(path, text) local f = assert(io.open(path, "w")) f:write(text) f:close() end

local function world()
  local robot = cq.robot { dim = 2 }
  local A = robot:box { offset = { 0.3, 0.1 }, size = { 0.1, 0.1 }, spacing = 1 / 32, name = "A" }
  robot:pressure_actuator { groups = { A }, axis = 2 }
  local w, s0 = robot:world { res = 32, walls = { all = { type = "sticky" } } }
  return w, s0, A
end

describe("cq.save and cq.load", function()
  it("round-trip a controller, design variables and an optimizer's state bit for bit", function()
    local w, _, A = world()
    local function objects(seed)
      local ctl = cq.mlp { inputs = 3, outputs = 1, hidden = { 5 }, seed = seed }
      local design = cq.design { world = w }
      design:variable { name = "E", field = "E", per = "particle", init = function(i) return 1 + i / 7 end }
      design:variable { name = "rho", field = "density", per = "group", groups = { A }, init = seed }
      local opt = cq.adam { params = { { params = ctl.params, lr = 1e-3 }, { params = design.params, lr = 0.1 } } }
      for _, p in ipairs(opt.params) do for i = 0, p.n - 1 do p.g[i] = math.sin(i * seed) end end
      opt:step()
      return { controller = ctl, design = design, optimizer = opt }
    end
    local a, b = objects(1), objects(2)
    local path = tmp()
    cq.save(path, a, { iteration = 7, note = "a run" })
    local extra = cq.load(path, b)
    assert.are.same({ iteration = 7, note = "a run" }, extra)
    for _, k in ipairs { "controller", "design" } do
      for i, p in ipairs(a[k].params) do for j = 0, p.n - 1 do assert.are.equal(p.v[j], b[k].params[i].v[j]) end end
    end
    assert.are.same(a.optimizer:state(), b.optimizer:state())
    local text = assert(io.open(path)):read("*a")
    assert.is_truthy(text:find('"format": "cqlua"', 1, true))
    assert.is_truthy(text:find('"name": "rho"', 1, true))
    os.remove(path)
  end)

  it("names what does not match, and refuses files that are not cqlua saves", function()
    local small, big = cq.mlp { inputs = 2, outputs = 1, hidden = { 3 } }, cq.mlp { inputs = 2, outputs = 1, hidden = { 4 } }
    local path = tmp()
    cq.save(path, { controller = small })
    assert.matches("controller%[1%] has 6 values, the parameter 8", err(cq.load, path, { controller = big }))
    assert.matches("holds no optimizer", err(cq.load, path, { optimizer = cq.adam { params = small.params } }))
    local p, q = cq.param { n = 1 }, cq.param { n = 1 }
    p.name, q.name = "E", "nu"
    cq.save(path, { d = { p } })
    assert.matches('d%[1%] is "E", the parameter "nu"', err(cq.load, path, { d = { q } }))
    write(path, '{"format": "cqlua", "version": 99}')
    assert.matches("has version 99; this cqlua reads version 1", err(cq.load, path, { d = { q } }))
    write(path, '{"weights": [1, 2')
    assert.matches("cq.json.decode: .* is not valid JSON", err(cq.load, path, { d = { q } }))
    write(path, '{"a": 1}')
    assert.matches("is not a cqlua save file", err(cq.load, path, { d = { q } }))
    assert.matches("cq.json.read: cannot read /nonexistent/x.json", err(cq.load, "/nonexistent/x.json", { d = { q } }))
    assert.matches("objects.d must be a controller, design, rollout, list of cq.param, optimizer or keeper",
      err(cq.save, path, { d = 5 }))
    os.remove(path)
  end)

  it("cq.json writes exact doubles in their shortest form and refuses NaN", function()
    local values = { 0.1, 1 / 3, 2 ^ 60 + 2 ^ 8, -1e-300, 5e-324, 1.7976931348623157e308, 3 }
    local back = cq.json.decode(cq.json.encode(values))
    for i, v in ipairs(values) do assert.are.equal(v, back[i]) end
    assert.are.equal("[0.1,3]", cq.json.encode({ 0.1, 3 }))
    assert.matches("value%[2%] is nan %(JSON has no NaN or infinity%)", err(cq.json.encode, { 1, 0 / 0 }))
    assert.matches("value.x is inf", err(cq.json.encode, { x = math.huge }))
  end)
end)

describe("rollouts refuse non-finite numbers before an optimizer sees them", function()
  it("a non-finite loss raises in forward; a non-finite parameter gradient raises in backward", function()
    local w, s0 = world()
    local ctl = cq.open_loop { steps = 3, outputs = 1 }
    local run = cq.rollout { world = w, steps = 3, controller = ctl,
      final = function(t) return t:const({ 0 / 0 }) end }
    assert.matches("run:forward: the loss is not finite %(nan = final nan %+ sum of the running loss%)",
      err(run.forward, run, s0))
    local p = cq.param { n = 1, init = 0 }
    run.final = function(t) -- sqrt at 0: a finite value with an infinite derivative
      local x = t:use(p)
      local y = t:const(1)
      y.v[0] = math.sqrt(x.v[0])
      y.back = function(y) x.g[0] = x.g[0] + y.g[0] * 0.5 / math.sqrt(x.v[0]) end
      return y
    end
    ctl.params[2] = p
    run:forward(s0)
    assert.matches("run:backward: the gradient of parameter 2, entry 1, is inf %(check nonfinite_gradient%)",
      err(run.backward, run))
  end)
end)
