-- tools/water_lock2d.lua: does a stiff fluid lock against a soft solid inside it? (issue 11, docs/benchmarks.md "Issue
-- 11: the water locks"). A 2D beam (8 x 75 mm, neo-Hookean E = 1e7 Pa, nu 0.3, density 3000) hangs from a sticky
-- ceiling under a sideways gravity of 9.8 m/s^2, in air and in a closed tank of water (density 1000). At rest a fluid
-- only buoys it: the load in water is (3000 - 1000) / 3000 of air's, so the tip should deflect 2/3 as far (the
-- cantilever's q L^4 / (8 E I) = 1.9 mm in air). The water is sampled at 1.25, 2 and 2.5 particles per cell and axis
-- and its bulk modulus varied; implicit 5 ms substeps, damping 25/s, 1 s. Prints the tip's deflection every 0.1 s
-- and the settled value against the expected one. A few seconds per run.
--
-- usage: build/bin/cqlua tools/water_lock2d.lua [quick] [averaged]
--   quick: the 2.2 GPa water at 2.5 per cell and axis only; averaged: the world's volumetric = "averaged"
local cq = require "cq"
local DX, RES = 2.5e-3, { 40, 48 }
local QUICK, VOLUMETRIC = false, "particle"
for _, a in ipairs(arg or {}) do
  if a == "quick" then QUICK = true elseif a == "averaged" then VOLUMETRIC = a
  else error("water_lock2d: unknown argument " .. a .. " (quick, averaged)", 0) end
end
local BX0, BX1, BY0, BY1 = 45e-3, 53e-3, 40e-3, 115e-3 -- the beam; its top 2.5 mm inside the sticky band

local function run(per_axis, bulk)
  local r = cq.robot { dim = 2 }
  r:box { offset = { BX0, BY0 }, size = { BX1 - BX0, BY1 - BY0 }, spacing = DX / 2, name = "beam",
    material = { model = "neohookean", E = 1e7, nu = 0.3, density = 3000 } }
  local nb = #r.x
  if per_axis then -- the tank from the walls' first nodes to below the sticky band, less the beam
    local h, lo, hi, top = DX / per_axis, 2 * DX, (RES[1] - 3) * DX, 112.5e-3
    r:box { offset = { lo, lo }, size = { math.floor((hi - lo) / h + 1e-9) * h, math.floor((top - lo) / h + 1e-9) * h },
      spacing = h, name = "water", material = { preset = "water", bulk = bulk },
      keep = function(x) return x[1] < BX0 - h / 4 or x[1] > BX1 + h / 4 or x[2] < BY0 - h / 4 end }
  end
  local robot, warn = require "cq.robot", nil -- the sparse-fluid warning is part of what is measured here
  warn, robot.warn = robot.warn, function() end
  local w, s = r:world { res = RES, dx = DX, dt = 0.005, gravity = { 9.8, 0 }, damping = 25, integrator = "implicit", volumetric = VOLUMETRIC,
    walls = { all = { type = "slip", thickness = 3 }, top = { type = "sticky", thickness = 3 } } }
  robot.warn = warn
  local n, tip = w.n, {}
  for i = 0, nb - 1 do if s.x[n + i] < BY0 + 2e-3 then tip[#tip + 1] = i end end
  local function tip_x()
    local m = 0
    for _, i in ipairs(tip) do m = m + s.x[i] end
    return m / #tip
  end
  local x0, path = tip_x(), {}
  for k = 1, 200 do
    w:step(s, {})
    if k % 20 == 0 then path[#path + 1] = (tip_x() - x0) * 1e3 end
  end
  w:release()
  return path, n
end

local air = run(nil)
local settled_air = air[#air]
local function row(name, path, n, expect)
  local cells = {}
  for _, d in ipairs(path) do cells[#cells + 1] = string.format("%5.2f", d) end
  print(string.format("%-38s %7d  %s   settled %5.2f mm, %5.1f %% of the expected %.2f mm", name, n,
    table.concat(cells, " "), path[#path], 100 * path[#path] / expect, expect))
end
print(string.format("%-38s %7s  %s", "medium", "particles", "tip deflection (mm) at 0.1, 0.2, ... 1 s"))
row("air", air, 360, settled_air)
local cases = QUICK and { { 2.5, 2.2e9 } } or
  { { 1.25, 2.2e9 }, { 2, 2.2e9 }, { 2.5, 2.2e9 }, { 2.5, 2.2e7 }, { 2.5, 2.2e6 }, { 2.5, 2.2e5 }, { 2.5, 2.2e4 } }
for _, c in ipairs(cases) do
  local path, n = run(c[1], c[2])
  row(string.format("water, %.3g per cell/axis, %.2g Pa", c[1], c[2]), path, n, settled_air * 2 / 3)
end
