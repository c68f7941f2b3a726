-- tools/fem/finger2d_mpm.lua: cqlua's 2D pneumatic finger (examples/pneumatic2d.lua) as a forward pressure sweep only,
-- parameterised by the grid spacing, for the comparison with the independent finite-element solution of
-- tools/fem/finger2d_fem.py (issue 62 item 6(b); tools/fem/README.md).
--
-- usage: build/bin/cqlua tools/fem/finger2d_mpm.lua [dx_mm=2.5] [pressures_kPa=0.5,1,1.5] [hold_s=0.8] [mesh_mm]
--        [every_s=0.1]
--   mesh_mm defaults to 0.8 dx (the example's 2 mm at 2.5 mm cells: the same particles per cell at every dx).
--
-- Everything physical is the example's: the same drawing (scenes/finger2d.geo meshed by gmsh, mm -> m), rotation,
-- DragonSkin-30 preset, closed chamber with its Nanson load (max 20 kPa), gravity 9.8, damping 25/s, implicit 1 ms
-- steps, each pressure ramped over 0.1 s from the rest state and held. The tip is the mean of the particles within
-- 3 mm of the free end at rest; its displacement is taken from the unpressurised, gravity-loaded finger (the 0 kPa
-- run, held as long).
--
-- The clamp. The example's sticky top band is 3 cells thick: grid nodes j >= res - 3 (engine/stages/grid.h
-- node_bcs), i.e. y >= (res - 3) dx, and the base sits at (res - 1.6) dx, so the drawing's first 1.4 cells (3.5 mm at
-- 2.5 mm cells) lie inside the band's nodes. That 3.5 mm is what the finite-element model clamps (its Dirichlet line
-- at x = 3.5 mm of the drawing). At a finer dx the band edge is kept at the same 3.5 mm of the drawing, so both sides
-- converge to the same clamp: the band gets t = ceil(1.4 * 2.5 / dx + 1.6) cells and the base sits at
-- (res - t + 3.5 mm / dx) dx (at dx = 1.25 mm: a 5-cell band, the base 2.2 cells below the grid's top row index res).
-- The grid keeps the example's physical size (res scaled by 2.5 / dx) and the finger's position (X0 = 60 mm).
local cq = require "cq"

local A = arg or {}
local DXMM = tonumber(A[1]) or 2.5
local PRESSURES = {}
for v in (A[2] or "0.5,1,1.5"):gmatch("[^,]+") do PRESSURES[#PRESSURES + 1] = tonumber(v) end
local HOLD = tonumber(A[3]) or 0.8
local MESH = tonumber(A[4]) or 0.8 * DXMM
local EVERY = tonumber(A[5]) or 0.1
local RAMP, DT, P_MAX = 0.1, 1e-3, 20e3
local STEPS = math.floor((RAMP + HOLD) / DT + 0.5)
local PRINT_EVERY = math.max(1, math.floor(EVERY / DT + 0.5))

local CLAMP_MM = 3.5 -- the drawing's length inside the band's nodes (the example's 1.4 cells of 2.5 mm)
local DX = DXMM * 1e-3
local scale = 2.5 / DXMM
local RES = { math.floor(48 * scale + 0.5), math.floor(56 * scale + 0.5) }
local BAND = math.ceil(CLAMP_MM / DXMM + 1.6 - 1e-9) -- 3 at 2.5 mm, 5 at 1.25 mm
local UBASE = RES[2] - BAND + CLAMP_MM / DXMM -- the base's height in cells (54.4 at 2.5 mm: the example's)

local r = cq.robot { dim = 2 }
local finger = r:gmsh { path = "scenes/finger2d.geo", scale = 1e-3, offset = { 0, 0 }, mesh_size = MESH,
  material = { preset = "dragonskin30" } }
local X0, Y0 = 0.06, UBASE * DX
for _, p in ipairs(finger.particles) do
  local x = r.x[p]
  x[1], x[2] = X0 + x[2], Y0 - x[1]
end
local wall = finger.chambers.chamber
for i, nrm in ipairs(wall.normal) do wall.normal[i] = { nrm[2], -nrm[1] } end
r:chamber { wall = wall, max = P_MAX }

local world, s0 = r:world { res = RES, dx = DX, dt = DT, gravity = { 0, -9.8 }, damping = 25,
  walls = { top = { type = "sticky", thickness = BAND } }, integrator = "implicit" }

local n, tip, ymin = world.n, {}, math.huge
for p = 0, n - 1 do ymin = math.min(ymin, s0.x[n + p]) end
for p = 0, n - 1 do if s0.x[n + p] < ymin + 3e-3 then tip[#tip + 1] = p + 1 end end
print(string.format("finger2d_mpm: dx %.4g mm, res %dx%d, band %d cells (nodes j >= %d, y >= %.4f m), base at %.2f " ..
  "cells (%.4f m), clamp %.2f mm of the drawing, mesh %.3g mm, %d particles, %d tip particles, hold %.2f s",
  DXMM, RES[1], RES[2], BAND, RES[2] - BAND, (RES[2] - BAND) * DX, UBASE, Y0, (UBASE - (RES[2] - BAND)) * DXMM, MESH,
  n, #tip, HOLD))
io.stdout:flush()

-- One pressure from the rest state: ramp, hold; the tip every EVERY seconds; the tip's mean position at the end.
local function settle(kPa, log)
  local s = s0:copy()
  local t0 = os.clock()
  local trace = {}
  for k = 1, STEPS do
    world:step(s, { kPa * 1e3 / P_MAX * math.min(1, k * DT / RAMP) })
    if k % PRINT_EVERY == 0 or k == STEPS then
      local t = s:mean("x", tip)
      trace[#trace + 1] = { k * DT, t }
    end
  end
  return s:mean("x", tip), trace, os.clock() - t0
end

local wall0 = os.time()
local rest, rtrace, rcpu = settle(0)
local tip0 = s0:mean("x", tip)
print(string.format("finger2d_mpm: 0 kPa (gravity only): tip at (%.5f, %.5f) m, sagged (%.4f, %.4f) mm from the drawing, " ..
  "%.1f s cpu", rest[1], rest[2], (rest[1] - tip0[1]) * 1e3, (rest[2] - tip0[2]) * 1e3, rcpu))
for _, e in ipairs(rtrace) do
  print(string.format("  t %.2f s: tip (%.4f, %.4f) mm from its end position", e[1], (e[2][1] - rest[1]) * 1e3,
    (e[2][2] - rest[2]) * 1e3))
end
io.stdout:flush()
local rows = {}
for _, kPa in ipairs(PRESSURES) do
  local ok, t, trace, cpu = pcall(settle, kPa)
  if not ok then
    print(string.format("finger2d_mpm: %g kPa: FAILED: %s", kPa, tostring(t)))
    rows[#rows + 1] = string.format("%g,nan,nan,nan", kPa)
  else
    local dx, dy = (t[1] - rest[1]) * 1e3, (t[2] - rest[2]) * 1e3
    print(string.format("finger2d_mpm: %g kPa: tip moved %.4f mm (dx %.4f, dy %.4f mm), %.1f s cpu", kPa,
      math.sqrt(dx * dx + dy * dy), dx, dy, cpu))
    for _, e in ipairs(trace) do
      local ex, ey = (e[2][1] - rest[1]) * 1e3, (e[2][2] - rest[2]) * 1e3
      print(string.format("  t %.2f s: tip moved %.4f mm (dx %.4f, dy %.4f)", e[1], math.sqrt(ex * ex + ey * ey), ex, ey))
    end
    rows[#rows + 1] = string.format("%g,%.5f,%.5f,%.5f", kPa, dx, dy, math.sqrt(dx * dx + dy * dy))
  end
  io.stdout:flush()
end
print("finger2d_mpm: csv (dx_mm=" .. DXMM .. ", mesh_mm=" .. MESH .. ", hold_s=" .. HOLD .. ")")
print("pressure_kPa,tip_dx_mm,tip_dy_mm,tip_mm")
for _, row in ipairs(rows) do print(row) end
print(string.format("finger2d_mpm: wall time %d s", os.time() - wall0))
