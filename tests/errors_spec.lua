-- Bad input gives clear Lua errors (naming the option, the valid range and the value), never a crash.
--
-- Run: build/bin/cqlua tests/run.lua tests/errors_spec.lua
-- (or: busted --lua=luajit --lpath='lua/?.lua;lua/?/init.lua' tests/errors_spec.lua)
package.loaded["cq._paths"] = package.loaded["cq._paths"] or { lib = "build/lib" }
local cq = require "cq"
local E = require "tests._errors"
local err_of, has = E.err_of, E.has

-- A committed 2D world with n particles in a small block around (0.5, 0.5), and its state.
local function small_scene(opts)
  opts = opts or {}
  local npa = opts.npa or 6
  local dx = 1 / 64
  local h = dx / 2
  local w = cq.world { dim = 2, res = opts.res or 64, dx = dx, dt = 1e-3, n = npa * npa, n_actuators = opts.actuators,
    gravity = { 0, -9.8 } }
  w:fill("vol0", h * h)
  w:fill("mass", h * h)
  w:fill("E", opts.E or 100)
  w:fill("nu", 0.3)
  w:commit()
  local s = w:state()
  local p = 0
  for i = 0, npa - 1 do
    for j = 0, npa - 1 do
      p = p + 1
      s:set("x", p, { 0.45 + (i + 0.5) * h, 0.4 + (j + 0.5) * h })
    end
  end
  return w, s
end

-- Runs Lua code in a child cqlua process (so a crash cannot take the test runner down); returns output, exit code.
local function run_child(code)
  local paths = package.loaded["cq._paths"] or {}
  local interp = paths.exe or "luajit"
  local pre = string.format("package.path = %q\npackage.loaded['cq._paths'] = package.loaded['cq._paths'] or " ..
    "{ lib = %q }\n", package.path, paths.lib or "build/lib")
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write(pre, code)
  f:close()
  local pipe = assert(io.popen(string.format("timeout 60 %q %q 2>&1; echo \"rc=$?\"", interp, script)))
  local out = pipe:read("*a")
  pipe:close()
  os.remove(script)
  local rc = tonumber(out:match("rc=(%d+)%s*$"))
  print(out)
  return out, rc
end

describe("cq.world options", function()
  it("dim = 4", function()
    has(err_of(cq.world, { dim = 4, n = 1 }), "dim", "[2, 3]", "4")
  end)
  it("res with the wrong length", function()
    has(err_of(cq.world, { dim = 2, res = { 64, 64, 64 }, n = 1 }), "res", "2 numbers", "3")
    has(err_of(cq.world, { dim = 3, res = { 16, 16 }, n = 1 }), "res", "3 numbers", "2")
  end)
  it("res too small", function()
    has(err_of(cq.world, { res = { 64, 3 }, n = 1 }), "res[2]", "[5, 65536]", "3")
  end)
  it("dx = 0", function()
    has(err_of(cq.world, { dx = 0, n = 1 }), "dx", "0")
    has(err_of(cq.world, { dx = -0.5, n = 1 }), "dx", "-0.5")
  end)
  it("dt = -1 names dt, '> 0' and the value", function()
    has(err_of(cq.world, { dt = -1, n = 1 }), "dt", "> 0", "-1")
  end)
  it("substeps = 0 and substeps = 1.5", function()
    has(err_of(cq.world, { substeps = 0, n = 1 }), "substeps", "0")
    has(err_of(cq.world, { substeps = 1.5, n = 1 }), "substeps", "integer", "1.5")
  end)
  it("n missing or 0", function()
    has(err_of(cq.world, {}), "n must be an integer", "nil")
    has(err_of(cq.world, { n = 0 }), "n must be >= 1", "0")
  end)
  it("unknown option name lists the known options", function()
    local msg = err_of(cq.world, { n = 1, gravitty = { 0, -9.8 } })
    has(msg, "unknown option 'gravitty'", "known:", "gravity", "dt", "dx", "res", "walls", "substeps")
  end)
  it("options must be a table", function()
    has(err_of(cq.world, 5), "options table", "5")
  end)
  it("wrong types: res = 'abc', gravity = {1}, dt = 'x', precision = 'f16'", function()
    has(err_of(cq.world, { n = 1, res = "abc" }), "res", "abc")
    has(err_of(cq.world, { n = 1, gravity = { 1 } }), "gravity", "2 numbers")
    has(err_of(cq.world, { n = 1, gravity = { 1, "down" } }), "gravity[2]", "number", "down")
    has(err_of(cq.world, { n = 1, dt = "x" }), "dt", "number", "x")
    has(err_of(cq.world, { n = 1, precision = "f16" }), "precision", "f32, f64", "f16")
  end)
  it("walls with an unknown key", function()
    has(err_of(cq.world, { n = 1, walls = { middle = { type = "slip" } } }), "walls", "floor", "middle")
    -- back/front only exist in 3D
    has(err_of(cq.world, { n = 1, dim = 2, walls = { back = { type = "slip" } } }), "walls", "back")
    has(err_of(cq.world, { n = 1, walls = { floor = { type = "slip", stickyness = 1 } } }),
      "unknown option 'stickyness'", "friction", "thickness", "type")
    has(err_of(cq.world, { n = 1, walls = { floor = "slip" } }), "walls.floor", "must be a table", "slip")
  end)
  it("wall type 'glue'", function()
    has(err_of(cq.world, { n = 1, walls = { floor = { type = "glue" } } }), "type", "sticky", "slip", "glue")
  end)
  it("friction -1", function()
    has(err_of(cq.world, { n = 1, walls = { floor = { type = "friction", friction = -1 } } }), "friction", "-1")
    -- also caught (by the engine) when the wall type is not "friction"
    has(err_of(cq.world, { n = 1, walls = { floor = { type = "slip", friction = -1 } } }), "friction", ">= 0", "-1")
  end)
  it("option errors point at the caller's line, not into lua/cq", function()
    -- (no tail calls here: a tail call removes the caller's frame from the position)
    local msg = err_of(function() local w = cq.world { dim = 4, n = 1 }; return w end)
    has(msg, "errors_spec.lua:", "dim")
    assert.is_falsy(msg:find("cq/init.lua", 1, true), "position is inside the library")
    msg = err_of(function() local w = cq.world { n = 1, walls = { floor = { type = "glue" } } }; return w end)
    has(msg, "errors_spec.lua:", "glue")
  end)
  it("wall thickness out of range", function()
    has(err_of(cq.world, { n = 1, walls = { floor = { type = "slip", thickness = 40 } } }), "thickness", "[1, 32]",
      "40")
    has(err_of(cq.world, { n = 1, walls = { floor = { type = "slip", thickness = 0 } } }), "thickness", "0")
  end)
end)

describe("per-particle parameters at commit", function()
  -- world of 3 particles with 2 actuators; particle 2 gets the bad value
  local function commit_err(name, value)
    local w = cq.world { n = 3, n_actuators = 2 }
    w:fill(name, value, 2, 2)
    return err_of(w.commit, w)
  end
  it("negative E", function()
    has(commit_err("E", -5), "commit", "particle 2", "E", "> 0", "-5")
  end)
  it("NaN E", function()
    has(commit_err("E", 0 / 0), "particle 2", "E", "> 0", "nan")
  end)
  it("nu = 0.5 and nu = 0.7", function()
    has(commit_err("nu", 0.5), "particle 2", "nu", "(-1, 0.5)", "0.5")
    has(commit_err("nu", 0.7), "particle 2", "nu", "(-1, 0.5)", "0.7")
    has(commit_err("nu", -1), "particle 2", "nu", "(-1, 0.5)", "-1")
  end)
  it("mass 0", function()
    has(commit_err("mass", 0), "particle 2", "mass", "> 0", "0")
  end)
  it("vol0 -1", function()
    has(commit_err("vol0", -1), "particle 2", "vol0", "> 0", "-1")
  end)
  it("inc_p = 1", function()
    has(commit_err("inc_p", 1), "particle 2", "inc_p", "0", ">= 2", "1")
  end)
  -- integer parameters are refused by world:fill itself, at the caller's line (a C int field would store 0.5 as 0)
  local function fill_err(name, value)
    local w = cq.world { n = 3, n_actuators = 2 }
    return err_of(w.fill, w, name, value, 2, 2)
  end
  it("act_id out of range", function()
    has(fill_err("act_id", 2), "world:fill: act_id", "[0, 1]", "(got 2)")
    has(fill_err("act_id", -2), "world:fill: act_id", "-1", "(got -2)")
    has(fill_err("act_id", 0.5), "world:fill: act_id", "(got 0.5)")
  end)
  it("material 99", function()
    has(fill_err("material", 99), "world:fill: material", "corotated", "neohookean", "[0, 7]", "(got 99)")
    has(err_of(function() cq.world { n = 3 }:fill("material", "jelly") end), "material", "jelly")
  end)
  it("unknown parameter name in fill", function()
    has(err_of(function() cq.world { n = 3 }:fill("youngs", 5) end), "particle parameter", "youngs")
  end)
  it("a fixed parameter lets the same world commit", function()
    local w = cq.world { n = 3 }
    w:fill("E", -5, 2, 2)
    err_of(w.commit, w)
    w:fill("E", 7, 2, 2)
    w:commit()
    print("committed after fix: E[2] =", w.params.E[1])
    assert.are.equal(7, w.params.E[1])
    assert.is_true(w.committed)
  end)
end)

describe("stability limit", function()
  it("a stiff material with a large dt fails commit and suggests substeps", function()
    local w = cq.world { n = 4, dt = 1e-2 }
    w:fill("E", 1e6)
    local limit = w:stable_dt()
    print("stable_dt =", limit)
    assert.is_true(limit < 1e-4)
    local msg = err_of(w.commit, w)
    has(msg, "dt", "stable limit", "substeps", string.format("%g", limit))
    -- and the suggested number of substeps indeed commits
    local k = tonumber(msg:match("substeps %(>= (%d+)%)"))
    assert.is_truthy(k, "no substep count in the message")
    local w2 = cq.world { n = 4, dt = 1e-2, substeps = k }
    w2:fill("E", 1e6)
    w2:commit()
    print("suggested substeps", k, "commit ok, dt_sub =", 1e-2 / k)
    assert.is_true(1e-2 / k <= limit)
  end)
end)

describe("particles outside the grid", function()
  it("world:step names the particle and the valid range (x = -0.1)", function()
    local w, s = small_scene()
    s:set("x", 5, { -0.1, 0.5 })
    local msg = err_of(w.step, w, s)
    has(msg, "world:step", "step 1", "before substep 1", "particle 5", "-0.1", "left the grid", "[0.0078125, 0.976562)")
    assert.are.equal("outside_grid", w:blowup().check)
    -- the world is still usable once the particle is back inside
    s:set("x", 5, { 0.5, 0.5 })
    w:step(s)
    print("after the fix: substep", s:substep())
    assert.are.equal(1, s:substep())
  end)
  it("beyond the upper edge", function()
    local w, s = small_scene()
    s:set("x", 7, { 0.5, 0.99 })
    has(err_of(w.step, w, s), "particle 7", "0.99", "left the grid", "0.976562")
  end)
  it("memo:step reports it too", function()
    local w, s = small_scene()
    s:set("x", 3, { 1.5, 0.5 })
    local m = w:memo { steps = 4 }
    m:begin(s)
    has(err_of(m.step, m), "memo:step", "particle 3", "1.5", "left the grid")
    assert.are.equal(0, m:recorded())
  end)
  it("a particle that moves out during the run is reported at the substep where it left, with its step number", function()
    local w, s = small_scene()
    s:set("v", 2, { 0, -10 })         -- a strong downward kick: reaches y < 0.5 dx after a few steps
    s:set("x", 2, { 0.5, 0.04 })
    local steps, msg = 0, nil
    for _ = 1, 20 do
      local ok, e = pcall(w.step, w, s)
      if not ok then msg = tostring(e) break end
      steps = steps + 1
    end
    print(msg, "(after " .. steps .. " good steps)")
    assert.is_truthy(msg)
    assert.is_true(steps >= 1)
    -- steps are numbered from 1: the (steps + 1)-th step moved it out, found right after its substep
    has(msg, "particle 2", "step " .. (steps + 1) .. " (after substep 1", "left the grid")
    local b = w:blowup()
    assert.are.same({ "outside_grid", 2, steps + 1 }, { b.check, b.particle, b.step })
  end)
  it("on a non-square grid the range quoted is the one of the offending axis", function()
    -- res = {64, 32}: y must stay in [0.5 dx, 30.5 dx) = [0.0078125, 0.476562)
    local w, s = small_scene({ res = { 64, 32 } })
    s:set("x", 1, { 0.3, 0.48 })
    local msg = err_of(w.step, w, s)
    has(msg, "particle 1", "left the grid", "coordinate 2", "0.476562")
  end)
end)

describe("blow-ups are caught at the substep where they happen, naming the check and the particle", function()
  it("a NaN velocity: non-finite, at the step it is given to", function()
    local w, s = small_scene()
    for _ = 1, 3 do w:step(s) end
    s:set("v", 4, { 0 / 0, 0 })
    local msg = err_of(w.step, w, s)
    has(msg, "blow-up at step 4", "particle 4", "non-finite")
    assert.are.equal("non_finite", w:blowup().check)
    -- memo:step too, numbering its own steps from 1
    local m = w:memo { steps = 2 }
    m:begin(s)
    has(err_of(m.step, m), "memo:step", "blow-up at step 1", "particle 4")
  end)
  it("an infinite position is a blow-up too", function()
    local w, s = small_scene()
    s:set("x", 1, { math.huge, 0.5 })
    has(err_of(w.step, w, s), "blow-up", "particle 1", "non-finite")
  end)
  it("an inverted element (J <= 0) is named right after the substep that produced it", function()
    -- a small block converging along x at rate k: APIC carries the affine field, so one substep gives
    -- F_xx = 1 - k dt = -0.5 < 0 for every particle (while |v| dt < dx); the first of them is named
    local w, s = small_scene({ npa = 3 })
    local k, xc = 1500, s:mean("x")[1]
    for p = 1, w.n do
      local x = s:get("x", p)
      s:set("v", p, { -k * (x[1] - xc), 0 })
      s:set("C", p, { -k, 0, 0, 0 })
    end
    local msg = err_of(w.step, w, s)
    has(msg, "blow-up at step 1 (after substep 1", "particle 1", "J = det F", "<= 0", "inverted")
    local b = w:blowup()
    assert.are.same({ "inverted", 1, 1, 0 }, { b.check, b.particle, b.step, b.substep })
    assert.are.equal(1, s:substep()) -- the state is left after the failing substep
    assert.is_true(s:get("F", 1)[1] < 0)
  end)
  it("an inverted F given to a step is refused before its first substep", function()
    local w, s = small_scene()
    s:set("F", 9, { -0.9, 0, 0, 1 })
    has(err_of(w.step, w, s), "blow-up at step 1 (before substep 1", "particle 9", "J = det F = -0.9", "inverted")
    assert.are.equal(0, s:substep())
  end)
  it("a particle moving more than a cell in one substep is too fast", function()
    local w, s = small_scene({ npa = 1 })
    s:set("v", 1, { 30, 0 }) -- |v| dt = 0.03 > dx = 1/64
    local msg = err_of(w.step, w, s)
    has(msg, "blow-up at step 1", "particle 1", "moved more than one cell", "|v| dt", "dx")
    assert.are.equal("too_fast", w:blowup().check)
  end)
  it("E raised after commit past the stable limit stops before the next step, naming the particle", function()
    local w, s = small_scene({ npa = 10 })
    w:step(s)
    w:fill("E", 1e9, 7, 7)
    local msg = err_of(w.step, w, s)
    has(msg, "world:step", "step 2", "above the stable limit", "particle 7", "E = 1e+09", "substeps (>=")
    local b = w:blowup()
    assert.are.same({ "unstable_dt", 7, 2 }, { b.check, b.particle, b.step })
    assert.are.equal(1, s:substep()) -- nothing ran
    -- the process survives and a fresh world works: free fall of the COM is exact
    local w2, s2 = small_scene()
    local v0 = s2:mean("v")[2]
    for _ = 1, 10 do w2:step(s2) end
    local vy = s2:mean("v")[2]
    print("fresh world after the blow-up: mean vy after 10 steps =", vy)
    assert.is_true(math.abs(vy - (v0 - 10 * 9.8 * 1e-3)) < 1e-12)
  end)
  it("names the robot group of the failing particle", function()
    local robot = cq.robot { dim = 2 }
    robot:box { offset = { 0.3, 0.3 }, size = { 0.1, 0.1 }, spacing = 1 / 64, name = "body" }
    local leg = robot:box { offset = { 0.3, 0.2 }, size = { 0.05, 0.1 }, spacing = 1 / 64, name = "leg" }
    local w, s = robot:world { res = 64, dt = 1e-3 }
    s:set("F", leg.first + 2, { -1, 0, 0, 1 })
    has(err_of(w.step, w, s), "inverted", "particle " .. (leg.first + 2), "robot group 2 'leg'")
    assert.are.equal(leg.first + 2, w:blowup().particle)
  end)
end)

describe("parameters written after commit are validated before the next step", function()
  it("a negative E or nu = 0.7 is a clear error at the next step; fixed, the world steps again", function()
    local w, s = small_scene()
    w:step(s)
    w:fill("E", -10, 3, 3)
    has(err_of(w.step, w, s), "world:step", "step 2", "particle 3", "E (Young's modulus) must be > 0", "-10")
    w:fill("E", 100, 3, 3)
    w:fill("nu", 0.7)
    has(err_of(w.step, w, s), "particle 1", "nu (Poisson's ratio) must be in (-1, 0.5)", "0.7")
    local m = w:memo { steps = 2 }
    m:begin(s)
    has(err_of(m.step, m), "memo:step", "nu (Poisson's ratio)")
    w:fill("nu", 0.3)
    w:step(s)
    assert.are.equal(2, s:substep())
  end)
  it("parameter views are read-only: writing one is refused, world:fill is the way", function()
    local w = small_scene()
    local ok, e = pcall(function() w.params.E[0] = 5 end)
    print(e)
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("constant", 1, true))
    has(err_of(function() w.params.E = 5 end), "world.params", "read-only", "world:fill")
  end)
  it("backward after a parameter changed since the recording is refused", function()
    local w, s = small_scene()
    local m = w:memo { steps = 2 }
    m:begin(s)
    m:step()
    w:fill("E", 120)
    has(err_of(m.backward, m), "memo:backward_begin", "changed after", "record again")
  end)
end)

describe("API misuse", function()
  it("world:step before commit", function()
    local w = cq.world { n = 2 }
    has(err_of(w.step, w, w:state()), "step", "commit")
    has(err_of(w.memo, w, { steps = 2 }), "memo", "commit")
  end)
  it("world:memo with bad options", function()
    local w = small_scene()
    has(err_of(w.memo, w, { steps = 0 }), "steps", "0")
    has(err_of(w.memo, w, { step = 3 }), "unknown option 'step'", "steps")
  end)
  it("memo:step past its capacity", function()
    local w, s = small_scene()
    local m = w:memo { steps = 2 }
    m:begin(s)
    m:step()
    m:step()
    has(err_of(m.step, m), "memo is full", "2 steps")
    assert.are.equal(2, m:recorded())
  end)
  it("memo:backward_step at position 0, and backward before any step", function()
    local w, s = small_scene()
    local m = w:memo { steps = 2 }
    m:begin(s)
    has(err_of(m.backward_begin, m), "backward", "nothing recorded")
    m:step()
    m:step()
    m:backward_begin()
    assert.are.equal(1, m:backward_step())
    assert.are.equal(0, m:backward_step())
    has(err_of(m.backward_step, m), "backward", "already back at the initial state")
    assert.are.equal(0, m:position())
  end)
  it("world:step with u of the wrong length or with non-numbers", function()
    local w, s = small_scene({ actuators = 2 })
    has(err_of(w.step, w, s, { 1 }), "u must be a table of 2")
    has(err_of(w.step, w, s, { 1, 2, 3 }), "u must be a table of 2")
    has(err_of(w.step, w, s, { 1, "a" }), "u[2]", "number", "a")
    has(err_of(w.step, w, s, 5), "u must be a table of 2")
    local m = w:memo { steps = 2 }
    m:begin(s)
    has(err_of(m.step, m, { 1 }), "u must be a table of 2")
    has(err_of(m.step, m, { 1, 0 / 0 }), "step 1", "u[2] (actuator 2)", "not finite")
    assert.are.equal(0, s:substep())
  end)
  it("a state of another world with a different particle count", function()
    local w = small_scene()
    local other = cq.world { n = 5 }
    has(err_of(w.step, w, other:state()), "s must be a state of a world with 36 particles in 2D")
  end)
  it("a released world", function()
    local w, s = small_scene()
    w:release()
    has(err_of(w.step, w, s), "used after release")
    has(err_of(w.state, w), "used after release")
    has(err_of(w.commit, w), "used after release")
    has(err_of(w.memo, w, { steps = 1 }), "used after release")
    print(tostring(w))
    assert.are.equal("cq.world (released)", tostring(w))
    w:release() -- twice is harmless
  end)
  it("set_actuator with bad arguments", function()
    local w = cq.world { n = 2, n_actuators = 2 }
    has(err_of(w.set_actuator, w, 3, "stress"), "actuator", "[1, 2]", "3")
    has(err_of(w.set_actuator, w, 1, "push"), "kind", "stress, force", "push")
  end)
end)

describe("misuse that must not crash the process (checked in a child process)", function()
  it("memo:step after its world was released gives an error", function()
    local out, rc = run_child([[
      local cq = require "cq"
      local w = cq.world { n = 3 }
      w:commit()
      local s = w:state()
      for p = 1, 3 do s:set("x", p, { 0.5, 0.5 }) end
      local m = w:memo { steps = 4 }
      m:begin(s)
      m:step()
      w:release()
      collectgarbage()
      local ok, e = pcall(m.step, m)
      print("STEP", ok, e)
      ok, e = pcall(m.backward, m)
      print("BACKWARD", ok, e)
      print("SURVIVED")
    ]])
    assert.are.equal(0, rc)
    has(out, "SURVIVED", "STEP\tfalse", "BACKWARD\tfalse")
    assert.is_truthy(out:match("STEP\tfalse\t[^\n]*used after release"), "memo:step error does not say it was used after release")
  end)
  it("a state view of a released memo gives an error, not a read of freed memory", function()
    local out, rc = run_child([[
      local cq = require "cq"
      local w = cq.world { n = 3 }
      w:commit()
      local s = w:state()
      for p = 1, 3 do s:set("x", p, { 0.5, 0.5 }) end
      local m = w:memo { steps = 4 }
      m:begin(s)
      local view = m.state
      m:release()
      collectgarbage()
      print("GET", pcall(view.get, view, "x", 1))
      print("SET", pcall(view.set, view, "x", 1, { 0.5, 0.5 }))
      print("MEAN", pcall(view.mean, view))
      print("SURVIVED")
    ]])
    assert.are.equal(0, rc)
    has(out, "SURVIVED", "GET	false", "SET	false", "MEAN	false", "used after release")
  end)
  it("a released memo gives an error, not a segfault", function()
    local out, rc = run_child([[
      local cq = require "cq"
      local w = cq.world { n = 3 }
      w:commit()
      local s = w:state()
      for p = 1, 3 do s:set("x", p, { 0.5, 0.5 }) end
      local m = w:memo { steps = 4 }
      m:begin(s)
      m:release()
      print("STEP", pcall(m.step, m))
      print("BEGIN", pcall(m.begin, m, s))
      print("SURVIVED")
    ]])
    assert.are.equal(0, rc)
    has(out, "SURVIVED", "STEP\tfalse", "BEGIN\tfalse")
  end)
  it("world:fill with a range past the particle count gives an error", function()
    local out, rc = run_child([[
      local cq = require "cq"
      local w = cq.world { n = 3 }
      print("FILL", pcall(w.fill, w, "E", 5, 1, 100000))
      print("SURVIVED")
    ]])
    assert.are.equal(0, rc)
    has(out, "SURVIVED", "FILL\tfalse")
  end)
end)

describe("Lame parameters", function()
  it("fill_lame converts mu, lambda to E, nu and checks its arguments", function()
    local w = cq.world { n = 1 }
    w:fill_lame(10, 10)
    assert.is_true(math.abs(w.params.E[0] - 25) < 1e-12 and math.abs(w.params.nu[0] - 0.25) < 1e-12)
    local ok, msg = pcall(w.fill_lame, w, -1, 10)
    print(msg)
    assert.is_false(ok)
    assert.truthy(msg:find("mu must be > 0", 1, true))
  end)
end)

---------------------------------------------------------------- argument checks of every public method (issue 3)
-- Each wrong argument gives "<where>: <option> must be <range/type> (got <value>)", never an obscure Lua error or
-- an out-of-bounds FFI access. `at_caller` checks that the error position is this file, not inside lua/cq.
-- A double[?] array of n zeros.
local function ffi_doubles(n) return require("ffi").new("double[?]", n) end

local function at_caller(msg)
  has(msg, "errors_spec.lua:")
  assert.is_falsy(msg:find("lua/cq/", 1, true), "position is inside the library: " .. msg)
end

describe("world methods: argument checks", function()
  it("set_node_bcs: node index out of range, wrong types, unknown option", function()
    local w = cq.world { n = 2, res = 16 }
    has(err_of(w.set_node_bcs, w, { 0, 256 }, { { 0, 1 }, { 0, 1 } }), "nodes[2]", "[0, 255]", "256")
    has(err_of(w.set_node_bcs, w, { -1 }, { { 0, 1 } }), "nodes[1]", "-1")
    has(err_of(w.set_node_bcs, w, 5, {}), "nodes must be a list", "5")
    has(err_of(w.set_node_bcs, w, { 1 }, nil), "normals must be a list", "nil")
    has(err_of(w.set_node_bcs, w, { 1 }, { { 0, 1 } }, { typ = "slip" }), "unknown option 'typ'", "friction", "type")
    has(err_of(w.set_node_bcs, w, { 1 }, { { 0, 1 } }, { type = "friction", friction = -2 }), "friction", ">= 0", "-2")
  end)
  it("fill: value of the wrong type", function()
    local w = cq.world { n = 3 }
    has(err_of(w.fill, w, "E"), "E value must be a number", "nil")
    has(err_of(w.fill, w, "E", "stiff"), "E value must be a number", "stiff")
    has(err_of(w.fill, w, "mass", function(p) return p == 2 and "x" or 1 end), "mass function", "particle 2", "x")
    has(err_of(w.fill, w, "E", 5, 0, 2), "first", "[1, 3]", "0")
    at_caller(err_of(function() w:fill("E", "stiff"); return w end))
  end)
  it("step: state and force arguments", function()
    local w, s = small_scene()
    has(err_of(w.step, w, nil), "world:step", "s must be a cq state", "nil")
    has(err_of(w.step, w, { x = 1 }), "s must be a cq state")
    has(err_of(w.step, w, s, nil, { 1, 2 }), "force must be an FFI array of " .. 2 * w.n .. " doubles", "table")
    has(err_of(w.step, w, s, nil, ffi_doubles(5)), "force", "" .. 2 * w.n, "an array of 5")
    has(err_of(w.step, w, s, nil, nil, ffi_doubles(2 * w.n)), "stress", "" .. 4 * w.n, "an array of " .. 2 * w.n)
    assert.are.equal(0, s:substep())
  end)
  it("memo: begin, step, grad_u, backward", function()
    local w, s = small_scene({ actuators = 2 })
    local m = w:memo { steps = 2 }
    has(err_of(m.begin, m, nil), "memo:begin", "s0 must be a cq state", "nil")
    m:begin(s)
    has(err_of(m.step, m, ffi_doubles(1)), "u must be an FFI array of 2 doubles", "an array of 1")
    has(err_of(m.step, m, nil, ffi_doubles(3)), "memo:step", "force", "an array of 3")
    m:step({ 0.1, 0.2 })
    m:backward()
    has(err_of(m.grad_u, m, 3, 1), "memo:grad_u", "k (control step)", "[1, 2]", "3")
    has(err_of(m.grad_u, m, 0, 1), "k (control step)", "0")
    has(err_of(m.grad_u, m, 1, 3), "a (actuator)", "[1, 2]", "3")
    has(err_of(m.grad_u, m, 1, nil), "a (actuator)", "nil")
    has(err_of(m.backward, m, 5), "on_step must be nil or a function", "5")
    at_caller(err_of(function() local g = m:grad_u(1, 7); return g end))
    local w0, s0 = small_scene()
    local m0 = w0:memo { steps = 1 }
    m0:begin(s0)
    m0:step()
    has(err_of(m0.grad_u, m0, 1, 1), "no actuators", "1")
  end)
end)

describe("state methods: argument checks", function()
  it("get / set with a bad field or particle index", function()
    local w, s = small_scene()
    has(err_of(s.get, s, "y", 1), "state:get", "field must be one of x, v, C, F", "y")
    has(err_of(s.get, s, "x", 0), "state:get", "p must be in [1, " .. w.n .. "]", "0")
    has(err_of(s.get, s, "x", w.n + 1), "p must be in [1, " .. w.n .. "]", tostring(w.n + 1))
    has(err_of(s.get, s, "x", 1e9), "p", "1000000000")
    has(err_of(s.get, s, "v", 1.5), "p must be an integer", "1.5")
    has(err_of(s.set, s, "x", -3, { 0.5, 0.5 }), "state:set", "p", "-3")
    has(err_of(s.set, s, "x", 1, { 0.5, 0.5, 0.5 }), "values must be a table of 2 numbers", "a table of 3")
    has(err_of(s.set, s, "F", 1, { 1, 0 }), "values must be a table of 4 numbers", "a table of 2")
    has(err_of(s.set, s, "x", 1, { 0.5, "up" }), "values[2] must be a number", "up")
    has(err_of(s.set, s, "q", 1, { 0.5 }), "field must be one of x, v, C, F", "q")
    at_caller(err_of(function() local x = s:get("x", 0); return x end))
    -- nothing was written
    local x = s:get("x", 1)
    assert.is_true(x[1] > 0.4 and x[2] > 0.39)
  end)
  it("mean and copy_from", function()
    local w, s = small_scene()
    has(err_of(s.mean, s, "x", { 1, w.n + 5 }), "state:mean", "idx[2]", "[1, " .. w.n .. "]", tostring(w.n + 5))
    has(err_of(s.mean, s, "C"), "field must be x or v", "C")
    has(err_of(s.mean, s, "x", {}), "idx must be nil (all) or a non-empty list")
    local other = cq.world { n = 5 }:state()
    has(err_of(s.copy_from, s, other), "state:copy_from", "other must be a state of a world with " .. w.n)
    has(err_of(s.copy_from, s, nil), "other must be a cq state", "nil")
  end)
end)

describe("cq.tape: argument checks", function()
  local tape = require "cq.tape"
  it("param: n, rows, get / set indices", function()
    has(err_of(tape.param, 0), "cq.param", "n must be in [1, 134217728]", "0")
    has(err_of(tape.param, 6, 0, 4), "rows must be nil or a positive integer that divides n (6)", "4")
    has(err_of(tape.param, 2, "zero"), "init must be", "zero")
    local p = tape.param(3, 1)
    has(err_of(p.get, p, 0), "param:get", "i must be an integer in [1, 3]", "0")
    has(err_of(p.get, p, 4), "i must be an integer in [1, 3]", "4")
    has(err_of(p.set, p, 4, 1), "param:set", "[1, 3]", "4")
    has(err_of(p.set, p, 1, "a"), "x must be a number", "a")
  end)
  it("elementwise ops: wrong node types and size mismatches", function()
    local t = tape.new()
    local a, b = t:const({ 1, 2, 3 }), t:const({ 1, 2 })
    has(err_of(t.add, t, a, b), "cq.tape:add", "b must have 3 values (the size of a) or 1", "2")
    has(err_of(t.sub, t, a, nil), "cq.tape:sub", "b must be a tape node", "nil")
    has(err_of(t.mul, t, "x", a), "cq.tape:mul", "a must be a tape node", "x")
    has(err_of(t.dot, t, a, b), "cq.tape:dot", "b must have 3 values", "2")
    has(err_of(t.add, t, t:const(0), 1), "cq.tape:add", "both be empty or both non-empty", "sizes 0 and 1")
    has(err_of(t.tanh, t, {}), "cq.tape:tanh", "a must be a tape node")
    has(err_of(t.scale, t, a, "2"), "cq.tape:scale", "s must be a number", "2")
    has(err_of(t.sum, t, 3), "cq.tape:sum", "a must be a tape node", "3")
    has(err_of(t.norm, t, nil), "cq.tape:norm", "nil")
    has(err_of(t.concat, t, { a, 5 }), "cq.tape:concat", "list[2] must be a tape node", "5")
    has(err_of(t.const, t, -1), "cq.tape:const", "length must be >= 0", "-1")
    has(err_of(t.const, t, "abc"), "cq.tape:const", "values must be", "abc")
    has(err_of(t.use, t, 5), "cq.tape:use", "p must be a cq.param", "5")
    -- positions: the user's line, also through the tail-called helpers
    at_caller(err_of(function() local y = t:add(a, b); return y end))
    at_caller(err_of(function() local y = t:tanh(nil); return y end))
    at_caller(err_of(function() local y = t:dot(a, b); return y end))
    -- valid broadcasting still works, and const copies a node
    assert.are.equal(5, t:add(a, 2).v[2])
    local c = t:const(a)
    assert.are.same({ 3, 1, 2, 3 }, { c.n, c.v[0], c.v[1], c.v[2] })
  end)
  it("matvec, index, value, seed", function()
    local t = tape.new()
    local W = tape.param(6, 1, 2) -- 2 x 3
    local x = t:const({ 1, 2 })
    has(err_of(t.matvec, t, W, x), "cq.tape:matvec", "x must have 3 values (W is 2 x 3)", "2")
    has(err_of(t.matvec, t, tape.param(6, 1), t:const({ 1, 2, 3 })), "W must be a matrix", "rows")
    has(err_of(t.matvec, t, W, nil), "x must be a tape node", "nil")
    has(err_of(t.index, t, x, 3), "cq.tape:index", "i must be an integer in [1, 2]", "3")
    has(err_of(t.index, t, x, 0), "i must be an integer in [1, 2]", "0")
    has(err_of(t.value, t, x, 5), "cq.tape:value", "[1, 2]", "5")
    has(err_of(t.seed, t, x, { 1 }), "cq.tape:seed", "seed must have 2 values", "a table of 1")
    has(err_of(t.seed, t, x, ffi_doubles(1)), "seed must have 2 values", "an array of 1")
    has(err_of(t.seed, t, x, "one"), "seed must be a number", "one")
    has(err_of(t.backward, t, 7), "cq.tape:backward", "out must be a tape node", "7")
    at_caller(err_of(function() local y = t:index(x, 3); return y end))
  end)
  it("state leaves: field, particle indices, missing sink", function()
    local w, s = small_scene()
    local t = tape.new()
    has(err_of(t.centroid, t, s, "F"), "cq.tape:centroid", "field must be x or v", "F")
    has(err_of(t.centroid, t, s, "x", { 1, 0 }), "idx[2] must be a particle index in [1, " .. w.n .. "]", "0")
    has(err_of(t.centroid, t, s, "x", { w.n + 1 }), "idx[1]", tostring(w.n + 1))
    has(err_of(t.centroid, t, nil, "x"), "state must be a cq state", "nil")
    has(err_of(t.gather, t, s, "v", nil), "cq.tape:gather", "idx must be a non-empty list", "nil")
    has(err_of(t.gather, t, s, "v", { 2, 1e6 }), "cq.tape:gather", "idx[2]", "1000000")
    -- an index list that passed once is re-checked when it grows
    local idx = { 1, 2 }
    t:centroid(s, "x", idx)
    idx[3] = w.n + 1
    has(err_of(t.centroid, t, s, "x", idx), "idx[3]", tostring(w.n + 1))
    local t2 = tape.new()
    local c = t2:centroid(s, "x", { 1, 2 })
    has(err_of(t2.backward, t2, t2:sum(c)), "cq.tape:backward", "sink must be the state gradient", "nil")
  end)
end)

describe("cq.control: argument checks", function()
  local control = require "cq.control"
  it("centroid_observer, mlp, sine", function()
    has(err_of(control.centroid_observer, { groups = { {} } }), "groups[1] must be a non-empty list", "table")
    has(err_of(control.centroid_observer, { groups = { { 1, "a" } } }), "groups[1][2] must be an integer", "a")
    has(err_of(control.centroid_observer, { groups = { { 1 } }, fields = "x" }), "fields must be a list", "x")
    has(err_of(control.mlp, { inputs = 2, outputs = 1, hidden = 5 }), "cq.mlp", "hidden must be a list", "5")
    has(err_of(control.mlp, { inputs = 2, outputs = 1, scale = -1 }), "cq.mlp", "scale must be > 0", "-1")
    has(err_of(control.sine, { outputs = 1, dt = 0.1, waves = 0 }), "cq.sine", "waves must be >= 1", "0")
    has(err_of(control.sine, { outputs = 1, dt = 0.1, omega = "fast" }), "omega must be a number", "fast")
  end)
  it("kmeans_groups", function()
    local w, s = small_scene()
    has(err_of(control.kmeans_groups, s, 0), "kmeans_groups", "k must be in [1, " .. w.n .. "]", "0")
    has(err_of(control.kmeans_groups, s, 2, { 1, w.n + 1 }), "particles[2]", tostring(w.n + 1))
    has(err_of(control.kmeans_groups, nil, 2), "state must be a cq state", "nil")
  end)
  it("an open-loop controller driven past its steps gives an error, not an out-of-bounds read", function()
    local w, s = small_scene({ actuators = 1 })
    local final = function(t, st) return t:index(t:centroid(st, "x"), 1) end
    has(err_of(cq.rollout, { world = w, steps = 4, controller = control.open_loop { steps = 2, outputs = 1 },
      final = final }), "cq.rollout", "steps must be at most the controller's steps = 2", "4") -- caught when made
    local run = cq.rollout { world = w, steps = 4, final = final }
    run.controller = control.open_loop { steps = 2, outputs = 1 } -- (swapped in later: caught when it runs)
    has(err_of(run.forward, run, s), "cq.open_loop", "control step k must be in [0, 1]", "2")
  end)
end)

describe("cq.rollout: argument checks", function()
  local control = require "cq.control"
  local final = function(t, st) return t:index(t:centroid(st, "x"), 1) end
  it("world, final, observer, running", function()
    local w = small_scene({ actuators = 1 })
    local ctl = control.open_loop { steps = 2, outputs = 1 }
    has(err_of(cq.rollout, { world = nil, steps = 2, controller = ctl, final = final }), "world must be a cq.world", "nil")
    has(err_of(cq.rollout, { world = w, steps = 2, controller = ctl }), "final must be a function", "nil")
    has(err_of(cq.rollout, { world = w, steps = 2, controller = ctl, final = final, observer = 3 }), "observer", "3")
    has(err_of(cq.rollout, { world = w, steps = 2, controller = ctl, final = final, running = {} }), "running must be nil or a function")
  end)
  it("forward: s0, a final that is not a scalar node, a controller returning a number", function()
    local w, s = small_scene({ actuators = 1 })
    local ctl = control.open_loop { steps = 2, outputs = 1 }
    local run = cq.rollout { world = w, steps = 2, controller = ctl, final = function(t) return t:const(0) end }
    has(err_of(run.forward, run, nil), "run:forward", "s0 must be a cq state", "nil")
    local msg = err_of(function() local L = run:forward(s); return L end)
    has(msg, "final must return a scalar tape node", "t:const({0})", "a node of size 0")
    at_caller(msg)
    run = cq.rollout { world = w, steps = 2, controller = { act = function() return 0.5 end }, final = final }
    has(err_of(run.forward, run, s), "the controller's act must return a tape node of 1", "0.5")
  end)
end)

describe("cq.objectives: argument checks", function()
  local obj = require "cq.objectives"
  it("construction-time checks", function()
    has(err_of(obj.forward_progress, 0), "forward_progress", "axis must be in [1, 3]", "0")
    has(err_of(obj.forward_progress, 1, { 1, -2 }), "idx[2]", "-2")
    has(err_of(obj.distance_to_target, "home"), "distance_to_target", "target must be a point", "home")
    has(err_of(obj.distance_to_target, { 0.5, "y" }), "target[2] must be a finite number", "y")
    has(err_of(obj.final_velocity, {}), "final_velocity", "idx must be nil (all particles) or a non-empty list")
    has(err_of(obj.keyframes, { [0] = { 1, 2 } }), "keyframes", "idx (the tracked particles) is required", "nil")
    has(err_of(obj.keyframes, { [3] = { 1, 2, 3 } }, { 1, 2 }), "keyframes[3] must be a flat list of dim * 2", "a table of 3")
    has(err_of(obj.weighted, { { 5 } }), "weighted", "list[1] must be {term")
    has(err_of(obj.weighted, { { obj.final_velocity(), "heavy" } }), "weight", "heavy")
  end)
  it("a target of the wrong dimension is caught when the term runs, naming the objective", function()
    local w, s = small_scene()
    local term = obj.distance_to_target({ 0.5, 0.5, 0.5 })
    has(err_of(term, require("cq.tape").new(), s), "cq.objectives.distance_to_target",
      "target must have 2 coordinates (the world's dim)", "a table of 3")
    assert.is_truthy(w)
  end)
end)

describe("cq.trajectory: argument checks", function()
  it("record_*, view, centroid, time", function()
    local w, s = small_scene({ actuators = 2 })
    local tr = cq.trajectory { world = w, steps = 2 }
    tr:record_state(0, s)
    has(err_of(tr.record_state, tr, 1, cq.world { n = 5 }:state()), "record_state", "s must be a cq state of " .. w.n,
      "a state of 5 particles")
    has(err_of(tr.record_state, tr, 1, nil), "record_state", "nil")
    has(err_of(tr.record_action, tr, 0, { 1 }), "record_action", "u must have 2 values", "a table of 1")
    has(err_of(tr.record_action, tr, 0, ffi_doubles(1)), "record_action", "an array of 1")
    has(err_of(tr.record_running, tr, 0, "low"), "h must be a number", "low")
    has(err_of(tr.view, tr, "z", 0), "trajectory:view", "field must be x, v or F", "z")
    has(err_of(tr.view, tr, nil, 0), "field must be x, v or F", "nil")
    has(err_of(tr.centroid, tr, 0, { 1, w.n + 1 }), "trajectory:centroid", "idx[2]", tostring(w.n + 1))
    has(err_of(tr.time, tr, "now"), "trajectory:time", "k must be a number", "now")
  end)
end)

describe("cq.frames: argument checks", function()
  local frames = require "cq.frames"
  it("images, pixels, by_group, render_state", function()
    has(err_of(frames.image, 0, 5), "cq.frames.image", "w must be in [1, 65536]", "0")
    has(err_of(frames.image, 4, 4, { 1, 2 }), "c must be a table of 3 numbers")
    local img = frames.image(4, 3)
    has(err_of(img.pixel, img, 4, 0), "image:pixel", "i must be in [0, 3]", "4")
    has(err_of(img.pixel, img, 0, -1), "image:pixel", "j must be in [0, 2]", "-1")
    has(err_of(img.to_pixel, img, 0.5, 0.5), "image:to_pixel", "no camera")
    has(err_of(frames.read, nil), "cq.frames.read", "path must be a file name", "nil")
    has(err_of(frames.by_group, { { 1, 9 } }, 4), "by_group", "groups[1][2] must be in [1, 4]", "9")
    local w, s = small_scene()
    has(err_of(frames.render_state, { world = w, x = { 0.5, 0.5 } }), "render_state", "x must be an FFI array", "table")
    has(err_of(frames.render_state, { world = w, x = ffi_doubles(3) }), "x must be an FFI array of " .. 2 * w.n,
      "an array of 3")
    has(err_of(frames.render_state, { world = w, state = cq.world { n = 2 }:state() }), "state must be a cq state of this world")
    local bad = {}
    for p = 1, w.n do bad[p] = { 0, 0, 0 } end
    bad[3] = "red"
    has(err_of(frames.render_state, { world = w, state = s, color = bad }), "color[3] must be {r, g, b}", "red")
    -- the valid call still renders
    local ok = frames.render_state { world = w, state = s, width = 64 }
    assert.are.equal(64, ok.w)
  end)
end)

describe("cq.log and cq.optim: argument checks", function()
  local tape = require "cq.tape"
  it("log", function()
    has(err_of(cq.log, { columns = {} }), "cq.log", "name must be a file name", "nil")
    has(err_of(cq.log, { name = "run", columns = { "loss", 3 } }), "columns[2] must be a string", "3")
    has(err_of(cq.log, { name = "run", cols = {} }), "cq.log", "unknown option 'cols'")
    has(err_of(cq.grad_norm, { 5 }), "cq.grad_norm", "params[1] must be a parameter (cq.param)", "5")
  end)
  it("optimizer bounds", function()
    local p, q = tape.param(2, 0), tape.param(1, 0)
    has(err_of(cq.adam, { params = { p }, bounds = { [q] = { 0, 1 } } }), "cq.adam",
      "bounds keys must be parameters listed in params")
    has(err_of(cq.sgd, { params = { p }, bounds = { [p] = { 1, 0 } } }), "cq.sgd", "lo <= hi", "1 > 0")
    has(err_of(cq.adam, { params = { p }, bounds = { [p] = { { 0 }, 1 } } }), "bounds[param] lo must be a number or a table of 2",
      "a table of 1")
    has(err_of(cq.adam, { params = { p }, bounds = 5 }), "bounds must be a table", "5")
    at_caller(err_of(function() local o = cq.adam { params = { p }, bounds = 5 }; return o end))
  end)
end)

describe("cq.robot: argument checks", function()
  it("box count, pressure_actuator groups, world options", function()
    local r = cq.robot { dim = 2 }
    has(err_of(r.box, r, { offset = { 0.4, 0.1 }, size = { 0.1, 0.1 }, count = 4 }), "robot:box", "count must be a table of 2 numbers", "4")
    local g = r:box { offset = { 0.4, 0.1 }, size = { 0.05, 0.05 }, spacing = 1 / 64 }
    has(err_of(r.pressure_actuator, r, { groups = { g.particles } }), "groups[1] must be a group from robot:box")
    has(err_of(r.world, r, { n = 5 }), "robot:world", "n is set by the robot", "5")
    local r2 = cq.robot { dim = 2 } -- a robot without actuators takes n_actuators, for design:actuators
    local g2 = r2:box { offset = { 0.4, 0.1 }, size = { 0.05, 0.05 }, spacing = 1 / 64 }
    has(err_of(r2.world, r2, { n_actuators = 0 }), "robot:world", "n_actuators must be in [1, ", "0")
    local w = r2:world { res = { 64, 64 }, dx = 1 / 64, dt = 1e-3, n_actuators = #g2.particles }
    assert.are.equal(#g2.particles, w.n_actuators)
    r2:pressure_actuator { groups = { g2 }, axis = 2, max = 1 }
    has(err_of(r2.world, r2, { n_actuators = 2 }), "robot:world", "n_actuators is set by the robot's 1 actuators", "2")
    has(err_of(r.world, r, { dim = 3 }), "robot:world", "dim must be the robot's (2)", "3")
    has(err_of(r.world, r, 7), "robot:world", "options table", "7")
  end)
end)

describe("errors point at the user's line, however deep in the package they are raised", function()
  -- The child script's line numbers: the preamble of run_child is two lines, so line 3 is the script's first.
  local cases = {
    { "material table at top level", "local r = require('cq').robot { dim = 2 }\n" ..
      "r:box { offset = { 0.4, 0.1 }, size = { 0.1, 0.1 }, material = { E = -1 } }", 4, "robot:box: material.E must be > 0" },
    { "robot:world passing a wrong cq.world option", "local r = require('cq').robot { dim = 2 }\n" ..
      "r:box { offset = { 0.4, 0.1 }, size = { 0.1, 0.1 }, spacing = 1 / 64 }\nr:world { ress = 5 }", 5,
      "robot:world: unknown option 'ress'" },
    { "a commit failing inside robot:world", "local r = require('cq').robot { dim = 2 }\n" ..
      "r:box { offset = { 0.4, 0.1 }, size = { 0.1, 0.1 }, spacing = 1 / 64 }\nr:world { dt = 1 }", 5,
      "world:commit: dt: the substep" },
    { "a tape op tail-called from the user's final()", "local cq = require 'cq'\n" ..
      "local w = cq.world { n = 2, n_actuators = 1 }\nw:commit()\nlocal s = w:state()\n" ..
      "for p = 1, 2 do s:set('x', p, { 0.5, 0.5 }) end\n" ..
      "local run = cq.rollout { world = w, steps = 1, controller = cq.open_loop { steps = 1, outputs = 1 },\n" ..
      "  final = function(t, st) return t:scale(t:centroid(st, 'x'), '2') end }\nrun:forward(s)", 10,
      "cq.tape:scale: s must be a number" },
    { "memo:backward calling backward_begin", "local cq = require 'cq'\nlocal w = cq.world { n = 2 }\nw:commit()\n" ..
      "local m = w:memo { steps = 2 }\nm:backward()", 7, "memo:backward_begin: backward: nothing recorded" },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local out, rc = run_child(c[2])
      assert.are.equal(1, rc)
      local line = tonumber(out:match("cqlua: [^\n]-:(%d+): "))
      assert.are.equal(c[3], line, "position of: " .. out)
      has(out, c[4])
      assert.is_falsy(out:match("^cqlua: [^\n]*lua/cq/"), "position inside the package: " .. out)
    end)
  end
end)
