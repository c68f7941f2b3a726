-- Private: warnings (not errors) about a world that will run but not as its author likely expects. They go to
-- M.warn (stderr), which `require("cq.robot").warnings_of` swaps to collect them.
local M = {}

-- Fluids sampled more coarsely than this many particles per cell and axis sink under gravity: a fluid has no shear
-- stiffness, and with fewer particles than the grid has velocity unknowns its particles pack ever closer while each
-- keeps J = 1, so the free surface falls (a 2D tank at 1.25 per cell and axis: 1.1 mm in 0.1 s at 5 ms implicit
-- substeps, at 2 and 2.5 at rest; the finger's 3D tank at 1.25 drags the finger along: docs/results/history.md, "Issue 11:
-- the water sinks"). Solids hold their particles apart by their shear stiffness.
M.FLUID_MIN_PER_AXIS = 1.9

-- A particle's quadratic B-spline stencil reaches its base node's neighbours, nodes up to 1.5 cells away: a body
-- closer than that to a wall band's outermost constrained node feels the band's boundary condition directly (a block
-- gliding along a sticky wall at 0.5 m/s keeps 0.2977 m/s after 20 steps 1 cell from its nodes, 0.4958 at 1.4 cells,
-- and exactly 0.5 at 1.6, 2 and 3: tests/placement_spec.lua). Bodies within M.WALL_CLEARANCE cells of a band's
-- nodes are warned of, unless they rest on it (gravity points into it), are clamped in it (a particle within half a
-- cell of its nodes) or are a fluid (water fills its tank up to the walls).
M.WALL_CLEARANCE = 2

local WALL_NAMES = { [0] = "left", "right", "floor", "top", "back", "front" }

--- Warns (M.warn) of each body (a group of world.groups, or the whole world without groups) that comes within
--- M.WALL_CLEARANCE cells of a wall band's nodes in state s without resting on it or being clamped in it, unless all
--- its particles are fluid (material: the world's parameter array, 0-based; fluid: the fluid material's id). Returns
--- the warnings.
function M.near_walls(world, s, material, fluid)
  local out, n, dx = {}, world.n, world.dx
  local groups = world.groups or { { first = 1, last = n } }
  local x = s.x
  local solid = {} -- groups with a particle that is not a fluid
  for i, grp in ipairs(groups) do
    for p = grp.first, grp.last do
      if material[p - 1] ~= fluid then solid[i] = true break end
    end
  end
  for _, band in ipairs(world._bands or {}) do
    local a, high, t = math.floor(band.wall / 2), band.wall % 2 == 1, band.thickness
    local res = world.res[a + 1]
    local g = world._gravity[a + 1] or 0
    local rests = (high and g > 0) or (not high and g < 0) -- gravity points into this band
    for i, grp in ipairs(groups) do
      local near = math.huge
      for p = grp.first, grp.last do
        local u = x[a * n + p - 1] / dx
        local d = high and (res - t) - u or u - (t - 1) -- cells to the band's nearest node
        if d < near then near = d end
      end
      if near >= 0.5 and near < M.WALL_CLEARANCE - 1e-9 and not rests and solid[i] then
        local what = grp.name and ("robot group " .. i .. " '" .. grp.name .. "'") or world.groups and
          ("robot group " .. i) or "a body"
        out[#out + 1] = string.format("cqlua: warning: %s comes within %.2g cells of the %s wall band's nodes (its " ..
          "thickness %d cells, dx %.4g): a particle's B-spline stencil reaches 1.5 cells, so the band's boundary " ..
          "condition acts on the body directly; keep bodies at least %g cells from a wall band unless they rest on " ..
          "it or are clamped in it (enlarge res, or move the body)", what, near, WALL_NAMES[band.wall], t, dx,
          M.WALL_CLEARANCE)
        M.warn(out[#out])
      end
    end
  end
  return out
end

--- Warns (M.warn) of the actuators of a world that drive nothing: no particle's act_id (the world's parameter array,
--- 0-based) names them and, for a cable actuator (cabled[a] true for an actuator a with a cable), no cable runs on
--- them. Their actuation does nothing and their gradients are 0 (a world of 100 actuators whose act_id was never
--- filled trains nothing). where: the caller, for the message. Returns the warning or nil.
function M.idle_actuators(world, act_id, cabled, where)
  local na = world.n_actuators
  if na == 0 then return nil end
  local used = {}
  for p = 0, world.n - 1 do
    local a = act_id[p]
    if a >= 0 then used[a + 1] = true end
  end
  local idle = {}
  for a = 1, na do
    if not used[a] and not cabled[a] then idle[#idle + 1] = a end
  end
  if #idle == 0 then return nil end
  local list = {}
  for i = 1, math.min(#idle, 10) do list[i] = tostring(idle[i]) end
  if #idle > 10 then list[#list + 1] = "..." ; list[#list + 1] = tostring(idle[#idle]) end
  local msg = string.format("cqlua: warning: %s: %d of the world's %d actuators drive no particle (%s %s): no " ..
    "particle's act_id names them (world:fill(\"act_id\", ...), 0-based; robot:pressure_actuator and robot:chamber " ..
    "set it) and no cable runs on them, so their actuation does nothing and their gradients are 0%s",
    where, #idle, na, #idle == 1 and "actuator" or "actuators", table.concat(list, ", "),
    #idle < na and " (as intended where a design, binarised, left a signal unused)" or "")
  M.warn(msg)
  return msg
end

--- Where warnings go (stderr); replaceable, e.g. by a test that captures them.
function M.warn(msg) io.stderr:write(msg, "\n") end

--- Runs f(...) with the warnings collected instead of passed to M.warn. Returns the list of warnings, then f's
--- results (f's error is raised once M.warn is restored).
function M.warnings_of(f, ...)
  local warned, warn = {}, M.warn
  M.warn = function(msg) warned[#warned + 1] = msg end
  local r = { pcall(f, ...) }
  M.warn = warn
  if not r[1] then error(r[2], 0) end
  return warned, unpack(r, 2)
end

--- Warns (M.warn) of the fluid particles of a world sampled below M.FLUID_MIN_PER_AXIS particles per cell and axis
--- (dx / their mean rest volume's D-th root): once per group of world.groups (a robot's: { name, particles }, 1-based)
--- that has fluid particles, or once for all of them when the world has no groups. material and vol0 are the
--- world's parameter arrays (0-based), fluid the fluid material's id. Returns the warnings.
function M.sparse_fluids(world, material, vol0, fluid)
  local groups = world.groups
  if not groups then
    local all = {}
    for p = 1, world.n do all[p] = p end
    groups = { { particles = all } }
  end
  local out = {}
  for i, g in ipairs(groups) do
    local vol, count = 0, 0
    for _, p in ipairs(g.particles) do
      if material[p - 1] == fluid then vol, count = vol + vol0[p - 1], count + 1 end
    end
    local per_axis = count > 0 and world.dx / (vol / count) ^ (1 / world.dim) or math.huge
    if per_axis < M.FLUID_MIN_PER_AXIS then
      local what = g.name and ("the fluid group '" .. g.name .. "'") or world.groups and ("the fluid group #" .. i)
        or "the world's fluid"
      out[#out + 1] = string.format("cqlua: warning: %s is sampled %.3g particles per cell and axis (dx %.4g); below 2 "
        .. "a fluid's particles pack and it sinks under gravity: use a spacing of at most dx / 2 = %.4g", what,
        per_axis, world.dx, world.dx / 2)
      M.warn(out[#out])
    end
  end
  return out
end

--- Warns (M.warn) of a world where a fluid meets a solid while each fluid particle takes its own J (fluid =
--- "particle", volumetric not "averaged"): such water, at the 2 or more particles per cell and axis it needs not to
--- sink, locks against the solid (a soft beam buoyed in it bends 0 % of its expected deflection, a finger in a tank
--- less than 6 % of its bend in air: tests/fluid_spec.lua, docs/results/history.md "Issue 11: the water locks").
--- robot:world takes fluid = "grid" for such a robot unless told otherwise. Returns the warning or nil.
function M.locking_fluid(world, material, fluid)
  if world.fluid ~= "particle" or world.volumetric == "averaged" then return nil end
  local fluids, solids = 0, 0
  for p = 0, world.n - 1 do
    if material[p] == fluid then fluids = fluids + 1 else solids = solids + 1 end
  end
  if fluids == 0 or solids == 0 then return nil end
  local msg = string.format("cqlua: warning: this world has %d fluid and %d solid particles, and fluid = \"particle\" "
    .. "(each fluid particle's pressure from its own J): such a fluid locks against a solid in it (a soft beam in "
    .. "water does not bend at all, tests/fluid_spec.lua); use fluid = \"grid\" (robot:world's default for a robot "
    .. "of fluid and solid groups), or volumetric = \"averaged\"", fluids, solids)
  M.warn(msg)
  return msg
end


-- The grid fluid's pressure answers how full each grid node is against the fill it had in the first state, so any
-- unevenness of that fill that moves with a body is a pressure on the body that has nothing to do with the water's
-- physics: a gap or an overlap between the body's particles and the water's (their lattices not meeting seamlessly;
-- a meshed body always), or a water lattice at a fractional number of particles per cell and axis (its fill ripples
-- 0.96-1.01 at 2.5, and the ripple moves with the water). The pressure is of the order of the water's bulk modulus
-- times the unevenness, and it holds a soft body in place: a buoyed beam (E 1e5 Pa, water at 2.2e4 Pa) bends 96 % of
-- its expected deflection in water sampled seamlessly round it (2 particles per cell and axis on the beam's own
-- lattice), 10 % at 2.5 per cell and axis, 1 % with a 0.3-cell gap along one side (docs/experiments/water_seam2d.lua;
-- docs/results/history.md, "the seam between a body and its water"). Nodes shared by the water and a solid whose
-- fill is off 1 by more than this, or water whose own fill ripples by more than this, are warned of.
M.SEAM_TOLERANCE = 0.005

local function bspline_cdf(t)
  if t <= -1.5 then return 0 end
  if t <= -0.5 then return (t + 1.5) ^ 3 / 6 end
  if t <= 0.5 then return 0.5 + 0.75 * t - t ^ 3 / 3 end
  if t < 1.5 then return 1 - (1.5 - t) ^ 3 / 6 end
  return 1
end

--- Warns (M.warn) of a world with fluid = "grid" whose water meets a solid where the first state's fill is uneven (see
--- M.SEAM_TOLERANCE): the nodes shared by the water and a solid (group of world.groups) whose fill (every particle's
--- B-spline-weighted volume V0 det F / dx^D, plus the walls' share, as engine/terms/fill.h takes it) differs from 1
--- by more than M.SEAM_TOLERANCE among the full ones (fill above 0.8; water and solid each above 5 % of it; left out:
--- the nodes a wall band's nodes reach, where a body clamped in the band overlaps the walls' share, and those within a
--- cell of a free surface or of air, whose fill falls off whatever the seams), and water whose own fill (at the
--- nodes no solid shares) ripples by more than M.SEAM_TOLERANCE (a fractional number of particles per cell and axis).
--- The fill is recomputed here from the state (the engine does not expose its nodes' fill). material, bulk, vol0: the
--- world's parameter arrays (0-based); fluid: the fluid material's id. Returns the warning or nil.
function M.water_seams(world, s, material, bulk, vol0, fluid)
  if world.fluid ~= "grid" then return nil end
  local n, D, dx, res = world.n, world.dim, world.dx, world.res
  local fluids, K, fvol = 0, 0, 0
  for p = 0, n - 1 do
    if material[p] == fluid then fluids, K, fvol = fluids + 1, math.max(K, bulk[p]), fvol + vol0[p] end
  end
  if fluids == 0 or fluids == n then return nil end
  local group_of = {}
  for gi, g in ipairs(world.groups or {}) do
    for p = g.first or 1, g.last or 0 do group_of[p - 1] = gi end
  end
  local x, F = s.x, s.F
  local R1, R2 = res[2] + 4, D == 3 and res[3] + 4 or 1
  local phi, fshare, sshare, sgroup, where = {}, {}, {}, {}, {}
  local base, w = {}, {}
  for p = 0, n - 1 do
    local J
    if D == 2 then
      J = F[p] * F[3 * n + p] - F[n + p] * F[2 * n + p]
    else
      local f = function(i, j) return F[(i * 3 + j) * n + p] end
      J = f(0, 0) * (f(1, 1) * f(2, 2) - f(1, 2) * f(2, 1)) - f(0, 1) * (f(1, 0) * f(2, 2) - f(1, 2) * f(2, 0)) +
        f(0, 2) * (f(1, 0) * f(2, 1) - f(1, 1) * f(2, 0))
    end
    local V = vol0[p] * J / dx ^ D
    for a = 1, D do
      local u = x[(a - 1) * n + p] / dx
      local b = math.floor(u - 0.5)
      local fx = u - b
      base[a] = b
      w[a] = { 0.5 * (1.5 - fx) ^ 2, 0.75 - (fx - 1) ^ 2, 0.5 * (fx - 0.5) ^ 2 }
    end
    local isfluid = material[p] == fluid
    for i = 0, 2 do for j = 0, 2 do for k = 0, D == 3 and 2 or 0 do
      local key = ((base[1] + i + 2) * R1 + base[2] + j + 2) * R2 + (D == 3 and base[3] + k + 2 or 0)
      local wt = w[1][i + 1] * w[2][j + 1] * (D == 3 and w[3][k + 1] or 1) * V
      if not phi[key] then
        phi[key], fshare[key], sshare[key] = 0, 0, 0
        where[key] = { base[1] + i, base[2] + j, D == 3 and base[3] + k or nil }
      end
      phi[key] = phi[key] + wt
      if isfluid then fshare[key] = fshare[key] + wt
      else
        sshare[key] = sshare[key] + wt
        if not sgroup[key] then sgroup[key] = group_of[p] end
      end
    end end end
  end
  local thick = {}
  for k = 0, 2 * D - 1 do thick[k] = 0 end
  for _, band in ipairs(world._bands or {}) do thick[band.wall] = band.thickness end
  local worst, worst_key, shared = 0, nil, 0
  local low, high = math.huge, -math.huge -- the water's own fill, at nodes no solid shares
  for key, f in pairs(phi) do
    if fshare[key] > 0.05 and f > 0.8 then
      local inside, band = 1, false -- nodes near a wall band are left out (a body clamped in a band overlaps the
      -- walls' share where it enters it; the walls do not move)
      for a = 1, D do
        local i, t0, t1 = where[key][a], thick[2 * (a - 1)], thick[2 * (a - 1) + 1]
        local lo, hi = t0 > 0 and t0 - 1 or -1e9, t1 > 0 and res[a] - t1 or 1e9
        inside = inside * (bspline_cdf(hi - i) - bspline_cdf(lo - i))
        band = band or inside < 1 -- a node a wall band's nodes reach: the wall's share, no body's seam, moves
      end
      local surface = false -- a node within a cell of a free surface or of air (a neighbour less than 0.8 full):
      -- its fill falls off there whatever the seams
      for di = -1, 1 do for dj = -1, 1 do for dk = D == 3 and -1 or 0, D == 3 and 1 or 0 do
        if (phi[key + (di * R1 + dj) * R2 + dk] or 0) < 0.8 then surface = true end
      end end end
      if not band and not surface then
        if sshare[key] > 0.05 then
          shared = shared + 1
          if math.abs(f - 1) > worst then worst, worst_key = math.abs(f - 1), key end
        elseif sshare[key] == 0 then
          low, high = math.min(low, f), math.max(high, f)
        end
      end
    end
  end
  local per_axis = dx / (fvol / fluids) ^ (1 / D)
  local ripple = high > low and high - low or 0
  local rippled = ripple > M.SEAM_TOLERANCE
  if worst <= M.SEAM_TOLERANCE and not rippled then return nil end
  local parts = {}
  if worst > M.SEAM_TOLERANCE then
    local g = worst_key and sgroup[worst_key]
    local grp = g and world.groups[g]
    local node = where[worst_key]
    parts[#parts + 1] = string.format("where it meets %s the grid's fill is off by up to %.3g (node (%s), at x = " ..
      "(%s)): a gap or an overlap between the body's particles and the water's", grp and grp.name and
      ("robot group " .. g .. " '" .. grp.name .. "'") or g and ("robot group " .. g) or "a solid", worst,
      table.concat(node, ", "), (function()
        local t = {}
        for a = 1, D do t[a] = string.format("%.4g", node[a] * dx) end
        return table.concat(t, ", ")
      end)())
  end
  if rippled then
    parts[#parts + 1] = string.format("the water's own fill ripples by %.3g from node to node (it is sampled %.3g " ..
      "particles per cell and axis; a lattice at a whole number fills every node alike wherever it stands), and the " ..
      "ripple moves with it", ripple, per_axis)
  end
  local msg = string.format("cqlua: warning: the grid water (fluid = \"grid\", bulk modulus %.3g) will resist a " ..
    "body moving in it far beyond its physics: %s. Its pressure answers such unevenness as a body moves (about " ..
    "bulk x unevenness = %.2g Pa), " ..
    "which a soft body cannot overcome: a buoyed beam of E 1e5 Pa bends 96 %% of its expected deflection in water " ..
    "sampled seamlessly round it, 10 %% at 2.5 particles per cell and axis, 1 %% with a 0.3-cell gap beside it " ..
    "(docs/modelling.md, \"a fluid meeting a solid\"). Put the body and the water on one lattice of spacing dx / 2 = " ..
    "%.4g (2 particles per cell and axis), the water on every lattice point outside the body: robot:box with that " ..
    "spacing and its offset and size whole numbers of spacings (robot:box stretches the spacing to fit the size); " ..
    "robot:gmsh{spacing = %.4g} samples a mesh on the world's " ..
    "lattice (points at (m + 1/2) spacing) instead of one particle per element (%d nodes shared)",
    K, table.concat(parts, "; and "), K * math.max(worst, ripple), dx / 2, dx / 2, shared)
  M.warn(msg)
  return msg
end

return M
