-- Seed 000 Fig. 11 from the biped co-design study (examples/biped_codesign_study.lua, after `cqlua study run`):
-- the best distance walked so far against the iteration, averaged over the seeds of each of the 8 combinations of
-- co-designed material parameters. Reads each finished row's training log (out/biped_codesign_*.csv in its
-- directory); writes <study dir>/progress.csv and progress.png. Usage: cqlua tools/biped_codesign_figure.lua, with
-- the study's CQ_BIPED_SEEDS / CQ_BIPED_ITERATIONS when it ran with them.
local study = require "cq.study"
local s = study.load("examples/biped_codesign_study.lua")

local function label(row)
  local on = {}
  for _, m in ipairs { "E", "nu", "density" } do if row[m] then on[#on + 1] = m end end
  return #on > 0 and table.concat(on, "+") or "control only"
end

local curves, order, n_iter = {}, {}, 0
for i, row in ipairs(s.rows) do
  local m = s:manifest(i)
  if m and m.status == "ok" then
    local name = label(row)
    if not curves[name] then curves[name] = { sum = {}, n = 0 }; order[#order + 1] = name end
    local mats = label(row):gsub("%+", "_"):gsub("control only", "none")
    local path = string.format("%s/out/biped_codesign_%s_s%d.csv", s:row_dir(i), mats, row.seed)
    local f = assert(io.open(path), "no training log " .. path)
    f:read("*l")
    local best, k = -math.huge, 0
    for line in f:lines() do
      local it, dist = line:match("^(%d+),[^,]*,[^,]*,[^,]*,([^,]*),")
      if it and tonumber(dist) then
        k = tonumber(it)
        best = math.max(best, tonumber(dist))
        curves[name].sum[k] = (curves[name].sum[k] or 0) + best
      end
    end
    f:close()
    n_iter = math.max(n_iter, k)
    curves[name].n = curves[name].n + 1
  end
end
local function size(name) return name == "control only" and 0 or select(2, name:gsub("%+", "")) + 1 end
table.sort(order, function(a, b) return size(a) < size(b) or (size(a) == size(b) and a < b) end)
local header = { "iteration" }
for _, name in ipairs(order) do header[#header + 1] = name end
local lines = { table.concat(header, ",") }
for k = 1, n_iter do
  local cells = { k }
  for _, name in ipairs(order) do
    local c = curves[name]
    cells[#cells + 1] = c.sum[k] and string.format("%.5f", c.sum[k] / c.n) or ""
  end
  lines[#lines + 1] = table.concat(cells, ",")
end
local csv = s.dir .. "/progress.csv"
local f = assert(io.open(csv, "w"))
f:write(table.concat(lines, "\n"), "\n")
f:close()
local out = require("cq.plot").plot { csv = csv, x = "iteration", y = order, out = s.dir .. "/progress.png",
  title = "biped co-design: best distance so far, mean over seeds", ylabel = "distance walked in 4 s",
  key = "bottom right" }
for _, name in ipairs(order) do
  print(string.format("%-16s %d runs, mean best distance after %d iterations: %.3f", name, curves[name].n, n_iter,
    curves[name].sum[n_iter] / curves[name].n))
end
print(csv .. "\n" .. out)
