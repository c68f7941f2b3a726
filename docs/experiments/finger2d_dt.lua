-- docs/experiments/finger2d_dt.lua: the 2D section of seed 003's finger (scenes/finger2d.geo, DragonSkin-30 at its real bulk
-- modulus) pressurised by its closed chamber, run to T by each integrator and substep asked for: the tip's dy at the
-- peak and at T, and the wall time. The accuracy / cost study of docs/results/history.md ("Issue 11").
--
-- usage: build/bin/cqlua docs/experiments/finger2d_dt.lua [runs=implicit:5e-3,implicit:1e-3] [kPa=2] [T=1] [bulk=1.75e9]
--          [mesh=1.5] [volumetric=averaged] [damping=25] [ramp=0.1] [pressure=lagged|implicit] [ivolume=linear|exact]
--   runs  integrator:substep pairs; explicit:0 is half the explicit CFL limit
local cq = require "cq"
local now = require("cq.clock").now

local o = { runs = "implicit:5e-3,implicit:1e-3", kPa = 2, T = 1, bulk = 1.75e9, mesh = 1.5, volumetric = "averaged",
  damping = 25, ramp = 0.1, pressure = "lagged", ivolume = "linear" }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^([%w_]+)=(.+)$")
  if not k or o[k] == nil then error("finger2d_dt: unknown argument " .. a, 0) end
  o[k] = tonumber(v) or v
end
local DX, SHEAR, CONTROL = 2.5e-3, 2 * (1.19e3 + 23.028e3), 5e-3 -- m, Pa, s (the pressure is set every 5 ms)

local function run(integrator, dt)
  if integrator == "explicit" and dt == 0 then dt = 0.5 * DX / math.sqrt((o.bulk + 4 / 3 * SHEAR) / 1080) end
  local substeps = math.max(1, math.ceil(CONTROL / dt - 1e-9))
  local r = cq.robot { dim = 2 }
  local g = r:gmsh { path = "scenes/finger2d.geo", offset = { 0.01, 0.2 }, scale = 1e-3, mesh_size = o.mesh,
    material = { preset = "dragonskin30", bulk = o.bulk } }
  r:chamber { wall = g.chambers.chamber, max = 20e3 }
  local w, s = r:world { res = { 64, 128 }, dx = DX, dt = CONTROL, substeps = substeps, gravity = { 0, -9.8 },
    damping = o.damping, walls = { left = { type = "sticky", thickness = 6 } }, threads = 1, integrator = integrator,
    volumetric = o.volumetric, implicit = integrator == "implicit" and { pressure = o.pressure, volume = o.ivolume } or nil }
  local maxx, tip = -1, {}
  for p = 0, s.n - 1 do maxx = math.max(maxx, s.x[p]) end
  for p = 0, s.n - 1 do if s.x[p] > maxx - 3e-3 then tip[#tip + 1] = p + 1 end end
  local y0, peak, t0 = s:mean("x", tip)[2], 0, now()
  local steps = math.floor(o.T / CONTROL + 0.5)
  for k = 1, steps do
    local ok, e = pcall(w.step, w, s, { o.kPa / 20 * math.min(1, k * CONTROL / o.ramp) })
    if not ok then
      print(string.format("%-8s %-9g failed at t = %.3f s: %s", integrator, CONTROL / substeps, k * CONTROL,
        tostring(e):sub(1, 300)))
      return
    end
    peak = math.min(peak, s:mean("x", tip)[2] - y0)
  end
  print(string.format("%-8s %-9.3g peak %8.3f mm, at %g s %8.3f mm, wall %6.1f s (%d particles)", integrator,
    CONTROL / substeps, 1e3 * peak, o.T, 1e3 * (s:mean("x", tip)[2] - y0), now() - t0, w.n))
end

print(string.format("2D finger: mesh %g mm, bulk %g Pa, %g kPa ramped over %g s, damping %g/s, %s", o.mesh, o.bulk,
  o.kPa, o.ramp, o.damping, o.volumetric))
for pair in tostring(o.runs):gmatch("[^,]+") do
  local integrator, dt = pair:match("^(%a+):(.+)$")
  run(integrator, tonumber(dt))
end
