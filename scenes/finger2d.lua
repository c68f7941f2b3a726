-- Seed 003's finger in 2D, as a reusable scene: the longitudinal section of scenes/finger.lua's finger
-- (scenes/finger2d.geo meshed by gmsh, one particle per triangle, DragonSkin-30), lying along +x with its base clamped
-- by a sticky left wall, its chambers driven by one actuator (u = 1 is 20 kPa), in a tank whose slip walls lie `gap`
-- below it, beyond its tip and above it plus 10 mm; in air, or in water filling the tank to `gap` above it (then a
-- free surface, 10 mm of air and the grid's top wall). docs/experiments/water_gap2d.lua and examples/finger_inverse.lua (dim 2) use it. Asserts nothing.
local cq = require "cq"

local M = {}
M.P_MAX = 20e3 -- Pa at u = 1
M.DX = 2.5e-3  -- m: the cell, as the 3D finger's
M.LENGTH, M.HEIGHT = 0.100, 0.016 -- m: the section's outer box (finger2d.geo)
M.WATER = { bulk = 2.2e9, visc = 1e-3, density = 1000, per_axis = 2.5 }
M.X0 = 0.01 -- m: the base's x (inside the sticky left wall's 15 mm)

local function merged(defaults, given, what)
  local o = {}
  for k, v in pairs(defaults) do o[k] = v end
  for k, v in pairs(given == true and {} or given) do
    if defaults[k] == nil then
      local names = {}
      for name in pairs(defaults) do names[#names + 1] = name end
      table.sort(names)
      error(string.format("finger2d.build: %s.%s is not an option (%s)", what, tostring(k), table.concat(names, ", ")),
        3)
    end
    o[k] = v
  end
  return o
end

--- A world, its state and the finger's particle count (they come first, then the water's). opts (all optional): dx
--- (m, M.DX), mesh (the finger's mesh size, m; 0.6 dx), bulk (the silicone's bulk modulus, Pa, 1.75e9), gap (m, 5e-3),
--- water (nil: in air; true or a table over M.WATER: bulk (Pa), visc (Pa s), density (kg/m^3), per_axis (particles
--- per cell and axis)),
--- fluid ("particle" or "grid", the world's), volumetric ("averaged"), volumetric_groups and volumetric_own (the
--- world's), integrator ("implicit"), dt (s, 5e-3),
--- control_dt (s: a control step of ceil(control_dt / dt) substeps; default one substep), gravity (m/s^2, 0),
--- damping (1/s, 25), implicit (solver options), threads, spacing (m: the finger's particles on the world's lattice of
--- this spacing, robot:gmsh's option, instead of one per triangle; in water the water takes the same lattice, less the
--- finger's outer box, so the two meet without a seam: docs/modelling.md "a fluid meeting a solid").
function M.build(opts)
  opts = opts or {}
  local water = opts.water and merged(M.WATER, opts.water, "water") or nil
  local dx = opts.dx or M.DX
  local gap = opts.gap or 5e-3
  local y0 = 2 * dx + gap -- the finger's bottom
  local res = { math.ceil((M.X0 + M.LENGTH + gap) / dx) + 3, math.ceil((y0 + M.HEIGHT + gap + 0.01) / dx) + 3 }
  local r = cq.robot { dim = 2 }
  local g = r:gmsh { path = "scenes/finger2d.geo", offset = { M.X0, y0 }, scale = 1e-3,
    mesh_size = (opts.mesh or 0.6 * dx) * 1e3, spacing = opts.spacing, material = { preset = "dragonskin30", bulk = opts.bulk or 1.75e9 } }
  r:chamber { wall = g.chambers.chamber, max = M.P_MAX }
  local n_finger = #r.x
  if water then
    local h = opts.spacing or dx / water.per_axis
    local tol = opts.spacing and h / 4 or h / 2 -- (a lattice point at the finger's box's face, h / 2 from it, is water)
    local x1 = (res[1] - 3) * dx
    r:box { offset = { 2 * dx, 2 * dx },
      size = { math.floor((x1 - 2 * dx) / h) * h, math.floor((y0 + M.HEIGHT + gap - 2 * dx) / h) * h },
      spacing = h, name = "water", material = { preset = "water", bulk = water.bulk, visc = water.visc,
        density = water.density },
      keep = function(x)
        return not (x[1] < M.X0 + M.LENGTH + tol and x[2] > y0 - tol and x[2] < y0 + M.HEIGHT + tol)
      end }
  end
  local dt, substeps = opts.dt or 5e-3, 1
  if opts.control_dt then
    substeps = math.ceil(opts.control_dt / dt - 1e-9)
    dt = opts.control_dt
  end
  local world, s = r:world { res = res, dx = dx, dt = dt, substeps = substeps, gravity = { 0, -(opts.gravity or 0) },
    damping = opts.damping or 25,
    walls = { all = { type = "slip", thickness = 3 }, left = { type = "sticky", thickness = math.floor(0.015 / dx + 0.5) } },
    integrator = opts.integrator or "implicit", volumetric = opts.volumetric or "averaged", fluid = opts.fluid,
    implicit = opts.implicit, threads = opts.threads, volumetric_groups = opts.volumetric_groups,
    volumetric_own = opts.volumetric_own }
  return world, s, n_finger
end

--- The fingertip: the finger's particles (1-based, as state:mean takes them) within 3 mm of its largest x.
function M.tip(s, n_finger)
  local maxx, tip = -math.huge, {}
  for p = 0, n_finger - 1 do maxx = math.max(maxx, s.x[p]) end
  for p = 0, n_finger - 1 do if s.x[p] > maxx - 3e-3 then tip[#tip + 1] = p + 1 end end
  return tip
end

return M
