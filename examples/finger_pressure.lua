-- Seed 003 sec. 4.2, in air: a PneuNet-style pneumatic finger (scenes/finger.geo, meshed by gmsh; one particle per
-- tetrahedron) of DragonSkin-30 (the seed's Mooney-Rivlin fit, bulk modulus 1.75 GPa), clamped at its base, hanging
-- under gravity, its chambers pressurised at 0, 5, 10, 15 and 20 kPa. For each pressure: ramp it up over 0.1 s, let
-- the finger settle (damped), and record the fingertip's displacement. Writes out/finger_pressure.csv, a plot
-- out/finger_pressure.png, and a picture of each settled finger coloured by von Mises stress
-- (out/finger_pressure/p<kPa>.png). Explicit integration: the substep must resolve sound in a 1.75 GPa solid
-- (about 1 us at 2.5 mm cells); the time per pressure is printed (docs/results/history.md). Issue 11 makes it implicit.
-- Usage: cqlua examples/finger_pressure.lua [mesh_size_mm=3] [settle_s=0.5] [bulk_Pa=1.75e9]
--          [pressures_kPa=0,5,10,15,20]   (--help: every key and its meaning)
package.path = "./scenes/?.lua;" .. package.path
local cq = require "cq"
local A = cq.args(arg, { name = "examples/finger_pressure.lua",
  about = "Seed 003 sec. 4.2, in air: the meshed PneuNet finger clamped at its base, its chambers pressurised; the " ..
    "fingertip's displacement per pressure (explicit steps).",
  example = "cqlua examples/finger_pressure.lua mesh_size_mm=4 settle_s=0.1 pressures_kPa=0,20",
  { "mesh_size_mm", 3, "gmsh's element size (mm): one particle per tetrahedron", min = 0 },
  { "settle_s", 0.5, "simulated time per pressure (s), the 0.1 s ramp included", min = 0 },
  { "bulk_Pa", 1.75e9, "the silicone's bulk modulus (Pa)", min = 0 },
  { "pressures_kPa", "0,5,10,15,20", "the chamber pressures (kPa), comma-separated" },
})
local finger = require "finger" -- scenes/finger.lua: the mesh, its pose, material, chamber and tip
local mesh_size, settle, bulk = A.mesh_size_mm, A.settle_s, A.bulk_Pa
local pressures = {}
for p in A.pressures_kPa:gmatch("[^,]+") do pressures[#pressures + 1] = tonumber(p) * 1e3 end
local P_MAX, RAMP = finger.P_MAX, 0.1 -- Pa; s

os.execute("mkdir -p out/finger_pressure")
local csv = assert(io.open("out/finger_pressure.csv", "w")) -- a row per pressure as soon as it is done
csv:write("pressure_kPa,tip_dx_mm,tip_dy_mm,tip_dz_mm,tip_distance_mm,particles,substep_s,substeps,wall_s\n")
local results = {}
for _, p in ipairs(pressures) do
  local world, s = finger.build { mesh_size = mesh_size, bulk = bulk }
  local tip = finger.tip_of(world, s)
  local t0 = tip()
  local steps = math.ceil(settle / world.dt)
  local clock = os.time()
  for k = 1, steps do world:step(s, { p / P_MAX * math.min(1, k * world.dt / RAMP) }) end
  local wall = os.time() - clock
  local t1 = tip()
  local d = { (t1[1] - t0[1]) * 1e3, (t1[2] - t0[2]) * 1e3, (t1[3] - t0[3]) * 1e3 }
  local dist = math.sqrt(d[1] ^ 2 + d[2] ^ 2 + d[3] ^ 2)
  results[#results + 1] = { p = p, dist = dist }
  print(string.format("finger_pressure: %5.1f kPa: tip moved %6.2f mm (dx %6.2f, dy %6.2f mm); %d particles, " ..
    "substep %.3g s x %d, %d s wall", p / 1e3, dist, d[1], d[2], world.n, world.dt, steps, wall))
  csv:write(string.format("%g,%.6g,%.6g,%.6g,%.6g,%d,%.6g,%d,%d\n", p / 1e3, d[1], d[2], d[3], dist, world.n, world.dt,
    steps, wall))
  csv:flush()
  cq.frames.render_state { world = world, state = s, color = "von_mises", width = 640, height = 480 }
    :write(string.format("out/finger_pressure/p%02d.png", math.floor(p / 1e3 + 0.5)))
end
csv:close()
cq.plot { csv = "out/finger_pressure.csv", x = "pressure_kPa", y = "tip_distance_mm", out = "out/finger_pressure.png",
  style = "linespoints", title = "PneuNet finger in air (DragonSkin-30, explicit MPM)", xlabel = "pressure (kPa)",
  ylabel = "fingertip displacement (mm)" }
return results
