-- docs/experiments/thick_actuator_water.lua: does a pneumatic actuator whose walls the grid resolves bend in water?
-- The 3D finger of seed 003 at dx 2.5 mm has chamber walls 1.2-1.6 cells thick and is held in water at about 30 % of
-- its bend in air (docs/results/history.md, the fiftieth to fifty-second sessions). This is a coarse stand-in with
-- every wall at least 3 cells thick: a block 35 x 80 x 30 mm (x, y, z) hanging from the top sticky band (its base
-- 3.5 mm inside it, as scenes/finger.lua's), DragonSkin-30 with its bulk lowered to 2 MPa, one box cavity 10 x 65 x 15
-- mm offset towards -x (walls: -x 7.5 mm = 3 cells, +x 17.5 mm, z 7.5 mm, the tip 7.5 mm; wall_mm thins the -x and
-- z walls, the cavity growing into them, to compare a wall the grid does not resolve), its pressure ramped over 0.1 s.
-- Offset from the block's middle, the cavity bends the block (towards -x in air). In water the block hangs
-- in a tank of grid water (the library's default, `fluid = "grid"`), gap mm of water on every side and below, on the
-- block's lattice (robot:box spacing dx / 2 for both), so they meet without a seam. No gravity. Explicit, one thread.
-- Prints the tip's (dx, dy, dz) in mm six times over T.
-- usage: cqlua docs/experiments/thick_actuator_water.lua [media=water|air] [p_kPa=20] [T=0.3] [K=2e6] [gap_mm=10]
--        [fluid=grid] [dx_mm=2.5] [wall_mm=7.5] [dim=3] [surface_mm=10] [contact=sticky]
-- surface_mm: the water's free surface below the block's base (the headroom the displaced water rises into).
-- contact: the world's fluid_contact, "sticky" (one velocity field, the default) or "separate" (the water on its own
-- copy of the grid's velocities, meeting the block through the fill's pressure only).
-- dim 2: the block's x-y section in plane strain (no z walls), a quick stand-in for the 3D block.
local cq = require "cq"
local media, pk, T = arg[1] or "water", tonumber(arg[2] or 20), tonumber(arg[3] or 0.3)
local K, gap, fluid = tonumber(arg[4] or 2e6), tonumber(arg[5] or 10) * 1e-3, arg[6] or "grid"
local dx = tonumber(arg[7] or 2.5) * 1e-3
local wall = tonumber(arg[8] or 7.5) * 1e-3
local dim = tonumber(arg[9] or 3)
local surface = tonumber(arg[10] or 10) * 1e-3
local contact = arg[11] or "sticky"
local h = dx / 2
local W = 3 -- the grid's walls (cells)
local BX, BY, BZ = 0.035, 0.080, 0.030
local function lat(x) return math.floor(x / h + 1e-9) * h end
local function cells(width) return 2 * W - 1 + math.ceil(width / dx - 1e-9) end
local water = media == "water"
local res = water and { cells(gap + BX + gap), cells(BY + gap + 0.01), cells(gap + BZ + gap) }
  or { cells(0.1), cells(BY + 0.04), cells(BZ + 0.02) }
local function cut(t) if dim == 2 then t[3] = nil end return t end -- dim 2: the x-y section
res = cut(res)
local inner = (W - 1) * dx -- the walls' innermost node
local X0 = water and lat(inner + gap) or lat(0.03)
local Z0 = water and lat(inner + gap) or lat(0.01)
local top = lat((res[2] - 3) * dx + 3.5e-3) -- the base, 3.5 mm inside the top band
local Y0 = top - BY
local r = cq.robot { dim = dim }
local blk = r:box { offset = cut { X0, Y0, Z0 }, size = cut { BX, BY, BZ }, spacing = h,
  material = { preset = "dragonskin30", bulk = 2e6 }, name = "block",
  cavities = { { offset = cut { X0 + wall, Y0 + 0.0075, Z0 + wall },
    size = cut { 0.0175 - wall, 0.065, BZ - 2 * wall }, name = "chamber" } } }
r:chamber { wall = blk.chambers.chamber, max = 50e3 }
local nb = #blk.particles
if water then
  local level = Y0 + BY - surface -- the free surface below the base
  local lo = cut { X0 - lat(X0 - inner), inner, Z0 - lat(Z0 - inner) }
  local hi = cut { (res[1] - W) * dx, level, ((res[3] or 0) - W) * dx }
  local size = {}
  for a = 1, dim do size[a] = lat(hi[a] - lo[a]) end
  local flo, fhi = cut { X0, Y0, Z0 }, cut { X0 + BX, math.huge, Z0 + BZ }
  r:box { offset = lo, size = size, spacing = h, name = "water",
    material = { preset = "water", bulk = K, visc = 1e-3, density = 1000 },
    keep = function(x)
      for a = 1, dim do if x[a] < flo[a] - h / 4 or x[a] > fhi[a] + h / 4 then return true end end
      return false
    end }
end
local dt = 0.5 * dx / math.sqrt(math.max(K / 1000, (2e6 + 4 / 3 * 48e3) / 1080))
local walls = { top = { type = "sticky", thickness = 3 } }
if water then walls.all = { type = "slip", thickness = W } end
local w, s = r:world { res = res, dx = dx, dt = dt, gravity = cut { 0, 0, 0 }, damping = 25, walls = walls,
  threads = 1, fluid = water and fluid or nil, fluid_contact = water and contact or nil }
local tip = {}
for i = 0, nb - 1 do if s.x[w.n + i] < Y0 + 3e-3 then tip[#tip + 1] = i + 1 end end
local x0 = s:mean("x", tip)
local steps = math.floor(T / dt + 0.5)
local every = math.floor(steps / 6)
local t0 = os.clock()
for k = 1, steps do
  w:step(s, { pk * 1e3 / 50e3 * math.min(1, k * dt / 0.1) })
  if k % every == 0 then
    local x = s:mean("x", tip)
    print(string.format("%s%s wall %g mm K %g gap %g mm p %g kPa t %.3f s: tip (%.3f, %.3f, %.3f) mm; %d block "
      .. "particles, %d in all, %.0f s", media, water and " (" .. contact .. ")" or "", wall * 1e3, K, gap * 1e3, pk,
      k * dt, (x[1] - x0[1]) * 1e3,
      (x[2] - x0[2]) * 1e3, ((x[3] or 0) - (x0[3] or 0)) * 1e3, nb, w.n, os.clock() - t0))
    io.stdout:flush()
  end
end
