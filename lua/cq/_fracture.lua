-- Private: numerical fracture. A solid body in MPM holds together only through the grid nodes its particles share;
-- stretched past what the grid resolves (a thin wall under too much pressure, a body pulled apart) its particles
-- separate, and the pieces fly apart with nothing to say so (issue 62: a pneumatic actuator came apart at 9 kPa on
-- one mesh and 13 kPa on one twice as fine, the pieces flying to the walls). Solids here do not fracture physically,
-- so a solid body that splits into more pieces than it started as has come apart numerically.
--
-- A piece: particles linked by distances of at most M.LINK cells. Particles more than 2 cells apart share no grid
-- node's full weight, and 3 cells apart none at all (docs/modelling.md): a gap of M.LINK cells inside one body is a
-- tear the grid can no longer close. A healthy body sampled at 2 particles per cell and axis has neighbours half a
-- cell apart, and still 1 cell apart stretched to twice its length.
local M = {}

M.LINK = 2 -- cells

local ffi = require "ffi"

-- The pieces of the particles idx (0-based indices, a Lua list) of positions x ([dim][n], 0-based, component-major)
-- at link distance h: returns the number of pieces and, per particle of idx (by position in idx), its piece's root; nil
-- when a position is not finite or the particles span more than 2^24 cells of h (a state the step itself refuses).
-- The particles binned into cells of h (a counting sort over the body's bounding box), each linked to those within h
-- in its own and the neighbouring cells (union-find).
local function pieces(x, n, dim, idx, h)
  local m = #idx
  local lo, hi = { math.huge, math.huge, 0 }, { -math.huge, -math.huge, 0 }
  for _, p in ipairs(idx) do
    for a = 1, dim do
      local c = math.floor(x[(a - 1) * n + p] / h)
      if not (c > -2 ^ 40 and c < 2 ^ 40) then return nil end -- not finite (NaN fails both)
      if c < lo[a] then lo[a] = c end
      if c > hi[a] then hi[a] = c end
    end
  end
  local nx, ny, nz = hi[1] - lo[1] + 1, hi[2] - lo[2] + 1, hi[3] - lo[3] + 1
  local cells = nx * ny * nz
  if not (cells <= 2 ^ 24) then return nil end -- NaN or inf positions fail this too
  local cell = ffi.new("int32_t[?]", m)
  local start = ffi.new("int32_t[?]", cells + 1)
  local order = ffi.new("int32_t[?]", m)
  local parent = ffi.new("int32_t[?]", m)
  local px, py, pz = ffi.new("double[?]", m), ffi.new("double[?]", m), ffi.new("double[?]", m)
  for k = 0, m - 1 do
    local p = idx[k + 1]
    px[k], py[k] = x[p], x[n + p]
    if dim == 3 then pz[k] = x[2 * n + p] end
    local c = ((math.floor(px[k] / h) - lo[1]) * ny + (math.floor(py[k] / h) - lo[2])) * nz +
      (dim == 3 and math.floor(pz[k] / h) - lo[3] or 0)
    cell[k] = c
    start[c + 1] = start[c + 1] + 1
    parent[k] = k
  end
  for c = 1, cells do start[c] = start[c] + start[c - 1] end
  local fill = ffi.new("int32_t[?]", cells)
  for k = 0, m - 1 do
    local c = cell[k]
    order[start[c] + fill[c]] = k
    fill[c] = fill[c] + 1
  end
  local function find(i)
    while parent[i] ~= i do
      parent[i] = parent[parent[i]]
      i = parent[i]
    end
    return i
  end
  local h2, count, zr = h * h, m, dim == 3 and 1 or 0
  for k = 0, m - 1 do
    local c = cell[k]
    local cz = c % nz
    local cy = (c - cz) / nz % ny
    local cx = ((c - cz) / nz - cy) / ny
    for ex = math.max(cx - 1, 0), math.min(cx + 1, nx - 1) do
      for ey = math.max(cy - 1, 0), math.min(cy + 1, ny - 1) do
        for ez = math.max(cz - zr, 0), math.min(cz + zr, nz - 1) do
          local d = (ex * ny + ey) * nz + ez
          for t = start[d], start[d + 1] - 1 do
            local j = order[t]
            if j > k then
              local ux, uy, uz = px[j] - px[k], py[j] - py[k], pz[j] - pz[k]
              if ux * ux + uy * uy + uz * uz <= h2 then
                local a, b = find(k), find(j)
                if a ~= b then parent[a] = b; count = count - 1 end
              end
            end
          end
        end
      end
    end
  end
  local root = {}
  for k = 0, m - 1 do root[k + 1] = find(k) end
  return count, root
end
M.pieces = pieces

-- The solid bodies of a world: its robot groups (or the whole world) less the fluids' particles, each as a list of
-- 0-based indices with its name for messages.
local function bodies(world, material, fluid)
  local out = {}
  local groups = world.groups or { { first = 1, last = world.n } }
  for i, g in ipairs(groups) do
    local idx = {}
    for p = g.first, g.last do
      if material[p - 1] ~= fluid then idx[#idx + 1] = p - 1 end
    end
    if #idx > 0 then
      out[#out + 1] = { idx = idx, name = g.name and ("robot group " .. i .. " '" .. g.name .. "'") or world.groups
        and ("robot group " .. i) or "the body" }
    end
  end
  return out
end

--- The baseline: each solid body's number of pieces in state s (the first state stepped from). Returns a table for
--- M.check.
function M.baseline(world, s, material, fluid)
  local base = { bodies = bodies(world, material, fluid) }
  local h = M.LINK * world.dx
  for _, b in ipairs(base.bodies) do b.pieces = pieces(s.x, world.n, world.dim, b.idx, h) or math.huge end
  return base
end

--- Nil, or a message naming the first body of base that is in more pieces in state s than at the baseline, where its
--- smallest piece lies and what to change.
function M.check(world, s, base, step)
  local h, n, dim, x = M.LINK * world.dx, world.n, world.dim, s.x
  for _, b in ipairs(base.bodies) do
    local count, root = pieces(x, n, dim, b.idx, h)
    if count and count > b.pieces then
      local size = {}
      for _, r in ipairs(root) do size[r] = (size[r] or 0) + 1 end
      local small, at = math.huge, nil
      for r, c in pairs(size) do if c < small then small, at = c, r end end
      local mean = { 0, 0, 0 }
      for k, r in ipairs(root) do
        if r == at then for a = 1, dim do mean[a] = mean[a] + x[(a - 1) * n + b.idx[k]] / small end end
      end
      local where = {}
      for a = 1, dim do where[a] = string.format("%.4g", mean[a]) end
      return string.format("%s came apart by step %d (t = %.4g s): it was %d piece%s in the first state stepped " ..
        "from and is %d now (particles linked within %g cells, dx = %.4g); its smallest piece, %d particle%s, is " ..
        "around (%s). Solids do not fracture in this model: the body was stretched past what the grid resolves " ..
        "(numerical fracture). Refine dx (a wall should span 3 cells or more), lower the load (pressure, " ..
        "actuation) or stiffen the material; world:check_fracture(false) turns this check off", b.name, step,
        s:time(), b.pieces, b.pieces == 1 and "" or "s", count, M.LINK, world.dx, small, small == 1 and "" or "s",
        table.concat(where, ", "))
    end
  end
  return nil
end

return M
