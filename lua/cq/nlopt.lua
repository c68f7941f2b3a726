-- Gradient-based optimizers from libnlopt (L-BFGS, SLSQP, MMA, CCSA) through the LuaJIT FFI, over the same
-- {n, v, g} parameter objects cq.optim.adam takes, with box bounds and inequality/equality constraints.
--
-- Usage (cq.nlopt is this module's new):
--
--   local opt = cq.nlopt {
--     algorithm = "slsqp",                 -- "lbfgs" | "slsqp" | "mma" | "ccsaq"
--     params = { a, b },                   -- {n, v, g} objects (cq.param): v, g are double[n], 0-based
--     bounds = { [a] = { -1, 1 } },        -- numbers or per-entry tables {lo1, lo2, ...}, like cq.optim.adam
--     objective = function(need_grad) ... return loss end,
--     inequality = { { fn = function(need_grad) ... return c end, tol = 1e-8 } },   -- c(x) <= 0
--     equality = { { fn = function(need_grad) ... return h end, tol = 1e-8 } },     -- h(x) == 0
--     maxeval = 100, ftol_rel = 1e-10, xtol_rel = 1e-8,
--     on_iteration = function(eval, loss) end,   -- after every objective evaluation; return true to stop
--   }
--   local loss, result, evals = opt:run()      -- result: "FTOL_REACHED", "XTOL_REACHED", "MAXEVAL_REACHED", ...
--
-- Gradient convention (the same for the objective and every constraint, and the one cq.rollout's backward and
-- cq.tape use): before each call the optimizer writes the point into p.v and zeroes p.g of every param; the
-- function returns its value and, when need_grad is true, leaves d(value)/d(p.v) in p.g (assigned or accumulated).
-- When need_grad is false (line searches of SLSQP, for instance) the gradient is not read and may be skipped.
-- So a rollout objective is just `function() local L = R:forward(s0); R:backward(); return L end`.
--
-- After run() the params hold the point nlopt returns (its best) and p.g the gradient of the last evaluation.
-- The initial point is projected onto the bounds first. Result codes FAILURE and ROUNDOFF_LIMITED are returned
-- (the point is usually still useful); INVALID_ARGS and OUT_OF_MEMORY raise. An error raised inside the objective,
-- a constraint or on_iteration stops nlopt (nlopt_force_stop) and is re-raised from run() with its message.
--
-- Numerical failures (recover = {retries = 10} | false, on_recover = function(eval, message)): an evaluation that
-- fails numerically (an engine blow-up, a Newton solve that did not converge, a NaN value or a non-finite gradient:
-- a trial point where the simulation is no longer valid) is not an error once one evaluation has succeeded: the
-- optimizer gets +inf there (and a zero gradient), so its line search steps back towards its last good point, as
-- cq.train restores and shrinks (L-BFGS halves its step, SLSQP backtracks, MMA and CCSA take a more conservative
-- step; 10 in a row let a step shrink 1000-fold). Each one is reported to on_recover (default: a line on stderr) and
-- counted in opt.recoveries. More than retries such failures in a row, a failure at the first evaluation, and any
-- other error stop the run with the error.
local ffi = require "ffi"
local check = require "cq._check"
local recover_ = require "cq._recover"

local M = {}
local OPTIONS = check.option_set("cq.nlopt", { "algorithm", "params", "bounds", "objective", "inequality", "equality", "maxeval", "ftol_rel", "xtol_rel", "on_iteration", "recover", "on_recover" })
local RECOVER_OPTIONS = check.option_set("cq.nlopt recover", { "retries" })

if not pcall(ffi.typeof, "struct cq_nlopt_opt_s") then
  ffi.cdef [[
    typedef struct cq_nlopt_opt_s *cq_nlopt_opt;
    typedef double (*cq_nlopt_func)(unsigned n, const double *x, double *gradient, void *data);
    cq_nlopt_opt nlopt_create(int algorithm, unsigned n);
    void nlopt_destroy(cq_nlopt_opt opt);
    int nlopt_optimize(cq_nlopt_opt opt, double *x, double *opt_f);
    int nlopt_set_min_objective(cq_nlopt_opt opt, cq_nlopt_func f, void *data);
    int nlopt_set_lower_bounds(cq_nlopt_opt opt, const double *lb);
    int nlopt_set_upper_bounds(cq_nlopt_opt opt, const double *ub);
    int nlopt_add_inequality_constraint(cq_nlopt_opt opt, cq_nlopt_func fc, void *data, double tol);
    int nlopt_add_equality_constraint(cq_nlopt_opt opt, cq_nlopt_func h, void *data, double tol);
    int nlopt_set_maxeval(cq_nlopt_opt opt, int maxeval);
    int nlopt_set_ftol_rel(cq_nlopt_opt opt, double tol);
    int nlopt_set_xtol_rel(cq_nlopt_opt opt, double tol);
    int nlopt_force_stop(cq_nlopt_opt opt);
    const char *nlopt_get_errmsg(cq_nlopt_opt opt);
    void nlopt_version(int *major, int *minor, int *bugfix);
  ]]
end

-- nlopt_algorithm values (nlopt.h enum order, stable since nlopt 2.4) and which constraints each one handles.
local ALGORITHMS = {
  lbfgs = { code = 11, inequality = false, equality = false },
  mma = { code = 24, inequality = true, equality = false },
  slsqp = { code = 40, inequality = true, equality = true },
  ccsaq = { code = 41, inequality = true, equality = false },
}
local ALGORITHM_NAMES = { "lbfgs", "slsqp", "mma", "ccsaq" }

-- nlopt_result values -> names.
local RESULTS = { [-1] = "FAILURE", [-2] = "INVALID_ARGS", [-3] = "OUT_OF_MEMORY", [-4] = "ROUNDOFF_LIMITED",
  [-5] = "FORCED_STOP", [1] = "SUCCESS", [2] = "STOPVAL_REACHED", [3] = "FTOL_REACHED", [4] = "XTOL_REACHED",
  [5] = "MAXEVAL_REACHED", [6] = "MAXTIME_REACHED" }
M.RESULTS = RESULTS

local lib_cache, lib_err
-- The nlopt library, loaded on first use; a clear error when it is not installed.
local function lib(where)
  if lib_cache then return lib_cache end
  if not lib_err then
    local ok, l = pcall(ffi.load, "nlopt")
    if not ok then ok, l = pcall(ffi.load, "libnlopt.so.0") end
    if ok then lib_cache = l return l end
    lib_err = tostring(l)
  end
  check.raise(string.format("%s: cannot load libnlopt (install it: apt-get install libnlopt-dev): %s", where, lib_err))
end

--- nlopt's version as "major.minor.bugfix".
function M.version()
  local v = ffi.new("int[3]")
  lib("cq.nlopt.version").nlopt_version(v, v + 1, v + 2)
  return string.format("%d.%d.%d", v[0], v[1], v[2])
end

local Opt = {}
Opt.__index = Opt
M.Opt = Opt

-- Lower/upper bound of entry i (0-based) from a {lo, hi} spec (numbers or per-entry tables).
local function bound(spec, j, i)
  if not spec then return j == 1 and -math.huge or math.huge end
  local b = spec[j]
  if type(b) == "table" then b = b[i + 1] end
  if b == nil then return j == 1 and -math.huge or math.huge end
  return b
end

local function check_constraints(where, name, list, algo)
  if list == nil then return {} end
  if type(list) ~= "table" then check.fail(where, name .. " must be a list of {fn = function, tol = number}", list, 3) end
  if #list > 0 and not ALGORITHMS[algo][name] then
    local ok = {}
    for _, a in ipairs(ALGORITHM_NAMES) do if ALGORITHMS[a][name] then ok[#ok + 1] = a end end
    check.fail(where, string.format("algorithm %q does not support %s constraints (use %s)", algo, name,
      table.concat(ok, " or ")), algo, 3)
  end
  local out = {}
  for k, c in ipairs(list) do
    local cw = string.format("%s[%d]", name, k)
    if type(c) ~= "table" or type(c.fn) ~= "function" then
      check.fail(where, cw .. " must be a table {fn = function(need_grad) -> value, tol = number}", c, 3)
    end
    for key in pairs(c) do
      if key ~= "fn" and key ~= "tol" then check.fail(where, cw .. " has an unknown key (known: fn, tol)", key, 3) end
    end
    local tol = c.tol or 1e-8
    if type(tol) ~= "number" or tol ~= tol or tol < 0 then check.fail(where, cw .. ".tol must be a number >= 0", tol, 3) end
    out[k] = { fn = c.fn, tol = tol, name = cw }
  end
  return out
end

--- cq.nlopt{algorithm, params, objective, bounds?, inequality?, equality?, maxeval [100], ftol_rel?,
--- xtol_rel?, on_iteration?, recover = {retries = 10} | false, on_recover?}: see the file header.
function M.new(opts)
  local where = "cq.nlopt"
  check.options(where, opts, OPTIONS)
  local algo = opts.algorithm
  if ALGORITHMS[algo] == nil then
    check.fail(where, "algorithm must be one of " .. table.concat(ALGORITHM_NAMES, ", "), algo)
  end
  local params = opts.params
  if type(params) ~= "table" or #params == 0 then
    check.fail(where, "params must be a non-empty list of {n, v, g} parameter objects", params)
  end
  local total = 0
  for k, p in ipairs(params) do
    if type(p) ~= "table" or type(p.n) ~= "number" or p.n < 1 or p.n ~= math.floor(p.n)
        or type(p.v) ~= "cdata" or type(p.g) ~= "cdata" then
      check.fail(where, string.format("params[%d] must be a parameter object {n = positive integer, v = double[n], " ..
        "g = double[n]} (cq.param)", k), p)
    end
    total = total + p.n
  end
  if type(opts.objective) ~= "function" then
    check.fail(where, "objective must be a function(need_grad) -> loss that fills p.g", opts.objective)
  end
  local bounds = opts.bounds or {}
  if type(bounds) ~= "table" then check.fail(where, "bounds must be a table { [param] = {lo, hi} }", bounds) end
  local listed = {}
  for _, p in ipairs(params) do listed[p] = true end
  for p, b in pairs(bounds) do
    if not listed[p] then check.fail(where, "bounds keys must be objects in params", p) end
    if type(b) ~= "table" then check.fail(where, "bounds[param] must be {lo, hi} (numbers or per-entry tables)", b) end
    check.indices_only(where, "bounds[param]", b, 2, "{lo, hi} (numbers or per-entry tables)")
    for j, name in ipairs { "lo", "hi" } do
      if b[j] ~= nil and type(b[j]) ~= "number" and (type(b[j]) ~= "table" or #b[j] ~= p.n) then
        check.fail(where, "bounds[param] " .. name .. " must be a number or a table of " .. p.n .. " numbers", b[j])
      end
    end
    for i = 0, p.n - 1 do
      local lo, hi = bound(b, 1, i), bound(b, 2, i)
      if type(lo) ~= "number" or type(hi) ~= "number" or lo ~= lo or hi ~= hi or lo > hi then
        check.fail(where, string.format("bounds entry %d must be numbers lo <= hi", i + 1),
          check.shown(string.format("{%s, %s}", check.fmt(lo), check.fmt(hi))))
      end
    end
  end
  local maxeval = opts.maxeval or 100
  if type(maxeval) ~= "number" or maxeval ~= math.floor(maxeval) or maxeval < 1 or maxeval > 2 ^ 31 - 1 then
    check.fail(where, "maxeval must be a positive integer", maxeval)
  end
  if opts.ftol_rel ~= nil then check.number(where, "ftol_rel", opts.ftol_rel, 0, math.huge) end
  if opts.xtol_rel ~= nil then check.number(where, "xtol_rel", opts.xtol_rel, 0, math.huge) end
  if opts.on_iteration ~= nil and type(opts.on_iteration) ~= "function" then
    check.fail(where, "on_iteration must be a function(eval, loss)", opts.on_iteration)
  end
  local recover = opts.recover
  if recover ~= false then
    if recover ~= nil and type(recover) ~= "table" then
      check.fail(where, "recover must be a table {retries = integer} or false", recover)
    end
    recover = recover or {}
    check.options(where .. " recover", recover, RECOVER_OPTIONS)
    recover = { retries = recover.retries == nil and 10 or check.integer(where, "recover.retries", recover.retries, 0, 1000) }
  end
  if opts.on_recover ~= nil and type(opts.on_recover) ~= "function" then
    check.fail(where, "on_recover must be a function(eval, message)", opts.on_recover)
  end
  return setmetatable({ algorithm = algo, params = params, bounds = bounds, objective = opts.objective,
    inequality = check_constraints(where, "inequality", opts.inequality, algo),
    equality = check_constraints(where, "equality", opts.equality, algo),
    maxeval = maxeval, ftol_rel = opts.ftol_rel, xtol_rel = opts.xtol_rel, on_iteration = opts.on_iteration,
    recover = recover, on_recover = opts.on_recover, n = total, evals = 0, recoveries = 0 }, Opt)
end

function Opt:__tostring()
  return string.format("cq.nlopt: %s, %d parameters, %d inequality and %d equality constraints",
    self.algorithm, self.n, #self.inequality, #self.equality)
end

-- Writes x into the params, zeroes their gradients, calls fn and copies the gradient into grad (may be NULL).
function Opt:_eval(fn, name, x, grad)
  local off = 0
  for _, p in ipairs(self.params) do
    ffi.copy(p.v, x + off, 8 * p.n)
    ffi.fill(p.g, 8 * p.n)
    off = off + p.n
  end
  local need = grad ~= nil
  local val = fn(need)
  if type(val) ~= "number" then
    error(string.format("%s must return a number (got %s)", name, check.fmt(val)), 0)
  end
  if val ~= val then error(string.format("%s is nan: not finite (evaluation %d)", name, self.evals), 0) end
  if need then
    local bad = recover_.nonfinite_gradient(self.params)
    if bad then error(string.format("%s: %s (evaluation %d)", name, bad, self.evals), 0) end
    off = 0
    for _, p in ipairs(self.params) do
      ffi.copy(grad + off, p.g, 8 * p.n)
      off = off + p.n
    end
  end
  return val
end

-- The message and the user's frames of its traceback (this file's frames around them are dropped).
local function traceback(e)
  local out, user = {}, false
  for line in debug.traceback(tostring(e), 1):gmatch("[^\n]+") do
    local ours = line:find("cq/nlopt.lua", 1, true) or line:find("in function 'error'", 1, true)
    if ours and user then break end
    if not ours then out[#out + 1] = line end
    if not ours and line:find("^%s") then user = true end
  end
  return table.concat(out, "\n")
end

-- A C callback for fn; errors are caught, stop nlopt and are kept in self._err for run() to re-raise, but for a
-- numerical failure after a success, which gives nlopt +inf (the file header).
function Opt:_callback(fn, name, is_objective)
  return ffi.cast("cq_nlopt_func", function(_, x, grad)
    if self._err or self._stop then return 0 end
    if is_objective then self.evals = self.evals + 1 end
    local ok, res = xpcall(function()
      local val = self:_eval(fn, name, x, grad)
      if is_objective and self.on_iteration and self.on_iteration(self.evals, val) == true then
        self._stop = true
        self._lib.nlopt_force_stop(self._opt)
      end
      return val
    end, traceback)
    if ok then
      if is_objective then self._good, self._failures = true, 0 end
      return res
    end
    if self.recover and self._good and recover_.numerical(res) and self._failures < self.recover.retries then
      self._failures = self._failures + 1
      self.recoveries = self.recoveries + 1
      local msg = string.format("evaluation %d failed numerically in %s (%s); the optimizer got +inf there and steps " ..
        "back (%d in a row)", self.evals, name, (tostring(res):match("^[^\n]*")), self._failures)
      if self.on_recover then
        local rok, rerr = pcall(self.on_recover, self.evals, msg)
        if not rok then
          self._err = string.format("on_recover (evaluation %d): %s", self.evals, tostring(rerr))
          self._lib.nlopt_force_stop(self._opt)
          return 0
        end
      else
        io.stderr:write("cq.nlopt: ", msg, "\n")
      end
      if grad ~= nil then ffi.fill(grad, 8 * self.n) end
      return math.huge
    end
    local why = ""
    if self.recover and recover_.numerical(res) then
      why = self._good and string.format(" (%d numerical failures in a row: more than recover.retries = %d)",
        self._failures + 1, self.recover.retries) or " (a numerical failure before any evaluation succeeded)"
    end
    self._err = string.format("%s (evaluation %d)%s: %s", name, self.evals, why, res)
    self._lib.nlopt_force_stop(self._opt)
    return 0
  end)
end

-- nlopt_optimize calls back into Lua: it must not run from a compiled trace (jit.off below).
local function optimize(L, opt, x, f) return L.nlopt_optimize(opt, x, f) end
jit.off(optimize)

local function nlopt_error(L, opt, what, rc)
  local msg = ""
  local ok, f = pcall(function() return L.nlopt_get_errmsg end)
  if ok then
    local m = f(opt)
    if m ~= nil then msg = ": " .. ffi.string(m) end
  end
  return string.format("cq.nlopt: %s failed with %s%s", what, RESULTS[rc] or tostring(rc), msg)
end

--- Runs the optimization from the params' current values. Returns the final loss, the nlopt result name
--- ("FTOL_REACHED", "MAXEVAL_REACHED", ...) and the number of objective evaluations; the params end at nlopt's best.
function Opt:run()
  local L = lib("cq.nlopt")
  local n = self.n
  local x, lo, hi = ffi.new("double[?]", n), ffi.new("double[?]", n), ffi.new("double[?]", n)
  local off = 0
  for _, p in ipairs(self.params) do
    local b = self.bounds[p] or p.bounds -- explicit, else the parameter's own (design variables)
    for i = 0, p.n - 1 do
      lo[off + i], hi[off + i] = bound(b, 1, i), bound(b, 2, i)
      x[off + i] = math.min(math.max(p.v[i], lo[off + i]), hi[off + i])
    end
    off = off + p.n
  end
  local opt = L.nlopt_create(ALGORITHMS[self.algorithm].code, n)
  if opt == nil then check.raise("cq.nlopt: nlopt_create failed (out of memory?)") end
  opt = ffi.gc(opt, L.nlopt_destroy)
  self._lib, self._opt, self._err, self._stop, self.evals = L, opt, nil, nil, 0
  self._good, self._failures, self.recoveries = false, 0, 0
  local cbs = {}
  local function cleanup()
    for _, cb in ipairs(cbs) do cb:free() end
    L.nlopt_destroy(ffi.gc(opt, nil))
    self._opt = nil
  end
  local function setup(rc, what)
    if rc < 0 then
      local msg = nlopt_error(L, opt, what, rc)
      cleanup()
      check.raise(msg)
    end
  end
  cbs[1] = self:_callback(self.objective, "objective", true)
  setup(L.nlopt_set_min_objective(opt, cbs[1], nil), "nlopt_set_min_objective")
  for _, c in ipairs(self.inequality) do
    cbs[#cbs + 1] = self:_callback(c.fn, c.name, false)
    setup(L.nlopt_add_inequality_constraint(opt, cbs[#cbs], nil, c.tol), "nlopt_add_inequality_constraint")
  end
  for _, c in ipairs(self.equality) do
    cbs[#cbs + 1] = self:_callback(c.fn, c.name, false)
    setup(L.nlopt_add_equality_constraint(opt, cbs[#cbs], nil, c.tol), "nlopt_add_equality_constraint")
  end
  setup(L.nlopt_set_lower_bounds(opt, lo), "nlopt_set_lower_bounds")
  setup(L.nlopt_set_upper_bounds(opt, hi), "nlopt_set_upper_bounds")
  setup(L.nlopt_set_maxeval(opt, self.maxeval), "nlopt_set_maxeval")
  if self.ftol_rel then setup(L.nlopt_set_ftol_rel(opt, self.ftol_rel), "nlopt_set_ftol_rel") end
  if self.xtol_rel then setup(L.nlopt_set_xtol_rel(opt, self.xtol_rel), "nlopt_set_xtol_rel") end

  local f = ffi.new("double[1]")
  local rc = optimize(L, opt, x, f)
  local err = rc < 0 and rc ~= -5 and rc ~= -4 and rc ~= -1 and nlopt_error(L, opt, "nlopt_optimize", rc) or nil
  cleanup()
  off = 0
  for _, p in ipairs(self.params) do
    ffi.copy(p.v, x + off, 8 * p.n)
    off = off + p.n
  end
  if self._err then check.raise("cq.nlopt: error in " .. self._err) end
  if err then check.raise(err) end
  self.loss, self.result = f[0], RESULTS[rc] or tostring(rc)
  return self.loss, self.result, self.evals
end

return M
