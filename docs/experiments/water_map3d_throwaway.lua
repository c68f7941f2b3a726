-- docs/experiments/water_map3d_throwaway.lua: a throwaway diagnostic (issue 62, docs/results/history.md, the
-- fifty-first session), not part of the product: it needs an engine built with
-- docs/experiments/water_two_field_throwaway.patch (git apply it in a worktree of a56e7d6) and JBAR_WATER=1 set. It
-- runs seed 003's 3D finger on the water's lattice in its tank of J-bar water (fluid = "particle") at 10 kPa to T and
-- prints the water's J - 1 by region round the finger (its -x, +x and z sides in 20 mm bands of height, below its tip).
-- usage: JBAR_WATER=1 <patched>/cqlua docs/experiments/water_map3d_throwaway.lua [K=2e6] [T=0.2]
package.path = "./scenes/?.lua;" .. package.path
local finger = require "finger"
local K, T = tonumber(arg[1] or 2e6), tonumber(arg[2] or 0.2)
local dx = 2.5e-3
local w, s, nf = finger.build { dx = dx, mesh_size = 3, spacing = dx / 2, bulk = 2e6, gravity = 0,
  water = { bulk = K }, threads = 2, fluid = "particle" }
local n = w.n
local lo, hi = { 1e9, 1e9, 1e9 }, { -1e9, -1e9, -1e9 }
for p = 0, nf - 1 do for a = 1, 3 do local v = s.x[(a - 1) * n + p]; lo[a] = math.min(lo[a], v); hi[a] = math.max(hi[a], v) end end
local tip = finger.tip_of(w, s, nf)
local x0 = tip()
local steps = math.floor(T / w.dt + 0.5)
for k = 1, steps do w:step(s, { 10e3 / finger.P_MAX * math.min(1, k * w.dt / 0.1) }) end
local x = tip()
print(string.format("K %g t %.3f: tip (%.3f, %.3f) mm; finger box x %.1f..%.1f y %.1f..%.1f z %.1f..%.1f mm", K, T,
  (x[1] - x0[1]) * 1e3, (x[2] - x0[2]) * 1e3, lo[1] * 1e3, hi[1] * 1e3, lo[2] * 1e3, hi[2] * 1e3, lo[3] * 1e3, hi[3] * 1e3))
local function det(p)
  local F = {}
  for c = 0, 8 do F[c] = s.F[c * n + p] end
  return F[0] * (F[4] * F[8] - F[5] * F[7]) - F[1] * (F[3] * F[8] - F[5] * F[6]) + F[2] * (F[3] * F[7] - F[4] * F[6])
end
local bins = {}
local function add(name, e)
  local b = bins[name] or { n = 0, sum = 0, min = 1e9, max = -1e9 }
  bins[name] = b
  b.n, b.sum, b.min, b.max = b.n + 1, b.sum + e, math.min(b.min, e), math.max(b.max, e)
end
for p = nf, n - 1 do
  local px, py, pz = s.x[p], s.x[n + p], s.x[2 * n + p]
  local e = det(p) - 1
  local inx, inz = px >= lo[1] and px <= hi[1], pz >= lo[3] and pz <= hi[3]
  local yb = py < lo[2] and "below tip" or string.format("y %03d-%03d mm", math.floor(py * 1e3 / 20) * 20, math.floor(py * 1e3 / 20) * 20 + 20)
  local region
  if py < lo[2] then region = "below tip"
  elseif px < lo[1] and inz then region = "-x side"
  elseif px > hi[1] and inz then region = "+x side"
  elseif inx then region = "z sides"
  else region = "corners" end
  add(region, e)
  if region == "-x side" or region == "+x side" or region == "z sides" then add(region .. " " .. yb, e) end
end
local names = {}
for k in pairs(bins) do names[#names + 1] = k end
table.sort(names)
for _, k in ipairs(names) do
  local b = bins[k]
  print(string.format("%-24s %6d  mean J-1 %+.2e  min %+.2e  max %+.2e  mean p %8.1f Pa", k, b.n, b.sum / b.n, b.min, b.max, -K * b.sum / b.n))
end
