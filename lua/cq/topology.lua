-- Seed 004's density-based topology maps (sec. 3.1): the particle-wise convolution filter (eqs. 14-15, 20), the
-- normalised sigmoid projection (eq. 16) and the softmax projection (eq. 21), each with its adjoint. design:layout
-- and design:actuators (lua/cq/design.lua) compose them with the material and actuation interpolations (eqs. 11-13,
-- 18-19).
local ffi = require "ffi"
local check = require "cq._check"

local M = {}
local darr = ffi.typeof("double[?]")
local iarr = ffi.typeof("int32_t[?]")

--- The filter of m particles at positions pos(i) -> {x, y[, z]} (i = 0..m-1): row i holds the particles within
--- radius of particle i (itself included) with weights w_f(r) = (1 - min(r, R)/R)^p normalised to sum 1 (eq. 14's
--- denominator), found through a cell list of cell size radius (each particle looks at its 3^dim cells): O(m) for
--- particles at a bounded density. Returns { m, start (int32, m+1), nbr (int32), w (double) }.
function M.filter(where, m, dim, pos, radius, p)
  check.number(where, "radius", radius, 0, math.huge, { open_lo = true })
  check.number(where, "p", p, 0, math.huge, { open_lo = true })
  local pts, cells = {}, {}
  local function key(c) return c[1] .. "," .. c[2] .. "," .. (c[3] or 0) end
  for i = 0, m - 1 do
    local x = pos(i)
    local c = {}
    for a = 1, dim do c[a] = math.floor(x[a] / radius) end
    pts[i] = { x = x, c = c }
    local k = key(c)
    local list = cells[k]
    if not list then list = {}; cells[k] = list end
    list[#list + 1] = i
  end
  local start, nbr, w, total = iarr(m + 1), {}, {}, 0
  local offsets = {}
  for dx = -1, 1 do for dy = -1, 1 do for dz = dim == 3 and -1 or 0, dim == 3 and 1 or 0 do
    offsets[#offsets + 1] = { dx, dy, dz }
  end end end
  for i = 0, m - 1 do
    start[i] = total
    local pi, row, sum = pts[i], {}, 0
    for _, o in ipairs(offsets) do
      local list = cells[key { pi.c[1] + o[1], pi.c[2] + o[2], dim == 3 and pi.c[3] + o[3] or nil }]
      for _, j in ipairs(list or {}) do
        local r2 = 0
        for a = 1, dim do r2 = r2 + (pts[j].x[a] - pi.x[a]) ^ 2 end
        local r = math.sqrt(r2)
        if r < radius then
          local wt = (1 - r / radius) ^ p
          row[#row + 1] = { j, wt }
          sum = sum + wt
        end
      end
    end
    table.sort(row, function(a, b) return a[1] < b[1] end) -- a fixed order: sums independent of the hashing
    for _, e in ipairs(row) do
      nbr[total], w[total] = e[1], e[2] / sum
      total = total + 1
    end
  end
  start[m] = total
  local f = { m = m, start = start, nbr = iarr(total), w = darr(total), nnz = total }
  for k = 0, total - 1 do f.nbr[k], f.w[k] = nbr[k], w[k] end
  return f
end

--- out[i] = sum_j W_ij x[j] (eq. 14).
function M.apply(f, x, out)
  for i = 0, f.m - 1 do
    local s = 0
    for k = f.start[i], f.start[i + 1] - 1 do s = s + f.w[k] * x[f.nbr[k]] end
    out[i] = s
  end
end

--- The adjoint: gx[j] += sum_i W_ij g[i].
function M.apply_t(f, g, gx)
  for i = 0, f.m - 1 do
    local gi = g[i]
    for k = f.start[i], f.start[i + 1] - 1 do gx[f.nbr[k]] = gx[f.nbr[k]] + f.w[k] * gi end
  end
end

--- The filter on width values per particle (particle-major: x[i * width + j]; eq. 20), and its adjoint.
function M.apply_rows(f, x, out, width)
  for i = 0, f.m - 1 do
    for j = 0, width - 1 do out[i * width + j] = 0 end
    for k = f.start[i], f.start[i + 1] - 1 do
      local wk, src = f.w[k], f.nbr[k] * width
      for j = 0, width - 1 do out[i * width + j] = out[i * width + j] + wk * x[src + j] end
    end
  end
end
function M.apply_rows_t(f, g, gx, width)
  for i = 0, f.m - 1 do
    for k = f.start[i], f.start[i + 1] - 1 do
      local wk, dst = f.w[k], f.nbr[k] * width
      for j = 0, width - 1 do gx[dst + j] = gx[dst + j] + wk * g[i * width + j] end
    end
  end
end

--- The softmax of width values z[o .. o + width - 1] with shape beta (eq. 21) into xi[o ..] (shifted by the largest
--- value, so that no exponential overflows).
function M.softmax(beta, z, xi, o, width)
  local top = z[o]
  for j = 1, width - 1 do if z[o + j] > top then top = z[o + j] end end
  local sum = 0
  for j = 0, width - 1 do
    local e = math.exp(beta * (z[o + j] - top))
    xi[o + j], sum = e, sum + e
  end
  for j = 0, width - 1 do xi[o + j] = xi[o + j] / sum end
end
--- Its adjoint: gz[o + j] = beta xi_j (gxi_j - sum_l xi_l gxi_l).
function M.softmax_t(beta, xi, gxi, gz, o, width)
  local dot = 0
  for j = 0, width - 1 do dot = dot + xi[o + j] * gxi[o + j] end
  for j = 0, width - 1 do gz[o + j] = beta * xi[o + j] * (gxi[o + j] - dot) end
end

--- The normalised sigmoid (eq. 16): gamma = (tanh(beta x) / tanh(beta) + 1) / 2 in [0, 1] for x in [-1, 1], and
--- dgamma/dx.
function M.project(beta, x)
  local t, tb = math.tanh(beta * x), math.tanh(beta)
  return 0.5 * (t / tb + 1), 0.5 * beta * (1 - t * t) / tb
end

return M
