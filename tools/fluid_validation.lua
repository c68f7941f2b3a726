-- tools/fluid_validation.lua: the fluid validations of issue 10 (scenes/fluid_validation.lua) at several resolutions,
-- for docs/results/history.md: the hydrostatic column (per-row pressure error, dp/dy, floor force; the first attempt's
-- inset column next to it) and Martin & Moyce's dam break (front Z(T) and residual column H(tau) against the data,
-- 8 to 64 cells across the column, and the speed of sound doubled). `make bench-fluid` runs it.
--
-- usage: build/bin/cqlua tools/fluid_validation.lua [quick] [hydro] [dam] [out=DIR]
--   quick   only the coarse resolutions (seconds); hydro / dam: that part alone (default both)
--   out     where the CSV files and figures go (default out/); figures need gnuplot (cq.plot)
package.path = "./scenes/?.lua;" .. package.path
local cq = require "cq"
local fv = require "fluid_validation"
local now = require("cq.clock").now

local QUICK, parts, OUT = false, {}, "out"
for _, a in ipairs(arg or {}) do
  if a == "quick" then QUICK = true
  elseif a == "hydro" or a == "dam" then parts[a] = true
  elseif a:match("^out=") then OUT = a:sub(5)
  else error("usage: cqlua tools/fluid_validation.lua [quick] [hydro] [dam] [out=DIR] (got " .. a .. ")") end
end
if not parts.hydro and not parts.dam then parts.hydro, parts.dam = true, true end
os.execute("mkdir -p '" .. OUT .. "'")

local function write_csv(path, header, rows)
  local f = assert(io.open(path, "w"))
  f:write(table.concat(header, ","), "\n")
  for _, r in ipairs(rows) do
    local cells = {}
    for i = 1, #header do cells[i] = r[i] == nil and "" or string.format("%.6g", r[i]) end
    f:write(table.concat(cells, ","), "\n")
  end
  f:close()
end

local function try_plot(opts)
  local ok, err = pcall(cq.plot, opts)
  print(ok and ("  figure: " .. opts.out) or ("  no figure (" .. tostring(err) .. ")"))
end

if parts.hydro then
  print("== hydrostatic column: 21 x 16 cells of the 1/64 grid (0.328 x 0.25), rho = 1, g = 10, bulk 400, damping 10/s")
  print("   scale  dx      particles  substeps  time(s)  avg(s)  worst row  dp/dy/(-rho g)-1  floor force/weight-1  " ..
    "max speed  wall(s)")
  local cases = {
    { scale = 1 }, { scale = 1, time = 1.5, average = 0.5 }, { scale = 0.5 }, { scale = 2 },
    { scale = 1, inset = 1, label = "inset 1 (first attempt)" },
    { scale = 1, inset = 1, time = 1.5, average = 0.5, label = "inset 1 (first attempt)" },
  }
  if QUICK then cases = { cases[1], cases[5] } end
  local profile
  for _, c in ipairs(cases) do
    local t0 = now()
    local r = fv.hydrostatic { dx = 1 / (64 * c.scale), width = math.floor(21 * c.scale + 0.5), height = 16 * c.scale,
      substeps = math.ceil(40 * c.scale), time = c.time, average = c.average, inset = c.inset }
    print(string.format("   %-5g  1/%-4d  %9d  %8d  %7.1f  %6.1f  %8.2f%%  %+15.2f%%  %+19.2f%%  %9.2g  %7.1f  %s",
      c.scale, 64 * c.scale, r.n, math.ceil(40 * c.scale), c.time or 0.4, c.average or 0.1, 100 * r.max_err,
      100 * (r.slope / -r.rho_g - 1), 100 * (r.floor_force / r.weight - 1), r.vmax, now() - t0, c.label or ""))
    if c.scale == 1 and not c.time then
      local rows = profile or {}
      for _, b in ipairs(r.bins) do
        rows[#rows + 1] = c.inset and { b.depth, nil, nil, b.p } or { b.depth, b.p, b.expected }
        if not c.inset then print(string.format("      row %2d  depth %.4f  p %.4f  rho g h %.4f  %+.2f%%", b.row,
          b.depth, b.p, b.expected, 100 * b.err)) end
      end
      profile = rows
    end
  end
  table.sort(profile, function(a, b) return a[1] < b[1] end)
  write_csv(OUT .. "/fluid_hydrostatic.csv", { "depth", "p_sim", "rho_g_h", "p_inset" }, profile)
  try_plot { csv = OUT .. "/fluid_hydrostatic.csv", x = "depth", y = { "rho_g_h", "p_sim", "p_inset" },
    out = OUT .. "/fluid_hydrostatic.png", style = "linespoints", key = "top left",
    xlabel = "depth below the free surface", ylabel = "pressure (per row of cells, last 0.1 s)",
    title = "hydrostatic column, dx = 1/64, t = 0.4 s" }
end

if parts.dam then
  local mm = fv.MARTIN_MOYCE
  print("== Martin & Moyce dam break, n^2 = 2: a = 0.05715 m, water, bulk 4e5 (c = 20 m/s), slip walls; " ..
    "Z = front / a, T = t sqrt(2 g / a)")
  local runs = {
    { cells = 8 }, { cells = 16 }, { cells = 24 }, { cells = 32 }, { cells = 48 }, { cells = 64 },
    { cells = 32, bulk = 1.6e6, label = "c = 40 m/s" },
  }
  if QUICK then runs = { runs[1], runs[2] } end
  local T_end = 2.45
  local head = { "   T     M&M " }
  for _, r in ipairs(runs) do
    local t0 = now()
    r.res = fv.dam_break { cells = r.cells, bulk = r.bulk, T_end = T_end }
    r.seconds = now() - t0
    head[#head + 1] = string.format("%6s", r.cells .. (r.bulk and "c40" or ""))
    print(string.format("   %d cells/a%s: %d particles, %d substeps per 0.05 T, max speed %.2f m/s (c / v = %.1f), " ..
      "%.1f s", r.cells, r.label and (" (" .. r.label .. ")") or "", r.res.n, r.res.substeps, r.res.vmax,
      r.res.c / r.res.vmax, r.seconds))
  end
  print("   front Z (error vs M&M):")
  print(table.concat(head, "  "))
  for _, e in ipairs(mm) do
    if e.T <= T_end - 0.05 then
      local line = { string.format("   %.2f  %.2f", e.T, e.Z) }
      for _, r in ipairs(runs) do
        local z = r.res.Z_at(e.T)
        line[#line + 1] = string.format("%5.3f (%+5.1f%%)", z, 100 * (z - e.Z) / e.Z)
      end
      print(table.concat(line, "  "))
    end
  end
  print("   residual column H = height / 2a at the back wall, tau = t sqrt(g / a) (error vs M&M):")
  for _, e in ipairs(fv.MARTIN_MOYCE_HEIGHT) do
    local T = e.tau * math.sqrt(2)
    if T <= T_end - 0.05 then
      local line = { string.format("   tau %.2f  %.2f", e.tau, e.H) }
      for _, r in ipairs(runs) do
        local hh = r.res.H_at(T)
        line[#line + 1] = string.format("%5.3f (%+5.1f%%)", hh, 100 * (hh - e.H) / e.H)
      end
      print(table.concat(line, "  "))
    end
  end
  -- one CSV: T, the measured Z (at its own T), and each run's Z every 0.05 T (empty cells where a column has none)
  local header, rows = { "T", "Martin_Moyce" }, {}
  for _, r in ipairs(runs) do if not r.bulk then header[#header + 1] = "Z_" .. r.cells .. "_cells" end end
  for _, e in ipairs(mm) do if e.T <= T_end then rows[#rows + 1] = { e.T, e.Z } end end
  local first = runs[1].res
  for k = 0, first.steps do
    local row = { first.T[k] }
    local col = 3
    for _, r in ipairs(runs) do
      if not r.bulk then row[col] = r.res.Z[k]; col = col + 1 end
    end
    rows[#rows + 1] = row
  end
  table.sort(rows, function(a, b) return a[1] < b[1] end)
  write_csv(OUT .. "/fluid_dambreak.csv", header, rows)
  local ys = {}
  for i = 2, #header do ys[#ys + 1] = header[i] end
  try_plot { csv = OUT .. "/fluid_dambreak.csv", x = "T", y = ys, out = OUT .. "/fluid_dambreak.png",
    style = "linespoints", key = "top left", xlabel = "T = t sqrt(2 g / a)", ylabel = "Z = front / a",
    title = "dam break n^2 = 2: Martin & Moyce (1952) and the MPM fluid" }
end
