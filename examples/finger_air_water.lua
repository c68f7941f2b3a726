-- Seed 003 sec. 4.3 and Table 3: the pneumatic finger of scenes/finger.lua pressurised in air and in a tank of
-- water, at 0, 5, 10, 15 and 20 kPa. For each medium and pressure: ramp the pressure up over 0.1 s, let the finger
-- settle (damped), and record where the fingertip is. Its displacement is measured two ways: from where it settles
-- at 0 kPa in the same medium and time (the rest state: the pressure's own effect, with gravity, buoyancy and the
-- water's own settling taken out), and from where it starts (seed 003 Fig. 6: the distance from its original
-- position, which keeps the sag under its weight in air and the lift by buoyancy in water); then the air/water ratio
-- per pressure, as the seed's Table 3 reports it. Writes out/finger_air_water.csv (a row per run),
-- out/finger_air_water_ratios.csv (a row per pressure: air, water and their ratio, from rest and from the start),
-- the plot out/finger_air_water.png, for
-- each run the settled finger coloured by von Mises stress (out/finger_air_water/<medium>_p<kPa>.png: the finger
-- alone, the water hides it) and its state (out/finger_air_water/<medium>_p<kPa>.vtp, water included, for
-- ParaView), its tip's path every 10 ms (out/finger_air_water/<medium>_p<kPa>_tip.csv: displacement from the start,
-- mm), and at the highest pressure the motion as frames every 20 ms (out/finger_air_water/<medium>_frames/).
--
-- Stiffness, stated: explicit integration resolves sound in the stiffest material, so both the silicone's and the
-- water's bulk moduli are lowered from their real 1.75 GPa and 2.2 GPa to bulk_Pa (2 MPa by default): the
-- silicone's is still 40 times its shear modulus (Poisson's ratio 0.49) and the water's sound speed (45 m/s) is a
-- hundred times the fingertip's speed, so both stay nearly incompressible, and the substep is 30 us instead of 1 us.
-- The water: density 1000, viscosity 1 mPa s, sampled 2.5 times per cell per axis (every 1 mm; at fewer than 2 it
-- sinks), its pressure from the grid's fill (robot:world's default for a robot in water: with each particle's own J,
-- fluid = particle, it locks and holds the finger nearly still, docs/results/history.md "Issue 11: the water locks"; with
-- volumetric = averaged it is in the groups, but in 3D the finger's bend is still held: "Issue 11: the water in the
-- groups"), in a tank whose walls are the
-- grid's (40 x 40 mm inside, 14 mm of water on the finger's -x side and 10 mm on its other sides;
-- scenes/finger.lua, M.WATER).
-- Implicitly (integrator = implicit, a substep dt of milliseconds) the real bulk moduli are affordable: e.g.
-- `cqlua examples/finger_air_water.lua mesh_size_mm=3 settle_s=0.6 bulk_Pa=1.75e9 pressures_kPa=5,10,15,20 media=air
-- water_spacing_mm=2 integrator=implicit dt_s=0.005` (or the same values by position). A run that fails (the model
-- stops holding: a chamber wall balloons through the grid at high pressure) is recorded as failed with its message and
-- the sweep goes on.
-- Usage: cqlua examples/finger_air_water.lua [mesh_size_mm=3] [settle_s=0.4] [bulk_Pa=2e6]
--          [pressures_kPa=0,5,10,15,20] [media=air,water] [water_spacing_mm=1] [integrator=explicit] [dt_s=]
--          [presettle_s=0] [volumetric=solids] [control_dt_s=] [water_bulk_Pa=bulk_Pa] [fluid=grid]
--          [water_gap_mm=14,10,10]   (--help: every key and its meaning; the values may also be given by position,
--          in this order, an empty one "" keeping its default)
-- water_bulk_Pa: the water's bulk modulus, when it differs from the silicone's (e.g. the silicone at its real 1.75 GPa
-- and the water at 2.2e7 Pa: a sound speed of 148 m/s, still 1e4 times the fingertip's speed, so the water stays
-- incompressible for this flow while its part of the implicit solve is 100 times better conditioned).
-- control_dt_s: the pressure is set once per control step of this length, made of as many substeps of at most dt_s
-- as it takes (default: one substep per control step). On a GPU, a control step of many substeps runs without
-- waiting for the host in between (cuda/README.md: batches), so explicit runs at the real bulk modulus (1 us
-- substeps) take minutes there.
-- fluid = grid: the water's pressure from how full the grid's nodes are (world option fluid, docs/api.md): it rests,
-- and it does not hold the finger's bend in a narrow gap, where each particle's own J (particle) locks and the
-- averaged groups hold it at water's real modulus (docs/results/history.md, "Issue 11: the fill water").
-- water_gap_mm: the water between the finger and the tank's walls on its -x side, its +x side and its z sides, as
-- "a,b,c" or one number for all three (scenes/finger.lua M.WATER.gap). A narrower tank is a smaller grid: with the
-- grid fluid implicitly at the real moduli, 5 mm on every side factorises in a third of the time of the default tank.
-- Environment: CQ_FINGER_MSH = a .msh file of scenes/finger.geo meshed already (for machines without gmsh).
-- volumetric = averaged: the silicone's bulk term on the volume-averaged J of each grid node's particles, which
-- removes the volumetric locking that makes the finger at the real bulk modulus several times too stiff
-- (docs/results/history.md, "Issue 11: volumetric locking").
-- presettle_s > 0: each medium's finger first hangs at 0 kPa for that long, and every run of that medium (the rest
-- run included) starts from that one settled state, so that the water's slow settling (its slosh after gravity is
-- switched on: docs/results/history.md) is common to all of them; settle_s then counts from the pressure's start, and
-- "from the start" still means from where the finger was built.
package.path = "./scenes/?.lua;" .. package.path
local cq = require "cq"
local finger = require "finger"
-- key=value pairs or values by position in this order; an empty one takes its default (to give a later one)
local A = cq.args(arg, { name = "examples/finger_air_water.lua",
  about = "Seed 003 sec. 4.3 and Table 3: the pneumatic finger pressurised in air and in a tank of water; the " ..
    "fingertip's displacement per medium and pressure, and the air/water ratio.",
  example = "cqlua examples/finger_air_water.lua mesh_size_mm=6 settle_s=0.02 pressures_kPa=20 water_spacing_mm=2.5",
  { "mesh_size_mm", 3, "gmsh's element size (mm): one particle per tetrahedron", min = 0 },
  { "settle_s", 0.4, "simulated time per run (s), the 0.1 s ramp included", min = 0 },
  { "bulk_Pa", 2e6, "the silicone's bulk modulus (Pa), and the water's unless water_bulk_Pa", min = 0 },
  { "pressures_kPa", "0,5,10,15,20", "the chamber pressures (kPa), comma-separated (0, the rest run, always first)" },
  { "media", "air,water", "comma-separated: air, water" },
  { "water_spacing_mm", finger.WATER.spacing * 1e3, "the water particles' spacing (mm)", min = 0 },
  { "integrator", "explicit", "the world's integrator", oneof = { "explicit", "implicit" } },
  { "dt_s", nil, "the substep (s); none: the explicit one (half the CFL limit)", type = "number", min = 0 },
  { "presettle_s", 0, "> 0: each medium's runs start from the finger settled at 0 kPa for that long (s)", min = 0 },
  { "volumetric", nil, "the silicone's volumetric term; none: the world's default (solids)",
    oneof = { "solids", "particle", "averaged" } },
  { "control_dt_s", nil, "the control step (s), of as many substeps of at most dt_s as it takes; none: one substep",
    type = "number" },
  { "water_bulk_Pa", nil, "the water's bulk modulus (Pa); none: bulk_Pa", type = "number" },
  { "fluid", nil, "the water's pressure: grid (from the grid's fill) or particle (each particle's own J); none: " ..
    "robot:world's default (grid); fill: the old name of grid", oneof = { "grid", "particle", "fill" } },
  { "water_gap_mm", nil, "the water between the finger and the tank's walls on its -x, +x and z sides (mm): " ..
    "\"a,b,c\" or one number for all three; none: scenes/finger.lua's 14,10,10" },
})
local mesh_size, settle, bulk = A.mesh_size_mm, A.settle_s, A.bulk_Pa
local pressures, media = {}, {}
for p in A.pressures_kPa:gmatch("[^,]+") do
  if tonumber(p) ~= 0 then pressures[#pressures + 1] = tonumber(p) * 1e3 end
end
table.insert(pressures, 1, 0) -- the rest state first
for m in A.media:gmatch("[^,]+") do media[#media + 1] = m end
local water_spacing = A.water_spacing_mm * 1e-3
local integrator = A.integrator
local dt = A.dt_s -- the substep; by default the explicit one (half the CFL limit)
local presettle = A.presettle_s
local volumetric = A.volumetric -- nil: the world's default ("solids": no volumetric locking, docs/api.md)
local control_dt = A.control_dt_s
local water_bulk = bulk
if A.water_bulk_Pa then
  water_bulk = A.water_bulk_Pa
  if not (water_bulk > 0) then
    error("finger_air_water: water_bulk_Pa (argument 12) must be a number > 0 (Pa), got " .. tostring(water_bulk), 0)
  end
end
local fluid = A.fluid -- nil: robot:world's default ("grid" for the finger in water: docs/api.md `fluid`)
local water_gap -- nil: scenes/finger.lua's
if A.water_gap_mm then
  local function bad() -- at the user's call: the script's argument
    error("finger_air_water: water_gap_mm (argument 14) must be one number > 0 or three, comma-separated (mm), got " ..
      A.water_gap_mm, 0)
  end
  water_gap = {}
  for g in A.water_gap_mm:gmatch("[^,]+") do
    local v = tonumber(g)
    if not v or v <= 0 then bad() end
    water_gap[#water_gap + 1] = v * 1e-3
  end
  if #water_gap == 1 then water_gap[2], water_gap[3] = water_gap[1], water_gap[1] end
  if #water_gap ~= 3 then bad() end
end
local MSH = os.getenv("CQ_FINGER_MSH")
local RAMP, OUT = 0.1, "out/finger_air_water"

os.execute("mkdir -p " .. OUT)
local csv = assert(io.open("out/finger_air_water.csv", "w")) -- a row per run as soon as it is done
csv:write("medium,pressure_kPa,tip_dx_mm,tip_dy_mm,tip_dz_mm,tip_distance_mm,from_start_mm,particles,substep_s," ..
  "substeps,wall_s,integrator,status\n")

-- The finger alone, coloured by von Mises stress: its particles' positions and F copied into a world of the finger in
-- air (the same mesh and material, the finger's particles first in both), built once.
local fw, fs = finger.build { mesh_size = mesh_size, msh = MSH, bulk = bulk }
local function render_finger(world, s, n_finger, path)
  local n = world.n
  for a = 0, 2 do for i = 0, n_finger - 1 do fs.x[a * n_finger + i] = s.x[a * n + i] end end
  for e = 0, 8 do for i = 0, n_finger - 1 do fs.F[e * n_finger + i] = s.F[e * n + i] end end
  cq.frames.render_state { world = fw, state = fs, color = "von_mises", range = { 0, 5e4 }, width = 640, height = 480 }
    :write(path)
end
local FRAME_EVERY = 0.02 -- s
local TRACK_EVERY = 0.01 -- s: the tip's path, from where it starts, into <medium>_p<kPa>_tip.csv

local results = {} -- results[medium][pressure] = the tip's distance from its rest position (mm)
local from_start = {} -- from_start[medium][pressure] = the tip's distance from where it started (mm)
for _, medium in ipairs(media) do
  results[medium], from_start[medium] = {}, {}
  local rest -- the tip at 0 kPa after the same time
  local settled, t0 -- with presettle: the settled state every run starts from (its world kept until the medium is
  -- done), and the tip where the finger was built
  for _, p in ipairs(pressures) do
    local world, s, n_finger = finger.build { mesh_size = mesh_size, msh = MSH, bulk = bulk, integrator = integrator,
      dt = dt, control_dt = control_dt, volumetric = volumetric, fluid = medium == "water" and fluid or nil,
      water = medium == "water" and { bulk = water_bulk, spacing = water_spacing, gap = water_gap } or nil }
    local tip = finger.tip_of(world, s, n_finger)
    t0 = t0 or tip()
    if presettle > 0 then
      if not settled then
        for _ = 1, math.ceil(presettle / world.dt - 1e-9) do world:step(s, { 0 }) end
        settled = s:copy()
      end
      s:copy_from(settled) -- a state of the same particles, from the first run's world
    end
    local steps = math.ceil(settle / world.dt)
    local frames = p == pressures[#pressures] and OUT .. "/" .. medium .. "_frames" or nil
    if frames then os.execute("mkdir -p " .. frames) end
    local every, nframe = math.max(1, math.floor(FRAME_EVERY / world.dt + 0.5)), 0
    local track_every, track = math.max(1, math.floor(TRACK_EVERY / world.dt + 0.5)), { "t_s,dx_mm,dy_mm,dz_mm" }
    local clock, drawing = os.time(), 0
    local ok, err = pcall(function()
      for k = 1, steps do
        world:step(s, { p / finger.P_MAX * math.min(1, k * world.dt / RAMP) })
        if k % track_every == 0 or k == steps then
          local x = tip()
          track[#track + 1] = string.format("%.6g,%.6g,%.6g,%.6g", k * world.dt, (x[1] - t0[1]) * 1e3,
            (x[2] - t0[2]) * 1e3, (x[3] - t0[3]) * 1e3)
        end
        if frames and (k % every == 0 or k == steps) then
          local c0 = os.time()
          render_finger(world, s, n_finger, string.format("%s/frame_%04d.png", frames, nframe))
          nframe, drawing = nframe + 1, drawing + os.time() - c0
        end
      end
    end)
    local wall = os.time() - clock - drawing
    if not ok then -- recorded, and the sweep goes on
      print(string.format("finger_air_water: %-5s %5.1f kPa: failed after %d s: %s", medium, p / 1e3, wall, err))
      csv:write(string.format("%s,%g,,,,,,%d,%.6g,%d,%d,%s,\"failed: %s\"\n", medium, p / 1e3, world.n, world.dt,
        steps, wall, integrator, tostring(err):gsub('"', "'"):gsub("\n", " ")))
      csv:flush()
      if not (settled and settled.world == world) then world:release() end
      assert(p ~= 0, "finger_air_water: the rest state (0 kPa) failed")
      goto next_pressure
    end
    local t1 = tip()
    rest = rest or t1
    local d = { (t1[1] - rest[1]) * 1e3, (t1[2] - rest[2]) * 1e3, (t1[3] - rest[3]) * 1e3 }
    local dist = math.sqrt(d[1] ^ 2 + d[2] ^ 2 + d[3] ^ 2)
    local moved = math.sqrt((t1[1] - t0[1]) ^ 2 + (t1[2] - t0[2]) ^ 2 + (t1[3] - t0[3]) ^ 2) * 1e3
    results[medium][p], from_start[medium][p] = dist, moved
    print(string.format("finger_air_water: %-5s %5.1f kPa: tip %6.2f mm from rest (dx %6.2f, dy %6.2f mm), %6.2f mm " ..
      "from the start; %d particles, substep %.3g s x %d, %d s wall", medium, p / 1e3, dist, d[1], d[2], moved, world.n,
      world.dt, steps, wall))
    csv:write(string.format("%s,%g,%.6g,%.6g,%.6g,%.6g,%.6g,%d,%.6g,%d,%d,%s,ok\n", medium, p / 1e3, d[1], d[2], d[3],
      dist, moved, world.n, world.dt, steps, wall, integrator))
    csv:flush()
    local name = string.format("%s/%s_p%02d", OUT, medium, math.floor(p / 1e3 + 0.5))
    local f = assert(io.open(name .. "_tip.csv", "w"))
    f:write(table.concat(track, "\n"), "\n")
    f:close()
    render_finger(world, s, n_finger, name .. ".png")
    cq.export.vtk { world = world, state = s, path = name .. ".vtp" }
    if not (settled and settled.world == world) then world:release() end
    collectgarbage()
    ::next_pressure::
  end
  if settled then settled.world:release() end
end
csv:close()
fw:release()

-- Table 3: the displacement in air over that in water, per pressure, from rest and from the start.
local rows = { "pressure_kPa,air_mm,water_mm,air_over_water,air_from_start_mm,water_from_start_mm," ..
  "air_over_water_from_start" }
if results.air and results.water then
  print("finger_air_water: fingertip displacement (mm) per pressure, as seed 003 Table 3")
  print("  pressure (kPa)   from rest: air   water   air / water   from the start: air   water   air / water")
  for _, p in ipairs(pressures) do
    local a, w, as, ws = results.air[p], results.water[p], from_start.air[p], from_start.water[p]
    if a and w then -- both runs held
      local ratio = p > 0 and string.format("%.6g", a / w) or "" -- 0 / 0 at rest
      print(string.format("  %14.0f %16.2f %7.2f %13s %21.2f %7.2f %13.2f", p / 1e3, a, w, ratio, as, ws, as / ws))
      rows[#rows + 1] = string.format("%g,%.6g,%.6g,%s,%.6g,%.6g,%.6g", p / 1e3, a, w, ratio, as, ws, as / ws)
    end
  end
  local f = assert(io.open("out/finger_air_water_ratios.csv", "w"))
  f:write(table.concat(rows, "\n"), "\n")
  f:close()
  cq.plot { csv = "out/finger_air_water_ratios.csv", x = "pressure_kPa",
    y = { "air_mm", "water_mm", "air_from_start_mm", "water_from_start_mm" }, out = "out/finger_air_water.png",
    style = "linespoints", title = "PneuNet finger in air and in water", xlabel = "pressure (kPa)",
    ylabel = "fingertip displacement (mm)" }
end
return results, from_start
