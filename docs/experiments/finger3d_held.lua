-- docs/experiments/finger3d_held.lua: the 3D finger of scenes/finger.lua (DragonSkin-30 at its real bulk modulus 1.75 GPa,
-- volumetric = "averaged") in its tank of fill water (fluid = "grid", bulk WATER_BULK, particles SPACING apart),
-- implicit 5 ms substeps, its chamber pressure ramped from 0 to p_kPa over RAMP s and then held, for T seconds. Prints
-- every EVERY substeps the tip's displacement from the start and the solver's work (Newton, CG, factorisations and
-- their time, splits). With MEDIUM=air the same finger without the water. docs/results/history.md, "Issue 11: the fill water
-- in 3D, implicitly".
--
-- usage: build/bin/cqlua docs/experiments/finger3d_held.lua [p_kPa=10] [T=0.6] [mesh_mm=3]
--   environment: WATER_BULK (Pa, 2.2e9), SPACING (m, 2e-3), GAP (m: the water on every side of the finger; scenes/
--   finger.lua's 14/10/10 mm by default), RAMP (s, 0.1), DT (s, 5e-3), EVERY (10), MEDIUM (water),
--   PRECOND (implicit.precond), FILL_ROUNDS (implicit.fill_rounds), CSV (a file: t and the tip's displacement per
--   printed line)
package.path = "./scenes/?.lua;" .. package.path
local finger = require "finger"
local pk, T, mesh = tonumber(arg[1] or 10), tonumber(arg[2] or 0.6), tonumber(arg[3] or 3)
local DT, RAMP = tonumber(os.getenv("DT") or 5e-3), tonumber(os.getenv("RAMP") or 0.1)
local EVERY = tonumber(os.getenv("EVERY") or 10)
local water = (os.getenv("MEDIUM") or "water") == "water" and
  { bulk = tonumber(os.getenv("WATER_BULK") or 2.2e9), spacing = tonumber(os.getenv("SPACING") or 2e-3),
    gap = os.getenv("GAP") and { tonumber(os.getenv("GAP")), tonumber(os.getenv("GAP")), tonumber(os.getenv("GAP")) } }
  or nil
local world, s, nf = finger.build { mesh_size = mesh, bulk = 1.75e9, water = water, fluid = water and "grid" or nil,
  volumetric = "averaged", integrator = "implicit", dt = DT,
  implicit = { precond = os.getenv("PRECOND"), fill_rounds = tonumber(os.getenv("FILL_ROUNDS")) } }
local tip = finger.tip_of(world, s, nf)
local x0 = tip()
print(string.format("%d particles (%d finger), %s, %.1f kPa over %.2f s, dt %g s", world.n, nf,
  water and string.format("fill water at %.3g Pa", water.bulk) or "air", pk, RAMP, DT))
local csv = os.getenv("CSV") and assert(io.open(os.getenv("CSV"), "w"))
if csv then csv:write("t_s,dx_mm,dy_mm,dz_mm,newton,cg,factor_s\n") end
local clock = os.clock()
local wall0 = os.time()
for k = 1, math.floor(T / DT + 0.5) do
  local t = (k - 1) * DT
  local u = pk * 1e3 * math.min(1, t / RAMP) / finger.P_MAX
  local ok, err = pcall(world.step, world, s, { u })
  if not ok then
    print(string.format("substep %d (t %.3f s): %s", k, k * DT, err))
    break
  end
  if k % EVERY == 0 then
    local x, st = tip(), world:solver_stats(true)
    local d = { (x[1] - x0[1]) * 1e3, (x[2] - x0[2]) * 1e3, (x[3] - x0[3]) * 1e3 }
    print(string.format("substep %4d t %.3f s  p %5.2f kPa  tip d (%.4f, %.4f, %.4f) mm |d| %.4f  Newton %4d CG %5d " ..
      "factorisations %3d (%.1f s, %d refused) splits %d  wall %d s", k, k * DT, u * finger.P_MAX / 1e3, d[1], d[2],
      d[3], math.sqrt(d[1] ^ 2 + d[2] ^ 2 + d[3] ^ 2), st.newton, st.cg, st.factorizations, st.factor_seconds,
      st.factor_failures, st.splits, os.time() - wall0))
    io.stdout:flush()
    if csv then
      csv:write(string.format("%.4f,%.5f,%.5f,%.5f,%d,%d,%.2f\n", k * DT, d[1], d[2], d[3], st.newton, st.cg,
        st.factor_seconds))
      csv:flush()
    end
  end
end
if csv then csv:close() end
print(string.format("cpu %.0f s", os.clock() - clock))
