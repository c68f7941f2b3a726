-- docs/experiments/water_lock2d.lua: does a stiff fluid lock against a soft solid inside it? (issue 11, docs/results/history.md "Issue
-- 11: the water locks" and "the water in the groups"). The 2D beam of scenes/fluid_validation.lua buoyed_beam (8 x
-- 75 mm, neo-Hookean E = 1e7 Pa, nu 0.3, density 3000) hangs from a sticky ceiling under a sideways gravity of 9.8
-- m/s^2, in air and in a closed tank of water (density 1000). At rest a fluid only buoys it: the load in water is
-- (3000 - 1000) / 3000 of air's, so the tip should deflect 2/3 as far (the cantilever's q L^4 / (8 E I) = 1.9 mm in
-- air). The water is sampled at 1.25, 2 and 2.5 particles per cell and axis and its bulk modulus varied; implicit
-- 5 ms substeps, damping 25/s, 1 s. Prints the tip's deflection at ten times and the last against the expected one.
-- A few seconds per run.
--
-- usage: build/bin/cqlua docs/experiments/water_lock2d.lua [quick] [averaged] [E=<Pa>] [bulk=<Pa>] [T=<s>] [K=<Pa>] [damping=<1/s>]
--   [dt=<s>] [integrator=explicit|implicit] [fluid=particle|fill]
--   quick: the water at 2.5 per cell and axis only, with bulk modulus K (2.2e9); averaged: the world's
--   volumetric = "averaged"; E: the beam's Young's modulus (1e7), the gravity scaled with it; bulk: a bulk term on
--   the beam (none: nu = 0.3 alone); T: the time simulated (1 s); damping: the world's (25/s, on the water too)
package.path = "./scenes/?.lua;" .. package.path
local fv = require "fluid_validation"
local opts = { volumetric = "particle", K = 2.2e9 }
local QUICK = false
for _, a in ipairs(arg or {}) do
  local key, value = a:match("^(%w+)=(.+)$")
  if a == "quick" then QUICK = true
  elseif a == "averaged" then opts.volumetric = a
  elseif key == "E" or key == "bulk" or key == "T" or key == "K" or key == "damping" or key == "dt" then
    opts[key] = tonumber(value) or error("water_lock2d: " .. key .. " must be a number, got " .. value, 0)
  elseif key == "integrator" or key == "fluid" then opts[key] = value
  else error("water_lock2d: unknown argument " .. a .. " (quick, averaged, E=<Pa>, bulk=<Pa>, T=<s>, K=<Pa>, "
    .. "damping=<1/s>, dt=<s>, integrator=<name>, fluid=particle|fill)", 0) end
end

local function run(per_axis, K)
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  o.per_axis, o.K = per_axis, K
  local r = fv.buoyed_beam(o)
  for i, d in ipairs(r.path) do r.path[i] = d * 1e3 end
  return r.path, r.n
end

local air = run(nil)
local settled_air = air[#air]
local function row(name, path, n, expect)
  local cells = {}
  for _, d in ipairs(path) do cells[#cells + 1] = string.format("%5.2f", d) end
  print(string.format("%-38s %7d  %s   settled %5.2f mm, %5.1f %% of the expected %.2f mm", name, n,
    table.concat(cells, " "), path[#path], 100 * path[#path] / expect, expect))
end
print(string.format("%-38s %7s  %s", "medium", "particles", "tip deflection (mm) at T/10, 2T/10, ... T = "
  .. (opts.T or 1) .. " s"))
row("air", air, 360, settled_air)
local cases = QUICK and { { 2.5, opts.K } } or
  { { 1.25, 2.2e9 }, { 2, 2.2e9 }, { 2.5, 2.2e9 }, { 2.5, 2.2e7 }, { 2.5, 2.2e6 }, { 2.5, 2.2e5 }, { 2.5, 2.2e4 } }
for _, c in ipairs(cases) do
  local path, n = run(c[1], c[2])
  row(string.format("water, %.3g per cell/axis, %.2g Pa", c[1], c[2]), path, n, settled_air * 2 / 3)
end
