-- Test helper: a small co-design problem for cq.train (an actuated box pushing a passive one; open-loop actuation
-- and a per-group Young's modulus), the same in the spec and in the child processes it starts.
local cq = require "cq"
local M = {}

--- A fresh problem: {world, s0, run, opt, ctl, design}. opts: lr (default 0.05), steps (12), spacing (1/48).
function M.problem(opts)
  opts = opts or {}
  local robot = cq.robot { dim = 2 }
  local mat = { model = "neohookean", E = 40, nu = 0.3, density = 1 }
  local h = opts.spacing or 1 / 48
  local A = robot:box { offset = { 0.3, 0.1 }, size = { 0.1, 0.08 }, spacing = h, material = mat, name = "A" }
  local B = robot:box { offset = { 0.4, 0.1 }, size = { 0.08, 0.12 }, spacing = h, material = mat, name = "B" }
  robot:pressure_actuator { groups = { A }, axis = 1, max = opts.max or 8 }
  -- backend "cpu": tests/train_spec.lua compares resumed runs with uninterrupted ones bit for bit, which the GPU's
  -- atomic sums do not repeat
  local world, s0 = robot:world { res = { 32, 32 }, dx = 1 / 32, dt = 4e-3, substeps = opts.substeps or 8,
    gravity = { 0, -4 }, walls = { all = { type = "sticky", thickness = 2 } }, backend = "cpu" }
  local steps = opts.steps or 12
  local design = cq.design { world = world }
  design:variable { name = "E", field = "E", per = "group", groups = { A, B }, bounds = { 0.5, 2 } }
  local ctl = cq.open_loop { steps = steps, outputs = 1, init = 0.1 }
  local run = cq.rollout { world = world, steps = steps, controller = ctl, design = design,
    final = cq.objectives.distance_to_target({ 0.56, 0.16 }, B.particles) }
  local opt = cq.adam { params = { { params = ctl.params, lr = opts.lr or 0.05 }, { params = design.params, lr = 0.1 } } }
  return { world = world, s0 = s0, run = run, opt = opt, ctl = ctl, design = design }
end

return M
