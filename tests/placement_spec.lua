-- Resolution rules, each backed by a measurement: how far a body must stay from a wall band (a particle's B-spline
-- stencil reaches 1.5 cells), and the warning that says so (lua/cq/_warn.lua near_walls).
--
-- Run: build/bin/cqlua tests/run.lua tests/placement_spec.lua
package.loaded["cq._paths"] = package.loaded["cq._paths"] or { lib = "build/lib" }
local cq = require "cq"
local robot = require "cq.robot"

local DX, T = 1 / 64, 3 -- the left wall band: nodes 0, 1, 2

-- A 2D block gliding up along the sticky left wall at 0.5 m/s (no gravity), its leftmost particles `gap` cells from
-- the band's last node (x = (T - 1 + gap) dx). Returns the world, the state and the warnings of the first step.
local function glider(gap, opts)
  opts = opts or {}
  local r = cq.robot { dim = 2 }
  r:box { offset = { (T - 1 + gap) * DX, 0.3 }, size = { 0.1, 0.1 }, spacing = DX / 2, velocity = { 0, 0.5 },
    material = opts.material or { model = "neohookean", E = 100, nu = 0.3, density = 1 } }
  local w, s = r:world { res = { 64, 64 }, dx = DX, dt = 1e-3, gravity = opts.gravity or { 0, 0 }, backend = "cpu",
    threads = 1, precision = "f64", walls = { left = { type = "sticky", thickness = T } } }
  -- the box's particles sit at half-spacing offsets: shift them so the leftmost lies exactly `gap` cells away
  local minx = math.huge
  for p = 0, w.n - 1 do minx = math.min(minx, s.x[p]) end
  for p = 0, w.n - 1 do s.x[p] = s.x[p] + (T - 1 + gap) * DX - minx end
  local warned = robot.warnings_of(function() for _ = 1, 20 do w:step(s) end end)
  return w, s, warned
end

local function mean_vy(w, s)
  local v = 0
  for p = 0, w.n - 1 do v = v + s.v[w.n + p] end
  return v / w.n
end

describe("a body near a wall band", function()
  it("feels the band only within the stencil's reach, 1.5 cells from its nodes: 1.6 cells away it glides as in " ..
    "open space, 1 cell away it is dragged", function()
    local speeds = {}
    for _, gap in ipairs { 1.0, 1.4, 1.6, 2.0, 3.0 } do
      local w, s = glider(gap)
      speeds[gap] = mean_vy(w, s)
    end
    print(string.format("  mean speed after 20 steps (0.5 m/s at the start): %.6f (1 cell), %.6f (1.4), %.10f (1.6), " ..
      "%.10f (2), %.10f (3)", speeds[1.0], speeds[1.4], speeds[1.6], speeds[2.0], speeds[3.0]))
    for _, gap in ipairs { 1.6, 2.0, 3.0 } do assert.is_true(math.abs(speeds[gap] - 0.5) < 1e-12) end
    for _, gap in ipairs { 1.0, 1.4 } do assert.is_true(speeds[gap] < 0.5 * (1 - 1e-3)) end
  end)

  it("is warned of within 2 cells unless it rests on the band, is clamped in it or is a fluid", function()
    local _, _, warned = glider(1.0)
    assert.are.equal(1, #warned)
    assert.matches("^cqlua: warning: robot group 1 comes within 1 cells of the left wall band's nodes %(its thickness " ..
      "3 cells, dx 0%.01563%): a particle's B%-spline stencil reaches 1%.5 cells, so the band's boundary condition " ..
      "acts on the body directly; keep bodies at least 2 cells from a wall band unless they rest on it or are " ..
      "clamped in it %(enlarge res, or move the body%)$", warned[1])
    assert.are.same({}, select(3, glider(2.0))) -- clear of it
    assert.are.same({}, select(3, glider(0.2))) -- clamped: a particle within half a cell of its nodes
    assert.are.same({}, select(3, glider(1.0, { gravity = { -1, 0 } }))) -- resting on it: gravity points into it
    assert.are.same({}, select(3, glider(1.0, { material = { model = "fluid", bulk = 100, visc = 0.01, density = 1 } })))
    -- once per world: a memo started from a state of the same world says nothing more
    local w, s, first = glider(1.0)
    assert.are.equal(1, #first)
    assert.are.same({}, robot.warnings_of(function() local m = w:memo { steps = 1 }; m:begin(s); m:step() end))
  end)
end)
