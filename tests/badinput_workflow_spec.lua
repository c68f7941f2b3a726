-- The bad-input campaign of issue 64 (items 3, 4) on the control and workflow side: observers and controllers,
-- cq.rollout, cq.objectives, cq.tape and cq.param, the optimizers, cq.augmented_lagrangian's arguments, cq.trajectory,
-- cq.frames / cq.export / cq.plot / video, cq.log, cq.args and parameter studies (cq.study and `cqlua study`).
-- Each case is a table entry: a name, a function that makes the call, and the substrings its error must hold (the
-- function and argument, the valid range, the value given); the error must point at this file's line, never inside
-- lua/cq. Legal but almost surely mistaken input gives a warning instead (lua/cq/_warn.lua), checked the same way.
--
-- Run: build/bin/cqlua tests/run.lua tests/badinput_workflow_spec.lua
local ffi = require "ffi"
local cq = require "cq"
local E = require "tests._errors"
local shell = require "tests._shell"
local warn = require "cq._warn"
local err_of, has = E.err_of, E.has

-- A committed 2D world of 4 particles in a row with na actuators (default 1), and its state.
local function scene(na)
  na = na or 1
  local w = cq.world { n = 4, res = 32, n_actuators = na, gravity = { 0, -1 } }
  if na > 0 then
    w:fill("act_id", 0)
    w:fill("act_axis", { 1, 0 })
  end
  w:commit()
  local s = w:state()
  for p = 1, 4 do s:set("x", p, { 0.4 + 0.02 * p, 0.5 }) end
  return w, s
end
local function final(t, s) return t:index(t:centroid(s, "x"), 1) end
local function p2() return cq.param { n = 2 } end
local function zero() return 0 end
local TMP = shell.tmpdir()

-- A trajectory of a 2-step passive rollout of the scene.
local function traj()
  local w, s = scene()
  local run = cq.rollout { world = w, steps = 2, final = final }
  run:forward(s)
  return run:trajectory(), w, s
end

-- Each case: { name, f, substrings... } for an error; warn = true: f must run and warn with the substrings;
-- nopos = true: the error carries no position (a command-line usage error, a message printed by `cqlua study`).
local cases = {
  ---------------------------------------------------------------- observers
  { "centroid_observer without groups", function() return cq.centroid_observer {} end,
    "cq.centroid_observer", "groups must be a non-empty list", "nil" },
  { "centroid_observer groups = {}", function() return cq.centroid_observer { groups = {} } end,
    "groups must be a non-empty list", "a table of 0" },
  { "centroid_observer fractional index", function() return cq.centroid_observer { groups = { { 1, 2.5 } } } end,
    "groups[1][2] must be an integer >= 1", "2.5" },
  { "centroid_observer index 0", function() return cq.centroid_observer { groups = { { 0 } } } end,
    "groups[1][1] must be", ">= 1", "0" },
  { "centroid_observer group that is not a list", function() return cq.centroid_observer { groups = { 3 } } end,
    "groups[1] must be a non-empty list", "3" },
  { "centroid_observer fields = {F}", function() return cq.centroid_observer { groups = { { 1 } }, fields = { "F" } } end,
    "fields[1] must be one of x, v", '"F"' },
  { "centroid_observer fields = {}", function() return cq.centroid_observer { groups = { { 1 } }, fields = {} } end,
    "fields must be a list drawn from x, v", "a table of 0" },
  { "centroid_observer relative = 'yes'", function() return cq.centroid_observer { groups = { { 1 } }, relative = "yes" } end,
    "relative must be true or false", '"yes"' },
  { "centroid_observer clock = 5", function() return cq.centroid_observer { groups = { { 1 } }, clock = 5 } end,
    "clock", "5" },
  { "centroid_observer clock.waves = 0", function() return cq.centroid_observer { groups = { { 1 } }, clock = { waves = 0 } } end,
    "clock.waves must be >= 1", "0" },
  { "centroid_observer clock.period = 0", function() return cq.centroid_observer { groups = { { 1 } }, clock = { period = 0 } } end,
    "clock.period must be > 0", "0" },
  { "centroid_observer clock with an unknown key", function()
      return cq.centroid_observer { groups = { { 1 } }, clock = { phase = 1 } } end, "unknown option 'phase'", "waves" },
  { "centroid_observer groups past the world's particles (caught by the rollout)", function()
      local w = scene()
      return cq.rollout { world = w, steps = 2, final = final, observer = cq.centroid_observer { groups = { { 1, 9 } } },
        controller = cq.mlp { inputs = 4, outputs = 1, hidden = {} } }
    end, "cq.rollout", "observer", "groups[1][2]", "[1, 4]", "9" },
  ---------------------------------------------------------------- kmeans_groups
  { "kmeans_groups k = 0", function() local _, s = scene(); return cq.kmeans_groups(s, 0) end,
    "cq.kmeans_groups", "k must be", "[1, 4]", "0" },
  { "kmeans_groups k = 2.5", function() local _, s = scene(); return cq.kmeans_groups(s, 2.5) end,
    "k must be an integer", "2.5" },
  { "kmeans_groups k above the particles given", function() local _, s = scene(); return cq.kmeans_groups(s, 3, { 1, 2 }) end,
    "k must be", "[1, 2]", "3" },
  { "kmeans_groups iterations = -1", function() local _, s = scene(); return cq.kmeans_groups(s, 2, nil, -1) end,
    "iterations must be >= 0", "-1" },
  { "kmeans_groups particles = 'all'", function() local _, s = scene(); return cq.kmeans_groups(s, 2, "all") end,
    "particles must be nil (all) or a list", '"all"' },
  { "kmeans_groups particle 5 of 4", function() local _, s = scene(); return cq.kmeans_groups(s, 1, { 1, 5 }) end,
    "particles[2] must be", "[1, 4]", "5" },
  ---------------------------------------------------------------- cq.mlp
  { "mlp inputs = 0", function() return cq.mlp { inputs = 0, outputs = 1 } end, "cq.mlp", "inputs must be", ">= 1", "0" },
  { "mlp without outputs", function() return cq.mlp { inputs = 2 } end, "cq.mlp", "outputs must be an integer", "nil" },
  { "mlp outputs = 1.5", function() return cq.mlp { inputs = 2, outputs = 1.5 } end, "outputs must be an integer", "1.5" },
  { "mlp hidden = {0}", function() return cq.mlp { inputs = 2, outputs = 1, hidden = { 0 } } end,
    "cq.mlp", "hidden[1] must be >= 1", "0" },
  { "mlp hidden = {16, '8'}", function() return cq.mlp { inputs = 2, outputs = 1, hidden = { 16, "8" } } end,
    "hidden[2] must be an integer", '"8"' },
  { "mlp activation = 'sigmoid'", function() return cq.mlp { inputs = 2, outputs = 1, activation = "sigmoid" } end,
    "activation must be one of relu, tanh", '"sigmoid"' },
  { "mlp seed = 'x'", function() return cq.mlp { inputs = 2, outputs = 1, seed = "x" } end, "seed must be a number", '"x"' },
  { "mlp scale = 0", function() return cq.mlp { inputs = 2, outputs = 1, scale = 0 } end, "scale must be > 0", "0" },
  { "mlp scale = nan", function() return cq.mlp { inputs = 2, outputs = 1, scale = 0 / 0 } end, "scale must be a number", "nan" },
  { "mlp whose inputs differ from the observer's size", function()
      local w = scene()
      return cq.rollout { world = w, steps = 2, final = final, observer = cq.centroid_observer { groups = { { 1, 2 } } },
        controller = cq.mlp { inputs = 3, outputs = 1 } }
    end, "cq.rollout", "controller inputs = 3", "observer", "size 4" },
  { "mlp without an observer", function()
      local w = scene()
      return cq.rollout { world = w, steps = 2, final = final, controller = cq.mlp { inputs = 3, outputs = 1 } }
    end, "cq.rollout", "observer", "inputs = 3", "nil" },
  { "mlp outputs differ from the world's actuators", function()
      local w = scene(1)
      return cq.rollout { world = w, steps = 2, final = final, observer = cq.centroid_observer { groups = { { 1 } } },
        controller = cq.mlp { inputs = 4, outputs = 2 } }
    end, "cq.rollout", "controller outputs must be the world's n_actuators = 1", "2" },
  ---------------------------------------------------------------- cq.open_loop
  { "open_loop steps = 0", function() return cq.open_loop { steps = 0, outputs = 1 } end,
    "cq.open_loop", "steps must be", ">= 1", "0" },
  { "open_loop outputs missing", function() return cq.open_loop { steps = 2 } end, "outputs must be an integer", "nil" },
  { "open_loop every = 0", function() return cq.open_loop { steps = 2, outputs = 1, every = 0 } end, "every must be", ">= 1", "0" },
  { "open_loop shape = 'cubic'", function() return cq.open_loop { steps = 2, outputs = 1, shape = "cubic" } end,
    "shape must be one of hold, linear", '"cubic"' },
  { "open_loop start with shape hold", function() return cq.open_loop { steps = 2, outputs = 1, start = 0 } end,
    'start needs shape = "linear"', '"hold"' },
  { "open_loop start list of the wrong length", function()
      return cq.open_loop { steps = 2, outputs = 2, shape = "linear", start = { 0, 0, 0 } } end,
    "start must be a number or a list of outputs = 2 numbers", "a table of 3" },
  { "open_loop init list of the wrong length", function() return cq.open_loop { steps = 3, outputs = 1, init = { 0, 0 } } end,
    "init must be a number, a function or a list of 3 numbers", "a table of 2" },
  { "open_loop init = 'zero'", function() return cq.open_loop { steps = 3, outputs = 1, init = "zero" } end,
    "cq.open_loop", "init must be a finite number, a function or a list of 3", '"zero"' },
  { "open_loop init list with a string", function() return cq.open_loop { steps = 2, outputs = 1, init = { 0, "a" } } end,
    "cq.open_loop", "init[2] must be a number", '"a"' },
  { "open_loop init = nan", function() return cq.open_loop { steps = 2, outputs = 1, init = 0 / 0 } end,
    "cq.open_loop", "init must be a finite number, a function or a list of 2", "nan" },
  { "open_loop with fewer steps than the rollout (caught when the rollout is made)", function()
      local w = scene()
      return cq.rollout { world = w, steps = 4, final = final, controller = cq.open_loop { steps = 2, outputs = 1 } }
    end, "cq.rollout", "steps must be at most the controller's steps = 2", "4" },
  { "open_loop value of output 2 of 1", function() local c = cq.open_loop { steps = 2, outputs = 1 }; return c:value(0, 2) end,
    "value's output must be in [1, 1]", "2" },
  { "open_loop value of step 5 of 2", function() local c = cq.open_loop { steps = 2, outputs = 1 }; return c:value(5) end,
    "control step k must be in [0, 1]", "5" },
  ---------------------------------------------------------------- cq.sine
  { "sine outputs missing", function() return cq.sine { dt = 0.01 } end, "cq.sine", "outputs must be an integer", "nil" },
  { "sine dt missing", function() return cq.sine { outputs = 1 } end, "cq.sine", "dt must be a number", "nil" },
  { "sine dt = 0", function() return cq.sine { outputs = 1, dt = 0 } end, "dt must be > 0", "0" },
  { "sine omega = inf", function() return cq.sine { outputs = 1, dt = 0.01, omega = math.huge } end, "omega must be finite", "inf" },
  { "sine seed = {}", function() return cq.sine { outputs = 1, dt = 0.01, seed = {} } end, "seed must be a number", "a table of 0" },
  { "sine waves = 1.5", function() return cq.sine { outputs = 1, dt = 0.01, waves = 1.5 } end, "waves must be an integer", "1.5" },
  ---------------------------------------------------------------- cq.pulses
  { "pulses steps missing", function() return cq.pulses { outputs = 1, dt = 0.01 } end, "cq.pulses", "steps must be an integer", "nil" },
  { "pulses dt_pul = 0", function() return cq.pulses { outputs = 1, steps = 5, dt = 0.01, dt_pul = 0 } end, "dt_pul must be > 0", "0" },
  { "pulses sigma = -1", function() return cq.pulses { outputs = 1, steps = 5, dt = 0.01, sigma = -1 } end, "sigma must be > 0", "-1" },
  { "pulses amplitude = 0", function() return cq.pulses { outputs = 1, steps = 5, dt = 0.01, amplitude = 0 } end,
    "amplitude must be > 0", "0" },
  { "pulses a_pul = -0.2", function() return cq.pulses { outputs = 1, steps = 5, dt = 0.01, a_pul = -0.2 } end,
    "a_pul must be > 0", "-0.2" },
  { "pulses init_sgn = 'x'", function() return cq.pulses { outputs = 1, steps = 5, dt = 0.01, init_sgn = "x" } end,
    "cq.pulses", "init_sgn must be a number in [-1, 1], a function or a list of 25", '"x"' },
  { "pulses init_abs = 2 (outside its bounds)", function() return cq.pulses { outputs = 1, steps = 5, dt = 0.01, init_abs = 2 } end,
    "cq.pulses", "init_abs must be a number in [-1, 1]", "2" },
  { "pulses init_sgn list of the wrong length", function()
      return cq.pulses { outputs = 1, steps = 5, dt = 0.01, dt_pul = 0.01, init_sgn = { 0, 0 } } end,
    "init_sgn must be a number in [-1, 1], a function or a list of 5", "a table of 2" },
  ---------------------------------------------------------------- cq.rollout
  { "rollout world = {}", function() return cq.rollout { world = {}, steps = 2, final = final } end,
    "cq.rollout", "world must be a cq.world", "a table of 0" },
  { "rollout steps = 0", function() local w = scene(); return cq.rollout { world = w, steps = 0, final = final } end,
    "steps must be", ">= 1", "0" },
  { "rollout steps = 2.5", function() local w = scene(); return cq.rollout { world = w, steps = 2.5, final = final } end,
    "steps must be an integer", "2.5" },
  { "rollout controller = 5", function() local w = scene(); return cq.rollout { world = w, steps = 2, final = final, controller = 5 } end,
    "controller must be nil (passive) or a controller object", "5" },
  { "rollout controller without act", function()
      local w = scene(); return cq.rollout { world = w, steps = 2, final = final, controller = {} } end,
    "controller must be nil (passive) or a controller object", "a table of 0" },
  { "rollout observer without observe", function()
      local w = scene(); return cq.rollout { world = w, steps = 2, final = final, observer = {} } end,
    "observer must be nil or an observer object", "a table of 0" },
  { "rollout final missing", function() local w = scene(); return cq.rollout { world = w, steps = 2 } end,
    "final must be a function", "nil" },
  { "rollout running = 5", function() local w = scene(); return cq.rollout { world = w, steps = 2, final = final, running = 5 } end,
    "running must be nil or a function", "5" },
  { "rollout actuator = 'x'", function() local w = scene(); return cq.rollout { world = w, steps = 2, final = final, actuator = "x" } end,
    "actuator must be nil or a function", '"x"' },
  { "rollout accumulate = 'mean'", function()
      local w = scene(); return cq.rollout { world = w, steps = 2, final = final, accumulate = "mean" } end,
    "accumulate must be one of sum, max, min", '"mean"' },
  { "rollout record = {'y'}", function() local w = scene(); return cq.rollout { world = w, steps = 2, final = final, record = { "y" } } end,
    "record[1] must be one of x, v, F", '"y"' },
  { "rollout record = 'x'", function() local w = scene(); return cq.rollout { world = w, steps = 2, final = final, record = "x" } end,
    "record must be false, true or a list", '"x"' },
  { "rollout checkpoint_every = -1", function()
      local w = scene(); return cq.rollout { world = w, steps = 2, final = final, checkpoint_every = -1 } end,
    "checkpoint_every must be", ">= 0", "-1" },
  { "rollout design = {}", function() local w = scene(); return cq.rollout { world = w, steps = 2, final = final, design = {} } end,
    "design must be nil or a cq.design", "a table of 0" },
  { "rollout controller for a world without actuators", function()
      local w = scene(0)
      return cq.rollout { world = w, steps = 2, final = final, controller = cq.open_loop { steps = 2, outputs = 1 } }
    end, "cq.rollout", "controller outputs must be the world's n_actuators = 0", "1" },
  { "rollout accumulate = 'max' without a running loss warns", warn = true, function()
      local w = scene(); return cq.rollout { world = w, steps = 2, final = final, accumulate = "max" } end,
    "cq.rollout", 'accumulate = "max"', "no running loss" },
  { "run:forward(nil)", function()
      local w = scene(); local run = cq.rollout { world = w, steps = 2, final = final }; return run:forward(nil) end,
    "run:forward", "s0 must be a cq state", "nil" },
  { "run:forward of a state of a world of 5 particles", function()
      local w = scene(); local run = cq.rollout { world = w, steps = 2, final = final }
      return run:forward(cq.world { n = 5 }:state())
    end, "run:forward", "s0 must be a state of a world with 4 particles in 2D", "5 particles" },
  { "run:backward after a forward that failed", function()
      local w, s = scene()
      local fail = false
      local run = cq.rollout { world = w, steps = 2, final = function(t, st)
        if fail then error("the final term failed") end
        return final(t, st)
      end }
      run:forward(s)
      fail = true
      assert(not pcall(run.forward, run, s))
      return run:backward()
    end, "run:backward", "the last one failed", "call run:forward(s0) first" },
  { "run:backward before forward", function()
      local w = scene(); local run = cq.rollout { world = w, steps = 2, final = final }; return run:backward() end,
    "run:backward", "no finished forward", "call run:forward(s0) first" },
  { "run:backward weight = '2'", function()
      local w, s = scene(); local run = cq.rollout { world = w, steps = 2, final = final }; run:forward(s)
      return run:backward { weight = "2" }
    end, "run:backward", "weight must be a number", '"2"' },
  { "run:backward accumulate = 1", function()
      local w, s = scene(); local run = cq.rollout { world = w, steps = 2, final = final }; run:forward(s)
      return run:backward { accumulate = 1 }
    end, "accumulate must be true or false", "1" },
  { "run:backward(5)", function()
      local w, s = scene(); local run = cq.rollout { world = w, steps = 2, final = final }; run:forward(s)
      return run:backward(5)
    end, "on_step must be nil or a function", "5" },
  { "run:backward on_step = 5", function()
      local w, s = scene(); local run = cq.rollout { world = w, steps = 2, final = final }; run:forward(s)
      return run:backward { on_step = 5 }
    end, "on_step must be nil or a function", "5" },
  { "run:backward unknown option", function()
      local w, s = scene(); local run = cq.rollout { world = w, steps = 2, final = final }; run:forward(s)
      return run:backward { wieght = 2 }
    end, "run:backward", "unknown option 'wieght'" },
  { "run:trajectory before forward", function()
      local w = scene(); local run = cq.rollout { world = w, steps = 2, final = final }; return run:trajectory() end,
    "trajectory", "call run:forward(s0) first" },
  { "running that returns a vector", function()
      local w, s = scene()
      local run = cq.rollout { world = w, steps = 2, final = final, running = function(t, st) return t:centroid(st, "x") end }
      return run:forward(s)
    end, "running must return a scalar tape node", "a node of size 2" },
  ---------------------------------------------------------------- cq.objectives
  { "forward_progress axis = 4", function() return cq.objectives.forward_progress(4) end,
    "forward_progress", "axis must be", "[1, 3]", "4" },
  { "forward_progress axis = 1.5", function() return cq.objectives.forward_progress(1.5) end, "axis must be an integer", "1.5" },
  { "forward_progress idx = 'all'", function() return cq.objectives.forward_progress(1, "all") end,
    "idx must be nil (all particles) or a non-empty list", '"all"' },
  { "forward_progress axis 3 in a 2D world", function()
      local _, s = scene(); return cq.objectives.forward_progress(3)(cq.tape(), s) end,
    "forward_progress", "axis must be in [1, 2]", "3" },
  { "forward_progress idx past the world's particles", function()
      local _, s = scene(); return cq.objectives.forward_progress(1, { 1, 7 })(cq.tape(), s) end,
    "cq.objectives.forward_progress", "idx[2] must be a particle index in [1, 4]", "7" },
  { "distance_to_target target of 4 numbers", function() return cq.objectives.distance_to_target { 1, 2, 3, 4 } end,
    "distance_to_target", "target must be a point", "a table of 4" },
  { "distance_to_target 3D target in a 2D world", function()
      local _, s = scene(); return cq.objectives.distance_to_target { 0.5, 0.5, 0.5 }(cq.tape(), s) end,
    "cq.objectives.distance_to_target", "target must have 2 coordinates (the world's dim)", "a table of 3" },
  { "distance_to_target idx = {}", function() return cq.objectives.distance_to_target({ 0.5, 0.5 }, {}) end,
    "idx must be nil (all particles) or a non-empty list", "a table of 0" },
  { "final_velocity idx = {0}", function() return cq.objectives.final_velocity { 0 } end, "idx[1] must be >= 1", "0" },
  { "keyframes key -1", function() return cq.objectives.keyframes({ [-1] = { 0, 0 } }, { 1 }) end,
    "keyframes keys must be control steps >= 0", "-1" },
  { "keyframes entry with a string", function() return cq.objectives.keyframes({ [0] = { 0.5, "y" } }, { 1 }) end,
    "cq.objectives.keyframes", "keyframes[0][2] must be a number", '"y"' },
  { "keyframes entry for 3 coordinates in a 2D world", function()
      local _, s = scene()
      return cq.objectives.keyframes({ [0] = { 0.5, 0.5, 0.5, 0.6, 0.6, 0.6 } }, { 1, 2 })(cq.tape(), s, nil, 0)
    end, "cq.objectives.keyframes", "keyframes[0] must have dim * 2 = 4 coordinates", "a table of 6" },
  { "keyframes at a step the rollout never reaches warns", warn = true, function()
      local w = scene()
      return cq.rollout { world = w, steps = 2, final = final,
        running = cq.objectives.keyframes({ [5] = { 0.5, 0.5 } }, { 1 }) }
    end, "cq.rollout", "keyframes", "step 5", "steps = 2" },
  { "weighted {}", function() return cq.objectives.weighted {} end, "weighted", "list must be a non-empty list", "a table of 0" },
  { "weighted weight = nan", function() return cq.objectives.weighted { { final, 0 / 0 } } end,
    "list[1][2] (weight) must be a number", "nan" },
  { "actuation_penalty as a final term", function()
      local w, s = scene()
      local run = cq.rollout { world = w, steps = 2, final = cq.objectives.actuation_penalty() }
      return run:forward(s)
    end, "cq.objectives.actuation_penalty", "u (the actuation) must be a tape node", "running term", "nil" },
  ---------------------------------------------------------------- cq.tape and cq.param
  { "param n = 0", function() return cq.param { n = 0 } end, "cq.param", "n must be", "[1, 134217728]", "0" },
  { "param unknown option", function() return cq.param { size = 2 } end, "cq.param", "unknown option 'size'" },
  { "param rows = 0", function() return cq.param { n = 2, rows = 0 } end, "rows must be nil or a positive integer that divides n (2)", "0" },
  { "param init list too short", function() return cq.param { n = 3, init = { 1, 2 } } end,
    "cq.param", "init must be a number, a table of 3 numbers or a function", "a table of 2" },
  { "param init list too long", function() return cq.param { n = 3, init = { 1, 2, 3, 4 } } end,
    "init must be a number, a table of 3 numbers or a function", "a table of 4" },
  { "param init function giving a string", function() return cq.param { n = 2, init = function() return "a" end } end,
    "cq.param", "init(1) must be a number", '"a"' },
  { "param init = nan", function() return cq.param { n = 2, init = 0 / 0 } end, "cq.param", "init must be a number", "nan" },
  { "param init = inf", function() return cq.param { n = 2, init = math.huge } end, "init must be finite", "inf" },
  { "param:set(1, nan)", function() local p = p2(); return p:set(1, 0 / 0) end, "param:set", "x must be a number", "nan" },
  { "param:get(3) of 2", function() local p = p2(); return p:get(3) end, "param:get", "i must be an integer in [1, 2]", "3" },
  { "tape:const with a string entry", function() return cq.tape():const { 1, "a" } end,
    "cq.tape:const", "values[2] must be a number", '"a"' },
  { "tape:const(2.5)", function() return cq.tape():const(2.5) end, "cq.tape:const", "length must be an integer", "2.5" },
  { "tape:scale by nan", function() local t = cq.tape(); return t:scale(t:const { 1 }, 0 / 0) end,
    "cq.tape:scale", "s must be a number", "nan" },
  { "tape:index(a, 1.5)", function() local t = cq.tape(); return t:index(t:const { 1, 2 }, 1.5) end,
    "cq.tape:index", "i must be an integer in [1, 2]", "1.5" },
  { "tape:matvec of a 2 x 3 W by 2 values", function()
      local t = cq.tape(); return t:matvec(cq.param { n = 6, rows = 2 }, t:const { 1, 2 }) end,
    "cq.tape:matvec", "x must have 3 values (W is 2 x 3)", "2" },
  { "tape:concat(5)", function() return cq.tape():concat(5) end, "cq.tape:concat", "list must be a list of tape nodes", "5" },
  { "tape:value(x, 0)", function() local t = cq.tape(); return t:value(t:const { 1 }, 0) end, "cq.tape:value", "[1, 1]", "0" },
  ---------------------------------------------------------------- optimizers
  { "adam without params", function() return cq.adam {} end, "cq.adam", "params must be a non-empty list", "nil" },
  { "adam params = {}", function() return cq.adam { params = {} } end, "params must be a non-empty list", "a table of 0" },
  { "adam params = {5}", function() return cq.adam { params = { 5 } } end, "params[1] must be a parameter", "5" },
  { "adam lr = 0", function() return cq.adam { params = { p2() }, lr = 0 } end, "cq.adam", "lr must be > 0", "0" },
  { "adam lr = '0.1'", function() return cq.adam { params = { p2() }, lr = "0.1" } end, "lr must be a number", '"0.1"' },
  { "adam lr = inf", function() return cq.adam { params = { p2() }, lr = math.huge } end, "lr must be finite", "inf" },
  { "adam beta1 = 1", function() return cq.adam { params = { p2() }, beta1 = 1 } end, "beta1 must be in [0, 1)", "1" },
  { "adam beta2 = -0.1", function() return cq.adam { params = { p2() }, beta2 = -0.1 } end, "beta2 must be in [0, 1)", "-0.1" },
  { "adam eps = 0", function() return cq.adam { params = { p2() }, eps = 0 } end, "eps must be > 0", "0" },
  { "adam clip_norm = 0", function() return cq.adam { params = { p2() }, clip_norm = 0 } end, "clip_norm must be > 0", "0" },
  { "adam the same param twice", function() local p = p2(); return cq.adam { params = { p, p } } end,
    "params[2] appears twice", "cq.param: 2 values" },
  { "adam group lr = 0", function() return cq.adam { params = { { params = { p2() }, lr = 0 } } } end,
    "cq.adam params[1]", "lr must be > 0", "0" },
  { "adam group with an unknown key", function() return cq.adam { params = { { params = { p2() }, learning_rate = 1 } } } end,
    "cq.adam params[1]", "unknown option 'learning_rate'" },
  { "adam group params = {}", function() return cq.adam { params = { { params = {} } } } end,
    "params must be a non-empty list", "a table of 0" },
  { "adam bounds[p] = '0..1'", function() local p = p2(); return cq.adam { params = { p }, bounds = { [p] = "0..1" } } end,
    "bounds[param] must be {lo, hi}", '"0..1"' },
  { "adam bounds lo table of the wrong length", function()
      local p = p2(); return cq.adam { params = { p }, bounds = { [p] = { { 0, 0, 0 }, 1 } } } end,
    "bounds[param] lo must be a number or a table of 2 numbers", "a table of 3" },
  { "adam bounds with nan", function() local p = p2(); return cq.adam { params = { p }, bounds = { [p] = { 0 / 0, 1 } } } end,
    "cq.adam", "bounds[param] lo must be a number, not nan", "nan" },
  { "sgd momentum = 1", function() return cq.sgd { params = { p2() }, momentum = 1 } end, "cq.sgd", "momentum must be in [0, 1)", "1" },
  { "sgd momentum = -0.5", function() return cq.sgd { params = { p2() }, momentum = -0.5 } end, "momentum must be in [0, 1)", "-0.5" },
  { "sgd unknown option beta1", function() return cq.sgd { params = { p2() }, beta1 = 0.9 } end, "cq.sgd", "unknown option 'beta1'" },
  { "opt:scale_lr(0)", function() local o = cq.adam { params = { p2() } }; return o:scale_lr(0) end,
    "cq.adam:scale_lr", "f must be > 0", "0" },
  { "opt.lr = -1", function() local o = cq.adam { params = { p2() } }; o.lr = -1 end, "cq.adam", "lr must be > 0", "-1" },
  { "opt.lr of an optimizer with 2 groups", function()
      local o = cq.adam { params = { { params = { p2() } }, { params = { p2() } } } }; return o.lr end,
    "lr: this optimizer has 2 parameter groups" },
  { "opt:load_state(nil)", function() local o = cq.adam { params = { p2() } }; return o:load_state(nil) end,
    "cq.adam:load_state", "state must be the state() of a cq.adam", "nil" },
  { "adam:load_state of an sgd state", function()
      local p = p2(); local o = cq.adam { params = { p } }; return o:load_state(cq.sgd { params = { p } }:state()) end,
    "state must be the state() of a cq.adam", '"cq.sgd"' },
  { "keep_best without params", function() return cq.keep_best {} end, "cq.keep_best", "params must be a non-empty list", "nil" },
  { "keep_best params = {5}", function() return cq.keep_best { params = { 5 } } end, "params[1] must be a parameter", "5" },
  { "keeper:consider('x')", function() local k = cq.keep_best { params = { p2() } }; return k:consider("x") end,
    "keeper:consider", "loss must be a number", '"x"' },
  { "keeper:consider(nan)", function() local k = cq.keep_best { params = { p2() } }; return k:consider(0 / 0) end,
    "keeper:consider", "loss must be a number, not nan", "nan" },
  { "keeper:load_state(5)", function() local k = cq.keep_best { params = { p2() } }; return k:load_state(5) end,
    "keeper:load_state", "state must be a keeper's state()", "5" },
  ---------------------------------------------------------------- cq.nlopt
  { "nlopt algorithm = 'bfgs'", function() return cq.nlopt { algorithm = "bfgs", params = { p2() }, objective = final } end,
    "cq.nlopt", "algorithm must be one of lbfgs, slsqp, mma, ccsaq", '"bfgs"' },
  { "nlopt params = {}", function() return cq.nlopt { algorithm = "lbfgs", params = {}, objective = final } end,
    "params must be a non-empty list", "a table of 0" },
  { "nlopt objective missing", function() return cq.nlopt { algorithm = "lbfgs", params = { p2() } } end,
    "objective must be a function", "nil" },
  { "nlopt maxeval = 0", function() return cq.nlopt { algorithm = "lbfgs", params = { p2() }, objective = final, maxeval = 0 } end,
    "maxeval must be a positive integer", "0" },
  { "nlopt maxeval = 2.5", function() return cq.nlopt { algorithm = "lbfgs", params = { p2() }, objective = final, maxeval = 2.5 } end,
    "maxeval must be a positive integer", "2.5" },
  { "nlopt ftol_rel = -1", function() return cq.nlopt { algorithm = "lbfgs", params = { p2() }, objective = final, ftol_rel = -1 } end,
    "ftol_rel must be >= 0", "-1" },
  { "nlopt xtol_rel = nan", function() return cq.nlopt { algorithm = "lbfgs", params = { p2() }, objective = final, xtol_rel = 0 / 0 } end,
    "xtol_rel must be a number", "nan" },
  { "nlopt inequality with lbfgs", function()
      return cq.nlopt { algorithm = "lbfgs", params = { p2() }, objective = final, inequality = { { fn = final } } } end,
    'algorithm "lbfgs" does not support inequality constraints', "slsqp" },
  { "nlopt equality with mma", function()
      return cq.nlopt { algorithm = "mma", params = { p2() }, objective = final, equality = { { fn = final } } } end,
    'algorithm "mma" does not support equality constraints', "slsqp" },
  { "nlopt inequality[1].fn = 5", function()
      return cq.nlopt { algorithm = "slsqp", params = { p2() }, objective = final, inequality = { { fn = 5 } } } end,
    "inequality[1] must be a table {fn = function", "a table of 0" },
  { "nlopt inequality[1].tol = -1", function()
      return cq.nlopt { algorithm = "slsqp", params = { p2() }, objective = final, inequality = { { fn = final, tol = -1 } } } end,
    "inequality[1].tol must be a number >= 0", "-1" },
  { "nlopt bounds lo > hi", function()
      local p = p2(); return cq.nlopt { algorithm = "lbfgs", params = { p }, objective = final, bounds = { [p] = { 1, 0 } } } end,
    "bounds entry 1 must be numbers lo <= hi", "(got {1, 0})" }, -- (was quoted, "{1, 0}": issue 64 finding 10)
  -- issue 64 finding 10: {lo = 5, hi = 6} read as no bounds at all
  { "nlopt bounds {lo = 5, hi = 6}", function()
      local p = p2(); return cq.nlopt { algorithm = "lbfgs", params = { p }, objective = final,
        bounds = { [p] = { lo = 5, hi = 6 } } } end,
    "cq.nlopt: bounds[param] must be {lo, hi} (numbers or per-entry tables), without other keys; it has the keys " ..
    "'hi', 'lo'", "(got {hi = 6, lo = 5})" },
  { "nlopt bounds of three entries", function()
      local p = p2(); return cq.nlopt { algorithm = "lbfgs", params = { p }, objective = final,
        bounds = { [p] = { 0, 1, 2 } } } end,
    "cq.nlopt: bounds[param] must be {lo, hi}", "it has the key 3" },
  { "adam bounds {lo = 0, hi = 1}", function()
      local p = p2(); return cq.adam { params = { p }, bounds = { [p] = { lo = 0, hi = 1 } } } end,
    "cq.adam: bounds[param] must be {lo, hi} (numbers, tables of 2 numbers, or nil), without other keys", "'lo'",
    "(got {hi = 1, lo = 0})" },
  { "sgd group bounds {lo = 0}", function()
      return cq.sgd { params = { { params = { p2() }, bounds = { lo = 0 } } } } end,
    "cq.sgd params[1]: bounds must be {lo, hi}", "it has the key 'lo'" },
  { "sgd bounds lo > hi", function() local p = p2(); return cq.sgd { params = { p }, bounds = { [p] = { 1, 0 } } } end,
    "cq.sgd: bounds[param] must have lo <= hi (got 1 > 0)" }, -- (was quoted, "1 > 0")
  { "nlopt bounds per-entry table of the wrong length", function()
      local p = p2(); return cq.nlopt { algorithm = "lbfgs", params = { p }, objective = final, bounds = { [p] = { 0, { 1 } } } } end,
    "cq.nlopt", "bounds[param] hi must be a number or a table of 2 numbers", "a table of 1" },
  { "nlopt recover = 5", function() return cq.nlopt { algorithm = "lbfgs", params = { p2() }, objective = final, recover = 5 } end,
    "recover must be a table {retries = integer} or false", "5" },
  { "nlopt recover.retries = -1", function()
      return cq.nlopt { algorithm = "lbfgs", params = { p2() }, objective = final, recover = { retries = -1 } } end,
    "recover.retries must be", "[0, 1000]", "-1" },
  { "nlopt on_iteration = 5", function()
      return cq.nlopt { algorithm = "lbfgs", params = { p2() }, objective = final, on_iteration = 5 } end,
    "on_iteration must be a function", "5" },
  ---------------------------------------------------------------- cq.augmented_lagrangian (arguments)
  { "auglag params = {}", function() return cq.augmented_lagrangian { params = {}, loss = final, constraints = { { zero, 0 } } } end,
    "cq.augmented_lagrangian", "params must be a non-empty list", "a table of 0" },
  { "auglag params = {5}", function() return cq.augmented_lagrangian { params = { 5 }, loss = final, constraints = { { zero, 0 } } } end,
    "cq.augmented_lagrangian", "params[1] must be a parameter", "5" },
  { "auglag loss missing", function() return cq.augmented_lagrangian { params = { p2() }, constraints = { { zero, 0 } } } end,
    "loss must be a function", "nil" },
  { "auglag constraints = {}", function() return cq.augmented_lagrangian { params = { p2() }, loss = final, constraints = {} } end,
    "constraints must be a non-empty list", "a table of 0" },
  { "auglag limit '0.1'", function()
      return cq.augmented_lagrangian { params = { p2() }, loss = final, constraints = { { zero, "0.1" } } } end,
    "constraints[1] must be {f (a function(w) -> C), limit (a number)}", "a table of 2" },
  { "auglag limit nan", function()
      return cq.augmented_lagrangian { params = { p2() }, loss = final, constraints = { { zero, 0 / 0 } } } end,
    "constraints[1] limit must be a number", "nan" },
  { "auglag negative limit of a pulses binarization", function()
      local pu = cq.pulses { outputs = 1, steps = 5, dt = 0.01 }
      return cq.augmented_lagrangian { params = pu.params, loss = function() return 0 end,
        constraints = { { pu.binarization.sgn, -0.1 } } }
    end, "cq.augmented_lagrangian", "constraints[1] limit must be >= 0", "no design can reach", "-0.1" },
  { "auglag negative limit of a constraint that starts >= 0 warns", warn = true, function()
      local p = cq.param { n = 1, init = 0.5 }
      return cq.augmented_lagrangian { params = { p }, loss = function() return 0 end, outer_max = 1, inner_max = 1,
        constraints = { { function() return p.v[0] ^ 2 end, -0.1 } } }
    end, "cq.augmented_lagrangian", "constraints[1]", "limit -0.1", "outer_max" },
  { "auglag lr = 0", function() return cq.augmented_lagrangian { params = { p2() }, loss = final, constraints = { { zero, 0 } }, lr = 0 } end,
    "lr must be > 0", "0" },
  { "auglag c = 1", function() return cq.augmented_lagrangian { params = { p2() }, loss = final, constraints = { { zero, 0 } }, c = 1 } end,
    "c must be in (0, 1)", "1" },
  { "auglag a = 1", function() return cq.augmented_lagrangian { params = { p2() }, loss = final, constraints = { { zero, 0 } }, a = 1 } end,
    "a must be > 1", "1" },
  { "auglag outer_max = 0", function()
      return cq.augmented_lagrangian { params = { p2() }, loss = final, constraints = { { zero, 0 } }, outer_max = 0 } end,
    "outer_max must be", ">= 1", "0" },
  { "auglag tol = -1", function()
      return cq.augmented_lagrangian { params = { p2() }, loss = final, constraints = { { zero, 0 } }, tol = -1 } end,
    "tol must be >= 0", "-1" },
  { "auglag recover.shrink = 1", function()
      return cq.augmented_lagrangian { params = { p2() }, loss = final, constraints = { { zero, 0 } }, recover = { shrink = 1 } } end,
    "recover.shrink must be in (0, 1)", "1" },
  { "auglag on_iteration = 5", function()
      return cq.augmented_lagrangian { params = { p2() }, loss = final, constraints = { { zero, 0 } }, on_iteration = 5 } end,
    "cq.augmented_lagrangian", "on_iteration must be nil or a function", "5" },
  ---------------------------------------------------------------- cq.trajectory
  { "trajectory world = nil", function() return cq.trajectory { steps = 2 } end, "cq.trajectory", "world must be a cq.world", "nil" },
  { "trajectory steps = 0", function() local w = scene(); return cq.trajectory { world = w, steps = 0 } end, "steps must be", ">= 1", "0" },
  { "trajectory record = {'q'}", function() local w = scene(); return cq.trajectory { world = w, steps = 2, record = { "q" } } end,
    "record[1] must be one of x, v, F", '"q"' },
  { "trajectory:x(3) of 2 steps", function() local tr = traj(); return tr:x(3) end, "trajectory:x", "k must be a control step in [0, 2]", "3" },
  { "trajectory:x(0, 0)", function() local tr = traj(); return tr:x(0, 0) end, "trajectory:x", "p must be", "[1, 4]", "0" },
  { "trajectory:u(2) of 2 steps", function() local tr = traj(); return tr:u(2) end, "trajectory:u", "[0, 1]", "2" },
  { "trajectory:running(-1)", function() local tr = traj(); return tr:running(-1) end, "trajectory:running", "[0, 1]", "-1" },
  { "trajectory:centroid idx = {}", function() local tr = traj(); return tr:centroid(0, {}) end,
    "trajectory:centroid", "idx must be nil (all) or a non-empty list", "a table of 0" },
  { "trajectory:centroid field F", function() local tr = traj(); return tr:centroid(0, nil, "F") end,
    "trajectory:centroid", "field must be x or v", '"F"' },
  { "trajectory:v without v recorded", function() local tr = traj(); return tr:v(0) end,
    "trajectory:v", 'field "v" was not recorded', "record" },
  { "trajectory:export('')", function() local tr = traj(); return tr:export("") end,
    "trajectory:export", "prefix must be a path prefix", '""' },
  { "trajectory:export('out/')", function() local tr = traj(); return tr:export(TMP .. "/") end,
    "prefix must be a path prefix", "/\"" },
  { "trajectory:export(5)", function() local tr = traj(); return tr:export(5) end, "prefix must be a path prefix", "5" },
  { "trajectory:record_state k = 3 of 2", function() local tr, _, s = traj(); return tr:record_state(3, s) end,
    "trajectory:record_state", "[0, 2]", "3" },
  { "trajectory:record_running(0, nan)", function() local tr = traj(); return tr:record_running(0, 0 / 0) end,
    "trajectory:record_running", "h must be a number", "nan" },
  ---------------------------------------------------------------- cq.frames / video
  { "frames.write trajectory = nil", function() return cq.frames.write { dir = TMP } end,
    "cq.frames.write", "trajectory must be a cq.trajectory", "nil" },
  { "frames.write dir missing", function() local tr = traj(); return cq.frames.write { trajectory = tr } end,
    "dir must be a directory name", "nil" },
  { "frames.write every = 0", function() local tr = traj(); return cq.frames.write { trajectory = tr, dir = TMP, every = 0 } end,
    "every must be", ">= 1", "0" },
  { "frames.write prefix 'a/b'", function() local tr = traj(); return cq.frames.write { trajectory = tr, dir = TMP, prefix = "a/b" } end,
    "prefix must be a file name prefix", '"a/b"' },
  { "render_state width = 4", function() local w, s = scene(); return cq.frames.render_state { world = w, state = s, width = 4 } end,
    "cq.frames.render_state", "width must be", "[8, 16384]", "4" },
  { "render_state view of 3 numbers", function()
      local w, s = scene(); return cq.frames.render_state { world = w, state = s, view = { 0, 0, 1 } } end,
    "view must be a table of 4 numbers", "a table of 3" },
  { "render_state view inverted", function()
      local w, s = scene(); return cq.frames.render_state { world = w, state = s, view = { 1, 0, 0, 1 } } end,
    "view must be {x0, y0, x1, y1} with x1 > x0", "1, 0, 0, 1" },
  { "render_state radius = -1", function() local w, s = scene(); return cq.frames.render_state { world = w, state = s, radius = -1 } end,
    "radius must be in", "-1" },
  { "render_state k = -1", function() local w, s = scene(); return cq.frames.render_state { world = w, state = s, k = -1 } end,
    "k must be >= 0", "-1" },
  { "render_state height in 2D", function() local w, s = scene(); return cq.frames.render_state { world = w, state = s, height = 100 } end,
    "height is an option of 3D frames", "100" },
  { "render_state world missing", function() local _, s = scene(); return cq.frames.render_state { state = s } end,
    "world must be a cq.world", "nil" },
  { "render_state u = 5", function() local w, s = scene(); return cq.frames.render_state { world = w, state = s, u = 5 } end,
    "u must be a table of actuation values", "5" },
  { "video out missing", function() return cq.frames.video { dir = TMP } end, "cq.frames.video", "out must be a file name", "nil" },
  { "video fps = 0", function() return cq.frames.video { dir = TMP, out = TMP .. "/a.mp4", fps = 0 } end, "fps must be in (0, 1000]", "0" },
  { "video crf = 52", function() return cq.frames.video { dir = TMP, out = TMP .. "/a.mp4", crf = 52 } end, "crf must be", "[0, 51]", "52" },
  { "video dir and frames both", function() return cq.frames.video { dir = TMP, frames = { "a.png" }, out = TMP .. "/a.mp4" } end,
    "give exactly one of dir", "nil" },
  { "video frames of a missing file", function() return cq.frames.video { frames = { TMP .. "/none.png" }, out = TMP .. "/a.mp4" } end,
    "frames[1] must be an existing PNG file", "none.png" },
  { "video dir without frames", function() return cq.frames.video { dir = TMP, out = TMP .. "/a.mp4" } end,
    "cq.frames.video", "no frames in", "frame_0000.png" },
  ---------------------------------------------------------------- cq.export
  { "export.vtk trajectory and state both", function()
      local tr, _, s = traj(); return cq.export.vtk { trajectory = tr, state = s, dir = TMP } end,
    "cq.export.vtk", "give exactly one of trajectory", "nil" },
  { "export.vtk state without path", function() local _, s = scene(); return cq.export.vtk { state = s } end,
    "path must be a file name", "nil" },
  { "export.ply every = 0", function() local tr = traj(); return cq.export.ply { trajectory = tr, dir = TMP, every = 0 } end,
    "cq.export.ply", "every must be", ">= 1", "0" },
  { "export.vtk fields = {'pressure'}", function()
      local tr = traj(); return cq.export.vtk { trajectory = tr, dir = TMP, fields = { "pressure" } } end,
    "fields[1] must be one of velocity, speed, J, von_mises", '"pressure"' },
  { "export.vtk name 'a/b'", function() local tr = traj(); return cq.export.vtk { trajectory = tr, dir = TMP, name = "a/b" } end,
    "name must be a file name without /", '"a/b"' },
  { "export.vtk u of the wrong length", function()
      local _, s = scene(); return cq.export.vtk { state = s, path = TMP .. "/s.vtp", u = { 1, 2 } } end,
    "u must be a table of 1 actuation values", "a table of 2" },
  { "export.vtk velocity not recorded", function()
      local tr = traj(); return cq.export.vtk { trajectory = tr, dir = TMP, fields = { "velocity" } } end,
    "field velocity needs v", "record" },
  ---------------------------------------------------------------- cq.plot
  { "plot csv and log both", function() return cq.plot { csv = "a.csv", log = {}, y = "loss", out = TMP .. "/a.png" } end,
    "cq.plot", "give exactly one of csv", "nil" },
  { "plot csv file missing", function() return cq.plot { csv = TMP .. "/none.csv", y = "loss", out = TMP .. "/a.png" } end,
    "cq.plot", "cannot read", "none.csv" },
  { "plot y = {}", function() return cq.plot { csv = TMP .. "/none.csv", y = {}, out = TMP .. "/a.png" } end,
    "y must be a column name or a non-empty list", "a table of 0" },
  { "plot width = 1", function() return cq.plot { csv = "a.csv", y = "loss", out = TMP .. "/a.png", width = 1 } end,
    "width must be", "[16, 10000]", "1" },
  { "plot style = 'bars'", function() return cq.plot { csv = "a.csv", y = "loss", out = TMP .. "/a.png", style = "bars" } end,
    "style must be one of lines, linespoints, points", '"bars"' },
  { "plot logscale = 'z'", function() return cq.plot { csv = "a.csv", y = "loss", out = TMP .. "/a.png", logscale = "z" } end,
    "logscale must be one of x, y, xy", '"z"' },
  { "plot out = 'dir/'", function() return cq.plot { csv = "a.csv", y = "loss", out = TMP .. "/" } end,
    "out must be a file name", "/\"" },
  { "plot a column the CSV lacks", function()
      shell.write_file(TMP .. "/log.csv", "iteration,loss\n1,2\n")
      return cq.plot { csv = TMP .. "/log.csv", y = "los", out = TMP .. "/a.png" }
    end, "y[1] must be a column of", "iteration, loss", '"los"' },
  { "plot an empty CSV", function()
      shell.write_file(TMP .. "/empty.csv", "")
      return cq.plot { csv = TMP .. "/empty.csv", y = "loss", out = TMP .. "/a.png" }
    end, "cq.plot", "empty.csv is empty (no header line)" },
  ---------------------------------------------------------------- cq.log
  { "log name with '/'", function() return cq.log { name = "a/b", columns = {}, dir = TMP } end,
    "cq.log", "name must be a file name without '/'", '"a/b"' },
  { "log columns = 'loss'", function() return cq.log { name = "a", columns = "loss", dir = TMP } end,
    "columns must be a list of column names", '"loss"' },
  { "log dir = ''", function() return cq.log { name = "a", columns = {}, dir = "" } end, "dir must be a directory name", '""' },
  { "log resume = -1", function() return cq.log { name = "a", columns = {}, dir = TMP, resume = -1 } end,
    "resume must be >= 0", "-1" },
  { "log resume of a file with other columns", function()
      shell.write_file(TMP .. "/r.csv", "iteration,loss\n1,2\n")
      return cq.log { name = "r", columns = { "iteration", "reward" }, dir = TMP, resume = 1 }
    end, "cq.log", "cannot resume", "r.csv", "iteration,loss", "iteration,reward" },
  { "log:iteration(0, ...)", function()
      local l = cq.log { name = "i", columns = { "loss" }, dir = TMP, quiet = true }; return l:iteration(0, 5, {}) end,
    "log:iteration", "it must be", ">= 1", "0" },
  { "log:iteration values = 5", function()
      local l = cq.log { name = "i", columns = { "loss" }, dir = TMP, quiet = true }; return l:iteration(1, 5, 5) end,
    "values must be a table of named values", "5" },
  { "log:iteration with a value for no column warns", warn = true, function()
      local l = cq.log { name = "c", columns = { "iteration", "loss" }, dir = TMP, quiet = true }
      return l:iteration(1, 5, { los = 2 })
    end, "log:iteration", "los", "not a column", "iteration, loss" },
  { "log:iteration with a table value", function()
      local l = cq.log { name = "t", columns = { "loss" }, dir = TMP, quiet = true }; return l:iteration(1, 5, { loss = { 1 } }) end,
    "log:iteration", "values.loss must be a number, a string or a boolean", "a table of 1" },
  { "log:note(1, 5)", function() local l = cq.log { name = "n", columns = {}, dir = TMP, quiet = true }; return l:note(1, 5) end,
    "log:note", "text must be a string", "5" },
  { "grad_norm('x')", function() return cq.grad_norm("x") end, "cq.grad_norm", "params must be a list", '"x"' },
  ---------------------------------------------------------------- cq.args
  { "args: a number key given 'abc'", nopos = true, function() return cq.args({ "iters=abc" }, { { "iters", 100, "" } }) end,
    "iters must be a number", '"abc"' },
  { "args: below min", nopos = true, function() return cq.args({ "iters=0" }, { { "iters", 100, "", min = 1 } }) end,
    "iters must be >= 1", "0" },
  { "args: above max", nopos = true, function() return cq.args({ "p=2" }, { { "p", 0.5, "", max = 1 } }) end,
    "p must be <= 1", "2" },
  { "args: not a whole number", nopos = true, function() return cq.args({ "iters=2.5" }, { { "iters", 100, "", integer = true } }) end,
    "iters must be a whole number", "2.5" },
  { "args: not one of", nopos = true, function() return cq.args({ "precision=f16" }, { { "precision", "f32", "", oneof = { "f32", "f64" } } }) end,
    "precision must be one of f32, f64", '"f16"' },
  { "args: a boolean given 'maybe'", nopos = true, function() return cq.args({ "video=maybe" }, { { "video", false, "" } }) end,
    "video must be true or false", '"maybe"' },
  { "args: unknown key", nopos = true, function() return cq.args({ "iter=3" }, { { "iters", 100, "" } }) end,
    'unknown key "iter"', "iters" },
  { "args: key given twice", nopos = true, function() return cq.args({ "iters=3", "iters=4" }, { { "iters", 100, "" } }) end,
    "key iters given twice" },
  { "args: too many positional values", nopos = true, function() return cq.args({ "3", "4" }, { { "iters", 100, "" } }) end,
    "2 positional values given, the script takes at most 1" },
  { "args: positional after key=value", nopos = true, function()
      return cq.args({ "iters=3", "f64" }, { { "iters", 100, "" }, { "precision", "f32", "" } }) end,
    'argument 2 ("f64") has no key=' },
  { "args: a number given 'nan'", nopos = true, function() return cq.args({ "dt=nan" }, { { "dt", 0.1, "" } }) end,
    "dt must be a number", '"nan"' },
  { "args: argv that is not a list", function() return cq.args("iters=3", { { "iters", 100, "" } }) end,
    "cq.args", "argv must be nil or a list of strings", '"iters=3"' },
  { "args: spec entry without a key", function() return cq.args({}, { { 3, 100, "" } }) end,
    "cq.args", "spec[1][1] (the key) must be an identifier", "3" },
  { "args: spec key listed twice", function() return cq.args({}, { { "a", 1, "" }, { "a", 2, "" } }) end,
    "cq.args", "spec[2]: key a is listed twice", '"a"' },
  { "args: default outside oneof", function() return cq.args({}, { { "p", "f16", "", oneof = { "f32", "f64" } } }) end,
    "cq.args", "spec[1] (p): the default must be one of f32, f64", '"f16"' },
  { "args: default below min", function() return cq.args({}, { { "iters", 0, "", min = 1 } }) end,
    "cq.args", "spec[1] (iters): the default must be >= 1", "0" },
  { "args: type = 'int'", function() return cq.args({}, { { "iters", 1, "", type = "int" } }) end,
    "cq.args", "spec[1] (iters): type must be one of number, string, boolean", '"int"' },
  ---------------------------------------------------------------- cq.study spaces and define
  { "study.grid{}", function() return cq.study.grid {} end, "cq.study.grid", "needs at least one parameter" },
  { "study.grid{a = 5}", function() return cq.study.grid { a = 5 } end, "a must be a non-empty list of values", "5" },
  { "study.grid a value that is a table", function() return cq.study.grid { a = { {} } } end,
    "row 1: parameter a must be a number, string or boolean", "a table of 0" },
  { "study.list{}", function() return cq.study.list {} end, "cq.study.list", "expects a non-empty list of rows", "a table of 0" },
  { "study.list{5}", function() return cq.study.list { 5 } end, "row 1 must be a table of parameters", "5" },
  { "study.lhs n = 0", function() return cq.study.lhs { n = 0, ranges = { x = { 0, 1 } } } end, "cq.study.lhs", "n must be", "[1, 1000000]", "0" },
  { "study.lhs without ranges", function() return cq.study.lhs { n = 3 } end, "needs ranges = {name = {lo, hi}}", "nil" },
  { "study.lhs log range through 0", function() return cq.study.lhs { n = 3, ranges = { x = { 0, 1 } }, log = { x = true } } end,
    "log-spaced ranges.x must be positive", "0" },
  { "study.random n = 2.5", function() return cq.study.random { n = 2.5, ranges = { x = { 0, 1 } } } end, "n must be an integer", "2.5" },
  { "study.random choices m = {}", function() return cq.study.random { n = 2, choices = { m = {} } } end,
    "choices.m must be a non-empty list", "a table of 0" },
  { "study.lhs seed = -1", function() return cq.study.lhs { n = 2, seed = -1, ranges = { x = { 0, 1 } } } end,
    "seed must be >= 0", "-1" },
  { "study.lhs log for a parameter with no range", function()
      return cq.study.lhs { n = 2, ranges = { x = { 1, 2 } }, log = { y = true } } end,
    "cq.study.lhs", "log.y names no parameter of ranges", "x" },
  { "study.product(5)", function() return cq.study.product(5) end, "argument 1 must be a cq.study space", "5" },
  { "study.concat()", function() return cq.study.concat() end, "cq.study.concat", "expects one or more spaces" },
  { "study.define metrics = {}", function()
      return cq.study.define { name = "s", space = cq.study.grid { a = { 1 } }, run = print, metrics = {} } end,
    "metrics must be a non-empty list", "a table of 0" },
  { "study.define metric 'a b'", function()
      return cq.study.define { name = "s", space = cq.study.grid { a = { 1 } }, run = print, metrics = { "a b" } } end,
    "metrics[1] must be an identifier", '"a b"' },
  { "study.define goal = 'best'", function()
      return cq.study.define { name = "s", space = cq.study.grid { a = { 1 } }, run = print, metrics = { "y" }, goal = "best" } end,
    "goal must be one of min, max", '"best"' },
  { "study.define threads = 0", function()
      return cq.study.define { name = "s", space = cq.study.grid { a = { 1 } }, run = print, metrics = { "y" }, threads = 0 } end,
    "threads must be", "[1, 4096]", "0" },
  { "study.define time_limit = 0", function()
      return cq.study.define { name = "s", space = cq.study.grid { a = { 1 } }, run = print, metrics = { "y" }, time_limit = 0 } end,
    "time_limit must be > 0", "0" },
  { "study.define space = 5", function() return cq.study.define { name = "s", space = 5, run = print, metrics = { "y" } } end,
    "space must be a cq.study space", "5" },
  { "study.define args without script", function()
      return cq.study.define { name = "s", space = cq.study.grid { a = { 1 } }, run = print, metrics = { "y" }, args = {} } end,
    "args needs script", "a table of 0" },
  { "study.define by names no parameter", function()
      return cq.study.define { name = "s", space = cq.study.grid { a = { 1 } }, run = print, metrics = { "y" }, by = { "b" } } end,
    "cq.study.define", "by[1] must be a parameter of the space (a)", '"b"' },
  { "study.define depends = {5}", function()
      return cq.study.define { name = "s", space = cq.study.grid { a = { 1 } }, script = "x.lua", metrics = { "y" }, depends = { 5 } } end,
    "cq.study.define", "depends[1] must be a file path", "5" },
  { "study.define a parameter named like a metric", function()
      return cq.study.define { name = "s", space = cq.study.grid { y = { 1 } }, run = print, metrics = { "y" } } end,
    "a parameter and a metric share the name y" },
  { "study.define the same row twice", function()
      return cq.study.define { name = "s", space = cq.study.list { { a = 1 }, { a = 1 } }, run = print, metrics = { "y" } } end,
    "rows 1 and 2 are the same configuration" },
}

describe("bad input on the control and workflow side (issue 64): a clear error at the caller's line", function()
  for _, c in ipairs(cases) do
    local expected = { unpack(c, 3) }
    if c.warn then
      it(c[1] .. " (a warning)", function()
        local warned = warn.warnings_of(c[2])
        assert.is_true(#warned >= 1, "no warning")
        for _, w in ipairs(warned) do print("  " .. w) end
        has(table.concat(warned, "\n"), "cqlua: warning: ", unpack(expected))
      end)
    else
      it(c[1], function()
        local msg = err_of(function() local r = c[2](); return r end) -- (a case that tail-calls reports this line)
        has(msg, unpack(expected))
        assert.is_falsy(msg:find("table: 0x", 1, true), "an address instead of a value: " .. msg)
        if not c.nopos then
          assert.is_truthy(msg:find("badinput_workflow_spec.lua:%d+: "), "not at the caller's line: " .. msg)
          assert.is_falsy(msg:find("lua/cq/", 1, true), "position is inside the library: " .. msg)
        end
      end)
    end
  end
end)

describe("legal input is not warned of", function()
  it("a rollout with a running loss and accumulate = max, keyframes the rollout reaches, a reachable limit", function()
    local w = scene()
    local warned = warn.warnings_of(function()
      cq.rollout { world = w, steps = 2, final = final, accumulate = "max",
        running = cq.objectives.keyframes({ [1] = { 0.5, 0.5 } }, { 1 }) }
      local p = cq.param { n = 1, init = 0.5 }
      cq.augmented_lagrangian { params = { p }, loss = function() return 0 end, outer_max = 1, inner_max = 1,
        constraints = { { function() return p.v[0] ^ 2 end, 0.1 } } }
    end)
    assert.are.same({}, warned)
  end)
  it("cq.save into a directory that does not exist creates it, as docs/api.md says (issue 64 finding 14)", function()
    local p = p2()
    p.v[0], p.v[1] = 0.25, -3
    local path = TMP .. "/missing/deeper/run.json"
    assert.is_nil(io.open(TMP .. "/missing"))
    assert.are.same({}, warn.warnings_of(cq.save, path, { p = { p } }))
    local q = p2()
    cq.load(path, { p = { q } })
    assert.are.same({ 0.25, -3 }, { q.v[0], q.v[1] })
  end)
end)

-- `cqlua study ...` in a child process: the message names the option or file and the value; exit status 1.
describe("cqlua study: command-line and study-file errors", function()
  local EXE = require("cq._paths").exe
  local dir = shell.tmpdir()
  shell.write_file(dir .. "/s.lua", [[
local study = require "cq.study"
return study.define { name = "s", space = study.grid { a = { 1, 2 } }, metrics = { "y" },
  run = function(row) return { y = row.a } end }
]])
  shell.write_file(dir .. "/num.lua", "return 5\n")
  shell.write_file(dir .. "/syntax.lua", "return study.define {\n")
  local function study(args) return shell.sh("cd " .. dir .. " && " .. EXE .. " study " .. args) end
  local cli = {
    { "run without a file", "run", "give the study file" },
    { "run of a missing file", "run missing.lua", "cannot load missing.lua" },
    { "--jobs 0", "run s.lua --jobs 0", "--jobs must be an integer >= 1", "(got 0)" },
    { "--rows 5-2", "run s.lua --rows 5-2", "--rows: the range 5-2 is empty" },
    { "--rows 9 of 2", "run s.lua --rows 9", "row 9 is not in 1..2" },
    { "--rows x", "run s.lua --rows x", "--rows must be row numbers", "x" },
    { "unknown option", "run s.lua --bogus", "unknown option --bogus" },
    { "--oversubscribe=1", "run s.lua --oversubscribe=1", "--oversubscribe takes no value" },
    { "--dir without a value", "list s.lua --dir", "--dir needs a value" },
    { "collect --top 0", "collect s.lua --top 0", "--top must be an integer >= 1", "(got 0)" },
    { "collect --by zz", "collect s.lua --by zz", "--by zz is not a parameter", "(a)" },
    { "unknown command", "frob s.lua", "unknown command frob" },
    { "cluster bogus", "cluster bogus", "cluster takes start, stop or status", '"bogus"' },
    { "a study file returning a number", "list num.lua", "num.lua must return cq.study.define", "number" },
    { "a study file with a syntax error", "list syntax.lua", "cannot load syntax.lua" },
    { "the file after an option", "run --jobs 2 s.lua", "the study file comes right after the command", "--jobs" },
  }
  for _, c in ipairs(cli) do
    it(c[1], function()
      local out, rc = study(c[2])
      print("  " .. out)
      assert.are.equal(1, rc, out)
      has(out, unpack(c, 3))
      assert.is_falsy(out:find("stack traceback", 1, true), "a traceback: " .. out)
    end)
  end
  it("collect names a truncated manifest, and exits 1", function()
    local out, rc = study("run s.lua --jobs 1 --threads 1 --dir " .. dir .. "/out")
    assert.are.equal(0, rc, out)
    local p = io.popen("ls " .. dir .. "/out/rows/*/manifest.json")
    local manifest = p:read("*l")
    p:close()
    local text = shell.read_file(manifest)
    shell.write_file(manifest, text:sub(1, math.floor(#text / 2)))
    out, rc = study("collect s.lua --dir " .. dir .. "/out")
    print("  " .. out)
    assert.are.equal(1, rc, out)
    has(out, manifest, "not valid JSON")
  end)
end)
