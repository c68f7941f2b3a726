-- Progress lines (iteration, values, seconds, ETA) and a CSV log under out/ for optimization scripts.
local clock = require "cq.clock"

local M = {}
local Log = {}
Log.__index = Log

--- cq.log.new(name, columns): writes out/<name>.csv with the given columns (iteration and seconds are filled in).
function M.new(name, columns)
  os.execute("mkdir -p out")
  local f = io.open("out/" .. name .. ".csv", "w")
  if f then f:write(table.concat(columns, ","), "\n") end
  return setmetatable({ name = name, columns = columns, file = f, t0 = clock.now(), tlast = clock.now() }, Log)
end

--- Records iteration it of total with a table of named values; prints one progress line.
function Log:iteration(it, total, values)
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
  local s = 0
  for _, p in ipairs(params) do for i = 0, p.n - 1 do s = s + p.g[i] * p.g[i] end end
  return math.sqrt(s)
end

Log.grad_norm = M.grad_norm
return M
