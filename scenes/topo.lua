-- Seed 004's examples (sec. 4): the design domains, worlds and objectives of walker2d_topo, climber2d_topo and
-- balancer2d_topo, walker3d_topo and rotator3d_topo. Common to all: a 1 m domain with dx = 0.01
-- m, particles 0.5 dx apart, rho0 = 1000 kg/m^3, E0 = 0.1 MPa, nu0 = 0.4 (neo-Hookean), substeps of 1e-4 s, gravity
-- 9.8 m/s^2, no-slip floor and walls (eq. 9: a node moving into a wall stops, one moving away is free; Coulomb
-- friction with an infinite coefficient). Control steps are 1e-3 s (10 substeps): the pulses (sigma = 0.01 s)
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
  balancer2d_topo = { dim = 2, size = { 0.1, 0.4 }, T = 1, A_act = 2e4, radius = 2, p = 3, beta = 4, tip = true,
    centred = true, embedded = true, seed = { 0.001257, 0.02263 },
    what = "(1/T) int |x_tip(t) - x_tip(0)| dt (eq. 35): the tip's mean deviation on a floor vibrating 0.03 sin(40 t) m" },
  walker3d_topo = { dim = 3, size = { 0.1, 0.1, 0.1 }, T = 0.5, A_act = 2e4, radius = 2, p = 3, beta = 8,
    axis = 1, seed = { -0.3873, -0.3893 }, what = "-int v_g . e_x dt (eq. 32): distance walked along x" },
  rotator3d_topo = { dim = 3, size = { 0.1, 0.1, 0.1 }, T = 1, A_act = 2e4, radius = 1.5, p = 2, beta = 8,
    spin = 2, centred = true, seed = { -19.01, -17.25 },
    what = "int omega_y dt (eq. 36): the angle turned about +y (negative: clockwise)" },
}

--- The world of example name: its design domain (or opts.keep of it), on backend opts.backend ("cpu") in
--- opts.precision ("f64"), opts.threads (cq.world's CQ_THREADS where set, else 1: the seed's runs are on one core);
--- opts.walls = "no_slip" (eq. 9, the default) or "sticky" (every wall node's velocity zeroed, moving in or away:
--- how the runs before 2026-11-25 were made).
function M.build(name, opts)
  opts = opts or {}
  local ex = assert(M.EXAMPLES[name], "scenes/topo.lua: unknown example " .. tostring(name))
  local h, thick, dim = DX / 2, 3, ex.dim
  local count = {}
  for a = 1, dim do count[a] = math.floor(ex.size[a] / h + 0.5) end
  -- the climber's walls hug the domain (0.2 m apart); the others stand on the floor of the 1 m box (3D: centred in z)
  local res = ex.walls and { count[1] / 2 + 2 * thick, 100 } or (dim == 3 and { 100, 100, 100 } or { 100, 100 })
  -- the balancer's lowest cell lies in the floor band, whose sticky nodes (eq. 9 without its branch) move at
  -- 1.2 cos(40 t) m/s (0.03 sin(40 t) m)
  local origin = { ex.walls and thick * DX or ex.centred and 0.5 - count[1] * h / 2 or 0.1,
    ex.embedded and (thick - 1) * DX or thick * DX, 0.5 - (count[3] or 0) * h / 2 }
  local wall_type = opts.walls or "no_slip"
  assert(wall_type == "no_slip" or wall_type == "sticky",
    "scenes/topo.lua: opts.walls must be \"no_slip\" or \"sticky\", got " .. tostring(wall_type))
  local walls = { all = wall_type == "sticky" and { type = "sticky", thickness = thick }
    or { type = "friction", friction = math.huge, thickness = thick } }
  if ex.embedded then
    walls.floor = { type = "sticky", thickness = thick, oscillation = { amplitude = { 0.03 * 40, 0 }, omega = 40,
      phase = math.pi / 2 } }
  end
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
    precision = opts.precision or "f64", threads = opts.threads or (not os.getenv("CQ_THREADS") and 1 or nil),
    backend = opts.backend or "cpu",
    walls = walls }
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

--- The memo's checkpoint_every for a rollout of steps control steps: 1 (every substep state kept, no recomputation
--- in the backward pass) when they fit in half the memory available now (/proc/meminfo), else 0 (auto: sqrt(N)
--- checkpoints, the forward run twice). Half: rotator3d_topo's 1e4 substeps of 8,000 particles take 7.7 GB in f32,
--- and storing them makes its iteration about a fifth faster (25-27 s instead of 28-35 s on this VM's 2 threads).
function M.checkpoint_every(world, steps)
  local f = io.open("/proc/meminfo", "r")
  local avail = f and tonumber((f:read("*a"):match("MemAvailable:%s+(%d+)"))) or 0
  if f then f:close() end
  local D = world.dim
  local bytes = steps * CTL_DT / SUB * world.n * (2 * D + 2 * D * D) * (world.precision == "f32" and 4 or 8)
  return bytes <= avail * 1024 / 2 and 1 or 0
end

--- The task loss of example ex on a rollout from s0: final and running for cq.rollout (eqs. 32-36). The walkers'
--- and the climber's -int v_g . e dt (mass-weighted, eq. 33) is -(x_g(T) - x_g(0)) . e exactly (masses do not
--- change); the rotator's int omega dt and the balancer's (1/T) int |x_tip - x_tip(0)| dt are summed over the
--- control steps' states (the rectangle rule, dt = 1e-3 s). The tip: the particles in s0's top 1 dx.
function M.objective(ex, s0)
  if ex.spin then
    return function(t) return t:const({ 0 }) end,
      function(t, s) return t:scale(t:spin(s, ex.spin), CTL_DT) end
  end
  if ex.tip then
    local n, top, tip = s0.n, -math.huge, {}
    for p = 0, n - 1 do top = math.max(top, s0.x[n + p]) end
    for p = 0, n - 1 do if s0.x[n + p] > top - DX then tip[#tip + 1] = p + 1 end end
    local c0 = { 0, 0 }
    for _, p in ipairs(tip) do c0[1], c0[2] = c0[1] + s0.x[p - 1] / #tip, c0[2] + s0.x[n + p - 1] / #tip end
    return function(t) return t:const({ 0 }) end,
      function(t, s)
        local d = t:sub(t:centroid(s, "x", tip), t:const(c0))
        -- |d| smoothed by 1e-6 m, so that the gradient at d = 0 (the first steps) is finite
        return t:scale(t:sqrt(t:add(t:dot(d, d), t:const({ 1e-12 }))), CTL_DT / ex.T)
      end
  end
  local axis = ex.axis
  local function xg(t, s) return t:index(t:mass_centroid(s, "x"), axis) end
  return function(t, s) return t:scale(xg(t, s), -1) end,
    function(t, s, u, k) return k == 0 and xg(t, s) or t:const({ 0 }) end
end

return M
