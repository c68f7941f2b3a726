-- Per-material damping (issue 62 item 5; engine/stages/g2p.h damping_factor): a material's own velocity damping rate
-- (material.damping, the damping parameter), -1 by default: the world's damping for a solid and none for a fluid, so
-- water in a damped world moves as in an undamped one. Where a node's particles share a rate, the particles move as
-- in a world damped at that rate. Gradients: tests/gradient_spec.lua and tests/implicit_spec.lua ("own damping").
package.loaded["cq._paths"] = package.loaded["cq._paths"] or { lib = "build/lib" }
local cq = require "cq"
local E = require "tests._errors"

local DX = 1 / 64

-- A block of material (2 particles per cell and axis) dropped in a box of slip walls; returns its positions and
-- velocities after `steps` control steps. o: material, damping (the world's), integrator, dt, steps.
local function run(o)
  local r = cq.robot { dim = 2 }
  r:box { offset = { 0.3, 0.3 }, size = { 0.2, 0.15 }, spacing = DX / 2, velocity = { 0.3, 0 }, material = o.material }
  local w, s = r:world { res = { 64, 64 }, dx = DX, dt = o.dt or 2e-4, gravity = { 0, -9.8 }, damping = o.damping,
    walls = { all = { type = "slip", thickness = 3 } }, integrator = o.integrator, precision = "f64", threads = 1 }
  for _ = 1, o.steps or 150 do w:step(s) end
  local out = {}
  for i = 0, 2 * w.n - 1 do out[#out + 1] = s.x[i]; out[#out + 1] = s.v[i] end
  w:release()
  return out
end

local function rel_diff(a, b)
  local d, m = 0, 0
  for i = 1, #a do
    d = math.max(d, math.abs(a[i] - b[i]))
    m = math.max(m, math.abs(b[i]))
  end
  return d / m
end

local WATER = { preset = "water", bulk = 2e5 }
local SOLID = { model = "neohookean", E = 2e4, nu = 0.3, density = 1000 }

describe("per-material damping", function()
  it("leaves water undamped by default in a damped world: it moves as in an undamped one", function()
    for _, integrator in ipairs { "explicit", "implicit" } do
      local dt = integrator == "implicit" and 2e-3 or 2e-4
      local steps = integrator == "implicit" and 30 or 150
      local damped = run { material = WATER, damping = 20, integrator = integrator, dt = dt, steps = steps }
      local free = run { material = WATER, damping = 0, integrator = integrator, dt = dt, steps = steps }
      local asked = run { material = { preset = "water", bulk = 2e5, damping = 20 }, damping = 20,
        integrator = integrator, dt = dt, steps = steps }
      local d_free, d_asked = rel_diff(damped, free), rel_diff(asked, free)
      print(string.format("  %s: water in a world damped at 20/s against an undamped world %.1e; asked for 20/s %.1e",
        integrator, d_free, d_asked))
      assert.is_true(d_free < 1e-9) -- the same motion, to rounding
      assert.is_true(d_asked > 1e-3) -- damping asked for acts
    end
  end)

  it("damps a solid at its material's rate as a world damped at that rate would", function()
    local own = run { material = { model = "neohookean", E = 2e4, nu = 0.3, density = 1000, damping = 30 }, damping = 0 }
    local world = run { material = SOLID, damping = 30 }
    local none = run { material = { model = "neohookean", E = 2e4, nu = 0.3, density = 1000, damping = 0 }, damping = 30 }
    local free = run { material = SOLID, damping = 0 }
    print(string.format("  own 30/s against the world's 30/s: %.1e; own 0 in a world at 30/s against an undamped " ..
      "world: %.1e", rel_diff(own, world), rel_diff(none, free)))
    assert.is_true(rel_diff(own, world) < 1e-9)
    assert.is_true(rel_diff(none, free) < 1e-9)
    assert.is_true(rel_diff(world, free) > 1e-3)
  end)

  it("runs a solid at the default (-1) bit for bit as one set to the world's rate", function()
    local default = run { material = SOLID, damping = 25 }
    local same = run { material = { model = "neohookean", E = 2e4, nu = 0.3, density = 1000, damping = 25 }, damping = 25 }
    assert.are.same(default, same)
  end)

  it("names a bad rate at the call that set it", function()
    local function make(material, fill)
      local r = cq.robot { dim = 2 }
      r:box { offset = { 0.3, 0.3 }, size = { 0.1, 0.1 }, spacing = DX / 2, material = material }
      local w = r:world { res = { 64, 64 }, dx = DX, dt = 1e-3 }
      if fill then
        w:fill("damping", fill)
        w:commit()
      end
      return w
    end
    E.has(E.err_of(make, { model = "neohookean", damping = -2 }), "material.damping", "-1", ">= 0", "-2")
    E.has(E.err_of(make, SOLID, -0.5), "damping", "-1", "-0.5")
    E.has(E.err_of(make, SOLID, 1e6), "damping", "80", "1e+06")
    E.has(E.err_of(make, { model = "neohookean", dampin = 2 }), "dampin", "damping")
  end)
end)
