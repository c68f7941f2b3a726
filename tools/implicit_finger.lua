-- tools/implicit_finger.lua: the finger of examples/finger_pressure.lua (scenes/finger.lua) run by both integrators
-- from the same start under the same pressure ramp: the fingertip trajectories side by side (issue 11's "same
-- physics" check: within 2 % at a small dt) and the wall time of each. For docs/results/history.md.
--
-- usage: build/bin/cqlua tools/implicit_finger.lua [bulk=2e6] [kPa=10] [T=0.2] [dt=1e-4] [precond=mass]
--          [mesh=4] [ramp=0.1] [explicit_T=T] [threads=1] [volumetric=solids] [control=0] [out=DIR]
--   bulk     the silicone's bulk modulus (Pa); the real 1.75e9 makes the explicit run take ~35 min per simulated s
--   dt       the implicit substep (the explicit one is half its CFL limit at that bulk)
--   precond  the implicit solve's preconditioner (mass, factor, auto)
--   ramp     the time (s) over which the pressure rises to kPa, then held
--   volumetric  the world option: solids (the default: the silicone's bulk term on the groups' averaged J, no locking),
--            particle (each particle's own volume term, which locks at the real bulk modulus) or averaged
--   explicit_T  how much of the run the explicit integrator simulates (s); its wall time for T is then extrapolated
--            (per substep: the explicit substep's cost does not change along the run), and the trajectories are
--            compared up to explicit_T. The issue's cost benchmark, 1 s of the real finger (docs/results/history.md):
--            bulk=1.75e9 kPa=5 ramp=0.5 T=1 dt=5e-3 precond=factor explicit_T=0.02
--   control  > 0: the explicit run sets the pressure once per control step of this length (s; it must divide 5 ms),
--            made of as many substeps as it takes. On a GPU such a control step runs without the host in between
--            (cuda/README.md: batches), so the explicit run at the real bulk modulus takes minutes there. 0: the
--            pressure is set every substep.
-- Environment: CQ_FINGER_MSH = a .msh file of scenes/finger.geo meshed already (for machines without gmsh).
-- Writes DIR/implicit_finger.csv (time, tip displacement of each) and DIR/implicit_finger.png (default out/).
package.path = "./scenes/?.lua;" .. package.path
local cq = require "cq"
local finger = require "finger"
local now = require("cq.clock").now

local o = { bulk = 2e6, kPa = 10, T = 0.2, dt = 1e-4, precond = "mass", mesh = 4, ramp = 0.1, explicit_T = 0,
  threads = 1, volumetric = "solids", control = 0, out = "out" }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^([%w_]+)=(.+)$")
  if not k or o[k] == nil then
    error("usage: cqlua tools/implicit_finger.lua [bulk=2e6] [kPa=10] [T=0.2] [dt=1e-4] [precond=mass] [mesh=4] "
      .. "[ramp=0.1] [explicit_T=T] [threads=1] [volumetric=solids] [control=0] [out=DIR] (got " .. a .. ")", 0)
  end
  o[k] = tonumber(v) or v
end
os.execute("mkdir -p '" .. o.out .. "'")
if o.explicit_T <= 0 or o.explicit_T > o.T then o.explicit_T = o.T end
local RAMP, SAMPLE = o.ramp, 5e-3 -- s: the pressure's ramp, and how often the tip is recorded

local MSH = os.getenv("CQ_FINGER_MSH") -- a .msh of scenes/finger.geo meshed already (machines without gmsh)

-- Runs one integrator; returns the tip displacement (m, 3 components) at every SAMPLE, the wall time, the world.
local function run(integrator, dt, T)
  local control = integrator == "explicit" and o.control > 0 and o.control or nil
  local world, s = finger.build { mesh_size = o.mesh, msh = MSH, bulk = o.bulk, integrator = integrator, dt = dt,
    control_dt = control, threads = o.threads, implicit = integrator == "implicit" and { precond = o.precond } or nil,
    volumetric = o.volumetric }
  local tip = finger.tip_of(world, s)
  local t0, samples = tip(), {}
  local per = math.floor(SAMPLE / world.dt + 0.5)
  if math.abs(per * world.dt - SAMPLE) > 1e-9 then
    error(string.format("implicit_finger: %s = %g s must divide the sampling interval %g s", control and "control"
      or "dt", world.dt, SAMPLE), 0)
  end
  local clock, steps = now(), math.floor(T / world.dt + 0.5)
  for k = 1, steps do
    world:step(s, { o.kPa * 1e3 / finger.P_MAX * math.min(1, k * world.dt / RAMP) })
    if k % per == 0 then
      local t1 = tip()
      samples[#samples + 1] = { t1[1] - t0[1], t1[2] - t0[2], t1[3] - t0[3] }
    end
  end
  return samples, now() - clock, world
end

-- explicit at half its CFL limit, rounded down so that it divides the sampling interval
local dt_e = SAMPLE / math.ceil(SAMPLE / finger.explicit_dt(o.bulk))
local se, te, we = run("explicit", dt_e, o.explicit_T)
dt_e = we.dt / we.substeps -- with control steps: the substep they are cut into
local si, ti, wi = run("implicit", o.dt, o.T)
te = te * o.T / o.explicit_T -- the explicit wall time for the whole T
local st = wi:solver_stats()

local csv = assert(io.open(o.out .. "/implicit_finger.csv", "w"))
csv:write("t_s,explicit_mm,implicit_mm,difference_mm\n")
local peak, worst = 0, 0
for k = 1, #si do -- the explicit columns empty after explicit_T
  local a, b = se[k], si[k]
  local db = math.sqrt(b[1] ^ 2 + b[2] ^ 2 + b[3] ^ 2)
  if a then
    local da = math.sqrt(a[1] ^ 2 + a[2] ^ 2 + a[3] ^ 2)
    local diff = math.sqrt((a[1] - b[1]) ^ 2 + (a[2] - b[2]) ^ 2 + (a[3] - b[3]) ^ 2)
    peak, worst = math.max(peak, da), math.max(worst, diff)
    csv:write(string.format("%.4f,%.6g,%.6g,%.6g\n", k * SAMPLE, da * 1e3, db * 1e3, diff * 1e3))
  else
    csv:write(string.format("%.4f,,%.6g,\n", k * SAMPLE, db * 1e3))
  end
end
csv:close()
print(string.format("finger (%d particles), bulk %.3g Pa, %g kPa ramped over %g s, %g s simulated", we.n, o.bulk,
  o.kPa, RAMP, o.T))
print(string.format("  explicit: dt %.3g s, %d substeps, %.1f s wall (%.3f ms per substep%s)", dt_e,
  math.floor(o.T / dt_e + 0.5), te, te / (o.T / dt_e) * 1e3, o.explicit_T < o.T and
  string.format("; %g s simulated, the rest extrapolated", o.explicit_T) or ""))
print(string.format("  implicit: dt %.3g s (%.1fx the explicit limit), precond %s, %d substeps, %.1f s wall; Newton "
  .. "%d, CG %d, halvings %d, factorisations %d (%.1f s)", o.dt, o.dt / finger.explicit_dt(o.bulk) / 2, o.precond,
  st.substeps, ti, st.newton, st.cg, st.halvings, st.factorizations, st.factor_seconds))
print(string.format("  implicit / explicit wall time for %g s: %.1f s / %.1f s = explicit %.1fx slower", o.T, ti, te, te / ti))
local last = si[#si]
print(string.format("  implicit tip at t = %g s: (%.3f, %.3f, %.3f) mm", o.T, last[1] * 1e3, last[2] * 1e3, last[3] * 1e3))
if #se == 0 then -- explicit_T shorter than one sampling interval: nothing to compare
  print(string.format("  tip: no explicit sample to compare (explicit_T = %g s, the tip sampled every %g s)", o.explicit_T,
    SAMPLE))
else
  print(string.format("  tip: explicit peak %.3f mm, final %.3f / %.3f mm; largest trajectory difference %.4f mm = "
    .. "%.2f %% of the peak (up to t = %g s)", peak * 1e3, math.sqrt(se[#se][1] ^ 2 + se[#se][2] ^ 2 + se[#se][3] ^ 2) *
    1e3, math.sqrt(si[#se][1] ^ 2 + si[#se][2] ^ 2 + si[#se][3] ^ 2) * 1e3, worst * 1e3, 100 * worst / peak, o.explicit_T))
end
cq.plot { csv = o.out .. "/implicit_finger.csv", x = "t_s", y = { "explicit_mm", "implicit_mm" },
  out = o.out .. "/implicit_finger.png", style = "lines", title = string.format("finger at %g kPa, bulk %.3g Pa",
  o.kPa, o.bulk), xlabel = "time (s)", ylabel = "fingertip displacement (mm)" }
