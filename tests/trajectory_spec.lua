-- Running-loss accumulators (sum / max / min) with finite-difference gradient checks in float64, the recorded
-- trajectory of cq.rollout (against manual stepping), its CSV/JSON export, and PNG frames of 2D motion.
local cq = require "cq"
local ffi = require "ffi"
local control = require "cq.control"
local rollout = require "cq.rollout"
local frames = require "cq.frames"
local G = require "tests._grad"

local STEPS, PEAK = 24, 12

-- A closed-loop MLP rollout on the small test scene. The running loss has a bump in k (peak or dip at PEAK, 0.05
-- per step^2) plus state and actuation terms that change far less between neighbouring steps, so the arg-max /
-- arg-min step is unique and stays put under the finite-difference perturbations.
local function setup(accumulate, record)
  local w, s0 = G.scene { dim = 2, material = "neohookean", bc = "friction", substeps = 2, dt = 4e-3, threads = 1 }
  local all = {}
  for p = 1, w.n do all[p] = p end
  local obs = control.centroid_observer { groups = { all }, fields = { "x", "v" } }
  local ctl = control.mlp { inputs = obs.size(2), outputs = 2, hidden = { 6 }, activation = "tanh", seed = 4,
    scale = 3 }
  local sign = accumulate == "min" and -1 or 1
  local R = rollout.new { world = w, steps = STEPS, controller = ctl, observer = obs, accumulate = accumulate,
    record = record,
    final = function(t, s) return t:index(t:centroid(s, "x"), 1) end,
    running = function(t, s, u, k)
      local c = t:centroid(s, "x")
      local h = t:add(t:index(c, accumulate == "min" and 2 or 1), t:scale(t:dot(u, u), 0.05))
      return t:add(h, t:const({ -sign * 0.05 * (k - PEAK) ^ 2 }))
    end }
  return w, s0, ctl, R
end

-- Relative error of dL/d(weights) and (unless weights_only) dL/dv0 along fixed directions against central
-- differences.
local function grad_errors(w, s0, ctl, R, weights_only)
  R:forward(s0)
  local m = R:backward()
  local d, an = G.param_direction(ctl.params, 7)
  local gv0 = 0
  for i = 0, 2 * w.n - 1 do gv0 = gv0 + m.grad.v[i] * G.prand(i, 9) end
  local fd = G.fd_params(ctl.params, d, function() return R:forward(s0) end, 1e-4)
  if weights_only then return math.abs(an - fd) / math.abs(fd) end
  local fdv = G.derivative(function(h)
    local s = s0:copy()
    for i = 0, 2 * w.n - 1 do s.v[i] = s.v[i] + h * G.prand(i, 9) end
    return R:forward(s)
  end, 1e-5)
  return math.abs(an - fd) / math.abs(fd), math.abs(gv0 - fdv) / math.abs(fdv), an, fd, gv0, fdv
end

describe("running-loss accumulators", function()
  for _, acc in ipairs { "max", "min" } do
    it(acc .. ": loss = final + " .. acc .. "_k h_k, gradients match central differences (float64)", function()
      local w, s0, ctl, R = setup(acc)
      local L = R:forward(s0)
      local tr = R:trajectory()
      local best, arg = nil, nil
      for k = 0, STEPS - 1 do
        local h = tr:running(k)
        if not best or (acc == "max" and h > best) or (acc == "min" and h < best) then best, arg = h, k end
      end
      assert.are.equal(PEAK, arg)
      assert.are.equal(PEAK, R.argbest)
      assert.are.equal(tr.final + best, L)
      assert.are.equal(L, tr.loss)
      local rel, relv, an, fd, gv, fdv = grad_errors(w, s0, ctl, R)
      print(string.format("  %s: loss %.8f (arg %s at k = %d); dL/dW.d %.10g (fd %.10g, rel %.1e); dL/dv0.d %.10g " ..
        "(fd %.10g, rel %.1e)", acc, L, acc, arg, an, fd, rel, gv, fdv, relv))
      assert.is_true(rel <= 1e-5 and relv <= 1e-5)
    end)
  end

  it("sum (the default) adds every h_k; a bad accumulate names the option, the choices and the value",
    function()
      local w, s0, ctl, R = setup(nil)
      local L = R:forward(s0)
      local tr = R:trajectory()
      local s = 0
      for k = 0, STEPS - 1 do s = s + tr:running(k) end
      assert.are.equal(s + tr.final, L)
      assert.is_nil(R.argbest)
      local rel = grad_errors(w, s0, ctl, R, true)
      print(string.format("  sum: loss %.8f; dL/dW.d rel %.1e", L, rel))
      assert.is_true(rel <= 1e-5)
      local ok, err = pcall(rollout.new, { world = w, steps = 2, controller = ctl, final = function() end,
        accumulate = "mean" })
      assert.is_false(ok)
      assert.truthy(tostring(err):find('cq.rollout: accumulate must be one of sum, max, min (got "mean")', 1, true))
      ok, err = pcall(rollout.new, { world = w, steps = 2, controller = ctl, final = function() end, record = { "C" } })
      assert.truthy(tostring(err):find('record[1] must be one of x, v, F (got "C")', 1, true))
    end)
end)

describe("trajectory", function()
  it("holds the states, actuations and running losses that manual stepping reproduces", function()
    local w, s0, _, R = setup("max", { "x", "v" })
    R:forward(s0)
    local tr = R:trajectory()
    assert.are.equal(STEPS, tr.steps)
    local s, worst = s0:copy(), 0
    for k = 0, STEPS do
      local x, v = tr:x(k), tr:v(k)
      for p = 1, w.n do
        local xs, vs = s:get("x", p), s:get("v", p)
        for a = 1, 2 do worst = math.max(worst, math.abs(x[p][a] - xs[a]), math.abs(v[p][a] - vs[a])) end
      end
      assert.are.same(s:get("x", 7), tr:x(k, 7))
      local c, cs = tr:centroid(k), s:mean("x")
      assert.is_true(math.abs(c[1] - cs[1]) < 1e-14 and math.abs(c[2] - cs[2]) < 1e-14)
      if k < STEPS then
        local t = cq.tape()
        local u, h = tr:u(k), nil
        assert.are.equal(2, #u)
        h = R.running(t, s, t:const(u), k).v[0]
        assert.is_true(math.abs(h - tr:running(k)) < 1e-14)
        w:step(s, u)
      end
    end
    print(string.format("  %d steps: max |trajectory - manual stepping| = %.1e", STEPS, worst))
    assert.is_true(worst <= 1e-13)
    assert.are.equal(STEPS + 1, #tr:centroids())
    assert.are.same(tr:centroid(3), tr:centroids()[4])
  end)

  it("keeps its buffers after the next forward; record = false keeps only u and h", function()
    local w, s0, _, R = setup("sum")
    R:forward(s0)
    local tr = R:trajectory()
    local x5 = tr:x(5, 1)
    local s1 = s0:copy()
    for i = 0, 2 * w.n - 1 do s1.v[i] = s1.v[i] + 0.1 end
    R:forward(s1)
    assert.are.same(x5, tr:x(5, 1))
    assert.are_not.same(x5, R:trajectory():x(5, 1))
    local ok, err = pcall(function() return tr:v(1) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('field "v" was not recorded', 1, true))
    local _, _, _, R0 = setup("sum", false)
    R0:forward(s0)
    local t0 = R0:trajectory()
    assert.are.same(tr:u(3), t0:u(3))
    assert.is_false(pcall(function() return t0:x(0) end))
  end)

  it("exports CSV and JSON files that read back to the same numbers", function()
    local w, s0, _, R = setup("max", true)
    R:forward(s0)
    local tr = R:trajectory()
    local dir = os.tmpname()
    os.remove(dir)
    local files = tr:export(dir .. "/sub/run")
    assert.are.equal(4, #files)
    local function rows(path)
      local out, head = {}, nil
      for line in io.lines(path) do
        local r = {}
        for f in line:gmatch("[^,]+") do r[#r + 1] = f end
        if not head then head = r else for i = 1, #r do r[i] = tonumber(r[i]) end out[#out + 1] = r end
      end
      return head, out
    end
    local head, act = rows(dir .. "/sub/run_actuation.csv")
    assert.are.same({ "k", "time", "u1", "u2", "running" }, head)
    assert.are.equal(STEPS, #act)
    for k = 0, STEPS - 1 do
      assert.are.same({ k, tr:time(k), tr:u(k)[1], tr:u(k)[2], tr:running(k) }, act[k + 1])
    end
    for _, field in ipairs { "x", "v" } do
      local hx, xs = rows(dir .. "/sub/run_" .. field .. ".csv")
      assert.are.equal(2 + 2 * w.n, #hx)
      assert.are.equal(field == "x" and "y3" or "vy3", hx[2 + 6])
      assert.are.equal(STEPS + 1, #xs)
      for k = 0, STEPS do
        local pts = tr[field](tr, k)
        for p = 1, w.n do
          assert.are.equal(pts[p][1], xs[k + 1][2 + 2 * p - 1])
          assert.are.equal(pts[p][2], xs[k + 1][2 + 2 * p])
        end
      end
    end
    local meta = io.open(dir .. "/sub/run_meta.json"):read("*a")
    assert.are.equal(tr.loss, tonumber(meta:match('"loss": ([^,]+)')))
    assert.are.equal(STEPS, tonumber(meta:match('"steps": (%d+)')))
    assert.are.equal(PEAK, tonumber(meta:match('"argbest": (%d+)')))
    assert.truthy(meta:find('"accumulate": "max"', 1, true))
    for _, f in ipairs(files) do os.remove(f) end
    os.remove(dir .. "/sub"); os.remove(dir)
  end)
end)

describe("cq.frames", function()
  local function ihdr(path)
    local f = assert(io.open(path, "rb"))
    local b = f:read(33)
    f:close()
    local function u32(i) return ((b:byte(i) * 256 + b:byte(i + 1)) * 256 + b:byte(i + 2)) * 256 + b:byte(i + 3) end
    return b:sub(1, 8), b:sub(13, 16), u32(17), u32(21), b:byte(25), b:byte(26)
  end

  it("writes PNG frames with the right header and size, and particles drawn where they are", function()
    local w, s0, _, R = setup("max")
    R:forward(s0)
    local tr = R:trajectory()
    local dir = os.tmpname()
    os.remove(dir)
    local target = { 0.6, 0.9 }
    local count = cq.frames.write { trajectory = tr, dir = dir, every = 10, width = 200, targets = { target } }
    assert.are.equal(4, count) -- k = 0, 10, 20, 24 (the last step is always written)
    for i = 0, count - 1 do
      local sig, chunk, wd, ht, depth, ctype = ihdr(string.format("%s/frame_%04d.png", dir, i))
      assert.are.equal("\137PNG\r\n\26\n", sig)
      assert.are.equal("IHDR", chunk)
      assert.are.same({ 200, 200, 8, 2 }, { wd, ht, depth, ctype }) -- 20 x 20 cells: square; 8-bit RGB
    end
    -- the last frame read back equals the rendered state; particle pixels are coloured, empty space is white
    local img = frames.read(dir .. "/frame_0003.png")
    local ref = frames.render_state { world = w, x = tr:view("x", STEPS), u = tr:u(STEPS - 1), width = 200,
      targets = { target } }
    local same = true
    for i = 0, img.w * img.h * 3 - 1 do if img.rgb[i] ~= ref.rgb[i] then same = false break end end
    assert.is_true(same)
    local drawn = 0
    for p = 1, w.n do
      local x = tr:x(STEPS, p)
      local i, j = ref:to_pixel(x[1], x[2])
      local r, g, b = img:pixel(i, j)
      if not (r == 255 and g == 255 and b == 255) then drawn = drawn + 1 end
    end
    assert.are.equal(w.n, drawn)
    local r, g, b = img:pixel(ref:to_pixel(target[1], target[2]))
    assert.are.same(frames.TARGET, { r, g, b })
    r, g, b = img:pixel(ref:to_pixel(0.9, 0.6)) -- empty interior
    assert.are.same({ 255, 255, 255 }, { r, g, b })
    r, g, b = img:pixel(ref:to_pixel(0.6, 0.5 / 16)) -- inside the floor band
    assert.are.same(frames.WALL, { r, g, b })
    for i = 0, count - 1 do os.remove(string.format("%s/frame_%04d.png", dir, i)) end
    os.remove(dir)
  end)

  it("colours actuated particles by u (blue = contract, red = expand) and reports bad input clearly", function()
    local w, s0 = G.scene { dim = 2, material = "neohookean", bc = "friction", threads = 1 }
    local function color_of(u, p)
      local img = frames.render_state { world = w, state = s0, u = u, width = 160, radius = 0 }
      local x = s0:get("x", p)
      return { img:pixel(img:to_pixel(x[1], x[2])) }
    end
    -- particle 3: act_id 0 (actuator 1); particle 2: passive
    assert.are.same(frames.CONTRACT, color_of({ 1, 0 }, 3))
    assert.are.same(frames.EXPAND, color_of({ -1, 0 }, 3))
    assert.are.same(frames.PASSIVE, color_of({ 1, 1 }, 2))
    local ok, err = pcall(frames.render_state, { world = w, state = s0, camera = { azimuth = 10 } })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("camera is an option of 3D frames", 1, true))
    local file = os.tmpname()
    local tr = cq.trajectory { world = w, steps = 1 }
    ok, err = pcall(frames.write, { trajectory = tr, dir = file .. "/frames" })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cq.frames.write: cannot create directory " .. file .. "/frames", 1, true))
    ok, err = pcall(frames.write, { trajectory = tr, dir = file .. "/never", every = 0 })
    assert.truthy(tostring(err):find("cq.frames.write: every must be >= 1 (got 0)", 1, true))
    os.remove(file)
  end)
end)
