-- Seed 003's finger in water, inverted (issue 11): find the chamber pressure of every control step, bounded to
-- [0, 20] kPa, that brings the fingertip to a target point at t = reach and holds it there until reach + hold.
-- Gradient descent (Adam, the bounds by projection) through the whole differentiable run: dL/du of every control
-- step from one backward pass over the recorded substeps.
-- The target is where a reference pressure (a ramp to p_ref, default 12 kPa, over 0.3 s, then held) puts the tip at
-- t = reach, so the problem has an exact answer; the search starts from a constant 5 kPa, and the report is the distance left.
-- Materials as examples/finger_air_water.lua (docs/results/history.md): both bulk moduli (finger and water) are bulk_Pa,
-- by default lowered to 2 MPa, so that the explicit substep is 28 us instead of about 1 us; the implicit integrator
-- takes the real 1.75e9. water_gap_mm narrows the tank (the water between the finger and each wall; default
-- scenes/finger.lua's 14/10/10 mm): the implicit substep's cost is that of the tank's grid.
-- The run keeps a checkpoint (out/finger_inverse.ckpt.json) and the target (out/finger_inverse/target.txt, with the
-- arguments it belongs to), so an interrupted run continues where it stopped when started again with the same
-- arguments; the initial guess and the best iteration are measured on the optimisation's own forward passes.
-- Writes out/finger_inverse.csv (the optimisation log), out/finger_inverse/control.csv (pressure, tip and target
-- per control step, before and after), out/finger_inverse/{pressure,distance,history}.png and the optimised motion
-- as frames (out/finger_inverse/frames/). `cqlua examples/finger_inverse.lua plot` redraws the plots from the CSV
-- files (where the run happened on a machine without gnuplot).
-- Usage: cqlua examples/finger_inverse.lua [iters=30] [mesh_size_mm=4] [integrator=explicit] [reach_s=1]
--          [hold_s=0.2] [control_dt_s=0.02] [lr=0.05] [water_spacing_mm=1] [implicit_substep_s=0.002]
--          [bulk_Pa=2e6] [water_gap_mm=] [volumetric=solids] [fluid=grid] [dim=3] [worse=1.5] [groups=initial]
--          [shape=hold] [p_ref_kPa=12] [p_max_kPa=20] [lr_decay=1] [optimizer=adam] [own=16] [tol=]
--        (--help: every key and its meaning; the values may also be given by position, in this order, an empty one
--        "" keeping its default; volumetric, fluid, groups and own default to the world's, tol to the engine's)
-- fluid = grid: the water's pressure from the grid's fill (docs/api.md `fluid`; it does not lock the finger). dim = 2:
-- the finger's 2D section lying along +x in a tank (scenes/finger2d.lua: mesh_size_mm its mesh, water_gap_mm the water
-- around it, default 5), under gravity; the tip is its particles within 3 mm of its end. In 2D the implicit solve's
-- factorised preconditioner holds the grid fluid's Hessian, so water at its real 2.2 GPa costs about what 2 MPa does.
-- worse: an iteration whose loss is above worse times the last accepted one is rejected, and the step that led there
-- taken again at half the size (cq.train's recover.worse; 0: off). At the real moduli the loss is rough and its
-- gradient explodes where the controls drive the chambers into a violent phase (docs/results/history.md, "the exploding
-- gradients of the fill-water inverse"); those iterations are the ones with a much worse loss. Each accepted iteration
-- then grows the step by 1.5, back to lr (recover.grow): near the optimum a rejection is often one unlucky step.
-- groups: volumetric = averaged's volumetric_groups ("current" or "initial": the groups of the first state, so that a
-- particle does not change group as it moves; docs/api.md).
-- shape: "hold" (the pressure holds each control step's value, stepping between them; the search starts with a 5 kPa
-- step at t = 0) or "ramp" (the pressure goes linearly from one control value to the next and starts at 0 at t = 0: it
-- never jumps; control value j is the pressure at t = (j + 1) control_dt). A ramp's rollout step is one substep
-- (implicit: the control step in equal pieces of at most implicit_substep_s, at least two) or a tenth of the control
-- step (explicit), so that the pressure changes every rollout step.
-- p_ref: the reference pressure the target comes from; p_max: the search's upper bound (the lower one is 0). The 2D
-- section in water at the real moduli bursts its thin chamber walls at 12 kPa held and settles whole at 8 and 10 kPa
-- (docs/results/history.md, "the inverse at t = 1 s"), so its runs there take 8 and 9.
-- lr_decay: iteration k's step size is lr * lr_decay^(k - 1) (cq.train's lr_schedule). Adam moves each control by
-- about lr per iteration whatever the gradient, so a constant lr leaves the search wandering at that resolution: with
-- the fixed groups, whose forward is continuous, at 0.1-0.15 mm at lr 0.05 (docs/results/history.md, "the inverse with the
-- fixed groups").
-- optimizer: "adam" (cq.train, with the recovery above) or "lbfgs" (cq.nlopt's bounded L-BFGS with its line search,
-- one evaluation per logged row, iterations = its evaluations; no resume): for a forward continuous in the controls
-- (groups = initial), where Adam stalls at its step size (docs/results/history.md, "the inverse with the fixed groups").
-- volumetric = averaged: the silicone's bulk term on each grid node's volume-averaged J (no volumetric locking at the
-- real bulk modulus; docs/api.md).
-- tol: the implicit solve's Newton tolerance (implicit.tol; default the engine's 1e-6 in f64): a tighter one tells a
-- loss made rough by the solver's stopping point from one rough by the forward itself (CQ_INVERSE_FD below).
-- own: the world option volumetric_own, the bulk modulus each particle keeps on its own J as a multiple of its shear
-- stiffness. The fixed groups tear the 2D finger at 8 kPa with 1 and hold it whole with 16 (docs/results/history.md, "the
-- own share").
-- Environment: CQ_FINGER_MSH = a .msh file of scenes/finger.geo meshed already (for machines without gmsh).
-- CQ_INVERSE_FD = a control.csv of an earlier run with the same arguments: instead of optimising, check the gradient
-- at its optimised pressures against central differences of the loss along it (h = 1e-3, 1e-4, 1e-5 in u = p / 20
-- kPa) and print the slopes; where a search stalls, this tells a wrong or rough gradient from an optimiser's stall.
-- CQ_INVERSE_SCAN = offsets, e.g. "-2e-3,-1e-3,0,1e-3,2e-3" (with CQ_INVERSE_FD): instead of the slopes, the loss at
-- those steps along -dL/du (in u) and each forward pass's solver counts, to see where and why the loss bends; the
-- tip's path of each in out/finger_inverse/scan_<offset>.csv.
package.path = "./scenes/?.lua;" .. package.path
local cq = require "cq"
local finger = require "finger"
local finger2d = require "finger2d"
local OUT = "out/finger_inverse"

local function plot()
  cq.plot { csv = OUT .. "/control.csv", x = "t_s", y = { "p_initial_kPa", "p_reference_kPa", "p_optimised_kPa" },
    out = OUT .. "/pressure.png", title = "chamber pressure: initial guess, reference and optimised",
    xlabel = "time (s)", ylabel = "pressure (kPa)" }
  cq.plot { csv = OUT .. "/control.csv", x = "t_s", y = { "d_initial_mm", "d_optimised_mm" },
    out = OUT .. "/distance.png", title = "fingertip distance to the target (reached at t = reach, then held)",
    xlabel = "time (s)", ylabel = "distance (mm)" }
  cq.plot { csv = "out/finger_inverse.csv", x = "iteration", y = { "reach_mm", "hold_max_mm" }, out = OUT .. "/history.png",
    title = "finger in water: optimisation", xlabel = "iteration", ylabel = "distance to the target (mm)" }
end
if arg and arg[1] == "plot" then
  plot()
  return
end

-- key=value pairs or values by position in this order; an empty one takes its default (to give a later one)
local SPEC = { name = "examples/finger_inverse.lua",
  about = "Seed 003's finger in water, inverted (issue 11): Adam (or L-BFGS) finds the chamber pressure of every " ..
    "control step that brings the fingertip to a target at t = reach_s and holds it there to reach_s + hold_s. " ..
    "`cqlua examples/finger_inverse.lua plot` redraws the plots from the CSV files.",
  example = "cqlua examples/finger_inverse.lua iters=2 mesh_size_mm=3 integrator=implicit reach_s=0.03 " ..
    "dim=2 fluid=grid",
  { "iters", 30, "optimisation iterations (L-BFGS: evaluations)", min = 1, integer = true },
  { "mesh_size_mm", 4, "gmsh's element size (mm)", min = 0 },
  { "integrator", "explicit", "the world's integrator", oneof = { "explicit", "implicit" } },
  { "reach_s", 1, "the time at which the tip must reach the target (s)", min = 0 },
  { "hold_s", 0.2, "how long it holds it there after reach_s (s)", min = 0 },
  { "control_dt_s", 0.02, "the control step (s): one pressure per step", min = 0 },
  { "lr", 0.05, "Adam's step size (in u = p / 20 kPa)", min = 0 },
  { "water_spacing_mm", finger.WATER.spacing * 1e3, "the water particles' spacing (mm)", min = 0 },
  { "implicit_substep_s", 2e-3, "the implicit integrator's substep (s); the explicit one is half the CFL limit",
    min = 0 },
  { "bulk_Pa", 2e6, "the bulk modulus of the finger and of the water (Pa)", min = 0 },
  { "water_gap_mm", nil, "the water between the finger and each wall (mm); none: scenes/finger.lua's 14/10/10 " ..
    "(dim 2: 5)", type = "number" },
  { "volumetric", nil, "the silicone's volumetric term; none: the world's default (solids; dim 2: averaged)",
    oneof = { "solids", "particle", "averaged" } },
  { "fluid", nil, "the water's pressure: grid (the grid's fill) or particle (each particle's own J); none: " ..
    "robot:world's default (grid); fill: the old name of grid", oneof = { "grid", "particle", "fill" } },
  { "dim", 3, "2: the finger's 2D section (scenes/finger2d.lua); 3: the 3D finger", integer = true },
  { "worse", 1.5, "an iteration whose loss is above worse x the last accepted one is rejected and its step halved " ..
    "(0: off)" },
  { "groups", nil, "volumetric = averaged's volumetric_groups; none: the world's default",
    oneof = { "current", "initial" } },
  { "shape", "hold", "hold: the pressure held per control step; ramp: linear between control values from 0",
    oneof = { "hold", "ramp" } },
  { "p_ref_kPa", 12, "the reference pressure the target comes from (kPa), in [0, p_max_kPa]" },
  { "p_max_kPa", 20, "the search's upper bound (kPa), in (0, 20]" },
  { "lr_decay", 1, "iteration k's step is lr * lr_decay^(k - 1); in (0, 1]" },
  { "optimizer", "adam", "adam (cq.train) or lbfgs (cq.nlopt's bounded L-BFGS; no resume)",
    oneof = { "adam", "lbfgs" } },
  { "own", nil, "the world option volumetric_own, in [1e-6, 1e6]; none: the world's default", type = "number", min = 1e-6,
    max = 1e6 },
  { "tol", nil, "the implicit solve's Newton tolerance, in (0, 1); none: the engine's", type = "number" },
}
local A = cq.args(arg, SPEC)
local iters = A.iters
local mesh_size = A.mesh_size_mm
local integrator = A.integrator
local reach, hold = A.reach_s, A.hold_s
local control_dt = A.control_dt_s
local lr = A.lr
local water_spacing = A.water_spacing_mm * 1e-3
local implicit_dt = A.implicit_substep_s -- the implicit integrator's substep (the explicit one is the CFL limit's half)
local BULK, P_MAX = A.bulk_Pa, finger.P_MAX
local gap = A.water_gap_mm
local volumetric = A.volumetric -- nil: the world's default ("solids"; the 2D scene's: "averaged")
local fluid = A.fluid -- nil: robot:world's default ("grid" for the finger in water)
local D = A.dim
local worse = A.worse
local groups = A.groups -- nil: the world's default
local shape = A.shape
local p_ref = A.p_ref_kPa * 1e3
local p_max = A.p_max_kPa * 1e3
local lr_decay = A.lr_decay
local optimizer = A.optimizer
local own = A.own -- nil: the world's default
local tol = A.tol -- nil: the engine's
if tol and not (tol > 0 and tol < 1) then error("finger_inverse: tol (argument 23) must be a number in " ..
  "(0, 1), got " .. tostring(tol), 0) end
if not (lr_decay > 0 and lr_decay <= 1) then error("finger_inverse: lr_decay (argument 20) must be in (0, 1], got " ..
  tostring(lr_decay), 0) end
if not (p_max > 0 and p_max <= P_MAX) then error(string.format("finger_inverse: p_max_kPa (argument 19) must be in " ..
  "(0, %g], got %s", P_MAX / 1e3, tostring(A.p_max_kPa)), 0) end
if not (p_ref >= 0 and p_ref <= p_max) then error(string.format("finger_inverse: p_ref_kPa (argument 18) must be in " ..
  "[0, p_max = %g], got %s", p_max / 1e3, tostring(A.p_ref_kPa)), 0) end
if worse ~= 0 and not (worse > 1) then error("finger_inverse: worse (argument 15) must be 0 (off) or > 1, got " ..
  tostring(worse), 0) end
if D ~= 2 and D ~= 3 then error("finger_inverse: dim (argument 14) must be 2 or 3, got " .. tostring(D), 0) end
-- Each argument as it was given (by position or as key=value; an empty one as not given), by its place in SPEC: the
-- target's and the checkpoint's key below is made of these texts, so a run resumes whichever way it was started.
local given = {}
do
  local place = {}
  for i, s in ipairs(SPEC) do place[s[1]] = i end
  for i, a in ipairs(arg or {}) do -- (cq.args has checked them: positions first, then known keys)
    local k, v = tostring(a):match("^([%a_][%w_]*)=(.*)$")
    local text = k and v or tostring(a)
    if text ~= "" then given[k and place[k] or i] = text end
  end
end
local sub_dt = integrator == "implicit" and math.min(implicit_dt, control_dt) or nil
-- rollout steps per control value: a ramp changes the pressure every rollout step
local pieces = shape == "hold" and 1 or (sub_dt and math.ceil(control_dt / sub_dt - 1e-9) or 10)
if shape == "ramp" and pieces < 2 then
  error(string.format("finger_inverse: shape = ramp needs a control step of at least two implicit substeps (" ..
    "control_dt_s = %g, implicit_substep_s = %g): with one it is the held staircase", control_dt, implicit_dt), 0)
end
local step_dt = control_dt / pieces -- the rollout's step
local world, s0, n_finger
if D == 3 then
  world, s0, n_finger = finger.build { mesh_size = mesh_size, msh = os.getenv("CQ_FINGER_MSH"), bulk = BULK,
    water = { bulk = BULK, spacing = water_spacing, gap = gap and { gap * 1e-3, gap * 1e-3, gap * 1e-3 } or nil },
    integrator = integrator, control_dt = step_dt, volumetric = volumetric, fluid = fluid, dt = sub_dt,
    volumetric_groups = groups, volumetric_own = own, implicit = tol and { tol = tol } or nil }
else
  world, s0, n_finger = finger2d.build { mesh = mesh_size * 1e-3, bulk = BULK, gap = gap and gap * 1e-3,
    water = { bulk = BULK, per_axis = finger2d.DX / water_spacing }, integrator = integrator, control_dt = step_dt,
    dt = sub_dt or 0.5 * finger2d.DX / math.sqrt((BULK + 4 / 3 * finger.SHEAR) / 1080), volumetric = volumetric,
    volumetric_groups = groups, volumetric_own = own, fluid = fluid, gravity = 9.8,
    -- CG iterations per Newton direction and per adjoint solve: near the optimum the backward's solve needed more
    -- than the default 500 (docs/results/history.md, "the inverse at t = 1 s")
    implicit = integrator == "implicit" and { max_cg = 2000, tol = tol } or nil }
end
local steps = math.floor((reach + hold) / step_dt + 0.5) -- rollout steps
local k_reach = math.floor(reach / step_dt + 0.5)
local tip = {} -- the fingertip: the finger's particles within 3 mm of its lowest point (2D: of its end)
if D == 2 then
  tip = finger2d.tip(s0, n_finger)
else
  local ymin = math.huge
  for i = 0, n_finger - 1 do ymin = math.min(ymin, s0.x[world.n + i]) end
  for i = 0, n_finger - 1 do if s0.x[world.n + i] < ymin + 3e-3 then tip[#tip + 1] = i + 1 end end
end
print(string.format("finger_inverse: %d particles (%d finger, %d tip), %s, %d rollout steps of %g s (%d substeps " ..
  "of %.3g s), pressure %s, a control value every %g s, target at t = %g s, held to %g s, %dD, %s water", world.n,
  n_finger, #tip, integrator, steps, step_dt, world.substeps, step_dt / world.substeps, shape == "hold" and "held" or
  "ramped from 0", control_dt, reach, reach + hold, D, world.fluid))

-- u = p / 20 kPa; a ramp's control value j is its knot j + 1 (knot 0, at t = 0, is fixed to 0)
local controller = cq.open_loop { steps = steps, outputs = 1, init = math.min(0.25, p_max / P_MAX), every = pieces,
  shape = shape == "hold" and "hold" or "linear", start = shape == "ramp" and 0 or nil }
local u = controller.params[1]
local function pressures() -- u of every rollout step
  local p = {}
  for k = 0, steps - 1 do p[k] = controller:value(k) end
  return p
end
local function tip_at(traj, k)
  local m = { 0, 0, 0 }
  for _, p in ipairs(tip) do
    local x = traj:x(k, p)
    for a = 1, D do m[a] = m[a] + x[a] / #tip end -- in 2D m[3] stays 0
  end
  return m
end
local run = cq.rollout { world = world, steps = steps, controller = controller,
  final = function(t) return t:const({ 0 }) end }

-- The reference run: its tip at t = reach is the target.
local function set_u(f) for j = 0, u.n - 1 do u.v[j] = f(j) end end -- f(control value j)
local initial = {}
for j = 0, u.n - 1 do initial[j] = u.v[j] end
local initial_p = pressures()
set_u(function(j) return p_ref / P_MAX * math.min(1, (j + 1) * control_dt / 0.3) end)
local reference_p = pressures()
-- The target, kept with the arguments it belongs to: a resumed run does not redo the reference run.
os.execute("mkdir -p " .. OUT)
local key = {} -- every argument but the iteration count, which a resumed run may raise
for i = 2, 16 do key[i - 1] = given[i] or "" end
for i = 17, 23 do if given[i] then key[#key + 1] = given[i] end end -- (later arguments: the keys before them stay)
key = table.concat(key, " ")
local target
local f = io.open(OUT .. "/target.txt")
if f then
  local line = f:read("*l") or ""
  f:close()
  local k, x, y, z = line:match("^(.-)|(%S+) (%S+) (%S+)$")
  if k == key then target = { tonumber(x), tonumber(y), tonumber(z) } end
end
if not target then
  local clock = os.clock()
  run:forward(s0)
  target = tip_at(run:trajectory(), k_reach)
  print(string.format("finger_inverse: target (%.2f, %.2f, %.2f) mm from the reference run (%.0f s)", target[1] * 1e3,
    target[2] * 1e3, target[3] * 1e3, os.clock() - clock))
  f = assert(io.open(OUT .. "/target.txt", "w"))
  f:write(string.format("%s|%.17g %.17g %.17g\n", key, target[1], target[2], target[3]))
  f:close()
else
  print(string.format("finger_inverse: target (%.2f, %.2f, %.2f) mm, kept from an earlier run with these arguments",
    target[1] * 1e3, target[2] * 1e3, target[3] * 1e3))
end
set_u(function(j) return initial[j] end)

-- Loss: the mean squared distance (mm^2) of the tip to the target over the states of rollout steps k_reach..steps.
local w = 1e6 / (steps - k_reach + 1)
local target_d = { target[1], target[2], D == 3 and target[3] or nil } -- the target in the world's dimensions
local near = cq.objectives.distance_to_target(target_d, tip)
run.running = function(t, s, _, k)
  if k < k_reach then return t:const({ 0 }) end
  return t:scale(near(t, s), w)
end
run.final = function(t, s) return t:scale(near(t, s), w) end

if os.getenv("CQ_INVERSE_FD") then -- the gradient at an earlier run's optimised pressures, against differences
  local scan = os.getenv("CQ_INVERSE_SCAN") -- its offsets, checked before the runs
  local offsets, valid = {}, true
  for h in (scan or ""):gmatch("[^,]+") do
    local off = tonumber(h)
    valid = valid and off ~= nil and off == off and math.abs(off) < 1
    offsets[#offsets + 1] = off
  end
  if scan and not (valid and #offsets > 0) then
    error("CQ_INVERSE_SCAN: a comma-separated list of finite offsets in (-1, 1), got '" .. scan .. "'", 0)
  end
  local p_at = {}
  for line in io.lines(os.getenv("CQ_INVERSE_FD")) do
    local k, p = line:match("^(%d+),[^,]*,[^,]*,[^,]*,([^,]*),")
    if k then p_at[tonumber(k)] = tonumber(p) * 1e3 / P_MAX end
  end
  set_u(function(j) -- control value j: the pressure at its knot (ramp) or over its step (hold)
    local k = math.min(shape == "ramp" and (j + 1) * pieces or j * pieces, steps - 1)
    return assert(p_at[k], "CQ_INVERSE_FD: no row for rollout step " .. k)
  end)
  local loss0 = run:forward(s0)
  run:backward()
  local g, gn = {}, 0
  for j = 0, u.n - 1 do g[j] = u.g[j]; gn = gn + g[j] ^ 2 end
  gn = math.sqrt(gn)
  local base = {}
  for j = 0, u.n - 1 do base[j] = u.v[j] end
  print(string.format("finger_inverse: FD check at the given pressures: loss %.10g, |dL/du| %.6g", loss0, gn))
  if scan then -- the loss itself along the gradient, with the solver's counts of each forward pass
    print("  offset along -dL/du, loss, its change / offset, newton, cg, factorizations, splits, fill rounds")
    local rows = {}
    for _, off in ipairs(offsets) do
      local path = string.format("%s/scan_%g.csv", OUT, off) -- the tip's path at this offset
      set_u(function(j) return base[j] - off * g[j] / gn end)
      world:solver_stats(true)
      local l = run:forward(s0)
      local st = world:solver_stats()
      local f = assert(io.open(path, "w"))
      f:write("k,tip_x_mm,tip_y_mm,tip_z_mm\n")
      for k = 0, steps do
        local x = tip_at(run:trajectory(), k)
        f:write(string.format("%d,%.12g,%.12g,%.12g\n", k, x[1] * 1e3, x[2] * 1e3, x[3] * 1e3))
      end
      f:close()
      print(string.format("  %10.3g  %.10g  %10.4g  %6d %7d %5d %4d %5d", off, l, off ~= 0 and (l - loss0) / off or 0,
        st.newton, st.cg, st.factorizations, st.splits, st.fill_rounds))
      rows[#rows + 1] = { offset = off, loss = l, path = path }
    end
    return { loss = loss0, grad_norm = gn, scan = rows }
  end
  local ratios = {}
  for _, h in ipairs { 1e-3, 1e-4, 1e-5 } do
    local at = {}
    for _, sgn in ipairs { 1, -1 } do
      set_u(function(j) return base[j] + sgn * h * g[j] / gn end)
      at[sgn] = run:forward(s0)
    end
    local slope = (at[1] - at[-1]) / (2 * h)
    print(string.format("  h = %g: central slope along the gradient %.6g = %.4f of |dL/du|", h, slope, slope / gn))
    ratios[h] = slope / gn
  end
  return { loss = loss0, grad_norm = gn, fd_ratios = ratios }
end

local function distances(traj)
  local d = {}
  for k = 0, steps do
    local x = tip_at(traj, k)
    d[k] = 1e3 * math.sqrt((x[1] - target[1]) ^ 2 + (x[2] - target[2]) ^ 2 + (x[3] - target[3]) ^ 2)
  end
  local worst = 0
  for k = k_reach, steps do worst = math.max(worst, d[k]) end
  return d, worst
end
-- The frames' control steps, and what the best iteration's forward pass leaves of them (the finger's positions, the
-- tip per control step), so that no forward pass is spent on the report.
local every = math.max(1, math.floor(0.1 / step_dt + 0.5))
local function finger_positions(traj, k)
  local v, x = traj:view("x", k), {}
  for a = 0, D - 1 do for i = 0, n_finger - 1 do x[a * n_finger + i] = v[a * world.n + i] end end
  return x
end
local function record(traj)
  local r = { tips = {}, frames = {} }
  r.d, r.worst = distances(traj)
  for k = 0, steps do r.tips[k] = tip_at(traj, k) end
  for k = 0, steps, every do r.frames[k] = finger_positions(traj, k) end
  return r
end
local d_initial, best
local CKPT = "out/finger_inverse.ckpt.json" -- resumed only by a run with the same arguments
local saved = io.open(CKPT)
if saved then saved:close() saved = require("cq.json").read(CKPT) end
local result
local function keep(loss, first) -- the evaluation's distances, and the best run's record (first: the initial guess's)
  local d, worst = distances(run:trajectory())
  if first then d_initial = d end
  if not best or loss < best.loss then
    best = record(run:trajectory())
    best.loss = loss
  end
  return d, worst
end
if optimizer == "lbfgs" then
  local log = cq.log { name = "finger_inverse", columns = { "iteration", "loss", "grad_norm", "reach_mm",
    "hold_max_mm", "seconds" } }
  local evals = 0
  cq.nlopt { algorithm = "lbfgs", params = { u }, bounds = { [u] = { 0, p_max / P_MAX } }, maxeval = iters,
    objective = function(need_grad)
      local loss = run:forward(s0)
      local gn = nil
      if need_grad then
        run:backward()
        gn = 0
        for j = 0, u.n - 1 do gn = gn + u.g[j] ^ 2 end
        gn = math.sqrt(gn)
      end
      local d, worst = keep(loss, evals == 0)
      evals = evals + 1
      log:iteration(evals, iters, { loss = loss, grad_norm = gn, reach_mm = d[k_reach], hold_max_mm = worst })
      return loss
    end }:run()
  result = { best = { loss = best.loss }, log = log }
else
result = cq.train { rollout = run, state = s0, iterations = iters, name = "finger_inverse", checkpoint = CKPT,
  resume = (saved and saved.extra and saved.extra.key == key) and "auto" or false,
  extra = { save = function() return { key = key } end, load = function() end },
  optimizer = cq.adam { params = { u }, lr = lr, bounds = { [u] = { 0, p_max / P_MAX } } }, columns = { "reach_mm", "hold_max_mm", "grad_x0" },
  keep_best = true, recover = { worse = worse ~= 0 and worse or nil, grow = 1.5 },
  lr_schedule = lr_decay ~= 1 and function(it) return lr_decay ^ (it - 1) end or nil,
  values = function(it, loss)
    local d, worst = keep(loss, it == 1)
    -- |dL/dx_0|: how far the gradient grew on its way back (it explodes through a violent phase of the forward)
    return { reach_mm = d[k_reach], hold_max_mm = worst, grad_x0 = run.memo.grad:norm("x") }
  end }
end

-- The optimised run (the best parameters), its CSV and frames. A resumed run has not seen every iteration: it runs
-- the initial guess and the best parameters again.
if not d_initial or not result.best or best.loss ~= result.best.loss then
  local kept = {}
  for j = 0, u.n - 1 do kept[j] = u.v[j] end
  set_u(function(j) return initial[j] end)
  run:forward(s0)
  d_initial = distances(run:trajectory())
  set_u(function(j) return kept[j] end)
  run:forward(s0)
  best = record(run:trajectory())
end
local d_final, worst = best.d, best.worst
local optimised_p = pressures()
local csv = assert(io.open(OUT .. "/control.csv", "w"))
csv:write("k,t_s,p_initial_kPa,p_reference_kPa,p_optimised_kPa,tip_x_mm,tip_y_mm,tip_z_mm,d_initial_mm,d_optimised_mm\n")
for k = 0, steps do
  local x, uk = best.tips[k], math.min(k, steps - 1)
  csv:write(string.format("%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n", k, k * step_dt,
    initial_p[uk] * P_MAX / 1e3, reference_p[uk] * P_MAX / 1e3, optimised_p[uk] * P_MAX / 1e3, x[1] * 1e3, x[2] * 1e3, x[3] * 1e3,
    d_initial[k], d_final[k]))
end
csv:close()
local fw, fs -- the finger alone, in air
if D == 3 then fw, fs = finger.build { mesh_size = mesh_size, msh = os.getenv("CQ_FINGER_MSH"), bulk = BULK }
else fw, fs = finger2d.build { mesh = mesh_size * 1e-3, bulk = BULK, gap = gap and gap * 1e-3 } end
os.execute("mkdir -p " .. OUT .. "/frames")
for k = 0, steps, every do -- the finger alone, coloured by its actuation
  local x = best.frames[k]
  for j = 0, D * n_finger - 1 do fs.x[j] = x[j] end
  cq.frames.render_state { world = fw, state = fs, u = { optimised_p[math.min(k, steps - 1)] }, width = 480,
    height = D == 3 and 480 or nil, targets = { target_d } }:write(string.format("%s/frames/frame_%04d.png", OUT, math.floor(k / every)))
end
print(string.format("finger_inverse: distance to the target at t = %g s: %.2f mm (initial guess %.2f mm); at most " ..
  "%.2f mm while held to t = %g s; %d iterations", reach, d_final[k_reach], d_initial[k_reach], worst, reach + hold,
  iters))
local ok, why = pcall(plot)
if not ok then print("finger_inverse: no plots (" .. tostring(why) .. "); run `cqlua examples/finger_inverse.lua plot`") end
return { reach_mm = d_final[k_reach], hold_max_mm = worst, initial_mm = d_initial[k_reach], log = result.log }
