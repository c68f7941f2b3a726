-- Seed 000's 2D biped (Appendix C; sec. 5.3.2) as a reusable scene: 8 blocks, the four half-legs are pressure
-- actuators (max 2 along y), NeoHookean E = 10, nu = 0.3, density 1, on a no-slip floor under gravity 3.8; a
-- centroid observer over the 8 blocks (positions relative to the body, velocities, a 4-phase clock) and an MLP
-- 64-64 controller. Used by examples/biped2d.lua and examples/biped_codesign.lua. Asserts nothing.
local cq = require "cq"

local M = {}
M.T, M.DT, M.SUBSTEPS = 200, 0.02, 10 -- 4 s of control at 50 Hz, 10 substeps each

--- The biped. opts: spacing (particle spacing, 1/128), seed (the MLP's initial weights, 1), threads.
--- Returns { world, state, groups, observer, controller, rollout(opts) } where rollout adds the walking objective.
function M.build(opts)
  opts = opts or {}
  local spacing = opts.spacing or 1 / 128
  -- Geometry: leg width/height 0.1, body 0.3 x 0.1; the four half-legs are actuated.
  local lw, lh, bh, bw, ox, oy = 0.1, 0.1, 0.1, 0.3, 0.1, 0.06
  local offsets = { { 0, 0 }, { lw / 2, 0 }, { 0, lh }, { lw, lh }, { lw, lh + bh / 2 }, { bw - lw, lh }, { bw - lw, 0 },
    { bw - lw / 2, 0 } }
  local sizes = { { lw / 2, lh }, { lw / 2, lh }, { lw, bh }, { bw - 2 * lw, bh / 2 }, { bw - 2 * lw, bh / 2 },
    { lw, bh }, { lw / 2, lh }, { lw / 2, lh } }
  local robot, groups = cq.robot { dim = 2 }, {}
  for i = 1, 8 do
    groups[i] = robot:box { offset = { ox + offsets[i][1], oy + offsets[i][2] }, size = sizes[i], spacing = spacing,
      material = { model = "neohookean", E = 10, nu = 0.3, density = 1 } }
  end
  for _, i in ipairs { 1, 2, 7, 8 } do robot:pressure_actuator { groups = { groups[i] }, axis = 2, max = 2 } end
  local world, s0 = robot:world { res = { 400, 64 }, dx = 1 / 64, dt = M.DT, substeps = M.SUBSTEPS,
    gravity = { 0, -3.8 }, threads = opts.threads,
    walls = { all = { type = "friction", friction = math.huge, thickness = 3 } } }
  local group_idx = {}
  for i, g in ipairs(groups) do group_idx[i] = g.particles end
  local observer = cq.centroid_observer { groups = group_idx, fields = { "x", "v" }, relative = true,
    clock = { waves = 4, period = 25 } }
  local controller = cq.mlp { inputs = observer.size(2), outputs = 4, hidden = { 64, 64 }, activation = "relu",
    seed = opts.seed }
  local b = { world = world, state = s0, groups = groups, observer = observer, controller = controller }
  --- The rollout over T control steps: walk right (final x centroid), actuation penalised by 1e-8.
  function b.rollout(ropts)
    local O = cq.objectives
    return cq.rollout { world = world, steps = M.T, observer = observer, controller = controller,
      design = ropts and ropts.design, final = O.forward_progress(1),
      running = O.weighted { { O.actuation_penalty(), 1e-8 } } }
  end
  return b
end

return M
