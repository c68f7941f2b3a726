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

function M.number(where, name, v, lo, hi, opts)
  opts = opts or {}
  if type(v) ~= "number" or v ~= v then M.fail(where, name .. " must be a number", v, 2) end
  local ok = true
  if lo and (opts.open_lo and v <= lo or (not opts.open_lo) and v < lo) then ok = false end
  if hi and (opts.open_hi and v >= hi or (not opts.open_hi) and v > hi) then ok = false end
  if not ok then
    local range = (opts.open_lo and "(" or "[") .. tostring(lo or "-inf") .. ", " .. tostring(hi or "inf") ..
        (opts.open_hi and ")" or "]")
    M.fail(where, name .. " must be in " .. range, v, 2)
  end
  return v
end

function M.integer(where, name, v, lo, hi)
  if type(v) ~= "number" or v ~= math.floor(v) then M.fail(where, name .. " must be an integer", v, 2) end
  if (lo and v < lo) or (hi and v > hi) then
    M.fail(where, string.format("%s must be in [%s, %s]", name, tostring(lo or "-inf"), tostring(hi or "inf")), v, 2)
  end
  return v
end

function M.vector(where, name, v, n)
  if type(v) ~= "table" or #v ~= n then
    M.fail(where, string.format("%s must be a table of %d numbers", name, n), type(v) == "table" and ("table of " .. #v) or v, 2)
  end
  for i = 1, n do
    if type(v[i]) ~= "number" or v[i] ~= v[i] then M.fail(where, string.format("%s[%d] must be a number", name, i), v[i], 2) end
  end
  return v
end

function M.oneof(where, name, v, set)
  for _, s in ipairs(set) do if v == s then return v end end
  M.fail(where, name .. " must be one of " .. table.concat(set, ", "), v, 2)
end

-- Unknown option names are errors, so a typo never passes silently.
function M.options(where, opts, known)
  if type(opts) ~= "table" then M.fail(where, "expects an options table", opts, 2) end
  for k in pairs(opts) do
    if not known[k] then
      local names = {}
      for n in pairs(known) do names[#names + 1] = n end
      table.sort(names)
      M.fail(where, "unknown option '" .. tostring(k) .. "' (known: " .. table.concat(names, ", ") .. ")", k, 2)
    end
  end
  return opts
end

return M
