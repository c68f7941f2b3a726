-- docs/experiments/wall_fit_bias.lua: how far the chamber wall term's fit of F (engine/terms/wall.h) puts the
-- pressure's area from the exact one, with no simulation: the exact incompressible inflation map of a thick sphere
-- (dim=3) or tube in plane strain (dim=2), r^D = R^D + (la^D - 1) A^D, applied to robot:ball's lattice, and the fit
-- of engine/terms/wall.c redone here (weights (1 - r^2 / rho^2)^2 over the solid particles within rho = rad h). The
-- load's area sum_k dA_k |cof(F_w) N_k| over the cavity's wall against the exact la^(D-1) times the area.
--
-- usage: build/bin/cqlua docs/experiments/wall_fit_bias.lua [dim=3] [A=10] [B=20] [h=1.5] [la=1.1607] [rad=1.6]
--          [quad=0] [atsurf=0]
--   la: the inner stretch (1.1607: the NeoHookean sphere, mu 48.4 kPa, at 20 kPa; the tube there: 1.4684)
--   quad=1: a quadratic fit (x_k - x_p = F d + H(d, d)); atsurf=1: F taken at the surface point X_p + offset
--   (needs rad >= 2.5 on a lattice: with two layers of neighbours on the wall's side the basis is singular: nan)
-- docs/experiments/wall_quad_fit.patch is the same quadratic fit on every wall in engine/terms/wall.c (the throwaway
-- build of docs/results/history.md's forty-fourth session; applies to commit b1a7268). Since the forty-sixth session
-- the engine takes it on walls 3 cells thick or more.
local cq = require "cq"
local o = { dim = 3, A = 10, B = 20, h = 1.5, la = 1.1607, rad = 1.6, quad = 0 }
for _, a in ipairs(arg or {}) do local k, v = a:match("^([%w_]+)=(.+)$"); o[k] = tonumber(v) or v end
local D, A, B, h = o.dim, o.A, o.B, o.h
local c = {}
for a = 1, D do c[a] = 0 end
local r = cq.robot { dim = D }
local g = r:ball { center = c, radius = B, spacing = h,
  material = { model = "mooney_rivlin", c10 = 1, c01 = 0, bulk = 100, density = 1 },
  cavities = { { center = c, radius = A, name = "cavity" } } }
local X = r.x
local N = #X
local add = (o.la ^ D - 1) * A ^ D
local function map(P)
  local R2 = 0
  for a = 1, D do R2 = R2 + P[a] ^ 2 end
  local R = math.sqrt(R2)
  local rr = (R ^ D + add) ^ (1 / D)
  local y = {}
  for a = 1, D do y[a] = P[a] * rr / R end
  return y
end
local x = {}
for i = 1, N do x[i] = map(X[i]) end
-- hash
local cs = o.rad * h
local cells = {}
local function key(P) local t = {} for a = 1, D do t[a] = math.floor(P[a] / cs) end return table.concat(t, ",") end
for i = 1, N do local k = key(X[i]); cells[k] = cells[k] or {}; table.insert(cells[k], i) end
local function nbrs(p, rho)
  local out = {}
  local base = {}
  for a = 1, D do base[a] = math.floor(X[p][a] / cs) end
  local R = math.ceil(rho / cs)
  local function rec(a, t)
    if a > D then
      local l = cells[table.concat(t, ",")]
      if l then for _, j in ipairs(l) do
        if j ~= p then local r2 = 0 for b = 1, D do r2 = r2 + (X[j][b] - X[p][b]) ^ 2 end
          if r2 < rho * rho then out[#out + 1] = j end end end end
      return
    end
    for d = -R, R do t[a] = base[a] + d; rec(a + 1, t) end
  end
  rec(1, {})
  return out
end
-- solve small dense system M z = b (Gauss)
local function solve(M, b, n)
  local A_ = {}
  for i = 1, n do A_[i] = {} for j = 1, n do A_[i][j] = M[i][j] end A_[i][n + 1] = b[i] end
  for i = 1, n do
    local piv = i
    for k = i + 1, n do if math.abs(A_[k][i]) > math.abs(A_[piv][i]) then piv = k end end
    A_[i], A_[piv] = A_[piv], A_[i]
    for k = i + 1, n do local f = A_[k][i] / A_[i][i]; for j = i, n + 1 do A_[k][j] = A_[k][j] - f * A_[i][j] end end
  end
  local z = {}
  for i = n, 1, -1 do local s = A_[i][n + 1]; for j = i + 1, n do s = s - A_[i][j] * z[j] end; z[i] = s / A_[i][i] end
  return z
end
local function basis(d)
  local phi = {}
  for a = 1, D do phi[#phi + 1] = d[a] end
  if o.quad == 1 then for a = 1, D do for b = a, D do phi[#phi + 1] = d[a] * d[b] end end end
  return phi
end
local wall = g.chambers.cavity
local sum_fit, sum_ex, sum_p = 0, 0, 0
for k, p in ipairs(wall.particles) do
  local rho = o.rad * h
  local nb = nbrs(p, rho)
  local m = D + (o.quad == 1 and D * (D + 1) / 2 or 0)
  local M = {}
  for i = 1, m do M[i] = {} for j = 1, m do M[i][j] = 0 end end
  local rhs = {}
  for a = 1, D do rhs[a] = {} for i = 1, m do rhs[a][i] = 0 end end
  for _, j in ipairs(nb) do
    local d, r2 = {}, 0
    for a = 1, D do d[a] = X[j][a] - X[p][a]; r2 = r2 + d[a] ^ 2 end
    local w = (1 - r2 / rho ^ 2) ^ 2
    local phi = basis(d)
    for i = 1, m do for l = 1, m do M[i][l] = M[i][l] + w * phi[i] * phi[l] end end
    for a = 1, D do for i = 1, m do rhs[a][i] = rhs[a][i] + w * phi[i] * (x[j][a] - x[p][a]) end end
  end
  local F = {}
  local ds = wall.offset[k]
  for a = 1, D do
    local z = solve(M, rhs[a], m)
    F[a] = {}
    for b = 1, D do F[a][b] = z[b] end
    if o.quad == 1 and o.atsurf == 1 then -- F at the surface point: + H d_s
      local idx = D
      for b = 1, D do for e = b, D do idx = idx + 1
        -- phi term z_idx * d_b d_e; derivative wrt d_l: z (delta_lb d_e + delta_le d_b)
        F[a][b] = F[a][b] + z[idx] * ds[e]
        F[a][e] = F[a][e] + z[idx] * ds[b]
      end end
    end
  end
  -- cof(F) N area
  local Nn = wall.normal[k]
  local cofN = {}
  if D == 2 then
    cofN[1] = F[2][2] * Nn[1] - F[2][1] * Nn[2]
    cofN[2] = -F[1][2] * Nn[1] + F[1][1] * Nn[2]
  else
    local C = {}
    for a = 1, 3 do C[a] = {} end
    for a = 1, 3 do for b = 1, 3 do
      local a1, a2, b1, b2 = a % 3 + 1, (a + 1) % 3 + 1, b % 3 + 1, (b + 1) % 3 + 1
      C[a][b] = F[a1][b1] * F[a2][b2] - F[a1][b2] * F[a2][b1]
    end end
    for a = 1, 3 do cofN[a] = C[a][1] * Nn[1] + C[a][2] * Nn[2] + C[a][3] * Nn[3] end
  end
  local mag = 0
  for a = 1, D do mag = mag + cofN[a] ^ 2 end
  mag = math.sqrt(mag)
  sum_fit = sum_fit + wall.area[k] * mag
  sum_p = sum_p + wall.area[k]
end
local ex = o.la ^ (D - 1)
print(string.format("dim %d h %.3g rad %.2g quad %d atsurf %s: area stretch fit %.4f exact %.4f ratio %.4f (load x%.4f); (stretch-1) of the area %.2f %%",
  D, h, o.rad, o.quad, tostring(o.atsurf), sum_fit / sum_p, ex, sum_fit / sum_p / ex, sum_fit / sum_p / ex, 100 * ((sum_fit / sum_p - 1) / (ex - 1) - 1)))
