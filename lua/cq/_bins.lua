-- Private: points binned into square (cubic) cells of side h by a counting sort over their bounding box, and the
-- points near a position. Shared by the chamber walls' searches (cq._chamber) and the pieces of a body
-- (cq._fracture).
local ffi = require "ffi"

local M = {}

--- Bins m points into cells of side h; coord(k, a) is point k's coordinate a (k in 0..m-1, a in 1..dim). Returns nil
--- when a coordinate is not finite or the points span more than 2^24 cells; else near(x1, x2, x3, r, f), which calls
--- f(k) for every point k in the cells within r cells of the position's (x3 ignored in 2D), cell by cell in a fixed
--- order and in the order the points were given within a cell.
function M.new(m, dim, h, coord)
  local floor = math.floor
  local lo, hi = { math.huge, math.huge, 0 }, { -math.huge, -math.huge, 0 }
  local cell = ffi.new("int32_t[?]", m > 0 and m or 1)
  local c3 = ffi.new("int32_t[?]", (m > 0 and m or 1) * 3) -- each point's cell coordinates
  for k = 0, m - 1 do
    for a = 1, dim do
      local c = floor(coord(k, a) / h)
      if not (c > -2 ^ 40 and c < 2 ^ 40) then return nil end -- not finite (NaN fails both)
      c3[3 * k + a - 1] = c -- within 2^31: the box check below refuses anything wider
      if c < lo[a] then lo[a] = c end
      if c > hi[a] then hi[a] = c end
    end
  end
  if m == 0 then lo, hi = { 0, 0, 0 }, { 0, 0, 0 } end
  local n1, n2, n3 = hi[1] - lo[1] + 1, hi[2] - lo[2] + 1, hi[3] - lo[3] + 1
  if not (n1 * n2 * n3 <= 2 ^ 24) then return nil end
  local start = ffi.new("int32_t[?]", n1 * n2 * n3 + 1)
  for k = 0, m - 1 do
    local c = ((c3[3 * k] - lo[1]) * n2 + (c3[3 * k + 1] - lo[2])) * n3 + (dim == 3 and c3[3 * k + 2] - lo[3] or 0)
    cell[k] = c
    start[c + 1] = start[c + 1] + 1
  end
  for c = 1, n1 * n2 * n3 do start[c] = start[c] + start[c - 1] end
  local order, fill = ffi.new("int32_t[?]", m > 0 and m or 1), ffi.new("int32_t[?]", n1 * n2 * n3)
  for k = 0, m - 1 do
    local c = cell[k]
    order[start[c] + fill[c]] = k
    fill[c] = fill[c] + 1
  end
  local max, min = math.max, math.min
  return function(x1, x2, x3, r, f)
    local a1, a2 = floor(x1 / h) - lo[1], floor(x2 / h) - lo[2]
    local a3, r3 = dim == 3 and floor(x3 / h) - lo[3] or 0, dim == 3 and r or 0
    for e1 = max(a1 - r, 0), min(a1 + r, n1 - 1) do
      for e2 = max(a2 - r, 0), min(a2 + r, n2 - 1) do
        for e3 = max(a3 - r3, 0), min(a3 + r3, n3 - 1) do
          local d = (e1 * n2 + e2) * n3 + e3
          for t = start[d], start[d + 1] - 1 do f(order[t]) end
        end
      end
    end
  end
end

return M
