-- The fluid validations of issue 10 as reusable scenes: a hydrostatic water column. tests/fluid_spec.lua runs it
-- small. It returns what it measured and asserts nothing.
local cq = require "cq"

local M = {}

-- Walls: slip, 3 cells thick (the default). Wall nodes are i < 3 and i >= res - 3, so the first wall nodes sit at
-- x = 2 dx and x = (res - 3) dx. The fluid must fill the tank up to them: a fluid started at x = 3 dx (the "cell"
-- reading of thickness 3) or short of the far wall leaves a gap of about one cell that it creeps into for seconds
-- (particles in the wall layer move with a fraction of the free nodes' velocity), so the column is never at rest.
local WALL = 3

local function J_of(s, n, p) return s.F[p] * s.F[3 * n + p] - s.F[n + p] * s.F[2 * n + p] end

--- A water column at rest in a tank with slip walls (2D). Options (all optional):
---   dx = 1/64, width = 21, height = 16 (the fluid's size in cells), density = 1, g = 10, bulk = 400,
---   ppc = 2 (particles per cell and axis), dt = 1e-2, substeps = 40, time = 0.4 (s), average = 0.1 (s, the last
---   part of the run that the pressure is averaged over), damping = 10 (1/s), visc = 0, inset = 0 (cells: start the
---   fluid this far inside the first wall nodes, at the left wall and the floor, and as far short of the right wall;
---   1 reproduces the gap of issue 10's first attempt).
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
    material = { model = "fluid", bulk = bulk, density = rho, visc = o.visc or 0 } }
  local world, s = r:world { res = { W + 2 * WALL - 1, H + 2 * WALL + 6 }, dx = dx, dt = dt, substeps = substeps,
    gravity = { 0, -g }, damping = o.damping or 10, walls = { all = { type = "slip", thickness = WALL } } }
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

return M
