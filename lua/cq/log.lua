-- Progress lines (iteration, values, seconds, ETA) and a CSV log under out/ for optimization scripts. A new run moves
-- the previous run's log aside (out/<name>.1.csv, .2, ... up to 5) instead of overwriting it; a resumed run keeps the
-- rows up to the iteration it resumes from and appends. Each row is written with one write and flushed, so a
-- killed run leaves whole rows.
local clock = require "cq.clock"
local check = require "cq._check"
local fs = require "cq._fs"

local M = {}
local Log = {}
Log.__index = Log
M.KEEP = 5 -- earlier logs kept by rotation

local OPTIONS = check.option_set("cq.log", { "name", "columns", "dir", "resume", "quiet" })

-- Splits a CSV row of our own writing (no quoting: values are numbers and words without commas).
local function split(line)
  local out = {}
  for field in (line .. ","):gmatch("([^,]*),") do out[#out + 1] = field end
  return out
end

--- cq.log{name, columns, dir = "out", resume = false, quiet = false}: writes <dir>/<name>.csv with the given columns
--- (iteration and seconds are filled in). resume = the iteration to continue after: rows up to it are kept, later
--- ones dropped (the state saved at that iteration knows nothing of them), and log.first and log.last are read back
--- from the kept rows; otherwise an existing file is rotated.
--- quiet: no progress lines.
function M.new(opts)
  local where = "cq.log"
  check.options(where, opts, OPTIONS)
  local name, columns = opts.name, opts.columns
  if type(name) ~= "string" or name == "" or name:find("/") then
    check.fail(where, "name must be a file name without '/' (the log goes to out/<name>.csv)", name)
  end
  if type(columns) ~= "table" then check.fail(where, "columns must be a list of column names", columns) end
  for i, c in ipairs(columns) do
    if type(c) ~= "string" or c:find("[,\n]") then check.fail(where, "columns[" .. i .. "] must be a string without commas", c) end
  end
  local dir = opts.dir or "out"
  if type(dir) ~= "string" or dir == "" then check.fail(where, "dir must be a directory name", dir) end
  if opts.resume ~= nil and opts.resume ~= false then check.integer(where, "resume", opts.resume, 0) end
  if not fs.mkdir_p(dir) then check.raise(where .. ": cannot create the directory " .. dir) end
  local path = dir .. "/" .. name .. ".csv"
  local self = setmetatable({ name = name, columns = columns, path = path, t0 = clock.now(), tlast = clock.now(),
    quiet = opts.quiet, rows = {} }, Log)
  local kept = {}
  if opts.resume and fs.exists(path) then
    local f = assert(io.open(path, "r"))
    local header = f:read("*l")
    if header ~= table.concat(columns, ",") then
      f:close()
      check.raise(string.format("%s: cannot resume %s: its columns are %s, this log's %s", where, path,
        tostring(header), table.concat(columns, ",")))
    end
    local it_col = 1
    for i, c in ipairs(columns) do if c == "iteration" then it_col = i end end
    for line in f:lines() do
      local fields = split(line)
      local it = tonumber(fields[it_col])
      if it and it <= opts.resume then
        kept[#kept + 1] = line
        -- an iteration's row (a note's has only the iteration and the note): log.first and log.last, as if logged
        local row, filled = {}, false
        for i, c in ipairs(columns) do
          local x = fields[i]
          if x and x ~= "" then
            row[c] = tonumber(x) or x
            if c ~= "iteration" and c ~= "note" then filled = true end
          end
        end
        if filled then
          self.first = self.first or row
          self.last = row
        end
      end
    end
    f:close()
  elseif not opts.resume then
    self.rotated = fs.rotate(path, M.KEEP)
  end
  fs.write_atomic(where, path, table.concat(columns, ",") .. "\n" .. (#kept > 0 and table.concat(kept, "\n") .. "\n" or ""))
  local f, why = io.open(path, "a")
  if not f then check.raise(where .. ": cannot write " .. path .. ": " .. tostring(why)) end
  f:setvbuf("full")
  self.file = f
  return self
end

local function cell(v)
  if v == nil then return "" end
  if type(v) == "number" then return string.format("%.10g", v) end
  return (tostring(v):gsub("[,\n]", ";"))
end

-- Writes one row (a single write, then flush).
function Log:_row(values)
  if not self.file then return end
  local row = {}
  for i, c in ipairs(self.columns) do row[i] = cell(values[c]) end
  self.file:write(table.concat(row, ",") .. "\n")
  self.file:flush()
end

function Log:_has_column(name)
  for _, c in ipairs(self.columns) do if c == name then return true end end
  return false
end

--- Records iteration it of total with a table of named values; prints one progress line.
function Log:iteration(it, total, values)
  check.integer("log:iteration", "it", it, 1)
  check.number("log:iteration", "total", total)
  if type(values) ~= "table" then check.fail("log:iteration", "values must be a table of named values", values) end
  for k, v in pairs(values) do
    local t = type(v)
    if t ~= "number" and t ~= "string" and t ~= "boolean" then
      check.fail("log:iteration", "values." .. tostring(k) .. " must be a number, a string or a boolean (a CSV cell)", v)
    end
    if k ~= "iteration" and k ~= "seconds" and not self:_has_column(k) then
      -- (a value the file has no column for is dropped: said once per name and log)
      self._unlogged = self._unlogged or {}
      if not self._unlogged[k] then
        self._unlogged[k] = true
        require("cq._warn").warn(string.format("cqlua: warning: log:iteration: the value %s is not a column of %s " ..
          "(columns: %s), so it is not written; add it to cq.log's columns", tostring(k), self.path,
          table.concat(self.columns, ", ")))
      end
    end
  end
  local now = clock.now()
  values.iteration, values.seconds = it, now - self.tlast
  self.tlast = now
  self.count = (self.count or 0) + 1
  local eta = (now - self.t0) / self.count * (total - it)
  if not self.quiet then
    local parts = { string.format("%s %4d/%d", self.name, it, total) }
    for _, c in ipairs(self.columns) do
      if c ~= "iteration" and c ~= "seconds" and c ~= "note" and type(values[c]) == "number" then
        parts[#parts + 1] = string.format("%s %.6g", c, values[c])
      end
    end
    parts[#parts + 1] = string.format("%.2f s  ETA %.0f s", values.seconds, eta)
    print(table.concat(parts, "  "))
  end
  self:_row(values)
  self.first = self.first or values
  self.last = values
end

--- A note about iteration it (a recovery, an interruption): printed, and written as a row with only the iteration
--- and the note when the log has a "note" column.
function Log:note(it, text)
  if type(text) ~= "string" then check.fail("log:note", "text must be a string", text) end
  print(string.format("%s: %s", self.name, text))
  io.stdout:flush()
  for _, c in ipairs(self.columns) do
    if c == "note" then self:_row({ iteration = it, note = text }) break end
  end
end

--- Closes the file (also done by the garbage collector).
function Log:close()
  if self.file then self.file:close() self.file = nil end
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
