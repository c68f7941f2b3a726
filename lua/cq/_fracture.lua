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
local bins = require "cq._bins"

-- The pieces of the particles idx (0-based indices, a Lua list) of positions x ([dim][n], 0-based, component-major)
-- at link distance h: returns the number of pieces and, per particle of idx (by position in idx), its piece's root; nil
-- when a position is not finite or the particles span more than 2^24 cells of h (a state the step itself refuses).
-- Each particle is linked to those within h in its own and the neighbouring cells of h (cq._bins; union-find).
local function pieces(x, n, dim, idx, h)
  local m = #idx
  local P = ffi.new("double[?]", 3 * (m > 0 and m or 1)) -- the positions, packed
  for k = 0, m - 1 do
    for a = 1, dim do P[3 * k + a - 1] = x[(a - 1) * n + idx[k + 1]] end
  end
  local function coord(k, a) return P[3 * k + a - 1] end
  local near = bins.new(m, dim, h, coord)
  if not near then return nil end
  local parent = {}
  for k = 0, m - 1 do parent[k] = k end
  local function find(i)
    while parent[i] ~= i do
      parent[i] = parent[parent[i]]
      i = parent[i]
    end
    return i
  end
  local h2, count, k, px, py, pz = h * h, m, 0, 0, 0, 0
  local function link(j)
    if j <= k then return end
    local ux, uy, uz = P[3 * j] - px, P[3 * j + 1] - py, P[3 * j + 2] - pz
    if ux * ux + uy * uy + uz * uz <= h2 then
      local a, b = find(k), find(j)
      if a ~= b then parent[a] = b; count = count - 1 end
    end
  end
  for q = 0, m - 1 do
    k, px, py, pz = q, P[3 * q], P[3 * q + 1], P[3 * q + 2]
    near(px, py, pz, 1, link)
  end
  local root = {}
  for q = 0, m - 1 do root[q + 1] = find(q) end
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
      return string.format("%s came apart by step %d (t = %.4g s): it was %d piece%s in %s and is %d now (particles linked within %g cells, dx = %.4g); its smallest piece, %d particle%s, is " ..
        "around (%s). Solids do not fracture in this model: the body was stretched past what the grid resolves " ..
        "(numerical fracture). Refine dx (a wall should span 3 cells or more), lower the load (pressure, " ..
        "actuation) or stiffen the material; world:check_fracture(false) turns this check off", b.name, step,
        s:time(), b.pieces, b.pieces == 1 and "" or "s", base.from or "the first state stepped from", count, M.LINK, world.dx, small, small == 1 and "" or "s",
        table.concat(where, ", "))
    end
  end
  return nil
end

return M
