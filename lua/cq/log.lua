-- Progress lines (iteration, values, seconds, ETA) and a CSV log under out/ for optimization scripts.
local clock = require "cq.clock"
local check = require "cq._check"

local M = {}
local Log = {}
Log.__index = Log

local OPTIONS = check.option_set("cq.log", { "name", "columns" })

--- cq.log{name, columns}: writes out/<name>.csv with the given columns (iteration and seconds are filled in).
function M.new(opts)
  local where = "cq.log"
  check.options(where, opts, OPTIONS)
  local name, columns = opts.name, opts.columns
  if type(name) ~= "string" or name == "" or name:find("/") then
    check.fail(where, "name must be a file name without '/' (the log goes to out/<name>.csv)", name)
  end
  if type(columns) ~= "table" then check.fail(where, "columns must be a list of column names", columns) end
  for i, c in ipairs(columns) do
    if type(c) ~= "string" then check.fail(where, "columns[" .. i .. "] must be a string", c) end
  end
  os.execute("mkdir -p out")
  local f = io.open("out/" .. name .. ".csv", "w")
  if f then f:write(table.concat(columns, ","), "\n") end
  return setmetatable({ name = name, columns = columns, file = f, t0 = clock.now(), tlast = clock.now() }, Log)
end

--- Records iteration it of total with a table of named values; prints one progress line.
function Log:iteration(it, total, values)
  check.integer("log:iteration", "it", it, 1)
  check.number("log:iteration", "total", total)
  if type(values) ~= "table" then check.fail("log:iteration", "values must be a table of named values", values) end
  local now = clock.now()
  values.iteration, values.seconds = it, now - self.tlast
  self.tlast = now
  local eta = (now - self.t0) / it * (total - it)
  local parts = { string.format("%s %4d/%d", self.name, it, total) }
  for _, c in ipairs(self.columns) do
    if c ~= "iteration" and c ~= "seconds" and values[c] then parts[#parts + 1] = string.format("%s %.6g", c, values[c]) end
  end
  parts[#parts + 1] = string.format("%.2f s  ETA %.0f s", values.seconds, eta)
  print(table.concat(parts, "  "))
  if self.file then
    local row = {}
    for i, c in ipairs(self.columns) do row[i] = tostring(values[c] or "") end
    self.file:write(table.concat(row, ","), "\n")
    self.file:flush()
  end
  self.first = self.first or values
  self.last = values
end

--- Euclidean norm of the gradients of a list of parameters.
function M.grad_norm(params)
  if type(params) ~= "table" then check.fail("cq.grad_norm", "params must be a list of parameters (cq.param)", params) end
  for i, p in ipairs(params) do
    if type(p) ~= "table" or type(p.n) ~= "number" or p.g == nil then
      check.fail("cq.grad_norm", "params[" .. i .. "] must be a parameter (cq.param)", p)
    end
  end
  local s = 0
  for _, p in ipairs(params) do for i = 0, p.n - 1 do s = s + p.g[i] * p.g[i] end end
  return math.sqrt(s)
end

Log.grad_norm = M.grad_norm
return M
