-- Private: argument checking that raises errors naming the option, the valid range and the value given, at the
-- user's call site: the first stack frame outside this package, however deep inside the package the check ran.
local M = {}

-- The directory of this package's files, as their chunk names spell it ("@/path/lua/cq/").
local PKG = debug.getinfo(1, "S").source:match("^(@.*/)_check%.lua$")

-- True for a frame that runs code of this package (or C code: pcall, the host).
local function inside(info)
  return info.what == "C" or (PKG ~= nil and info.source:sub(1, #PKG) == PKG)
end

--- Raises msg prefixed with the file:line of the first frame outside the cq package (no prefix when there is none,
--- e.g. a callback called from C). Every error of the package goes through here, so library code calling other
--- public functions, or user code tail-calling them, still reports the user's line.
function M.raise(msg)
  local level = 2
  while true do
    local info = debug.getinfo(level, "Sl")
    if not info then error(msg, 0) end
    if not inside(info) then
      if info.currentline and info.currentline > 0 then error(info.short_src .. ":" .. info.currentline .. ": " .. msg, 0) end
      error(msg, 0)
    end
    level = level + 1
  end
end

local function fmt(v)
  if type(v) == "string" then
    -- a description of the value a caller passed instead of it ("a table of 3", "an array of 3"): as it is
    if v:match("^a table of %d+$") or v:match("^an array of %d+$") then return v end
    return string.format("%q", v)
  end
  if type(v) == "table" and not (getmetatable(v) and getmetatable(v).__tostring) then
    return "a table of " .. #v -- its address says nothing
  end
  if type(v) == "number" and v ~= v then return "nan" end -- (not "-nan")
  return tostring(v)
end
M.fmt = fmt

-- A value that messages show as the given text (fmt: unquoted), e.g. M.shown(M.list_text(v)).
local SHOWN = { __tostring = function(s) return s.text end }
function M.shown(text) return setmetatable({ text = text }, SHOWN) end

--- A short list's values for messages: "{0, 2}" (numbers with %.6g, at most 6 entries), else fmt's text.
function M.list_text(v)
  if type(v) ~= "table" or #v > 6 then return fmt(v) end
  local parts = {}
  for i = 1, #v do
    local x = v[i]
    parts[i] = type(x) == "number" and (x ~= x and "nan" or string.format("%.6g", x)) or fmt(x)
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- Raise "<where>: <what> (got <value>)" at the user's call site (level: ignored, kept for old call sites).
function M.fail(where, what, got, level)
  M.raise(string.format("%s: %s (got %s)", where, what, fmt(got)))
end

-- "> 0", ">= 1", "in [0, 1)" ... for messages.
local function range_text(lo, hi, open_lo, open_hi)
  if hi == nil or hi == math.huge or hi == M.INT_MAX then
    return (open_lo and "> " or ">= ") .. tostring(lo) .. (hi == M.INT_MAX and " and <= 2^31 - 1" or "")
  end
  if lo == nil then return (open_hi and "< " or "<= ") .. tostring(hi) end
  return "in " .. (open_lo and "(" or "[") .. tostring(lo) .. ", " .. tostring(hi) .. (open_hi and ")" or "]")
end

-- Numbers must be finite unless opts.inf allows +-inf (e.g. a friction coefficient); lo / hi bound them, closed
-- unless opts.open_lo / opts.open_hi.
function M.number(where, name, v, lo, hi, opts)
  opts = opts or {}
  if type(v) ~= "number" or v ~= v then M.fail(where, name .. " must be a number", v) end
  if not opts.inf and (v == math.huge or v == -math.huge) then M.fail(where, name .. " must be finite", v) end
  local ok = true
  if lo and (opts.open_lo and v <= lo or (not opts.open_lo) and v < lo) then ok = false end
  if hi and (opts.open_hi and v >= hi or (not opts.open_hi) and v > hi) then ok = false end
  if not ok then M.fail(where, name .. " must be " .. range_text(lo, hi, opts.open_lo, opts.open_hi), v) end
  return v
end

-- Integers reach the engine as C ints: at most 2^31 - 1 unless hi says less.
M.INT_MAX = 2147483647
function M.integer(where, name, v, lo, hi)
  hi = hi or M.INT_MAX
  if type(v) ~= "number" or v ~= math.floor(v) or v == math.huge or v == -math.huge then
    M.fail(where, name .. " must be an integer" .. (lo and (" " .. range_text(lo, hi < M.INT_MAX and hi or nil)) or ""), v)
  end
  if lo and v < lo then M.fail(where, name .. " must be " .. range_text(lo, hi < M.INT_MAX and hi or nil), v) end
  if v > hi then M.fail(where, name .. " must be " .. range_text(lo, hi), v) end
  return v
end

function M.vector(where, name, v, n)
  if type(v) ~= "table" or #v ~= n then
    M.fail(where, string.format("%s must be a table of %d numbers", name, n), type(v) == "table" and ("a table of " .. #v) or v, 3)
  end
  for i = 1, n do
    if type(v[i]) ~= "number" or v[i] ~= v[i] or v[i] == math.huge or v[i] == -math.huge then
      M.fail(where, string.format("%s[%d] must be a finite number", name, i), v[i])
    end
  end
  return v
end

--- Checks that v is a list: a table whose keys are exactly 1..#v (ipairs and # see all of it). A hole ([3] = nil
--- with [4] set) or a key that is no index is an error naming it. Returns #v.
function M.list(where, name, v)
  if type(v) ~= "table" then M.fail(where, name .. " must be a list", v) end
  local n, count, last = #v, 0, 0
  for k in pairs(v) do
    count = count + 1
    if type(k) ~= "number" or k ~= math.floor(k) or k < 1 then
      M.fail(where, string.format("%s must be a list (keys 1..n), but has the key %s", name,
        type(k) == "string" and "'" .. k .. "'" or fmt(k)), M.shown("a table of " .. n))
    end
    if k > last then last = k end
  end
  if count ~= n or last ~= n then -- a hole: the first index below the largest that holds nil
    local i = 1
    while v[i] ~= nil do i = i + 1 end
    M.fail(where, string.format("%s must be a list without holes: %s[%d] is nil, yet %s[%d] is set", name, name, i,
      name, last), M.shown("a table of " .. count .. " entries"))
  end
  return n
end

--- Refuses a key of t other than 1..n: a pair written {lo = 5, hi = 6} instead of {5, 6} would read as empty. what:
--- its name in messages; form: how it is written ("{lo, hi} (numbers or per-entry tables)").
function M.indices_only(where, what, t, n, form)
  local bad, keys = {}, {}
  for k, v in pairs(t) do
    local name = type(k) == "string" and k or "[" .. fmt(k) .. "]"
    keys[#keys + 1] = name .. " = " .. (type(v) == "table" and M.list_text(v) or fmt(v))
    if type(k) ~= "number" or k ~= math.floor(k) or k < 1 or k > n then
      bad[#bad + 1] = type(k) == "string" and "'" .. k .. "'" or fmt(k)
    end
  end
  if #bad > 0 then
    table.sort(bad)
    table.sort(keys)
    M.fail(where, string.format("%s must be %s, without other keys; it has the key%s %s", what, form,
      #bad > 1 and "s" or "", table.concat(bad, ", ")), M.shown("{" .. table.concat(keys, ", ") .. "}"))
  end
  return t
end

function M.oneof(where, name, v, set)
  local names = {}
  for i, s in ipairs(set) do
    if v == s then return v end
    names[i] = tostring(s) -- (a set may hold booleans: resume = "auto", true, false)
  end
  M.fail(where, name .. " must be one of " .. table.concat(names, ", "), v, 3)
end

-- An FFI double array handed to the engine (nil passes): a double[?] / double[N] of at least len values, or a
-- double pointer (whose length cannot be known: the caller vouches for it). level: as in M.fail (default 2, a
-- check made directly inside the public function). Cheap enough for a per-step call.
local ffi = require "ffi"
local DVLA = ffi.typeof("double[?]")
function M.doubles(where, name, a, len, level)
  if a == nil then return nil end
  level = (level or 2) + 1
  local what = string.format("%s must be an FFI array of %d doubles (ffi.new(\"double[?]\", %d))", name, len, len)
  if type(a) ~= "cdata" then M.fail(where, what, a, level) end
  if ffi.istype("double*", a) then return a end
  local count
  if ffi.istype(DVLA, a) then
    count = ffi.sizeof(a) / 8
  else
    count = tonumber(tostring(ffi.typeof(a)):match("^ctype<double %(?&?%)?%[(%d+)%]>$"))
    if not count then M.fail(where, what, tostring(ffi.typeof(a)), level) end
  end
  if count < len then M.fail(where, what, string.format("an array of %d", count), level) end
  return a
end

--- The least value a constraint function can return, by function (weak keys): { least, what it is }. Filled by the
--- makers of such functions (cq.pulses' binarization); cq.augmented_lagrangian refuses a limit below it.
M.lower_bounds = setmetatable({}, { __mode = "k" })

--- The option names each public function accepts, by its name ("cq.world", "robot:box", ...): declared once per
--- module (M.option_set) and read by check.options and by the test that keeps docs/api.md in step with the code.
M.option_sets = {}
function M.option_set(where, names)
  local set = {}
  for _, n in ipairs(names) do set[n] = true end
  M.option_sets[where] = set
  return set
end

--- ffi.new(ctype, count) for an array whose size an option sets, or an error naming that option (instead of
--- LuaJIT's raw "not enough memory").
function M.alloc(where, option, ctype, count)
  local ok, arr = pcall(ffi.new, ctype, count)
  if not ok then
    M.fail(where, string.format("%s asks for %.3g array entries, more than can be allocated (%s)", option, count,
      tostring(arr)), count)
  end
  return arr
end

-- Unknown option names are errors, so a typo never passes silently.
function M.options(where, opts, known)
  if type(opts) ~= "table" then M.fail(where, "expects an options table", opts, 3) end
  for k in pairs(opts) do
    if not known[k] then
      local names = {}
      for n in pairs(known) do names[#names + 1] = n end
      table.sort(names)
      M.fail(where, "unknown option " .. (type(k) == "string" and "'" .. k .. "'" or fmt(k)) .. " (known: " ..
        table.concat(names, ", ") .. ")", k, 3)
    end
  end
  return opts
end

return M
