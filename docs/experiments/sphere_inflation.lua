-- docs/experiments/sphere_inflation.lua: a thick-walled Mooney-Rivlin sphere (dim=3) or tube in plane strain (dim=2)
-- inflated by its cavity's pressure, far into large strain, against the exact incompressible solution (Ogden,
-- Non-linear elastic deformations, sec. 5.2.2), with D the dimension:
--   p = integral from lambda_b to lambda_a of W'(l) / (l^D - 1) dl,  lambda = r / R, r^D - R^D = a^D - A^D the same
--   for every particle (incompressibility);
--   sphere: W(l) = c10 (2 l^2 + l^-4 - 3) + c01 (l^4 + 2 l^-2 - 3); tube: W(l) = (c10 + c01) (l^2 + l^-2 - 2), which
--   tends to the thin-tube law p = (H / A) W'(lambda) / lambda as B -> A.
-- The body's stretch is measured from every particle at once: a^D - A^D = mean(r^D - R^D). The sphere checks what
-- the finger's chamber walls do at 5-20 kPa (seed 003's DragonSkin-30 fit has c01 / c10 = 19: no limit point, the
-- inflation stays stable), in the finger's units (mm, kPa); the tube runs in seconds and showed the chamber load's
-- shortfall that engine/terms/wall.h mends (docs/results/history.md, the fortieth and forty-first sessions).
--
-- usage: build/bin/cqlua docs/experiments/sphere_inflation.lua [dim=3] [A=10] [B] [h] [ppc=2] [kPa] [bulk=1e3]
--          [volumetric] [dt=5e-3] [T] [c10] [c01] [integrator=implicit] [threads=1] [pressure=lagged|implicit]
--          [own=0 (volumetric_own; 0: the default)] [closed=1 (0: an open chamber, no net-force correction)]
--          [ivolume=linear|exact] [margin=0 (mm)] [trace=0 (steps between lines)]
--          [surface=1 (0: robot:chamber{surface = false}, the pressure at the wall particles)]
--   defaults by dim: 3: B=13 h=1.25 kPa=5,10,15,20 volumetric=averaged T=1 c10=1.19e3 c01=23.028e3 (DragonSkin-30);
--                    2: B=20 h=1 kPa=20 volumetric=solids T=0.8 c10=24.2e3 c01=0 (NeoHookean, its shear modulus)
--   A, B  inner and outer radius (mm); h the particle spacing (mm); ppc particles per grid cell and axis (dx = ppc h)
--   bulk  bulk / shear modulus; margin extra room between the body and the grid's walls
local cq = require "cq"
local now = require("cq.clock").now

local o = { dim = 3, A = 10, bulk = 1e3, dt = 5e-3, integrator = "implicit", threads = 1, damping = 40, trace = 0,
  precond = "auto", tol = 0, pressure = "lagged", closed = 1, ivolume = "linear", own = 0, ppc = 2, margin = 0, surface = 1,
  B = false, h = false, kPa = false, volumetric = false, T = false, c10 = false, c01 = false }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^([%w_]+)=(.+)$")
  if not k or o[k] == nil then error("sphere_inflation: unknown argument " .. a, 0) end
  o[k] = tonumber(v) or v
end
local DEFAULTS = {
  [3] = { B = 13, h = 1.25, kPa = "5,10,15,20", volumetric = "averaged", T = 1, c10 = 1.19e3, c01 = 23.028e3 },
  [2] = { B = 20, h = 1, kPa = "20", volumetric = "solids", T = 0.8, c10 = 24.2e3, c01 = 0 } }
local DIM = o.dim
if not DEFAULTS[DIM] then error("sphere_inflation: dim must be 2 or 3", 0) end
for k, v in pairs(DEFAULTS[DIM]) do
  if o[k] == false then o[k] = v end
end
local C10, C01, RHO = o.c10, o.c01, 1080 -- default: seed 003's DragonSkin-30 fit
local MU = 2 * (C10 + C01)
local A, B, h = o.A * 1e-3, o.B * 1e-3, o.h * 1e-3

-- The exact pressure for inner stretch la (Simpson's rule on the integral, which is smooth from lb to la > 1).
local function exact_pressure(la)
  local lb = (1 + (la ^ DIM - 1) * (A / B) ^ DIM) ^ (1 / DIM)
  local function f(l)
    if DIM == 2 then return (C10 + C01) * (2 * l - 2 * l ^ -3) / (l ^ 2 - 1) end
    return (C10 * (4 * l - 4 * l ^ -5) + C01 * (4 * l ^ 3 - 4 * l ^ -3)) / (l ^ 3 - 1)
  end
  local n, s = 200, 0
  local d = (la - lb) / n
  for i = 0, n do
    local w = (i == 0 or i == n) and 1 or (i % 2 == 1 and 4 or 2)
    s = s + w * f(lb + i * d)
  end
  return s * d / 3
end
-- Its inverse by bisection.
local function exact_stretch(p)
  local lo, hi = 1 + 1e-9, 5
  for _ = 1, 100 do
    local mid = (lo + hi) / 2
    if exact_pressure(mid) < p then lo = mid else hi = mid end
  end
  return (lo + hi) / 2
end

local function run(kPa)
  local p = kPa * 1e3
  local la = exact_stretch(p)
  local b = (B ^ DIM + A ^ DIM * (la ^ DIM - 1)) ^ (1 / DIM) -- the outer radius it reaches
  local dx = o.ppc * h
  local half = b + 5 * dx + o.margin * 1e-3 -- room for the walls (3 cells) and the grid's stencil
  local res = math.ceil(2 * half / dx)
  local c, resv, zero = {}, {}, {}
  for a = 1, DIM do c[a], resv[a], zero[a] = res * dx / 2, res, 0 end
  local r = cq.robot { dim = DIM }
  local g = r:ball { center = c, radius = B, spacing = h,
    material = { model = "mooney_rivlin", c10 = C10, c01 = C01, bulk = o.bulk * MU, density = RHO },
    cavities = { { center = c, radius = A, name = "cavity" } } }
  r:chamber { wall = g.chambers.cavity, max = p, closed = o.closed == 1, surface = o.surface == 1 }
  local w, s = r:world { res = resv, dx = dx, dt = o.dt, gravity = zero, damping = o.damping,
    integrator = o.integrator, threads = o.threads, volumetric = o.volumetric,
    volumetric_own = o.own > 0 and o.own or nil,
    implicit = o.integrator == "implicit" and { volume = o.ivolume, precond = o.precond, tol = o.tol,
      pressure = o.pressure } or nil }
  local n = w.n
  local R3 = {}
  for i = 0, n - 1 do
    local d2 = 0
    for a = 0, DIM - 1 do d2 = d2 + (s.x[a * n + i] - c[a + 1]) ^ 2 end
    R3[i] = d2 ^ (DIM / 2)
  end
  -- the inner stretch from every particle: a^D - A^D = mean(r^D - R^D)
  local function stretch()
    local sum = 0
    for i = 0, n - 1 do
      local d2 = 0
      for a = 0, DIM - 1 do d2 = d2 + (s.x[a * n + i] - c[a + 1]) ^ 2 end
      sum = sum + d2 ^ (DIM / 2) - R3[i]
    end
    return (1 + sum / n / A ^ DIM) ^ (1 / DIM)
  end
  local steps, ramp = math.ceil(o.T / w.dt - 1e-9), 0.3
  local t0 = now()
  local la_sim
  for k = 1, steps do
    local ok, e = pcall(w.step, w, s, { math.min(1, k * w.dt / ramp) })
    if not ok then
      print(string.format("%5.1f kPa: failed at t = %.3f s: %s", kPa, k * w.dt, tostring(e):sub(1, 1200)))
      return
    end
    if o.trace > 0 and k % o.trace == 0 then
      local vmax, drift = 0, 0
      for i = 0, DIM * n - 1 do vmax = math.max(vmax, math.abs(s.v[i])) end
      for a = 0, DIM - 1 do -- the centre of mass from the cavity's centre (a free body: stays at 0)
        local m = 0
        for i = 0, n - 1 do m = m + s.x[a * n + i] end
        drift = drift + (m / n - c[a + 1]) ^ 2
      end
      print(string.format("    t = %.3f s: stretch %.4f, fastest %.3g m/s, centre of mass moved %.3g mm", k * w.dt,
        stretch(), vmax, 1e3 * math.sqrt(drift)))
    end
  end
  la_sim = stretch()
  print(string.format("%5.1f kPa (p / mu %.3f): inner stretch %.4f, exact %.4f, error in (stretch - 1) %+.1f %% " ..
    "(%d particles, grid %d^%d, %.0f s)", kPa, p / MU, la_sim, la, 100 * ((la_sim - 1) / (la - 1) - 1), n, res, DIM,
    now() - t0))
end

print(string.format("%s A = %g mm, B = %g mm, spacing %g mm (%g per cell), bulk / shear %g, %s, %s dt %g s",
  DIM == 3 and "sphere" or "tube", o.A, o.B, o.h, o.ppc, o.bulk, o.volumetric, o.integrator, o.dt))
for v in tostring(o.kPa):gmatch("[^,]+") do run(tonumber(v)) end
