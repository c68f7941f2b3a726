-- The bad-input cases of an ASan campaign over the Lua API (issue 8, item 11), one test each: objects used after
-- their world or memo was released or collected, integer options past what C can hold, non-finite numbers,
-- fractional integers, allocations too large to make, and inputs that used to spin or hang. Cases that touched
-- freed memory run in a child process; `make test-asan` runs all of them under AddressSanitizer.
local ffi = require "ffi"
local cq = require "cq"
local E = require "tests._errors"
local err_of, has = E.err_of, E.has

-- A committed world of 4 particles in a row, its state and a memo with two recorded steps.
local function scene()
  local w = cq.world { n = 4, res = 32, n_actuators = 1, gravity = { 0, -1 } }
  w:fill("act_id", 0)
  w:fill("act_axis", { 1, 0 })
  w:commit()
  local s = w:state()
  for p = 1, 4 do s:set("x", p, { 0.4 + 0.02 * p, 0.5 }) end
  local m = w:memo { steps = 4 }
  m:begin(s)
  m:step { 0.1 }
  m:step { 0.2 }
  return w, s, m
end

-- Runs Lua code in a child cqlua; returns its output and exit status.
local function run_child(code)
  local paths = package.loaded["cq._paths"] or {}
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write(code)
  f:close()
  local pipe = assert(io.popen(string.format("timeout 60 %q %q 2>&1; echo \"rc=$?\"", paths.exe or "cqlua", script)))
  local out = pipe:read("*a")
  pipe:close()
  os.remove(script)
  return out, tonumber(out:match("rc=(%d+)%s*$"))
end

describe("objects used after their world or memo was released or collected", function()
  it("World:fill, world.params, world:state and world:step raise 'used after release'", function()
    local w, s = scene()
    local view = w.params.E -- a view taken before: its memory stays valid (never freed memory)
    w:release()
    has(err_of(w.fill, w, "E", 5), "world:fill", "used after release")
    has(err_of(function() return w.params.E end), "used after release")
    has(err_of(w.state, w), "used after release")
    has(err_of(w.step, w, s), "used after release")
    assert.are.equal(10, view[0]) -- the old value, from memory that is still allocated
  end)
  it("State:copy of a released memo's state, and world:step(memo.state) after the memo was released", function()
    local w, _, m = scene()
    local ms = m.state
    m:release()
    has(err_of(ms.copy, ms), "state:copy", "used after release")
    has(err_of(w.step, w, ms), "world:step", "used after release")
    has(err_of(ms.get, ms, "x", 1), "used after release")
  end)
  it("tape centroid and trajectory:record_state on a released memo's state", function()
    local w, _, m = scene()
    local ms = m.state
    local traj = cq.trajectory { world = w, steps = 2 }
    m:release()
    local t = cq.tape()
    has(err_of(t.centroid, t, ms, "x"), "cq.tape:centroid", "used after release")
    has(err_of(traj.record_state, traj, 0, ms), "trajectory:record_state", "used after release")
  end)
  it("memo.grad_act and grad_params after release: grad_u raises, the raw views still read live memory", function()
    local _, _, m = scene()
    m:backward()
    local ga, ge = m.grad_act, m.grad_params.E
    local before = ga[0]
    m:release()
    has(err_of(m.grad_u, m, 1, 1), "memo:grad_u", "used after release")
    has(err_of(m.backward, m), "used after release")
    collectgarbage()
    assert.are.equal(before, ga[0])
    assert.is_true(ge[0] == ge[0])
  end)
  it("objects whose world was collected (no Lua reference left) never touch freed memory (child process)", function()
    local out, rc = run_child([[
      local cq = require "cq"
      local m, view, ms
      do
        local w = cq.world { n = 3, res = 16 }
        w:commit()
        local s = w:state()
        for p = 1, 3 do s:set("x", p, { 0.5, 0.5 }) end
        m = w:memo { steps = 2 }
        m:begin(s)
        m:step()
        view, ms = w.params.mass, m.state
      end
      collectgarbage(); collectgarbage()
      m:backward()                      -- the memo keeps its world alive
      print("VIEW", view[0], "STATE", ms:get("x", 1)[1], "GRAD", m.grad.x[0])
      m:release(); collectgarbage(); collectgarbage()
      print("AFTER", view[0], pcall(ms.get, ms, "x", 1))
      print("SURVIVED")
    ]])
    print(out)
    assert.are.equal(0, rc)
    has(out, "VIEW\t1\tSTATE\t0.5", "AFTER\t1\tfalse", "used after release", "SURVIVED")
  end)
end)

describe("integer options", function()
  it("past 2^31 - 1 are refused in Lua before they reach C", function()
    has(err_of(cq.world, { n = 3e9 }), "cq.world: n must be >= 1 and <= 2^31 - 1 (got 3000000000)")
    local w = cq.world { n = 2, substeps = 4 }
    w:commit()
    has(err_of(w.memo, w, { steps = 2 ^ 31 }), "world:memo: steps must be in [1, 536870911] (got 2147483648)")
    has(err_of(w.memo, w, { steps = 10, checkpoint_every = 2 ^ 40 }), "checkpoint_every", "2^31 - 1")
    has(err_of(cq.world, { n = 2, n_actuators = 2 ^ 31 }), "n_actuators", "2^31 - 1")
  end)
  it("the largest accepted memo is refused with the memory it would take, not an overflow", function()
    local w = cq.world { n = 1000 }
    w:commit()
    has(err_of(w.memo, w, { steps = 2 ^ 31 - 1, checkpoint_every = 1 }), "world:memo", "GB of states",
      "lower steps or checkpoint_every")
    local m = w:memo { steps = 10 ^ 6 } -- auto checkpoints: about sqrt(N) states
    print("  steps = 1e6 with auto checkpoints keeps " .. m:stored_states() .. " states")
    assert.is_true(m:stored_states() <= 2001)
  end)
  it("fractional values are refused where integers are expected", function()
    has(err_of(cq.world, { n = 0.5 }), "n must be an integer", "0.5")
    has(err_of(cq.world, { n = 4, substeps = 2.5 }), "substeps must be an integer")
    has(err_of(cq.world, { n = 4, threads = 1.5 }), "threads must be an integer")
    local w = cq.world { n = 4 }
    w:commit()
    has(err_of(w.memo, w, { steps = 3.5 }), "steps must be an integer")
    has(err_of(cq.world, { n = 4, walls = { floor = { thickness = 1.5 } } }), "thickness must be an integer")
  end)
end)

describe("non-finite numbers are refused with the option named", function()
  it("inf dx, dt, damping, gravity and wall velocity", function()
    has(err_of(cq.world, { n = 4, dx = math.huge }), "cq.world: dx must be finite (got inf)")
    has(err_of(cq.world, { n = 4, dx = 1e-300 }), "cq.world: dx must be in [1e-09, 1000000000] (got 1e-300)")
    has(err_of(cq.world, { n = 4, dt = math.huge }), "cq.world: dt must be finite")
    has(err_of(cq.world, { n = 4, dt = 0 / 0 }), "dt must be a number")
    has(err_of(cq.world, { n = 4, dt = 0.01, substeps = 2, damping = 2e4 }), "cq.world:",
      "damping * dt (per substep) must be <= 80", "exp(-100)", "damping 20000, dt 0.005")
    has(err_of(cq.world, { n = 4, gravity = { 0, -math.huge } }), "gravity[2] must be a finite number")
    has(err_of(cq.world, { n = 4, walls = { floor = { velocity = { math.huge, 0 } } } }), "velocity[1] must be a finite number")
    has(err_of(cq.world, { n = 4, walls = { floor = { oscillation = { amplitude = { 0, 1 }, omega = math.huge } } } }),
      "oscillation.omega must be finite")
  end)
  it("inf E at commit, and NaN or inf actuation and force in world:step", function()
    local w = cq.world { n = 4, n_actuators = 1 }
    w:fill("E", math.huge)
    has(err_of(w.commit, w), "world:commit", "particle 1: E (Young's modulus) must be finite and > 0 (got inf)")
    w:fill("E", 10)
    w:commit()
    local s = w:state()
    for p = 1, 4 do s:set("x", p, { 0.5, 0.5 }) end
    has(err_of(w.step, w, s, { 0 / 0 }), "world:step", "step 1: u[1] (actuator 1) is not finite")
    has(err_of(w.step, w, s, { math.huge }), "u[1] (actuator 1) is not finite (inf)")
    local force = ffi.new("double[?]", 8)
    force[5] = math.huge
    has(err_of(w.step, w, s, { 0 }, force), "step 1: force of particle 2, component 2 is not finite (inf)")
    assert.are.equal(0, s:substep()) -- nothing ran
  end)
end)

describe("allocations too large to make name the option", function()
  it("a world, a grid and a trajectory larger than memory", function()
    has(err_of(cq.world, { n = 2 ^ 31 - 1 }), "cq.world: n:", "GB", "more than this machine's")
    has(err_of(cq.world, { n = 4, dim = 3, res = 65536 }), "cq.world: res: a grid of", "more than this machine's")
    local w = cq.world { n = 1000 }
    has(err_of(cq.trajectory, { world = w, steps = 2 ^ 31 - 1 }), "cq.trajectory: steps asks for", "more than can be allocated")
  end)
end)

describe("inputs that used to spin or hang", function()
  it("a robot box with a tiny spacing fails at once", function()
    local r = cq.robot { dim = 2 }
    local t0 = os.clock()
    has(err_of(r.box, r, { offset = { 0, 0 }, size = { 1, 1 }, spacing = 1e-7 }), "robot:box",
      "the lattice would hold 1e+14 points", "larger spacing")
    assert.is_true(os.clock() - t0 < 1)
    local b = cq.robot { dim = 3 }
    has(err_of(b.ball, b, { center = { 0.5, 0.5, 0.5 }, radius = 0.4, spacing = 1e-4 }), "robot:ball", "larger spacing")
  end)
  it("frames.write with radius = 1e6 is refused instead of drawing for hours", function()
    local w, s = scene()
    local traj = cq.trajectory { world = w, steps = 1 }
    traj:record_state(0, s)
    traj:record_state(1, s)
    has(err_of(cq.frames.write, { trajectory = traj, dir = os.tmpname() .. "_frames", radius = 1e6 }),
      "cq.frames.write: radius must be in [0, 640]", "1000000")
  end)
end)

describe("more bad input found by the ASan campaign", function()
  it("a float32 state handed to a float64 world, memo or state is refused (it used to read past the buffer)", function()
    local w64 = cq.world { n = 2, precision = "f64" }
    local w32 = cq.world { n = 2, precision = "f32" }
    w64:commit()
    w32:commit()
    local s64, s32 = w64:state(), w32:state()
    has(err_of(s64.copy_from, s64, s32), "state:copy_from", "a state of a world with 2 particles in 2D, f64", "f32 world")
    has(err_of(w64.step, w64, s32), "world:step", "f64")
    local m = w64:memo { steps = 1 }
    has(err_of(m.begin, m, s32), "memo:begin", "f64")
    local traj = cq.trajectory { world = w64, steps = 1 }
    has(err_of(traj.record_state, traj, 0, s32), "trajectory:record_state", "f64")
  end)
  it("threads = 1e5, a friction coefficient that is a string, and an unstable dt of 1e30", function()
    has(err_of(cq.world, { n = 2, threads = 1e5 }), "cq.world: threads must be in [0, 1024] (got 100000)")
    local w = cq.world { n = 2 }
    has(err_of(w.set_threads, w, 3e9), "world:set_threads: threads must be in [0, 1024]")
    has(err_of(cq.world, { n = 2, walls = { floor = { type = "friction", friction = "high" } } }),
      "walls.floor: friction must be a number", "high")
    local big = cq.world { n = 2, dt = 1e30 }
    -- no int overflow in the suggestion, and no count past what substeps takes (2^31 - 1)
    has(err_of(big.commit, big), "world:commit", "more than 2^31 - 1 substeps: use a smaller dt")
  end)
  it("arrays sized by options name the option; an objective's axis is checked against the world", function()
    has(err_of(cq.param, { n = 2 ^ 31 - 1 }), "cq.param: n must be in [1, 134217728]")
    has(err_of(cq.mlp, { inputs = 2 ^ 30, outputs = 8, hidden = {} }), "cq.mlp: layer 1 would have 8 x 1073741824 weights")
    has(err_of(cq.frames.image, 65536, 65536), "cq.frames.image: w * h asks for")
    has(err_of(cq.frames.by_group, {}, 2 ^ 31 - 1), "by_group: n must be in [1, 100000000]")
    local w, s = scene()
    local term = cq.objectives.forward_progress(3)
    has(err_of(term, cq.tape(), s), "cq.objectives.forward_progress: axis must be in [1, 2] (the world's dim)", "3")
  end)
end)
