-- The robot builder: particle placement, per-group materials and actuators, and its argument errors.
local cq = require "cq"

describe("cq.robot", function()
  it("builds boxes with the requested lattice, materials and a pressure actuator", function()
    local r = cq.robot { dim = 2 }
    local a = r:box { offset = { 0.2, 0.2 }, size = { 0.1, 0.05 }, spacing = 0.01, material = { E = 20, density = 2 } }
    local b = r:box { offset = { 0.4, 0.2 }, size = { 0.1, 0.1 }, count = { 4, 4 }, material = { model = "corotated" } }
    local act = r:pressure_actuator { groups = { b }, axis = 2, max = 3 }
    local w, s = r:world { res = { 64, 64 }, dx = 1 / 64, dt = 1e-3 }
    assert.are.equal(50 + 16, w.n)
    assert.are.equal(1, act)
    assert.are.equal(1, w.n_actuators)
    local x1, xl = s:get("x", 1), s:get("x", a.last)
    assert.is_true(math.abs(x1[1] - 0.205) < 1e-12 and math.abs(x1[2] - 0.205) < 1e-12)
    assert.is_true(math.abs(xl[1] - 0.295) < 1e-12 and math.abs(xl[2] - 0.245) < 1e-12)
    assert.is_true(math.abs(w.params.mass[0] - 2 * 1e-4) < 1e-15 and w.params.E[0] == 20)
    assert.are.equal(cq.MATERIAL.corotated, w.params.material[b.first - 1])
    assert.are.equal(0, w.params.act_id[b.first - 1])
    assert.are.equal(-1, w.params.act_id[0])
    assert.are.equal(3, w.params.act_axis[w.n + b.first - 1]) -- axis 2 component, scaled by max
    local c = cq.kmeans_groups(s, 2)
    assert.are.equal(2, #c)
    assert.is_true((#c[1] == 50 and #c[2] == 16) or (#c[1] == 16 and #c[2] == 50))
  end)
  it("keeps only the lattice points a box's keep function accepts (one even lattice around a hole)", function()
    local r = cq.robot { dim = 2 }
    local hole = function(x) return not (x[1] > 0.03 and x[1] < 0.07 and x[2] > 0.03 and x[2] < 0.07) end
    local g = r:box { offset = { 0, 0 }, size = { 0.1, 0.1 }, spacing = 0.01, keep = hole }
    assert.are.equal(100 - 16, g.last - g.first + 1) -- the 4 x 4 points at 0.035 ... 0.065 left out
    for _, p in ipairs(g.particles) do assert.is_true(hole(r.x[p])) end
    local ok, msg = pcall(r.box, r, { offset = { 0, 0 }, size = { 0.1, 0.1 }, keep = 1 })
    assert.is_false(ok)
    assert.truthy(msg:find("keep must be a function", 1, true), msg)
  end)
  it("rejects bad arguments with the option, range and value", function()
    local r = cq.robot { dim = 2 }
    local ok, msg = pcall(r.box, r, { offset = { 0, 0 }, size = { 0.1, 0.1 }, material = { nu = 0.5 } })
    print(msg)
    assert.truthy(not ok and msg:find("material.nu must be in (-1, 0.5)", 1, true) and msg:find("0.5", 1, true))
    ok, msg = pcall(r.box, r, { offset = { 0 }, size = { 0.1, 0.1 } })
    print(msg)
    assert.truthy(not ok and msg:find("offset must be a table of 2 numbers", 1, true))
    local g = r:box { offset = { 0.1, 0.1 }, size = { 0.05, 0.05 } }
    ok, msg = pcall(r.pressure_actuator, r, { groups = { g }, axis = 3 })
    print(msg)
    assert.truthy(not ok and msg:find("axis must be in [1, 2]", 1, true))
    ok, msg = pcall(cq.mlp, { inputs = 4, outputs = 2, activation = "sigmoid" })
    print(msg)
    assert.truthy(not ok and msg:find("activation must be one of relu, tanh", 1, true))
  end)
end)
