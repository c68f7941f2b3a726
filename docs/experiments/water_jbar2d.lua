-- docs/experiments/water_jbar2d.lua: the forty-ninth session's throwaway prototype of a rate-form water pressure
-- (issue 62 item 5; docs/results/history.md, "the seam between a body and its water"), forward only and explicit,
-- through world:step's stress input: the water's pressure from its J averaged over each grid node with the B-spline
-- weights, Jbar_i = sum_q w_iq V0_q J_q / sum_q w_iq V0_q (the water's particles only; no tension), each particle
-- taking p_q = sum_i w_iq K (Jbar_i - 1) as a Kirchhoff stress, and SHARE (1e-3) of K on its own J. One pressure per
-- node and no memory of positions, so a body's sampling seams do not pin it; but the tank does not come to rest.
-- usage: cqlua docs/experiments/water_jbar2d.lua E K width_mm per_axis T [tension=0|1] [beam|tank]
--   environment: SHARE (the own share), FILLK (a grid-fluid fill term of this bulk modulus besides: the water's J then
--   tracked here from C, since the grid fluid resets F)
--   beam: the buoyed beam of water_seam2d.lua (tip x every T / 10, mm); tank: a 15 x 21-cell tank at rest under
--   gravity 9.8 (mean height's fall in mm / fastest particle in m/s, every T / 5).
package.path = "./scenes/?.lua;" .. package.path
local cq = require "cq"
local ffi = require "ffi"
local E, K, bw, ppa, T = tonumber(arg[1]), tonumber(arg[2]), tonumber(arg[3]) * 1e-3, tonumber(arg[4]), tonumber(arg[5])
local tension, mode = arg[6] == "1", arg[7] or "beam"
local share = tonumber(os.getenv("SHARE")) or 1e-3
local KF = tonumber(os.getenv("FILLK"))
local dx = 2.5e-3
local res = mode == "beam" and { 40, 48 } or { 20, 40 }
local bx0, by0, by1 = 45e-3, 40e-3, 115e-3
local bx1 = bx0 + bw
local r = cq.robot { dim = 2 }
local nb = 0
if mode == "beam" then
  r:box { offset = { bx0, by0 }, size = { bw, by1 - by0 }, spacing = dx / 2, name = "beam",
    material = { model = "neohookean", E = E, nu = 0.3, density = 3000 } }
  nb = #r.x
  local h, lo, hi, top = dx / ppa, 2 * dx, (res[1] - 3) * dx, 112.5e-3
  r:box { offset = { lo, lo }, size = { math.floor((hi - lo) / h + 1e-9) * h, math.floor((top - lo) / h + 1e-9) * h },
    spacing = h, name = "water", material = { preset = "water", bulk = KF or share * K },
    keep = function(x) return x[1] < bx0 - h / 4 or x[1] > bx1 + h / 4 or x[2] < by0 - h / 4 end }
else
  local h = dx / ppa
  r:box { offset = { 2 * dx, 2 * dx }, size = { math.floor(15 * dx / h + 1e-9) * h, math.floor(21 * dx / h + 1e-9) * h },
    spacing = h, name = "water", material = { preset = "water", bulk = KF or share * K } }
end
local dt = 0.4 * dx / math.max(math.sqrt(E * 0.7 / 0.52 / 3000), math.sqrt(K / 1000))
local _, w, s = require("cq.robot").warnings_of(r.world, r, { res = res, dx = dx, dt = dt,
  gravity = mode == "beam" and { 9.8 * E / 1e7, 0 } or { 0, -9.8 }, damping = 25, integrator = "explicit", fluid = KF and "grid" or "particle",
  walls = mode == "beam" and { all = { type = "slip", thickness = 3 }, top = { type = "sticky", thickness = 3 } } or { all = { type = "slip", thickness = 3 } } })
local n = w.n
local water = {}
local fluid_id = require("cq._registry").MATERIAL.fluid
for p = 0, n - 1 do if w.params.material[p] == fluid_id then water[#water + 1] = p end end
local NN = res[1] * res[2]
local num, den = ffi.new("double[?]", NN), ffi.new("double[?]", NN)
local stress = ffi.new("double[?]", 4 * n)
local bi, bj, wx, wy = ffi.new("int[?]", n), ffi.new("int[?]", n), ffi.new("double[?]", 3 * n), ffi.new("double[?]", 3 * n)
local vol0 = w.params.vol0
local Jm = ffi.new("double[?]", n)
for p = 0, n - 1 do Jm[p] = 1 end
assert((w.substeps or 1) == 1, "substeps")
local function advance()
  local C = s.C
  for _, p in ipairs(water) do
    Jm[p] = Jm[p] * ((1 + dt * C[p]) * (1 + dt * C[3 * n + p]) - dt * dt * C[n + p] * C[2 * n + p])
  end
end
local function update()
  ffi.fill(num, 8 * NN); ffi.fill(den, 8 * NN)
  local x, F = s.x, s.F
  for _, p in ipairs(water) do
    local u, v = x[p] / dx, x[n + p] / dx
    local b1, b2 = math.floor(u - 0.5), math.floor(v - 0.5)
    local f1, f2 = u - b1, v - b2
    bi[p], bj[p] = b1, b2
    wx[3 * p], wx[3 * p + 1], wx[3 * p + 2] = 0.5 * (1.5 - f1) ^ 2, 0.75 - (f1 - 1) ^ 2, 0.5 * (f1 - 0.5) ^ 2
    wy[3 * p], wy[3 * p + 1], wy[3 * p + 2] = 0.5 * (1.5 - f2) ^ 2, 0.75 - (f2 - 1) ^ 2, 0.5 * (f2 - 0.5) ^ 2
    local J = KF and Jm[p] or (F[p] * F[3 * n + p] - F[n + p] * F[2 * n + p])
    local V = vol0[p]
    for a = 0, 2 do for c = 0, 2 do
      local node = (b1 + a) * res[2] + b2 + c
      local wt = wx[3 * p + a] * wy[3 * p + c] * V
      num[node] = num[node] + wt * J
      den[node] = den[node] + wt
    end end
  end
  for i = 0, NN - 1 do
    if den[i] > 0 then
      local e = num[i] / den[i] - 1
      if not tension and e > 0 then e = 0 end
      num[i] = (1 - share) * K * e
    end
  end
  for _, p in ipairs(water) do
    local sp = 0
    local b1, b2 = bi[p], bj[p]
    for a = 0, 2 do for c = 0, 2 do
      sp = sp + wx[3 * p + a] * wy[3 * p + c] * num[(b1 + a) * res[2] + b2 + c]
    end end
    if KF then sp = sp + share * K * (Jm[p] - 1) * Jm[p] end
    stress[p], stress[3 * n + p] = sp, sp -- 2D: F A F^T = J A for F = sqrt(J) I
  end
end
local t0 = os.clock()
if mode == "beam" then
  local tip = {}
  for i = 0, nb - 1 do if s.x[n + i] < by0 + 2e-3 then tip[#tip + 1] = i end end
  local function tip_x() local m = 0 for _, i in ipairs(tip) do m = m + s.x[i] end return m / #tip end
  local x0, path = tip_x(), {}
  local every = math.floor(T / dt / 10 + 0.5)
  for k = 1, every * 10 do
    update(); w:step(s, nil, nil, stress); if KF then advance() end
    if k % every == 0 then path[#path + 1] = string.format("%.3f", (tip_x() - x0) * 1e3) end
  end
  print(string.format("FILLK " .. tostring(KF) .. " SHARE " .. share .. " jbar E %g K %g width %.2f ppa %g tension %s n %d %.0fs:", E, K, bw * 1e3, ppa, tostring(tension), n, os.clock() - t0), table.concat(path, " "))
else
  local function my() local m = 0 for p = 0, n - 1 do m = m + s.x[n + p] end return m / n end
  local y0, out = my(), {}
  local every = math.floor(T / dt / 5 + 0.5)
  for k = 1, every * 5 do
    update(); w:step(s, nil, nil, stress); if KF then advance() end
    if k % every == 0 then
      local vmax = 0
      for p = 0, n - 1 do vmax = math.max(vmax, math.sqrt(s.v[p] ^ 2 + s.v[n + p] ^ 2)) end
      out[#out + 1] = string.format("%.4f/%.1e", (y0 - my()) * 1e3, vmax)
    end
  end
  print(string.format("FILLK " .. tostring(KF) .. " SHARE " .. share .. " jbar tank K %g ppa %g tension %s n %d %.0fs drop mm/vmax:", K, ppa, tostring(tension), n, os.clock() - t0), table.concat(out, " "))
end
