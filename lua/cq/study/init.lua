-- Parameter studies (issue 13): a study file declares a parameter space, what one run does and the metrics it
-- returns; `cqlua study run | slurm | collect STUDY.lua` run its rows in local worker processes or as one SLURM job
-- array, each in its own directory with a manifest, and gather the manifests into a CSV, plots and tables.
--
-- A study file returns cq.study.define{...} (or the plain table). This module holds the declaration side: the spaces
-- (grid, list, lhs, random and their product / concatenation), loading and checking a study file, and each row's
-- hash and directory. The runner is cq.study.run, SLURM submission cq.study.slurm, collection cq.study.collect.
local check = require "cq._check"
local ffi = require "ffi"

local M = {}
local STUDY_OPTIONS = check.option_set("cq.study.define", { "name", "space", "run", "script", "args", "depends",
  "metrics", "best", "goal", "by", "threads", "time_limit", "dir" })

-- The shortest decimal text of a number that reads back as the same number (script arguments must carry a row's
-- value exactly: tostring keeps only 14 digits).
M.number_text = require("cq.json").number_text

-- A canonical text of a value (sorted keys, exact numbers), for hashing.
local function canonical(v)
  local t = type(v)
  if t == "number" then
    return M.number_text(v)
  elseif t == "string" then return string.format("%q", v)
  elseif t == "boolean" or t == "nil" then return tostring(v)
  elseif t == "table" then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. "=" .. canonical(v[k]) end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return "<" .. t .. ">"
end
M.canonical = canonical

-- ---- spaces --------------------------------------------------------------------------------------------------------
-- A space is { names = ordered parameter names, rows = list of {name = value} }. Values are numbers, strings or
-- booleans, so that a row is written exactly in its manifest and its hash does not depend on the machine.

local Space = {}
Space.__index = Space
M.Space = Space

local function new_space(where, names, rows)
  for i, row in ipairs(rows) do
    for k, v in pairs(row) do
      local t = type(v)
      if type(k) ~= "string" or not k:match("^[%a_][%w_]*$") then
        check.fail(where, "parameter names must be identifiers (letters, digits, _)", k)
      end
      if t ~= "number" and t ~= "string" and t ~= "boolean" then
        check.fail(where, string.format("row %d: parameter %s must be a number, string or boolean", i, k), v)
      end
      if t == "number" and (v ~= v or v == math.huge or v == -math.huge) then
        check.fail(where, string.format("row %d: parameter %s must be finite", i, k), v)
      end
    end
  end
  return setmetatable({ names = names, rows = rows }, Space)
end

-- The (name, values) pairs of a grid or ranges table: { name = values } (names sorted) or { {name, values}, ... }
-- (in the given order).
local function pairs_of(where, spec, what)
  if type(spec) ~= "table" then check.fail(where, "expects a table of " .. what, spec) end
  local list = {}
  if #spec > 0 then
    for i, p in ipairs(spec) do
      if type(p) ~= "table" or type(p[1]) ~= "string" then
        check.fail(where, string.format("entry %d must be {name, %s}", i, what), p)
      end
      list[i] = { p[1], p[2] }
    end
  else
    for k, v in pairs(spec) do list[#list + 1] = { k, v } end
    table.sort(list, function(a, b) return a[1] < b[1] end)
  end
  if #list == 0 then check.fail(where, "needs at least one parameter", spec) end
  return list
end

-- Every row of the first list with every row of the second, ... (the last varying fastest).
local function cross(lists)
  local rows = { {} }
  for _, list in ipairs(lists) do
    local grown = {}
    for _, a in ipairs(rows) do
      for _, b in ipairs(list) do
        local r = {}
        for k, v in pairs(a) do r[k] = v end
        for k, v in pairs(b) do r[k] = v end
        grown[#grown + 1] = r
      end
    end
    rows = grown
  end
  return rows
end

--- cq.study.grid{ name = {values...}, ... } or grid{ {name, {values...}}, ... }: every combination (the full
--- factorial), the last parameter varying fastest; named keys are taken in alphabetical order.
function M.grid(spec)
  local where = "cq.study.grid"
  local names, lists = {}, {}
  for _, axis in ipairs(pairs_of(where, spec, "value lists")) do
    local name, values = axis[1], axis[2]
    if type(values) ~= "table" or #values == 0 then
      check.fail(where, name .. " must be a non-empty list of values", values)
    end
    names[#names + 1] = name
    local list = {}
    for k, v in ipairs(values) do list[k] = { [name] = v } end
    lists[#lists + 1] = list
  end
  return new_space(where, names, cross(lists))
end

--- cq.study.list{ {a = 1, b = "x"}, {a = 2, b = "y"}, ... }: explicit rows (parameter order: first seen).
function M.list(rows)
  local where = "cq.study.list"
  if type(rows) ~= "table" or #rows == 0 then check.fail(where, "expects a non-empty list of rows", rows) end
  local names, seen, copy = {}, {}, {}
  for i, row in ipairs(rows) do
    if type(row) ~= "table" then check.fail(where, string.format("row %d must be a table of parameters", i), row) end
    local keys = {}
    for k in pairs(row) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    for _, k in ipairs(keys) do
      if not seen[k] then seen[k] = true; names[#names + 1] = k end
    end
    copy[i] = {}
    for k, v in pairs(row) do copy[i][k] = v end
  end
  return new_space(where, names, copy)
end

-- splitmix64: a seeded generator whose numbers are the same on every machine (the rows of a study must be).
local function generator(seed)
  local s = ffi.new("uint64_t[1]", seed)
  return function()
    s[0] = s[0] + 0x9E3779B97F4A7C15ULL
    local z = s[0]
    z = bit.bxor(z, bit.rshift(z, 30)) * 0xBF58476D1CE4E5B9ULL
    z = bit.bxor(z, bit.rshift(z, 27)) * 0x94D049BB133111EBULL
    z = bit.bxor(z, bit.rshift(z, 31))
    return tonumber(bit.rshift(z, 11)) / 2 ^ 53 -- in [0, 1)
  end
end
M._generator = generator

-- The (name, {lo, hi} | {choices}) entries of a sampled space, checked.
local function ranges_of(where, opts)
  local list = {}
  if opts.log ~= nil and type(opts.log) ~= "table" then
    check.fail(where, "log must be a table { name = true } over ranges", opts.log)
  end
  for _, p in ipairs(opts.ranges and pairs_of(where, opts.ranges, "{lo, hi} ranges") or {}) do
    local r = p[2]
    if type(r) ~= "table" or type(r[1]) ~= "number" or type(r[2]) ~= "number" or not (r[1] < r[2]) then
      check.fail(where, "ranges." .. p[1] .. " must be {lo, hi} with lo < hi", r)
    end
    list[#list + 1] = { name = p[1], lo = r[1], hi = r[2], log = opts.log and opts.log[p[1]] or false }
    if list[#list].log and r[1] <= 0 then check.fail(where, "log-spaced ranges." .. p[1] .. " must be positive", r[1]) end
  end
  for _, p in ipairs(opts.choices and pairs_of(where, opts.choices, "choice lists") or {}) do
    if type(p[2]) ~= "table" or #p[2] == 0 then check.fail(where, "choices." .. p[1] .. " must be a non-empty list", p[2]) end
    list[#list + 1] = { name = p[1], choices = p[2] }
  end
  if #list == 0 then check.fail(where, "needs ranges = {name = {lo, hi}} (or choices for random)", nil) end
  if opts.log ~= nil then
    local names = {}
    for _, p in ipairs(list) do if not p.choices then names[#names + 1] = p.name end end
    for k in pairs(opts.log) do
      local known = false
      for _, n in ipairs(names) do known = known or n == k end
      if not known then
        check.fail(where, "log." .. tostring(k) .. " names no parameter of ranges (" .. table.concat(names, ", ") .. ")", k)
      end
    end
  end
  return list
end

local function value_at(p, u) -- u in [0, 1)
  if p.choices then return p.choices[math.floor(u * #p.choices) + 1] end
  if p.log then return math.exp(math.log(p.lo) + u * (math.log(p.hi) - math.log(p.lo))) end
  return p.lo + u * (p.hi - p.lo)
end

local function sampled(where, opts, lhs)
  if type(opts) ~= "table" then check.fail(where, "expects a table {n, seed, ranges, ...}", opts) end
  local n = check.integer(where, "n", opts.n, 1, 1e6)
  local seed = check.integer(where, "seed", opts.seed or 1, 0)
  local params = ranges_of(where, opts)
  local rand, rows, names = generator(seed), {}, {}
  for i = 1, n do rows[i] = {} end
  for _, p in ipairs(params) do
    names[#names + 1] = p.name
    if lhs then
      -- one sample in each of n equal strata, the strata shuffled per parameter (Fisher-Yates)
      local perm = {}
      for i = 1, n do perm[i] = i - 1 end
      for i = n, 2, -1 do
        local j = math.floor(rand() * i) + 1
        perm[i], perm[j] = perm[j], perm[i]
      end
      for i = 1, n do rows[i][p.name] = value_at(p, (perm[i] + rand()) / n) end
    else
      for i = 1, n do rows[i][p.name] = value_at(p, rand()) end
    end
  end
  return new_space(where, names, rows)
end

--- cq.study.lhs{ n, seed = 1, ranges = { name = {lo, hi} }, log = { name = true } }: a Latin hypercube of n rows
--- (each range cut into n strata, one sample per stratum, strata paired at random); log-spaced where log says so.
function M.lhs(opts) return sampled("cq.study.lhs", opts, true) end

--- cq.study.random{ n, seed = 1, ranges = { name = {lo, hi} }, choices = { name = {values} }, log }: n independent
--- uniform samples (log-uniform where log says so; a uniform pick among choices).
function M.random(opts) return sampled("cq.study.random", opts, false) end

local function check_spaces(where, spaces)
  if #spaces == 0 then check.fail(where, "expects one or more spaces", nil) end
  for i, s in ipairs(spaces) do
    if getmetatable(s) ~= Space then check.fail(where, string.format("argument %d must be a cq.study space", i), s) end
  end
end

--- cq.study.product(a, b, ...): every row of a combined with every row of b (b varying fastest); the spaces must
--- not share parameter names.
function M.product(...)
  local where, spaces = "cq.study.product", { ... }
  check_spaces(where, spaces)
  local names, lists, seen = {}, {}, {}
  for _, s in ipairs(spaces) do
    for _, n in ipairs(s.names) do
      if seen[n] then check.fail(where, "two spaces both set parameter " .. n, n) end
      seen[n] = true
      names[#names + 1] = n
    end
    lists[#lists + 1] = s.rows
  end
  return new_space(where, names, cross(lists))
end

--- cq.study.concat(a, b, ...): the rows of a, then those of b, ...
function M.concat(...)
  local where, spaces = "cq.study.concat", { ... }
  check_spaces(where, spaces)
  local names, rows, seen = {}, {}, {}
  for _, s in ipairs(spaces) do
    for _, n in ipairs(s.names) do if not seen[n] then seen[n] = true; names[#names + 1] = n end end
    for _, r in ipairs(s.rows) do rows[#rows + 1] = r end
  end
  return new_space(where, names, rows)
end

-- ---- the study -----------------------------------------------------------------------------------------------------

local Study = {}
Study.__index = Study
M.Study = Study

--- cq.study.define{ name, space, run | script (+ args, depends), metrics, best, goal = "min", threads, time_limit,
--- dir } -> study.
---   name: letters, digits, _ and -; space: a cq.study space; run = function(row) -> {metric = number} (runs in the
---   row's directory), or script = a Lua file (relative to the study file) run with arg = args(row) (a function
---   returning a list of strings, or a list whose "{name}" parts are replaced by the row's values) and whose returned
---   table holds the metrics; depends: further files whose text is part of each row's hash (modules the script
---   loads); metrics: the names of the numbers a run returns; best: the metric that ranks rows (the first metric by
---   default), goal "min" or "max"; threads: CPU threads per run (default: the cores / the jobs); time_limit: seconds
---   per run (a run past it is stopped and recorded as "timeout"); dir: where the rows go (default out/studies/<name>,
---   relative to where cqlua study runs); by: parameters whose equal values make a group in `cqlua study collect`'s
---   summary (e.g. every parameter but the seed).
function M.define(opts)
  local where = "cq.study.define"
  if type(opts) ~= "table" then check.fail(where, "expects a table of options", opts) end
  check.options(where, opts, STUDY_OPTIONS)
  if type(opts.name) ~= "string" or not opts.name:match("^[%w_%-]+$") then
    check.fail(where, "name must be a non-empty string of letters, digits, _ and -", opts.name)
  end
  if getmetatable(opts.space) ~= Space then
    check.fail(where, "space must be a cq.study space (cq.study.grid, list, lhs, random, product, concat)", opts.space)
  end
  if (opts.run == nil) == (opts.script == nil) then
    check.fail(where, "give exactly one of run (a function of the row) or script (a Lua file)", opts.run or opts.script)
  end
  if opts.run ~= nil and type(opts.run) ~= "function" then check.fail(where, "run must be a function(row)", opts.run) end
  if opts.script ~= nil and (type(opts.script) ~= "string" or opts.script == "") then
    check.fail(where, "script must be the path of a Lua file", opts.script)
  end
  if opts.args ~= nil and opts.script == nil then check.fail(where, "args needs script", opts.args) end
  if opts.args ~= nil and type(opts.args) ~= "function" and type(opts.args) ~= "table" then
    check.fail(where, "args must be a function(row) returning a list of strings, or a list of templates", opts.args)
  end
  local metrics = opts.metrics
  if type(metrics) ~= "table" or #metrics == 0 then
    check.fail(where, "metrics must be a non-empty list of metric names", metrics)
  end
  for i, m in ipairs(metrics) do
    if type(m) ~= "string" or not m:match("^[%a_][%w_]*$") then
      check.fail(where, string.format("metrics[%d] must be an identifier", i), m)
    end
  end
  local best = opts.best or metrics[1]
  local known = false
  for _, m in ipairs(metrics) do known = known or m == best end
  if not known then check.fail(where, "best must be one of the metrics (" .. table.concat(metrics, ", ") .. ")", best) end
  local goal = check.oneof(where, "goal", opts.goal or "min", { "min", "max" })
  if opts.threads ~= nil then check.integer(where, "threads", opts.threads, 1, 4096) end
  if opts.time_limit ~= nil then check.number(where, "time_limit", opts.time_limit, 0, nil, { open_lo = true }) end
  if opts.dir ~= nil and (type(opts.dir) ~= "string" or opts.dir == "") then check.fail(where, "dir must be a path", opts.dir) end
  if opts.by ~= nil and type(opts.by) ~= "table" then check.fail(where, "by must be a list of parameter names", opts.by) end
  for i, n in ipairs(opts.by or {}) do
    local known = false
    for _, p in ipairs(opts.space.names) do known = known or p == n end
    if not known then
      check.fail(where, "by[" .. i .. "] must be a parameter of the space (" .. table.concat(opts.space.names, ", ") .. ")", n)
    end
  end
  if opts.depends ~= nil and type(opts.depends) ~= "table" then check.fail(where, "depends must be a list of files", opts.depends) end
  for i, d in ipairs(opts.depends or {}) do
    if type(d) ~= "string" or d == "" then check.fail(where, "depends[" .. i .. "] must be a file path", d) end
  end
  local seen_rows = {}
  for i, row in ipairs(opts.space.rows) do -- one run per configuration: its hash and directory are the row's
    local key = M.canonical(row)
    if seen_rows[key] then
      check.fail(where, string.format("rows %d and %d are the same configuration; a study runs each once (add a " ..
        "parameter such as a seed or replicate number to repeat it)", seen_rows[key], i), key)
    end
    seen_rows[key] = i
  end
  local names = {}
  for _, n in ipairs(opts.space.names) do
    for _, m in ipairs(metrics) do
      if n == m then check.fail(where, "a parameter and a metric share the name " .. n, n) end
    end
    names[#names + 1] = n
  end
  return setmetatable({ name = opts.name, space = opts.space, rows = opts.space.rows, params = names, run = opts.run,
    script = opts.script, args = opts.args, depends = opts.depends or {}, metrics = metrics, best = best, goal = goal,
    by = opts.by, threads = opts.threads, time_limit = opts.time_limit, dir = opts.dir }, Study)
end

-- ---- loading a study file and naming its rows ----------------------------------------------------------------------

local function read_all(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("*a")
  f:close()
  return s
end

local function absolute(path)
  if path:sub(1, 1) == "/" then return path end
  local pwd = os.getenv("PWD")
  local p = io.popen("pwd")
  local cwd = p and p:read("*l") or pwd or "."
  if p then p:close() end
  return (cwd .. "/" .. path):gsub("/%./", "/")
end
M.absolute = absolute

--- Loads the study file at path (its chunk returns cq.study.define{...} or the plain table) -> study, with file
--- (absolute), base (the file's directory) and dir (absolute) set; dir_override replaces the study's dir.
function M.load(path, dir_override)
  if type(path) ~= "string" or path == "" then check.raise("cqlua study: give the study file, e.g. cqlua study run my_study.lua") end
  local chunk, err = loadfile(path)
  if not chunk then check.raise("cqlua study: cannot load " .. path .. ": " .. tostring(err)) end
  local ok, value = pcall(chunk)
  if not ok then -- `return study.define{...}` is a tail call: its errors carry no line of the study file
    check.raise("cqlua study: " .. path .. ": " .. tostring(value):gsub("^cqlua study:%d+: ", ""))
  end
  if type(value) == "table" and getmetatable(value) ~= Study then
    local good, study = pcall(M.define, value)
    if not good then check.raise("cqlua study: " .. path .. ": " .. tostring(study):gsub("^cqlua study:%d+: ", "")) end
    value = study
  end
  if getmetatable(value) ~= Study then
    check.raise("cqlua study: " .. path .. " must return cq.study.define{...} (a study), got " .. type(value))
  end
  value.file = absolute(path)
  value.base = value.file:match("^(.*)/[^/]*$") or "."
  value.dir = absolute(dir_override or value.dir or ("out/studies/" .. value.name))
  return value
end

-- FNV-1a, 64 bits: the hash of a row only has to tell versions of one study apart (not resist an adversary).
local function fnv1a(text)
  local h = ffi.new("uint64_t", 0xcbf29ce484222325ULL)
  for i = 1, #text do
    h = bit.bxor(h, text:byte(i)) * 0x100000001b3ULL
  end
  return bit.tohex(h, 16)
end
M.hash_text = fnv1a


-- The source text of a Lua function: its lines in its file (or its string chunk); source_lines caches files' lines.
local function source_of(fn, source_lines)
  local info = debug.getinfo(fn, "S")
  if info.what ~= "Lua" then return nil end
  local lines
  if info.source:sub(1, 1) == "@" then
    local file = info.source:sub(2)
    lines = source_lines[file]
    if not lines then
      lines = {}
      local text = read_all(file) or ""
      for line in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
      source_lines[file] = lines
    end
  else
    lines = {}
    for line in (info.source .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  end
  return table.concat(lines, "\n", math.max(1, info.linedefined), math.min(#lines, info.lastlinedefined))
end

--- The text a run function's hash covers: its source and, through its upvalues, the source of the Lua functions it
--- calls and the values of its number, string and boolean upvalues (not tables). Source, not string.dump: the
--- bytecode's constant tables come out in an order that changes from process to process.
function M.function_text(fn)
  local out, seen, files = {}, {}, {}
  local function add(f)
    if seen[f] then return end
    seen[f] = true
    out[#out + 1] = source_of(f, files) or "<C function>"
    local k = 1
    while true do
      local name, v = debug.getupvalue(f, k)
      if not name then break end
      local t = type(v)
      if t == "function" then add(v)
      elseif t == "number" or t == "string" or t == "boolean" then out[#out + 1] = name .. "=" .. canonical(v) end
      k = k + 1
    end
  end
  add(fn)
  return table.concat(out, "\n")
end

--- The script's arguments for row i (a list of strings).
function Study:script_args(i)
  local row = self.rows[i]
  if self.args == nil then return {} end
  local list
  if type(self.args) == "function" then
    local ok, r = pcall(self.args, row)
    if not ok then check.raise("cqlua study: " .. self.name .. ": args(row " .. i .. ") failed: " .. tostring(r)) end
    list = r
  else
    list = {}
    for k, a in ipairs(self.args) do
      list[k] = tostring(a):gsub("{([%a_][%w_]*)}", function(n)
        if row[n] == nil then check.raise("cqlua study: " .. self.name .. ": args[" .. k .. "] names {" .. n .. "}, not a parameter") end
        return type(row[n]) == "number" and M.number_text(row[n]) or tostring(row[n])
      end)
    end
  end
  if type(list) ~= "table" then check.raise("cqlua study: " .. self.name .. ": args must return a list of strings") end
  for k, a in ipairs(list) do list[k] = type(a) == "number" and M.number_text(a) or tostring(a) end
  return list
end

--- The path of a file named relative to the study file.
function Study:resolve(path) return path:sub(1, 1) == "/" and path or (self.base .. "/" .. path) end

--- The hash of row i: its parameters and what its run does (the script's text and arguments and the depends files'
--- text, or the run function's source with what it reaches through upvalues: M.function_text) and the metric names. A changed row gets a new directory; old results stay
--- where they are and are never collected with the new ones.
function Study:row_hash(i)
  self._hashes = self._hashes or {}
  if self._hashes[i] then return self._hashes[i] end
  local parts = { "params=" .. canonical(self.rows[i]), "metrics=" .. canonical(self.metrics) }
  if self.script then
    local path = self:resolve(self.script)
    local text, err = read_all(path)
    if not text then check.raise("cqlua study: " .. self.name .. ": cannot read script " .. path .. " (" .. tostring(err) .. ")") end
    parts[#parts + 1] = "script=" .. fnv1a(text)
    parts[#parts + 1] = "args=" .. canonical(self:script_args(i))
  else
    self._run_text = self._run_text or M.function_text(self.run)
    parts[#parts + 1] = "run=" .. fnv1a(self._run_text)
  end
  for _, d in ipairs(self.depends) do
    local text, err = read_all(self:resolve(d))
    if not text then check.raise("cqlua study: " .. self.name .. ": cannot read depends file " .. d .. " (" .. tostring(err) .. ")") end
    parts[#parts + 1] = "depends=" .. fnv1a(text)
  end
  self._hashes[i] = fnv1a(table.concat(parts, "\n"))
  return self._hashes[i]
end

--- Row i's directory: <dir>/rows/<its hash>. Named by the hash, not the row number, so that growing a study (more
--- seeds, a finer grid) reuses every result whose row is unchanged.
function Study:row_dir(i)
  return string.format("%s/rows/%s", self.dir, self:row_hash(i))
end

--- "a=1, b=x" for messages.
function Study:row_text(i)
  local parts = {}
  for _, n in ipairs(self.params) do parts[#parts + 1] = n .. "=" .. tostring(self.rows[i][n]) end
  return table.concat(parts, ", ")
end

--- The manifest of row i, or nil when it has none (a run not started, or of another version of the row); nil and a
--- message naming the file when it cannot be read as one (cut short, not JSON, not a manifest).
function Study:manifest(i)
  local path = self:row_dir(i) .. "/manifest.json"
  local text = read_all(path)
  if not text then return nil end
  local ok, m = pcall(require("cq.json").decode, text, path)
  if not ok then return nil, (tostring(m):gsub("^.-cq%.json%.decode: ", "")) end
  if type(m) ~= "table" then return nil, path .. " is not a manifest (a JSON " .. type(m) .. ", not an object)" end
  if m.hash ~= self:row_hash(i) then return nil end
  return m
end

return M
