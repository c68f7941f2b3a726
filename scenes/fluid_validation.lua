-- The two fluid validations of issue 10 as reusable scenes: a hydrostatic water column and Martin & Moyce's dam
-- break. tests/fluid_spec.lua runs them small; tools/fluid_validation.lua at several resolutions for
-- docs/results/history.md. Each returns what it measured and asserts nothing.
local cq = require "cq"

local M = {}

-- Walls: slip, 3 cells thick (the default). Wall nodes are i < 3 and i >= res - 3, so the first wall nodes sit at
-- x = 2 dx and x = (res - 3) dx. The fluid must fill the tank up to them: a fluid started at x = 3 dx (the "cell"
-- reading of thickness 3) or short of the far wall leaves a gap of about one cell that it creeps into for seconds
-- (particles in the wall layer move with a fraction of the free nodes' velocity), so the column is never at rest.
local WALL = 3

--- Martin, J. C. and Moyce, W. J. (1952), "Part IV. An experimental study of the collapse of liquid columns on a
--- rigid horizontal plane", Phil. Trans. R. Soc. Lond. A 244, 312-324: surge front of the n^2 = 2 column (width a =
--- 2.25 in, height 2a), Z = z / a (z the front's distance from the back wall) against T = n t sqrt(g / a) =
--- t sqrt(2 g / a). The points are the paper's Table 2 as tabulated in Ocellaris (github.com/TormodLandet/Ocellaris,
--- scripts/plot_dam_break.py, "Data from Martin and Moyce (1952), Table 2 and 6"); PySPH's digitisation of the
--- paper's Fig. 3 for the same column (github.com/pypr/pysph, pysph/examples/db_exp_data.py, mm_data_2) agrees with
--- them (e.g. Z = 2.292 at T = 1.997, 2.995 at 2.547). The paper itself was not available here.
M.MARTIN_MOYCE = {
  { T = 0.41, Z = 1.11 }, { T = 0.84, Z = 1.22 }, { T = 1.19, Z = 1.44 }, { T = 1.43, Z = 1.67 },
  { T = 1.63, Z = 1.89 }, { T = 1.83, Z = 2.11 }, { T = 1.98, Z = 2.33 }, { T = 2.20, Z = 2.56 },
  { T = 2.32, Z = 2.78 }, { T = 2.51, Z = 3.00 }, { T = 2.65, Z = 3.22 }, { T = 2.83, Z = 3.44 },
  { T = 2.98, Z = 3.67 }, { T = 3.11, Z = 3.89 }, { T = 3.33, Z = 4.11 },
}

--- The height of the residual column at the back wall from the same source (Ocellaris lists it with the front):
--- H = eta / (n^2 a) against tau = t sqrt(g / a) = T / sqrt(2).
M.MARTIN_MOYCE_HEIGHT = {
  { tau = 0.56, H = 0.94 }, { tau = 0.77, H = 0.89 }, { tau = 0.93, H = 0.83 }, { tau = 1.08, H = 0.78 },
  { tau = 1.28, H = 0.72 }, { tau = 1.46, H = 0.67 }, { tau = 1.66, H = 0.61 }, { tau = 1.84, H = 0.56 },
  { tau = 2.00, H = 0.50 }, { tau = 2.21, H = 0.44 }, { tau = 2.45, H = 0.39 }, { tau = 2.70, H = 0.33 },
  { tau = 3.06, H = 0.28 }, { tau = 3.44, H = 0.22 }, { tau = 4.20, H = 0.17 }, { tau = 5.25, H = 0.11 },
  { tau = 7.40, H = 0.06 },
}

local function J_of(s, n, p) return s.F[p] * s.F[3 * n + p] - s.F[n + p] * s.F[2 * n + p] end

--- A water column at rest in a tank with slip walls (2D). Options (all optional):
---   dx = 1/64, width = 21, height = 16 (the fluid's size in cells), density = 1, g = 10, bulk = 400,
---   ppc = 2 (particles per cell and axis), dt = 1e-2, substeps = 40, time = 0.4 (s), average = 0.1 (s, the last
---   part of the run that the pressure is averaged over), damping = 10 (1/s: the water's own, material.damping, which
---   damps the start-up pressure wave; a fluid is undamped by default), visc = 0, inset = 0 (cells: start the
---   fluid this far inside the first wall nodes, at the left wall and the floor, and as far short of the right wall;
---   1 reproduces the gap of issue 10's first attempt), integrator = "explicit", implicit (the implicit solver's
---   options, docs/api.md).
--- Pressure of a particle: p = -bulk (J - 1), the fluid's equation of state (= -tr(sigma) / 2 of world:stress when
--- visc = 0; the largest difference is returned as stress_mismatch). Depth: below the free surface y_s, the mean
--- height of the top row of particles plus half their spacing, measured at every averaged step. Bins are the grid's
--- rows of cells (fixed, so particles do not cross bin edges as the surface moves); the floor's cell (y from 2 dx
--- to 3 dx) and the cells within 2 dx of the surface are left out. Each kept bin (`bins`) has its particles' mean
--- depth, mean pressure, rho g (mean depth) and the relative error. Also: a least-squares line p(y) through the
--- kept bins (slope, p_floor at the floor y = 2 dx), the floor force p_floor * width against the total weight, the
--- surface and floor heights, the largest speed at the end.
function M.hydrostatic(o)
  o = o or {}
  local dx, W, H = o.dx or 1 / 64, o.width or 21, o.height or 16
  local rho, g, bulk = o.density or 1, o.g or 10, o.bulk or 400
  local ppc, dt, substeps = o.ppc or 2, o.dt or 1e-2, o.substeps or 40
  local steps = math.floor((o.time or 0.4) / dt + 0.5)
  local avg = math.floor((o.average or 0.1) / dt + 0.5)
  local x0 = (WALL - 1) * dx -- the first wall node on the left and on the floor
  local inset = (o.inset or 0) * dx
  local r = cq.robot { dim = 2 }
  r:box { offset = { x0 + inset, x0 + inset }, size = { W * dx - 2 * inset, H * dx }, spacing = dx / ppc,
    material = { model = "fluid", bulk = bulk, density = rho, visc = o.visc or 0, damping = o.damping or 10 } }
  local world, s = r:world { res = { W + 2 * WALL - 1, H + 2 * WALL + 6 }, dx = dx, dt = dt, substeps = substeps,
    gravity = { 0, -g }, walls = { all = { type = "slip", thickness = WALL } },
    integrator = o.integrator, implicit = o.implicit }
  local n = world.n
  local mass, top_row, weight = world.params.mass, {}, 0
  local top0 = -math.huge
  for p = 0, n - 1 do top0 = math.max(top0, s.x[n + p]) end
  for p = 0, n - 1 do
    if s.x[n + p] > top0 - dx / ppc / 2 then top_row[#top_row + 1] = p end
    weight = weight + mass[p] * g
  end
  local sums, mismatch, surface = {}, 0, 0
  for k = 1, steps do
    world:step(s)
    if k > steps - avg then
      local ys = 0
      for _, p in ipairs(top_row) do ys = ys + s.x[n + p] end
      ys = ys / #top_row + dx / ppc / 2
      surface = surface + ys / avg
      local sig = world:stress(s)
      for p = 0, n - 1 do
        local pJ = -bulk * (J_of(s, n, p) - 1)
        mismatch = math.max(mismatch, math.abs(pJ + (sig[p] + sig[3 * n + p]) / 2))
        local y = s.x[n + p]
        local b = math.floor((y - x0) / dx) -- the row of cells above the floor
        local a = sums[b] or { p = 0, depth = 0, count = 0 }
        sums[b] = a
        a.p, a.depth, a.count = a.p + pJ, a.depth + ys - y, a.count + 1
      end
    end
  end
  -- rows 1 .. last: above the floor's cell, below the surface by 2 cells or more
  local bins, last = {}, math.floor((surface - 2 * dx - x0) / dx) - 1
  for b = 1, last do
    local a = sums[b]
    if a then
      local depth, p = a.depth / a.count, a.p / a.count
      local expect = rho * g * depth
      bins[#bins + 1] = { row = b, depth = depth, y = surface - depth, p = p, expected = expect,
        err = (p - expect) / expect, count = a.count / avg }
    end
  end
  local max_err = 0
  for _, b in ipairs(bins) do max_err = math.max(max_err, math.abs(b.err)) end
  local sy, sp, syy, syp = 0, 0, 0, 0
  for _, b in ipairs(bins) do sy, sp, syy, syp = sy + b.y, sp + b.p, syy + b.y * b.y, syp + b.y * b.p end
  local nb = #bins
  local slope = (nb * syp - sy * sp) / (nb * syy - sy * sy)
  local p_floor = (sp - slope * sy) / nb + slope * x0
  local vmax = 0
  for p = 0, n - 1 do vmax = math.max(vmax, math.sqrt(s.v[p] ^ 2 + s.v[n + p] ^ 2)) end
  return { bins = bins, max_err = max_err, surface = surface, floor = x0, height = surface - x0, slope = slope,
    p_floor = p_floor, floor_force = p_floor * W * dx, weight = weight, stress_mismatch = mismatch, vmax = vmax,
    n = n, world = world, state = s, rho_g = rho * g, compression = rho * g * H * dx / bulk }
end

--- Martin & Moyce's dam break, n^2 = 2 (2D): a water column of width a and height 2 a against the left wall of a
--- slip-walled tank, released at t = 0. Options (all optional): cells = 16 (grid cells across a), a = 0.05715 (m),
--- g = 9.81, bulk = 4e5 (Pa: c = 20 m/s for water's density), visc = 1e-3 (Pa s), ppc = 2, T_end = 2.05,
--- dT = 0.05 (control step, in units of T), cfl = 0.5 (substep / stable limit), length = 4.5 (tank length in a),
--- fluid (the world's: "particle" or "grid"; the grid fluid's front leads the data by up to 15 % at 16 cells, each
--- particle's own J by up to 8 %: docs/results/history.md "Issue 62: a fluid meeting a solid").
--- The front: the largest x of the particles in the cell above the floor, plus half a particle spacing (so Z = 1
--- at T = 0), from the back wall (the first wall node, x = 2 dx). The residual column: the highest particle within
--- a cell of the back wall, plus half a spacing, over 2 a. Returns T[k], Z[k], H[k] (k = 0 .. steps), Z_at(T) and
--- H_at(T) (linear between control steps), the largest speed over the run (vmax) and the speed of sound c.
function M.dam_break(o)
  o = o or {}
  local a, g, N = o.a or 0.05715, o.g or 9.81, o.cells or 16
  local dx, ppc, bulk = a / N, o.ppc or 2, o.bulk or 4e5
  local x0 = (WALL - 1) * dx
  local r = cq.robot { dim = 2 }
  r:box { offset = { x0, x0 }, size = { a, 2 * a }, spacing = dx / ppc,
    material = { preset = "water", bulk = bulk, visc = o.visc or 1e-3 } }
  local scale = math.sqrt(2 * g / a) -- T = t * scale
  local dT = o.dT or 0.05
  local dt = dT / scale
  local c = math.sqrt(bulk / 1000)
  local substeps = math.ceil(dt / ((o.cfl or 0.5) * dx / c))
  local world, s = r:world { res = { math.ceil((o.length or 4.5) * N) + 2 * WALL, math.ceil(2.3 * N) + 2 * WALL },
    dx = dx, dt = dt, substeps = substeps, gravity = { 0, -g }, walls = { all = { type = "slip", thickness = WALL } },
    fluid = o.fluid }
  local n = world.n
  local function front()
    local xf = -math.huge
    for p = 0, n - 1 do
      if s.x[n + p] < x0 + dx then xf = math.max(xf, s.x[p]) end
    end
    return (xf + dx / ppc / 2 - x0) / a
  end
  local function column()
    local yt = -math.huge
    for p = 0, n - 1 do
      if s.x[p] < x0 + dx then yt = math.max(yt, s.x[n + p]) end
    end
    return (yt + dx / ppc / 2 - x0) / (2 * a)
  end
  local T, Z, Hc, vmax = { [0] = 0 }, { [0] = front() }, { [0] = column() }, 0
  local steps = math.ceil((o.T_end or 2.05) / dT - 1e-9)
  for k = 1, steps do
    world:step(s)
    T[k], Z[k], Hc[k] = k * dT, front(), column()
    for p = 0, n - 1 do vmax = math.max(vmax, math.sqrt(s.v[p] ^ 2 + s.v[n + p] ^ 2)) end
  end
  local function at(series, t)
    local k = math.min(math.floor(t / dT), steps - 1)
    local f = t / dT - k
    return series[k] * (1 - f) + series[k + 1] * f
  end
  return { T = T, Z = Z, H = Hc, Z_at = function(t) return at(Z, t) end, H_at = function(t) return at(Hc, t) end,
    steps = steps, vmax = vmax, c = c, n = n, dx = dx, substeps = substeps, world = world, state = s }
end

--- A soft beam buoyed in a closed tank of water at rest (2D; issue 11, docs/results/history.md "Issue 11: the water in
--- the groups"): the beam (8 x 75 mm, neo-Hookean, nu 0.3, density 3000) hangs from a sticky ceiling (its top 2.5 mm
--- inside the band) under a sideways gravity. At rest a fluid only buoys it, so its tip deflects (3000 - 1000) / 3000
--- as far as in air. Does a stiff fluid lock against it? Options (all optional): per_axis (the water's particles per
--- cell and axis; nil: the beam in air), K = 2.2e9 (the water's bulk modulus), E = 1e7 (the beam's Young's modulus;
--- the gravity is 9.8 E / 1e7, so a softer beam deflects as far and the water is stiffer against it), bulk (a bulk
--- term on the beam), volumetric = "particle", damping = 25 (1/s, the world's: the beam's; the water is undamped), T = 1 (s),
--- reports = 10, fluid (the world's: "particle" or "grid"), width = 8e-3 (m; the beam's lattice keeps dx / 2 along the
--- beam and the nearest spacing to it across: 8 mm at 2 per cell and axis leaves a 0.75 mm strip of no particle between
--- the beam and the water on its right, 8.75 mm meets the water seamlessly), integrator = "implicit", dt = 0.005,
--- mesh (nil: the beam is robot:box's lattice; "elements": a gmsh rectangle, one particle per triangle of 1.25 mm;
--- "lattice": the same mesh sampled by robot:gmsh{spacing = dx / 2}, the water's lattice).
--- dx 2.5 mm, slip walls. Returns { path = the tip's x deflection (m) at T / reports, 2 T / reports, ..., T; n =
--- particles; stats = world:solver_stats() at the end; warned = the warnings of its first step (cq._warn) }.
function M.buoyed_beam(o)
  o = o or {}
  local dx, res, E = 2.5e-3, { 40, 48 }, o.E or 1e7
  local bx0, by0, by1 = 45e-3, 40e-3, 115e-3
  local bx1 = bx0 + (o.width or 8e-3)
  local r = cq.robot { dim = 2 }
  local mat = { model = "neohookean", E = E, nu = 0.3, bulk = o.bulk, density = 3000 }
  local body -- the gmsh group
  if o.mesh then
    local geo = os.tmpname() .. ".geo"
    local f = assert(io.open(geo, "w"))
    f:write(string.format('SetFactory("OpenCASCADE");\nRectangle(1) = {0, 0, 0, %.17g, %.17g};\n',
      bx1 - bx0, by1 - by0))
    f:close()
    body = r:gmsh { path = geo, offset = { bx0, by0 }, mesh_size = dx / 2,
      spacing = o.mesh == "lattice" and dx / 2 or nil, name = "beam", material = mat }
    os.remove(geo)
    os.remove(geo:sub(1, -5))
  else
    r:box { offset = { bx0, by0 }, size = { bx1 - bx0, by1 - by0 }, spacing = dx / 2, name = "beam", material = mat }
  end
  local nb = #r.x
  if o.per_axis then -- the tank from the walls' first nodes to below the sticky band, less the beam
    local h, lo, hi, top = dx / o.per_axis, 2 * dx, (res[1] - 3) * dx, 112.5e-3
    r:box { offset = { lo, lo }, size = { math.floor((hi - lo) / h + 1e-9) * h, math.floor((top - lo) / h + 1e-9) * h },
      spacing = h, name = "water", material = { preset = "water", bulk = o.K or 2.2e9 },
      keep = function(x)
        if body and body.inside then return not body.inside(x) end -- (the meshed beam on the lattice: its outline)
        return x[1] < bx0 - h / 4 or x[1] > bx1 + h / 4 or x[2] < by0 - h / 4
      end }
  end
  -- sparse water is measured here on purpose: its warning is dropped
  local dt = o.dt or 0.005
  local _, w, s = require("cq.robot").warnings_of(r.world, r, { res = res, dx = dx, dt = dt,
    gravity = { 9.8 * E / 1e7, 0 }, damping = o.damping or 25, integrator = o.integrator or "implicit",
    volumetric = o.volumetric, fluid = o.fluid, fluid_rest = o.fluid_rest, implicit = o.implicit,
    walls = { all = { type = "slip", thickness = 3 }, top = { type = "sticky", thickness = 3 } } })
  local n, tip = w.n, {}
  for i = 0, nb - 1 do if s.x[n + i] < by0 + 2e-3 then tip[#tip + 1] = i end end
  local function tip_x()
    local m = 0
    for _, i in ipairs(tip) do m = m + s.x[i] end
    return m / #tip
  end
  local x0, path, reports = tip_x(), {}, o.reports or 10
  local every = math.max(1, math.floor((o.T or 1) / dt / reports + 0.5))
  local warned = require("cq._warn").warnings_of(function() w:step(s, {}) end)
  for k = 1, every * reports do
    if k > 1 then w:step(s, {}) end
    if k % every == 0 then path[#path + 1] = tip_x() - x0 end
  end
  local st = w:solver_stats()
  w:release()
  return { path = path, n = n, stats = st, warned = warned }
end

--- A tank of water at rest (issue 11): 15 x 21 cells of 2.5 mm filled from the walls' first nodes, slip walls,
--- gravity 9.8. Water at rest should stay at rest: its mean height falls by its compression (micrometres) and its
--- speeds decay with the start-up pressure wave. Options (all optional): per_axis = 2.5 (particles per cell and
--- axis), volumetric = "particle", K = 2.2e9 (bulk modulus), visc = 1e-3 (Pa s), damping = 25 (1/s, the world's:
--- a fluid is undamped unless its material asks), dt = 0.005 (the
--- substep), integrator = "implicit", T = 0.1 (s), reports = 1, fluid, implicit, threads (the world's), cells = { 15, 21 }
--- (the water's size in cells; three of them: a 3D tank), volumetric_groups. Returns { drop = the mean height's fall (m) and
--- fastest = the fastest particle's speed (m/s), each at T / reports, ..., T; n = particles; warnings = what
--- robot:world (world:commit) warned }.
function M.resting_tank(o)
  o = o or {}
  local dx, per_axis = 2.5e-3, o.per_axis or 2.5
  local cells = o.cells or { 15, 21 }
  local D = #cells
  local h, r = dx / per_axis, cq.robot { dim = D }
  local offset, size, res = {}, {}, {}
  for a = 1, D do
    offset[a] = 2 * dx
    size[a] = math.floor(cells[a] * dx / h + 1e-9) * h
    res[a] = cells[a] + 5
  end
  res[2] = math.max(40, cells[2] + 5)
  r:box { offset = offset, size = size, spacing = h, name = "water",
    material = { preset = "water", bulk = o.K or 2.2e9, visc = o.visc or 1e-3 } }
  local dt = o.dt or 0.005
  local gravity = D == 3 and { 0, -9.8, 0 } or { 0, -9.8 }
  local warnings, w, s = require("cq.robot").warnings_of(r.world, r, { res = res, dx = dx, dt = dt,
    gravity = gravity, damping = o.damping or 25, walls = { all = { type = "slip", thickness = 3 } },
    integrator = o.integrator or "implicit", volumetric = o.volumetric, fluid = o.fluid, fluid_rest = o.fluid_rest,
    implicit = o.implicit, threads = o.threads, volumetric_groups = o.volumetric_groups })
  local n = w.n
  local function mean_y()
    local m = 0
    for p = 0, n - 1 do m = m + s.x[n + p] end
    return m / n
  end
  local y0, reports, drop, fastest = mean_y(), o.reports or 1, {}, {}
  local every = math.max(1, math.floor((o.T or 0.1) / dt / reports + 0.5))
  for k = 1, every * reports do
    w:step(s, {})
    if k % every == 0 then
      local vmax = 0
      for p = 0, n - 1 do
        local v2 = 0
        for a = 0, D - 1 do v2 = v2 + s.v[a * n + p] ^ 2 end
        vmax = math.max(vmax, math.sqrt(v2))
      end
      drop[#drop + 1], fastest[#fastest + 1] = y0 - mean_y(), vmax
    end
  end
  local stats = w:solver_stats()
  w:release()
  return { drop = drop, fastest = fastest, n = n, warnings = warnings, stats = stats }
end

return M
