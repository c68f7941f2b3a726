-- tools/water_rest2d.lua: a 2D tank of water at rest (tests/fluid_spec.lua's: 15 x 21 cells of 2.5 mm filled
-- with water, slip walls, gravity 9.8) for T seconds; prints its mean height's change and its fastest
-- particle ten times. Water at rest should stay at rest: the mean height falls by its compression (micrometres) and
-- the speeds decay with the start-up pressure wave. docs/benchmarks.md, "Issue 11: why the water in the groups
-- neither rests nor flows".
--
-- usage: build/bin/cqlua tools/water_rest2d.lua [per_axis=2.5] [T=1]
--   environment: DAMP (the world's damping, 1/s, 25), VOL (the world's volumetric, "averaged" or "particle";
--   averaged), BULK (the water's bulk modulus, 2.2e9), VISC (its viscosity, 1e-3), DT (the substep, 5e-3), INT (the
--   integrator, implicit)
local cq = require "cq"
local per_axis, T = tonumber(arg[1] or 2.5), tonumber(arg[2] or 1)
local DX, DT = 2.5e-3, tonumber(os.getenv("DT") or 5e-3)
local h = DX / per_axis
local r = cq.robot { dim = 2 }
r:box { offset = { 2 * DX, 2 * DX }, size = { math.floor(15 * DX / h + 1e-9) * h, math.floor(21 * DX / h + 1e-9) * h },
  spacing = h, name = "water", material = { preset = "water", bulk = tonumber(os.getenv("BULK") or 2.2e9),
    visc = tonumber(os.getenv("VISC") or 1e-3) } }
local w, s = r:world { res = { 20, 40 }, dx = DX, dt = DT, gravity = { 0, -9.8 }, damping = tonumber(os.getenv("DAMP") or 25),
  walls = { all = { type = "slip", thickness = 3 } }, integrator = os.getenv("INT") or "implicit",
  volumetric = os.getenv("VOL") or "averaged" }
local n = w.n
local function mean_y()
  local m = 0
  for p = 0, n - 1 do m = m + s.x[n + p] end
  return m / n
end
local y0, steps = mean_y(), math.floor(T / DT + 0.5)
local every = math.max(1, math.floor(steps / 10))
for k = 1, steps do
  w:step(s, {})
  if k % every == 0 or k == steps then
    local vmax = 0
    for p = 0, n - 1 do vmax = math.max(vmax, math.sqrt(s.v[p] ^ 2 + s.v[n + p] ^ 2)) end
    print(string.format("%d particles, t %.3f s: mean height %+.4f mm, fastest %.2e m/s", n, k * DT,
      (mean_y() - y0) * 1e3, vmax))
  end
end
