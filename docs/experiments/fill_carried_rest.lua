-- docs/experiments/fill_carried_rest.lua: the forty-eighth session's throwaway prototype of a grid-fluid rest fill that
-- moves with the water (issue 62 item 5; docs/results/history.md, "why a soft body is held in water"). Needs an engine
-- built with fill_carried_rest.patch (git apply it in a worktree, then make BUILD=... NVCC= ...): each water particle
-- carries the rest fill the nodes' "initial" rule gives at it in the first state (computed here in Lua), and a node's
-- rest fill is the K-weighted mean of its water particles' carried values. Forward only (no adjoint).
-- usage: cqlua docs/experiments/fill_carried_rest.lua beam|tank [E=1e5] [K=2.2e4] [integrator=explicit] [dt]
--        [T=1] [proto=0|1]   environment: ONE=1 (fluid_rest = "one"), PPA (the water's particles per cell and axis, 2.5)
--   EXACT=1 (with proto=1): the carried values changed, least-norm, so that every node's mean is exactly its
--   first-state rest fill
--   beam: scenes/fluid_validation.lua's buoyed beam (gravity 9.8 E / 1e7 sideways), its tip's x every T / 10 (mm);
--   tank: a 15 x 21-cell tank of grid water at rest under gravity 9.8, its mean height's fall and fastest particle.
package.path = "./scenes/?.lua;" .. package.path
local cq = require "cq"
local ffi = require "ffi"
ffi.cdef "void cq_proto_set_rest(const double* r, int n);"
local lib = require("cq._ffi").lib("f64")
local registry = require "cq._registry"
local function cdf(t)
  if t <= -1.5 then return 0 end
  if t <= -0.5 then return (t + 1.5) ^ 3 / 6 end
  if t <= 0.5 then return 0.5 + 0.75 * t - t ^ 3 / 3 end
  if t < 1.5 then return 1 - (1.5 - t) ^ 3 / 6 end
  return 1
end
-- rest per fluid particle: the initial nodal fill rule interpolated
local function set_rest(w, s, thick)
  local n, D, dx, res = w.n, w.dim, w.dx, w.res
  local fluid = registry.MATERIAL.fluid
  local fill = {}
  local function key(i) return D == 2 and (i[1] * 100000 + i[2]) or ((i[1] * 10000 + i[2]) * 10000 + i[3]) end
  local function stencil(p, f)
    local base, wts = {}, {}
    for a = 1, D do
      local u = s.x[(a - 1) * n + p] / dx
      local b = math.floor(u - 0.5)
      local fx = u - b
      base[a] = b
      wts[a] = { 0.5 * (1.5 - fx) ^ 2, 0.75 - (fx - 1) ^ 2, 0.5 * (fx - 0.5) ^ 2 }
    end
    for i = 0, 2 do for j = 0, 2 do for k = 0, (D == 3 and 2 or 0) do
      local idx = { base[1] + i, base[2] + j, D == 3 and base[3] + k or nil }
      local wt = wts[1][i + 1] * wts[2][j + 1] * (D == 3 and wts[3][k + 1] or 1)
      f(idx, wt)
    end end end
  end
  local nodes = {}
  for p = 0, n - 1 do
    local V = w.params.vol0[p] / dx ^ D
    stencil(p, function(idx, wt)
      local kk = key(idx)
      if not fill[kk] then fill[kk] = 0; nodes[kk] = idx end
      fill[kk] = fill[kk] + wt * V
    end)
  end
  local rest = {}
  for kk, idx in pairs(nodes) do
    local inside = 1
    for a = 1, D do
      inside = inside * (cdf(res[a] - thick - idx[a]) - cdf(thick - 1 - idx[a]))
    end
    local phi = fill[kk] + 1 - inside
    rest[kk] = phi > 0.8 and phi or 1
  end
  local arr = ffi.new("double[?]", n)
  -- per fluid particle: its nodes and weights a = w V (K is the same for all the water)
  local rows, cols, pw = {}, {}, {}
  local c = {} -- node -> sum of a
  for p = 0, n - 1 do
    if w.params.material[p] == fluid then
      local r, list = 0, {}
      local V = w.params.vol0[p]
      stencil(p, function(idx, wt)
        local kk = key(idx)
        r = r + wt * rest[kk]
        list[#list + 1] = { kk, wt * V }
        c[kk] = (c[kk] or 0) + wt * V
      end)
      arr[p] = r
      pw[p] = list
    end
  end
  if os.getenv("EXACT") then -- least-norm change of the carried values so that every node's mean is its rest fill
    local function Mx(x) -- node -> sum_q (a_iq / c_i) x_q
      local out = {}
      for p, list in pairs(pw) do
        for _, e in ipairs(list) do out[e[1]] = (out[e[1]] or 0) + e[2] / c[e[1]] * x[p] end
      end
      return out
    end
    local function MTl(l) -- particle -> sum_i (a_iq / c_i) l_i
      local out = {}
      for p, list in pairs(pw) do
        local v = 0
        for _, e in ipairs(list) do v = v + e[2] / c[e[1]] * (l[e[1]] or 0) end
        out[p] = v
      end
      return out
    end
    local r0 = {}
    for p in pairs(pw) do r0[p] = arr[p] end
    local m = Mx(r0)
    local b, lam, res, dir = {}, {}, {}, {}
    local rr = 0
    for kk in pairs(c) do b[kk] = rest[kk] - m[kk]; lam[kk] = 0; res[kk] = b[kk]; dir[kk] = b[kk]; rr = rr + b[kk] ^ 2 end
    local r_first = math.sqrt(rr)
    for it = 1, 500 do
      local Ad = Mx(MTl(dir))
      local dAd = 0
      for kk in pairs(c) do dAd = dAd + dir[kk] * Ad[kk] end
      local alpha = rr / dAd
      local rr2 = 0
      for kk in pairs(c) do
        lam[kk] = lam[kk] + alpha * dir[kk]; res[kk] = res[kk] - alpha * Ad[kk]; rr2 = rr2 + res[kk] ^ 2
      end
      if math.sqrt(rr2) < 1e-12 * math.max(1, r_first) then rr = rr2 break end
      for kk in pairs(c) do dir[kk] = res[kk] + rr2 / rr * dir[kk] end
      rr = rr2
    end
    local d = MTl(lam)
    local dmax = 0
    for p in pairs(pw) do arr[p] = arr[p] + d[p]; dmax = math.max(dmax, math.abs(d[p])) end
    io.stderr:write(string.format("exact rest: residual %.2e -> %.2e, largest change %.3g\n", r_first,
      math.sqrt(rr), dmax))
  end
  lib.cq_proto_set_rest(arr, n)
end

local what, E, K = arg[1], tonumber(arg[2]) or 1e5, tonumber(arg[3]) or 2.2e4
local integ, dt, T, proto = arg[4] or "explicit", tonumber(arg[5]), tonumber(arg[6]) or 1, arg[7] == "1"
local dx = 2.5e-3
if what == "beam" then
  local res = { 40, 48 }
  local bx0, bx1, by0, by1 = 45e-3, 53e-3, 40e-3, 115e-3
  local r = cq.robot { dim = 2 }
  r:box { offset = { bx0, by0 }, size = { bx1 - bx0, by1 - by0 }, spacing = dx / 2, name = "beam",
    material = { model = "neohookean", E = E, nu = 0.3, density = 3000 } }
  local nb = #r.x
  local h, lo, hi, top = dx / (tonumber(os.getenv("PPA")) or 2.5), 2 * dx, (res[1] - 3) * dx, 112.5e-3
  r:box { offset = { lo, lo }, size = { math.floor((hi - lo) / h + 1e-9) * h, math.floor((top - lo) / h + 1e-9) * h },
    spacing = h, name = "water", material = { preset = "water", bulk = K },
    keep = function(x) return x[1] < bx0 - h / 4 or x[1] > bx1 + h / 4 or x[2] < by0 - h / 4 end }
  dt = dt or 0.4 * dx / math.max(math.sqrt(E * 0.7 / 0.52 / 3000), math.sqrt(K / 1000))
  local _, w, s = require("cq.robot").warnings_of(r.world, r, { res = res, dx = dx, dt = dt,
    gravity = { 9.8 * E / 1e7, 0 }, damping = 25, integrator = integ, fluid_rest = (proto or os.getenv("ONE")) and "one" or nil,
    walls = { all = { type = "slip", thickness = 3 }, top = { type = "sticky", thickness = 3 } } })
  if proto then set_rest(w, s, 3) end
  local n, tip = w.n, {}
  for i = 0, nb - 1 do if s.x[n + i] < by0 + 2e-3 then tip[#tip + 1] = i end end
  local function tip_x() local m = 0 for _, i in ipairs(tip) do m = m + s.x[i] end return m / #tip end
  local x0, path = tip_x(), {}
  local every = math.floor(T / dt / 10 + 0.5)
  local t0 = os.clock()
  for k = 1, every * 10 do
    w:step(s, {})
    if k % every == 0 then path[#path + 1] = string.format("%.3f", (tip_x() - x0) * 1e3) end
  end
  print("beam", integ, "E", E, "K", K, "proto", proto, os.clock() - t0, table.concat(path, " "))
else -- tank at rest: 15 x 21 cells of water, gravity 9.8
  local r = cq.robot { dim = 2 }
  local h = dx / (tonumber(os.getenv("PPA")) or 2.5)
  r:box { offset = { 2 * dx, 2 * dx }, size = { math.floor(15 * dx / h + 1e-9) * h, math.floor(21 * dx / h + 1e-9) * h },
    spacing = h, name = "water", material = { preset = "water", bulk = K } }
  dt = dt or 0.005
  local _, w, s = require("cq.robot").warnings_of(r.world, r, { res = { 20, 40 }, dx = dx, dt = dt,
    gravity = { 0, -9.8 }, damping = 25, integrator = integ, fluid = "grid", fluid_rest = (proto or os.getenv("ONE")) and "one" or nil,
    walls = { all = { type = "slip", thickness = 3 } } })
  if proto then set_rest(w, s, 3) end
  local n = w.n
  local function my() local m = 0 for p = 0, n - 1 do m = m + s.x[n + p] end return m / n end
  local y0, out = my(), {}
  local every = math.floor(T / dt / 5 + 0.5)
  for k = 1, every * 5 do
    w:step(s, {})
    if k % every == 0 then
      local vmax = 0
      for p = 0, n - 1 do vmax = math.max(vmax, math.sqrt(s.v[p] ^ 2 + s.v[n + p] ^ 2)) end
      out[#out + 1] = string.format("drop %.4f mm vmax %.2e", (y0 - my()) * 1e3, vmax)
    end
  end
  print("tank", integ, "K", K, "proto", proto, table.concat(out, "; "))
end
