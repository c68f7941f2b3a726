-- Seed 004's examples (sec. 4): the design domains, worlds and objectives of walker2d_topo and climber2d_topo
-- (walker3d_topo, rotator3d_topo and balancer2d_topo are not built yet). Common to all: a 1 m domain with dx = 0.01
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
}

--- The world of example name: its design domain (or opts.keep of it), on backend opts.backend ("cpu") in
--- opts.precision ("f64"), opts.threads (1).
function M.build(name, opts)
  opts = opts or {}
  local ex = assert(M.EXAMPLES[name], "scenes/topo.lua: unknown example " .. tostring(name))
  local h, thick = DX / 2, 3
  local nx, ny = math.floor(ex.size[1] / h + 0.5), math.floor(ex.size[2] / h + 0.5)
  -- the climber's walls hug the domain (0.2 m apart); the others stand on the floor of the 1 m box
  local res = ex.walls and { nx / 2 + 2 * thick, 100 } or { 100, 100 }
  local x0 = ex.walls and thick * DX or 0.1
  local y0 = thick * DX
  local full = {}
  for j = 0, ny - 1 do for i = 0, nx - 1 do full[#full + 1] = { x0 + (i + 0.5) * h, y0 + (j + 0.5) * h } end end
  local keep = opts.keep
  if not keep then keep = {} for p = 1, #full do keep[p] = p end end
  local n = #keep
  local n_act = opts.act_of and 4 or n
  local w = cq.world { dim = 2, res = res, dx = DX, dt = CTL_DT, substeps = math.floor(CTL_DT / SUB + 0.5),
    gravity = { 0, opts.gravity or -9.8 }, n = n, n_actuators = n_act, precision = opts.precision or "f64",
    threads = opts.threads or 1, backend = opts.backend or "cpu", walls = { all = { type = "sticky", thickness = thick } } }
  w:fill("vol0", h * h); w:fill("mass", h * h * 1000); w:fill("material", "neohookean")
  w:fill("E", 1e5); w:fill("nu", 0.4)
  if opts.act_of then
    w:fill("act_id", function(p) return (opts.act_of[keep[p]] or 0) - 1 end)
    w:fill("act_axis", { 1, 1 })
  end
  w:commit()
  local s0 = w:state()
  for p = 1, n do
    local pt = full[keep[p]]
    s0.x[p - 1], s0.x[n + p - 1] = pt[1], pt[2]
  end
  local info = { example = ex, n_full = #full, steps = math.floor(ex.T / CTL_DT + 0.5), ctl_dt = CTL_DT, dx = DX,
    full = full, keep = keep }
  return w, s0, info
end

--- The task loss of example ex on a rollout: final and running for cq.rollout (mass-weighted centre, eq. 33).
function M.objective(ex)
  local axis = ex.axis
  local function xg(t, s) return t:index(t:mass_centroid(s, "x"), axis) end
  return function(t, s) return t:scale(xg(t, s), -1) end,
    function(t, s, u, k) return k == 0 and xg(t, s) or t:const({ 0 }) end
end

return M
