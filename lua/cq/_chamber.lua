-- Chamber walls of lattice bodies (robot:box{cavities = ...}, robot:ball{cavities = ...}). A cavity is a box
-- {offset, size} or a ball {center, radius}; the lattice leaves it empty, and its surface, sampled finely, hands each
-- sample's area-weighted normal to the nearest particle of the body. A particle's wall is then the sum N dA of what
-- it received, so the chamber's net force at rest is exactly the cavity's (zero for a closed cavity), whatever the
-- lattice. Normals point from the cavity into the solid: the direction the chamber pressure pushes the wall. Each
-- particle's offset is the area-weighted centroid of its samples less its position: where its pressure acts
-- (engine/stages/chamber.h wall_surface_load).
local check = require "cq._check"

local M = {}
M.SUB = 4 -- surface samples per particle spacing along the surface (cavities here, robot:gmsh{spacing} faces)
local SUB = M.SUB
-- the keys of a cavity table (a box {offset, size} or a ball {center, radius}) and of a chamber wall (robot:chamber;
-- robot:gmsh's walls also hold face_area, unmatched and unmatched_at, robot:mesh's surface mesh_area)
local CAVITY_KEYS = check.option_set("robot:box cavities", { "offset", "size", "center", "radius", "name" })
M.WALL_KEYS = check.option_set("robot:chamber wall", { "particles", "normal", "area", "offset", "face_area", "unmatched",
  "unmatched_at", "mesh_area" })

local function box_cavity(where, c, dim)
  check.vector(where, "offset", c.offset, dim)
  check.vector(where, "size", c.size, dim)
  for a = 1, dim do check.number(where, "size[" .. a .. "]", c.size[a], 0, math.huge, { open_lo = true }) end
  local lo, hi = c.offset, {}
  for a = 1, dim do hi[a] = lo[a] + c.size[a] end
  local cav = { text = "offset " .. check.list_text(c.offset) .. ", size " .. check.list_text(c.size) } -- for messages
  cav.center = {}
  for a = 1, dim do cav.center[a] = lo[a] + c.size[a] / 2 end
  function cav.inside(x)
    for a = 1, dim do if x[a] <= lo[a] or x[a] >= hi[a] then return false end end
    return true
  end
  -- each face (normal +-e_a) split into squares of side <= h / SUB, sampled at their centres
  function cav.samples(h, emit)
    for a = 1, dim do
      local others, n = {}, {}
      for b = 1, dim do
        if b ~= a then
          others[#others + 1] = b
          n[b] = math.max(1, math.ceil(c.size[b] * SUB / h))
        end
      end
      local dA = 1
      for _, b in ipairs(others) do dA = dA * c.size[b] / n[b] end
      for side = -1, 1, 2 do
        local normal = {}
        for b = 1, dim do normal[b] = b == a and side or 0 end
        local function walk(k, x)
          if k > #others then emit(x, normal, dA) return end
          local b = others[k]
          for i = 0, n[b] - 1 do
            x[b] = lo[b] + (i + 0.5) * c.size[b] / n[b]
            walk(k + 1, x)
          end
        end
        local x = {}
        x[a] = side < 0 and lo[a] or hi[a]
        walk(1, x)
      end
    end
  end
  return cav
end

local function ball_cavity(where, c, dim)
  check.vector(where, "center", c.center, dim)
  local r = check.number(where, "radius", c.radius, 0, math.huge, { open_lo = true })
  local cav = { text = "center " .. check.list_text(c.center) .. ", radius " .. string.format("%.6g", r),
    center = c.center }
  function cav.inside(x)
    local d2 = 0
    for a = 1, dim do d2 = d2 + (x[a] - c.center[a]) ^ 2 end
    return d2 < r * r
  end
  function cav.samples(h, emit)
    if dim == 2 then -- equal arcs
      local n = math.max(8, math.ceil(2 * math.pi * r * SUB / h))
      for i = 0, n - 1 do
        local t = 2 * math.pi * (i + 0.5) / n
        local normal = { math.cos(t), math.sin(t) }
        emit({ c.center[1] + r * normal[1], c.center[2] + r * normal[2] }, normal, 2 * math.pi * r / n)
      end
    else -- a Fibonacci sphere: points of equal area
      local n = math.max(32, math.ceil(4 * math.pi * r * r * (SUB / h) ^ 2))
      local golden = math.pi * (3 - math.sqrt(5))
      for i = 0, n - 1 do
        local z = 1 - (2 * i + 1) / n
        local s = math.sqrt(1 - z * z)
        local normal = { s * math.cos(golden * i), s * math.sin(golden * i), z }
        local x = {}
        for a = 1, 3 do x[a] = c.center[a] + r * normal[a] end
        emit(x, normal, 4 * math.pi * r * r / n)
      end
    end
  end
  return cav
end

--- Checks the cavities option (a list of {offset, size} boxes or {center, radius} balls, each with an optional name;
--- cavities with the same name form one chamber; default names "cavity1", "cavity2", ...). Returns the parsed list
--- (each with inside(x), samples(h, emit), name, and for messages text and center).
function M.parse(where, cavities, dim)
  if type(cavities) ~= "table" or #cavities == 0 then
    check.fail(where, "cavities must be a list of {offset = ..., size = ...} boxes or {center = ..., radius = ...} " ..
      "balls", cavities)
  end
  local list = {}
  for i, c in ipairs(cavities) do
    local w = where .. ": cavities[" .. i .. "]"
    if type(c) ~= "table" then check.fail(w, "must be a table {offset, size} or {center, radius}", c) end
    check.options(w, c, CAVITY_KEYS)
    local cav
    local box, ball = c.offset ~= nil or c.size ~= nil, c.center ~= nil or c.radius ~= nil
    if box and ball then
      local key = c.center ~= nil and "center" or "radius"
      check.fail(w, string.format("give offset and size (a box) or center and radius (a ball), not both: %s is a " ..
        "ball's key, %s a box's", key, c.offset ~= nil and "offset" or "size"), check.shown(check.list_text(c[key])))
    end
    if box then
      cav = box_cavity(w, c, dim)
    elseif ball then
      cav = ball_cavity(w, c, dim)
    else
      check.fail(w, "must give offset and size (a box) or center and radius (a ball)", "neither")
    end
    if c.name ~= nil and (type(c.name) ~= "string" or c.name == "") then
      check.fail(w, "name must be a non-empty string", c.name)
    end
    cav.name = c.name or ("cavity" .. i)
    list[i] = cav
  end
  -- one name, one chamber: an explicit name that is another cavity's default would merge them without a word
  local named = {}
  for i, c in ipairs(cavities) do if c.name ~= nil and not named[c.name] then named[c.name] = i end end
  for i, c in ipairs(cavities) do
    local j = c.name == nil and named[list[i].name]
    if j then
      check.fail(where .. ": cavities[" .. j .. "]", string.format("name %q is the default name of cavities[%d], " ..
        "which has none, so the two would form one chamber; give both that name to join them, or choose another",
        list[i].name, i), list[i].name)
    end
  end
  return list
end

-- Items at positions pos(item) binned into cells of size h (cq._bins): the returned each(x, r, f) calls f(item) for
-- the items in the cells within r cells of x's, cell by cell, each cell's in the items' order.
local function spatial_hash(items, pos, h, dim)
  local near = require("cq._bins").new(#items, dim, h, function(k, a) return pos(items[k + 1])[a] end)
  if not near then check.raise("cq._chamber: a particle position is not finite") end
  return function(x, r, f) near(x[1], x[2], x[3] or 0, r, function(k) f(items[k + 1]) end) end
end

--- The nearest of the particles (a list of 1-based indices into xs, the robot's positions) to a position x within 2 h
--- (the lowest index among equals), or nil: returns that search, nearest(x).
function M.nearest(xs, particles, h, dim)
  local near = spatial_hash(particles, function(p) return xs[p] end, h, dim)
  return function(x)
    local best, best_d2 = nil, (2 * h) ^ 2
    near(x, 2, function(p)
      local d2 = 0
      for a = 1, dim do d2 = d2 + (xs[p][a] - x[a]) ^ 2 end
      if d2 < best_d2 or (best and d2 == best_d2 and p < best) then best, best_d2 = p, d2 end
    end)
    return best
  end
end

--- Adds a surface sample (position x, unit normal from the cavity into the solid, area dA) to the sum of particle p
--- (xs[p] its position) in sums: { [p] = { N dA summed (1..dim), o = offsets' area-weighted sum, A = area } }.
function M.add_sample(sums, p, xs, x, normal, dA, dim)
  local v = sums[p] or { o = {}, A = 0 }
  for a = 1, dim do
    v[a] = (v[a] or 0) + normal[a] * dA
    v.o[a] = (v.o[a] or 0) + (x[a] - xs[p][a]) * dA -- the surface's centroid, relative to the particle
  end
  v.A = v.A + dA
  sums[p] = v
end

--- The wall { particles, normal, area, offset } of the sums M.add_sample made (particles ascending; each particle's
--- unit normal and area from its summed N dA, its offset the centroid of its samples less its position).
function M.wall_of(sums, dim)
  local wall, ps = { particles = {}, normal = {}, area = {}, offset = {} }, {}
  for p in pairs(sums) do ps[#ps + 1] = p end
  table.sort(ps)
  for _, p in ipairs(ps) do
    local v, len = sums[p], 0
    for a = 1, dim do len = len + (v[a] or 0) ^ 2 end
    len = math.sqrt(len)
    if len > 0 then
      local n, o = {}, {}
      for a = 1, dim do n[a], o[a] = v[a] / len, v.o[a] / v.A end
      wall.particles[#wall.particles + 1], wall.normal[#wall.normal + 1], wall.area[#wall.area + 1] = p, n, len
      wall.offset[#wall.offset + 1] = o
    end
  end
  return wall
end

--- The chamber walls of the group's particles around the parsed cavities: { [name] = { particles, normal, area,
--- offset } } (1-based robot particle indices; unit normals from the cavity into the solid; areas, 2D: lengths;
--- offsets from each particle to the centroid of the surface it carries). h is the
--- lattice spacing. A surface sample farther than 2 h from every particle means the cavity is not enclosed.
function M.walls(where, robot, group, cavities, h)
  local dim, xs = robot.dim, robot.x
  local nearest = M.nearest(xs, group.particles, h, dim)
  local sums, order = {}, {} -- per chamber name: particle -> summed N dA
  for i, cav in ipairs(cavities) do
    local s = sums[cav.name]
    if not s then
      s = {}
      sums[cav.name] = s
      order[#order + 1] = cav.name
    end
    cav.samples(h, function(x, normal, dA)
      for j, other in ipairs(cavities) do
        if j ~= i and other.inside(x) then -- (a wall through the other's space: no particle carries it)
          local a, b = math.min(i, j), math.max(i, j)
          local at = {}
          for k = 1, dim do at[k] = string.format("%.4g", x[k]) end
          check.fail(where, string.format("cavities[%d] (%s) and cavities[%d] (%s) overlap: the surface of " ..
            "cavities[%d] at (%s) lies inside cavities[%d]; keep them apart (%s)", a, cavities[a].name, b,
            cavities[b].name, i, table.concat(at, ", "), j, other.name == cav.name and "cavities of one name form " ..
            "one chamber, yet each is a space of its own: overlapping ones are not joined" or "the walls between " ..
            "chambers at least two particles thick"),
            check.shown(string.format("{%s} and {%s}", cavities[a].text, cavities[b].text)))
        end
      end
      local p = nearest(x)
      if not p then
        check.fail(where, string.format("cavities[%d] (%s) is not enclosed by the body: no particle within 2 " ..
          "spacings of its surface point (%s); keep walls at least one spacing thick", i, cav.name, table.concat(x, ", ")),
          check.shown(string.format("spacing %g", h)))
      end
      M.add_sample(s, p, xs, x, normal, dA, dim)
    end)
  end
  local walls = {}
  for _, name in ipairs(order) do walls[name] = M.wall_of(sums[name], dim) end
  return M.named(where, walls, "cavity")
end

-- The tables M.named made (weak keys), so that robot:chamber knows a whole group.chambers passed as its wall.
local NAMED = setmetatable({}, { __mode = "k" })

--- The sorted names of the walls in t when t is a group's chambers table (M.named), else nil.
function M.names_of(t)
  if type(t) ~= "table" or not NAMED[t] then return nil end
  local names = {}
  for k in pairs(t) do names[#names + 1] = tostring(k) end
  table.sort(names)
  return names
end

--- Makes a table of chamber walls (name -> wall) refuse a name it does not hold, listing those it does: a typo in
--- group.chambers.chamer would otherwise give robot:chamber a nil wall. what: "cavity" or "physical surface".
function M.named(where, walls, what)
  NAMED[walls] = true
  return setmetatable(walls, { __index = function(_, name)
    local names = {}
    for k in pairs(walls) do names[#names + 1] = tostring(k) end
    table.sort(names)
    check.raise(string.format("%s: no chamber wall named %s (the %s with a wall here: %s)", where,
      check.fmt(name), what == "cavity" and "cavities" or what .. "s", #names > 0 and table.concat(names, ", ") or "none"))
  end })
end

--- The longest wall offset robot:chamber takes, in particle spacings (vol^(1/dim) of the wall's largest particle). The
--- walls of robot:box and robot:ball stay below 2 by construction (a surface sample goes to the nearest particle within
--- 2 spacings, so the centroid of a particle's samples is closer); measured: up to 1.1 on a lattice of unequal spacings
--- per axis, 0.84 on robot:gmsh's 3D finger (an element's face centroid lies a quarter of its height, 2D a third, from its
--- centroid). The engine takes the pressure's shift at most 0.4 cells long (engine/stages/chamber.h), so a longer offset
--- would be cut short without a word: a wrong unit or a misassembled list.
M.OFFSET_SPACINGS = 2

--- A closed chamber wall's opening (M.opening) is round-off (a mesh's faces, a box's cavity walls: below 1e-15); one
--- above this is a hole or an open surface.
M.CLOSED_TOL = 1e-2

-- Two bodies whose particles lie closer than this many cells may share grid nodes (a quadratic B-spline stencil
-- spans three nodes per axis), so the grid moves them as one: a block at rest 1 cell from one pulled away at 0.5 m/s
-- moves at 0.08-0.10 m/s after 5 steps, at 2 cells at up to 0.023, at 2.7 only when aligned with the grid, at 3 never
-- (tests/placement_spec.lua). A chamber's cavity narrower than that glues shut.
M.GAP_CELLS = 3

--- Warns (cq._warn) when the walls of chamber actuator `id` face each other across its cavity closer than
--- M.GAP_CELLS cells (dx): particles i, j of the wall with N_i . N_j < -0.5, each within 60 degrees of the other's
--- cavity side (x_j - x_i) . N_i < -|x_j - x_i| / 2 and the same from j. xs: the robot's
--- positions (1-based tables). Returns the warning or nil.
function M.narrow(id, wall, xs, dx, dim)
  local reach, index = M.GAP_CELLS * dx, {}
  for i = 1, #wall.particles do index[i] = i end
  local near = spatial_hash(index, function(i) return xs[wall.particles[i]] end, reach, dim)
  local best, bi, bj = reach
  for i, p in ipairs(wall.particles) do
    local x, N = xs[p], wall.normal[i]
    near(x, 1, function(j)
      local y, M2 = xs[wall.particles[j]], wall.normal[j]
      local dot, along, back, d2 = 0, 0, 0, 0
      for a = 1, dim do
        dot = dot + N[a] * M2[a]
        along = along + (y[a] - x[a]) * N[a]
        back = back + (x[a] - y[a]) * M2[a]
        d2 = d2 + (y[a] - x[a]) ^ 2
      end
      local d = math.sqrt(d2)
      -- each within 60 degrees of the other's cavity side: a pair merely side by side (a corner's normal at 90
      -- degrees to the line between them, across the solid between two chambers) does not face across a cavity
      if dot < -0.5 and along < -0.5 * d and back < -0.5 * d and d < best then best, bi, bj = d, p, wall.particles[j] end
    end)
  end
  if not bi then return nil end
  local at = {}
  for a = 1, dim do at[a] = string.format("%.4g", (xs[bi][a] + xs[bj][a]) / 2) end
  local msg = string.format("cqlua: warning: robot:world: the walls of chamber actuator %d face each other across " ..
    "its cavity %.2g cells apart at (%s) (particles %d and %d): particles closer than %d cells share grid nodes, so " ..
    "the cavity glues shut under load; refine dx or widen the cavity (its walls' particles at least %d cells apart)",
    id, best / dx, table.concat(at, ", "), bi, bj, M.GAP_CELLS, M.GAP_CELLS)
  require("cq._warn").warn(msg)
  return msg
end

-- A wall bends right only with cells across its thickness: a cantilever 1 / 2 / 3 / 4 / 6 cells thick (2 particles per
-- cell and axis) sags 2.53 / 1.39 / 1.12 / 1.08 / 1.04 times as far as converged (8 cells at 4 particles per cell and
-- axis; docs/experiments/wall_cells.lua, docs/modelling.md): a thin chamber wall bends too far.
M.WALL_CELLS = 3
-- Sampled more coarsely than M.COARSE_PER_AXIS particles per cell and axis, a wall needs M.COARSE_WALL_CELLS cells
-- across it to bend within 5 % once it turns against the grid: at 2 particles per cell and axis a cantilever 3 / 4 / 6
-- / 8 cells thick at 30-45 degrees to the grid sags 1.13-1.15 / 1.09-1.10 / 1.05 / 1.03-1.04 times as far as 16
-- cells at the same angle, at 4 particles 1.08-1.10 / 1.05-1.07 / 1.02-1.04 (docs/experiments/wall_angle.lua); the 2D
-- finger at dx 0.625 mm (roofs 3.2 cells) is +8 / +18 % from its finite-element reference at 5 / 8 kPa at 2 and +3 /
-- +4 % at 4, and comes apart at its chambers' corners at 10 kPa at 2, at about 14 kPa at 4 (docs/pneumatic.md).
M.COARSE_PER_AXIS = 3
M.COARSE_WALL_CELLS = 8
-- The share of a chamber wall's area thinner than the limit above which it is warned of (a corner's or an edge's few
-- slanted rays are not a thin wall).
M.THIN_SHARE = 0.1

--- How to sample 4 particles per cell and axis at cell dx (m), for a message: robot:gmsh's mesh_size is in the
--- drawing's units, before its scale.
function M.sampling_hint(dx)
  return string.format("robot:gmsh mesh_size = 0.4 dx = %.3g m, in the drawing's units before robot:gmsh's scale: " ..
    "%.3g for a drawing in mm with scale = 1e-3, or on a lattice robot:gmsh spacing = dx / 4 = %.3g m (water beside it " ..
    "on the same lattice); robot:box spacing = dx / 4", 0.4 * dx, 0.4 * dx * 1e3, dx / 4)
end

--- Warns (cq._warn) when more than M.THIN_SHARE of chamber actuator `id`'s wall area has solid thinner than
--- M.WALL_CELLS cells (dx) behind it, or, where the wall's particles are sampled more coarsely than M.COARSE_PER_AXIS
--- per cell and axis (dx over their median vol^(1/dim)), thinner than M.COARSE_WALL_CELLS. From each wall particle a
--- ray along its normal (from the cavity into the solid) runs in steps of half its spacing (vol^(1/dim)) until no solid
--- particle lies within one spacing of it (a lattice's farthest point from a particle is 0.71 spacings away, a gmsh
--- mesh's triangle centres' up to about 0.9); the wall's thickness there is that distance (k particles across a
--- lattice: k spacings). xs, vol: the robot's positions and volumes (1-based); solid: the indices of its particles that
--- are not fluid; fluid: whether the robot has fluid particles (a wall under 3 cells in water is also pushed by the
--- water it displaces: docs/results/history.md, "a resolved actuator in water"). Returns the warning or nil.
function M.thin(id, wall, xs, vol, solid, dx, dim, fluid)
  if #wall.particles == 0 then return nil end
  local h, spacings = 0, {}
  for i, p in ipairs(wall.particles) do
    spacings[i] = vol[p] ^ (1 / dim)
    h = math.max(h, spacings[i])
  end
  table.sort(spacings)
  local per_axis = dx / spacings[math.floor((#spacings + 1) / 2)]
  local coarse = per_axis < M.COARSE_PER_AXIS * (1 - 1e-6)
  local cells = coarse and M.COARSE_WALL_CELLS or M.WALL_CELLS
  local near = spatial_hash(solid, function(p) return xs[p] end, h, dim)
  local limit, area, thin_area, very_thin_area = cells * dx, 0, 0, 0
  local thinnest, at = math.huge, nil
  local y = {}
  for i, p in ipairs(wall.particles) do
    local x, N, sp = xs[p], wall.normal[i], vol[p] ^ (1 / dim)
    local r2, t, thickness = sp * sp, 0, nil
    while true do
      t = t + sp / 2
      for a = 1, dim do y[a] = x[a] + t * N[a] end
      local found = false
      near(y, 1, function(q)
        if found then return end
        local d2 = 0
        for a = 1, dim do d2 = d2 + (xs[q][a] - y[a]) ^ 2 end
        if d2 < r2 then found = true end
      end)
      if not found then thickness = t break end
      if t >= limit then break end
    end
    area = area + wall.area[i]
    if thickness and thickness < limit * (1 - 1e-6) then -- (a wall exactly `cells` thick is not thin)
      thin_area = thin_area + wall.area[i]
      if thickness < M.WALL_CELLS * dx * (1 - 1e-6) then very_thin_area = very_thin_area + wall.area[i] end
      if thickness < thinnest then thinnest, at = thickness, p end
    end
  end
  if not (thin_area > M.THIN_SHARE * area) then return nil end
  local where = {}
  for a = 1, dim do where[a] = string.format("%.4g", xs[at][a]) end
  local msg
  if very_thin_area > M.THIN_SHARE * area then
    msg = string.format("cqlua: warning: robot:world: %.0f %% of chamber actuator %d's wall is thinner than %d " ..
      "cells (dx = %.4g; the thinnest %.2g cells, behind particle %d at (%s)): the grid does not resolve a wall with " ..
      "fewer cells across it (a cantilever 1 / 2 / 3 cells thick sags 2.1 / 1.2 / 1.06 times as far as converged, " ..
      "at 2 particles per cell and axis, and at 30-45 degrees to the grid 3 / 4 / 6 cells sag 1.13-1.15 / 1.09-1.10 " ..
      "/ 1.05; a chamber section whose walls are under one cell can instead be far too stiff: " ..
      "the 2D finger at 0.8 cells is 23 %% short of a finite-element reference; docs/modelling.md, " ..
      "docs/pneumatic.md)%s; refine dx (walls at least %d cells thick; for 5 %% 4 along a grid axis, 6-8 at an angle " ..
      "to it)%s",
      100 * very_thin_area / area, id, M.WALL_CELLS, dx, thinnest / dx, at, table.concat(where, ", "),
      fluid and ". In water such a wall is pushed by the water it displaces: a block whose chamber walls are 1.5 " ..
        "cells thick bent 0.7 mm the wrong way where in air it bends 0.5 mm, and seed 003's 3D finger at 1.2-1.6 " ..
        "cells bends 30 % as far as in air, while the same block with walls of 3 cells bends in the same water " ..
        "(docs/results/history.md, \"a resolved actuator in water\")" or "", M.WALL_CELLS,
      coarse and string.format(" or sample 4 particles per cell and axis (%s)", M.sampling_hint(dx)) or
      string.format(" (it is sampled at %.2g particles per cell and axis already: finer sampling alone does not " ..
        "make up for the cells)", per_axis))
  else
    msg = string.format("cqlua: warning: robot:world: chamber actuator %d's wall is sampled at %.2g particles per " ..
      "cell and axis and %.0f %% of it is thinner than %d cells (dx = %.4g; the thinnest %.2g cells, behind particle " ..
      "%d at (%s)): sampled under %d per cell and axis, a wall bends too far once it turns against the grid (at 2 " ..
      "particles per cell and axis and 30-45 degrees to the grid a cantilever 3 / 4 / 6 / 8 cells thick sags " ..
      "1.13-1.15 / 1.09-1.10 / 1.05 / 1.03-1.04 times as far as converged) and chambers' re-entrant corners come " ..
      "apart under high pressure (the 2D finger at dx 0.625 mm: +8 / +18 %% from a finite-element reference at 5 / " ..
      "8 kPa, apart at 10 kPa; at 4 particles per cell and axis +3 / +4 %%, apart at about 14 kPa: " ..
      "docs/pneumatic.md); sample 4 particles per cell and axis (%s) or refine dx (walls at least %d cells thick)",
      id, per_axis, 100 * thin_area / area, cells, dx, thinnest / dx, at, table.concat(where, ", "),
      M.COARSE_PER_AXIS, M.sampling_hint(dx), cells)
  end
  require("cq._warn").warn(msg)
  return msg
end

--- How far a chamber wall is from closed: |sum_i N_i dA_i| / sum_i dA_i (0 for a closed surface: the divergence
--- theorem; 1 for a flat open one).
function M.opening(wall, dim)
  local s, area = { 0, 0, 0 }, 0
  for i = 1, #wall.particles do
    for a = 1, dim do s[a] = s[a] + wall.normal[i][a] * wall.area[i] end
    area = area + wall.area[i]
  end
  return math.sqrt(s[1] ^ 2 + s[2] ^ 2 + s[3] ^ 2) / (area > 0 and area or 1)
end

return M
