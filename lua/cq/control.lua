-- Observers (state -> observation vector) and controllers (observation -> actuation in [-1, 1]), as functions
-- recorded on a cq.tape so closed-loop gradients flow from the actuation back into parameters and state.
local tape = require "cq.tape"
local check = require "cq._check"

local M = {}
local OBSERVER_OPTIONS = check.option_set("cq.centroid_observer", { "groups", "fields", "relative", "clock" })
local CLOCK_OPTIONS = check.option_set("cq.centroid_observer clock", { "waves", "period" })
local MLP_OPTIONS = check.option_set("cq.mlp", { "inputs", "outputs", "hidden", "activation", "seed", "scale" })
local OPEN_LOOP_OPTIONS = check.option_set("cq.open_loop", { "steps", "outputs", "init", "every", "shape", "start" })
local SINE_OPTIONS = check.option_set("cq.sine", { "outputs", "waves", "omega", "dt", "seed" })
local PULSES_OPTIONS = check.option_set("cq.pulses", { "outputs", "steps", "dt", "dt_pul", "amplitude", "a_pul",
  "sigma", "init_sgn", "init_abs" })

-- A controller's init option for a parameter of n values: a finite number (in [lo, hi] when given), a list of n such
-- numbers, or a function i -> number (its values checked as they come), as an init cq.param takes.
local function checked_init(where, name, init, n, lo, hi)
  if init == nil then return nil end
  local what = string.format("%s must be a %snumber%s, a function or a list of %d", name, lo and "" or "finite ",
    lo and string.format(" in [%g, %g]", lo, hi) or "", n)
  if type(init) == "number" then
    if init ~= init or init == math.huge or init == -math.huge or (lo and (init < lo or init > hi)) then
      check.fail(where, what, init)
    end
  elseif type(init) == "table" then
    if #init ~= n then check.fail(where, what, init) end
    for i = 1, n do check.number(where, name .. "[" .. i .. "]", init[i], lo, hi) end
  elseif type(init) == "function" then
    local f = init
    return function(i) return check.number(where, name .. "(" .. i .. ")", f(i), lo, hi) end
  else
    check.fail(where, what, init)
  end
  return init
end

---------------------------------------------------------------- observers
--- Centroid observer (seed 000 sec. 4): mean position (and optionally velocity) of each particle group.
--- groups = { {p1, p2, ...}, ... } (1-based particle indices); fields = {"x"} or {"x", "v"} (default both);
--- relative = true: positions relative to the centroid of all the groups (so a walker that has moved sees the
--- same inputs as at the start); clock = { waves = 4, period = 50 }: append sin(2 pi k / period + 2 pi j / waves),
--- j = 0..waves-1, at control step k (the phase inputs of DiffTaichi's walkers; period in control steps).
function M.centroid_observer(opts)
  local where = "cq.centroid_observer"
  check.options(where, opts, OBSERVER_OPTIONS)
  local groups, fields = opts.groups, opts.fields or { "x", "v" }
  if type(groups) ~= "table" or #groups == 0 then
    check.fail(where, "groups must be a non-empty list of particle index lists", groups)
  end
  for i, g in ipairs(groups) do
    if type(g) ~= "table" or #g == 0 then
      check.fail(where, "groups[" .. i .. "] must be a non-empty list of particle indices", g)
    end
    for j, p in ipairs(g) do check.integer(where, "groups[" .. i .. "][" .. j .. "]", p, 1) end
  end
  if opts.relative ~= nil and type(opts.relative) ~= "boolean" then
    check.fail(where, "relative must be true or false", opts.relative)
  end
  if type(fields) ~= "table" or #fields == 0 then check.fail(where, "fields must be a list drawn from x, v", fields) end
  for i, f in ipairs(fields) do check.oneof(where, "fields[" .. i .. "]", f, { "x", "v" }) end
  local waves, period = 0, 1
  if opts.clock then
    check.options(where .. ".clock", opts.clock, CLOCK_OPTIONS)
    waves = check.integer(where, "clock.waves", opts.clock.waves or 4, 1)
    period = check.number(where, "clock.period", opts.clock.period or 50, 0, math.huge, { open_lo = true })
  end
  local all
  if opts.relative then
    all = {}
    for _, g in ipairs(groups) do for _, p in ipairs(g) do all[#all + 1] = p end end
  end
  return {
    groups = groups, -- (cq.rollout checks the indices against its world's particles)
    size = function(dim) return #groups * #fields * dim + waves end,
    observe = function(_, t, state, k)
      local parts, center = {}, all and t:centroid(state, "x", all)
      for _, g in ipairs(groups) do
        for _, f in ipairs(fields) do
          local c = t:centroid(state, f, g)
          if center and f == "x" then c = t:sub(c, center) end
          parts[#parts + 1] = c
        end
      end
      if waves > 0 then
        local phase = {}
        for j = 0, waves - 1 do phase[j + 1] = math.sin(2 * math.pi * ((k or 0) / period + j / waves)) end
        parts[#parts + 1] = t:const(phase)
      end
      return t:concat(parts)
    end,
  }
end

--- k-means clusters of the rest positions (deterministic Lloyd iterations from evenly spaced seeds), returned as
--- lists of particle indices: the "automatically segmented" groups of the centroid observer.
function M.kmeans_groups(state, k, particles, iterations)
  local where = "cq.kmeans_groups"
  if type(state) ~= "table" or type(state.get) ~= "function" then
    check.fail(where, "state must be a cq state (rest positions)", state)
  end
  local n, dim = state.n, state.dim
  if particles ~= nil and type(particles) ~= "table" then
    check.fail(where, "particles must be nil (all) or a list of particle indices", particles)
  end
  for i, p in ipairs(particles or {}) do check.integer(where, "particles[" .. i .. "]", p, 1, n) end
  check.integer(where, "k", k, 1, particles and #particles > 0 and #particles or n)
  check.integer(where, "iterations", iterations or 20, 0)
  particles = particles or {}
  if #particles == 0 then for p = 1, n do particles[p] = p end end
  local centers = {}
  for c = 1, k do centers[c] = state:get("x", particles[math.floor((c - 0.5) * #particles / k) + 1]) end
  local assign = {}
  for _ = 1, iterations or 20 do
    for i, p in ipairs(particles) do
      local x, best, bd = state:get("x", p), 1, math.huge
      for c = 1, k do
        local d = 0
        for a = 1, dim do d = d + (x[a] - centers[c][a]) ^ 2 end
        if d < bd then best, bd = c, d end
      end
      assign[i] = best
    end
    local sums, counts = {}, {}
    for c = 1, k do sums[c], counts[c] = {}, 0 for a = 1, dim do sums[c][a] = 0 end end
    for i, p in ipairs(particles) do
      local c, x = assign[i], state:get("x", p)
      counts[c] = counts[c] + 1
      for a = 1, dim do sums[c][a] = sums[c][a] + x[a] end
    end
    for c = 1, k do if counts[c] > 0 then for a = 1, dim do centers[c][a] = sums[c][a] / counts[c] end end end
  end
  local groups = {}
  for c = 1, k do groups[c] = {} end
  for i, p in ipairs(particles) do table.insert(groups[assign[i]], p) end
  local out = {}
  for c = 1, k do if #groups[c] > 0 then out[#out + 1] = groups[c] end end
  return out
end

---------------------------------------------------------------- controllers
-- A deterministic uniform generator in [0, 1) (linear congruential, the same on every machine).
local function lcg(seed)
  return function() seed = (seed * 1103515245 + 12345) % 2147483648 return seed / 2147483648 end
end

local function randn(rng)
  return math.sqrt(-2 * math.log(1 - rng())) * math.cos(2 * math.pi * rng())
end

--- Multi-layer perceptron controller: hidden layers (default 64, 64) with ReLU or tanh, tanh output.
--- opts: inputs, outputs, hidden, activation ("relu" | "tanh"), seed, scale (initial weight scale factor).
function M.mlp(opts)
  local where = "cq.mlp"
  check.options(where, opts, MLP_OPTIONS)
  local inputs = check.integer(where, "inputs", opts.inputs, 1)
  local outputs = check.integer(where, "outputs", opts.outputs, 1)
  local hidden = opts.hidden or { 64, 64 }
  if type(hidden) ~= "table" then check.fail(where, "hidden must be a list of layer sizes such as {64, 64}", hidden) end
  if opts.scale ~= nil then check.number(where, "scale", opts.scale, 0, math.huge, { open_lo = true }) end
  if opts.seed ~= nil then check.number(where, "seed", opts.seed) end
  local act = opts.activation or "relu"
  check.oneof(where, "activation", act, { "relu", "tanh" })
  local rng = lcg(opts.seed or 1)
  local sizes = { inputs }
  for i, h in ipairs(hidden) do sizes[#sizes + 1] = check.integer(where, "hidden[" .. i .. "]", h, 1) end
  sizes[#sizes + 1] = outputs
  local layers, params = {}, {}
  for l = 1, #sizes - 1 do
    local fan_in, fan_out = sizes[l], sizes[l + 1]
    if fan_in * fan_out > tape.MAX_PARAM then
      check.fail(where, string.format("layer %d would have %d x %d weights, more than %d (inputs, hidden, outputs)", l,
        fan_out, fan_in, tape.MAX_PARAM), fan_in * fan_out)
    end
    local s = (opts.scale or 1) * math.sqrt(2 / (fan_in + fan_out)) -- Glorot
    local W = tape.param(fan_in * fan_out, function() return s * randn(rng) end, fan_out)
    local b = tape.param(fan_out, 0)
    layers[l] = { W = W, b = b }
    params[#params + 1] = W
    params[#params + 1] = b
  end
  return {
    params = params, inputs = inputs, outputs = outputs, -- (cq.rollout checks them against its observer and world)
    act = function(_, t, obs)
      local h = obs
      for l, L in ipairs(layers) do
        h = t:add(t:matvec(L.W, h), L.b)
        if l < #layers then h = act == "relu" and t:relu(h) or t:tanh(h) else h = t:tanh(h) end
      end
      return h
    end,
  }
end

--- Open-loop controller: one trainable actuation vector per knot (ignores the observation). A knot every `every`
--- control steps (default 1: one per step); shape = "hold" (default): a knot's value holds over its `every` steps;
--- shape = "linear": the actuation goes linearly from knot j (at control step j * every) to knot j + 1, so it never
--- jumps (a pressure ramped instead of stepped); start = a number or a list of `outputs` numbers: with "linear", knot
--- 0's value, fixed (not a parameter: the actuation starts from it, e.g. 0 for a chamber at rest).
--- params = { u }, u.v[i * outputs + a - 1] the i-th trainable knot (0-based; with start, i = j - 1 for knot j).
function M.open_loop(opts)
  local where = "cq.open_loop"
  check.options(where, opts, OPEN_LOOP_OPTIONS)
  local steps = check.integer(where, "steps", opts.steps, 1)
  local outputs = check.integer(where, "outputs", opts.outputs, 1)
  local every = check.integer(where, "every", opts.every or 1, 1)
  local shape = check.oneof(where, "shape", opts.shape or "hold", { "hold", "linear" })
  local start
  if opts.start ~= nil then
    if shape ~= "linear" then
      check.fail(where, 'start needs shape = "linear" (the value at t = 0 that a ramp starts from)', shape)
    end
    if type(opts.start) == "table" and #opts.start ~= outputs then
      check.fail(where, "start must be a number or a list of outputs = " .. outputs .. " numbers (got a list of " ..
        #opts.start .. ")", opts.start)
    end
    start = {}
    for a = 1, outputs do
      local v, name = opts.start, "start"
      if type(v) == "table" then v, name = v[a], "start[" .. a .. "]" end
      start[a] = check.number(where, name, v)
    end
  end
  -- knots the steps reach: hold: one per segment of `every` steps; linear: also the end of the last step's segment
  local knots = shape == "hold" and math.ceil(steps / every) or math.ceil((steps - 1) / every) + 1
  local first = start and 1 or 0 -- the first trainable knot
  local n = (knots - first) * outputs
  if type(opts.init) == "table" and #opts.init ~= n then
    check.fail(where, "init must be a number, a function or a list of " .. n .. " numbers (" .. (knots - first) ..
      " trainable knots x " .. outputs .. " outputs; got a list of " .. #opts.init .. ")", opts.init)
  end
  local u = tape.param(n, checked_init(where, "init", opts.init, n) or 0)
  local function check_step(k, level)
    if type(k) ~= "number" or k < 0 or k >= steps or k % 1 ~= 0 then
      check.fail(where, "control step k must be in [0, " .. (steps - 1) .. "] (the open-loop controller has " ..
        steps .. " steps; give the rollout at most as many)", k, level + 1)
    end
  end
  -- Control step k's actuation as (knot, weight) pairs: (j0, w0) and, for "linear", (j0 + 1, 1 - w0)
  local function weights(k)
    local j = math.floor(k / every)
    if shape == "hold" then return j, 1 end
    local f = (k - j * every) / every
    return j, 1 - f, j + 1, f
  end
  -- Each (knot, weight) pair's parameter index of output a (nil for the fixed start) or value, to f(index, w, value)
  local function each(k, a, f)
    local j0, w0, j1, w1 = weights(k)
    for _, jw in ipairs { { j0, w0 }, { j1, w1 } } do
      local j, w = jw[1], jw[2]
      if j and w ~= 0 then
        if j < first then f(nil, w, start[a]) else
          local i = (j - first) * outputs + a - 1
          f(i, w, u.v[i])
        end
      end
    end
  end
  local function value(k, a)
    local v = 0
    each(k, a, function(_, w, x) v = v + w * x end)
    return v
  end
  return {
    params = { u }, every = every, shape = shape, steps = steps, outputs = outputs,
    --- The actuation of control step k (0-based), output a (1-based, default 1): act's, without a tape.
    value = function(_, k, a)
      check_step(k, 2)
      a = a or 1
      if type(a) ~= "number" or a < 1 or a > outputs or a % 1 ~= 0 then
        check.fail(where, "value's output must be in [1, " .. outputs .. "]", a, 2)
      end
      return value(k, a)
    end,
    act = function(_, t, _, k) -- k: 0-based control step
      check_step(k, 2)
      local y = t:const(outputs)
      for a = 1, outputs do y.v[a - 1] = value(k, a) end
      y.back = function(y)
        for a = 1, outputs do each(k, a, function(i, w) if i then u.g[i] = u.g[i] + w * y.g[a - 1] end end) end
      end
      return y
    end,
  }
end

--- DiffTaichi's sine controller: u_i = tanh(sum_j W_ij sin(omega t + 2 pi j / waves) + b_i), t = k dt.
function M.sine(opts)
  local where = "cq.sine"
  check.options(where, opts, SINE_OPTIONS)
  local outputs = check.integer(where, "outputs", opts.outputs, 1)
  local waves = check.integer(where, "waves", opts.waves or 4, 1)
  local omega = check.number(where, "omega", opts.omega or 20)
  local dt = check.number(where, "dt", opts.dt, 0, math.huge, { open_lo = true })
  if opts.seed ~= nil then check.number(where, "seed", opts.seed) end
  local rng = lcg(opts.seed or 1)
  local W = tape.param(outputs * waves, function() return 0.01 * randn(rng) end, outputs)
  local b = tape.param(outputs, 0)
  return {
    params = { W, b }, outputs = outputs,
    act = function(_, t, _, k)
      local phase = {}
      for j = 1, waves do phase[j] = math.sin(omega * k * dt + 2 * math.pi * (j - 1) / waves) end
      return t:tanh(t:add(t:matvec(W, t:const(phase)), b))
    end,
  }
end

--- Seed 004's pulse actuation (sec. 3.2.1): actuator j's signal at control step k (t = k dt) is
--- u_j(t) = amplitude tanh(sum_i alpha_ij a_pul exp(-(t - t_i)^2 / (2 sigma^2))) (eq. 24) over pulses at
--- t_i = (i + 1/2) dt_pul covering steps * dt, with pulse densities alpha = a_sgn (a_abs + 1) / 2 (eq. 26). params:
--- a_sgn and a_abs (pulses x outputs, bounds [-1, 1] kept by the optimizers by projection); binarization.sgn and
--- .abs: their constraints C_pul (eqs. 27-28) in cq.augmented_lagrangian's form. The signals are in the engine's sign
--- (through a stress actuator u > 0 contracts), the opposite of eq. 7's (u > 0 expands): seed 004's u is -u.
function M.pulses(opts)
  local where = "cq.pulses"
  check.options(where, opts, PULSES_OPTIONS)
  local outputs = check.integer(where, "outputs", opts.outputs, 1)
  local steps = check.integer(where, "steps", opts.steps, 1)
  local dt = check.number(where, "dt", opts.dt, 0, math.huge, { open_lo = true })
  local dt_pul = check.number(where, "dt_pul", opts.dt_pul or 0.002, 0, math.huge, { open_lo = true })
  local amp = check.number(where, "amplitude", opts.amplitude or 1, 0, math.huge, { open_lo = true })
  local a_pul = check.number(where, "a_pul", opts.a_pul or 0.2, 0, math.huge, { open_lo = true })
  local sigma = check.number(where, "sigma", opts.sigma or 0.01, 0, math.huge, { open_lo = true })
  local n_pul = math.max(1, math.ceil(steps * dt / dt_pul - 1e-9))
  local sgn = tape.param(n_pul * outputs, checked_init(where, "init_sgn", opts.init_sgn, n_pul * outputs, -1, 1) or 0,
    n_pul)
  local abs = tape.param(n_pul * outputs, checked_init(where, "init_abs", opts.init_abs, n_pul * outputs, -1, 1) or 0,
    n_pul)
  sgn.bounds, abs.bounds = { -1, 1 }, { -1, 1 }
  local reach = math.ceil(6 * sigma / dt_pul) -- pulses farther than 6 sigma add below 1e-8 of their height
  local function window(t)
    local c = math.floor(t / dt_pul)
    return math.max(0, c - reach), math.min(n_pul - 1, c + reach)
  end
  -- eqs. 27-28: C = mean (1 + a)(1 - a), 0 when every density is -1 or 1; f(w) adds w dC/da to a.g
  local function binarization(q)
    return function(w)
      local C = 0
      for i = 0, q.n - 1 do
        C = C + (1 - q.v[i] * q.v[i])
        if w ~= 0 then q.g[i] = q.g[i] - w * 2 * q.v[i] / q.n end
      end
      return C / q.n
    end
  end
  -- C_pul is a mean of (1 + a)(1 - a) over a in [-1, 1]: never below 0 (cq.augmented_lagrangian refuses a lower limit)
  local bin = { sgn = binarization(sgn), abs = binarization(abs) }
  for _, f in pairs(bin) do check.lower_bounds[f] = { 0, "a pulse binarization (mean of (1 + a)(1 - a))" } end
  return {
    params = { sgn, abs }, outputs = outputs,
    n_pulses = n_pul,
    binarization = bin, -- for cq.augmented_lagrangian
    act = function(_, t, _, k)
      local time, y = k * dt, t:const(outputs)
      local lo, hi = window(time)
      local inner = {}
      for j = 0, outputs - 1 do
        local z = 0
        for i = lo, hi do
          local e = sgn.v[i * outputs + j] * (abs.v[i * outputs + j] + 1) / 2
          z = z + e * a_pul * math.exp(-((time - (i + 0.5) * dt_pul) ^ 2) / (2 * sigma * sigma))
        end
        inner[j] = math.tanh(z)
        y.v[j] = amp * inner[j]
      end
      y.back = function(y)
        for j = 0, outputs - 1 do
          local gz = y.g[j] * amp * (1 - inner[j] ^ 2)
          for i = lo, hi do
            local q = i * outputs + j
            local gk = gz * a_pul * math.exp(-((time - (i + 0.5) * dt_pul) ^ 2) / (2 * sigma * sigma))
            sgn.g[q] = sgn.g[q] + gk * (abs.v[q] + 1) / 2
            abs.g[q] = abs.g[q] + gk * sgn.v[q] / 2
          end
        end
      end
      return y
    end,
  }
end

return M
