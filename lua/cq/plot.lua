-- Loss curves and design-variable traces as PNG files, drawn by gnuplot (a subprocess; Debian package gnuplot-nox)
-- from the CSV logs that cq.log writes (out/<name>.csv): cq.plot{...}.
local check = require "cq._check"
local fs = require "cq._fs"
local proc = require "cq._proc"

local M = {}
local OPTIONS = check.option_set("cq.plot", { "csv", "log", "x", "y", "out", "title", "xlabel", "ylabel", "logscale",
  "width", "height", "style", "key" })
local KEYS = { "top right", "top left", "bottom right", "bottom left", "off" }

-- A string as a gnuplot string literal (single quotes; a quote is doubled).
local function literal(s) return "'" .. tostring(s):gsub("'", "''") .. "'" end

-- The header (column names) and the number of data rows of a CSV file.
local function read_csv(where, path)
  local f, err = io.open(path, "r")
  if not f then check.raise(string.format("%s: cannot read %s (%s)", where, path, tostring(err))) end
  local header = f:read("*l")
  local rows = 0
  for line in f:lines() do if line:find("%S") then rows = rows + 1 end end
  f:close()
  if not header then check.raise(where .. ": " .. path .. " is empty (no header line)") end
  local names = {}
  for name in (header .. ","):gmatch("([^,]*),") do names[#names + 1] = name:gsub("^%s+", ""):gsub("%s+$", "") end
  return names, rows
end

--- cq.plot{ csv = "out/x.csv" | log = cq.log object, x = "iteration", y = "loss" or {"loss", ...}, out = "out/x.png",
---   title?, xlabel? (x), ylabel?, logscale = false | true (y) | "x" | "y" | "xy", width = 800, height = 500,
---   style = "lines" | "linespoints" | "points", key = "top right" | "top left" | "bottom right" | "bottom left" |
---   "off" } -> out
--- One curve per y column against the x column (empty cells are gaps); written to out.tmp and renamed to out.
function M.plot(opts)
  local where = "cq.plot"
  check.options(where, opts, OPTIONS)
  if (opts.csv == nil) == (opts.log == nil) then
    check.fail(where, "give exactly one of csv (a CSV file) or log (a cq.log)", nil)
  end
  local csv = opts.csv
  if opts.log ~= nil then
    if type(opts.log) ~= "table" or type(opts.log.name) ~= "string" then check.fail(where, "log must be a cq.log", opts.log) end
    csv = "out/" .. opts.log.name .. ".csv"
    if opts.log.file then opts.log.file:flush() end
  end
  if type(csv) ~= "string" or csv == "" then check.fail(where, "csv must be a file name such as \"out/biped2d.csv\"", csv) end
  local out = opts.out
  if type(out) ~= "string" or out == "" or out:sub(-1) == "/" then
    check.fail(where, "out must be a file name such as \"out/loss.png\"", out)
  end
  local width = check.integer(where, "width", opts.width or 800, 16, 10000)
  local height = check.integer(where, "height", opts.height or 500, 16, 10000)
  local style = check.oneof(where, "style", opts.style or "lines", { "lines", "linespoints", "points" })
  local key = check.oneof(where, "key", opts.key or "top right", KEYS)
  local logscale = opts.logscale
  if logscale == true then logscale = "y" end
  if logscale ~= nil and logscale ~= false then check.oneof(where, "logscale", logscale, { "x", "y", "xy" }) end
  for _, k in ipairs { "title", "xlabel", "ylabel" } do
    if opts[k] ~= nil and type(opts[k]) ~= "string" then check.fail(where, k .. " must be a string", opts[k]) end
  end
  local ys = type(opts.y) == "string" and { opts.y } or opts.y
  if type(ys) ~= "table" or #ys == 0 then
    check.fail(where, "y must be a column name or a non-empty list of column names", opts.y)
  end
  local names, rows = read_csv(where, csv)
  local column = {}
  for i, name in ipairs(names) do column[name] = column[name] or i end
  local xname = opts.x or "iteration"
  local function col(option, name)
    if type(name) ~= "string" or not column[name] then
      check.fail(where, string.format("%s must be a column of %s (%s)", option, csv, table.concat(names, ", ")), name)
    end
    return column[name]
  end
  local xcol = col("x", xname)
  local curves = {}
  for i, name in ipairs(ys) do
    curves[i] = string.format("%s every ::1 using %d:%d with %s lw 2 title %s", literal(csv), xcol, col("y[" .. i .. "]", name),
      style, literal(name))
  end
  if rows == 0 then check.raise(where .. ": " .. csv .. " has no data rows yet") end
  if not proc.which("gnuplot") then
    check.raise(where .. ": gnuplot is not installed or not on PATH (install it: apt-get install gnuplot-nox; " ..
      "`make deps-plot` installs it)")
  end
  local ok, err = fs.mkdir_p(fs.dirname(out))
  if not ok then check.raise(string.format("%s: cannot create directory %s (%s)", where, fs.dirname(out), tostring(err))) end
  local tmp = out .. ".tmp"
  local script = {
    string.format("set terminal pngcairo size %d,%d noenhanced font 'sans,%d'", width, height,
      math.max(8, math.floor(height / 45))),
    "set output " .. literal(tmp),
    "set datafile separator ','",
    "set grid",
    key == "off" and "unset key" or "set key " .. key,
    "set xlabel " .. literal(opts.xlabel or xname),
  }
  if opts.ylabel then script[#script + 1] = "set ylabel " .. literal(opts.ylabel) end
  if opts.title then script[#script + 1] = "set title " .. literal(opts.title) end
  if logscale then script[#script + 1] = "set logscale " .. logscale end
  script[#script + 1] = "plot " .. table.concat(curves, ", \\\n  ")
  script[#script + 1] = "unset output"
  local done, why = proc.gnuplot(script)
  if not done then os.remove(tmp); check.raise(where .. ": gnuplot failed (" .. why .. ")") end
  local renamed, rerr = fs.rename_over(tmp, out)
  if not renamed then check.raise(string.format("%s: cannot rename %s to %s (%s)", where, tmp, out, tostring(rerr))) end
  return out
end

return M
