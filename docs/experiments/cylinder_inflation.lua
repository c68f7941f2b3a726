-- docs/experiments/cylinder_inflation.lua: a thick-walled Mooney-Rivlin tube inflated by its cavity's pressure, in
-- plane strain, far into large strain, against the exact incompressible solution:
--   p = integral from lambda_b to lambda_a of W'(l) / (l^2 - 1) dl,  W(l) = (c10 + c01) (l^2 + l^-2 - 2),
--   lambda = r / R, and r^2 - R^2 = a^2 - A^2 the same for every particle (incompressibility); it tends to the
--   thin-tube law p = (H / A) W'(lambda) / lambda as B -> A.
-- The 2D sibling of sphere_inflation.lua (same options), which runs in seconds: it showed the pressurised cavity's
-- shortfall to go with the particles per cell (docs/results/history.md, the fortieth session).
--
-- usage: build/bin/cqlua docs/experiments/cylinder_inflation.lua [A=10] [B=20] [h=1] [ppc=2] [kPa=20] [bulk=1e3]
--          [volumetric=solids] [dt=5e-3] [T=0.8] [integrator=implicit] [c10=24.2e3] [c01=0] [margin=0 (mm)] ...
--   ppc: particles per grid cell and axis (dx = ppc h); margin: extra room between the tube and the grid's walls
local cq = require "cq"
local now = require("cq.clock").now

local o = { A = 10, B = 20, h = 1, kPa = "20", bulk = 1e3, volumetric = "solids", dt = 5e-3, T = 0.8, ppc = 2, margin = 0,
  integrator = "implicit", threads = 1, damping = 40, trace = 0, precond = "auto", tol = 0,
  pressure = "lagged", closed = 1, ivolume = "linear", c10 = 24.2e3, c01 = 0, own = 0 }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^([%w_]+)=(.+)$")
  if not k or o[k] == nil then error("cylinder_inflation: unknown argument " .. a, 0) end
  o[k] = tonumber(v) or v
end
local C10, C01, RHO = o.c10, o.c01, 1080 -- default: seed 003's DragonSkin-30 fit
local MU = 2 * (C10 + C01)
local A, B, h = o.A * 1e-3, o.B * 1e-3, o.h * 1e-3

-- The exact pressure for inner stretch la (Simpson's rule on the integral, which is smooth from lb to la > 1).
local function exact_pressure(la)
  local lb = math.sqrt(1 + (la ^ 2 - 1) * (A / B) ^ 2)
  local function f(l)
    return (C10 + C01) * (2 * l - 2 * l ^ -3) / (l ^ 2 - 1)
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
  local b = math.sqrt(B ^ 2 + A ^ 2 * (la ^ 2 - 1)) -- the outer radius it reaches
  local dx = o.ppc * h
  local half = b + 5 * dx + o.margin * 1e-3 -- room for the walls (3 cells) and the grid's stencil
  local res = math.ceil(2 * half / dx)
  local c = { res * dx / 2, res * dx / 2 }
  local r = cq.robot { dim = 2 }
  local g = r:ball { center = c, radius = B, spacing = h,
    material = { model = "mooney_rivlin", c10 = C10, c01 = C01, bulk = o.bulk * MU, density = RHO },
    cavities = { { center = c, radius = A, name = "cavity" } } }
  r:chamber { wall = g.chambers.cavity, max = p, closed = o.closed == 1 }
  local w, s = r:world { res = { res, res }, dx = dx, dt = o.dt, gravity = { 0, 0 }, damping = o.damping,
    integrator = o.integrator, threads = o.threads, volumetric = o.volumetric,
    volumetric_own = o.own > 0 and o.own or nil,
    implicit = o.integrator == "implicit" and { volume = o.ivolume, precond = o.precond, tol = o.tol,
      pressure = o.pressure } or nil }
  local n = w.n
  local R3 = {}
  for i = 0, n - 1 do
    local d2 = 0
    for a = 0, 1 do d2 = d2 + (s.x[a * n + i] - c[a + 1]) ^ 2 end
    R3[i] = d2
  end
  -- the inner stretch from every particle: a^3 - A^3 = mean(r^3 - R^3)
  local function stretch()
    local sum = 0
    for i = 0, n - 1 do
      local d2 = 0
      for a = 0, 1 do d2 = d2 + (s.x[a * n + i] - c[a + 1]) ^ 2 end
      sum = sum + d2 - R3[i]
    end
    return (1 + sum / n / A ^ 2) ^ (1 / 2)
  end
  local steps, ramp = math.ceil(o.T / w.dt - 1e-9), 0.3
  local t0 = now()
  local la_sim
  for k = 1, steps do
    local ok, e = pcall(w.step, w, s, { math.min(1, k * w.dt / ramp) })
    if not ok then
      print(string.format("%5.1f kPa: failed at t = %.3f s: %s", kPa, k * w.dt, tostring(e):sub(1, 600)))
      return
    end
    if o.trace > 0 and k % o.trace == 0 then
      local vmax = 0
      for i = 0, 2 * n - 1 do vmax = math.max(vmax, math.abs(s.v[i])) end
      print(string.format("    t = %.3f s: stretch %.4f, fastest %.3g m/s", k * w.dt, stretch(), vmax))
    end
  end
  la_sim = stretch()
  print(string.format("%5.1f kPa (p / mu %.3f): inner stretch %.4f, exact %.4f, error in (stretch - 1) %+.1f %% " ..
    "(%d particles, grid %d^2, %.0f s)", kPa, p / MU, la_sim, la, 100 * ((la_sim - 1) / (la - 1) - 1), n, res,
    now() - t0))
end

print(string.format("tube A = %g mm, B = %g mm, spacing %g mm, bulk / shear %g, %s, %s dt %g s", o.A, o.B, o.h,
  o.bulk, o.volumetric, o.integrator, o.dt))
for v in tostring(o.kPa):gmatch("[^,]+") do run(tonumber(v)) end
