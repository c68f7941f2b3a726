-- docs/experiments/finger2d_lattice_water.lua: a 2D PneuNet-like finger built on a lattice (robot:box with six
-- chamber cavities on its -x side; DragonSkin-30, its bulk lowered to 2 MPa; dx 1.25 mm, particles every 0.625 mm)
-- hanging from the top sticky band into grid water with a free surface AIR mm (10) below the band, pressurised to
-- p_kPa over 0.2 s without gravity, explicit. Width 16.25 mm (26 spacings) meets the water's lattice (2 per cell and
-- axis) seamlessly; 16 mm (the box rounds its spacing to 0.615 mm) leaves seams. Prints the tip's (dx, dy) in mm every
-- T / 10 (docs/results/history.md, "the seam between a body and its water": seamless, it bends in water as in air).
-- usage: cqlua docs/experiments/finger2d_lattice_water.lua [media=water|air] [width_mm=16.25] [per_axis=2] [K=2.2e4]
--        [p_kPa=5] [T=1]    environment: AIR (mm of air between the water and the band, 10)
local cq = require "cq"
local media, W, ppa, K = arg[1] or "water", tonumber(arg[2] or 16.25) * 1e-3, tonumber(arg[3] or 2), tonumber(arg[4] or 2.2e4)
local pk, T = tonumber(arg[5] or 5), tonumber(arg[6] or 1)
local dx = 1.25e-3
local h = dx / 2
local L, gap, below = 100e-3, 15e-3, 15e-3
local WALL = 3
local function cells(inside) return 2 * WALL - 1 + math.ceil(inside / dx - 1e-9) end
local res = { cells(2 * gap + W) + 1, cells(below + L) + 2 }
local lo = (WALL - 1) * dx
local top = (res[2] - WALL) * dx
local fx0, fy0 = lo + gap, top - L
local r = cq.robot { dim = 2 }
local cav = {}
for k = 0, 5 do -- six chambers 10 mm tall on the -x side, walls 5 mm between them, a 5 mm skin on -x, 5 mm base on +x
  cav[#cav + 1] = { offset = { fx0 + 3.75e-3, fy0 + 8.75e-3 + k * 13.75e-3 }, size = { W - 8.75e-3, 8.75e-3 }, name = "chamber" }
end
local g = r:box { offset = { fx0, fy0 }, size = { W, L + dx }, spacing = h, name = "finger", cavities = cav,
  material = { preset = "dragonskin30", bulk = 2e6 } }
local nf = #r.x
r:chamber { wall = g.chambers.chamber, max = 20e3 }
if media == "water" then
  local hw = dx / ppa
  local wtop = top - (tonumber(os.getenv("AIR")) or 10) * 1e-3
  r:box { offset = { lo, lo }, size = { math.floor((res[1] - 2 * WALL + 1) * dx / hw + 1e-9) * hw, math.floor((wtop - lo) / hw + 1e-9) * hw },
    spacing = hw, name = "water", material = { preset = "water", bulk = K },
    keep = function(x) return x[1] < fx0 - hw / 4 or x[1] > fx0 + W + hw / 4 or x[2] < fy0 - hw / 4 end }
end
local c = math.sqrt((2e6 + 4 / 3 * 48e3) / 1080)
local dt = 0.4 * dx / c
local w, s = r:world { res = res, dx = dx, dt = dt, gravity = { 0, 0 }, damping = 25, threads = 1,
  walls = { all = { type = "slip", thickness = WALL }, top = { type = "sticky", thickness = WALL } } }
local n, tip = w.n, {}
for i = 0, nf - 1 do if s.x[n + i] < fy0 + 3e-3 then tip[#tip + 1] = i end end
local function tipx() local m, my = 0, 0 for _, i in ipairs(tip) do m = m + s.x[i]; my = my + s.x[n + i] end return m / #tip, my / #tip end
local x0, y0 = tipx()
local steps = math.floor(T / dt + 0.5)
local every = math.floor(steps / 10 + 0.5)
local out = {}
local t0 = os.clock()
for k = 1, steps do
  local t = k * dt
  w:step(s, { pk / 20 * math.min(1, t / 0.2) })
  if k % every == 0 then local x, y = tipx() out[#out + 1] = string.format("%.2f/%.2f", (x - x0) * 1e3, (y - y0) * 1e3) end
end
print(string.format("%s width %.2f ppa %g K %g p %g kPa n %d %.0fs tip dx/dy mm:", media, W * 1e3, ppa, K, pk, n, os.clock() - t0), table.concat(out, " "))
