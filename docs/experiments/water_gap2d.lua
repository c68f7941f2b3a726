-- docs/experiments/water_gap2d.lua: the 2D finger (scenes/finger2d.lua: finger2d.geo, mesh 1.5, DragonSkin-30 at its real bulk
-- modulus, volumetric = "averaged" unless VOL says otherwise, implicit 5 ms substeps) in a tank whose slip walls leave
-- gap_mm of water below it, beyond its tip and above it (then a free surface, 10 mm of air and the grid's top wall).
-- Without gravity by default, the chamber at p_kPa ramped over 0.1 s; prints the tip's displacement from its start
-- five times over T seconds.
-- docs/results/history.md, "Issue 11: the water in the groups" and "why the water in the groups neither rests nor flows":
-- in gaps of a few cells the water holds the bend; why is open (not the damping, the substep or the lack of free slip).
--
-- usage: build/bin/cqlua docs/experiments/water_gap2d.lua [air|water] [p_kPa=0.5] [T=1] [gap_mm=5]
--   environment: GRAV (m/s^2, 0), DAMP (the world's damping, 1/s, 25), K (the water's bulk modulus, 2.2e9), DX (m,
--   2.5e-3: the cell; the finger's mesh size is 0.6 DX and the water's spacing DX / PPA), PPA (the water's particles
--   per cell and axis, 2.5), DT (the substep, 5e-3), INT (the integrator, implicit; explicit needs DT <= 1.9e-6), VOL
--   (the world's volumetric, averaged), FLUID (the world's fluid: particle, or fill)
package.path = "./scenes/?.lua;" .. package.path
local finger2d = require "finger2d"
local medium, pk, T = arg[1] or "water", tonumber(arg[2] or 0.5), tonumber(arg[3] or 1)
local DT = tonumber(os.getenv("DT") or 5e-3)
local w, s, nf = finger2d.build { dx = tonumber(os.getenv("DX")), gap = tonumber(arg[4] or 5) * 1e-3, bulk = 1.75e9,
  water = medium == "water" and { bulk = tonumber(os.getenv("K")), per_axis = tonumber(os.getenv("PPA")) } or nil,
  dt = DT, gravity = tonumber(os.getenv("GRAV")), damping = tonumber(os.getenv("DAMP")), integrator = os.getenv("INT"),
  volumetric = os.getenv("VOL"), fluid = os.getenv("FLUID") }
local gap = tonumber(arg[4] or 5) * 1e-3
local tip = finger2d.tip(s, nf)
local x0 = s:mean("x", tip)
local every = math.floor(T / 5 / DT + 0.5)
for k = 1, every * 5 do
  w:step(s, { pk / 20 * math.min(1, k * DT / 0.1) })
  if k % every == 0 then
    local x = s:mean("x", tip)
    print(string.format("%s gap %g mm p %g t %.2f tip dx %+.3f dy %+.3f mm n %d", medium, gap * 1e3, pk, k * DT,
      (x[1] - x0[1]) * 1e3, (x[2] - x0[2]) * 1e3, w.n))
    io.stdout:flush()
  end
end
local st = w:solver_stats()
if st.substeps > 0 then
  print(string.format("implicit: %d substeps (%d split), %.2f Newton iterations, %.1f CG per iteration, %.2f halvings per " ..
    "iteration, %d factorisations (%.2f s)", st.substeps, st.splits, st.newton / st.substeps, st.cg / math.max(1, st.newton),
    st.halvings / math.max(1, st.newton), st.factorizations, st.factor_seconds))
end
