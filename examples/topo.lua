-- Seed 004's 4D topology optimisation (sec. 4): the material layout, actuator layout and pulse actuation of a soft
-- body designed together by gradient descent through MPM, under the augmented Lagrangian method with Adam
-- (Algorithm 1), then binarised and re-simulated (appendix A).
-- Usage: cqlua examples/topo.lua [scene=walker2d_topo] [iters=400] [precision=f64] [outer=30] [backend=cpu]
--   [time_limit=inf] [T=<the seed's horizon, s>] [resume=no] [walls=no_slip] [out=out/<scene>] [seed=1]
--   (`--help` lists the keys; the values may also be given by position in this order, as before: `cqlua
--   examples/topo.lua walker2d_topo 400 f32 30 cpu 3600`, an empty "" keeping a default.)
--   scene: walker2d_topo | climber2d_topo | balancer2d_topo | walker3d_topo | rotator3d_topo (scenes/topo.lua);
--   iters: the inner loop's limit per outer iteration of Algorithm 1; outer: its outer iterations at most;
--   time_limit stops the optimisation after that many seconds (the outputs are still written); T shortens the
--   horizon (the smoke test); resume = yes continues from out/<scene>/design.json, which the run writes every 25
--   iterations and at its end (the design variables, the multipliers and penalties, the counters, the inner loop's
--   Adam moments), so a long optimisation can run as several time-limited calls that take the same steps as one
--   (resumed with outer at or below its finished outer iterations, it writes the outputs of the saved design
--   unchanged); design.json records the run it belongs to (scene, steps, walls, precision, particles, seed) and a
--   resume with any of them different is refused, naming them (iters, outer, time_limit and backend may change; a
--   file written before it recorded them all is resumed with a warning); walls = sticky zeroes wall nodes' velocities moving away too (the runs before 2026-11-25; writes to
--   out/<scene>_sticky/) instead of the seed's eq. 9; out: the output directory (the tests write elsewhere than a
--   user's run); seed: the random initial pulse densities' seed (the layouts start at 0).
--   A design step that breaks the simulation (a blow-up) is stepped again, shorter (cq.augmented_lagrangian's recover).
--   CQ_THREADS=N runs the engine on N threads (default 1, as the seed's timings; walker3d_topo: 14 -> 9.2 s per
--   iteration on 2 cores).
-- Writes out/<scene>/ (or out): history.csv and history.png (task loss, the four constraints), penalties.png (tau,
-- kappa), layout.png (design:picture: the material layout gamma with its colour bar, and the actuator layout in
-- cq.frames' palette with its legend, faded by gamma; 3D: also layout_slice.png, a slice through the middle),
-- signals.csv and signals.png (design:signals_plot: the four actuation signals in the legend's colours), frames and
-- MP4 videos of the optimised and of the binarised body, and result.txt.
local cq = require "cq"
local here = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")
local topo = dofile(here .. "../scenes/topo.lua") -- from any directory
local A = cq.args(arg, {
  name = "examples/topo.lua",
  about = "Seed 004's 4D topology optimisation: material layout, actuator layout and pulse actuation of a soft " ..
    "body designed together (Algorithm 1), then binarised and re-simulated.",
  example = "cqlua examples/topo.lua scene=walker2d_topo iters=300",
  { "scene", "walker2d_topo", "the example (scenes/topo.lua)",
    oneof = { "walker2d_topo", "climber2d_topo", "balancer2d_topo", "walker3d_topo", "rotator3d_topo" } },
  { "iters", 400, "the inner loop's limit per outer iteration of Algorithm 1", min = 1, integer = true },
  { "precision", "f64", "the engine's precision", oneof = { "f32", "f64" } },
  { "outer", 30, "outer iterations of Algorithm 1 at most", min = 1, integer = true },
  { "backend", "cpu", "the engine's backend (cpu, cuda)" },
  { "time_limit", math.huge, "seconds after which the optimisation stops (the outputs are still written)", min = 0 },
  { "T", nil, "the horizon (s); none: the seed's", type = "number", min = 0 },
  { "resume", false, "continue from <out>/design.json" },
  { "walls", "no_slip", "the seed's eq. 9, or sticky walls (the runs before 2026-11-25)",
    oneof = { "no_slip", "sticky" } },
  { "out", nil, "the output directory; none: out/<scene> (out/<scene>_sticky with sticky walls)" },
  { "seed", 1, "the random initial pulse densities' seed" },
})
local name, iters, precision, outer_max, backend = A.scene, A.iters, A.precision, A.outer, A.backend
local time_limit, T, resume, walls = A.time_limit, A.T, A.resume, A.walls
local N_ACT = 4
local out = A.out or "out/" .. name .. (walls == "sticky" and "_sticky" or "")
os.execute("mkdir -p " .. out)
local now = require("cq.clock").now

local world, s0, info = topo.build(name, { precision = precision, backend = backend, walls = walls })
local ex, steps = info.example, info.steps
if T then steps = math.max(1, math.floor(T / info.ctl_dt + 0.5)) end
print(string.format("%s: %d particles, %d control steps of %g s (%d substeps of 1e-4 s), A_act %g Pa; objective %s",
  name, world.n, steps, info.ctl_dt, steps * 10, ex.A_act, ex.what))

-- the design: material layout phi (eqs. 11-16), actuator layout psi (eqs. 18-21), pulses alpha (eqs. 24-26);
-- initial values as the seed's: phi = 0, psi = 0, a_sgn and a_abs ~ N(0, 0.1)
local radius = ex.radius * info.dx
local design = cq.design { world = world }
local phi = design:layout { state = s0, radius = radius, p = ex.p, beta = ex.beta }
local psi = design:actuators { state = s0, outputs = N_ACT, layout = phi, radius = radius, p = ex.p, beta = ex.beta }
math.randomseed(A.seed)
local function gauss() return 0.1 * math.sqrt(-2 * math.log(1 - math.random())) * math.cos(2 * math.pi * math.random()) end
local pulses = cq.pulses { outputs = N_ACT, steps = steps, dt = info.ctl_dt, amplitude = ex.A_act, init_sgn = gauss,
  init_abs = gauss }
local final, running = topo.objective(ex, s0)
local run = cq.rollout { world = world, steps = steps, controller = psi.controller(pulses), design = design,
  final = final, running = running, checkpoint_every = topo.checkpoint_every(world, steps) }

-- Algorithm 1: tau0 = 1e-3, c = 0.25, a = 10, Adam step 0.01; tolerances 5% (C_mat, C_act) and 1% (C_pul) of
-- their maxima
local cons = {
  { design:binarization(phi), 0.05 * 0.25, name = "C_mat" },
  { design:binarization(psi), 0.05 * N_ACT / (N_ACT + 1), name = "C_act" },
  { pulses.binarization.sgn, 0.01, name = "C_sgn" },
  { pulses.binarization.abs, 0.01, name = "C_abs" },
}
local params = { phi, psi, pulses.params[1], pulses.params[2] }
local save_path, al_state, evals, first_task = out .. "/design.json", {}, 0, nil
-- the run design.json belongs to: a resume with another is refused (iters, outer, time_limit, backend may change)
local fingerprint = { example = name, steps = steps, walls = walls, precision = precision, particles = world.n,
  seed = A.seed }
local function save_run()
  local extra = { state = al_state, evals = evals, first_task = first_task }
  for k, v in pairs(fingerprint) do extra[k] = v end
  cq.save(save_path, { design = params }, extra)
end
-- the temporaries of writes of design.json that a killed run left unfinished (design.json.part.<pid>)
require("cq._fs").remove_stale_parts(save_path)
if resume then
  local extra = cq.load(save_path, { design = params })
  extra.walls = extra.walls or "sticky" -- files written before the walls argument came from sticky walls
  local differs, unrecorded = {}, {}
  for _, k in ipairs { "example", "steps", "walls", "precision", "particles", "seed" } do
    if extra[k] == nil then unrecorded[#unrecorded + 1] = k
    elseif extra[k] ~= fingerprint[k] then
      differs[#differs + 1] = string.format("%s %s there, %s here", k, tostring(extra[k]), tostring(fingerprint[k]))
    end
  end
  if #differs > 0 then
    error(string.format("examples/topo.lua: %s belongs to another run: %s (resume=no starts afresh, or another out=)",
      save_path, table.concat(differs, "; ")), 0)
  end
  if #unrecorded > 0 then
    io.stderr:write(string.format("examples/topo.lua: warning: %s records no %s (written before it did): resumed " ..
      "without checking them\n", save_path, table.concat(unrecorded, ", ")))
  end
  al_state, evals, first_task = extra.state, extra.evals, extra.first_task
  print(string.format("resumed from %s: %d iterations, outer %d", save_path, al_state.iterations, al_state.outer))
end
-- history.csv: a resumed run keeps the rows up to the saved iteration (a run stopped between two saves wrote more)
local kept = { "iteration,L,task,C_mat,C_act,C_sgn,C_abs,tau_mat,tau_act,tau_sgn,tau_abs,kappa_mat,kappa_act," ..
  "kappa_sgn,kappa_abs,seconds" }
local old_hist = resume and io.open(out .. "/history.csv", "r")
if old_hist then
  for line in old_hist:lines() do
    local i = tonumber(line:match("^(%d+),"))
    if i and i <= al_state.iterations then kept[#kept + 1] = line end
  end
  old_hist:close()
end
local hist = io.open(out .. "/history.csv", "w")
hist:write(table.concat(kept, "\n"), "\n")
local t_iter, t_start, evals0 = now(), now(), evals
local result = cq.augmented_lagrangian {
  params = params, lr = 0.01, tau0 = 1e-3, c = 0.25, a = 10, inner_max = iters, outer_max = outer_max,
  constraints = cons, state = al_state,
  loss = function()
    evals = evals + 1
    if ex.gravity_ramp then -- the climber's break-in: 0 -> 9.8 m/s^2 in steps of 0.98 every 20 iterations
      world:set_gravity { 0, -math.min(9.8, 0.98 * math.floor((evals - 1) / 20)) }
    end
    local L = run:forward(s0)
    run:backward()
    return L
  end,
  on_iteration = function(s, L, task, C, tau, kappa)
    first_task = first_task or task
    local dt = now() - t_iter
    t_iter = now()
    hist:write(string.format("%d,%.6g,%.6g,%.5g,%.5g,%.5g,%.5g,%g,%g,%g,%g,%g,%g,%g,%g,%.3f\n", s, L, task, C[1], C[2],
      C[3], C[4], tau[1], tau[2], tau[3], tau[4], kappa[1], kappa[2], kappa[3], kappa[4], dt))
    hist:flush()
    if s % 10 == 1 then
      print(string.format("iter %4d  task %.5f  C_mat %.4f C_act %.4f C_sgn %.4f C_abs %.4f  %.2f s", s, task, C[1],
        C[2], C[3], C[4], dt))
    end
    if s % 25 == 0 then save_run() end
    return now() - t_start > time_limit
  end,
  on_recover = function(s, why, factor) -- a design step that broke the simulation: stepped again, shorter
    evals = evals - 1 -- (the climber's gravity schedule counts the evaluations that succeeded)
    print(string.format("iter %4d  failed (%s): back to the last evaluated design, step size x%g", s, why, factor))
  end,
}
save_run()
hist:close()
if ex.gravity_ramp then world:set_gravity { 0, -9.8 } end -- the reported objective is at full gravity
local task = run:forward(s0)
local per_iter = (now() - t_start) / math.max(1, evals - evals0)
local C_final = { cons[1][1](0), cons[2][1](0), cons[3][1](0), cons[4][1](0) }
-- feasible: the reported design's constraints within their limits (result.feasible is the last inner loop's, and a
-- resumed run with outer_max <= its outer iterations reports the saved design without a step: no inner loop at all)
local feasible = true
for m = 1, 4 do feasible = feasible and C_final[m] <= cons[m][2] end
print(string.format("optimised: task %.5g after %d iterations (%d outer, %s), feasible %s (seed 004: %.5g)", task,
  result.iterations, result.outer, result.stopped and "stopped at the time limit" or "at the iteration limit or settled",
  tostring(feasible), ex.seed[1]))

-- the layout pictures (design:picture): the material layout gamma and the actuator layout (colour = the actuator of
-- largest weight, in cq.frames' palette, faded to white by 1 - gamma); 3D: the solid particles (gamma >= 0.5), and a
-- slice through the middle of the body
design:picture { state = s0, path = out .. "/layout.png", title = name .. ": layouts" }
if world.dim == 3 then
  design:picture { state = s0, path = out .. "/layout_slice.png", slice = { axis = "z", at = 0.5 },
    title = name .. ": layouts, middle slice" }
end
local colors = design:colors { what = "actuators" } -- the optimised body's frames, in the picture's colours
-- the frames: the region the body can reach (walker: to the right along the floor; climber: up between the walls)
local reach = world.dim == 3 and (ex.spin and { 0.35, 0, 0.35, 0.65, 0.3, 0.65 } or { 0.05, 0, 0.3, 0.7, 0.3, 0.7 })
  or ex.tip and { 0.3, 0, 0.7, 0.5 } or ex.axis == 1 and { 0, 0, 0.8, 0.4 } or { 0, 0, world.res[1] * info.dx, 0.6 }

-- the actuation signals (in the actuator legend's colours), and the frames of the optimised body
design:signals_plot { controller = pulses, steps = steps, dt = info.ctl_dt, path = out .. "/signals.png",
  csv = out .. "/signals.csv", title = name .. ": actuation signals (Pa)", sign = "seed004" } -- as the seed plots them
local function plots()
  cq.plot { csv = out .. "/history.csv", x = "iteration", y = { "task", "C_mat", "C_act", "C_sgn", "C_abs" },
    out = out .. "/history.png", title = name .. ": task loss and constraints" }
  cq.plot { csv = out .. "/history.csv", x = "iteration", y = { "tau_mat", "tau_act", "tau_sgn", "tau_abs",
    "kappa_mat", "kappa_act", "kappa_sgn", "kappa_abs" }, out = out .. "/penalties.png", logscale = "y",
    title = name .. ": tau and kappa" }
end
local ok, why = pcall(plots)
if not ok then print("plots skipped: " .. tostring(why)) end
cq.frames.write { trajectory = run:trajectory(), dir = out .. "/optimised", every = math.max(1, math.floor(steps / 50)),
  color = colors, view = reach }

-- appendix A: solid particles only (gamma > 0.5), each on its actuator of largest weight, pulses rounded at the
-- middle of their ranges (a_sgn to -1 or 1, a_abs to -1 or 1), full E0 and rho0; re-simulated
local material, actuators = design:projection(phi), design:projection(psi)
local keep, act_of = {}, {}
for i, p in ipairs(material.particles) do
  if material.gamma[i] > 0.5 then
    keep[#keep + 1] = p
    act_of[p] = actuators.actuator[i] > 0 and actuators.actuator[i] or nil -- (the same particles, in the same order)
  end
end
local bw, bs0 = topo.build(name, { precision = precision, backend = backend, walls = walls, keep = keep, act_of = act_of,
  gravity = ex.gravity_ramp and -9.8 or nil })
for _, q in ipairs(pulses.params) do for i = 0, q.n - 1 do q.v[i] = q.v[i] >= 0 and 1 or -1 end end
local ctl = { params = {}, act = function(_, tp, obs, k) return pulses:act(tp, obs, k) end }
local bfinal, brunning = topo.objective(ex, bs0)
local brun = cq.rollout { world = bw, steps = steps, controller = ctl, final = bfinal, running = brunning }
local binarised = brun:forward(bs0)
cq.frames.write { trajectory = brun:trajectory(), dir = out .. "/binarised", every = math.max(1, math.floor(steps / 50)),
  view = reach }
-- the videos, where ffmpeg is installed
for _, which in ipairs { "optimised", "binarised" } do
  local ok_v, why_v = pcall(cq.frames.video, { dir = out .. "/" .. which, out = out .. "/" .. which .. ".mp4", fps = 25 })
  if not ok_v then print("video skipped: " .. tostring(why_v)) end
end
local lines = {
  string.format("example %s, %s, %d particles (%d solid after binarisation), walls %s", name, precision, world.n,
    #keep, walls),
  string.format("iterations %d (outer %d%s), %.1f s per iteration, %d recovered failures, feasible %s",
    result.iterations, result.outer, result.stopped and ", stopped at the time limit" or "", per_iter,
    result.recoveries, tostring(feasible)),
  string.format("constraints C_mat %.5f C_act %.5f C_sgn %.5f C_abs %.5f (limits %.4f %.4f %.2f %.2f)", C_final[1],
    C_final[2], C_final[3], C_final[4], cons[1][2], cons[2][2], cons[3][2], cons[4][2]),
  string.format("objective optimised %.5g, binarised %.5g (seed 004: %.5g / %.5g)", task, binarised, ex.seed[1],
    ex.seed[2]),
}
local f = io.open(out .. "/result.txt", "w")
f:write(table.concat(lines, "\n") .. "\n")
f:close()
print(table.concat(lines, "\n"))
return { task = task, first_task = first_task, binarised = binarised, iterations = result.iterations, C = C_final,
  limits = { cons[1][2], cons[2][2], cons[3][2], cons[4][2] }, feasible = feasible, solid = #keep }
