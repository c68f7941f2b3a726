-- The cq package: a differentiable MLS-MPM engine for soft robots. This file is the low-level layer:
-- world (model + CPU workspace), state, step, memo (recording) and backward, with FFI views of engine arrays.
local ffi = require "ffi"
local C = require "cq._ffi"
local check = require "cq._check"

local M = { _VERSION = "0.1.0" }

local BC = { none = 0, sticky = 1, slip = 2, separate = 3, friction = 4 }
M.BC = BC
M.MATERIAL = { corotated = 0, neohookean = 1 }
M.ACTUATOR = { stress = 0, force = 1, cable = 2 }
local WALLS = { left = 0, right = 1, bottom = 2, floor = 2, top = 3, ceiling = 3, back = 4, front = 5 }

local function fields(lib, kind)
  local out, i = {}, 0
  local name, doc = ffi.new("const char*[1]"), ffi.new("const char*[1]")
  local ty, shape, diff = ffi.new("int[1]"), ffi.new("int[1]"), ffi.new("int[1]")
  while lib.cq_field_info(kind, i, name, ty, shape, diff, doc) ~= 0 do
    out[#out + 1] = { name = ffi.string(name[0]), type = ty[0], shape = shape[0], diff = diff[0] == 1,
                      doc = ffi.string(doc[0]) }
    i = i + 1
  end
  return out
end

-- Component count of a field shape in a given dimension.
local function shape_len(shape, dim) return shape == 0 and 1 or shape == 1 and dim or dim * dim end

---------------------------------------------------------------- world
local World = {}
World.__index = World
M.World = World

local function parse_wall(where, wd, spec, dim)
  check.options(where, spec, { type = true, friction = true, thickness = true, velocity = true, oscillation = true })
  local t = spec.type or "sticky"
  if BC[t] == nil then check.fail(where, "type must be one of none, sticky, slip, separate, friction", t, 3) end
  wd.type = BC[t]
  wd.friction = spec.friction or (t == "friction" and 0.5 or 0)
  if t == "friction" then check.number(where, "friction", wd.friction, 0, math.huge) end
  wd.thickness = spec.thickness or 3
  check.integer(where, "thickness", wd.thickness, 1)
  if spec.velocity then
    check.vector(where, "velocity", spec.velocity, dim)
    for a = 1, dim do wd.velocity[a - 1] = spec.velocity[a] end
  end
  if spec.oscillation then
    local o = spec.oscillation
    check.options(where .. ".oscillation", o, { amplitude = true, omega = true, phase = true })
    check.vector(where, "oscillation.amplitude", o.amplitude, dim)
    for a = 1, dim do wd.osc_amplitude[a - 1] = o.amplitude[a] end
    wd.osc_omega = check.number(where, "oscillation.omega", o.omega or 0)
    wd.osc_phase = check.number(where, "oscillation.phase", o.phase or 0)
  end
end

-- Parses one wall spec; errors are re-raised at the caller of cq.world (not inside this helper).
local function wall_desc(where, wd, spec, dim)
  local ok, err = pcall(parse_wall, where, wd, spec, dim)
  if not ok then error(tostring(err):gsub("^[^:]*:%d+: ", ""), 3) end
end

--- cq.world{dim, res, dx, dt, substeps, gravity, damping, n, actuators, precision, threads, walls, backend}
--- backend: "auto" (default: CUDA when its library loads and sees a device, else the CPU), "cpu" or "cuda".
function M.world(opts)
  local where = "cq.world"
  check.options(where, opts, { dim = true, res = true, dx = true, dt = true, substeps = true, gravity = true,
    damping = true, n = true, actuators = true, precision = true, threads = true, walls = true, backend = true })
  local precision = opts.precision or "f64"
  check.oneof(where, "precision", precision, { "f32", "f64" })
  local backend = opts.backend or "auto"
  check.oneof(where, "backend", backend, { "auto", "cpu", "cuda" })
  local lib = C.lib(precision)
  if backend ~= "cpu" then
    local clib, why = C.cuda_lib(precision)
    if clib then lib = clib
    elseif backend == "cuda" then
      error(string.format('%s: backend = "cuda" but no CUDA device is available (%s); use backend = "cpu" or "auto"',
        where, why), 2)
    end
    backend = clib and "cuda" or "cpu"
  end
  local d = ffi.new("cq_world_desc")
  lib.cq_world_desc_default(d)
  local dim = opts.dim or 2
  check.integer(where, "dim", dim, 2, 3)
  d.dim = dim
  local res = opts.res or (dim == 2 and { 64, 64 } or { 64, 64, 64 })
  if type(res) == "number" then local r = {} for a = 1, dim do r[a] = res end res = r end
  check.vector(where, "res", res, dim)
  for a = 1, dim do d.res[a - 1] = check.integer(where, "res[" .. a .. "]", res[a], 5, 65536) end
  d.dx = check.number(where, "dx", opts.dx or 1 / res[1], 0, math.huge, { open_lo = true })
  d.dt = check.number(where, "dt", opts.dt or 1e-3, 0, math.huge, { open_lo = true })
  d.substeps = check.integer(where, "substeps", opts.substeps or 1, 1)
  if opts.gravity then
    check.vector(where, "gravity", opts.gravity, dim)
    for a = 1, dim do d.gravity[a - 1] = opts.gravity[a] end
  end
  d.damping = check.number(where, "damping", opts.damping or 0, 0, math.huge)
  d.n_particles = check.integer(where, "n", opts.n, 1)
  d.n_actuators = check.integer(where, "actuators", opts.actuators or 0, 0)
  d.threads = check.integer(where, "threads", opts.threads or 0, 0)
  local names = {}                             -- "all" first, so named walls override it
  for name in pairs(opts.walls or {}) do if name == "all" then table.insert(names, 1, name) else names[#names + 1] = name end end
  for _, name in ipairs(names) do
    local spec = opts.walls[name]
    local ws = where .. ".walls." .. tostring(name)
    if type(spec) ~= "table" then check.fail(ws, "must be a table {type=..., friction=..., thickness=...}", spec) end
    if name == "all" then
      for k = 0, 2 * dim - 1 do wall_desc(ws, d.walls[k], spec, dim) end
    else
      local k = WALLS[name]
      if k == nil or k >= 2 * dim then
        check.fail(where, "walls keys must be all, left, right, bottom/floor, top/ceiling" ..
          (dim == 3 and ", back, front" or ""), name)
      end
      wall_desc(ws, d.walls[k], spec, dim)
    end
  end
  local err = ffi.new("char[512]")
  local h = lib.cq_world_create(d, err, 512)
  if h == nil then error(where .. ": " .. ffi.string(err), 2) end
  if backend == "cuda" and lib.cq_world_set_backend(h, 1) ~= 0 then
    local msg = ffi.string(lib.cq_world_error(h))
    lib.cq_world_free(h)
    error(where .. ": " .. msg, 2)
  end
  local self = setmetatable({ _h = ffi.gc(h, lib.cq_world_free), _lib = lib, dim = dim, n = d.n_particles, backend = backend,
    n_actuators = d.n_actuators, precision = precision, res = res, dx = d.dx, dt = d.dt, substeps = d.substeps,
    _real = C.real_ctype[precision], params = {}, committed = false }, World)
  for _, f in ipairs(fields(lib, 1)) do
    local ptr = lib.cq_world_param(h, f.name)
    self.params[f.name] = ffi.cast(f.type == 0 and self._real or C.type_ctype[f.type], ptr)
  end
  return self
end

function World:_handle()
  if self._h == nil then error("cq.world: this world was released", 3) end
  return self._h
end

function World:_check(status, what)
  if status ~= 0 then error(what .. ": " .. ffi.string(self._lib.cq_world_error(self._h)), 3) end
end

function World:__tostring()
  if self._h == nil then return "cq.world (released)" end
  local res = table.concat(self.res, "x")
  return string.format("cq.world: %dD %s, %d particles, %d actuators, %s", self.dim, res, self.n, self.n_actuators,
    self.precision)
end

--- Sets actuator a (1-based) to kind "stress", "force" or "cable".
function World:set_actuator(a, kind)
  check.integer("world:set_actuator", "actuator", a, 1, self.n_actuators)
  check.oneof("world:set_actuator", "kind", kind, { "stress", "force", "cable" })
  self:_check(self._lib.cq_world_set_actuator(self:_handle(), a - 1, M.ACTUATOR[kind]), "world:set_actuator")
end

--- Explicit node boundary conditions: nodes = {flat node index (0-based), ...}, normals = {{nx,ny[,nz]}, ...}.
function World:set_node_bcs(nodes, normals, spec)
  local where = "world:set_node_bcs"
  if type(nodes) ~= "table" then check.fail(where, "nodes must be a list of flat node indices (0-based)", nodes) end
  if type(normals) ~= "table" then check.fail(where, "normals must be a list of {nx, ny[, nz]}, one per node", normals) end
  local count = #nodes
  if #normals ~= count then check.fail(where, "normals must have one entry per node (" .. count .. ")", #normals) end
  local n_nodes = 1
  for a = 1, self.dim do n_nodes = n_nodes * self.res[a] end
  local ni, nn = ffi.new("int[?]", count), ffi.new("double[?]", 3 * count)
  for k = 1, count do
    ni[k - 1] = check.integer(where, "nodes[" .. k .. "]", nodes[k], 0, n_nodes - 1)
    check.vector(where, "normals[" .. k .. "]", normals[k], self.dim)
    for a = 1, self.dim do nn[3 * (k - 1) + a - 1] = normals[k][a] end
  end
  spec = spec or {}
  check.options(where, spec, { type = true, friction = true })
  local t = spec.type or "sticky"
  if BC[t] == nil or t == "none" then check.fail(where, "type must be one of sticky, slip, separate, friction", t) end
  check.number(where, "friction", spec.friction or 0, 0, math.huge)
  self:_check(self._lib.cq_world_set_node_bcs(self:_handle(), count, ni, nn, BC[t], spec.friction or 0), where)
end

--- Cable (seed 000 eq. 17) through particles (1-based, in order) driven by cable actuator a (1-based): stiffness
--- k, rest length = the cable length at u = 1 (contract-only: no force while slack).
function World:add_cable(a, particles, k, rest)
  local where = "world:add_cable"
  check.integer(where, "actuator", a, 1, self.n_actuators)
  if type(particles) ~= "table" or #particles < 2 then
    check.fail(where, "particles must be a list of at least 2 particle indices", particles)
  end
  local idx = ffi.new("int[?]", #particles)
  for i, p in ipairs(particles) do idx[i - 1] = check.integer(where, "particles[" .. i .. "]", p, 1, self.n) - 1 end
  check.number(where, "k", k, 0, math.huge)
  check.number(where, "rest", rest, 0, math.huge)
  self:_check(self._lib.cq_world_add_cable(self:_handle(), a - 1, #particles, idx, k, rest), where)
end

--- Lets memos take a per-particle force every control step (actuators written in Lua); call before world:memo.
function World:enable_user_forces()
  self._lib.cq_world_enable_user_forces(self:_handle())
  self.user_forces = true
end

--- Validates parameters (E > 0, nu in (-1, 0.5), mass, volume, dt vs. the stability limit). Required before step.
function World:commit()
  self:_check(self._lib.cq_world_commit(self:_handle()), "cq.world:commit")
  self.committed = true
  return self
end

function World:stable_dt() return self._lib.cq_world_stable_dt(self:_handle()) end
function World:set_threads(t)
  check.integer("world:set_threads", "threads", t, 0)
  self._lib.cq_world_set_threads(self:_handle(), t)
end

--- Fills a per-particle parameter with a value (or a function p -> value, or a vector per particle).
function World:fill(name, value, first, last)
  local arr = self.params[name]
  if not arr then check.fail("world:fill", "name must be a particle parameter (mass, vol0, E, nu, inc_p, act_axis, material, act_id)", name) end
  first, last = first or 1, last or self.n
  local n = self.n
  check.integer("world:fill", "first", first, 1, n)
  check.integer("world:fill", "last", last, first, n)
  if name == "act_axis" then
    check.vector("world:fill", "act_axis", value, self.dim)
    for p = first, last do for a = 1, self.dim do arr[(a - 1) * n + p - 1] = value[a] end end
  elseif name == "material" and type(value) == "string" then
    local m = M.MATERIAL[value] or check.fail("world:fill", "material must be corotated or neohookean", value)
    for p = first, last do arr[p - 1] = m end
  elseif type(value) == "function" then
    for p = first, last do
      local x = value(p)
      if type(x) ~= "number" then check.fail("world:fill", name .. " function must return a number for particle " .. p, x) end
      arr[p - 1] = x
    end
  else
    if type(value) ~= "number" then
      check.fail("world:fill", name .. " value must be a number or a function p -> number", value)
    end
    for p = first, last do arr[p - 1] = value end
  end
end

--- Sets E and nu from Lame parameters mu (> 0) and lambda (> -2/3 mu) for particles first..last:
--- E = mu (3 lambda + 2 mu) / (lambda + mu), nu = lambda / (2 (lambda + mu)). (DiffTaichi scripts set mu, lambda.)
function World:fill_lame(mu, lambda, first, last)
  local where = "world:fill_lame"
  check.number(where, "mu", mu, 0, math.huge, { open_lo = true })
  check.number(where, "lambda", lambda, -2 / 3 * mu, math.huge, { open_lo = true })
  self:fill("E", mu * (3 * lambda + 2 * mu) / (lambda + mu), first, last)
  self:fill("nu", lambda / (2 * (lambda + mu)), first, last)
end

function World:release()
  for m in pairs(self._memos or {}) do m:release() end
  if self._h ~= nil then
    self._lib.cq_world_free(ffi.gc(self._h, nil))
    self._h = nil
  end
end

---------------------------------------------------------------- state
local State = {}
State.__index = State
M.State = State

local function wrap_state(world, h, owned)
  local self = setmetatable({ _h = owned and ffi.gc(h, world._lib.cq_state_free) or h, world = world,
    n = world.n, dim = world.dim, _owned = owned }, State)
  for _, name in ipairs({ "x", "v", "C", "F" }) do
    self[name] = ffi.cast(world._real, world._lib.cq_state_field(h, name))
  end
  return self
end

--- A new state for this world: x = v = C = 0, F = I.
function World:state()
  local h = self._lib.cq_state_create(self:_handle())
  if h == nil then error("cq.world:state: out of memory", 2) end
  return wrap_state(self, h, true)
end

-- Component count of a state field, or an error naming the valid fields (level: as in check.fail).
local STATE_FIELDS = { x = 1, v = 1, C = 2, F = 2 }
local function field_len(self, where, field, level)
  local m = self._memo -- views into a memo's buffers die with the memo
  if m and (m._h == nil or m.world._h == nil) then
    error(where .. ": this state belongs to a released memo (or world)", (level or 2) + 1)
  end
  local shape = STATE_FIELDS[field]
  if not shape then check.fail(where, "field must be one of x, v, C, F", field, (level or 2) + 1) end
  return shape == 1 and self.dim or self.dim * self.dim
end

-- s must be a cq state (world:state(), memo.state, ...); level as in check.fail.
local function state_arg(where, name, s, level)
  if getmetatable(s) ~= State or s._h == nil then
    check.fail(where, name .. " must be a cq state (from world:state())", s, (level or 2) + 1)
  end
  return s
end

function State:__tostring() return string.format("cq.state: %d particles, substep %d", self.n, self:substep()) end
function State:substep() return tonumber(self.world._lib.cq_state_substep(self._h)) end
function State:time() return self:substep() * self.world.dt / self.world.substeps end

--- Position / velocity of particle p (1-based) as a Lua table.
function State:get(field, p)
  local len = field_len(self, "state:get", field)
  local arr, n = self[field], self.n
  if type(p) ~= "number" or p < 1 or p > n or p % 1 ~= 0 then check.integer("state:get", "p", p, 1, n) end
  local out = {}
  for c = 1, len do out[c] = arr[(c - 1) * n + p - 1] end
  return out
end
function State:set(field, p, values)
  local where = "state:set"
  local len = field_len(self, where, field)
  local arr, n = self[field], self.n
  if type(p) ~= "number" or p < 1 or p > n or p % 1 ~= 0 then check.integer(where, "p", p, 1, n) end
  if type(values) ~= "table" or #values ~= len then check.vector(where, "values", values, len) end
  for c = 1, len do -- any number (NaN / inf included: the engine reports those as blow-ups)
    if type(values[c]) ~= "number" then check.fail(where, "values[" .. c .. "] must be a number", values[c]) end
  end
  for c = 1, len do arr[(c - 1) * n + p - 1] = values[c] end
end

--- Copy of this state (owned by Lua).
function State:copy()
  local s = self.world:state()
  self.world._lib.cq_state_copy(s._h, self._h)
  return s
end
function State:copy_from(other)
  state_arg("state:copy_from", "other", other)
  if self.world._lib.cq_state_copy(self._h, other._h) ~= 0 then
    check.fail("state:copy_from", "other must be a state of a world with " .. self.n .. " particles in " .. self.dim ..
      "D", tostring(other))
  end
end

--- Mean of a vector field ("x" or "v") over all particles, or over a list of 1-based indices.
function State:mean(field, idx)
  local where = "state:mean"
  field_len(self, where, field or "x")
  if field ~= nil and field ~= "x" and field ~= "v" then check.fail(where, "field must be x or v", field) end
  local arr, n, out = self[field or "x"], self.n, {}
  if idx ~= nil then
    if type(idx) ~= "table" or #idx == 0 then check.fail(where, "idx must be nil (all) or a non-empty list of particle indices", idx) end
    for i, p in ipairs(idx) do
      if type(p) ~= "number" or p < 1 or p > n or p % 1 ~= 0 then check.integer(where, "idx[" .. i .. "]", p, 1, n) end
    end
  end
  for a = 1, self.dim do
    local s = 0
    if idx then for _, p in ipairs(idx) do s = s + arr[(a - 1) * n + p - 1] end
    else for p = 0, n - 1 do s = s + arr[(a - 1) * n + p] end end
    out[a] = s / (idx and #idx or n)
  end
  return out
end

local function act_array(world, u, where)
  local na = world.n_actuators
  if na == 0 then return nil end
  if u == nil then return ffi.new("double[?]", na) end
  if type(u) == "cdata" then return check.doubles(where, "u", u, na, 3) end
  if type(u) ~= "table" or #u ~= na then
    check.fail(where, "u must be a table of " .. na .. " actuation values", type(u) == "table" and ("a table of " .. #u) or u, 3)
  end
  local a = ffi.new("double[?]", na)
  for i = 1, na do
    if type(u[i]) ~= "number" then check.fail(where, "u[" .. i .. "] must be a number", u[i], 3) end
    a[i - 1] = u[i]
  end
  return a
end

--- Advances state s by one control step (substeps x dt/substeps) with actuation u (table or double[]), an
--- optional per-particle force (double[dim * n], component-major) and an optional per-particle material-space
--- actuation stress (double[dim * dim * n], stress[(i * dim + j) * n + p] = A_p[i][j], adds F A_p F^T like a
--- stress actuator), both held over the substeps.
function World:step(s, u, force, stress)
  if not self.committed then error("cq.world:step: call world:commit() first", 2) end
  state_arg("world:step", "s", s)
  check.doubles("world:step", "force", force, self.dim * self.n)
  check.doubles("world:step", "stress", stress, self.dim * self.dim * self.n)
  self:_check(self._lib.cq_step_ext(self:_handle(), s._h, act_array(self, u, "world:step"), force, stress),
    "cq.world:step")
end

---------------------------------------------------------------- memo
local Memo = {}
Memo.__index = Memo
M.Memo = Memo

--- world:memo{steps = T, checkpoint_every = 0 (auto, ~sqrt(N)) | 1 (store all) | K}
function World:memo(opts)
  local where = "cq.world:memo"
  check.options(where, opts, { steps = true, checkpoint_every = true })
  if not self.committed then error(where .. ": call world:commit() first", 2) end
  local steps = check.integer(where, "steps", opts.steps, 1)
  local ck = check.integer(where, "checkpoint_every", opts.checkpoint_every or 0, 0)
  local h = self._lib.cq_memo_create(self:_handle(), steps, ck)
  if h == nil then error(where .. ": " .. ffi.string(self._lib.cq_world_error(self._h)), 2) end
  local m = setmetatable({ _h = ffi.gc(h, self._lib.cq_memo_free), world = self, max_steps = steps }, Memo)
  self._memos = self._memos or setmetatable({}, { __mode = "k" })
  self._memos[m] = true
  m.state = wrap_state(self, self._lib.cq_memo_state(h), false)
  m.grad = wrap_state(self, self._lib.cq_memo_grad(h), false)
  m.bstate = wrap_state(self, self._lib.cq_memo_backward_state(h), false)
  m.state._memo, m.grad._memo, m.bstate._memo = m, m, m
  local R = self._real
  m.grad_params = {}
  for _, name in ipairs({ "mass", "vol0", "E", "nu" }) do
    m.grad_params[name] = ffi.cast(R, self._lib.cq_memo_grad_param(h, name))
  end
  m.grad_act = self._lib.cq_memo_grad_act(h) -- double [steps][n_actuators]
  local gf = self._lib.cq_memo_grad_force(h)
  m.grad_force = gf ~= nil and ffi.cast(R, gf) or nil -- dL/d(user force) of the step at the backward position
  m.grad_stress = ffi.cast(R, self._lib.cq_memo_grad_stress(h)) -- dL/d(user stress) [dim*dim][n], same step
  return m
end

function Memo:__tostring()
  if self._h == nil then return "cq.memo (released)" end
  return string.format("cq.memo: %d/%d steps, %d stored states", self:steps(), self.max_steps,
    self.world._lib.cq_memo_stored_states(self._h))
end
-- The C handle, or a clear error when the memo (or its world) was released.
function Memo:_handle()
  if self._h == nil or self.world._h == nil then error("cq.memo: this memo (or its world) was released", 3) end
  return self._h
end
function Memo:steps() return self.world._lib.cq_memo_steps(self:_handle()) end
function Memo:stored_states() return self.world._lib.cq_memo_stored_states(self:_handle()) end

-- The grad/state views point into buffers the memo swaps: refresh them after backward steps.
function Memo:_refresh()
  local lib = self.world._lib
  local g = lib.cq_memo_grad(self._h)
  for _, name in ipairs({ "x", "v", "C", "F" }) do self.grad[name] = ffi.cast(self.world._real, lib.cq_state_field(g, name)) end
  self.grad._h = g
end

--- Starts a recording from state s0 (copied).
function Memo:begin(s0)
  state_arg("memo:begin", "s0", s0)
  self.world:_check(self.world._lib.cq_memo_begin(self:_handle(), s0._h), "cq.memo:begin")
end

--- Records one control step with actuation u and, optionally, a per-particle force (double[dim * n],
--- component-major; worlds with enable_user_forces) and a per-particle actuation stress (double[dim * dim * n],
--- as in world:step), held over its substeps.
function Memo:step(u, force, stress)
  local w = self.world
  check.doubles("memo:step", "force", force, w.dim * w.n)
  check.doubles("memo:step", "stress", stress, w.dim * w.dim * w.n)
  self.world:_check(self.world._lib.cq_memo_step_ext(self:_handle(), act_array(self.world, u, "memo:step"), force,
    stress), "cq.memo:step")
end

--- Zeroes gradients; afterwards memo.grad holds dL/d(final state): add the loss gradient into it.
function Memo:backward_begin()
  self.world:_check(self.world._lib.cq_memo_backward_begin(self:_handle()), "cq.memo:backward_begin")
  self:_refresh()
end

--- One control step back: position k -> k-1. memo.grad is then dL/ds_{k-1}, memo.bstate is s_{k-1}.
function Memo:backward_step()
  self.world:_check(self.world._lib.cq_memo_backward_step(self:_handle()), "cq.memo:backward_step")
  self:_refresh()
  return self:position()
end
function Memo:position() return self.world._lib.cq_memo_position(self:_handle()) end

--- Full backward pass. on_step(k, memo) (optional) is called at each control step k (from T down to 0) before
--- stepping back, so running-loss gradients dL/ds_k can be added into memo.grad.
function Memo:backward(on_step)
  if on_step ~= nil and type(on_step) ~= "function" then
    check.fail("memo:backward", "on_step must be nil or a function(k, memo)", on_step)
  end
  self:backward_begin()
  local k = self:position()
  while true do
    if on_step then on_step(k, self) end
    if k == 0 then break end
    k = self:backward_step()
  end
end

--- dL/du for control step k (1-based) and actuator a (1-based).
function Memo:grad_u(k, a)
  local na = self.world.n_actuators
  if type(k) ~= "number" or k < 1 or k > self.max_steps or k % 1 ~= 0 then
    check.integer("memo:grad_u", "k (control step)", k, 1, self.max_steps)
  end
  if type(a) ~= "number" or a < 1 or a > na or a % 1 ~= 0 then
    if na == 0 then check.fail("memo:grad_u", "a: this world has no actuators", a) end
    check.integer("memo:grad_u", "a (actuator)", a, 1, na)
  end
  self:_handle()
  return self.grad_act[(k - 1) * na + (a - 1)]
end

function Memo:release()
  if self._h ~= nil then
    self.world._lib.cq_memo_free(ffi.gc(self._h, nil))
    self._h = nil
  end
end

-- The robotics layer (loaded on first use so the low-level layer stays light).
local lazy = { robot = function() return require("cq.robot").new end,
  tape = function() return require "cq.tape" end,
  control = function() return require "cq.control" end,
  rollout = function() return require("cq.rollout").new end,
  objectives = function() return require "cq.objectives" end,
  optim = function() return require "cq.optim" end,
  nlopt = function() return require "cq.nlopt" end,
  log = function() return require "cq.log" end,
  trajectory = function() return require "cq.trajectory" end,
  frames = function() return require "cq.frames" end }
setmetatable(M, { __index = function(t, k)
  local f = lazy[k]
  if f then local v = f(); rawset(t, k, v); return v end
end })

M.fields = function(precision) return { state = fields(C.lib(precision or "f64"), 0), param = fields(C.lib(precision or "f64"), 1) } end

return M
