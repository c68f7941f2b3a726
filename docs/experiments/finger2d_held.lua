-- docs/experiments/finger2d_held.lua: the 2D finger of examples/finger_inverse.lua's 2D runs (scenes/finger2d.lua, mesh 1.5, both
-- bulk moduli 1.75 GPa, fill water 5 mm around it, gravity, implicit 5 ms substeps) with its chamber pressure ramped
-- from 0 to p_kPa over RAMP s (0.3; 0: a step) and then held, for T seconds. Prints every 10 substeps the tip, the
-- solver's work, the splits and the range of the finger particles' own J (with volumetric = "averaged" a member's J
-- is set to its group's mean at each substep's start; the default, since issue 62, leaves it to the own share);
-- writes the finger (alone) as
-- frames at the substeps listed in FRAMES. Stops at the first error (a blow-up, or Newton failing in a piece split 6
-- times). docs/results/history.md, "Issue 11: the inverse at t = 1 s": the fixed groups tear the finger after 0.6 s at 8
-- kPa.
--
-- usage: build/bin/cqlua docs/experiments/finger2d_held.lua [p_kPa=8] [groups=current] [T=1.2]
--   environment: FRAMES (substeps, e.g. "60,120,140": out/finger2d_held/<groups>_<p>_<substep>.png), TOL and MAX_CG
--   (implicit.tol and .max_cg: how far the tip moves with the solver's tolerance alone), BUMP (Pa: a hat of that
--   height added to the pressure from 0 to 0.1 s, peaking at 0.05 s: the ramp's first control changed, to measure
--   how far the tip at T moves with it), DX (m: the cell, 2.5e-3), MESH (m: the finger's mesh size, 0.6 DX; below it
--   more particles per cell across the thin walls), RAMP (s), FILL_ROUNDS (implicit.fill_rounds), OWN (volumetric_own:
--   16 keeps the fixed groups' finger whole at 8 kPa, docs/results/history.md "the own share")
package.path = "./scenes/?.lua;" .. package.path
local cq = require "cq"
local finger2d = require "finger2d"
local pk, groups, T = tonumber(arg[1] or 8), arg[2] or "current", tonumber(arg[3] or 1.2)
local DT = 5e-3
local DX = tonumber(os.getenv("DX") or 2.5e-3)
local bump = tonumber(os.getenv("BUMP") or 0)
local MESH = tonumber(os.getenv("MESH") or 0.6 * DX)
local RAMP = tonumber(os.getenv("RAMP") or 0.3)
local world, s, nf = finger2d.build { dx = DX, mesh = MESH, bulk = 1.75e9, gap = 5e-3, water = { bulk = 1.75e9 },
  fluid = "grid", volumetric_groups = groups, volumetric_own = tonumber(os.getenv("OWN")), dt = DT, gravity = 9.8,
  implicit = { tol = tonumber(os.getenv("TOL")), max_cg = tonumber(os.getenv("MAX_CG")),
    fill_rounds = tonumber(os.getenv("FILL_ROUNDS")) } }
local fw, fs = finger2d.build { dx = DX, mesh = MESH, bulk = 1.75e9, gap = 5e-3 } -- the finger alone, to draw it
local n, tip = world.n, finger2d.tip(s, nf)
local frames = {}
for k in (os.getenv("FRAMES") or ""):gmatch("%d+") do frames[tonumber(k)] = true end
if next(frames) then os.execute("mkdir -p out/finger2d_held") end
local function own_J_range()
  local lo, hi = math.huge, -math.huge
  for p = 0, nf - 1 do
    local J = s.F[p] * s.F[3 * n + p] - s.F[n + p] * s.F[2 * n + p]
    lo, hi = math.min(lo, J), math.max(hi, J)
  end
  return lo, hi
end
local T0 = os.clock()
for k = 1, math.floor(T / DT + 0.5) do
  local t = (k - 1) * DT
  local ramp = RAMP > 0 and math.min(1, t / RAMP) or 1
  local u = (pk * 1e3 * ramp + bump * math.max(0, 1 - math.abs(t - 0.05) / 0.05)) / finger2d.P_MAX
  local ok, err = pcall(world.step, world, s, { u })
  if not ok then
    print(string.format("substep %d (t %.3f s): %s", k, k * DT, err))
    break
  end
  if frames[k] then
    for a = 0, 1 do for i = 0, nf - 1 do fs.x[a * nf + i] = s.x[a * n + i] end end
    cq.frames.render_state { world = fw, state = fs, u = { u }, width = 640 }:write(
      string.format("out/finger2d_held/%s_%g_%03d.png", groups, pk, k))
  end
  if k % 10 == 0 then
    local x, st = s:mean("x", tip), world:solver_stats(true)
    local lo, hi = own_J_range()
    print(string.format("substep %3d t %.3f s  p %5.2f kPa  tip (%.4f, %.4f) mm  Newton %4d CG %5d factorisations %4d " ..
      "splits %2d  own J [%.4f, %.4f]  %.1f s", k, k * DT, u * finger2d.P_MAX / 1e3, x[1] * 1e3, x[2] * 1e3, st.newton,
      st.cg, st.factorizations, st.splits, lo, hi, os.clock() - T0))
    io.stdout:flush()
  end
end
