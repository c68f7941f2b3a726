-- scenes/make_assets.lua: draws the robot assets of the examples, the same bytes every run (tests/assets_spec.lua
-- checks that the committed files are what this script makes):
--   rhino.png           a 2D rhino (big head, horn, body, four legs) whose four feet are actuators 1-4 in palette
--                       colours (red, green, blue, yellow from the left), for robot:image
--   creature.obj        a four-legged 3D creature (body, big head, a bulb on its back, one leg per quadrant of its
--   creature.stl        bottom; closed, manifold, outward-oriented) as OBJ, binary STL and ASCII STL, for robot:mesh
--   creature_ascii.stl
-- usage: build/bin/cqlua scenes/make_assets.lua [output directory, default: the directory of this script]
local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local cq = require "cq"
local meshes = require "meshes"

local M = {}

-- ---- rhino.png ----------------------------------------------------------------------------------------------------

M.RHINO_SIZE = { 270, 153 }                  -- pixels; one particle per pixel at robot:image{scale = s, spacing = s}
M.RHINO_ZOOM = 0.9                           -- pixels per unit of the body's drawing below (a 300 x 170 design)
M.BODY, M.HORN = { 70, 70, 70 }, { 120, 120, 120 }
M.FEET = { { 255, 0, 0 }, { 0, 255, 0 }, { 0, 0, 255 }, { 255, 255, 0 } } -- actuators 1-4 of the default palette
M.LEG_X = { 34, 58, 155, 179 }               -- left edge of each leg in pixels: a hind pair and a front pair
M.LEG_W, M.LEG_H, M.FOOT_H = 20, 65, 27      -- leg width, height (up into the body) and foot (actuator) height, pixels

-- Point (x, y) (pixels, y up) inside the polygon pts (even-odd rule).
local function in_polygon(x, y, pts)
  local inside, j = false, #pts
  for i = 1, #pts do
    local a, b = pts[i], pts[j]
    if (a[2] > y) ~= (b[2] > y) and x < (b[1] - a[1]) * (y - a[2]) / (b[2] - a[2]) + a[1] then inside = not inside end
    j = i
  end
  return inside
end

local function in_ellipse(x, y, cx, cy, rx, ry) return ((x - cx) / rx) ^ 2 + ((y - cy) / ry) ^ 2 <= 1 end

-- The colour of the pixel in column col, row up from the bottom row (both 0-based), nil for background.
local function rhino_pixel(col, row_up)
  for i, lx in ipairs(M.LEG_X) do
    if col >= lx and col < lx + M.LEG_W and row_up < M.LEG_H then return row_up < M.FOOT_H and M.FEET[i] or M.BODY end
  end
  local x, y = (col + 0.5) / M.RHINO_ZOOM, (row_up + 0.5) / M.RHINO_ZOOM
  if in_polygon(x, y, { { 262, 102 }, { 280, 100 }, { 294, 158 } }) then return M.HORN end       -- horn on the snout
  if in_polygon(x, y, { { 214, 128 }, { 228, 126 }, { 212, 152 } }) then return M.BODY end       -- ear
  if in_polygon(x, y, { { 22, 102 }, { 30, 96 }, { 6, 70 }, { 3, 73 } }) then return M.BODY end  -- tail
  if in_ellipse(x, y, 128, 88, 106, 46) then return M.BODY end                                    -- body
  if in_ellipse(x, y, 232, 92, 40, 34) then return M.BODY end                                     -- head
  if in_polygon(x, y, { { 236, 122 }, { 286, 96 }, { 292, 74 }, { 276, 62 }, { 228, 62 } }) then return M.BODY end -- snout
  return nil
end

--- The rhino as a cq.frames image (white background).
function M.rhino()
  local w, h = M.RHINO_SIZE[1], M.RHINO_SIZE[2]
  local img = cq.frames.image(w, h)
  for row = 0, h - 1 do
    for col = 0, w - 1 do
      local c = rhino_pixel(col, h - 1 - row)
      if c then img:set(col, row, c) end
    end
  end
  return img
end

-- ---- creature.obj / .stl ------------------------------------------------------------------------------------------

-- File units are millimetres of a 45 mm long creature standing on y = 0, y up, head towards +x; robot:mesh{scale =
-- 0.01} makes it 0.45 long. Legs: vertical cylinders at (x, z) = LEG_CENTRE + (+-LEG_DX, +-LEG_DZ).
M.LEG_CENTRE, M.LEG_DX, M.LEG_DZ, M.LEG_R, M.LEG_TOP = { 0, 0 }, 9.35, 6.6, 4, 13.2
M.CELL, M.QUANTUM = 2.75, 1 / 8 -- marching-tetrahedra grid cell; vertices rounded to multiples of QUANTUM (float-exact)

local function ellipsoid(x, y, z, c, r)
  local dx, dy, dz = (x - c[1]) / r[1], (y - c[2]) / r[2], (z - c[3]) / r[3]
  return (math.sqrt(dx * dx + dy * dy + dz * dz) - 1) * math.min(r[1], r[2], r[3])
end

-- Smooth minimum (blends two shapes over a distance k instead of leaving a crease).
local function smin(a, b, k)
  local t = math.max(k - math.abs(a - b), 0) / k
  return math.min(a, b) - t * t * k / 4
end

--- Signed distance-like function of the creature: < 0 inside.
function M.creature_sdf(x, y, z)
  local f = ellipsoid(x, y, z, { 0, 14.3, 0 }, { 15.4, 8.25, 10.45 })             -- body
  f = smin(f, ellipsoid(x, y, z, { 16.5, 19.25, 0 }, { 8.25, 7.7, 8.25 }), 2.75) -- head
  f = smin(f, ellipsoid(x, y, z, { -2.2, 22, 0 }, { 7.15, 6.6, 7.15 }), 2.2)     -- bulb on the back
  for _, s in ipairs { { -1, -1 }, { -1, 1 }, { 1, -1 }, { 1, 1 } } do
    local cx, cz = M.LEG_CENTRE[1] + s[1] * M.LEG_DX, M.LEG_CENTRE[2] + s[2] * M.LEG_DZ
    f = smin(f, math.max(math.sqrt((x - cx) ^ 2 + (z - cz) ^ 2) - M.LEG_R, y - M.LEG_TOP), 1.65)
  end
  return math.max(f, -y) -- flat soles on y = 0
end

--- The creature mesh.
function M.creature()
  local lo, hi = { -17, -1, -12.5 }, { 27, 30, 12.5 }
  local n = {}
  for a = 1, 3 do n[a] = math.ceil((hi[a] - lo[a]) / M.CELL) end
  return meshes.quantize(meshes.isosurface(M.creature_sdf, lo, hi, n), M.QUANTUM)
end

--- Writes every asset into dir; returns their paths.
function M.write(dir)
  local paths = { dir .. "/rhino.png", dir .. "/creature.obj", dir .. "/creature.stl", dir .. "/creature_ascii.stl" }
  M.rhino():write(paths[1])
  local mesh = M.creature()
  meshes.write_obj(paths[2], mesh, "four-legged creature, 45 mm long, y up (scenes/make_assets.lua)")
  meshes.write_stl(paths[3], mesh, "four-legged creature, 45 mm long, y up (scenes/make_assets.lua)")
  meshes.write_stl_ascii(paths[4], mesh, "creature")
  return paths
end

if arg and arg[0] and arg[0]:match("make_assets%.lua$") then
  for _, p in ipairs(M.write(arg[1] or here)) do print("wrote " .. p) end
end

return M
