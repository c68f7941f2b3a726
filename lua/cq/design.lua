-- Design variables (seed 000 secs. 4-5): trainable parameters mapped to the world's per-particle parameters (E, nu,
-- mass or density, rest volume, actuation weight) and to the rest shape (a stretch about an origin) through
-- differentiable maps. design:apply writes the parameters and returns the initial state; design:backward(memo)
-- pulls the memo's dL/dparameter and dL/ds_0 back into each variable's gradient. A cq.rollout given the design
-- calls both, so a rollout's backward fills the design gradients with no user code.
--
-- The maps run in the order the variables were made, each on the values the earlier ones left: a stretch that
-- lengthens an arm scales its rest volume and mass, and a density variable made after it multiplies the new volume.
local ffi = require "ffi"
local check = require "cq._check"
local tape = require "cq.tape"
local topology = require "cq.topology"

local M = {}
local Design = {}
Design.__index = Design
M.Design = Design

local darr = ffi.typeof("double[?]")
local iarr = ffi.typeof("int32_t[?]")

local OPTIONS = check.option_set("cq.design", { "world" })
local VARIABLE_OPTIONS = check.option_set("design:variable", { "name", "field", "per", "groups", "particles", "map",
  "scale", "offset", "range", "init", "bounds" })
local LAYOUT_OPTIONS = check.option_set("design:layout", { "name", "state", "groups", "particles", "radius", "p",
  "beta", "eps", "init", "bounds" })
local ACTUATORS_OPTIONS = check.option_set("design:actuators", { "name", "state", "outputs", "layout", "groups",
  "particles", "radius", "p", "beta", "eps", "init" })
local STRETCH_OPTIONS = check.option_set("design:stretch", { "name", "axis", "origin", "groups", "particles", "init",
  "bounds" })
local BACKWARD_OPTIONS = check.option_set("design:backward", { "accumulate" })
local PICTURE_OPTIONS = check.option_set("design:picture", { "state", "path", "what", "layout", "actuators", "width",
  "height", "slice", "hide", "fade", "colormap", "title", "camera" })
local COLORS_OPTIONS = check.option_set("design:colors", { "what", "layout", "actuators", "fade", "colormap" })
local SIGNALS_OPTIONS = check.option_set("design:signals_plot", { "controller", "steps", "dt", "path", "csv", "width",
  "height", "title", "sign" })

--- cq.design{ world }: an empty design over the world's current per-particle parameters (their base values).
function M.new(opts)
  check.options("cq.design", opts, OPTIONS)
  local w = opts.world
  if getmetatable(w) ~= require("cq").World then check.fail("cq.design", "world must be a cq.world", w) end
  local self = setmetatable({ world = w, n = w.n, dim = w.dim, params = {}, variables = {}, ops = {}, base = {},
    fields = {}, _cur = {}, _grad = {} }, Design)
  for _, name in ipairs(w._param_names) do
    local f = w._fields[name]
    if f.diff and f.shape == 0 then -- scalar ones (a vector's gradient is in memo.grad_params, not a design variable yet)
      self.fields[name] = true
      local b = darr(w.n)
      for p = 0, w.n - 1 do b[p] = w.params[name][p] end
      self.base[name] = b
    end
  end
  return self
end

function Design:__tostring()
  local names = {}
  for _, p in ipairs(self.params) do names[#names + 1] = p.name .. " (" .. p.n .. ")" end
  return "cq.design: " .. (#names > 0 and table.concat(names, ", ") or "no variables")
end

---------------------------------------------------------------- maps
-- Each map gives value, dvalue/dtheta, dvalue/dbase for a variable entry theta and the value b it replaces.
local MAPS = {
  scale = function() return function(th, b) return b * th, b, th end end,
  linear = function(o) return function(th) return o.offset + o.scale * th, o.scale, 0 end end,
  exp = function() return function(th, b) local e = math.exp(th) return b * e, b * e, e end end,
  sigmoid = function(o)
    local lo, hi = o.range[1], o.range[2]
    return function(th) local s = 1 / (1 + math.exp(-th)) return lo + (hi - lo) * s, (hi - lo) * s * (1 - s), 0 end
  end,
}
local MAP_NAMES = "scale, linear, exp, sigmoid or a function(theta, base) -> value, dvalue/dtheta, dvalue/dbase"

-- The particles (0-based int32 array) and, per particle, the variable entry it reads (0-based), and the entry count.
local function selection(self, where, opts, per)
  local list, slot, count = {}, {}, 0
  if opts.groups ~= nil and opts.particles ~= nil then check.fail(where, "give groups or particles, not both", "both") end
  if opts.groups ~= nil then
    if type(opts.groups) ~= "table" or #opts.groups == 0 then
      check.fail(where, "groups must be a non-empty list of groups (from robot:box, robot:ball, ...)", opts.groups)
    end
    for i, g in ipairs(opts.groups) do
      if type(g) ~= "table" or type(g.particles) ~= "table" then
        check.fail(where, "groups[" .. i .. "] must be a group with a particles list", g)
      end
      for _, p in ipairs(g.particles) do
        check.integer(where, "groups[" .. i .. "] particle", p, 1, self.n)
        list[#list + 1], slot[#slot + 1] = p - 1, i - 1
      end
    end
    count = #opts.groups
  else
    if per == "group" then check.fail(where, 'per = "group" needs groups', nil) end
    if opts.particles ~= nil then
      if type(opts.particles) ~= "table" or #opts.particles == 0 then
        check.fail(where, "particles must be a non-empty list of particle indices (1-based)", opts.particles)
      end
      for i, p in ipairs(opts.particles) do
        list[i], slot[i] = check.integer(where, "particles[" .. i .. "]", p, 1, self.n) - 1, i - 1
      end
    else
      for p = 1, self.n do list[p], slot[p] = p - 1, p - 1 end
    end
    count = #list
  end
  local seen = {}
  for _, p in ipairs(list) do
    if seen[p] then check.fail(where, "each particle may appear once in a variable's selection", p + 1) end
    seen[p] = true
  end
  if per == "scalar" then count = 1 for i = 1, #slot do slot[i] = 0 end
  elseif per == "particle" then for i = 1, #slot do slot[i] = i - 1 end count = #list end
  local m = #list
  local idx, sl = iarr(m), iarr(m)
  for i = 1, m do idx[i - 1], sl[i - 1] = list[i], slot[i] end
  return idx, sl, m, count
end

-- The variable's initial values: opts.init (a number, a table of count numbers or a function i -> number), else
-- guess(): the map's neutral value.
local function initial(where, init, count, guess)
  if init == nil then init = guess() end
  if type(init) == "table" and #init ~= count then
    check.fail(where, "init must have " .. count .. " values (one per variable entry)", "a table of " .. #init)
  end
  if type(init) ~= "number" and type(init) ~= "table" and type(init) ~= "function" then
    check.fail(where, "init must be a number, a table of " .. count .. " numbers or a function i -> number", init)
  end
  return init
end

local function check_bounds(where, bounds)
  if bounds == nil then return nil end
  if type(bounds) ~= "table" or type(bounds[1]) ~= "number" or type(bounds[2]) ~= "number" or
    not (bounds[1] <= bounds[2]) then -- (NaN fails lo <= hi)
    check.fail(where, "bounds must be {lo, hi} with lo <= hi (the variable's own range, kept by the optimizers)",
      check.shown(check.list_text(bounds)))
  end
  return { bounds[1], bounds[2] }
end

-- A new variable's cq.param with name and bounds, its name and values checked; nothing is registered yet
-- (Design:_register), so a variable refused later leaves the design as it was.
function Design:_param(where, name, count, init, bounds)
  if type(name) ~= "string" or name == "" then check.fail(where, "name must be a non-empty string", name) end
  if self.variables[name] then check.fail(where, "name must be unique in the design (" .. name .. " exists)", name) end
  local values = {}
  for i = 1, count do
    local x = init
    if type(init) == "function" then x = init(i) elseif type(init) == "table" then x = init[i] end
    if type(x) ~= "number" or x ~= x or x == math.huge or x == -math.huge then
      check.fail(where, "init must give finite values (entry " .. i .. ")", x)
    end
    values[i] = x
  end
  local theta = tape.param(count, values)
  theta.name, theta.bounds = name, bounds
  return theta
end

-- Registers a variable made by Design:_param with its op, once its map, run after the design's other variables at
-- their current values, gives values in the fields' valid ranges (Design:_dry_run).
function Design:_register(theta, op, where)
  op.theta = theta
  local ops = { unpack(self.ops) }
  ops[#ops + 1] = op
  self:_dry_run(where or "cq.design", ops, op)
  self.ops[#self.ops + 1] = op
  self.params[#self.params + 1] = theta
  self.variables[theta.name] = theta
  return theta
end

-- Registers a variable: a cq.param with name, bounds and its op.
function Design:_add(where, name, count, init, bounds, op)
  return self:_register(self:_param(where, name, count, init, bounds), op, where)
end

--- design:variable{ field, per, groups | particles, map, scale, offset, range, init, bounds, name } -> cq.param.
--- field: a differentiable per-particle parameter of the world (E, nu, mass, vol0, act_w) or "density" (sets mass =
--- density * current rest volume). per: "scalar" (default, one entry), "group" (one per group) or "particle" (one
--- per selected particle). The selection: groups, particles (1-based) or every particle. map: value = "scale":
--- base * theta (default; init 1), "linear": offset + scale * theta, "exp": base * exp(theta) (init 0),
--- "sigmoid": lo + (hi - lo) / (1 + exp(-theta)) with range = {lo, hi}, or a function(theta, base) returning
--- value, dvalue/dtheta, dvalue/dbase. base is the value the map replaces (the world's at cq.design, after earlier
--- variables). bounds = {lo, hi} on theta, kept by cq.adam / cq.sgd / cq.nlopt by projection.
function Design:variable(opts)
  local where = "design:variable"
  check.options(where, opts, VARIABLE_OPTIONS)
  local field = opts.field
  if field ~= "density" and not self.fields[field] then
    local known = {}
    for name in pairs(self.fields) do known[#known + 1] = name end
    table.sort(known)
    check.fail(where, "field must be density or a differentiable particle parameter (" .. table.concat(known, ", ") .. ")",
      field)
  end
  local per = check.oneof(where, "per", opts.per or "scalar", { "scalar", "group", "particle" })
  local idx, slot, m, count = selection(self, where, opts, per)
  local map, f = opts.map or "scale", nil
  local o = { scale = 1, offset = 0 }
  if type(map) == "function" then f = map
  elseif MAPS[map] then
    if map == "linear" then
      o.scale = check.number(where, "scale", opts.scale or 1)
      o.offset = check.number(where, "offset", opts.offset or 0)
      if o.scale == 0 then check.fail(where, "scale must be non-zero", 0) end
    elseif opts.scale ~= nil or opts.offset ~= nil then
      check.fail(where, 'scale and offset belong to map = "linear"', map)
    end
    if map == "sigmoid" then
      if type(opts.range) ~= "table" then check.fail(where, 'map = "sigmoid" needs range = {lo, hi}', opts.range) end
      local lo = check.number(where, "range[1]", opts.range[1])
      o.range = { lo, check.number(where, "range[2]", opts.range[2], lo, math.huge, { open_lo = true }) }
    end
    f = MAPS[map](o)
  else
    check.fail(where, "map must be " .. MAP_NAMES, map)
  end
  -- the neutral initial value: the map gives the current value back (scale, exp), or the mean current value
  local function guess()
    if map == "scale" then return 1 end
    if map == "exp" then return 0 end
    local base = field == "density" and nil or self.base[field]
    local mean = 0
    for i = 0, m - 1 do
      local p = idx[i]
      mean = mean + (base and base[p] or self.base.mass[p] / self.base.vol0[p])
    end
    mean = mean / m
    if map == "linear" then return (mean - o.offset) / o.scale end
    if map == "sigmoid" then
      local lo, hi = o.range[1], o.range[2]
      local s = math.min(math.max((mean - lo) / (hi - lo), 1e-6), 1 - 1e-6)
      return math.log(s / (1 - s))
    end
    check.fail(where, "init is required with a map function", nil)
  end
  local init = initial(where, opts.init, count, guess)
  local op = { kind = field == "density" and "density" or "field", field = field, idx = idx, slot = slot, m = m,
    f = f, saved = darr(2 * m) }
  return self:_add(where, opts.name or field, count, init, check_bounds(where, opts.bounds), op)
end

--- design:stretch{ axis, origin, groups | particles, init = 1, bounds, name } -> cq.param of one entry s: the rest
--- positions of the selection (every particle by default) are stretched by s along axis (all axes when nil) about
--- origin (a number on that axis, or a point), and their rest volume and mass by s (s^dim for all axes), keeping
--- the density. The initial state given to design:apply is the unstretched rest shape.
function Design:stretch(opts)
  local where = "design:stretch"
  check.options(where, opts, STRETCH_OPTIONS)
  local axis = opts.axis
  if axis ~= nil then check.integer(where, "axis", axis, 1, self.dim) end
  local origin = {}
  if type(opts.origin) == "number" and axis then
    for a = 1, self.dim do origin[a] = 0 end
    origin[axis] = opts.origin
  else
    check.vector(where, "origin", opts.origin, self.dim)
    for a = 1, self.dim do origin[a] = opts.origin[a] end
  end
  local idx, slot, m = selection(self, where, opts, "scalar")
  local op = { kind = "stretch", axis = axis, origin = origin, idx = idx, slot = slot, m = m,
    saved = darr(2 * m), x0 = darr(self.dim * m) }
  local theta = self:_add(where, opts.name or "stretch", 1, initial(where, opts.init, 1, function() return 1 end),
    check_bounds(where, opts.bounds), op)
  self.stretched = true
  return theta
end

-- The filter over the m selected particles idx at opts.state's positions (opts.radius, opts.p), and the
-- projection's opts.beta and the void fraction opts.eps, checked: shared by the material and actuator layouts.
local function topology_options(self, where, opts, idx, m)
  local n, dim, x = self.n, self.dim, opts.state.x
  local f = topology.filter(where, m, dim, function(i)
    local p, pt = idx[i], {}
    for a = 1, dim do pt[a] = x[(a - 1) * n + p] end
    return pt
  end, opts.radius, opts.p or 2)
  if m > 1 and f.nnz == m then -- each row holds its own particle only
    require("cq._warn").warn(string.format("cqlua: warning: %s: radius = %g reaches no other particle of the %d " ..
      "selected ones at state's positions, so the filter does nothing (each particle keeps its own value, and the " ..
      "layout is free to checker); give a radius of a few particle spacings", where, opts.radius, m))
  end
  local beta = check.number(where, "beta", opts.beta or 4, 0, math.huge, { open_lo = true })
  return f, beta, check.number(where, "eps", opts.eps or 1e-5, 0, 1)
end

--- design:layout{ state, groups | particles, radius, p = 2, beta = 4, eps = 1e-5, init = 0, bounds = {-1, 1}, name }
--- -> cq.param phi, one entry per selected particle: seed 004's material layout (sec. 3.1.1). phi is filtered over
--- the particles within radius of each other at state's positions (the rest shape; eqs. 14-15, neighbours found
--- once, here), projected to gamma in [0, 1] by the normalised sigmoid of shape beta (eq. 16), and scales the
--- particle's Young's modulus and mass (its density at the rest volume) by (1 - eps) gamma + eps (eqs. 11-13; the
--- Lame constants follow E). E0 and rho0 are the values before this variable (the world's, or earlier variables').
function Design:layout(opts)
  local where = "design:layout"
  check.options(where, opts, LAYOUT_OPTIONS)
  require("cq.state").check_arg(where, "state", opts.state, self.world)
  local idx, slot, m = selection(self, where, opts, "particle")
  local f, beta, eps = topology_options(self, where, opts, idx, m)
  local op = { kind = "layout", idx = idx, slot = slot, m = m, filter = f, beta = beta, eps = eps,
    saved = darr(2 * m), factor = darr(m), dfactor = darr(m), filtered = darr(m), gamma = darr(m), dgamma = darr(m),
    touches = { "E", "mass" } }
  return self:_add(where, opts.name or "layout", m, initial(where, opts.init, m, function() return 0 end),
    check_bounds(where, opts.bounds or { -1, 1 }), op)
end

--- design:actuators{ state, outputs, radius, layout?, groups | particles, p = 2, beta = 4, eps = 1e-5, init = 0,
--- name } -> cq.param psi of m x (outputs + 1) unbounded entries (particle-major: psi[i * (outputs + 1) + j]): seed
--- 004's actuator layout (sec. 3.1.2). psi is filtered like the material layout (eq. 20; the particles within radius
--- at state's positions) and projected per particle by a softmax of shape beta (eq. 21) to weights xi over the
--- outputs actuation signals and a last, passive one. Particle i is wired to the world's actuator i (the world must
--- have n_actuators = m; its act_id and an isotropic act_axis are set here: sigma_act = +u F F^T, eq. 7 with S = I
--- in the engine's sign, u > 0 contracting: seed 004's u is -u, docs/api.md "design:actuators", "Sign"),
--- and feels u_i = ((1 - eps) gamma_i^3 + eps) sum_j xi_ij u_hat_j (eqs. 18-19) through its act_w: gamma from
--- layout (a design:layout variable over the same particles), 1 without one. psi.controller(inner) turns a
--- controller of outputs signals u_hat (cq.pulses) into the world's m actuation values.
function Design:actuators(opts)
  local where = "design:actuators"
  check.options(where, opts, ACTUATORS_OPTIONS)
  require("cq.state").check_arg(where, "state", opts.state, self.world)
  local K = check.integer(where, "outputs", opts.outputs, 1)
  local layout
  if opts.layout ~= nil then
    for _, o in ipairs(self.ops) do if o.theta == opts.layout and o.kind == "layout" then layout = o end end
    if not layout then check.fail(where, "layout must be a variable of this design made by design:layout", opts.layout) end
  end
  local idx, m
  if opts.groups == nil and opts.particles == nil and layout then idx, m = layout.idx, layout.m
  else idx, _, m = selection(self, where, opts, "particle") end
  if layout then
    local same = layout.m == m
    for i = 0, m - 1 do same = same and layout.idx[i] == idx[i] end
    if not same then check.fail(where, "the layout must cover the same particles in the same order", "another set") end
  end
  local w, dim = self.world, self.dim
  if w.n_actuators ~= m then
    check.fail(where, "the world needs one actuator per particle of the actuator layout: n_actuators = " .. m,
      w.n_actuators)
  end
  local f, beta, eps = topology_options(self, where, opts, idx, m)
  local width = K + 1
  local psi = self:_param(where, opts.name or "actuators", m * width, initial(where, opts.init, m * width,
    function() return 0 end), nil) -- checked before the world is wired: a refused variable leaves it as it was
  local act_of = {}
  for i = 0, m - 1 do act_of[idx[i] + 1] = i end
  w:fill("act_id", function(p) return act_of[p] or -1 end)
  local axis = {}
  for a = 1, dim do axis[a] = 1 end
  w:fill("act_axis", axis)
  for a = 1, m do w:set_actuator(a, "stress") end
  local op = { kind = "actuators", idx = idx, m = m, K = K, width = width, filter = f, beta = beta, eps = eps,
    layout = layout, zf = darr(m * width), xi = darr(m * width), gxi = darr(m * width), gz = darr(m * width),
    factor = darr(m), saved = darr(m), touches = { "act_w" } }
  self:_register(psi, op, where)
  psi.controller = function(inner) return self:_mixer(op, inner) end
  return psi
end

-- The controller that mixes inner's K signals into the m particles' actuation with the weights xi of the last
-- design:apply (eq. 18; the passive column adds nothing); its backward adds dL/dxi into op.gxi for
-- design:backward.
function Design:_mixer(op, inner)
  if type(inner) ~= "table" or type(inner.act) ~= "function" then
    check.fail("psi.controller", "inner must be a controller (a table with act and params, e.g. cq.pulses)", inner, 3)
  end
  local m, K, width, xi, gxi = op.m, op.K, op.width, op.xi, op.gxi
  if type(inner.outputs) == "number" and inner.outputs ~= K then -- (a controller that says its count; else at act)
    check.fail("psi.controller", string.format("inner must give the actuator layout's %d signals (outputs)", K),
      check.shown(inner.outputs .. " outputs"), 3)
  end
  local yv, yg = ffi.new("double[?]", m), ffi.new("double[?]", m) -- the output node's storage, reused every step
  return {
    params = inner.params,
    act = function(_, t, obs, k)
      local uh = inner:act(t, obs, k)
      if type(uh) ~= "table" or uh.n ~= K then
        check.raise(string.format("psi.controller: the inner controller must give %d signals (outputs), gave %s", K,
          type(uh) == "table" and tostring(uh.n) or type(uh)))
      end
      -- signal by signal over the particles: LuaJIT compiles a loop over the K signals inside the particle loop as the
      -- root trace, with a trace exit per particle (the same sums in the same order either way)
      local y = t:_over(m, yv, yg)
      for i = 0, m - 1 do y.v[i] = 0 end
      for j = 0, K - 1 do
        local u = uh.v[j]
        for i = 0, m - 1 do y.v[i] = y.v[i] + xi[i * width + j] * u end
      end
      y.back = function(y)
        for j = 0, K - 1 do
          local u, gu = uh.v[j], uh.g[j]
          for i = 0, m - 1 do -- (no test for gi == 0: a branch that goes both ways costs more than the adds)
            local gi = y.g[i]
            gu = gu + xi[i * width + j] * gi
            gxi[i * width + j] = gxi[i * width + j] + gi * u
          end
          uh.g[j] = gu
        end
      end
      return y
    end,
  }
end

-- The projected layouts from design variable values, shared by design:apply and design:binarization: a material
-- layout's gamma and dgamma/dfiltered (eqs. 14-16), an actuator layout's softmax weights xi (eqs. 20-21).
local function layout_gamma(op, values, filtered, gamma, dgamma)
  topology.apply(op.filter, values, filtered)
  for i = 0, op.m - 1 do gamma[i], dgamma[i] = topology.project(op.beta, filtered[i]) end
end
local function actuator_weights(op, values, zf, xi)
  topology.apply_rows(op.filter, values, zf, op.width)
  for i = 0, op.m - 1 do topology.softmax(op.beta, zf, xi, i * op.width, op.width) end
end

-- The op of a variable made by design:layout or design:actuators (an error naming where otherwise).
local function layout_op(self, where, v)
  local op
  for _, o in ipairs(self.ops) do
    if o.theta == v and (o.kind == "layout" or o.kind == "actuators") then op = o end
  end
  if not op then check.fail(where, "the variable must be made by design:layout or design:actuators", v) end
  return op
end

--- design:binarization(v) -> f: seed 004's binarization constraint on a material layout phi (design:layout; eq.
--- 22: C_mat = mean over its particles of gamma (1 - gamma), 0 for a binary layout, 1/4 at most) or an actuator
--- layout psi (design:actuators; eq. 23: C_act = mean of 1 - |xi|^2, 0 when every xi is one-hot, K / (K + 1) at
--- most). f(w) returns C at v's current values and, when w ~= 0, adds w dC/dv to v.g (cq.augmented_lagrangian's
--- form). It filters and projects v itself rather than reading the last design:apply: the optimiser also asks for
--- C after a step, before any rollout has applied the stepped design.
function Design:binarization(v)
  local where = "design:binarization"
  local op = layout_op(self, where, v)
  if op.kind == "actuators" then
    local m, width = op.m, op.width
    local zf, xi, gxi, gz = darr(m * width), darr(m * width), darr(m * width), darr(m * width)
    local f = function(w)
      actuator_weights(op, v.v, zf, xi)
      local C = 0
      for q = 0, m * width - 1 do C = C - xi[q] * xi[q] end
      if w ~= 0 then
        for q = 0, m * width - 1 do gxi[q] = -2 * w * xi[q] / m end
        for i = 0, m - 1 do topology.softmax_t(op.beta, xi, gxi, gz, i * width, width) end
        topology.apply_rows_t(op.filter, gz, v.g, width)
      end
      return 1 + C / m
    end
    check.lower_bounds[f] = { 0, "an actuator layout's binarization (mean of 1 - |xi|^2)" } -- for the optimisers
    return f
  end
  local filtered, gamma, dgamma, g = darr(op.m), darr(op.m), darr(op.m), darr(op.m)
  local f = function(w)
    layout_gamma(op, v.v, filtered, gamma, dgamma)
    local C = 0
    for i = 0, op.m - 1 do C = C + gamma[i] * (1 - gamma[i]) end
    if w ~= 0 then
      for i = 0, op.m - 1 do g[i] = w * (1 - 2 * gamma[i]) * dgamma[i] / op.m end
      topology.apply_t(op.filter, g, v.g)
    end
    return C / op.m
  end
  check.lower_bounds[f] = { 0, "a material layout's binarization (mean of gamma (1 - gamma))" }
  return f
end

---------------------------------------------------------------- pictures
-- The layout op of variable v made by design:<kind> (an error naming option otherwise), or with v nil the first op
-- of that kind (nil when none).
local function pick(self, where, option, v, kind)
  if v ~= nil then
    for _, o in ipairs(self.ops) do if o.theta == v and o.kind == kind then return o end end
    check.fail(where, option .. " must be a variable of this design made by design:" .. kind, v)
  end
  for _, o in ipairs(self.ops) do if o.kind == kind then return o end end
end

-- A layout's gamma, or an actuator layout's weights xi (m x width), at its variable's current values.
local function current_gamma(op)
  local gamma = darr(op.m)
  layout_gamma(op, op.theta.v, darr(op.m), gamma, darr(op.m))
  return gamma
end
local function current_xi(op)
  local xi = darr(op.m * op.width)
  actuator_weights(op, op.theta.v, darr(op.m * op.width), xi)
  return xi
end

--- design:projection(v) -> table: the projected layout of v (made by design:layout or design:actuators) at its
--- current values, as plain Lua tables over its particles in order (particles[i] is the world's 1-based index).
--- Material layout: { kind = "layout", particles, gamma }. Actuator layout: { kind = "actuators", particles,
--- outputs, xi (xi[i] = { outputs + 1 weights, the last the passive one }), actuator (actuator[i] = the signal of
--- largest weight, 1..outputs, or 0 for the passive column; ties: the lower), gamma (its layout's, or nil) }.
function Design:projection(v)
  local where = "design:projection"
  local op = layout_op(self, where, v)
  local particles = {}
  for i = 0, op.m - 1 do particles[i + 1] = op.idx[i] + 1 end
  local function list(a, m)
    local out = {}
    for i = 0, m - 1 do out[i + 1] = a[i] end
    return out
  end
  if op.kind == "layout" then return { kind = "layout", particles = particles, gamma = list(current_gamma(op), op.m) } end
  local xi, width, K = current_xi(op), op.width, op.K
  local weights, actuator = {}, {}
  for i = 0, op.m - 1 do
    local row, best, top = {}, 0, -math.huge
    for j = 0, width - 1 do
      row[j + 1] = xi[i * width + j]
      if row[j + 1] > top then best, top = j, row[j + 1] end
    end
    weights[i + 1], actuator[i + 1] = row, best < K and best + 1 or 0
  end
  return { kind = "actuators", particles = particles, outputs = K, xi = weights, actuator = actuator,
    gamma = op.layout and list(current_gamma(op.layout), op.m) or nil }
end

-- The layouts a picture draws: the actuator layout (opts.actuators, else the first), the material layout
-- (opts.layout, else the actuator layout's own, else the first), and per world particle (1-based) gamma_of and
-- act_of (the actuator of largest weight, 0 = passive; nil outside the layout).
local function layouts(self, where, opts)
  local act = pick(self, where, "actuators", opts.actuators, "actuators")
  local lay = pick(self, where, "layout", opts.layout, "layout") or nil
  if opts.layout == nil and act and act.layout then lay = act.layout end
  local data = { gamma_of = {}, act_of = {}, lay = lay, act = act }
  if lay then
    local pr = self:projection(lay.theta)
    for i, p in ipairs(pr.particles) do data.gamma_of[p] = pr.gamma[i] end
    data.min, data.max, data.mean = math.huge, -math.huge, 0
    for _, g in ipairs(pr.gamma) do data.min, data.max, data.mean = math.min(data.min, g), math.max(data.max, g), data.mean + g end
    data.mean = data.mean / #pr.gamma
  end
  if act then
    local pr = self:projection(act.theta)
    for i, p in ipairs(pr.particles) do data.act_of[p] = pr.actuator[i] end
    data.K = act.K
  end
  return data
end

local function check_colormap(where, name)
  if name ~= nil and not require("cq._colors").COLORMAPS[name] then
    check.fail(where, "colormap must be one of heat, diverging, gray", name)
  end
  return name or "heat"
end

local function check_fade(where, fade)
  if fade ~= nil and type(fade) ~= "boolean" then check.fail(where, "fade must be true or false", fade) end
  return fade ~= false
end

--- design:colors{ what, layout?, actuators?, fade = true, colormap = "heat" } -> list of {r, g, b} per particle:
--- the colours of design:picture's panel what ("material": gamma through the colour map over [0, 1];
--- "actuators" (the default when the design has an actuator layout): cq.frames.PALETTE[j] for the actuator j of
--- largest weight, PASSIVE for the passive column and particles outside the layout, faded to white by 1 - gamma
--- when fade), for cq.frames' color option.
function Design:colors(opts)
  local where = "design:colors"
  check.options(where, opts or {}, COLORS_OPTIONS)
  opts = opts or {}
  local data = layouts(self, where, opts)
  local what = check.oneof(where, "what", opts.what or (data.act and "actuators" or "material"), { "material", "actuators" })
  if what == "material" and not data.lay then check.fail(where, 'what = "material" needs a design:layout variable', what) end
  if what == "actuators" and not data.act then check.fail(where, 'what = "actuators" needs a design:actuators variable', what) end
  return require("cq._picture").particle_colors(self.n, what, data, check_colormap(where, opts.colormap),
    check_fade(where, opts.fade))
end

local AXES = { x = 1, y = 2, z = 3 }

--- design:picture{ state, path?, what = "both", layout?, actuators?, width, height?, slice?, hide?, fade = true,
--- colormap = "heat", title?, camera? } -> image: the material layout (gamma, with a colour bar) and / or the
--- actuator layout (cq.frames' PALETTE, with a legend) of the design at its current values, drawn at state's
--- positions; written to path (PNG) when given. docs/api.md lists the options.
function Design:picture(opts)
  local where = "design:picture"
  check.options(where, opts, PICTURE_OPTIONS)
  local w = self.world
  require("cq.state").check_arg(where, "state", opts.state, w)
  if opts.path ~= nil and (type(opts.path) ~= "string" or opts.path == "" or opts.path:sub(-1) == "/") then
    check.fail(where, 'path must be a file name such as "out/layout.png"', opts.path)
  end
  local data = layouts(self, where, opts)
  local what = check.oneof(where, "what", opts.what or "both", { "both", "material", "actuators" })
  if not data.lay and not data.act then
    check.raise(where .. ": the design has no design:layout or design:actuators variable to draw")
  end
  if what == "material" and not data.lay then check.fail(where, 'what = "material" needs a design:layout variable', what) end
  if what == "actuators" and not data.act then check.fail(where, 'what = "actuators" needs a design:actuators variable', what) end
  local width = opts.width ~= nil and check.integer(where, "width", opts.width, 64, 16384) or nil
  local height = opts.height ~= nil and check.integer(where, "height", opts.height, 32, 16384) or nil
  local colormap, fade = check_colormap(where, opts.colormap), check_fade(where, opts.fade)
  if opts.title ~= nil and type(opts.title) ~= "string" then check.fail(where, "title must be a string", opts.title) end
  local slice
  if opts.slice ~= nil then
    if self.dim ~= 3 then check.fail(where, "slice is an option of 3D designs (a 2D picture shows every particle)", opts.slice) end
    if type(opts.slice) ~= "table" then check.fail(where, 'slice must be a table { axis = "x" | "y" | "z", at = 0..1 }', opts.slice) end
    check.options(where .. " slice", opts.slice, { axis = true, at = true })
    local axis = opts.slice.axis or "z"
    axis = AXES[axis] or axis
    if axis ~= 1 and axis ~= 2 and axis ~= 3 then check.fail(where, 'slice.axis must be "x", "y", "z" or 1, 2, 3', opts.slice.axis) end
    slice = { axis = axis, at = check.number(where, "slice.at", opts.slice.at or 0.5, 0, 1) }
  end
  if opts.camera ~= nil and (self.dim ~= 3 or slice) then
    check.fail(where, "camera is an option of 3D splat pictures (no slice)", opts.camera)
  end
  local splat = self.dim == 3 and not slice
  local hide = check.number(where, "hide", opts.hide or (splat and 0.5 or 0), 0, 1)
  local P = require "cq._picture"
  local colors = require "cq._colors"
  local gamma_of = data.gamma_of
  local function visible(p) local g = gamma_of[p]; return g == nil or g >= hide end
  local function named(v, default) return v.name ~= default and " (" .. v.name:upper() .. ")" or "" end
  local panels = {}
  if what ~= "actuators" and data.lay then
    panels[#panels + 1] = { kind = "material", heading = "MATERIAL LAYOUT" .. named(data.lay.theta, "layout"),
      colors = P.particle_colors(self.n, "material", data, colormap, fade), visible = visible, colormap = colormap,
      range_text = string.format("MIN %s, MEAN %s, MAX %s", colors.label(data.min),
        colors.label(data.mean), colors.label(data.max)) }
  end
  if what ~= "material" and data.act then
    local entries = {}
    for j = 1, data.K do entries[j] = { label = tostring(j), color = P.actuator_color(j), actuator = j } end
    entries[#entries + 1] = { label = "PASSIVE", color = colors.PASSIVE, actuator = 0 }
    panels[#panels + 1] = { kind = "actuators", heading = "ACTUATOR LAYOUT" .. named(data.act.theta, "actuators"),
      colors = P.particle_colors(self.n, "actuators", data, colormap, fade), visible = visible, entries = entries,
      note = (fade and data.lay) and "PALE: LOW GAMMA (VOID)" or nil }
  end
  local img = P.picture(where, w, opts.state.x, panels, { width = width, height = height, slice = slice,
    camera = opts.camera, title = opts.title })
  if opts.path then P.write(where, img, opts.path) end
  return img
end

--- design:signals_plot{ controller, steps, dt?, path?, csv?, width = 640, height?, title?, sign = "cqlua" } -> image:
--- each signal of controller (the inner one given to psi.controller, e.g. a cq.pulses) against time over steps
--- control steps, one panel per signal in the colour of its actuator in design:picture's legend; written to path
--- (PNG) and its values to csv (t,u1,u2,...) when given. sign = "seed004" plots -u, seed 004's eq. 7 convention
--- (u > 0 expands); "cqlua" plots u as the engine takes it (u > 0 contracts). The CSV holds what is plotted.
function Design:signals_plot(opts)
  local where = "design:signals_plot"
  check.options(where, opts, SIGNALS_OPTIONS)
  local ctl = opts.controller
  if type(ctl) ~= "table" or type(ctl.act) ~= "function" then
    check.fail(where, "controller must be a controller (a table with act, e.g. the cq.pulses given to psi.controller)", ctl)
  end
  local steps = check.integer(where, "steps", opts.steps, 1, 10000000)
  local dt = check.number(where, "dt", opts.dt or 1, 0, math.huge, { open_lo = true })
  for _, k in ipairs { "path", "csv" } do
    local v = opts[k]
    if v ~= nil and (type(v) ~= "string" or v == "" or v:sub(-1) == "/") then
      check.fail(where, k .. " must be a file name", v)
    end
  end
  local width = check.integer(where, "width", opts.width or 640, 64, 16384)
  if opts.title ~= nil and type(opts.title) ~= "string" then check.fail(where, "title must be a string", opts.title) end
  local sign = check.oneof(where, "sign", opts.sign or "cqlua", { "cqlua", "seed004" }) == "seed004" and -1 or 1
  local act = pick(self, where, "actuators", nil, "actuators")
  local values, K = {}, nil
  for k = 0, steps - 1 do
    local u = ctl:act(tape.new(), nil, k)
    if type(u) ~= "table" or type(u.n) ~= "number" then
      check.raise(where .. ": controller:act must return a tape node of signals (it returned " .. type(u) .. ")")
    end
    if not K then
      K = u.n
      if act and K ~= act.K then
        check.fail(where, string.format("controller must give the actuator layout's %d signals (outputs): give the " ..
          "inner controller (the one passed to psi.controller), not psi.controller(...)", act.K), K .. " signals")
      end
      if K < 1 then check.raise(where .. ": controller gives no signals") end
      for j = 1, K do values[j] = {} end
    end
    for j = 1, K do values[j][k] = sign * u.v[j - 1] end
  end
  local height = opts.height ~= nil and check.integer(where, "height", opts.height, 32, 16384) or nil
  local img = require("cq._picture").signals(where, values, dt, { width = width, height = height, title = opts.title,
    xlabel = (opts.dt and "TIME (S)" or "CONTROL STEP") ..
      (sign < 0 and ", SEED 004 SIGN: POSITIVE U EXPANDS" or ", CQLUA SIGN: POSITIVE U CONTRACTS") })
  if opts.csv then
    local ok, err = require("cq._fs").mkdir_p(require("cq._fs").dirname(opts.csv))
    local f = ok and io.open(opts.csv, "w")
    if not f then check.raise(string.format("%s: cannot write %s (%s)", where, opts.csv, tostring(err or "open failed"))) end
    local head = { "t" }
    for j = 1, K do head[j + 1] = "u" .. j end
    f:write(table.concat(head, ","), "\n")
    for k = 0, steps - 1 do
      local row = { string.format("%.6g", k * dt) }
      for j = 1, K do row[j + 1] = string.format("%.6g", values[j][k]) end
      f:write(table.concat(row, ","), "\n")
    end
    f:close()
  end
  if opts.path then require("cq._picture").write(where, img, opts.path) end
  return img
end

---------------------------------------------------------------- forward
-- A working copy of field (the current values, starting from the base).
local function field_array(self, name)
  local a = self._cur[name]
  if not a then a = darr(self.n); self._cur[name] = a end
  return a
end

local FORWARD = {}
function FORWARD.field(self, op, cur)
  local a, th, f = cur[op.field], op.theta.v, op.f
  for i = 0, op.m - 1 do
    local p = op.idx[i]
    op.saved[i] = a[p]
    a[p] = f(th[op.slot[i]], a[p])
  end
end
function FORWARD.density(self, op, cur)
  local mass, vol, th, f = cur.mass, cur.vol0, op.theta.v, op.f
  for i = 0, op.m - 1 do
    local p = op.idx[i]
    op.saved[2 * i], op.saved[2 * i + 1] = mass[p], vol[p]
    mass[p] = f(th[op.slot[i]], mass[p] / vol[p]) * vol[p]
  end
end
function FORWARD.layout(self, op, cur)
  layout_gamma(op, op.theta.v, op.filtered, op.gamma, op.dgamma)
  local E, mass, eps = cur.E, cur.mass, op.eps
  for i = 0, op.m - 1 do
    local p = op.idx[i]
    op.factor[i], op.dfactor[i] = (1 - eps) * op.gamma[i] + eps, (1 - eps) * op.dgamma[i]
    op.saved[2 * i], op.saved[2 * i + 1] = E[p], mass[p]
    E[p], mass[p] = op.factor[i] * E[p], op.factor[i] * mass[p]
  end
end
function FORWARD.actuators(self, op, cur)
  local width = op.width
  actuator_weights(op, op.theta.v, op.zf, op.xi)
  for q = 0, op.m * width - 1 do op.gxi[q] = 0 end -- the mixer's dL/dxi of this forward
  local aw, eps = cur.act_w, op.eps
  for i = 0, op.m - 1 do
    local p, gamma = op.idx[i], op.layout and op.layout.gamma[i] or 1
    op.factor[i], op.saved[i] = (1 - eps) * gamma ^ 3 + eps, aw[p]
    aw[p] = op.factor[i] * aw[p]
  end
end
-- The volume factor of a stretch by s, and its derivative.
local function stretch_factor(op, s, dim)
  if op.axis then return s, 1 end
  return s ^ dim, dim * s ^ (dim - 1)
end
function FORWARD.stretch(self, op, cur, x)
  local s, n, dim = op.theta.v[0], self.n, self.dim
  local fac = stretch_factor(op, s, dim)
  for i = 0, op.m - 1 do
    local p = op.idx[i]
    for a = 1, dim do
      local xa = x[(a - 1) * n + p]
      op.x0[(a - 1) * op.m + i] = xa
      if not op.axis or op.axis == a then x[(a - 1) * n + p] = op.origin[a] + s * (xa - op.origin[a]) end
    end
    op.saved[2 * i], op.saved[2 * i + 1] = cur.mass[p], cur.vol0[p]
    cur.mass[p], cur.vol0[p] = fac * cur.mass[p], fac * cur.vol0[p]
  end
end

-- The valid range of a field a design writes (the engine's, cq_param_bounds; density > 0), with its text for messages.
local RANGES = {}
local function field_range(name)
  local r = RANGES[name]
  if r then return r end
  if name == "density" then
    r = { lo = 0, hi = math.huge, open_lo = true }
  else
    local lo, hi, b = ffi.new("double[1]"), ffi.new("double[1]"), ffi.new("int[1]")
    if require("cq._ffi").tables_lib().cq_param_bounds(name, lo, hi, b) ~= 0 or b[0] == 4 then
      r = { lo = -math.huge, hi = math.huge } -- (no field a design writes is checked by code)
    else
      r = { lo = lo[0], hi = hi[0], open_lo = b[0] % 2 == 1, open_hi = b[0] % 4 >= 2 }
    end
  end
  local function g(v) return string.format("%g", v) end
  if r.lo == -math.huge and r.hi == math.huge then r.text = "finite " .. name
  elseif r.hi == math.huge then r.text = name .. (r.open_lo and " > " or " >= ") .. g(r.lo) .. " (finite)"
  elseif r.lo == -math.huge then r.text = name .. (r.open_hi and " < " or " <= ") .. g(r.hi) .. " (finite)"
  else
    r.text = string.format("%s in %s%s, %s%s", name, r.open_lo and "(" or "[", g(r.lo), g(r.hi), r.open_hi and ")" or "]")
  end
  RANGES[name] = r
  return r
end
local function in_range(v, r)
  return v == v and v > -math.huge and v < math.huge and (r.open_lo and v > r.lo or not r.open_lo and v >= r.lo) and
    (r.open_hi and v < r.hi or not r.open_hi and v <= r.hi)
end

-- Checks what op's map gave (after FORWARD[op.kind] ran on cur): every field it wrote, at its particles, in that
-- field's valid range (a density variable: the density). Raises naming the variable: with new, its init (the
-- variable being made), else its current values (design:apply, after an optimiser's step).
local function check_outputs(where, op, cur, new)
  local name = op.theta.name
  local function refuse(what, v, p, i)
    local from = ""
    if not new and op.slot then from = string.format(" from its value %.6g", op.theta.v[op.slot[i]]) end
    if new then
      check.fail(where, string.format("init must give %s at every particle of variable %q", what, name),
        check.shown(string.format("%s at particle %d", check.fmt(v), p + 1)))
    end
    check.fail(where, string.format("design variable %q must give %s at every particle; keep it in range with " ..
      "bounds = {lo, hi} or a map that stays in range (exp, sigmoid)", name, what),
      check.shown(string.format("%s at particle %d%s", check.fmt(v), p + 1, from)))
  end
  if op.kind == "stretch" then
    local s = op.theta.v[0]
    if not (s > 0) then
      check.fail(where, (new and "init" or string.format("design variable %q", name)) ..
        " must be > 0 (a stretch factor)", s)
    end
  end
  local fields = op.kind == "field" and { op.field } or op.kind == "density" and { "density" } or op.touches or
    { "mass", "vol0" }
  for _, field in ipairs(fields) do
    local r = field_range(field)
    for i = 0, op.m - 1 do
      local p = op.idx[i]
      local v = field == "density" and cur.mass[p] / cur.vol0[p] or cur[field][p]
      if not in_range(v, r) then refuse(r.text, v, p, i) end
    end
  end
end

-- Runs the maps of ops in order on copies of the base values, the ops' own buffers untouched (so a design:apply's
-- records stay for its backward), checking each op's values (check_outputs; new: the op being made).
function Design:_dry_run(where, ops, new)
  local cur = {}
  for name in pairs(self.fields) do
    cur[name] = darr(self.n)
    ffi.copy(cur[name], self.base[name], 8 * self.n)
  end
  local x = darr(self.dim * self.n) -- positions: a stretch's are not checked
  for _, op in ipairs(ops) do
    local copy = setmetatable({}, { __index = op })
    for k, v in pairs(op) do
      if type(v) == "cdata" and ffi.istype(darr, v) then copy[k] = darr(ffi.sizeof(v) / 8) end
    end
    FORWARD[op.kind](self, copy, cur, x)
    check_outputs(where, copy, cur, op == new)
  end
end

--- Writes the designed parameters into the world and returns the initial state: s0 itself, or (with a stretch) a
--- copy of s0 with the stretched rest positions (the same state object every call; s0 is not changed).
function Design:apply(s0)
  local where = "design:apply"
  local w = self.world
  if self.stretched then require("cq.state").check_arg(where, "s0", s0, w) end
  for _, op in ipairs(self.ops) do
    local th = op.theta.v
    for i = 0, op.theta.n - 1 do
      if th[i] ~= th[i] or math.abs(th[i]) == math.huge then
        check.raise(string.format("%s: design variable %s[%d] is %s (not finite)", where, op.theta.name, i + 1,
          tostring(th[i])))
      end
    end
  end
  local cur = {}
  for name in pairs(self.fields) do
    cur[name] = field_array(self, name)
    ffi.copy(cur[name], self.base[name], 8 * self.n)
  end
  local s = s0
  if self.stretched then
    self._state = self._state or s0:copy()
    s = self._state
    s:copy_from(s0)
  end
  self._applied = false -- until every map gave values in range (a refused apply writes no parameter)
  for _, op in ipairs(self.ops) do
    FORWARD[op.kind](self, op, cur, s and s.x)
    check_outputs(where, op, cur, false)
  end
  self._touched = self._touched or {}
  for _, op in ipairs(self.ops) do
    if op.kind == "field" then self._touched[op.field] = true
    elseif op.touches then for _, name in ipairs(op.touches) do self._touched[name] = true end
    else self._touched.mass, self._touched.vol0 = true, true end
  end
  for name in pairs(self._touched) do w:fill(name, cur[name]) end
  self._applied = true
  return s
end

---------------------------------------------------------------- backward
local BACKWARD = {}
function BACKWARD.field(self, op, g)
  local ga, th, tg, f = g[op.field], op.theta.v, op.theta.g, op.f
  for i = op.m - 1, 0, -1 do
    local p, k = op.idx[i], op.slot[i]
    local _, dth, db = f(th[k], op.saved[i])
    tg[k] = tg[k] + ga[p] * dth
    ga[p] = ga[p] * db
  end
end
function BACKWARD.density(self, op, g)
  local gm, gv, th, tg, f = g.mass, g.vol0, op.theta.v, op.theta.g, op.f
  for i = op.m - 1, 0, -1 do
    local p, k = op.idx[i], op.slot[i]
    local m_in, v_in = op.saved[2 * i], op.saved[2 * i + 1]
    local b = m_in / v_in
    local rho, dth, db = f(th[k], b)
    local gmp = gm[p]
    tg[k] = tg[k] + gmp * v_in * dth
    gm[p] = gmp * db                       -- d(rho(b) v)/dm_in = rho'(b)
    gv[p] = gv[p] + gmp * (rho - db * b)   -- d(rho(m/v) v)/dv_in
  end
end
function BACKWARD.layout(self, op, g)
  local gE, gm, gf, gg = g.E, g.mass, op.gfiltered or darr(op.m), op.ggamma
  op.gfiltered = gf
  for i = op.m - 1, 0, -1 do
    local p = op.idx[i]
    gf[i] = (gE[p] * op.saved[2 * i] + gm[p] * op.saved[2 * i + 1]) * op.dfactor[i] -- dL/d(filtered phi)
    if gg then gf[i] = gf[i] + gg[i] * op.dgamma[i] end -- through an actuator layout's gamma^3 (eq. 19)
    gE[p], gm[p] = gE[p] * op.factor[i], gm[p] * op.factor[i]
  end
  topology.apply_t(op.filter, gf, op.theta.g)
end
function BACKWARD.actuators(self, op, g)
  local width, ga, eps, lay = op.width, g.act_w, op.eps, op.layout
  if lay then
    lay.ggamma = lay.ggamma or darr(lay.m)
    for i = 0, op.m - 1 do lay.ggamma[i] = 0 end
  end
  for i = op.m - 1, 0, -1 do
    local p = op.idx[i]
    if lay then
      local gamma = lay.gamma[i]
      lay.ggamma[i] = ga[p] * op.saved[i] * 3 * (1 - eps) * gamma * gamma
    end
    ga[p] = ga[p] * op.factor[i]
  end
  for i = 0, op.m - 1 do topology.softmax_t(op.beta, op.xi, op.gxi, op.gz, i * width, width) end
  topology.apply_rows_t(op.filter, op.gz, op.theta.g, width)
  -- taken: another rollout's backward over the same design (run:backward{accumulate = true}) adds its own
  for q = 0, op.m * width - 1 do op.gxi[q] = 0 end
end
function BACKWARD.stretch(self, op, g, gx)
  local s, n, dim = op.theta.v[0], self.n, self.dim
  local fac, dfac = stretch_factor(op, s, dim)
  local sum = 0
  for i = op.m - 1, 0, -1 do
    local p = op.idx[i]
    for a = 1, dim do
      if not op.axis or op.axis == a then
        local j = (a - 1) * n + p
        sum = sum + gx[j] * (op.x0[(a - 1) * op.m + i] - op.origin[a])
        gx[j] = gx[j] * s
      end
    end
    sum = sum + (g.mass[p] * op.saved[2 * i] + g.vol0[p] * op.saved[2 * i + 1]) * dfac
    g.mass[p], g.vol0[p] = g.mass[p] * fac, g.vol0[p] * fac
  end
  op.theta.g[0] = op.theta.g[0] + sum
end

--- Gradients of the loss with respect to every design variable (param.g, zeroed first) from a memo whose backward
--- pass ran back to the initial state: memo.grad_params (dL/dparameter) and memo.grad.x (dL/ds_0).
--- opts: { accumulate = true }: add into param.g instead (run:backward{accumulate = true} passes it).
function Design:backward(memo, opts)
  local where = "design:backward"
  local accumulate = false
  if opts ~= nil then
    check.options(where, opts, BACKWARD_OPTIONS)
    if opts.accumulate ~= nil and type(opts.accumulate) ~= "boolean" then
      check.fail(where, "accumulate must be true or false", opts.accumulate)
    end
    accumulate = opts.accumulate or false
  end
  if not self._applied then check.raise(where .. ": call design:apply first (a cq.rollout with design = ... does)") end
  if type(memo) ~= "table" or type(memo.grad_params) ~= "table" then
    check.fail(where, "memo must be the memo of the run (run.memo) after its backward pass", memo)
  end
  if memo:position() ~= 0 then
    check.raise(where .. ": the memo's backward pass has not reached the initial state (position " ..
      memo:position() .. "); run it to the end first")
  end
  if not accumulate then for _, p in ipairs(self.params) do p:zero_grad() end end
  local g = {}
  for name in pairs(self.fields) do
    local a = self._grad[name] or darr(self.n)
    self._grad[name] = a
    local src = memo.grad_params[name]
    for p = 0, self.n - 1 do a[p] = src[p] end
    g[name] = a
  end
  local gx
  if self.stretched then
    gx = self._gx or darr(self.dim * self.n)
    self._gx = gx
    local src = memo.grad.x
    for i = 0, self.dim * self.n - 1 do gx[i] = src[i] end
  end
  for k = #self.ops, 1, -1 do
    local op = self.ops[k]
    BACKWARD[op.kind](self, op, g, gx)
  end
end

return M
