-- JSON for checkpoints and saved objects: decoding by lua-cjson (Debian lua-cjson); encoding here, because
-- lua-cjson 2.1 writes at most 14 significant digits and a resumed optimization must get back every bit of each
-- double. Numbers are written in the shortest form that reads back exactly (at most 17 digits); object keys sorted,
-- so the same data gives the same file.
local check = require "cq._check"

local M = {}

local function cjson()
  local ok, lib = pcall(require, "cjson")
  if not ok then
    check.raise("cq.json: lua-cjson is not installed (make installs the Debian package lua-cjson): " .. tostring(lib))
  end
  return lib
end

-- The shortest decimal form of finite x that reads back as x.
local function number_text(x)
  if x == math.floor(x) and math.abs(x) < 2 ^ 53 then return string.format("%d", x) end
  for digits = 15, 17 do
    local s = string.format("%." .. digits .. "g", x)
    if tonumber(s) == x then return s end
  end
end

M.number_text = number_text -- (also the exact script arguments of cq.study)

local function encode(v, out, indent, path)
  local t = type(v)
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then
      check.raise("cq.json.encode: " .. path .. " is " .. tostring(v) .. " (JSON has no NaN or infinity)")
    end
    out[#out + 1] = number_text(v)
  elseif t == "string" then
    out[#out + 1] = cjson().encode(v)
  elseif t == "boolean" then
    out[#out + 1] = tostring(v)
  elseif t == "table" then
    local n = #v
    local count = 0
    for _ in pairs(v) do count = count + 1 end
    if n > 0 and count == n then -- an array
      local flat = true
      for i = 1, n do if type(v[i]) == "table" then flat = false break end end
      out[#out + 1] = "["
      for i = 1, n do
        if i > 1 then out[#out + 1] = "," end
        if not flat then out[#out + 1] = "\n" .. indent .. "  " end
        encode(v[i], out, indent .. "  ", path .. "[" .. i .. "]")
      end
      out[#out + 1] = flat and "]" or ("\n" .. indent .. "]")
    else
      local keys = {}
      for k in pairs(v) do
        if type(k) ~= "string" then
          check.raise("cq.json.encode: " .. path .. " has a key of type " .. type(k) .. " (" .. tostring(k) ..
            "): objects need string keys, arrays keys 1..n")
        end
        keys[#keys + 1] = k
      end
      table.sort(keys)
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        out[#out + 1] = (i > 1 and "," or "") .. "\n" .. indent .. "  " .. cjson().encode(k) .. ": "
        encode(v[k], out, indent .. "  ", path .. "." .. k)
      end
      out[#out + 1] = #keys > 0 and ("\n" .. indent .. "}") or "}"
    end
  else
    check.raise("cq.json.encode: " .. path .. " is a " .. t .. " (JSON holds numbers, strings, booleans and tables)")
  end
end

--- The JSON text of v (tables with keys 1..n are arrays, others objects with string keys).
function M.encode(v)
  local out = {}
  encode(v, out, "", "value")
  return table.concat(out)
end

--- The value of JSON text (name: for messages, e.g. the file).
function M.decode(text, name)
  if type(text) ~= "string" then check.fail("cq.json.decode", "text must be a string", text) end
  local ok, v = pcall(cjson().decode, text)
  if not ok then check.raise("cq.json.decode: " .. (name or "the text") .. " is not valid JSON: " .. tostring(v)) end
  return v
end

--- Writes v as JSON to path atomically: a temporary file in the same directory, then a rename, so a reader (or a run
--- killed mid-write) never sees a partial file.
function M.write(path, v)
  local text = M.encode(v) .. "\n"
  require("cq._fs").write_atomic("cq.json.write", path, text)
end

--- The value of the JSON file at path.
function M.read(path)
  local f, why = io.open(path, "r")
  if not f then check.raise("cq.json.read: cannot read " .. tostring(path) .. ": " .. tostring(why)) end
  local text = f:read("*a")
  f:close()
  return M.decode(text, path)
end

return M
