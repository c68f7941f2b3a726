-- Bad input gives clear Lua errors (naming the option, the valid range and the value), never a crash.
--
-- Run: build/bin/cqlua tests/run.lua tests/errors_spec.lua
-- (or: busted --lua=luajit --lpath='lua/?.lua;lua/?/init.lua' tests/errors_spec.lua)
package.loaded["cq._paths"] = package.loaded["cq._paths"] or { lib = "build/lib" }
local cq = require "cq"

-- The error message of f(...), which must fail; printed for the log.
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error, got none")
  e = tostring(e)
  print(e)
  return e
end

-- Asserts that msg contains every one of the given plain strings.
local function has(msg, ...)
  for _, s in ipairs({ ... }) do
    assert.is_truthy(string.find(msg, s, 1, true), string.format("message %q does not contain %q", msg, s))
  end
end

-- A committed 2D world with n particles in a small block around (0.5, 0.5), and its state.
local function small_scene(opts)
  opts = opts or {}
  local npa = opts.npa or 6
  local dx = 1 / 64
  local h = dx / 2
  local w = cq.world { dim = 2, res = opts.res or 64, dx = dx, dt = 1e-3, n = npa * npa, actuators = opts.actuators,
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
    local w = cq.world { n = 3, actuators = 2 }
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
  it("act_id out of range", function()
    has(commit_err("act_id", 2), "particle 2", "act_id", "[0, 2)", "2")
    has(commit_err("act_id", -2), "particle 2", "act_id", "-1", "-2")
  end)
  it("material 7", function()
    has(commit_err("material", 7), "particle 2", "material", "corotated", "neohookean", "7")
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
    has(msg, "dt", "stability limit", "substeps", string.format("%g", limit))
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
    has(msg, "cq.world:step", "particle 5", "-0.1", "outside the grid", "[0.0078125, 0.976562)")
    -- the world is still usable once the particle is back inside
    s:set("x", 5, { 0.5, 0.5 })
    w:step(s)
    print("after the fix: substep", s:substep())
    assert.are.equal(1, s:substep())
  end)
  it("beyond the upper edge", function()
    local w, s = small_scene()
    s:set("x", 7, { 0.5, 0.99 })
    has(err_of(w.step, w, s), "particle 7", "0.99", "outside the grid", "0.976562")
  end)
  it("memo:step reports it too", function()
    local w, s = small_scene()
    s:set("x", 3, { 1.5, 0.5 })
    local m = w:memo { steps = 4 }
    m:begin(s)
    has(err_of(m.step, m), "cq.memo:step", "particle 3", "1.5", "outside the grid")
    assert.are.equal(0, m:steps())
  end)
  it("a particle that moves out during the run is reported with its step number", function()
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
    has(msg, "particle 2", "step " .. steps, "outside the grid")
  end)
  it("on a non-square grid the range quoted is the one of the offending axis", function()
    -- res = {64, 32}: y must stay in [0.5 dx, 30.5 dx) = [0.0078125, 0.476562)
    local w, s = small_scene({ res = { 64, 32 } })
    s:set("x", 1, { 0.3, 0.48 })
    local msg = err_of(w.step, w, s)
    has(msg, "particle 1", "outside the grid", "0.476562")
  end)
end)

describe("blow-ups", function()
  it("a NaN velocity gives a blow-up error with the step number", function()
    local w, s = small_scene()
    for _ = 1, 3 do w:step(s) end
    s:set("v", 4, { 0 / 0, 0 })
    local msg = err_of(w.step, w, s)
    has(msg, "blow-up", "step 3", "particle 4", "non-finite")
    -- memo:step too
    local m = w:memo { steps = 2 }
    m:begin(s)
    has(err_of(m.step, m), "cq.memo:step", "blow-up", "particle 4")
  end)
  it("an infinite position is a blow-up too", function()
    local w, s = small_scene()
    s:set("x", 1, { math.huge, 0.5 })
    has(err_of(w.step, w, s), "blow-up", "particle 1")
  end)
  it("E raised to 1e9 after commit explodes with an error naming the step; a later world still works", function()
    local w, s = small_scene({ npa = 10 })
    for p = 1, w.n do s:set("F", p, { 1.1, 0, 0, 0.95 }) end
    for q = 0, w.n - 1 do w.params.E[q] = 1e9 end
    local steps, msg = 0, nil
    for _ = 1, 200 do
      local ok, e = pcall(w.step, w, s)
      if not ok then msg = tostring(e) break end
      steps = steps + 1
    end
    print(msg, "(after " .. steps .. " good steps)")
    assert.is_truthy(msg, "no error in 200 steps of an exploding simulation")
    has(msg, "cq.world:step", "step " .. steps, "particle")
    assert.is_truthy(msg:find("blow-up", 1, true) or msg:find("non-finite", 1, true) or
      msg:find("outside the grid", 1, true))
    -- the process survives and a fresh world works: free fall of the COM is exact
    local w2, s2 = small_scene()
    local v0 = s2:mean("v")[2]
    for _ = 1, 10 do w2:step(s2) end
    local vy = s2:mean("v")[2]
    print("fresh world after the blow-up: mean vy after 10 steps =", vy)
    assert.is_true(math.abs(vy - (v0 - 10 * 9.8 * 1e-3)) < 1e-12)
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
    assert.are.equal(2, m:steps())
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
    has(err_of(m.backward_step, m), "backward", "step 0")
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
    has(err_of(m.step, m, { 1, 0 / 0 }), "actuation 2", "not finite")
    assert.are.equal(0, s:substep())
  end)
  it("a state of another world with a different particle count", function()
    local w = small_scene()
    local other = cq.world { n = 5 }
    has(err_of(w.step, w, other:state()), "state does not belong to this world")
  end)
  it("a released world", function()
    local w, s = small_scene()
    w:release()
    has(err_of(w.step, w, s), "released")
    has(err_of(w.state, w), "released")
    has(err_of(w.commit, w), "released")
    has(err_of(w.memo, w, { steps = 1 }), "released")
    print(tostring(w))
    assert.are.equal("cq.world (released)", tostring(w))
    w:release() -- twice is harmless
  end)
  it("set_actuator with bad arguments", function()
    local w = cq.world { n = 2, actuators = 2 }
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
    assert.is_truthy(out:match("STEP\tfalse\t[^\n]*released"), "memo:step error does not say the world was released")
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
