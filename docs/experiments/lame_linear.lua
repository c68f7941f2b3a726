-- docs/experiments/lame_linear.lua: the thick sphere (dim=3) or plane-strain tube (dim=2) of
-- docs/experiments/sphere_inflation.lua in the linear range, against Lamé's closed form u(r), fitted over every
-- particle (u_r against u_exact at each particle's reference radius); the set-up of tests/chamber_spec.lua's checks.
-- Keep p / mu at 0.1 % (kPa=0.05): at 1 % (kPa=0.5) the neo-Hookean body's own stiffening already moves the fit by
-- 1.1 % in 2D and 0.5 % in 3D (docs/results/history.md, the forty-fifth session).
-- usage: build/bin/cqlua docs/experiments/lame_linear.lua [dim=3] [h=1.5] [kPa=0.5] [surface=1|0] [bulk=20]
--          [threads=2] [integrator=implicit] [dt=5e-3] [T=0.6] [volumetric=solids] [damping=40] [pressure=lagged]
local cq = require "cq"
local o = { dim = 3, A = 10, B = 20, h = 1.5, ppc = 2, kPa = 0.5, bulk = 20, integrator = "implicit", dt = 5e-3, T = 0.6,
  threads = 2, volumetric = "solids", damping = 40, mu = 48.4e3, pressure = "lagged" }
for _, a in ipairs(arg or {}) do local k, v = a:match("^([%w_]+)=(.+)$"); o[k] = tonumber(v) or v end
local D, mu, K = o.dim, o.mu, o.bulk * o.mu
local A, B, h = o.A * 1e-3, o.B * 1e-3, o.h * 1e-3
local p = o.kPa * 1e3
local nu = (3 * K - 2 * mu) / (2 * (3 * K + mu))
local E = 2 * mu * (1 + nu)
local function uex(r)
  if D == 3 then return p * A ^ 3 / (E * (B ^ 3 - A ^ 3)) * ((1 - 2 * nu) * r + (1 + nu) * B ^ 3 / (2 * r * r)) end
  return (1 + nu) * p * A ^ 2 / (E * (B ^ 2 - A ^ 2)) * ((1 - 2 * nu) * r + B ^ 2 / r)
end
local dx = o.ppc * h
local half = B + 6 * dx
local res = math.ceil(2 * half / dx)
local c, resv, zero = {}, {}, {}
for a = 1, D do c[a], resv[a], zero[a] = res * dx / 2, res, 0 end
local r = cq.robot { dim = D }
local g = r:ball { center = c, radius = B, spacing = h,
  material = { model = "mooney_rivlin", c10 = mu / 2, c01 = 0, bulk = K, density = 1080 },
  cavities = { { center = c, radius = A, name = "cavity" } } }
r:chamber { wall = g.chambers.cavity, max = p, surface = o.surface ~= 0 }
local w, s = r:world { res = resv, dx = dx, dt = o.dt, gravity = zero, damping = o.damping, integrator = o.integrator,
  threads = o.threads, volumetric = o.volumetric, implicit = o.integrator == "implicit" and { pressure = o.pressure } or nil }
local n = w.n
local R, X0 = {}, {}
for i = 0, n - 1 do
  local d2 = 0
  for a = 0, D - 1 do X0[a * n + i] = s.x[a * n + i]; d2 = d2 + (s.x[a * n + i] - c[a + 1]) ^ 2 end
  R[i] = math.sqrt(d2)
end
local steps = math.ceil(o.T / w.dt - 1e-9)
local function fitnow()
  local num, den = 0, 0
  for i = 0, n - 1 do
    local ur = 0
    for a = 0, D - 1 do ur = ur + (s.x[a * n + i] - X0[a * n + i]) * (X0[a * n + i] - c[a + 1]) / R[i] end
    local ue = uex(R[i]); num, den = num + ur * ue, den + ue * ue
  end
  return num / den
end
local trace = {}
for k = 1, steps do w:step(s, { math.min(1, k * w.dt / (o.T / 3)) }); if k % math.max(1, math.floor(steps / 12)) == 0 then trace[#trace + 1] = string.format("%.3f", fitnow()) end end
print("trace " .. table.concat(trace, " "))
-- radial displacement per particle
local num, den, inner_s, inner_e, outer_s, outer_e = 0, 0, 0, 0, 0, 0
for i = 0, n - 1 do
  local ur = 0
  for a = 0, D - 1 do ur = ur + (s.x[a * n + i] - X0[a * n + i]) * (X0[a * n + i] - c[a + 1]) / R[i] end
  local ue = uex(R[i])
  num, den = num + ur * ue, den + ue * ue
  if R[i] < A + h then inner_s, inner_e = inner_s + ur, inner_e + ue end
  if R[i] > B - h then outer_s, outer_e = outer_s + ur, outer_e + ue end
end
-- the chamber's total area
local area = 0
for _, v in ipairs(g.chambers.cavity.area) do area = area + v end
local exact_area = D == 3 and 4 * math.pi * A * A or 2 * math.pi * A
print(string.format("dim %d h %.3g bulk %g nu %.4f: fit %.4f inner %.4f outer %.4f (n %d, wall area/exact %.4f)",
  D, o.h, o.bulk, nu, num / den, inner_s / inner_e, outer_s / outer_e, n, area / exact_area))
if w.solver_stats then local st = w:solver_stats(); local t = {} for k, v in pairs(st) do if type(v) ~= "table" then t[#t+1] = k .. "=" .. tostring(v) end end; table.sort(t); print(table.concat(t, " ")) end
