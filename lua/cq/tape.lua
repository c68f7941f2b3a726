-- A small reverse-mode AD tape over FFI double arrays: what observers, controllers and objectives written in Lua
-- are differentiated with. Leaves are trainable parameters (cq.tape.param) or engine state (centroid / gather of
-- particle fields); the backward pass accumulates parameter gradients into the params and state gradients into a
-- "sink" (the memo's gradient state, dL/ds_k).
local ffi = require "ffi"

local M = {}
local darr = ffi.typeof("double[?]")

---------------------------------------------------------------- parameters
local Param = {}
Param.__index = Param

--- A trainable array of n doubles (rows x cols for matrices) with a gradient of the same size. init: a number
--- (every entry), a table of n numbers, or a function i -> value (1-based); default 0.
function M.param(n, init, rows)
  local p = setmetatable({ n = n, v = darr(n), g = darr(n), rows = rows, cols = rows and n / rows or nil }, Param)
  for i = 0, n - 1 do
    local x = type(init) == "function" and init(i + 1) or type(init) == "table" and init[i + 1] or init or 0
    if type(x) ~= "number" then error("cq.tape.param: init must give a number for entry " .. (i + 1), 2) end
    p.v[i] = x
  end
  return p
end
function Param:zero_grad() ffi.fill(self.g, 8 * self.n) end
function Param:get(i) return self.v[i - 1] end
function Param:set(i, x) self.v[i - 1] = x end

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
  if type(values) == "number" then return node(self, values, nil) end
  local n = type(values) == "table" and #values or values.n
  local x = node(self, n, nil)
  for i = 0, n - 1 do x.v[i] = type(values) == "table" and values[i + 1] or values.v[i] end
  return x
end

--- Uses a parameter as a leaf: its gradient is accumulated into the parameter.
function Tape:use(p)
  local x = node(self, p.n, function(x) for i = 0, p.n - 1 do p.g[i] = p.g[i] + x.g[i] end end)
  ffi.copy(x.v, p.v, 8 * p.n)
  return x
end

--- y = W x (W a rows x cols parameter or node with .rows, x a vector of cols).
function Tape:matvec(W, x)
  local Wn = W.back == nil and W.rows and self:use(W) or W
  local rows, cols = W.rows, x.n
  assert(rows * cols == Wn.n, "cq.tape:matvec: matrix is " .. rows .. " x " .. Wn.n / rows .. ", vector has " .. x.n)
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
local function binary(t, a, b, f)
  a, b = as_node(t, a), as_node(t, b)
  local n = math.max(a.n, b.n)
  assert(a.n == n or a.n == 1, "cq.tape: operand sizes differ")
  assert(b.n == n or b.n == 1, "cq.tape: operand sizes differ")
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

function Tape:add(a, b) return binary(self, a, b, function(x, y) return x + y, 1, 1 end) end
function Tape:sub(a, b) return binary(self, a, b, function(x, y) return x - y, 1, -1 end) end
function Tape:mul(a, b) return binary(self, a, b, function(x, y) return x * y, y, x end) end

-- Elementwise unary op: f(x) -> value, derivative.
local function unary(t, a, f)
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

function Tape:scale(a, s) return unary(self, a, function(x) return s * x, s end) end
function Tape:tanh(a) return unary(self, a, function(x) local y = math.tanh(x) return y, 1 - y * y end) end
function Tape:relu(a) return unary(self, a, function(x) if x > 0 then return x, 1 end return 0, 0 end) end
function Tape:sigmoid(a)
  return unary(self, a, function(x) local y = 1 / (1 + math.exp(-x)) return y, y * (1 - y) end)
end
function Tape:exp(a) return unary(self, a, function(x) local y = math.exp(x) return y, y end) end
function Tape:square(a) return unary(self, a, function(x) return x * x, 2 * x end) end

function Tape:sum(a)
  local y = node(self, 1, function(y) for i = 0, a.n - 1 do a.g[i] = a.g[i] + y.g[0] end end)
  local s = 0
  for i = 0, a.n - 1 do s = s + a.v[i] end
  y.v[0] = s
  return y
end
function Tape:mean(a) return self:scale(self:sum(a), 1 / a.n) end
function Tape:dot(a, b) return self:sum(self:mul(a, b)) end
function Tape:norm(a)
  local s = self:dot(a, a)
  return unary(self, s, function(x) local r = math.sqrt(x) return r, r > 0 and 0.5 / r or 0 end)
end

--- Concatenation of vectors.
function Tape:concat(list)
  local n = 0
  for _, a in ipairs(list) do n = n + a.n end
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
  local y = node(self, 1, function(y) a.g[i - 1] = a.g[i - 1] + y.g[0] end)
  y.v[0] = a.v[i - 1]
  return y
end

---------------------------------------------------------------- engine state leaves
-- state: a cq state (fields x, v are component-major FFI arrays); the backward pass adds into sink[field].

--- Mean of field ("x" or "v") over the particles idx (1-based list, or nil = all): a dim-vector.
function Tape:centroid(state, field, idx)
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
    local g = sink[field]
    for a = 0, dim - 1 do
      local ga = y.g[a] / m
      if idx then for _, p in ipairs(idx) do g[a * n + p - 1] = g[a * n + p - 1] + ga end
      else for p = 0, n - 1 do g[a * n + p] = g[a * n + p] + ga end end
    end
  end
  return y
end

--- The values of field for the particles idx, particle-major: (p1 axis 1, p1 axis 2, ..., p2 axis 1, ...).
function Tape:gather(state, field, idx)
  local n, dim, arr = state.n, state.dim, state[field]
  local y = node(self, #idx * dim, nil)
  for k, p in ipairs(idx) do for a = 0, dim - 1 do y.v[(k - 1) * dim + a] = arr[a * n + p - 1] end end
  y.back = function(y, sink)
    local g = sink[field]
    for k, p in ipairs(idx) do
      for a = 0, dim - 1 do g[a * n + p - 1] = g[a * n + p - 1] + y.g[(k - 1) * dim + a] end
    end
  end
  return y
end

---------------------------------------------------------------- backward
--- Adds seed to out's gradient: a number for every entry, or a Lua table / double array of out.n values.
function Tape:seed(out, seed)
  for i = 0, out.n - 1 do
    out.g[i] = out.g[i] + (type(seed) == "number" and seed or type(seed) == "table" and seed[i + 1] or seed[i])
  end
end

--- Seeds out (default 1, optional when outputs were seeded with tape:seed) and runs every recorded node's
--- backward in reverse order, once. sink receives engine-state gradients (sink.x, sink.v arrays).
function Tape:backward(out, seed, sink)
  if out then self:seed(out, seed == nil and 1 or seed) end
  for k = #self.nodes, 1, -1 do
    local x = self.nodes[k]
    if x.back then x.back(x, sink) end
  end
end

function Tape:value(x, i) return x.v[(i or 1) - 1] end

return M
