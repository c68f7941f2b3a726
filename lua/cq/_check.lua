-- Private: argument checking that raises errors naming the option, the valid range and the value given.
local M = {}

local function fmt(v)
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v)
end
M.fmt = fmt

-- Raise "<where>: <what> (got <value>)" at the caller of the public function.
function M.fail(where, what, got, level)
  error(string.format("%s: %s (got %s)", where, what, fmt(got)), (level or 2) + 1)
end

-- "> 0", ">= 1", "in [0, 1)" ... for messages.
local function range_text(lo, hi, open_lo, open_hi)
  if hi == nil or hi == math.huge then return (open_lo and "> " or ">= ") .. tostring(lo) end
  if lo == nil then return (open_hi and "< " or "<= ") .. tostring(hi) end
  return "in " .. (open_lo and "(" or "[") .. tostring(lo) .. ", " .. tostring(hi) .. (open_hi and ")" or "]")
end

-- The check functions below run inside a public function: level 3 points the error at the user's call.
function M.number(where, name, v, lo, hi, opts)
  opts = opts or {}
  if type(v) ~= "number" or v ~= v then M.fail(where, name .. " must be a number", v, 3) end
  local ok = true
  if lo and (opts.open_lo and v <= lo or (not opts.open_lo) and v < lo) then ok = false end
  if hi and (opts.open_hi and v >= hi or (not opts.open_hi) and v > hi) then ok = false end
  if not ok then M.fail(where, name .. " must be " .. range_text(lo, hi, opts.open_lo, opts.open_hi), v, 3) end
  return v
end

function M.integer(where, name, v, lo, hi)
  if type(v) ~= "number" or v ~= math.floor(v) then M.fail(where, name .. " must be an integer", v, 3) end
  if (lo and v < lo) or (hi and v > hi) then M.fail(where, name .. " must be " .. range_text(lo, hi), v, 3) end
  return v
end

function M.vector(where, name, v, n)
  if type(v) ~= "table" or #v ~= n then
    M.fail(where, string.format("%s must be a table of %d numbers", name, n), type(v) == "table" and ("a table of " .. #v) or v, 3)
  end
  for i = 1, n do
    if type(v[i]) ~= "number" or v[i] ~= v[i] then M.fail(where, string.format("%s[%d] must be a number", name, i), v[i], 3) end
  end
  return v
end

function M.oneof(where, name, v, set)
  for _, s in ipairs(set) do if v == s then return v end end
  M.fail(where, name .. " must be one of " .. table.concat(set, ", "), v, 3)
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

-- Unknown option names are errors, so a typo never passes silently.
function M.options(where, opts, known)
  if type(opts) ~= "table" then M.fail(where, "expects an options table", opts, 3) end
  for k in pairs(opts) do
    if not known[k] then
      local names = {}
      for n in pairs(known) do names[#names + 1] = n end
      table.sort(names)
      M.fail(where, "unknown option '" .. tostring(k) .. "' (known: " .. table.concat(names, ", ") .. ")", k, 3)
    end
  end
  return opts
end

return M
