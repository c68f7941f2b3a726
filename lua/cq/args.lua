-- cq.args: a script's command-line arguments as key=value pairs, checked against the script's own list of them.
--
--   local a = cq.args(arg, {
--     about = "Trains the 2D walker of DiffTaichi's diffmpm.py (seed 001).",
--     { "iters", 100, "training iterations" },
--     { "precision", "f32", "f32 or f64", oneof = { "f32", "f64" } },
--     { "threads", 0, "OpenMP threads (0: every idle core)" },
--     { "dt", nil, "substep (s); nil: the scene's", type = "number" },
--   })
--   -- a.iters, a.precision, a.threads, a.dt
--
-- `cqlua script.lua iters=300 precision=f64` sets two; `--help` (or `-h`) prints the usage (every key, its default
-- and its meaning) and exits. An unknown key, a value of the wrong type or outside `oneof`, and a key given twice
-- are errors that name the key, what it takes and what it got. Values may also be given by position, in the
-- list's order (`cqlua script.lua 300 f64`), as the examples took them before; positions come first, then keys. An
-- empty value (`dt=` or an empty positional "") leaves the default.
local M = {}

-- A usage error: an object that describes itself, so the host prints its one line without a traceback (a typo on the
-- command line is not a bug in the script); it still reads as its message for string methods, .. and tostring.
local USAGE = {}
USAGE.__tostring = function(e) return e.msg end
USAGE.__concat = function(a, b) return tostring(a) .. tostring(b) end
USAGE.__index = function(e, k)
  local f = string[k]
  if f then return function(self, ...) return f(self.msg, ...) end end
end
local function usage_error(msg) error(setmetatable({ msg = msg .. " (--help lists the keys)" }, USAGE), 0) end

local function typeof(spec)
  if spec.type then return spec.type end
  local d = spec[2]
  if d == nil then return "string" end
  return type(d)
end

local function script_name()
  local a0 = rawget(_G, "arg") and _G.arg[0]
  return a0 or "script.lua"
end

--- The usage text of a spec list (what --help prints).
function M.usage(spec, name)
  local lines = { string.format("usage: cqlua %s [key=value ...]", name or spec.name or script_name()) }
  if spec.about then lines[#lines + 1] = spec.about end
  local width = 0
  for _, s in ipairs(spec) do width = math.max(width, #s[1]) end
  lines[#lines + 1] = "keys (default in brackets):"
  for _, s in ipairs(spec) do
    local d = s[2]
    local shown = d == nil and "none" or tostring(d)
    if d == math.huge then shown = "inf" end
    local doc = s[3] or ""
    if s.oneof then doc = doc .. (doc ~= "" and "; " or "") .. "one of " .. table.concat(s.oneof, ", ") end
    lines[#lines + 1] = string.format("  %-" .. width .. "s  [%s]  %s", s[1], shown, doc)
  end
  if spec.example then lines[#lines + 1] = "example: " .. spec.example end
  return table.concat(lines, "\n")
end

local function convert(s, raw, where)
  local t = typeof(s)
  if t == "number" then
    local v = tonumber(raw)
    if raw == "inf" then v = math.huge end
    if v == nil or v ~= v then
      usage_error(string.format("%s: %s must be a number, got %q", where, s[1], raw))
    end
    if s.min and v < s.min then
      usage_error(string.format("%s: %s must be >= %s, got %s", where, s[1], tostring(s.min), raw))
    end
    if s.max and v > s.max then
      usage_error(string.format("%s: %s must be <= %s, got %s", where, s[1], tostring(s.max), raw))
    end
    if s.integer and v % 1 ~= 0 then
      usage_error(string.format("%s: %s must be a whole number, got %s", where, s[1], raw))
    end
    return v
  elseif t == "boolean" then
    local map = { ["true"] = true, ["1"] = true, yes = true, on = true,
                  ["false"] = false, ["0"] = false, no = false, off = false }
    if map[raw] == nil then
      usage_error(string.format("%s: %s must be true or false, got %q", where, s[1], raw))
    end
    return map[raw]
  end
  if s.oneof then
    local ok = false
    for _, o in ipairs(s.oneof) do if o == raw then ok = true end end
    if not ok then
      usage_error(string.format("%s: %s must be one of %s, got %q", where, s[1], table.concat(s.oneof, ", "), raw))
    end
  end
  return raw
end

local TYPES = { number = true, string = true, boolean = true }

--- Checks spec entry i (the script's own list: an error at the script's line, not a usage error); seen: the keys of
--- the entries before it.
function M.check_entry(i, s, seen)
  local check = require "cq._check"
  local where = "cq.args"
  if type(s) ~= "table" then check.fail(where, "spec[" .. i .. "] must be {key, default, meaning}", s) end
  if type(s[1]) ~= "string" or not s[1]:match("^[%a_][%w_]*$") then
    check.fail(where, "spec[" .. i .. "][1] (the key) must be an identifier", s[1])
  end
  local name = string.format("spec[%d] (%s)", i, s[1])
  for j = 1, i - 1 do
    if seen[j] == s[1] then check.fail(where, "spec[" .. i .. "]: key " .. s[1] .. " is listed twice", s[1]) end
  end
  seen[i] = s[1]
  if s.type ~= nil and not TYPES[s.type] then
    check.fail(where, name .. ": type must be one of number, string, boolean", s.type)
  end
  local t, d = typeof(s), s[2]
  if d ~= nil and type(d) ~= t then check.fail(where, name .. ": the default must be a " .. t, d) end
  for _, k in ipairs { "min", "max" } do
    if s[k] ~= nil and (t ~= "number" or type(s[k]) ~= "number") then
      check.fail(where, name .. ": " .. k .. " must be a number, for a number key", s[k])
    end
  end
  if s.oneof ~= nil and (t ~= "string" or type(s.oneof) ~= "table" or #s.oneof == 0) then
    check.fail(where, name .. ": oneof must be a non-empty list of strings, for a string key", s.oneof)
  end
  if d == nil then return end
  if s.min and d < s.min then check.fail(where, name .. ": the default must be >= " .. tostring(s.min), d) end
  if s.max and d > s.max then check.fail(where, name .. ": the default must be <= " .. tostring(s.max), d) end
  if s.integer and t == "number" and d % 1 ~= 0 and d ~= math.huge then
    check.fail(where, name .. ": the default must be a whole number (integer = true)", d)
  end
  if s.oneof then
    local ok = false
    for _, o in ipairs(s.oneof) do ok = ok or o == d end
    if not ok then check.fail(where, name .. ": the default must be one of " .. table.concat(s.oneof, ", "), d) end
  end
end

--- Parses argv (the host's `arg` table, or nil) against spec (see above). Returns a table key -> value, with every
--- key of the spec present (nil where its default is nil and it was not given). Prints the usage and exits on
--- --help / -h (opts.exit = false: returns nil and the usage text instead, for tests).
function M.parse(argv, spec, opts)
  opts = opts or {}
  local check = require "cq._check"
  if type(spec) ~= "table" then check.fail("cq.args", "spec must be a list of {key, default, meaning} entries", spec) end
  if argv ~= nil and type(argv) ~= "table" then check.fail("cq.args", "argv must be nil or a list of strings (arg)", argv) end
  local where = spec.name or script_name()
  local by_key, out, given = {}, {}, {}
  local seen = {}
  for i, s in ipairs(spec) do M.check_entry(i, s, seen) end
  for _, s in ipairs(spec) do
    by_key[s[1]] = s
    out[s[1]] = s[2]
  end
  argv = argv or {}
  local n = #argv
  local pos, seen_key = 0, false
  for i = 1, n do
    local a = argv[i]
    if a == "--help" or a == "-h" then
      local text = M.usage(spec, where)
      if opts.exit == false then return nil, text end
      print(text)
      os.exit(0)
    end
    local k, v = tostring(a):match("^([%a_][%w_]*)=(.*)$")
    if k then
      seen_key = true
      local s = by_key[k]
      if not s then
        local keys = {}
        for _, e in ipairs(spec) do keys[#keys + 1] = e[1] end
        usage_error(string.format("%s: unknown key %q (keys: %s)", where, k,
          table.concat(keys, ", ")))
      end
      if given[k] then usage_error(string.format("%s: key %s given twice", where, k)) end
      given[k] = true
      if v ~= "" then out[k] = convert(s, v, where) end
    else
      if seen_key then
        usage_error(string.format("%s: argument %d (%q) has no key=: positional values must come before key=value ones",
          where, i, tostring(a)))
      end
      pos = pos + 1
      local s = spec[pos]
      if not s then
        usage_error(string.format("%s: %d positional values given, the script takes at most %d",
          where, pos, #spec))
      end
      given[s[1]] = true
      if a ~= "" then out[s[1]] = convert(s, tostring(a), where) end
    end
  end
  -- what the script was started with, its defaults filled in: cq.train's and cq.augmented_lagrangian's checkpoints
  -- record it (lua/cq/_fingerprint.lua), so a run resumes whichever way its arguments were spelled
  local values = {}
  for k, v in pairs(out) do values[k] = v end
  M.parsed = { name = spec.name or script_name(), spec = spec, values = values }
  return out
end

return setmetatable(M, { __call = function(_, argv, spec, opts) return M.parse(argv, spec, opts) end })
