-- Seed 002 sec. V.C: co-design of a two-link soft arm (two joints, each with two side-by-side pressure actuators)
-- standing on the floor. SLSQP (libnlopt) minimizes the actuation cost sum_k u_k^T u_k dt subject to the tip
-- reaching the goal ball and the arm coming to rest (mean squared velocity ~ 0) at the final time, over the
-- open-loop actuation and, for the co-designed arm, every particle's Young's modulus in [30%, 400%] of E0.
-- Fixed-stiffness arms (100% and 300% E0) get the same optimizer over actuation only, for comparison.
-- Usage: cqlua examples/arm_codesign2d.lua [evaluations=150] [designs=codesign,fixed100,fixed300]
--   (--help: every key and its meaning)
local cq = require "cq"
local A = cq.args(arg, { name = "examples/arm_codesign2d.lua",
  about = "Seed 002 sec. V.C: SLSQP co-design of a two-link soft arm (actuation and per-particle stiffness) to reach " ..
    "a goal and come to rest, against fixed-stiffness arms.",
  example = "cqlua examples/arm_codesign2d.lua evaluations=40 designs=codesign",
  { "evaluations", 150, "SLSQP evaluations per design", min = 1, integer = true },
  { "designs", "codesign,fixed100,fixed300", "comma-separated: codesign (per-particle E co-designed) or fixedNNN " ..
    "(every particle at NNN % of E0)" },
})
local maxeval, designs = A.evaluations, A.designs
local T, dt, substeps, E0 = 40, 0.02, 20, 30
local goal, reach_tol, rest_tol = { 0.36, 0.28 }, 0.01, 1e-3 -- constraints: tip within 0.01 of the goal, v^2 <= 1e-3
local goal_radius, rest_ok = 0.015, 1.5e-3                    -- success: tip inside the goal ball, arm at rest

-- The arm, bottom to top: joint 1 (left and right actuated halves), link 1, joint 2 (two halves), link 2.
local robot, w, x0, y, h = cq.robot { dim = 2 }, 0.05, 0.5 - 0.025, 0.03, 1 / 128
local mat = { model = "neohookean", E = E0, nu = 0.3, density = 1 }
local function joint(height)
  local l = robot:box { offset = { x0, y }, size = { w / 2, height }, spacing = h, material = mat }
  local r = robot:box { offset = { x0 + w / 2, y }, size = { w / 2, height }, spacing = h, material = mat }
  robot:pressure_actuator { groups = { l }, axis = 2, max = E0 / 3 }
  robot:pressure_actuator { groups = { r }, axis = 2, max = E0 / 3 }
  y = y + height
end
local function link(height)
  local g = robot:box { offset = { x0, y }, size = { w, height }, spacing = h, material = mat }
  y = y + height
  return g
end
joint(0.06); link(0.08); joint(0.06)
local top = link(0.08)
local world, s0 = robot:world { res = { 64, 64 }, dx = 1 / 64, dt = dt, substeps = substeps, gravity = { 0, -3.8 },
  walls = { all = { type = "sticky", thickness = 3 } } } -- the base is held by the sticky floor
local n, tip = world.n, {}
for _, p in ipairs(top.particles) do if s0:get("x", p)[2] > y - 0.02 then tip[#tip + 1] = p end end

local O = cq.objectives
local reach, still = O.distance_to_target(goal, tip), O.final_velocity()

-- One design run: SLSQP over u (T x 4 in [-1, 1]) and, when codesign, E / E0 per particle in [0.3, 4] (a design
-- variable: the rollout applies it and fills its gradient).
local function optimize(name, codesign, stiffness)
  local ctl = cq.open_loop { steps = T, outputs = 4, init = 0 }
  local u = ctl.params[1]
  u.bounds = { -1, 1 }
  world:fill("E", E0 * stiffness)
  local design = codesign and cq.design { world = world } or nil
  local e = design and design:variable { name = "E", field = "E", per = "particle", bounds = { 0.3, 4 } }
  local run = cq.rollout { world = world, steps = T, controller = ctl, design = design, final = reach }
  local params = run:parameters()
  local last = {}
  local log = cq.log { name = "arm_codesign2d_" .. name, columns = { "iteration", "loss", "distance", "velocity2", "grad_norm", "seconds" } }
  local evals = 0
  -- A constraint term(s_T) - tol <= 0: one forward with that final term, and a backward when nlopt wants the gradient.
  local function constraint(term, tol, field)
    return { fn = function(need_grad)
      run.final = term
      local value = run:forward(s0)
      if need_grad then run:backward() end
      last[field] = value
      if field == "v2" then -- the last call at each point (nlopt evaluates the objective, then the constraints)
        evals = evals + 1
        log:iteration(evals, maxeval, { loss = last.cost, distance = math.sqrt(last.d2), velocity2 = value,
          grad_norm = cq.grad_norm(params) })
      end
      return value - tol
    end, tol = 1e-10 }
  end
  local opt = cq.nlopt { algorithm = "slsqp", params = params, maxeval = maxeval, xtol_rel = 1e-6,
    objective = function(need_grad) -- actuation cost sum u^T u dt (analytic: no simulation needed)
      local c = 0
      for i = 0, u.n - 1 do c = c + u.v[i] ^ 2 * dt; if need_grad then u.g[i] = 2 * u.v[i] * dt end end
      last.cost = c
      return c
    end,
    inequality = { constraint(reach, reach_tol ^ 2, "d2"), constraint(still, rest_tol, "v2") },
  }
  local cost, result = opt:run()
  -- Evaluate the final point: distance and rest.
  run.final = reach
  local d = math.sqrt(run:forward(s0))
  local traj = run:trajectory()
  run.final = still
  local v2 = run:forward(s0)
  local emin, emax = stiffness, stiffness
  if e then
    emin, emax = math.huge, 0
    for p = 0, n - 1 do emin, emax = math.min(emin, e.v[p]), math.max(emax, e.v[p]) end
  end
  cq.frames.write { trajectory = traj, dir = "out/arm_codesign2d_" .. name, every = 2, targets = { goal } }
  return { name = name, cost = cost, reached = d <= goal_radius and v2 <= rest_ok, distance = d, v2 = v2, result = result, evals = evals, emin = emin, emax = emax }
end

local results = {}
for name in designs:gmatch("[^,]+") do
  local r
  if name == "codesign" then r = optimize(name, true, 1)
  else r = optimize(name, false, assert(tonumber(name:match("fixed(%d+)")), "designs: codesign or fixedNNN") / 100) end
  results[#results + 1] = r
end
print(string.format("%-10s %10s %10s %12s %8s %6s  %s", "design", "cost", "distance", "mean v^2", "E/E0", "evals",
  "nlopt result"))
for _, r in ipairs(results) do
  print(string.format("%-10s %10.4f %10.4f %12.3e %3.1f-%3.1f %6d  %s  %s", r.name, r.cost, r.distance, r.v2, r.emin,
    r.emax, r.evals, r.result, (r.distance <= goal_radius and r.v2 <= rest_ok) and "reached" or "NOT reached"))
end
return results
