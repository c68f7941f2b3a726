-- A small reverse-mode AD tape over FFI double arrays: what observers, controllers and objectives written in Lua
-- are differentiated with. Leaves are trainable parameters (cq.param) or engine state (centroid / gather of
-- particle fields); the backward pass accumulates parameter gradients into the params and state gradients into a
-- "sink" (the memo's gradient state, dL/ds_k).
local ffi = require "ffi"
local check = require "cq._check"

local M = {}
local darr = ffi.typeof("double[?]")

-- Argument checks. They cost O(1) per op (no per-element work), so they stay on in the per-step paths. level:
-- 1 = the caller of the function that runs the check (the user's call when that function is the public op or
-- is tail-called by it).
local NODE = "a tape node (t:const, t:use or an op's result)"
local function is_node(a) return type(a) == "table" and type(a.n) == "number" and a.v ~= nil end
local function need_node(where, name, a, level)
  if not is_node(a) then check.fail(where, name .. " must be " .. NODE, a, level + 2) end
  return a
end
-- Size of an elementwise operand (a number, a cq.param or a node), or nil.
local function size_of(a)
  if type(a) == "number" then return 1 end
  if is_node(a) then return a.n end
end
-- Two elementwise operands: each of the same size, or of size 1 (broadcast). Returns the result size.
local function check_pair(where, a, b, level)
  local na, nb = size_of(a), size_of(b)
  if not na then check.fail(where, "a must be " .. NODE .. ", a number or a cq.param", a, level + 2) end
  if not nb then check.fail(where, "b must be " .. NODE .. ", a number or a cq.param", b, level + 2) end
  if na ~= nb and not ((na == 1 and nb > 0) or (nb == 1 and na > 0)) then
    if na == 0 or nb == 0 then -- a size-1 operand broadcasts over a non-empty one only
      check.fail(where, "a and b must both be empty or both non-empty (t:const(0) is an empty node; the constant 0 " ..
        "is t:const({0}) or 0)", string.format("sizes %d and %d", na, nb), level + 2)
    end
    check.fail(where, string.format("b must have %d values (the size of a) or 1", na), nb, level + 2)
  end
  return na > nb and na or nb
end
-- i must be an index in [1, n] (1-based).
local function check_index(where, name, i, n, level)
  if type(i) ~= "number" or i < 1 or i > n or i % 1 ~= 0 then
    check.fail(where, name .. " must be an integer in [1, " .. n .. "]", i, level + 2)
  end
end

---------------------------------------------------------------- parameters
local Param = {}
Param.__index = Param

--- A trainable array of n doubles (rows x cols for matrices) with a gradient of the same size. init: a number
--- (every entry), a table of n numbers, or a function i -> value (1-based); default 0.
M.MAX_PARAM = 2 ^ 27 -- 1 GiB of values and as much of gradient: far beyond any controller
function M.param(n, init, rows)
  local where = "cq.param"
  check.integer(where, "n", n, 1, M.MAX_PARAM)
  if rows ~= nil and (type(rows) ~= "number" or rows < 1 or rows % 1 ~= 0 or n % rows ~= 0) then
    check.fail(where, "rows must be nil or a positive integer that divides n (" .. n .. ")", rows)
  end
  local what = "init must be a number, a table of " .. n .. " numbers or a function i -> number"
  if init ~= nil and type(init) ~= "number" and type(init) ~= "table" and type(init) ~= "function" then
    check.fail(where, what, init)
  end
  if type(init) == "table" and #init ~= n then check.fail(where, what, init) end
  if type(init) == "number" then check.number(where, "init", init) end
  local p = setmetatable({ n = n, v = check.alloc(where, "n", darr, n), g = check.alloc(where, "n", darr, n), rows = rows,
    cols = rows and n / rows or nil }, Param)
  for i = 0, n - 1 do
    local x
    if type(init) == "function" then x = check.number(where, "init(" .. (i + 1) .. ")", init(i + 1))
    elseif type(init) == "table" then x = check.number(where, "init[" .. (i + 1) .. "]", init[i + 1])
    else x = init or 0 end
    p.v[i] = x
  end
  return p
end
local PARAM_OPTIONS = check.option_set("cq.param", { "n", "init", "rows" })
--- cq.param{n, init, rows}: the options-table form of M.param (what the package exports).
function M.param_opts(opts)
  check.options("cq.param", opts, PARAM_OPTIONS)
  return M.param(opts.n, opts.init, opts.rows)
end

function Param:__tostring() return string.format("cq.param: %d values%s", self.n, self.rows and
  string.format(" (%d x %d)", self.rows, self.cols) or "") end
function Param:zero_grad() ffi.fill(self.g, 8 * self.n) end
function Param:get(i)
  check_index("param:get", "i", i, self.n, 1)
  return self.v[i - 1]
end
function Param:set(i, x)
  check_index("param:set", "i", i, self.n, 1)
  check.number("param:set", "x", x)
  self.v[i - 1] = x
end

---------------------------------------------------------------- tape
local Tape = {}
Tape.__index = Tape

function M.new() return setmetatable({ nodes = {} }, Tape) end

-- A node holds n values v, a gradient g (zeroed at creation) and a backward function.
local function node(t, n, back)
  local x = { n = n, v = darr(n), g = darr(n), back = back }
  t.nodes[#t.nodes + 1] = x
  return x
end

--- A constant vector (no gradient flows out of it): from a Lua table, another node, or a length (zeros).
--- Custom ops fill the values of a const(n) node and set its back(node, sink) function.
function Tape:const(values)
  if type(values) == "number" then
    if values < 0 or values % 1 ~= 0 then check.integer("cq.tape:const", "length", values, 0) end
    return node(self, values, nil)
  end
  if type(values) ~= "table" then
    check.fail("cq.tape:const", "values must be a table of numbers, a node or a length", values)
  end
  if is_node(values) then -- a copy of another node's values
    local x = node(self, values.n, nil)
    ffi.copy(x.v, values.v, 8 * values.n)
    return x
  end
  local n = #values
  for i = 1, n do
    local v = values[i]
    if type(v) ~= "number" then check.fail("cq.tape:const", "values[" .. i .. "] must be a number", v) end
  end
  local x = node(self, n, nil)
  for i = 0, n - 1 do x.v[i] = values[i + 1] end
  return x
end

-- A const(n) node over the caller's arrays v and g (g zeroed), for an op run every control step that keeps its
-- storage instead of allocating two arrays per call (cq.design's mixer: two per-particle arrays per control step,
-- forward and backward, were most of a topology rollout's garbage). Valid until the op's next call.
function Tape:_over(n, v, g)
  ffi.fill(g, 8 * n)
  local x = { n = n, v = v, g = g }
  self.nodes[#self.nodes + 1] = x
  return x
end

--- Uses a parameter as a leaf: its gradient is accumulated into the parameter.
function Tape:use(p)
  if not is_node(p) or p.g == nil then check.fail("cq.tape:use", "p must be a cq.param", p) end
  local x = node(self, p.n, function(x) for i = 0, p.n - 1 do p.g[i] = p.g[i] + x.g[i] end end)
  ffi.copy(x.v, p.v, 8 * p.n)
  return x
end

--- y = W x (W a rows x cols parameter or node with .rows, x a vector of cols).
function Tape:matvec(W, x)
  local where = "cq.tape:matvec"
  if not is_node(W) or type(W.rows) ~= "number" then
    check.fail(where, "W must be a matrix: a cq.param made with rows (or a node with .rows)", W)
  end
  need_node(where, "x", x, 1)
  local Wn = W.back == nil and W.rows and self:use(W) or W
  local rows, cols = W.rows, x.n
  if rows * cols ~= Wn.n then
    check.fail(where, string.format("x must have %s values (W is %d x %s)", Wn.n / rows, rows, Wn.n / rows), x.n)
  end
  local y = node(self, rows, function(y)
    for r = 0, rows - 1 do
      local gy = y.g[r]
      if gy ~= 0 then
        for c = 0, cols - 1 do
          Wn.g[r * cols + c] = Wn.g[r * cols + c] + gy * x.v[c]
          x.g[c] = x.g[c] + gy * Wn.v[r * cols + c]
        end
      end
    end
  end)
  for r = 0, rows - 1 do
    local s = 0
    for c = 0, cols - 1 do s = s + Wn.v[r * cols + c] * x.v[c] end
    y.v[r] = s
  end
  return y
end

local function as_node(t, a)
  if type(a) == "number" then return t:const({ a }) end
  if getmetatable(a) == Param then return t:use(a) end
  return a
end

-- Elementwise binary op with broadcasting of length-1 operands. f(a, b) -> value, da, db.
-- The public ops tail-call it: a failed check points at the user's call.
local function binary(t, a, b, f, where)
  local n = check_pair(where, a, b, 1)
  a, b = as_node(t, a), as_node(t, b)
  local ia, ib = a.n == 1 and 0 or 1, b.n == 1 and 0 or 1
  local y = node(t, n, function(y)
    for i = 0, n - 1 do
      local _, da, db = f(a.v[i * ia], b.v[i * ib])
      a.g[i * ia] = a.g[i * ia] + y.g[i] * da
      b.g[i * ib] = b.g[i * ib] + y.g[i] * db
    end
  end)
  for i = 0, n - 1 do y.v[i] = f(a.v[i * ia], b.v[i * ib]) end
  return y
end

function Tape:add(a, b) return binary(self, a, b, function(x, y) return x + y, 1, 1 end, "cq.tape:add") end
function Tape:sub(a, b) return binary(self, a, b, function(x, y) return x - y, 1, -1 end, "cq.tape:sub") end
function Tape:mul(a, b) return binary(self, a, b, function(x, y) return x * y, y, x end, "cq.tape:mul") end

-- Elementwise unary op: f(x) -> value, derivative. Tail-called by the public ops, like binary.
local function unary(t, a, f, where)
  if not size_of(a) then check.fail(where, "a must be " .. NODE .. ", a number or a cq.param", a, 2) end
  a = as_node(t, a)
  local y = node(t, a.n, function(y)
    for i = 0, a.n - 1 do
      local _, d = f(a.v[i])
      a.g[i] = a.g[i] + y.g[i] * d
    end
  end)
  for i = 0, a.n - 1 do y.v[i] = f(a.v[i]) end
  return y
end

function Tape:scale(a, s)
  if type(s) ~= "number" or s ~= s or s == math.huge or s == -math.huge then check.number("cq.tape:scale", "s", s) end
  return unary(self, a, function(x) return s * x, s end, "cq.tape:scale")
end
function Tape:tanh(a) return unary(self, a, function(x) local y = math.tanh(x) return y, 1 - y * y end, "cq.tape:tanh") end
function Tape:relu(a) return unary(self, a, function(x) if x > 0 then return x, 1 end return 0, 0 end, "cq.tape:relu") end
function Tape:sigmoid(a)
  return unary(self, a, function(x) local y = 1 / (1 + math.exp(-x)) return y, y * (1 - y) end, "cq.tape:sigmoid")
end
function Tape:exp(a) return unary(self, a, function(x) local y = math.exp(x) return y, y end, "cq.tape:exp") end
function Tape:sqrt(a) return unary(self, a, function(x) local y = math.sqrt(x) return y, 0.5 / y end, "cq.tape:sqrt") end
function Tape:square(a) return unary(self, a, function(x) return x * x, 2 * x end, "cq.tape:square") end

function Tape:sum(a)
  need_node("cq.tape:sum", "a", a, 1)
  local y = node(self, 1, function(y) for i = 0, a.n - 1 do a.g[i] = a.g[i] + y.g[0] end end)
  local s = 0
  for i = 0, a.n - 1 do s = s + a.v[i] end
  y.v[0] = s
  return y
end
function Tape:mean(a)
  need_node("cq.tape:mean", "a", a, 1)
  return self:scale(self:sum(a), 1 / a.n)
end
function Tape:dot(a, b)
  check_pair("cq.tape:dot", a, b, 1)
  return self:sum(self:mul(a, b))
end
function Tape:norm(a)
  if not size_of(a) then check.fail("cq.tape:norm", "a must be " .. NODE .. ", a number or a cq.param", a) end
  local s = self:dot(a, a)
  return unary(self, s, function(x) local r = math.sqrt(x) return r, r > 0 and 0.5 / r or 0 end)
end

--- Concatenation of vectors.
function Tape:concat(list)
  if type(list) ~= "table" then check.fail("cq.tape:concat", "list must be a list of tape nodes", list) end
  local n = 0
  for i, a in ipairs(list) do n = n + need_node("cq.tape:concat", "list[" .. i .. "]", a, 1).n end
  local y = node(self, n, function(y)
    local o = 0
    for _, a in ipairs(list) do
      for i = 0, a.n - 1 do a.g[i] = a.g[i] + y.g[o + i] end
      o = o + a.n
    end
  end)
  local o = 0
  for _, a in ipairs(list) do
    ffi.copy(y.v + o, a.v, 8 * a.n)
    o = o + a.n
  end
  return y
end

--- Element i (1-based) of a vector, as a scalar node.
function Tape:index(a, i)
  need_node("cq.tape:index", "a", a, 1)
  check_index("cq.tape:index", "i", i, a.n, 1)
  local y = node(self, 1, function(y) a.g[i - 1] = a.g[i - 1] + y.g[0] end)
  y.v[0] = a.v[i - 1]
  return y
end

---------------------------------------------------------------- engine state leaves
-- state: a cq state (fields x, v are component-major FFI arrays); the backward pass adds into sink[field].

-- Particle index lists already checked against a particle count (weak keys): a list is re-checked when its length
-- or the particle count changes, so the per-step cost of a centroid / gather leaf stays O(1) in the check.
local idx_n, idx_len = setmetatable({}, { __mode = "k" }), setmetatable({}, { __mode = "k" })
local function check_leaf(where, state, field, idx, level)
  if type(state) ~= "table" or type(state.n) ~= "number" or type(state.dim) ~= "number" then
    check.fail(where, "state must be a cq state (memo.state, world:state(), ...)", state, level + 2)
  end
  if state._handle then state:_handle(where) end -- a released state (or one of a released memo) raises
  if field ~= "x" and field ~= "v" then check.fail(where, "field must be x or v", field, level + 2) end
  if idx == nil then return end
  local n = state.n
  if type(idx) ~= "table" or #idx == 0 then
    check.fail(where, "idx must be a non-empty list of particle indices (1-based)", idx, level + 2)
  end
  local len = #idx
  if idx_n[idx] == n and idx_len[idx] == len then return end
  for k = 1, len do
    local p = idx[k]
    if type(p) ~= "number" or p < 1 or p > n or p % 1 ~= 0 then
      check.fail(where, string.format("idx[%d] must be a particle index in [1, %d]", k, n), p, level + 2)
    end
  end
  idx_n[idx], idx_len[idx] = n, len
end
-- The gradient arrays of sink (memo.grad) for a state leaf's backward.
local function sink_field(sink, field)
  local g = type(sink) == "table" and sink[field]
  if not g then
    check.fail("cq.tape:backward", "sink must be the state gradient (memo.grad, with field " .. field .. ") when the " ..
      "tape has state leaves (t:centroid, t:gather)", sink, 4)
  end
  return g
end

--- Mean of field ("x" or "v") over the particles idx (1-based list, or nil = all): a dim-vector.
function Tape:centroid(state, field, idx)
  check_leaf("cq.tape:centroid", state, field, idx, 1)
  local n, dim, arr = state.n, state.dim, state[field]
  local m = idx and #idx or n
  local y = node(self, dim, nil)
  y.state_field, y.idx = field, idx
  for a = 0, dim - 1 do
    local s = 0
    if idx then for _, p in ipairs(idx) do s = s + arr[a * n + p - 1] end
    else for p = 0, n - 1 do s = s + arr[a * n + p] end end
    y.v[a] = s / m
  end
  y.back = function(y, sink)
    local g = sink_field(sink, field)
    for a = 0, dim - 1 do
      local ga = y.g[a] / m
      if idx then for _, p in ipairs(idx) do g[a * n + p - 1] = g[a * n + p - 1] + ga end
      else for p = 0, n - 1 do g[a * n + p] = g[a * n + p] + ga end end
    end
  end
  return y
end

-- The mass moments of a whole engine state (engine/stages/moments.h: M, X[dim], V[dim], XX[dim][dim], XV[dim][dim], with
-- the world's current masses), computed by the engine where the state lives: a state the GPU keeps between control
-- steps is not moved to the host to be read. nil for a state that is not the engine's (then the Lua loops run).
local State
local function engine_moments(where, state)
  State = State or require("cq.state").State
  if getmetatable(state) ~= State then return nil end
  local w, D = state.world, state.dim
  local mo = darr(1 + 2 * D + 2 * D * D)
  w:_check(w._lib.cq_state_moments(w:_handle(where), state:_handle(where), mo), where)
  return mo
end
-- Their adjoint: g = dL/d(the moments) into sink's x and v and, when sink is a memo's gradient (a rollout's), dL/dmass
-- into memo.grad_params.mass; by the engine when sink is an engine state, else in Lua.
local function moments_backward(state, g, sink)
  local w, n, D = state.world, state.n, state.dim
  if getmetatable(sink) == State and sink.world == w then
    local memo = sink._memo
    w:_check(w._lib.cq_state_moments_adj(w:_handle("cq.tape:backward"), state:_handle("cq.tape:backward"), g,
      sink:_handle("cq.tape:backward"), memo and memo:_handle("cq.tape:backward") or nil), "cq.tape:backward")
    return
  end
  local gx, gv = sink_field(sink, "x"), sink_field(sink, "v")
  local gm = type(sink) == "table" and sink._memo and sink._memo.grad_params.mass
  local x, v, mass = state.x, state.v, w.params.mass
  local X, V, XX, XV = 1, 1 + D, 1 + 2 * D, 1 + 2 * D + D * D
  for p = 0, n - 1 do
    local m, dm = mass[p], g[0]
    for a = 0, D - 1 do
      local xa, va, dx, dv = x[a * n + p], v[a * n + p], g[X + a], g[V + a]
      for b = 0, D - 1 do
        local xb, vb = x[b * n + p], v[b * n + p]
        dx = dx + (g[XX + a * D + b] + g[XX + b * D + a]) * xb + g[XV + a * D + b] * vb
        dv = dv + g[XV + b * D + a] * xb
        dm = dm + (g[XX + a * D + b] * xb + g[XV + a * D + b] * vb) * xa
      end
      dm = dm + g[X + a] * xa + g[V + a] * va
      gx[a * n + p] = gx[a * n + p] + m * dx
      gv[a * n + p] = gv[a * n + p] + m * dv
    end
    if gm then gm[p] = gm[p] + dm end
  end
end

--- Mass-weighted mean of field ("x" or "v") over the particles idx (1-based list, or nil = all), with the world's
--- current masses: a dim-vector (seed 004 eq. 33's v_g). Its backward adds to the state's gradient and, when the
--- sink is a memo's gradient (a rollout's), dL/dmass into memo.grad_params.mass: the weights are design-dependent.
function Tape:mass_centroid(state, field, idx)
  check_leaf("cq.tape:mass_centroid", state, field, idx, 1)
  local mo = not idx and engine_moments("cq.tape:mass_centroid", state)
  if mo then -- the whole body: y = X / M (or V / M) from the engine's moments
    local D, M = state.dim, mo[0]
    local o = field == "x" and 1 or 1 + D
    local y = node(self, D, function(y, sink)
      local g = darr(1 + 2 * D + 2 * D * D)
      for a = 0, D - 1 do
        g[o + a] = y.g[a] / M
        g[0] = g[0] - y.g[a] * y.v[a] / M
      end
      moments_backward(state, g, sink)
    end)
    for a = 0, D - 1 do y.v[a] = mo[o + a] / M end
    return y
  end
  local n, dim, arr, mass = state.n, state.dim, state[field], state.world.params.mass
  local list = idx
  if not list then list = {} for p = 1, n do list[p] = p end end
  local M = 0
  for _, p in ipairs(list) do M = M + mass[p - 1] end
  local y = node(self, dim, nil)
  for a = 0, dim - 1 do
    local s = 0
    for _, p in ipairs(list) do s = s + mass[p - 1] * arr[a * n + p - 1] end
    y.v[a] = s / M
  end
  y.back = function(y, sink)
    local g = sink_field(sink, field)
    local gm = type(sink) == "table" and sink._memo and sink._memo.grad_params.mass
    for _, p in ipairs(list) do
      local mp, dm = mass[p - 1] / M, 0
      for a = 0, dim - 1 do
        g[a * n + p - 1] = g[a * n + p - 1] + y.g[a] * mp
        dm = dm + y.g[a] * (arr[a * n + p - 1] - y.v[a]) / M
      end
      if gm then gm[p - 1] = gm[p - 1] + dm end
    end
  end
  return y
end

--- The body's angular velocity about its mass centre around axis (3D: 1, 2 or 3; 2D: the z axis, axis ignored):
--- omega = sum m (x - x_g) x (v - v_g) . e / sum m |x - x_g|^2 over the particles idx (nil = all) with the world's
--- current masses, a scalar (seed 004 eq. 36's integrand). Its backward adds to the state's x and v gradients and,
--- in a rollout, dL/dmass into memo.grad_params.mass (the mass centre's own terms cancel: sum m (x - x_g) = 0).
--- It keeps no per-particle values (a rollout calls it every control step: per-particle Lua tables made
--- rotator3d_topo's iteration about a fifth slower, in allocation and collection).
function Tape:spin(state, axis, idx)
  check_leaf("cq.tape:spin", state, "x", idx, 1)
  local n, dim, x, v, mass = state.n, state.dim, state.x, state.v, state.world.params.mass
  if dim == 3 then check.integer("cq.tape:spin", "axis", axis, 1, 3) end
  local count = idx and #idx or n
  -- r x u . e_axis = r_i u_j - r_j u_i with (i, j, axis) cyclic (2D: i, j = x, y); 0-based components. The loops
  -- spell the components out: LuaJIT compiles a loop over 2 or 3 components as the root trace, with the particle
  -- loop around it as side traces (a trace exit per particle), and a rollout calls this every control step
  local i, j = 0, 1
  if dim == 3 then i, j = axis % 3, (axis + 1) % 3 end
  local mo = not idx and engine_moments("cq.tape:spin", state)
  if mo then
    -- the whole body from the engine's moments: with X = sum m x, V = sum m v, XX, XV as in engine/stages/moments.h,
    -- H = sum m (r x u) . e = XV_ij - XV_ji - (X_i V_j - X_j V_i) / M and I = sum m |r|^2 = tr XX - |X|^2 / M
    local D = dim
    local X, V, XX, XV = 1, 1 + D, 1 + 2 * D, 1 + 2 * D + D * D
    local M = mo[0]
    local cross = mo[X + i] * mo[V + j] - mo[X + j] * mo[V + i]
    local H, I, X2 = mo[XV + i * D + j] - mo[XV + j * D + i] - cross / M, 0, 0
    for a = 0, D - 1 do I, X2 = I + mo[XX + a * D + a], X2 + mo[X + a] ^ 2 end
    I = I - X2 / M
    local y = node(self, 1, function(y, sink)
      local gH, gI = y.g[0] / I, -y.g[0] * H / (I * I)
      local g = darr(1 + 2 * D + 2 * D * D)
      g[XV + i * D + j], g[XV + j * D + i] = gH, -gH
      g[X + i], g[X + j] = -gH * mo[V + j] / M, gH * mo[V + i] / M
      g[V + j], g[V + i] = -gH * mo[X + i] / M, gH * mo[X + j] / M
      g[0] = gH * cross / (M * M) + gI * X2 / (M * M)
      for a = 0, D - 1 do
        g[XX + a * D + a] = gI
        g[X + a] = g[X + a] - 2 * gI * mo[X + a] / M
      end
      moments_backward(state, g, sink)
    end)
    y.v[0] = H / I
    return y
  end
  local three = dim == 3
  local M, xg0, xg1, xg2, vg0, vg1, vg2 = 0, 0, 0, 0, 0, 0, 0
  for k = 0, count - 1 do
    local p = idx and idx[k + 1] - 1 or k
    local m = mass[p]
    M = M + m
    xg0, xg1, vg0, vg1 = xg0 + m * x[p], xg1 + m * x[n + p], vg0 + m * v[p], vg1 + m * v[n + p]
    if three then xg2, vg2 = xg2 + m * x[2 * n + p], vg2 + m * v[2 * n + p] end
  end
  xg0, xg1, xg2, vg0, vg1, vg2 = xg0 / M, xg1 / M, xg2 / M, vg0 / M, vg1 / M, vg2 / M
  local xg, vg = { [0] = xg0, xg1, xg2 }, { [0] = vg0, vg1, vg2 }
  local xgi, xgj, vgi, vgj, io, jo = xg[i], xg[j], vg[i], vg[j], i * n, j * n
  -- particle p's r_i, r_j, u_i, u_j and |r|^2 (r = x - x_g, u = v - v_g)
  local function rel(p)
    local r0, r1 = x[p] - xg0, x[n + p] - xg1
    local rr = r0 * r0 + r1 * r1
    if three then
      local r2 = x[2 * n + p] - xg2
      rr = rr + r2 * r2
    end
    return x[io + p] - xgi, x[jo + p] - xgj, v[io + p] - vgi, v[jo + p] - vgj, rr
  end
  local H, I = 0, 0
  for k = 0, count - 1 do
    local p = idx and idx[k + 1] - 1 or k
    local ri, rj, ui, uj, rr = rel(p)
    H, I = H + mass[p] * (ri * uj - rj * ui), I + mass[p] * rr
  end
  local y = node(self, 1, nil)
  y.v[0] = H / I
  -- (reads x, v and the masses again, as t:mass_centroid does: backward before the state changes, as a rollout does)
  y.back = function(y, sink)
    local gx, gv = sink_field(sink, "x"), sink_field(sink, "v")
    local gm = type(sink) == "table" and sink._memo and sink._memo.grad_params.mass
    local gH, gI = y.g[0] / I, -y.g[0] * H / (I * I)
    local co = three and (3 - i - j) * n or nil -- the axis' own component: only |r|^2 depends on it
    local xgc = three and xg[3 - i - j]
    for k = 0, count - 1 do
      local p = idx and idx[k + 1] - 1 or k
      local m = mass[p]
      local ri, rj, ui, uj, rr = rel(p)
      -- dh/dr = (u_j, -u_i) and dh/du = (-r_j, r_i) in components (i, j); d|r|^2/dr = 2 r
      gx[io + p] = gx[io + p] + m * (gH * uj + gI * 2 * ri)
      gx[jo + p] = gx[jo + p] + m * (gH * -ui + gI * 2 * rj)
      gv[io + p] = gv[io + p] + m * gH * -rj
      gv[jo + p] = gv[jo + p] + m * gH * ri
      if three then gx[co + p] = gx[co + p] + m * (gI * 2 * (x[co + p] - xgc)) end
      if gm then gm[p] = gm[p] + gH * (ri * uj - rj * ui) + gI * rr end
    end
  end
  return y
end

--- The values of field for the particles idx, particle-major: (p1 axis 1, p1 axis 2, ..., p2 axis 1, ...).
function Tape:gather(state, field, idx)
  if idx == nil then check.fail("cq.tape:gather", "idx must be a non-empty list of particle indices (1-based)", idx) end
  check_leaf("cq.tape:gather", state, field, idx, 1)
  local n, dim, arr = state.n, state.dim, state[field]
  local y = node(self, #idx * dim, nil)
  for k, p in ipairs(idx) do for a = 0, dim - 1 do y.v[(k - 1) * dim + a] = arr[a * n + p - 1] end end
  y.back = function(y, sink)
    local g = sink_field(sink, field)
    for k, p in ipairs(idx) do
      for a = 0, dim - 1 do g[a * n + p - 1] = g[a * n + p - 1] + y.g[(k - 1) * dim + a] end
    end
  end
  return y
end

---------------------------------------------------------------- backward
--- Adds seed to out's gradient: a number for every entry, or a Lua table / double array of out.n values.
function Tape:seed(out, seed)
  local where = "cq.tape:seed"
  need_node(where, "out", out, 1)
  local ts = type(seed)
  if ts == "table" then
    if #seed < out.n then check.fail(where, "seed must have " .. out.n .. " values (the size of out)", "a table of " .. #seed) end
  elseif ts == "cdata" then -- engine arrays (double* / float*) pass; a double[?] must be long enough
    if ffi.istype(darr, seed) and ffi.sizeof(seed) < 8 * out.n then
      check.fail(where, "seed must have " .. out.n .. " values (the size of out)", "an array of " .. ffi.sizeof(seed) / 8)
    end
  elseif ts ~= "number" then
    check.fail(where, "seed must be a number, a table or a double array of " .. out.n .. " values", seed)
  end
  for i = 0, out.n - 1 do
    out.g[i] = out.g[i] + (type(seed) == "number" and seed or type(seed) == "table" and seed[i + 1] or seed[i])
  end
end

--- Seeds out (default 1, optional when outputs were seeded with tape:seed) and runs every recorded node's
--- backward in reverse order, once. sink receives engine-state gradients (sink.x, sink.v arrays).
function Tape:backward(out, seed, sink)
  if out ~= nil then need_node("cq.tape:backward", "out", out, 1) end
  if out then self:seed(out, seed == nil and 1 or seed) end
  for k = #self.nodes, 1, -1 do
    local x = self.nodes[k]
    if x.back then x.back(x, sink) end
  end
end

function Tape:value(x, i)
  need_node("cq.tape:value", "x", x, 1)
  i = i or 1
  check_index("cq.tape:value", "i", i, x.n, 1)
  return x.v[i - 1]
end

return M
