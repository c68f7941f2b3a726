-- Cable actuators (seed 000 eq. 17) and actuators written in Lua: physics and gradients vs central differences.
local cq = require "cq"
local ffi = require "ffi"
local G = require "tests._grad"

-- A vertical 2D finger (8 x 32 particles) on a sticky floor, with a cable along its left and right edges.
local function finger(opts)
  local r = cq.robot { dim = 2 }
  local dx = 1 / 64
  local g = r:box { offset = { 0.45, 3 * dx }, size = { 4 * dx, 16 * dx }, count = { 8, 32 },
    material = { model = opts.model or "neohookean", E = 30, nu = 0.3, density = 1 } }
  local left, right = {}, {}
  for j = 0, 31 do left[#left + 1] = g.first + j; right[#right + 1] = g.first + 7 * 32 + j end
  if opts.cables ~= false then
    r:cable_actuator { particles = left, k = opts.k or 5 }
    r:cable_actuator { particles = right, k = opts.k or 5 }
  end
  local w, s = r:world { res = { 64, 64 }, dx = dx, dt = 2e-3, substeps = 2, gravity = { 0, -1 }, threads = 2,
    precision = "f64", walls = { floor = { type = "sticky", thickness = 3 } } }
  local tip = {}
  for i = 0, 7 do tip[#tip + 1] = g.first + i * 32 + 31 end
  return w, s, tip, left, right
end

describe("cable actuator", function()
  it("is slack at u = 1 and bends the finger toward the pulled side at u = 0", function()
    local w, s = finger {}
    local n = w.n
    local tipx = function(st) local c = 0 for i = 0, 7 do c = c + st.x[i * 32 + 31] end return c / 8 end -- x of the top row
    local a, b = s:copy(), s:copy()
    for _ = 1, 60 do w:step(a, { 1, 1 }); w:step(b, { 0, 1 }) end
    local xa, xb = tipx(a), tipx(b)
    print(string.format("  tip x: both cables slack %.5f, left cable pulled %.5f (start %.5f)", xa, xb, tipx(s)))
    assert.is_true(math.abs(xa - tipx(s)) < 1e-3) -- slack cables exert nothing: only gravity sag
    assert.is_true(xb < xa - 0.01)                 -- pulling the left cable bends the finger left
    assert.are.equal(n, w.n)
  end)

  it("gradients of the tip position w.r.t. an open-loop cable actuation sequence match central differences", function()
    local w, s0, tip = finger {}
    local ctl = cq.control.open_loop { steps = 40, outputs = 2, init = 0.6 }
    for i = 0, ctl.params[1].n - 1 do ctl.params[1].v[i] = 0.5 + 0.3 * G.prand(i, 3) end
    local R = cq.rollout { world = w, steps = 40, controller = ctl,
      final = function(t, s) local c = t:centroid(s, "x", tip) return t:add(t:index(c, 1), t:scale(t:index(c, 2), 0.5)) end }
    R:forward(s0)
    R:backward()
    local d, an = G.param_direction(ctl.params, 4)
    local fd = G.fd_params(ctl.params, d, function() return R:forward(s0) end, 1e-5)
    local rel = math.abs(an - fd) / math.abs(fd)
    print(string.format("  cable: dL/du . d = %.10g (fd %.10g, rel %.1e)", an, fd, rel))
    assert.is_true(rel <= 1e-5)
  end)
end)

describe("actuator written in Lua (seed 000 Listing 3)", function()
  it("state-dependent particle forces are differentiated through the tape", function()
    local w, s0, tip = finger { cables = false }
    local n = w.n
    -- pulls the top third of the finger toward a point, with strength u1 (1 + u2 * height)
    local top = {}
    for p = 1, n do if s0:get("x", p)[2] > 0.2 then top[#top + 1] = p end end
    local actuator = function(t, s, u, k)
      local f = t:const(2 * n)
      local dirs = {}
      for _, p in ipairs(top) do
        local x = s:get("x", p)
        local m = 20 * w.params.mass[p - 1] -- force per unit actuation: an acceleration of about 20 * distance
        dirs[#dirs + 1] = { p, m * (0.3 - x[1]), m * (0.35 - x[2]), m }
      end
      local u1, u2 = u.v[0], u.v[1]
      for _, d in ipairs(dirs) do
        local p = d[1]
        f.v[p - 1] = u1 * (1 + u2) * d[2]
        f.v[n + p - 1] = u1 * (1 + u2) * d[3]
      end
      f.back = function(f, sink)
        for _, d in ipairs(dirs) do
          local p = d[1]
          local gx, gy = f.g[p - 1], f.g[n + p - 1]
          u.g[0] = u.g[0] + (1 + u2) * (gx * d[2] + gy * d[3])
          u.g[1] = u.g[1] + u1 * (gx * d[2] + gy * d[3])
          sink.x[p - 1] = sink.x[p - 1] - u1 * (1 + u2) * d[4] * gx -- d(m (0.3 - x))/dx = -m
          sink.x[n + p - 1] = sink.x[n + p - 1] - u1 * (1 + u2) * d[4] * gy
        end
      end
      return f
    end
    -- a world with 2 (unused) engine actuators carries the controller's 2 outputs to the Lua actuator
    local r = cq.robot { dim = 2 }
    local obs = cq.control.centroid_observer { groups = { tip }, fields = { "x", "v" } }
    local ctl = cq.control.mlp { inputs = 4, outputs = 2, hidden = { 6 }, activation = "tanh", seed = 2, scale = 2 }
    local w2 = cq.world { dim = 2, res = { 64, 64 }, dx = 1 / 64, dt = 2e-3, substeps = 2, gravity = { 0, -1 }, n = n,
      actuators = 2, precision = "f64", threads = 2, walls = { floor = { type = "sticky", thickness = 3 } } }
    for _, name in ipairs { "mass", "vol0", "E", "nu", "material" } do
      for p = 0, n - 1 do w2.params[name][p] = w.params[name][p] end
    end
    w2:commit()
    local R = cq.rollout { world = w2, steps = 40, controller = ctl, observer = obs, actuator = actuator,
      final = function(t, s) return t:index(t:centroid(s, "x", tip), 1) end }
    local s2 = w2:state()
    s2:copy_from(s0)
    local L = R:forward(s2)
    R:backward()
    local d, an = G.param_direction(ctl.params, 5)
    local fd = G.fd_params(ctl.params, d, function() return R:forward(s2) end, 1e-5)
    local rel = math.abs(an - fd) / math.abs(fd)
    print(string.format("  Lua actuator: tip x %.5f; dL/dweights . d = %.10g (fd %.10g, rel %.1e)", L, an, fd, rel))
    assert.is_true(rel <= 1e-5)
  end)
end)
