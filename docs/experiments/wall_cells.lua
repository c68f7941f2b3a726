-- Issue 62 item 4: how many cells a wall needs across its thickness to bend right. The cantilever of
-- tests/volumetric_spec.lua (Mooney-Rivlin, shear modulus 6 kPa, bulk / shear 1e3, height H = 1/16 m, free length
-- 0.5 m from the sticky wall band's face at 3 cells, its root 1.25 cells from the domain's edge, gravity 10, damping
-- 20/s, implicit 2 ms, the default volumetric term) on grids of H / dx = k cells across its height: the settled sag
-- (300 steps) against Timoshenko's plane-strain incompressible beam and against this run's finest grid's.
-- docs/modelling.md takes as converged the finest with 4 particles per cell and axis (k = 8: 1.038 x Timoshenko).
-- Run: cqlua docs/experiments/wall_cells.lua [k=1,1.5,2,3,4,6,8] [ratio=1e3] [particles per cell and axis=2]
local cq = require "cq"
local now = require("cq.clock").now

local MU, H, LEN = 6000, 1 / 16, 0.5
local ks = {}
for v in ((arg and arg[1]) or "1,1.5,2,3,4,6,8"):gmatch("[^,]+") do ks[#ks + 1] = tonumber(v) end
local RATIO = tonumber(arg and arg[2]) or 1e3
local PPC = tonumber(arg and arg[3]) or 2

local function sag(k)
  local dx = H / k
  local x0 = 1.25 * dx -- in the band (its nodes 0..2 cells), as the test's 0.02 m at dx = 1/64
  local size = LEN + 3 * dx - x0 -- free length LEN from the band's face at 3 dx
  local r = cq.robot { dim = 2 }
  r:box { offset = { x0, 0.5 }, size = { size, H }, spacing = dx / PPC,
    material = { model = "mooney_rivlin", c10 = MU / 2, c01 = 0, bulk = RATIO * MU, density = 1 } }
  local w, s = r:world { res = { math.ceil((x0 + size) / dx) + 6, math.ceil(0.8 / dx) }, dx = dx, dt = 2e-3,
    gravity = { 0, -10 }, damping = 20, threads = 1, walls = { left = { type = "sticky", thickness = 3 } },
    integrator = "implicit", precision = "f64" }
  local maxx, tip = -1, {}
  for p = 0, s.n - 1 do maxx = math.max(maxx, s.x[p]) end
  for p = 0, s.n - 1 do if s.x[p] > maxx - 1e-9 then tip[#tip + 1] = p + 1 end end
  local L = maxx + dx / (2 * PPC) - 3 * dx -- the beam's end (half a spacing past the last particle) from the face
  local y0 = s:mean("x", tip)[2]
  local t0 = now()
  for _ = 1, 300 do w:step(s) end
  local d = y0 - s:mean("x", tip)[2]
  local beam = 3 * 10 * L ^ 4 / (8 * MU * H * H) + 10 * L * L / (2 * (5 / 6) * MU)
  w:release()
  return d / beam, d, L, s.n, now() - t0
end

print(string.format("cantilever H = %.4f m, free length %.3f m, bulk / shear %g, %g particles per cell and axis", H,
  LEN, RATIO, PPC))
local rows = {}
for _, k in ipairs(ks) do rows[#rows + 1] = { k, sag(k) } end
local finest = rows[#rows][2]
print("| cells across H | particles across H | sag (mm) | free length (m) | / Timoshenko | / finest's | particles | s |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for _, r in ipairs(rows) do
  print(string.format("| %g | %g | %.3f | %.4f | %.3f | %.3f | %d | %.1f |", r[1], PPC * r[1], 1e3 * r[3], r[4], r[2],
    r[2] / finest, r[5], r[6]))
end
