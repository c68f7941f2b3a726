-- docs/experiments/water_rest2d.lua: scenes/fluid_validation.lua's resting_tank (tests/fluid_spec.lua's 2D tank of water at
-- rest: 15 x 21 cells of 2.5 mm, slip walls, gravity 9.8) for T seconds; prints its mean height's change and its
-- fastest particle ten times. docs/results/history.md, "Issue 11: why the water in the groups neither rests nor flows".
--
-- usage: build/bin/cqlua docs/experiments/water_rest2d.lua [per_axis=2.5] [T=1]
--   environment: DAMP (the world's damping, 1/s, 25), VOL (the world's volumetric, "averaged" or "particle";
--   averaged), BULK (the water's bulk modulus, 2.2e9), VISC (its viscosity, 1e-3), DT (the substep, 5e-3), INT (the
--   integrator, implicit), FLUID (the world's fluid: "particle" or "grid"), CELLS (the water's size in cells, "15,21";
--   three numbers: a 3D tank, e.g. "10,12,10"), PRECOND (implicit.precond)
package.path = "./scenes/?.lua;" .. package.path
local fv = require "fluid_validation"
local T = tonumber(arg[2] or 1)
local cells
if os.getenv("CELLS") then
  cells = {}
  for c in os.getenv("CELLS"):gmatch("%d+") do cells[#cells + 1] = tonumber(c) end
end
local r = fv.resting_tank { per_axis = tonumber(arg[1] or 2.5), T = T, reports = 10,
  volumetric = os.getenv("VOL") or "averaged", K = tonumber(os.getenv("BULK")), visc = tonumber(os.getenv("VISC")),
  damping = tonumber(os.getenv("DAMP")), dt = tonumber(os.getenv("DT")), integrator = os.getenv("INT"),
  fluid = os.getenv("FLUID"), cells = cells, implicit = { precond = os.getenv("PRECOND") } }
for k = 1, #r.drop do
  print(string.format("%d particles, t %.3f s: mean height %+.4f mm, fastest %.2e m/s", r.n, k * T / #r.drop,
    -r.drop[k] * 1e3, r.fastest[k]))
end
local st = r.stats
if st.substeps > 0 then
  print(string.format("implicit: %d substeps, %.2f Newton iterations, %.1f CG per iteration, %.2f halvings per " ..
    "iteration, %d factorisations (%.2f s)", st.substeps, st.newton / st.substeps, st.cg / math.max(1, st.newton),
    st.halvings / math.max(1, st.newton), st.factorizations or 0, st.factor_seconds or 0))
end
