-- Issue 62 item 4: a wall at an angle to the grid needs more cells across it than one along a grid axis. The
-- cantilever of docs/experiments/wall_cells.lua (Mooney-Rivlin, shear modulus 6 kPa, height H = 1/16 m, free length
-- 0.5 m, gravity 10 perpendicular to it, damping 20/s, implicit 2 ms, 300 steps, the default volumetric term) turned
-- by theta about the face of its clamp; the clamp is a sticky band H thick (k cells), the beam's root 0.4 H from the
-- grid's edge, so the clamped part is the same length of beam at every k. The tip's sag perpendicular to the beam at
-- k cells across its height, against the same beam at the finest k (8: 3.5 % from 6 cells at 30 degrees).
-- Run: cqlua docs/experiments/wall_angle.lua [k=3,4,6,8] [theta_deg=0,15,30,45] [bulk/shear=1e3] [particles per cell
--      and axis=2]
local cq = require "cq"
local now = require("cq.clock").now

local MU, H, LEN = 6000, 1 / 16, 0.5
local function list(s, d)
  local t = {}
  for v in (s or d):gmatch("[^,]+") do t[#t + 1] = tonumber(v) end
  return t
end
local A = arg or {}
local KS, THETAS = list(A[1], "3,4,6,8"), list(A[2], "0,15,30,45")
local RATIO, PPC = tonumber(A[3]) or 1e3, tonumber(A[4]) or 2

local function sag(k, deg)
  local th, dx = math.rad(deg), H / k
  local c, s = math.cos(th), math.sin(th)
  local x0 = 0.4 * H
  local size = LEN + H - x0 -- the free length LEN from the band's face at H
  local r = cq.robot { dim = 2 }
  local g = r:box { offset = { x0, 0.3 }, size = { size, H }, spacing = dx / PPC,
    material = { model = "mooney_rivlin", c10 = MU / 2, c01 = 0, bulk = RATIO * MU, density = 1 } }
  local ox, oy = H, 0.3 + H / 2 -- turned about the band's face on the beam's axis
  for _, p in ipairs(g.particles) do
    local x = r.x[p]
    local a, b = x[1] - ox, x[2] - oy
    x[1], x[2] = ox + c * a - s * b, oy + s * a + c * b
  end
  local w, st = r:world { res = { math.ceil((x0 + size * c + H) / dx) + 6, math.ceil((0.7 + size * s) / dx) },
    dx = dx, dt = 2e-3, gravity = { 10 * s, -10 * c }, damping = 20, threads = 1, integrator = "implicit",
    precision = "f64", walls = { left = { type = "sticky", thickness = math.floor(k + 0.5) } } }
  local n, amax, tip = st.n, -math.huge, {}
  local function axial(p) return (st.x[p] - ox) * c + (st.x[n + p] - oy) * s end
  for p = 0, n - 1 do amax = math.max(amax, axial(p)) end
  for p = 0, n - 1 do if axial(p) > amax - 1e-9 then tip[#tip + 1] = p + 1 end end
  local t0, clock = st:mean("x", tip), now()
  for _ = 1, 300 do w:step(st) end
  local t1 = st:mean("x", tip)
  w:release()
  return (t1[1] - t0[1]) * s - (t1[2] - t0[2]) * c, n, now() - clock
end

print(string.format("cantilever H = %.4f m, free length %.2f m, bulk / shear %g, %g particles per cell and axis", H,
  LEN, RATIO, PPC))
print("theta_deg,cells,particles,sag_m,over_finest,seconds")
for _, deg in ipairs(THETAS) do
  local rows, finest = {}, nil
  for _, k in ipairs(KS) do
    local d, n, secs = sag(k, deg)
    rows[#rows + 1] = { k, n, d, secs }
    finest = d -- the last k given is the reference
  end
  for _, r in ipairs(rows) do
    print(string.format("%g,%g,%d,%.6f,%.4f,%.1f", deg, r[1], r[2], r[3], r[3] / finest, r[4]))
  end
  io.stdout:flush()
end
