-- cq.world: the model (grid, walls, per-particle parameters, actuators) on a backend, and its control step.
-- States (cq/state.lua) and memos (cq/memo.lua) belong to a world.
local ffi = require "ffi"
local C = require "cq._ffi"
local check = require "cq._check"
local registry = require "cq._registry"
local now = require("cq.clock").now

local M = {}
local World = {}
World.__index = World
M.World = World

local WALLS = { left = 0, right = 1, bottom = 2, floor = 2, top = 3, ceiling = 3, back = 4, front = 5 }
local OPTIONS = check.option_set("cq.world", { "dim", "res", "dx", "dt", "substeps", "gravity", "damping", "n",
  "n_actuators", "precision", "threads", "walls", "backend", "integrator", "implicit", "volumetric", "fluid",
  "fluid_rest", "fluid_contact", "volumetric_groups", "volumetric_own" })
local IMPLICIT_OPTIONS = check.option_set("cq.world implicit", { "tol", "max_newton", "max_cg", "precond", "volume",
  "max_split", "pressure", "fill_rounds", "error_tol", "adapt" })
local PRECONDITIONERS = { auto = 0, mass = 1, factor = 2 } -- engine/core/cq.h CQ_PRECOND_*
local WALL_OPTIONS = check.option_set("cq.world walls", { "type", "friction", "thickness", "velocity", "oscillation" })
local OSCILLATION_OPTIONS = check.option_set("cq.world walls oscillation", { "amplitude", "omega", "phase" })
local NODE_BC_OPTIONS = check.option_set("world:set_node_bcs", { "type", "friction" })
local MAX_THREADS = ffi.C.CQ_MAX_THREADS

local function parse_wall(where, wd, spec, dim, res)
  if type(spec) ~= "table" then check.fail(where, "must be a table {type=..., friction=..., thickness=...}", spec) end
  check.options(where, spec, WALL_OPTIONS)
  local BC = registry.BC
  local t = spec.type or "sticky"
  if registry.id(BC, t) == nil then check.fail(where, "type must be one of " .. registry.names(BC), t) end
  wd.type = BC[t]
  -- checked before it reaches the C double (a string would raise LuaJIT's own conversion error)
  wd.friction = check.number(where, "friction", spec.friction or (t == "friction" and 0.5 or 0), 0, math.huge, { inf = true })
  -- checked before the C int truncates it, and against the grid (the engine's message would name the wall by number)
  wd.thickness = check.integer(where, "thickness", spec.thickness or 3, 1, math.floor(res / 2))
  if spec.velocity then
    check.vector(where, "velocity", spec.velocity, dim)
    for a = 1, dim do wd.velocity[a - 1] = spec.velocity[a] end
  end
  if spec.oscillation then
    local o = spec.oscillation
    check.options(where .. ".oscillation", o, OSCILLATION_OPTIONS)
    check.vector(where, "oscillation.amplitude", o.amplitude, dim)
    for a = 1, dim do wd.osc_amplitude[a - 1] = o.amplitude[a] end
    wd.osc_omega = check.number(where, "oscillation.omega", o.omega or 0)
    wd.osc_phase = check.number(where, "oscillation.phase", o.phase or 0)
  end
end

-- The engine library for precision and backend choice ("auto" | "cpu" | "cuda"): the library and the backend used.
local function library(where, precision, backend)
  local lib = C.lib(precision)
  if backend == "cpu" then return lib, "cpu" end
  local clib, why = C.cuda_lib(precision)
  if clib then return clib, "cuda" end
  if backend == "cuda" then
    check.raise(string.format('%s: backend = "cuda" but no CUDA device is available (%s); use backend = "cpu" or "auto"',
      where, why))
  end
  return lib, "cpu"
end

-- Read-only access to the parameter views: world.params.E is a const view (writes raise in LuaJIT: use world:fill).
local Params = {}
function Params.__index(t, name)
  local w = rawget(t, "_world")
  w:_handle("world.params")
  local v = w._views[name]
  if v == nil then check.fail("world.params", "no particle parameter " .. (type(name) == "string" and name or
    "of that name") .. " (known: " ..
    table.concat(w._param_names, ", ") .. ")", name) end
  return v
end
function Params.__newindex(t, name)
  check.fail("world.params", "parameters are read-only views; write them with world:fill(name, value)", name)
end

--- cq.world{dim, res, dx, dt, substeps, gravity, damping, n, n_actuators, precision, threads, walls, backend,
--- integrator, implicit, volumetric, volumetric_groups, volumetric_own, fluid, fluid_rest, fluid_contact}: see
--- docs/api.md.
--- backend: "auto" (default: CUDA when its library loads and sees a device, else the CPU), "cpu" or "cuda".
function M.new(opts)
  local where = "cq.world"
  check.options(where, opts, OPTIONS)
  local precision = check.oneof(where, "precision", opts.precision or "f64", { "f32", "f64" })
  local backend = check.oneof(where, "backend", opts.backend or "auto", { "auto", "cpu", "cuda" })
  local integrator = opts.integrator or "explicit"
  if registry.id(registry.INTEGRATOR, integrator) == nil then
    check.fail(where, "integrator must be one of " .. registry.names(registry.INTEGRATOR), integrator)
  end
  local lib
  if backend == "auto" and opts.fluid_contact == "separate" then -- two velocity fields: the CPU's only, so far
    backend = "cpu" -- (backend = "cuda" is refused by cuda/cuda.cu with the reason)
  end
  lib, backend = library(where, precision, backend)
  local d = ffi.new("cq_world_desc")
  lib.cq_world_desc_default(d)
  local dim = check.integer(where, "dim", opts.dim or 2, 2, 3)
  d.dim = dim
  local res = opts.res or (dim == 2 and { 64, 64 } or { 64, 64, 64 })
  if type(res) == "number" then local r = {} for a = 1, dim do r[a] = res end res = r end
  check.vector(where, "res", res, dim)
  for a = 1, dim do d.res[a - 1] = check.integer(where, "res[" .. a .. "]", res[a], 5, 65536) end
  -- dx: any length unit from nanometres to megametres; beyond, 1 / dx^2 overflows a float32 build's kernels
  d.dx = check.number(where, "dx", opts.dx or 1 / res[1], 1e-9, 1e9)
  d.dt = check.number(where, "dt", opts.dt or 1e-3, 0, math.huge, { open_lo = true })
  d.substeps = check.integer(where, "substeps", opts.substeps or 1, 1)
  if opts.gravity then
    check.vector(where, "gravity", opts.gravity, dim)
    for a = 1, dim do d.gravity[a - 1] = opts.gravity[a] end
  end
  d.damping = check.number(where, "damping", opts.damping or 0, 0, math.huge)
  d.n = check.integer(where, "n", opts.n, 1)
  d.n_actuators = check.integer(where, "n_actuators", opts.n_actuators or 0, 0)
  -- CQ_THREADS: the default a study's runner gives each run (cq.study), so that its workers share the cores
  d.threads = check.integer(where, "threads", opts.threads or tonumber(os.getenv("CQ_THREADS") or "") or 0, 0, MAX_THREADS)
  d.integrator = registry.INTEGRATOR[integrator]
  -- engine/core/cq.h CQ_VOLUMETRIC_*: the bulk term on each particle's own J, on J averaged per node (volumetric.h),
  -- or averaged for the solids only (the default; the particle term where the user asks for the exact volume, which
  -- the averaged term does not have)
  local exact = type(opts.implicit) == "table" and opts.implicit.volume == "exact"
  local volumetric = check.oneof(where, "volumetric", opts.volumetric or (exact and "particle" or "solids"),
    { "solids", "particle", "averaged" })
  d.volumetric = ({ particle = 0, averaged = 1, solids = 2 })[volumetric]
  -- engine/core/cq.h CQ_VOL_GROUPS_*: the averaged term's groups by the particles' nodes now, or in the robot's initial
  -- state (the solids' default: a loss continuous in the state); "averaged" keeps its recorded defaults
  local solids = volumetric == "solids"
  d.volumetric_groups = check.oneof(where, "volumetric_groups", opts.volumetric_groups or (solids and "initial" or
    "current"), { "current", "initial" }) == "initial" and 1 or 0
  -- the averaged term's own share K_s = min(K, volumetric_own M) of each particle (engine/terms/volumetric.h vol_own_bulk)
  d.volumetric_own = check.number(where, "volumetric_own", opts.volumetric_own or (solids and 16 or 1), 1e-6, 1e6)
  -- engine/core/cq.h CQ_FLUID_*, CQ_FILL_REST_*: a fluid's pressure from its own J, or from the grid's fill (fill.h)
  local fluid = opts.fluid
  if fluid == "fill" then -- the grid fluid's old name ("fill" is world:fill's word)
    require("cq._warn").warn('cqlua: warning: cq.world: fluid = "fill" is the old name of fluid = "grid" (the same ' ..
      'model: the pressure from how full the grid\'s nodes are); use "grid"')
    fluid = "grid"
  end
  d.fluid = check.oneof(where, "fluid", fluid or "particle", { "particle", "grid" }) == "grid" and 1 or 0
  d.fluid_rest = check.oneof(where, "fluid_rest", opts.fluid_rest or "initial", { "initial", "one" })
    == "initial" and 1 or 0
  -- CQ_FLUID_CONTACT_*: the fluids on the solids' grid velocities, or on their own copy of the grid (kernel_types.h)
  -- (which combinations it needs: engine/core/model.c, like the other options that depend on each other)
  local contact = check.oneof(where, "fluid_contact", opts.fluid_contact or "sticky", { "sticky", "separate" })
  d.fluid_contact = contact == "separate" and 1 or 0
  local error_tol = 0.02 -- implicit.error_tol's default (engine/integrators/integrator_implicit.c DEFAULT_ERROR_TOL)
  if opts.implicit ~= nil then -- the implicit integrator's solver (0 = the engine's default)
    local io = opts.implicit
    if type(io) ~= "table" then
      check.fail(where, "implicit must be a table {tol, max_newton, max_cg, precond, volume, max_split, pressure, " ..
        "fill_rounds, error_tol, adapt}", io)
    end
    check.options(where .. ".implicit", io, IMPLICIT_OPTIONS)
    d.implicit_tol = check.number(where, "implicit.tol", io.tol or 0, 0, 1, { open_hi = true })
    d.implicit_max_newton = check.integer(where, "implicit.max_newton", io.max_newton or 0, 0)
    d.implicit_max_cg = check.integer(where, "implicit.max_cg", io.max_cg or 0, 0)
    d.implicit_precond = PRECONDITIONERS[check.oneof(where, "implicit.precond", io.precond or "auto",
      { "auto", "mass", "factor" })]
    d.implicit_volume = check.oneof(where, "implicit.volume", io.volume or "linear", { "linear", "exact" }) == "exact"
      and 1 or 0
    d.implicit_pressure = check.oneof(where, "implicit.pressure", io.pressure or "lagged", { "lagged", "implicit" })
      == "implicit" and 1 or 0
    if io.error_tol == false then -- no error estimate (engine/integrators/integrator_implicit.c step_error)
      d.implicit_error_tol, error_tol = -1, false
    elseif io.error_tol ~= nil then -- cells; 0.02 by default
      d.implicit_error_tol = check.number(where, "implicit.error_tol (cells, or false: none)", io.error_tol, 0, 1,
        { open_lo = true, open_hi = true })
      error_tol = d.implicit_error_tol
    end
    if io.adapt ~= nil then
      if type(io.adapt) ~= "boolean" then check.fail(where, "implicit.adapt must be true or false", io.adapt) end
      d.implicit_adapt = io.adapt and 1 or 0
    end
    local split = check.integer(where, "implicit.max_split", io.max_split or 6, 0, 30)
    d.implicit_max_split = split == 0 and -1 or split -- the engine's 0 is its default, -1 none
    if io.fill_rounds ~= nil then -- nil: the engine's default (4 with the factor preconditioner, none with the masses)
      local rounds = check.integer(where, "implicit.fill_rounds", io.fill_rounds, 0, 16)
      d.implicit_fill_rounds = rounds == 0 and -1 or rounds
    end
  end
  if opts.walls ~= nil and type(opts.walls) ~= "table" then
    check.fail(where, "walls must be a table { all | left | right | floor | top" .. (dim == 3 and " | back | front" or "")
      .. " = { type, friction, thickness, velocity, oscillation } }", opts.walls)
  end
  local names = {} -- "all" first, so named walls override it
  for name in pairs(opts.walls or {}) do if name == "all" then table.insert(names, 1, name) else names[#names + 1] = name end end
  for _, name in ipairs(names) do
    local spec = opts.walls[name]
    local ws = where .. ".walls." .. tostring(name)
    if name == "all" then
      for k = 0, 2 * dim - 1 do parse_wall(ws, d.walls[k], spec, dim, d.res[math.floor(k / 2)]) end
    else
      local k = WALLS[name]
      if k == nil or k >= 2 * dim then
        check.fail(where, "walls keys must be all, left, right, bottom/floor, top/ceiling" ..
          (dim == 3 and ", back, front" or ""), name)
      end
      parse_wall(ws, d.walls[k], spec, dim, d.res[math.floor(k / 2)])
    end
  end
  local err = ffi.new("char[1024]")
  local h = lib.cq_world_create(d, err, 1024)
  if h == nil then check.raise(where .. ": " .. ffi.string(err)) end
  h = ffi.gc(h, lib.cq_world_free)
  if backend == "cuda" and lib.cq_world_set_backend(h, ffi.C.CQ_BACKEND_CUDA) ~= 0 then
    check.raise(where .. ": " .. ffi.string(lib.cq_world_error(h)))
  end
  local self = setmetatable({ _h = h, _lib = lib, dim = dim, n = d.n, n_actuators = d.n_actuators, backend = backend,
    precision = precision, res = res, dx = d.dx, dt = d.dt, substeps = d.substeps, integrator = integrator,
    threads = d.threads, volumetric = volumetric, fluid = d.fluid == 1 and "grid" or "particle",
    fluid_contact = d.fluid_contact == 1 and "separate" or "sticky", error_tol = error_tol, adapt = d.implicit_adapt == 1,
    max_split = d.implicit_max_split == 0 and 6 or math.max(0, d.implicit_max_split), -- for the error warning
    volumetric_groups = d.volumetric_groups == 1 and "initial" or "current",
    volumetric_own = d.volumetric_own, committed = false, _real = C.real_ctype[precision], _views = {}, _fields = {},
    _param_names = {}, _ctl = ffi.new("cq_control"), _memos = setmetatable({}, { __mode = "k" }) }, World)
  for _, f in ipairs(registry.fields(lib, "param")) do
    -- read-only views: writes go through world:fill, after which the engine validates them before the next step
    self._views[f.name] = C.view(C.const_ctype[f.type == 0 and precision or f.type], lib.cq_world_param(h, f.name), h)
    self._fields[f.name] = f
    self._param_names[#self._param_names + 1] = f.name
  end
  self.params = setmetatable({ _world = self }, Params)
  -- the wall bands and gravity, for the placement warning of the first state stepped from (cq._warn.near_walls)
  self._bands, self._gravity = {}, {}
  for k = 0, 2 * dim - 1 do
    if d.walls[k].type ~= registry.BC.none then
      self._bands[#self._bands + 1] = { wall = k, thickness = d.walls[k].thickness }
    end
  end
  for a = 1, dim do self._gravity[a] = d.gravity[a - 1] end
  return self
end

-- The engine handle, or "used after release".
function World:_handle(where)
  if self._released then check.raise((where or "cq.world") .. ": used after release (world:release() was called)") end
  return self._h
end

-- Raises the engine's message for a failed status; a blow-up names the robot group of the failing particle.
function World:_check(status, what)
  if status == 0 then return end
  self._failed_status = status -- cq.train's recovery policy: a CQ_ERR_BLOWUP is a numerical failure
  local msg = ffi.string(self._lib.cq_world_error(self._h))
  if status == ffi.C.CQ_ERR_BLOWUP then msg = msg .. self:_error_advice() end
  if status == ffi.C.CQ_ERR_BLOWUP and self.groups then
    local b = ffi.new("cq_blowup")
    self._lib.cq_world_blowup(self._h, b)
    local p = b.particle + 1
    for i, g in ipairs(self.groups) do
      if p >= g.first and p <= g.last then
        msg = msg .. string.format(" [particle %d is in robot group %d%s]", p, i, g.name and (" '" .. g.name .. "'") or "")
        break
      end
    end
  end
  check.raise(what .. ": " .. msg)
end

-- What an implicit blow-up's message adds when the world's substeps had gone over implicit.error_tol (noted by
-- World:_error_check): a run that outgrows its step (a body inflated towards its limit, a mode that grows) shows it
-- there first, and implicit.adapt = true halves those substeps instead (docs/results/history.md, the forty-fifth
-- session: a thick tube at dx 0.5 mm blew up at 5 ms substeps and ran to its end with it). "" otherwise.
function World:_error_advice()
  if self.integrator ~= "implicit" or self.error_tol == false or not self._error_last_over then return "" end
  local ago = (self._error_steps or 0) + 1 - self._error_last_over
  local st = self._error_stats
  return string.format(" [%d substeps of this world were kept with their estimated position error above " ..
    "implicit.error_tol = %g cells (the largest %.3g cells), the last %s: %s]", tonumber(st.error_over),
    self.error_tol, st.error_max, ago <= 1 and "in the step before this one" or
    string.format("%d steps before this one", ago), self.adapt and
    string.format("implicit.max_split = %d halvings did not bring them under it; use a smaller dt", self.max_split) or
    "implicit.adapt = true halves such substeps where needed, or use a smaller dt")
end

--- The last blow-up: {check = name, particle = 1-based, step = control step, substep} or nil.
function World:blowup()
  local b = ffi.new("cq_blowup")
  self._lib.cq_world_blowup(self:_handle("world:blowup"), b)
  if b.check == 0 then return nil end
  return { check = registry.name_of(registry.CHECK, b.check), particle = b.particle >= 0 and b.particle + 1 or nil,
    step = tonumber(b.step), substep = tonumber(b.substep) }
end

--- The implicit integrator's work since the world was made or last reset (reset = true zeroes it after reading):
--- substeps, newton, cg (Newton directions' CG iterations), halvings (line search), adjoint_cg (backward solves),
--- factorizations (Hessians factorised by implicit.precond = "factor") and factor_seconds (their wall time); and
--- simd_particles: particle-substeps whose P2G adjoint ran as SIMD lanes on the CPU (engine/backends/cpu/cpu_loops.h);
--- kept_substeps: adjoint substeps that took their P2G from the memo's records (engine/core/memo.c) instead of recomputing it;
--- factor_failures: factorisations refused as not definite (CG then preconditions by the masses); fill_rounds: the fill
--- water's active-set rounds (Newton directions solved again with the pieces of W the nodes end on); roundoff_stops:
--- Newton solves that ended at the elastic forces' round-off before implicit.tol (a light load on a stiff solid, where
--- tol times the load's scale is below what the arithmetic resolves); error_splits: pieces redone as two halves because
--- their local error estimate was above implicit.error_tol (implicit.adapt); error_over: substeps (or pieces) kept above
--- it (implicit.adapt off, or implicit.max_split used up); error_max: the largest estimate of a kept one, in cells.
function World:solver_stats(reset)
  if reset ~= nil and type(reset) ~= "boolean" then
    check.fail("world:solver_stats", "reset must be true, false or nil", reset)
  end
  local st = ffi.new("cq_solver_stats")
  self._lib.cq_world_solver_stats(self:_handle("world:solver_stats"), st, reset and 1 or 0)
  return { substeps = tonumber(st.substeps), newton = tonumber(st.newton), cg = tonumber(st.cg),
    halvings = tonumber(st.halvings), adjoint_cg = tonumber(st.adjoint_cg),
    factorizations = tonumber(st.factorizations), factor_seconds = st.factor_seconds, splits = tonumber(st.splits),
    simd_particles = tonumber(st.simd_particles), kept_substeps = tonumber(st.kept_substeps),
    factor_failures = tonumber(st.factor_failures), fill_rounds = tonumber(st.fill_rounds),
    roundoff_stops = tonumber(st.roundoff_stops), error_splits = tonumber(st.error_splits),
    error_over = tonumber(st.error_over), error_max = st.error_max }
end

--- fluid = "grid" with fluid_rest = "initial": forget each node's rest fill, so that the next step takes it from the
--- state it starts from (a new scene in the same world). Returns the world.
function World:reset_fill()
  self._lib.cq_world_reset_fill(self:_handle("world:reset_fill"))
  return self
end

--- volumetric_groups = "initial": forget the groups, so that the next step takes them from the state it starts from
--- (a new scene in the same world); the chamber walls' reference state (their neighbours, engine/terms/wall.c) too.
--- Returns the world.
function World:reset_groups()
  self._lib.cq_world_reset_groups(self:_handle("world:reset_groups"))
  return self
end

--- volumetric_groups = "initial": the groups taken now from state s (robot:world: the robot's initial state).
function World:_take_groups(s)
  local where = "world:_take_groups"
  if self._lib.cq_world_take_groups(self:_handle(where), s:_handle(where)) ~= 0 then
    check.raise(where .. ": " .. ffi.string(self._lib.cq_world_error(self._h)))
  end
  return self
end

function World:__tostring()
  if self._released then return "cq.world (released)" end
  return string.format("cq.world: %dD %s, %d particles, %d actuators, %s, %s", self.dim, table.concat(self.res, "x"),
    self.n, self.n_actuators, self.precision, self.backend)
end

--- Sets actuator a (1-based) to kind "stress", "force", "cable", "chamber" or "cavity".
function World:set_actuator(a, kind)
  local where = "world:set_actuator"
  check.integer(where, "actuator", a, 1, self.n_actuators)
  if registry.id(registry.ACTUATOR, kind) == nil then check.fail(where, "kind must be one of " .. registry.names(registry.ACTUATOR), kind) end
  self:_check(self._lib.cq_world_set_actuator(self:_handle(where), a - 1, registry.ACTUATOR[kind]), where)
end

--- Explicit node boundary conditions: nodes = {flat node index (0-based), ...}, normals = {{nx,ny[,nz]}, ...}.
function World:set_node_bcs(nodes, normals, spec)
  local where = "world:set_node_bcs"
  self:_handle(where)
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
    local len2 = 0
    for a = 1, self.dim do
      nn[3 * (k - 1) + a - 1] = normals[k][a]
      len2 = len2 + normals[k][a] ^ 2
    end
    if not (len2 > 0) then
      check.fail(where, "normals[" .. k .. "] must be a non-zero vector", check.shown(check.list_text(normals[k])))
    end
  end
  spec = spec or {}
  check.options(where, spec, NODE_BC_OPTIONS)
  local BC = registry.BC
  local t = spec.type or "sticky"
  if registry.id(BC, t) == nil or t == "none" then check.fail(where, "type must be one of sticky, slip, separate, friction", t) end
  check.number(where, "friction", spec.friction or 0, 0, math.huge, { inf = true })
  self:_check(self._lib.cq_world_set_node_bcs(self:_handle(where), count, ni, nn, BC[t], spec.friction or 0), where)
end

--- Cable (seed 000 eq. 17) through particles (1-based, in order) driven by cable actuator a (1-based): stiffness
--- k, rest length = the cable length at u = 1 (contract-only: no force while slack).
function World:add_cable(a, particles, k, rest)
  local where = "world:add_cable"
  self:_handle(where)
  check.integer(where, "actuator", a, 1, self.n_actuators)
  if type(particles) ~= "table" or #particles < 2 then
    check.fail(where, "particles must be a list of at least 2 particle indices", particles)
  end
  local idx = ffi.new("int[?]", #particles)
  for i, p in ipairs(particles) do idx[i - 1] = check.integer(where, "particles[" .. i .. "]", p, 1, self.n) - 1 end
  check.number(where, "k", k, 0, math.huge)
  check.number(where, "rest", rest, 0, math.huge)
  self:_check(self._lib.cq_world_add_cable(self:_handle(where), a - 1, #particles, idx, k, rest), where)
  self._cabled = self._cabled or {}
  self._cabled[a] = true
end

--- Validates parameters (E > 0, nu in (-1, 0.5), mass, volume, dt vs. the stability limit). Required before step;
--- parameters written later (world:fill) are validated again before the next step.
function World:commit()
  self:_check(self._lib.cq_world_commit(self:_handle("world:commit")), "world:commit")
  if not self.committed then -- warned once per world
    local warn, material = require("cq._warn"), self:_writable("material")
    warn.sparse_fluids(self, material, self:_writable("vol0"), registry.MATERIAL.fluid)
    warn.locking_fluid(self, material, registry.MATERIAL.fluid)
  end
  self.committed = true
  return self
end

-- Warns once per world, at the first state it steps from (world:step, memo:begin), of a body close to a wall band
-- (cq._warn.near_walls) and of grid water whose fill is uneven where it meets a body (cq._warn.water_seams).
function World:_placement(s, where)
  self._placed = true
  local warn = require("cq._warn")
  warn.near_walls(self, s, self.params.material, registry.MATERIAL.fluid)
  warn.water_seams(self, s, self.params.material, self.params.bulk, self.params.vol0, registry.MATERIAL.fluid) -- a
  -- grid water that will hold the bodies in it
  warn.idle_actuators(self, self.params.act_id, self._cabled or {}, where or "world:step") -- and of actuators that
  -- drive nothing
end

function World:stable_dt() return self._lib.cq_world_stable_dt(self:_handle("world:stable_dt")) end

function World:set_threads(t)
  check.integer("world:set_threads", "threads", t, 0, MAX_THREADS)
  self:_check(self._lib.cq_world_set_threads(self:_handle("world:set_threads"), t), "world:set_threads")
  self.threads = t
end

--- Sets the gravity vector (dim values) from the next step on: seed 004's climber raises it during optimisation. A
--- memo recorded before cannot be differentiated after (the world changed).
function World:set_gravity(g)
  local where = "world:set_gravity"
  check.vector(where, "gravity", g, self.dim)
  local v = ffi.new("double[3]")
  for a = 1, self.dim do v[a - 1] = g[a] end
  self:_check(self._lib.cq_world_set_gravity(self:_handle(where), v), where)
  for a = 1, self.dim do self._gravity[a] = g[a] end -- once the engine took it
end

--- CPU threads the last control step ran on (threads = 0 chooses them from the idle cores).
function World:threads_used() return self._lib.cq_world_threads_used(self:_handle("world:threads_used")) end

-- A writable view of parameter name; the engine validates the parameters again before the next step.
function World:_writable(name)
  local f = self._fields[name]
  return ffi.cast(f.type == 0 and self._real or C.type_ctype[f.type], self._lib.cq_world_param(self:_handle(), name))
end

-- For world:fill of an integer field (act_id, material): a function(x, label, i) raising unless x is one of its
-- values (label: where x is, a format of i).
local function integer_values(world, where, name)
  local lo, hi, range
  if name == "act_id" then
    lo, hi = -1, world.n_actuators - 1
    range = hi < 0 and "-1 (none): the world has no actuators" or string.format("-1 (none) or an actuator index in " ..
      "[0, %d] (0-based; the world has %d actuator%s)", hi, world.n_actuators, hi == 0 and "" or "s")
  elseif name == "material" then
    local count = 0
    while registry.MATERIAL[count] do count = count + 1 end
    lo, hi = 0, count - 1
    range = string.format("a material name (%s) or an id in [0, %d]", registry.names(registry.MATERIAL), hi)
  else
    lo, hi = -check.INT_MAX - 1, check.INT_MAX
    range = "an integer in [-2^31, 2^31 - 1]"
  end
  return function(x, label, i) -- label: a format for i, "" for one value
    if x ~= math.floor(x) or x < lo or x > hi then
      check.fail(where, name .. string.format(label, i) .. " must be " .. range, x)
    end
  end
end

--- Fills a per-particle parameter for particles first..last with a value, a function p -> value, a vector per
--- particle (act_axis), a material name (material), or a list / FFI array of values (one per particle: list[1] or
--- array[0] for particle first).
function World:fill(name, value, first, last)
  local where = "world:fill"
  self:_handle(where)
  local f = self._fields[name]
  if not f then check.fail(where, "name must be a particle parameter (" .. table.concat(self._param_names, ", ") .. ")", name) end
  first, last = first or 1, last or self.n
  local n = self.n
  check.integer(where, "first", first, 1, n)
  check.integer(where, "last", last, first, n)
  -- every value is checked (and a function called) before any is written: a refused fill leaves the world as it was
  local arr = self:_writable(name)
  local int = f.type ~= 0 and integer_values(self, where, name) or nil -- act_id, material: checked here (a C int
  -- field would store 0.5 as 0 and -1 as 255)
  if f.shape == 1 and type(value) == "function" then -- one vector per particle
    local xs = {}
    for p = first, last do
      local x = value(p)
      check.vector(where, name .. " function's value for particle " .. p, x, self.dim)
      xs[p] = { unpack(x, 1, self.dim) }
    end
    for p = first, last do for a = 1, self.dim do arr[(a - 1) * n + p - 1] = xs[p][a] end end
  elseif f.shape == 1 then -- one value per axis
    check.vector(where, name, value, self.dim)
    for p = first, last do for a = 1, self.dim do arr[(a - 1) * n + p - 1] = value[a] end end
  elseif name == "material" and type(value) == "string" then
    local m = registry.MATERIAL[value]
    if m == nil then check.fail(where, "material must be one of " .. registry.names(registry.MATERIAL), value) end
    for p = first, last do arr[p - 1] = m end
  elseif type(value) == "function" then
    local xs = {}
    for p = first, last do
      local x = value(p)
      if type(x) ~= "number" then check.fail(where, name .. " function must return a number for particle " .. p, x) end
      if int then int(x, " (the function's value for particle %d)", p) end
      xs[p] = x
    end
    for p = first, last do arr[p - 1] = xs[p] end
  elseif type(value) == "table" or type(value) == "cdata" then
    local base = type(value) == "table" and 1 or 0
    if base == 1 and check.list(where, name .. " values", value) ~= last - first + 1 then -- (extra values would be
      -- dropped without a word)
      check.fail(where, string.format("%s values must hold one number per particle %d..%d (%d)", name, first, last,
        last - first + 1), value)
    end
    for p = first, last do
      local x = value[p - first + base]
      if type(x) ~= "number" then check.fail(where, name .. " values[" .. (p - first + base) .. "] must be a number", x) end
      if int then int(x, " values[%d]", p - first + base) end
    end
    for p = first, last do arr[p - 1] = value[p - first + base] end
  else
    if type(value) ~= "number" then
      check.fail(where, name .. " value must be a number, a function p -> number or a list of numbers", value)
    end
    if int then int(value, "") end
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

--- Makes the world (and its memos) unusable at once; the engine memory is returned when no view of it remains.
function World:release()
  if self._released then return end
  for m in pairs(self._memos) do m:release() end
  self._released = true
  self._h, self._views = nil, nil
  collectgarbage()
end

---------------------------------------------------------------- states and steps
local state = require "cq.state"

--- A new state for this world: every field at its initial value (x = v = C = 0, F = I).
function World:state()
  local h = self._lib.cq_state_create(self:_handle("world:state"))
  if h == nil then check.raise("world:state: out of memory for a state of " .. self.n .. " particles") end
  return state.wrap(self, ffi.gc(h, self._lib.cq_state_free), nil)
end

-- The actuation argument of a step: nil (zero), a table or a double array of n_actuators values.
local function act_array(world, u, where)
  local na = world.n_actuators
  if u == nil then return nil end
  if na == 0 then
    if type(u) == "table" and #u > 0 then
      check.fail(where, "u must be nil or empty: the world has no actuators (n_actuators = 0)", u)
    end
    return nil
  end
  if type(u) == "cdata" then return check.doubles(where, "u", u, na) end
  if type(u) ~= "table" or #u ~= na then
    check.fail(where, "u must be a table of " .. na .. " actuation values", u)
  end
  local a = world._u or ffi.new("double[?]", na)
  world._u = a
  for i = 1, na do
    if type(u[i]) ~= "number" then check.fail(where, "u[" .. i .. "] must be a number", u[i]) end
    a[i - 1] = u[i]
  end
  return a
end

-- The control struct of one step (reused): actuation u, and optional per-particle force and stress arrays.
function World:_control(where, u, force, stress)
  check.doubles(where, "force", force, self.dim * self.n)
  check.doubles(where, "stress", stress, self.dim * self.dim * self.n)
  local ctl = self._ctl
  ctl.u, ctl.force, ctl.stress = act_array(self, u, where), force, stress
  return ctl
end

--- Advances state s by one control step (substeps x dt/substeps) with actuation u (table or double[]), an
--- optional per-particle force (double[dim * n], component-major) and an optional per-particle material-space
--- actuation stress (double[dim * dim * n], stress[(i * dim + j) * n + p] = A_p[i][j], adds F A_p F^T like a
--- stress actuator), both held over the substeps.
function World:step(s, u, force, stress)
  local where = "world:step"
  local h = self:_handle(where)
  if not self.committed then check.raise(where .. ": call world:commit() first") end
  state.check_own(where, "s", s, self)
  if not self._placed then self:_placement(s, where) end
  local fracture = not self._fracture_off
  if fracture and not self._fracture then self:_fracture_baseline(s) end
  local t0 = fracture and now()
  local control = self:_control(where, u, force, stress)
  self:_error_mark()
  self:_check(self._lib.cq_step(h, s:_handle(where), control), where)
  if self.integrator == "implicit" then self:_error_check(where) end
  if fracture then self:_fracture_check(s, now() - t0) end
end

-- After an implicit step (world:step, memo:step): warns once per world when a substep was kept with its local error
-- estimate above implicit.error_tol (engine/integrators/integrator_implicit.c step_error; the solver stats'
-- error_over).
-- Every step also notes whether its own substeps went over it (against the count _error_mark read before the
-- step, so that a backward pass's recomputed substeps are not taken for the next step's): the last such step
-- (_error_last_over) is what an implicit blow-up's message names (World:_check).
function World:_error_stats_now()
  local st = self._error_stats or ffi.new("cq_solver_stats")
  self._error_stats = st
  self._lib.cq_world_solver_stats(self._h, st, 0)
  return st
end

function World:_error_mark()
  if self.integrator == "implicit" and self.error_tol ~= false then
    self._error_over_before = tonumber(self:_error_stats_now().error_over)
  end
end

function World:_error_check(where)
  if self.error_tol == false then return end
  self._error_steps = (self._error_steps or 0) + 1
  local st = self:_error_stats_now()
  local over = tonumber(st.error_over)
  if over > (self._error_over_before or 0) then self._error_last_over = self._error_steps end
  if over == 0 or self._error_warned then return end
  self._error_warned = true
  local advice = self.adapt and string.format("even after implicit.max_split = %d halvings; use a smaller dt (or more " ..
    "substeps) or a larger implicit.max_split", self.max_split) or "use a smaller dt (or more substeps), or " ..
    "implicit.adapt = true to halve such substeps where needed (the loss is then piecewise, with steps where a substep " ..
    "starts or stops halving)"
  require("cq._warn").warn(string.format("cqlua: warning: %s: in step %d of this world an implicit substep's " ..
    "estimated position error is %.3g cells, above implicit.error_tol = %g (backward Euler's local error per step, " ..
    "(dt/2) max |v' - v|, which grows as dt^2; a load applied at once, gravity included, exceeds it at any usual dt, " ..
    "and ramping it is the remedy there): %s; warned once per world (world:solver_stats() counts every such " ..
    "substep: error_over, error_max)", where, self._error_steps, st.error_max, self.error_tol, advice))
end

-- Numerical fracture (cq._fracture): each solid body's pieces in the first state world:step steps from, then checked
-- again after the steps, as often as costs at most 2 % of the stepping's wall time (every step where a step takes
-- 50x the check or more). A check's cost counts the step after it too: on the GPU the check's reads of the state
-- move its pages to the host, and that step moves them back.
function World:_fracture_baseline(s)
  self._fracture = require("cq._fracture").baseline(self, s, self.params.material, registry.MATERIAL.fluid)
  self._fracture.cost, self._fracture.spent, self._fracture.steps = 0, 0, 0 -- the first check after the first step
  -- (the baseline's own time holds the JIT's compilation)
end

-- After a step of s that took `took` seconds: checks s against the baseline F when the budget allows; where: the
-- caller's name for the message (world:step, memo:step). Raises the message, or with warn returns it (once per F).
function World:_fracture_check(s, took, F, where, warn)
  F = F or self._fracture
  F.steps = F.steps + 1
  if F.after then F.cost, F.after = F.cost + took, false else F.spent = F.spent + took end
  if self._fracture_every and F.steps % self._fracture_every ~= 0 then return end
  if not self._fracture_every and F.spent < 50 * F.cost then return end
  local t0 = now()
  local msg = require("cq._fracture").check(self, s, F, F.steps)
  F.cost, F.spent, F.after = now() - t0, 0, true
  if msg and not warn then check.raise((where or "world:step") .. ": " .. msg) end
  return msg
end

--- Numerical fracture check of world:step and memo:step on (the default) or off; on again takes a new baseline from
--- the next state stepped from. every: check after every that many control steps (default: as often as costs at most 2 % of the
--- stepping's wall time). Returns the world.
function World:check_fracture(on, every)
  local where = "world:check_fracture"
  if type(on) ~= "boolean" then check.fail(where, "on must be true or false", on) end
  if every ~= nil then check.integer(where, "every", every, 1) end
  self._fracture_off, self._fracture, self._fracture_every = not on, nil, every
  self._fracture_gen = (self._fracture_gen or 0) + 1 -- memos take a new baseline too
  return self
end

--- Cauchy stress of every particle of state s (engine cq_world_stress: the step's own stress, divided by J):
--- double[dim * dim * n], entry (i, j) of particle p at [((i-1) * dim + j-1) * n + p-1]. u (table or double[]) and
--- stress (double[dim * dim * n]) add the actuation stress of that control, as world:step would apply it; nil =
--- the elastic (and incompressibility) stress only. out: an array to fill instead of a new one.
function World:stress(s, u, stress, out)
  local where = "world:stress"
  local h = self:_handle(where)
  state.check_own(where, "s", s, self)
  local len = self.dim * self.dim * self.n
  if out ~= nil then check.doubles(where, "out", out, len) end
  out = out or check.alloc(where, "n", "double[?]", len)
  local ctl = self:_control(where, u, nil, stress)
  self:_check(self._lib.cq_world_stress(h, s:_handle(where), (u ~= nil or stress ~= nil) and ctl or nil, out), where)
  return out
end

---------------------------------------------------------------- memos
local memo = require "cq.memo"
local MEMO_OPTIONS = check.option_set("world:memo", { "steps", "checkpoint_every" })

--- world:memo{steps = T, checkpoint_every = 0 (auto, ~sqrt(N)) | 1 (store all) | K}
function World:memo(opts)
  local where = "world:memo"
  check.options(where, opts, MEMO_OPTIONS)
  local h = self:_handle(where)
  if not self.committed then check.raise(where .. ": call world:commit() first") end
  local steps = check.integer(where, "steps", opts.steps, 1, math.floor(check.INT_MAX / self.substeps))
  local ck = check.integer(where, "checkpoint_every", opts.checkpoint_every or 0, 0)
  local mh = self._lib.cq_memo_create(h, steps, ck)
  if mh == nil then check.raise(where .. ": " .. ffi.string(self._lib.cq_world_error(h))) end
  local m = memo.wrap(self, ffi.gc(mh, self._lib.cq_memo_free), steps)
  self._memos[m] = true
  return m
end

return M
