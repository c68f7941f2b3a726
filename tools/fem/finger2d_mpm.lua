-- tools/fem/finger2d_mpm.lua: cqlua's 2D pneumatic finger (examples/pneumatic2d.lua) as a forward pressure sweep only,
-- parameterised by the grid spacing, for the comparison with the independent finite-element solution of
-- tools/fem/finger2d_fem.py (issue 62 item 6(b); tools/fem/README.md).
--
-- usage: build/bin/cqlua tools/fem/finger2d_mpm.lua [dx_mm=2.5] [pressures_kPa=0.5,1,1.5] [hold_s=0.8] [mesh_mm]
--        [every_s=0.1] [lateral_g] [variant]
--   mesh_mm defaults to 0.8 dx (the example's 2 mm at 2.5 mm cells: the same particles per cell at every dx);
--   pressures "none": no pressure sweep; every_s: how often the tip is printed during each settle;
--   lateral_g (m/s^2, world x): also the bending check, the tip under a sideways gravity (a force mass * g on every
--   particle, ramped like the pressure) with no pressure, from the same rest state;
--   variant: a diagnosis, not the example: "closed=false" (the chamber's raw Nanson forces, no net-force correction),
--   "pressure=implicit" (implicit.pressure), "volume=exact" (implicit.volume), "surface=false" (the pressure at the wall particles), "volumetric=particle", "own=64"
--   (volumetric_own), "error_tol=0.01" or "error_tol=false" (implicit.error_tol), "adapt=true" (implicit.adapt),
--   "cmax=true" (also print the largest |dt C|_F of a particle per print interval), "dump=PREFIX" (with unload=true:
--   write every particle's x and F at rest, loaded and unloaded to PREFIX_<kPa>.txt, a line each: x y F11 F12 F21 F22), "snap=PREFIX" (with "snap_from=0.4", "snap_every=10": every particle's reference x, x, v and F every
--   snap_every steps from snap_from s to PREFIX_<kPa>_<t>.txt), "dt=0.25e-3" (the step), "ramp=0.5" (the pressure's ramp, s; 0.1),
--   "gramp=0.3" (gravity as a force on every particle ramped over that time, s, instead of the world's sudden gravity), "split=true" (each of the 8 cavities its own
--   closed chamber, so each gets its own net-force and torque correction), "probe=true" (also print each chamber's shape as
--   tools/fem/finger2d_fem.py --probe does), "profile=true" (also print the sideways
--   deflection along the finger), "unload=true" (also ramp each pressure back to 0, hold, print where the tip is),
--   comma-separated.
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
for v in (A[2] or "0.5,1,1.5"):gmatch("[^,]+") do PRESSURES[#PRESSURES + 1] = tonumber(v) end -- "none": no sweep
local HOLD = tonumber(A[3]) or 0.8
local MESH = tonumber(A[4]) or 0.8 * DXMM
local EVERY = tonumber(A[5]) or 0.1
local LATERAL_G = tonumber(A[6]) -- the bending check: also the tip under a sideways gravity (m/s^2, world x), no pressure
-- Variants for diagnosis only (not the example): A[7] = "closed=false,pressure=implicit,dt=0.25e-3"
local VAR = {}
for k, v in (A[7] or ""):gmatch("([%w_]+)=([^,]+)") do VAR[k] = v end
local RAMP, DT, P_MAX = tonumber(VAR.ramp) or 0.1, tonumber(VAR.dt) or 1e-3, 20e3
local GRAMP = tonumber(VAR.gramp) -- gravity as a force ramped over GRAMP s (the world's gravity 0)
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
for i, o in ipairs(wall.offset) do wall.offset[i] = { o[2], -o[1] } end -- where on the wall the pressure acts
local NACT = 1
if VAR.split == "true" then
  -- diagnosis: each of the 8 cavities its own closed chamber (its own net-force and torque correction), all driven by
  -- the one pressure; a wall particle goes to the nearest chamber (the drawing's x: chamber i spans 10 + 11 i .. + 8)
  local parts = {}
  for i, p in ipairs(wall.particles) do
    local xd = (Y0 - r.x[p][2]) * 1e3
    local c = math.max(0, math.min(7, math.floor((xd - 14) / 11 + 0.5)))
    parts[c] = parts[c] or { particles = {}, normal = {}, area = {} }
    local q = parts[c]
    q.particles[#q.particles + 1], q.normal[#q.normal + 1], q.area[#q.area + 1] = p, wall.normal[i], wall.area[i]
  end
  NACT = 0
  for c = 0, 7 do
    r:chamber { wall = parts[c], max = P_MAX, closed = VAR.closed ~= "false" }
    NACT = NACT + 1
  end
else
  r:chamber { wall = wall, max = P_MAX, closed = VAR.closed ~= "false", surface = VAR.surface ~= "false" }
end

local world, s0 = r:world { res = RES, dx = DX, dt = DT, gravity = { 0, GRAMP and 0 or -9.8 }, damping = 25,
  walls = { top = { type = "sticky", thickness = BAND } }, integrator = "implicit",
  implicit = (VAR.pressure or VAR.volume or VAR.error_tol or VAR.adapt) and { pressure = VAR.pressure,
    volume = VAR.volume, error_tol = VAR.error_tol == "false" and false or tonumber(VAR.error_tol),
    adapt = VAR.adapt == "true" } or nil,
  volumetric = VAR.volumetric, volumetric_own = tonumber(VAR.own) }

local n, tip, ymin = world.n, {}, math.huge
for p = 0, n - 1 do ymin = math.min(ymin, s0.x[n + p]) end
for p = 0, n - 1 do if s0.x[n + p] < ymin + 3e-3 then tip[#tip + 1] = p + 1 end end
print(string.format("finger2d_mpm: dx %.4g mm, res %dx%d, band %d cells (nodes j >= %d, y >= %.4f m), base at %.2f " ..
  "cells (%.4f m), clamp %.2f mm of the drawing, mesh %.3g mm, %d particles, %d tip particles, hold %.2f s",
  DXMM, RES[1], RES[2], BAND, RES[2] - BAND, (RES[2] - BAND) * DX, UBASE, Y0, (UBASE - (RES[2] - BAND)) * DXMM, MESH,
  n, #tip, HOLD))
if A[7] then print("finger2d_mpm: variant (a diagnosis, not the example): " .. A[7]) end
io.stdout:flush()

-- One pressure from the rest state: ramp, hold; the tip every EVERY seconds; the tip's mean position at the end.
-- gx: a sideways gravity (m/s^2, world x) as a force mass * gx on every particle, ramped like the pressure.
local ffi = require "ffi"
local CMAX = 0 -- VAR.cmax: the largest |dt C|_F of a particle since the last print
local function settle(kPa, gx)
  local s = s0:copy()
  local t0 = os.clock()
  local trace = {}
  local force = (gx or GRAMP) and ffi.new("double[?]", 2 * n)
  for k = 1, STEPS do
    local ramp = math.min(1, k * DT / RAMP)
    if gx then for p = 0, n - 1 do force[p] = world.params.mass[p] * gx * ramp end end
    if GRAMP then
      local gr = math.min(1, k * DT / GRAMP)
      for p = 0, n - 1 do force[n + p] = -world.params.mass[p] * 9.8 * gr end
    end
    local u = {}
    for a = 1, NACT do u[a] = kPa * 1e3 / P_MAX * ramp end
    world:step(s, u, force)
    if VAR.snap and kPa > 0 and k * DT >= (tonumber(VAR.snap_from) or 0) - 1e-12 and k % (tonumber(VAR.snap_every) or 10) == 0 then
      -- diagnosis: every particle's reference x, x, v and F now (X0 Y0 x y vx vy F11 F12 F21 F22 per line)
      local f = assert(io.open(string.format("%s_%g_%.4f.txt", VAR.snap, kPa, k * DT), "w"))
      for p = 0, n - 1 do
        f:write(string.format("%.9g %.9g %.9g %.9g %.6g %.6g %.6g %.6g %.6g %.6g\n", s0.x[p], s0.x[n + p], s.x[p],
          s.x[n + p], s.v[p], s.v[n + p], s.F[p], s.F[n + p], s.F[2 * n + p], s.F[3 * n + p]))
      end
      f:close()
    end
    if VAR.cmax == "true" then -- diagnosis: the largest |dt C|_F of a particle in this step, and where it was reached
      local m = 0
      for p = 0, n - 1 do
        local q = s.C[p] ^ 2 + s.C[n + p] ^ 2 + s.C[2 * n + p] ^ 2 + s.C[3 * n + p] ^ 2
        if q > m then m = q end
      end
      CMAX = math.max(CMAX, math.sqrt(m) * DT)
    end
    if k % PRINT_EVERY == 0 or k == STEPS then
      if VAR.cmax == "true" then print(string.format("  t %.3f s: max |dt C| %.4g", k * DT, CMAX)); CMAX = 0 end
      local t = s:mean("x", tip)
      trace[#trace + 1] = { k * DT, t }
    end
  end
  local st = world:solver_stats(true)
  print(string.format("  solver: %d substeps (pieces), %d splits (%d for implicit.error_tol), %d kept above it, largest " ..
    "estimate kept %.3g cells", st.substeps, st.splits, st.error_splits, st.error_over, st.error_max))
  return s:mean("x", tip), trace, os.clock() - t0, s
end

-- Diagnosis (VAR.unload = "true"): after a pressure's settle, the pressure ramped back to 0 over RAMP and held as
-- long: where the tip comes back to (an elastic body returns to its rest state).
local function unload(s, kPa, rest)
  for k = 1, STEPS do
    local ramp = math.max(0, 1 - k * DT / RAMP)
    local u = {}
    for a = 1, NACT do u[a] = kPa * 1e3 / P_MAX * ramp end
    local force
    if GRAMP then
      force = ffi.new("double[?]", 2 * n)
      for p = 0, n - 1 do force[n + p] = -world.params.mass[p] * 9.8 end
    end
    world:step(s, u, force)
    if VAR.unload_trace == "true" and k % PRINT_EVERY == 0 then
      local t = s:mean("x", tip)
      print(string.format("  unloading, t %.2f s: tip (%.4f, %.4f) mm from rest", k * DT, (t[1] - rest[1]) * 1e3,
        (t[2] - rest[2]) * 1e3))
    end
  end
  return s:mean("x", tip)
end

local wall0 = os.time()
local rest, rtrace, rcpu, srest = settle(0)
-- The deflection profile (VAR.profile = "true"): the mean sideways (world x) displacement from the rest state of the
-- particles in 5 mm bins of the drawing's x, to compare with the finite-element one (where along the finger the
-- two part).
local function profile(s)
  local sum, cnt = {}, {}
  for p = 0, n - 1 do
    local b = math.floor((Y0 - s0.x[n + p]) * 1e3 / 5)
    sum[b] = (sum[b] or 0) + (s.x[p] - srest.x[p]) * 1e3
    cnt[b] = (cnt[b] or 0) + 1
  end
  local out = {}
  for b = 0, 19 do if cnt[b] then out[#out + 1] = string.format("%g:%.4f", 5 * b + 2.5, sum[b] / cnt[b]) end end
  return table.concat(out, " ")
end
-- The chambers' shape (VAR.probe = "true"): the probes of tools/fem/finger2d_fem.py --probe (its probe_points and
-- chamber_metrics), each the mean position of the particles within 0.75 mm of the probe in the drawing at rest.
local probes
local function chamber_metrics(s)
  if not probes then
    probes = {}
    for i = 0, 7 do
      local xl, xc, xr = 8.5 + 11 * i, 14 + 11 * i, 19.5 + 11 * i
      for _, q in ipairs({ { xl, 15 }, { xc, 15 }, { xr, 15 }, { xl, 4 }, { xc, 4 }, { xr, 4 }, { xl, 9.5 }, { xr, 9.5 } }) do
        local set = {}
        for p = 0, n - 1 do
          local xd, yd = (Y0 - s0.x[n + p]) * 1e3, (s0.x[p] - X0) * 1e3
          if (xd - q[1]) ^ 2 + (yd - q[2]) ^ 2 <= 0.75 ^ 2 then set[#set + 1] = p end
        end
        assert(#set > 0, "a probe with no particle")
        probes[#probes + 1] = set
      end
    end
  end
  local cur = {}
  for k, set in ipairs(probes) do
    local sx, sy = 0, 0
    for _, p in ipairs(set) do sx, sy = sx + (Y0 - s.x[n + p]) * 1e3, sy + (s.x[p] - X0) * 1e3 end
    cur[k] = { sx / #set, sy / #set }
  end
  local out = {}
  for i = 0, 7 do
    local q = function(j) return cur[8 * i + j + 1] end
    local function bulge(a, m, b)
      local dx, dy = q(b)[1] - q(a)[1], q(b)[2] - q(a)[2]
      local l = math.sqrt(dx * dx + dy * dy)
      return ((q(m)[1] - 0.5 * (q(a)[1] + q(b)[1])) * -dy + (q(m)[2] - 0.5 * (q(a)[2] + q(b)[2])) * dx) / l
    end
    local function dist(a, b) return math.sqrt((q(a)[1] - q(b)[1]) ^ 2 + (q(a)[2] - q(b)[2]) ^ 2) end
    out[#out + 1] = string.format("%d:%.4f,%.4f,%.4f,%.4f", i, bulge(0, 1, 2), bulge(3, 4, 5), dist(1, 4), dist(6, 7))
  end
  return table.concat(out, " ")
end
local tip0 = s0:mean("x", tip)
print(string.format("finger2d_mpm: 0 kPa (gravity only): tip at (%.5f, %.5f) m, sagged (%.4f, %.4f) mm from the drawing, " ..
  "%.1f s cpu", rest[1], rest[2], (rest[1] - tip0[1]) * 1e3, (rest[2] - tip0[2]) * 1e3, rcpu))
for _, e in ipairs(rtrace) do
  print(string.format("  t %.2f s: tip (%.4f, %.4f) mm from its end position", e[1], (e[2][1] - rest[1]) * 1e3,
    (e[2][2] - rest[2]) * 1e3))
end
if VAR.probe == "true" then print("finger2d_mpm: 0 kPa: chambers (roof bulge, floor bulge, height, spread mm) " ..
  chamber_metrics(srest)) end
io.stdout:flush()
if LATERAL_G then
  local t, trace, cpu = settle(0, LATERAL_G)
  local dx, dy = (t[1] - rest[1]) * 1e3, (t[2] - rest[2]) * 1e3
  print(string.format("finger2d_mpm: lateral gravity %g m/s^2 (world x), 0 kPa: tip moved %.4f mm (dx %.4f, dy %.4f mm), " ..
    "%.1f s cpu", LATERAL_G, math.sqrt(dx * dx + dy * dy), dx, dy, cpu))
  for _, e in ipairs(trace) do
    local ex, ey = (e[2][1] - rest[1]) * 1e3, (e[2][2] - rest[2]) * 1e3
    print(string.format("  t %.2f s: tip moved %.4f mm (dx %.4f, dy %.4f)", e[1], math.sqrt(ex * ex + ey * ey), ex, ey))
  end
  io.stdout:flush()
end
local rows = {}
for _, kPa in ipairs(PRESSURES) do
  local ok, t, trace, cpu, sfin = pcall(settle, kPa)
  if ok and VAR.unload == "true" then
    local su = sfin:copy()
    local back = unload(su, kPa, rest)
    if VAR.dump then -- diagnosis: x and F of every particle at rest, loaded and unloaded (x0 x1 F00 F01 F10 F11 per line)
      local f = assert(io.open(string.format("%s_%g.txt", VAR.dump, kPa), "w"))
      for _, st in ipairs({ srest, sfin, su }) do
        for p = 0, n - 1 do
          f:write(string.format("%.9g %.9g %.9g %.9g %.9g %.9g\n", st.x[p], st.x[n + p], st.F[p], st.F[n + p],
            st.F[2 * n + p], st.F[3 * n + p]))
        end
      end
      f:close()
    end
    print(string.format("finger2d_mpm: %g kPa, unloaded to 0 and held %.2f s: the tip is (%.4f, %.4f) mm from rest", kPa,
      RAMP + HOLD, (back[1] - rest[1]) * 1e3, (back[2] - rest[2]) * 1e3))
  end
  if ok and VAR.probe == "true" then print(string.format("finger2d_mpm: %g kPa: chambers (roof bulge, floor bulge, " ..
    "height, spread mm) %s", kPa, chamber_metrics(sfin))) end
  if ok and VAR.profile == "true" then print(string.format("finger2d_mpm: %g kPa: profile (x_mm:world dx_mm) %s", kPa,
    profile(sfin))) end
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
