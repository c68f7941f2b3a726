-- Private: `cqlua study collect` (cq.study). Gathers the manifests of a study's rows (local or SLURM runs alike) into
-- <dir>/results.csv, plots each metric against each swept parameter (<dir>/<metric>.png, gnuplot), optionally
-- summarises the metrics over groups of rows (e.g. the seeds of each configuration: <dir>/summary.csv), and prints
-- the best rows and the failures. Only manifests of the study's current rows count (their hash must match).
local fs = require "cq._fs"
local proc = require "cq._proc"

local M = {}

local function csv_cell(v)
  if v == nil then return "" end
  local s
  if type(v) == "number" then
    s = (v == math.floor(v) and math.abs(v) < 2 ^ 53) and string.format("%d", v) or string.format("%.10g", v)
  else
    s = tostring(v)
  end
  if s:find('[,"\n\r]') then s = '"' .. s:gsub('"', '""') .. '"' end
  return s
end

local function write_csv(path, header, rows)
  local lines = { table.concat(header, ",") }
  for _, r in ipairs(rows) do
    local cells = {}
    for k, name in ipairs(header) do cells[k] = csv_cell(r[name]) end
    lines[#lines + 1] = table.concat(cells, ",")
  end
  fs.write_atomic("cqlua study collect", path, table.concat(lines, "\n") .. "\n")
end

local function first_line(s) return (tostring(s or ""):match("^[^\n]*")) end

-- The build a manifest's engine version names: its sources' hash and the CPU it was compiled for (src.<hash>.<arch>,
-- see the Makefile), so that builds of commits that differ only outside the sources count as one; versions without
-- them (before 2026-11-27) as a whole.
local function build_of(version)
  version = tostring(version or "unknown")
  return version:match("%+(src%..-)%.git%.") or version:match("%+(src%..*)$") or version
end

-- Row directories under <dir>/rows that belong to no current row (earlier versions of the study).
local function stale_dirs(study, current)
  local p = io.popen("ls -1 " .. proc.quote(study.dir .. "/rows") .. " 2>/dev/null")
  local n = 0
  if p then
    for name in p:lines() do if not current[name] then n = n + 1 end end
    p:close()
  end
  return n
end

-- The parameters that take more than one value, with their distinct values in first-seen order.
local function swept(study)
  local list = {}
  for _, name in ipairs(study.params) do
    local values, seen = {}, {}
    for _, row in ipairs(study.rows) do
      local key = tostring(row[name])
      if not seen[key] then seen[key] = true; values[#values + 1] = row[name] end
    end
    if #values > 1 then list[#list + 1] = { name = name, values = values } end
  end
  return list
end

-- x coordinate of a parameter value in its panel, and the tic labels: numbers as they are, booleans and strings as
-- categories 0, 1, ...
local function axis_of(p)
  local numeric = true
  for _, v in ipairs(p.values) do numeric = numeric and type(v) == "number" end
  if numeric then return function(v) return v end, nil end
  local index, tics = {}, {}
  for k, v in ipairs(p.values) do
    index[tostring(v)] = k - 1
    local label = type(v) == "boolean" and (v and "on" or "off") or tostring(v)
    tics[#tics + 1] = string.format("'%s' %d", label:gsub("'", "''"), k - 1)
  end
  return function(v) return index[tostring(v)] end, "(" .. table.concat(tics, ", ") .. ")"
end

local function mean_std(list)
  local n, s = #list, 0
  for _, v in ipairs(list) do s = s + v end
  local mean = s / n
  local q = 0
  for _, v in ipairs(list) do q = q + (v - mean) ^ 2 end
  return mean, n > 1 and math.sqrt(q / (n - 1)) or 0
end

-- <dir>/<metric>.png: one panel per swept parameter, the ok rows as points and their mean per value as a line.
local function plot_metric(study, metric, ok_rows, params)
  if #params == 0 or #ok_rows == 0 then return nil end
  local datafile = study.dir .. "/." .. metric .. ".dat"
  local lines = {}
  for k, p in ipairs(params) do
    local x_of = axis_of(p)
    lines[#lines + 1] = "# panel " .. k .. " points"
    for _, r in ipairs(ok_rows) do -- (a row of a concatenated space may lack the parameter)
      if r[p.name] ~= nil then lines[#lines + 1] = string.format("%.17g %.17g", x_of(r[p.name]), r[metric]) end
    end
    lines[#lines + 1] = "\n"
    lines[#lines + 1] = "# panel " .. k .. " means"
    local xs = {}
    for _, v in ipairs(p.values) do
      local vals = {}
      for _, r in ipairs(ok_rows) do if tostring(r[p.name]) == tostring(v) then vals[#vals + 1] = r[metric] end end
      if #vals > 0 then xs[#xs + 1] = { x_of(v), (mean_std(vals)) } end
    end
    table.sort(xs, function(a, b) return a[1] < b[1] end)
    for _, xy in ipairs(xs) do lines[#lines + 1] = string.format("%.17g %.17g", xy[1], xy[2]) end
    lines[#lines + 1] = "\n"
  end
  fs.write_atomic("cqlua study collect", datafile, table.concat(lines, "\n") .. "\n")
  local out = study.dir .. "/" .. metric .. ".png"
  local cols = math.min(#params, 3)
  local nrows = math.ceil(#params / cols)
  local script = {
    string.format("set terminal pngcairo size %d,%d noenhanced font 'sans,10'", 380 * cols, 320 * nrows),
    "set output '" .. (out .. ".tmp"):gsub("'", "''") .. "'",
    string.format("set multiplot layout %d,%d title '%s: %s against each swept parameter (points: rows; line: mean)'",
      nrows, cols, study.name, metric),
    "set grid", "unset key", "set offsets graph 0.08, graph 0.08, graph 0.05, graph 0.05",
  }
  for k, p in ipairs(params) do
    local _, tics = axis_of(p)
    script[#script + 1] = tics and ("set xtics " .. tics) or "set xtics autofreq"
    script[#script + 1] = "set xlabel '" .. p.name .. "'"
    script[#script + 1] = "set ylabel '" .. metric .. "'"
    script[#script + 1] = string.format("plot '%s' index %d with points pt 7 ps 0.8 lc rgb '#4477aa', '' index %d " ..
      "with linespoints lw 2 pt 5 lc rgb '#cc3311'", datafile:gsub("'", "''"), 2 * (k - 1), 2 * k - 1)
  end
  script[#script + 1] = "unset multiplot"
  script[#script + 1] = "unset output"
  local ok, why = proc.gnuplot(script)
  os.remove(datafile)
  if not ok then os.remove(out .. ".tmp"); return nil, why end
  fs.rename_over(out .. ".tmp", out)
  return out
end

-- Mean, its standard error, std, min, max of each metric over the ok rows of each group (rows equal in the by parameters).
local function summarise(study, by, ok_rows)
  local groups, order = {}, {}
  for _, r in ipairs(ok_rows) do
    local key = {}
    for _, n in ipairs(by) do key[#key + 1] = tostring(r[n]) end
    key = table.concat(key, "\0")
    if not groups[key] then
      groups[key] = { rows = {} }
      for _, n in ipairs(by) do groups[key][n] = r[n] end
      order[#order + 1] = key
    end
    table.insert(groups[key].rows, r)
  end
  local out = {}
  for _, key in ipairs(order) do
    local g = groups[key]
    local s = { n = #g.rows }
    for _, n in ipairs(by) do s[n] = g[n] end
    for _, m in ipairs(study.metrics) do
      local vals, lo, hi = {}, math.huge, -math.huge
      for _, r in ipairs(g.rows) do
        vals[#vals + 1] = r[m]
        lo, hi = math.min(lo, r[m]), math.max(hi, r[m])
      end
      s[m .. "_mean"], s[m .. "_std"] = mean_std(vals)
      s[m .. "_se"] = s[m .. "_std"] / math.sqrt(#vals) -- the standard error of the mean: is a difference noise?
      s[m .. "_min"], s[m .. "_max"] = lo, hi
    end
    out[#out + 1] = s
  end
  local sign = study.goal == "max" and -1 or 1
  table.sort(out, function(a, b) return sign * a[study.best .. "_mean"] < sign * b[study.best .. "_mean"] end)
  return out
end

local function print_table(header, rows, fmt)
  local widths = {}
  local cells = {}
  for k, h in ipairs(header) do widths[k] = #h end
  for i, r in ipairs(rows) do
    cells[i] = {}
    for k, h in ipairs(header) do
      local v = r[h]
      local s = type(v) == "number" and (fmt[h] and string.format(fmt[h], v) or string.format("%.4g", v)) or tostring(v == nil and "" or v)
      cells[i][k] = s
      widths[k] = math.max(widths[k], #s)
    end
  end
  local function line(list)
    local parts = {}
    for k, s in ipairs(list) do parts[k] = string.rep(" ", widths[k] - #s) .. s end
    print("  " .. table.concat(parts, "  "))
  end
  line(header)
  for _, c in ipairs(cells) do line(c) end
end

--- `cqlua study collect`: writes results.csv (and summary.csv with opts.by), the plots, and prints the tables.
--- opts: top (best rows shown, 10), by (a list of parameter names to summarise over). Returns a table with the
--- paths written and the counts.
function M.collect(study, opts)
  local top = opts.top or 10
  local by = opts.by or study.by
  for _, n in ipairs(by or {}) do
    local known = false
    for _, p in ipairs(study.params) do known = known or p == n end
    if not known then error("cqlua study collect: --by " .. n .. " is not a parameter (" .. table.concat(study.params, ", ") .. ")", 0) end
  end
  local ok, err = fs.mkdir_p(study.dir)
  if not ok then error("cqlua study collect: cannot create " .. study.dir .. " (" .. tostring(err) .. ")", 0) end
  local header = { "row", "status" }
  for _, n in ipairs(study.params) do header[#header + 1] = n end
  for _, n in ipairs(study.metrics) do header[#header + 1] = n end
  for _, n in ipairs { "wall_seconds", "host", "attempt", "finished", "engine", "hash", "message" } do
    header[#header + 1] = n
  end
  local rows, ok_rows, failures, counts, current = {}, {}, {}, {}, {}
  -- the builds of the finished rows (first seen first), rows per build, and the first version seen of each
  local builds, build_rows, build_names = {}, {}, {}
  for i = 1, #study.rows do
    current[study:row_dir(i):match("[^/]+$")] = true
    local m, unreadable = study:manifest(i)
    local r = { row = i, status = m and m.status or unreadable and "unreadable" or "not run", message = unreadable }
    for _, n in ipairs(study.params) do r[n] = study.rows[i][n] end
    if m then
      for _, n in ipairs(study.metrics) do r[n] = m.metrics and m.metrics[n] end
      r.wall_seconds, r.host, r.attempt, r.finished = m.wall_seconds, m.host, m.attempt, m.finished
      r.engine = type(m.engine) == "table" and m.engine.version or nil
      r.hash, r.message = m.hash, m.message and first_line(m.message) or nil
    end
    rows[i] = r
    counts[r.status] = (counts[r.status] or 0) + 1
    if r.status == "ok" then
      ok_rows[#ok_rows + 1] = r
      local b = build_of(r.engine)
      if not build_rows[b] then builds[#builds + 1], build_rows[b], build_names[b] = b, 0, tostring(r.engine) end
      build_rows[b] = build_rows[b] + 1
    elseif r.status ~= "not run" and r.status ~= "running" then failures[#failures + 1] = r end
  end
  local csv = study.dir .. "/results.csv"
  write_csv(csv, header, rows)
  local result = { csv = csv, counts = counts, rows = rows, plots = {} }

  local status_parts = {}
  for _, s in ipairs { "ok", "failed", "timeout", "interrupted", "running", "not run", "unreadable" } do
    if counts[s] then status_parts[#status_parts + 1] = counts[s] .. " " .. s end
  end
  print(string.format("cqlua study collect: %s: %d rows: %s", study.name, #study.rows, table.concat(status_parts, ", ")))
  local stale = stale_dirs(study, current)
  if stale > 0 then
    print(string.format("  (%d row directories of earlier versions of the study are ignored)", stale))
  end
  print("  " .. csv)
  if #builds > 1 then -- the row hash covers the study, not the engine: say when finished rows mix builds
    local parts = {}
    for _, b in ipairs(builds) do parts[#parts + 1] = string.format("%s (%d rows)", build_names[b], build_rows[b]) end
    print("  note: the finished rows come from " .. #builds .. " engine builds: " .. table.concat(parts, ", ") ..
      "; rows of different builds may differ beyond their parameters (rerun them with one build to compare)")
  end

  local params = swept(study)
  for _, metric in ipairs(study.metrics) do
    local png, why = plot_metric(study, metric, ok_rows, params)
    if png then result.plots[#result.plots + 1] = png; print("  " .. png)
    elseif why then print("  no plot of " .. metric .. ": " .. why) end
  end

  if by and #by > 0 and #ok_rows > 0 then
    local summary = summarise(study, by, ok_rows)
    local sh = {}
    for _, n in ipairs(by) do sh[#sh + 1] = n end
    sh[#sh + 1] = "n"
    for _, m in ipairs(study.metrics) do
      for _, s in ipairs { "_mean", "_se", "_std", "_min", "_max" } do sh[#sh + 1] = m .. s end
    end
    result.summary_csv = study.dir .. "/summary.csv"
    result.summary = summary
    write_csv(result.summary_csv, sh, summary)
    print("  " .. result.summary_csv)
    print(string.format("\nby %s (%s first, mean over each group's rows):", table.concat(by, ", "),
      study.goal == "max" and "highest " .. study.best or "lowest " .. study.best))
    local th = {}
    for _, n in ipairs(by) do th[#th + 1] = n end
    th[#th + 1] = "n"
    for _, s in ipairs { "_mean", "_se", "_std", "_min", "_max" } do th[#th + 1] = study.best .. s end
    print_table(th, summary, {})
  end

  if #ok_rows > 0 then
    local sign = study.goal == "max" and -1 or 1
    local sorted = {}
    for k, r in ipairs(ok_rows) do sorted[k] = r end
    table.sort(sorted, function(a, b)
      if a[study.best] ~= b[study.best] then return sign * a[study.best] < sign * b[study.best] end
      return a.row < b.row
    end)
    local best = {}
    for k = 1, math.min(top, #sorted) do best[k] = sorted[k] end
    print(string.format("\nbest rows (%s %s):", study.goal == "max" and "highest" or "lowest", study.best))
    local th = { "row" }
    for _, n in ipairs(study.params) do th[#th + 1] = n end
    for _, n in ipairs(study.metrics) do th[#th + 1] = n end
    th[#th + 1] = "wall_seconds"
    print_table(th, best, { wall_seconds = "%.1f" })
    result.best = best
  end
  if #failures > 0 then
    print("\nfailures:")
    for _, r in ipairs(failures) do
      print(string.format("  row %d (%s): %s: %s", r.row, study:row_text(r.row), r.status, tostring(r.message)))
    end
  end
  result.failures = failures
  return result
end

return M
