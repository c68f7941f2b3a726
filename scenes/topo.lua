-- Seed 004's examples (sec. 4): the design domains, worlds and objectives of walker2d_topo, climber2d_topo and
-- walker3d_topo, rotator3d_topo (balancer2d_topo is not built yet). Common to all: a 1 m domain with dx = 0.01
-- m, particles 0.5 dx apart, rho0 = 1000 kg/m^3, E0 = 0.1 MPa, nu0 = 0.4 (neo-Hookean), substeps of 1e-4 s, gravity
-- 9.8 m/s^2, no-slip (sticky) floor and walls. Control steps are 1e-3 s (10 substeps): the pulses (sigma = 0.01 s)
-- are held over each. M.build(name, opts) -> world, s0, info; opts.keep (a list of 1-based particles of the full
-- domain) builds the post-processed body (appendix A: solid particles only) with opts.act_of[p] (1-based actuator,
-- nil = passive) on 4 actuators.
local cq = require "cq"

local M = {}

local DX, SUB, CTL_DT = 0.01, 1e-4, 1e-3
M.EXAMPLES = {
  walker2d_topo = { dim = 2, size = { 0.2, 0.2 }, T = 0.5, A_act = 1e4, radius = 1.5, p = 2, beta = 4,
    axis = 1, seed = { -0.3474, -0.3466 }, what = "-int v_g . e_x dt (eq. 32): distance walked to the right" },
  climber2d_topo = { dim = 2, size = { 0.2, 0.2 }, T = 1, A_act = 1e4, radius = 1.5, p = 2, beta = 4,
    axis = 2, walls = true, gravity_ramp = true, seed = { -0.2340, -0.1512 },
    what = "-int v_g . e_y dt (eq. 34): height climbed between the walls" },
  walker3d_topo = { dim = 3, size = { 0.1, 0.1, 0.1 }, T = 0.5, A_act = 2e4, radius = 2, p = 3, beta = 8,
    axis = 1, seed = { -0.3873, -0.3893 }, what = "-int v_g . e_x dt (eq. 32): distance walked along x" },
  rotator3d_topo = { dim = 3, size = { 0.1, 0.1, 0.1 }, T = 1, A_act = 2e4, radius = 1.5, p = 2, beta = 8,
    spin = 2, centred = true, seed = { -19.01, -17.25 },
    what = "int omega_y dt (eq. 36): the angle turned about +y (negative: clockwise)" },
}

--- The world of example name: its design domain (or opts.keep of it), on backend opts.backend ("cpu") in
--- opts.precision ("f64"), opts.threads (1).
function M.build(name, opts)
  opts = opts or {}
  local ex = assert(M.EXAMPLES[name], "scenes/topo.lua: unknown example " .. tostring(name))
  local h, thick, dim = DX / 2, 3, ex.dim
  local count = {}
  for a = 1, dim do count[a] = math.floor(ex.size[a] / h + 0.5) end
  -- the climber's walls hug the domain (0.2 m apart); the others stand on the floor of the 1 m box (3D: centred in z)
  local res = ex.walls and { count[1] / 2 + 2 * thick, 100 } or (dim == 3 and { 100, 100, 100 } or { 100, 100 })
  local origin = { ex.walls and thick * DX or ex.centred and 0.5 - count[1] * h / 2 or 0.1, thick * DX,
    0.5 - (count[3] or 0) * h / 2 }
  local full = {}
  for k = 0, (count[3] or 1) - 1 do for j = 0, count[2] - 1 do for i = 0, count[1] - 1 do
    local pt = { origin[1] + (i + 0.5) * h, origin[2] + (j + 0.5) * h }
    if dim == 3 then pt[3] = origin[3] + (k + 0.5) * h end
    full[#full + 1] = pt
  end end end
  local keep = opts.keep
  if not keep then keep = {} for p = 1, #full do keep[p] = p end end
  local n = #keep
  local n_act = opts.act_of and 4 or n
  local g = { 0, opts.gravity or -9.8, 0 }
  local w = cq.world { dim = dim, res = res, dx = DX, dt = CTL_DT, substeps = math.floor(CTL_DT / SUB + 0.5),
    gravity = { g[1], g[2], dim == 3 and g[3] or nil }, n = n, n_actuators = n_act,
    precision = opts.precision or "f64", threads = opts.threads or 1, backend = opts.backend or "cpu",
    walls = { all = { type = "sticky", thickness = thick } } }
  w:fill("vol0", h ^ dim); w:fill("mass", h ^ dim * 1000); w:fill("material", "neohookean")
  w:fill("E", 1e5); w:fill("nu", 0.4)
  if opts.act_of then
    w:fill("act_id", function(p) return (opts.act_of[keep[p]] or 0) - 1 end)
    w:fill("act_axis", dim == 3 and { 1, 1, 1 } or { 1, 1 })
  end
  w:commit()
  local s0 = w:state()
  for p = 1, n do
    local pt = full[keep[p]]
    for a = 1, dim do s0.x[(a - 1) * n + p - 1] = pt[a] end
  end
  local info = { example = ex, n_full = #full, steps = math.floor(ex.T / CTL_DT + 0.5), ctl_dt = CTL_DT, dx = DX,
    full = full, keep = keep }
  return w, s0, info
end

--- The task loss of example ex on a rollout: final and running for cq.rollout (mass-weighted, eqs. 32-36). The
--- walkers' and the climber's -int v_g . e dt is -(x_g(T) - x_g(0)) . e exactly (masses do not change); the
--- rotator's int omega dt is summed over the control steps' states (the rectangle rule, dt = 1e-3 s).
function M.objective(ex)
  if ex.spin then
    return function(t) return t:const({ 0 }) end,
      function(t, s) return t:scale(t:spin(s, ex.spin), CTL_DT) end
  end
  local axis = ex.axis
  local function xg(t, s) return t:index(t:mass_centroid(s, "x"), axis) end
  return function(t, s) return t:scale(xg(t, s), -1) end,
    function(t, s, u, k) return k == 0 and xg(t, s) or t:const({ 0 }) end
end

return M
