-- Robots built from particle groups (boxes, balls, PNG images, OBJ / STL meshes, and sub-groups selected by
-- position), with per-group materials and actuators. robot:world{...} creates the cq.world and the initial state.
local cq = require "cq"
local check = require "cq._check"
local image = require "cq._palette"
local meshes = require "cq._mesh"
local chambers = require "cq._chamber"
require "cq.world" -- declares cq.world's option set

local M = {}
local OPTIONS = check.option_set("cq.robot", { "dim" })
local BOX_OPTIONS = check.option_set("robot:box", { "offset", "size", "spacing", "count", "material", "velocity", "name",
  "cavities", "keep" })
local BALL_OPTIONS = check.option_set("robot:ball", { "center", "radius", "spacing", "material", "velocity", "name",
  "cavities" })
local CHAMBER_OPTIONS = check.option_set("robot:chamber", { "wall", "max", "closed", "surface" })
local PRESSURE_OPTIONS = check.option_set("robot:pressure_actuator", { "groups", "axis", "max" })
local CABLE_OPTIONS = check.option_set("robot:cable_actuator", { "particles", "k", "rest" })
local IMAGE_OPTIONS = check.option_set("robot:image", { "path", "image", "scale", "spacing", "offset", "palette",
  "actuators", "axis", "max", "material", "velocity", "name" })
local MESH_OPTIONS = check.option_set("robot:mesh", { "path", "format", "scale", "up", "offset", "spacing", "material",
  "velocity", "name" })
local SELECT_OPTIONS = check.option_set("robot:select", { "group", "where", "name" })
local SPLIT_OPTIONS = check.option_set("robot:split", { "group", "by" })
M.MAX_PARTICLES = 20000000 -- the builder's Lua tables cost about 200 bytes a particle
M.MAX_TRIANGLES = 5000000  -- mesh files larger than this are refused before they are filled
M.MAX_LATTICE = 50000000   -- lattice points over a mesh's bounding box (a byte and an int each while filling)
M.PALETTE = image.PALETTE  -- robot:image's default palette: actuator k = PALETTE[k] (red, green, blue, yellow, ...)
local Robot = {}
Robot.__index = Robot

--- cq.robot{ dim = 2 | 3 }
function M.new(opts)
  opts = opts or {}
  check.options("cq.robot", opts, OPTIONS)
  local dim = check.integer("cq.robot", "dim", opts.dim or 2, 2, 3)
  return setmetatable({ dim = dim, x = {}, v = {}, vol = {}, mat = {}, groups = {}, actuators = {}, act_of = {},
    wall_of = {} }, Robot)
end

-- Fills defaults and checks a material table (lua/cq/materials.lua: models, parameters, presets).
local function material(where, m, dim) return require("cq.materials").resolve(where, m, dim) end

-- A group's name: nil or a string (messages and warnings print it).
local function check_name(where, name)
  if name ~= nil and type(name) ~= "string" then check.fail(where, "name must be a string (the group's name)", name) end
end

--- Adds a box of particles on a regular lattice: offset (lower corner), size, spacing (default 1/128) or
--- count = particles per axis; material; velocity; cavities (left empty, see Robot:_lattice); keep (a function of a
--- lattice point's position: false leaves the point out). Returns the group {first, last, particles = {...}} (with
--- .chambers when it has cavities).
function Robot:box(opts)
  local where = "robot:box"
  check.options(where, opts, BOX_OPTIONS)
  check_name(where, opts.name)
  local dim = self.dim
  check.vector(where, "offset", opts.offset, dim)
  check.vector(where, "size", opts.size, dim)
  local count = {}
  if opts.count ~= nil then check.vector(where, "count", opts.count, dim) end
  if opts.count ~= nil and opts.spacing ~= nil then -- count wins: the spacing would be dropped without a word
    check.fail(where, "give spacing or count, not both", check.shown("spacing = " .. tostring(opts.spacing) ..
      " and count = " .. check.list_text(opts.count)))
  end
  for a = 1, dim do
    check.number(where, "size[" .. a .. "]", opts.size[a], 0, math.huge, { open_lo = true })
    if opts.count then
      count[a] = check.integer(where, "count[" .. a .. "]", opts.count[a], 1)
    else
      local h = check.number(where, "spacing", opts.spacing or 1 / 128, 0, math.huge, { open_lo = true })
      count[a] = math.max(1, math.floor(opts.size[a] / h + 0.5))
    end
  end
  if opts.keep ~= nil and type(opts.keep) ~= "function" then
    check.fail(where, "keep must be a function of a point's position returning true to keep it", opts.keep)
  end
  return self:_lattice(where, opts, opts.offset, opts.size, count, opts.keep)
end

-- Places particles at the cell centres of a count[1] x ... lattice over the box offset + [0, size], keeping those
-- for which inside(x) holds (all when nil) and that lie in none of opts.cavities; each gets the cell's volume.
-- Returns the new group; with cavities, group.chambers[name] = the chamber wall around them (lua/cq/_chamber.lua:
-- { particles, normal, area }, for robot:chamber).
function Robot:_lattice(where, opts, offset, size, count, inside)
  local dim = self.dim
  local cavities, held -- held[k]: the lattice points inside cavity k (in the body or not)
  if opts.cavities ~= nil then
    cavities, held = chambers.parse(where, opts.cavities, dim), {}
    for k = 1, #cavities do held[k] = 0 end
    local shape = inside
    inside = function(x)
      local empty = false
      for k, cav in ipairs(cavities) do
        if cav.inside(x) then held[k], empty = held[k] + 1, true end
      end
      return not empty and (not shape or shape(x))
    end
  end
  local total = 1
  for a = 1, dim do total = total * count[a] end
  if #self.x + total > M.MAX_PARTICLES then
    check.fail(where, string.format("the lattice would hold %.3g points, so the robot more than %d particles (the " ..
      "builder keeps them in Lua tables); use a larger spacing or smaller counts", total, M.MAX_PARTICLES),
      check.shown(opts.count and "count = " .. check.list_text(opts.count) or ("spacing = " .. tostring(opts.spacing))))
  end
  local mat = material(where, opts.material, self.dim)
  local vel = opts.velocity or {}
  if opts.velocity then check.vector(where, "velocity", opts.velocity, dim) end
  local cell = 1
  for a = 1, dim do cell = cell * size[a] / count[a] end
  -- the points (and the chamber walls) are found before any is added: a refused group (or a keep function that
  -- raises) leaves the robot as it was
  local base = #self.x
  local g = { first = base + 1, particles = {}, name = opts.name, material = mat }
  local xs, idx = {}, {}
  local function place(a)
    if a > dim then
      local x = {}
      for b = 1, dim do x[b] = offset[b] + (idx[b] + 0.5) * size[b] / count[b] end
      if inside and not inside(x) then return end
      xs[#xs + 1] = x
      g.particles[#g.particles + 1] = base + #xs
      return
    end
    for i = 0, count[a] - 1 do idx[a] = i; place(a + 1) end
  end
  place(1)
  if #xs == 0 then
    local h = math.huge
    for a = 1, dim do h = math.min(h, size[a] / count[a]) end
    check.fail(where, "the shape holds no particle at this spacing" .. (opts.keep and " (keep kept no lattice point)" or
      opts.cavities and " (its cavities fill it)" or ""), check.shown(string.format("spacing %g", h)))
  end
  g.last = base + #xs
  if cavities then
    local h = math.huge -- the lattice spacing (the smallest, should count give unequal ones)
    for a = 1, dim do h = math.min(h, size[a] / count[a]) end
    for k, cav in ipairs(cavities) do -- a cavity between lattice points leaves no hole: its wall would be a few
      -- particles whose samples' normals cancel (a cavity outside the lattice is left to walls' "not enclosed")
      local within = true
      for a = 1, dim do within = within and cav.center[a] > offset[a] and cav.center[a] < offset[a] + size[a] end
      if held[k] == 0 and within then
        check.fail(where, string.format("cavities[%d] (%s) holds no lattice point, so it leaves no hole in the body: " ..
          "make it wider than the particle spacing %g (a ball's diameter up to %.2g spacings can fall between points), " ..
          "or the spacing finer", k, cav.name, h, math.sqrt(dim)),
          check.shown(string.format("%s at spacing %g", cav.text, h)))
      end
    end
    local placed = { dim = dim, x = setmetatable({}, { __index = function(_, p) return xs[p - base] end }) }
    g.chambers = chambers.walls(where, placed, g, cavities, h)
  end
  for i, x in ipairs(xs) do
    local p = base + i
    self.x[p], self.v[p], self.vol[p], self.mat[p] = x, vel, cell, mat
  end
  self.groups[#self.groups + 1] = g
  return g
end

-- Appends particles at the positions xs (a list of dim-tables, kept) with rest volume vol each as a new group,
-- registered so that blow-up messages name it.
function Robot:_add_group(xs, vol, mat, vel, name)
  local g = { first = #self.x + 1, particles = {}, name = name, material = mat }
  for _, x in ipairs(xs) do
    local p = #self.x + 1
    self.x[p], self.v[p], self.vol[p], self.mat[p] = x, vel, vol, mat
    g.particles[#g.particles + 1] = p
  end
  g.last = #self.x
  self.groups[#self.groups + 1] = g
  return g
end

-- Refuses count more particles when the robot would exceed MAX_PARTICLES, naming the option that sets the count.
function Robot:_room(where, count, option)
  if #self.x + count > M.MAX_PARTICLES then
    check.fail(where, string.format("this would give the robot %.4g particles, more than %d (the builder keeps them in " ..
      "Lua tables); use a larger spacing", #self.x + count, M.MAX_PARTICLES), check.shown(option))
  end
end

-- Axis and max of pressure actuators, checked as robot:pressure_actuator checks them.
local function actuator_axis(where, opts, dim)
  local axis = opts.axis or 2
  if axis ~= "isotropic" then check.integer(where, "axis", axis, 1, dim) end
  return axis, check.number(where, "max", opts.max or 1, 0, math.huge, { open_lo = true })
end

--- Adds the pixels of a PNG image (2D robots): scale = pixel size, spacing (default: one particle per pixel), offset
--- = the lower-left corner. Pixels are classified by the palette (transparent or white: empty; grey or black: the
--- body; coloured: actuator k of the palette colour of nearest hue); each actuator colour becomes a pressure actuator
--- unless actuators = false. Returns a group of all the image's particles with .body, .actuated[k] (groups) and
--- .actuators[k] (actuator indices).
function Robot:image(opts)
  local where = "robot:image"
  check.options(where, opts, IMAGE_OPTIONS)
  check_name(where, opts.name)
  if self.dim ~= 2 then check.fail(where, "needs a 2D robot (cq.robot{dim = 2}); use robot:mesh in 3D", self.dim) end
  local scale = check.number(where, "scale (the size of a pixel)", opts.scale, 0, math.huge, { open_lo = true })
  local h = check.number(where, "spacing", opts.spacing or scale, 0, math.huge, { open_lo = true })
  check.vector(where, "offset", opts.offset, 2)
  local hues = image.hues(where, opts.palette or image.PALETTE)
  if opts.actuators ~= nil and type(opts.actuators) ~= "boolean" then
    check.fail(where, "actuators must be true (a pressure actuator per palette colour) or false (groups only)", opts.actuators)
  end
  local axis, max = actuator_axis(where, opts, 2)
  local mat = material(where, opts.material, self.dim)
  if opts.velocity then check.vector(where, "velocity", opts.velocity, 2) end
  local pic = image.load(where, opts.path, opts.image)
  local label = opts.path or "image"
  local W, H = pic.w * scale, pic.h * scale
  local nx, ny = math.max(1, math.floor(W / h + 0.5)), math.max(1, math.floor(H / h + 0.5))
  self:_room(where, nx * ny, "spacing = " .. tostring(h))
  local cx, cy = W / nx, H / ny
  local classes = image.classify_lattice(where, label, pic, hues, scale, nx, ny, cx, cy)
  if next(classes) == nil then
    check.raise(string.format("%s: %s: no robot pixels at spacing %g: every pixel is empty (white, light grey or " ..
      "transparent); draw the body in black or grey and actuators in palette colours", where, label, h))
  end
  local function positions(list)
    local xs = {}
    for i, c in ipairs(list) do xs[i] = { opts.offset[1] + (c[1] + 0.5) * cx, opts.offset[2] + (c[2] + 0.5) * cy } end
    return xs
  end
  local name = opts.name or (opts.path and opts.path:match("([^/]+)$")) or "image"
  local vel = opts.velocity or {}
  local all = { first = #self.x + 1, particles = {}, name = name, material = mat, actuated = {}, actuators = {},
    pixels = { pic.w, pic.h }, spacing = { cx, cy } }
  if classes[image.BODY] then all.body = self:_add_group(positions(classes[image.BODY]), cx * cy, mat, vel, name .. " body") end
  for k = 1, #hues do
    if classes[k] then
      local colour = opts.palette and ("palette colour " .. k) or image.PALETTE_NAMES[k]
      all.actuated[k] = self:_add_group(positions(classes[k]), cx * cy, mat, vel, name .. " " .. colour)
    end
  end
  all.last = #self.x
  for p = all.first, all.last do all.particles[#all.particles + 1] = p end
  if opts.actuators ~= false then
    for k = 1, #hues do
      if all.actuated[k] then all.actuators[k] = self:pressure_actuator { groups = { all.actuated[k] }, axis = axis, max = max } end
    end
  end
  return all
end

--- Fills a closed OBJ / STL mesh with particles (3D robots): x -> offset + scale R (x_file) - (lower corner), R the
--- identity (up = "y") or the rotation taking the file's z axis up (up = "z"); particles on a lattice of the given
--- spacing, rest volume spacing^3. Returns the group, with .surface = { particles, normal, area } (the particles
--- nearest the surface, each with its share of the mesh area and the area-weighted outward normal) and .mesh.
function Robot:mesh(opts)
  local where = "robot:mesh"
  check.options(where, opts, MESH_OPTIONS)
  check_name(where, opts.name)
  if self.dim ~= 3 then check.fail(where, "needs a 3D robot (cq.robot{dim = 3}); use robot:image in 2D", self.dim) end
  if type(opts.path) ~= "string" or opts.path == "" then check.fail(where, "path must be an OBJ or STL file name", opts.path) end
  local format = meshes.format(where, opts.path, opts.format)
  local s = check.number(where, "scale", opts.scale or 1, 0, math.huge, { open_lo = true })
  local up = check.oneof(where, "up", opts.up or "y", { "y", "z" })
  check.vector(where, "offset", opts.offset, 3)
  local h = check.number(where, "spacing", opts.spacing or 1 / 128, 0, math.huge, { open_lo = true })
  local mat = material(where, opts.material, self.dim)
  if opts.velocity then check.vector(where, "velocity", opts.velocity, 3) end
  local linear = up == "y" and { s, 0, 0, 0, s, 0, 0, 0, s } or { s, 0, 0, 0, 0, s, 0, -s, 0 } -- z up: (x, y, z) -> (x, z, -y)
  local m = meshes.read(where, opts.path, format, M.MAX_TRIANGLES)
  local f = meshes.fill(where, opts.path, m, linear, opts.offset, h, math.min(M.MAX_LATTICE, 2 ^ 31 - 1))
  self:_room(where, f.n, "spacing = " .. tostring(h))
  local xs = {}
  for i = 0, f.n - 1 do xs[i + 1] = { f.x[3 * i], f.x[3 * i + 1], f.x[3 * i + 2] } end
  local g = self:_add_group(xs, h * h * h, mat, opts.velocity or {}, opts.name or opts.path:match("([^/]+)$"))
  local surface = { particles = {}, normal = {}, area = {}, mesh_area = f.mesh_area }
  for i = 0, f.n_surface - 1 do
    surface.particles[i + 1] = g.first + f.surface[i]
    surface.normal[i + 1] = { f.normal[3 * i], f.normal[3 * i + 1], f.normal[3 * i + 2] }
    surface.area[i + 1] = f.area[i]
  end
  g.surface = surface
  g.lattice = { f.count[0], f.count[1], f.count[2] }
  g.mesh = { path = opts.path, format = format, vertices = m.n_vertices, triangles = m.n_triangles, area = f.mesh_area,
    volume = f.mesh_volume, flipped = m.flipped == 1 }
  return g
end

local gmsh = require "cq._msh" -- loaded with robot.lua: it declares robot:gmsh's option set
--- Particles from a Gmsh mesh (.geo meshed by gmsh, or .msh): one per tetrahedron (2D: triangle) at its centroid with
--- its volume, or (spacing) one per point of the world's lattice inside the mesh; sub-groups per physical volume and
--- chamber walls per physical surface (lua/cq/_msh.lua, docs/api.md).
function Robot:gmsh(opts)
  if type(opts) == "table" then check_name("robot:gmsh", opts.name) end
  return gmsh.build(self, "robot:gmsh", opts, material)
end

-- A sub-group of g: the particles (in g's order) for which keep(p) holds, with the matching part of g.surface.
local function sub_group(g, keep, name)
  local sub = { particles = {}, name = name, material = g.material, parent = g }
  for _, p in ipairs(g.particles) do
    if keep(p) then sub.particles[#sub.particles + 1] = p end
  end
  if #sub.particles == 0 then return nil end
  sub.first, sub.last = sub.particles[1], sub.particles[1]
  for _, p in ipairs(sub.particles) do
    if p < sub.first then sub.first = p end
    if p > sub.last then sub.last = p end
  end
  if g.surface then
    local s = { particles = {}, normal = {}, area = {} }
    for i, p in ipairs(g.surface.particles) do
      if keep(p) then
        s.particles[#s.particles + 1] = p
        s.normal[#s.normal + 1] = g.surface.normal[i]
        s.area[#s.area + 1] = g.surface.area[i]
      end
    end
    sub.surface = s
  end
  return sub
end

local function check_group(where, g)
  if type(g) ~= "table" or type(g.particles) ~= "table" then
    check.fail(where, "group must be a group from robot:box, ball, image, mesh, select or split", g)
  end
end

--- The particles of group for which where(x, p) is true (x: a copy of the particle's rest position, p: its index), as a
--- group usable by robot:pressure_actuator (first / last are the lowest and highest index; the list is in particles).
function Robot:select(opts)
  local w = "robot:select"
  check.options(w, opts, SELECT_OPTIONS)
  check_name(w, opts.name)
  check_group(w, opts.group)
  if type(opts.where) ~= "function" then check.fail(w, "where must be a function(x, p) -> true to keep the particle", opts.where) end
  local keep = {}
  for _, p in ipairs(opts.group.particles) do
    local x = {}
    for a = 1, self.dim do x[a] = self.x[p][a] end
    keep[p] = opts.where(x, p) and true or false
  end
  local sub = sub_group(opts.group, function(p) return keep[p] end, opts.name)
  if not sub then
    check.fail(w, "where keeps no particle of the group", check.shown(string.format("false for all %d particles of %s",
      #opts.group.particles, opts.group.name and ("group '" .. tostring(opts.group.name) .. "'") or "the group")))
  end
  return sub
end

--- Splits group by a key: by(x, p) -> any value (nil: the particle goes nowhere). Returns { [key] = group }.
function Robot:split(opts)
  local w = "robot:split"
  check.options(w, opts, SPLIT_OPTIONS)
  check_group(w, opts.group)
  if type(opts.by) ~= "function" then check.fail(w, "by must be a function(x, p) -> key (nil: no group)", opts.by) end
  local key_of, keys = {}, {}
  for _, p in ipairs(opts.group.particles) do
    local x = {}
    for a = 1, self.dim do x[a] = self.x[p][a] end
    local k = opts.by(x, p)
    if k ~= nil and k ~= k then check.fail(w, "by must not return NaN (a key)", check.shown("nan for particle " .. p)) end
    local kind = type(k)
    if k ~= nil and kind ~= "number" and kind ~= "string" and kind ~= "boolean" then -- a new table per call would be a
      -- group per particle
      check.fail(w, "by must return a number, string or boolean key (or nil: no group)",
        check.shown(check.fmt(k) .. " for particle " .. p))
    end
    key_of[p] = k
    if k ~= nil and not keys[k] then keys[k] = true end
  end
  local out = {}
  for k in pairs(keys) do
    out[k] = sub_group(opts.group, function(p) return key_of[p] == k end, (opts.group.name or "group") .. " " .. tostring(k))
  end
  return out
end

--- Adds a ball (disc in 2D, sphere in 3D) of particles on a regular lattice: center, radius, spacing (default
--- 1/128), material, velocity, cavities (as robot:box). Returns the group (with .chambers when it has cavities).
function Robot:ball(opts)
  local where = "robot:ball"
  check.options(where, opts, BALL_OPTIONS)
  check_name(where, opts.name)
  local dim = self.dim
  check.vector(where, "center", opts.center, dim)
  local r = check.number(where, "radius", opts.radius, 0, math.huge, { open_lo = true })
  local h = check.number(where, "spacing", opts.spacing or 1 / 128, 0, math.huge, { open_lo = true })
  local m = math.max(1, math.ceil(2 * r / h))
  local offset, size, count = {}, {}, {}
  for a = 1, dim do offset[a], size[a], count[a] = opts.center[a] - m * h / 2, m * h, m end
  return self:_lattice(where, opts, offset, size, count, function(x)
    local d2 = 0
    for a = 1, dim do d2 = d2 + (x[a] - opts.center[a]) ^ 2 end
    return d2 <= r * r
  end)
end

--- Pressure (stress) actuator on groups: along axis (1..dim) or isotropic (axis = "isotropic"), actuation in
--- [-1, 1] scaled by max: material-space stress diag(max * u * e_axis) (seed 000 eq. 15). Returns its index.
function Robot:pressure_actuator(opts)
  local where = "robot:pressure_actuator"
  check.options(where, opts, PRESSURE_OPTIONS)
  if type(opts.groups) ~= "table" or #opts.groups == 0 then
    check.fail(where, "groups must be a non-empty list of groups (from robot:box, ball, image, mesh, select, split)", opts.groups)
  end
  local axis = opts.axis or 2
  local dir = {}
  if axis == "isotropic" then
    for a = 1, self.dim do dir[a] = 1 end
  else
    check.integer(where, "axis", axis, 1, self.dim)
    for a = 1, self.dim do dir[a] = a == axis and 1 or 0 end
  end
  local max = check.number(where, "max", opts.max or 1, 0, math.huge, { open_lo = true })
  for a = 1, self.dim do dir[a] = dir[a] * max end
  local id = #self.actuators + 1
  for i, g in ipairs(opts.groups) do
    if type(g) ~= "table" or type(g.particles) ~= "table" then
      check.fail(where, "groups[" .. i .. "] must be a group from robot:box, ball, image, mesh, select or split", g)
    end
  end
  -- every particle is checked before the actuator is added: a refused actuator leaves the robot as it was
  local mine = {}
  for i, g in ipairs(opts.groups) do
    for j, p in ipairs(g.particles) do
      check.integer(where, "groups[" .. i .. "].particles[" .. j .. "]", p, 1, #self.x)
      if self.act_of[p] then -- (the value shown is what was passed, not the new actuator's number)
        check.fail(where, "particle " .. p .. " already belongs to actuator " .. self.act_of[p] .. " (a particle belongs " ..
          "to one actuator)", check.shown(string.format("groups[%d].particles[%d] = %d", i, j, p)))
      end
      if mine[p] then
        check.fail(where, "particle " .. p .. " appears twice in groups (a particle belongs to one actuator)", p)
      end
      mine[p] = true
    end
  end
  self.actuators[id] = { kind = "stress", axis = dir, groups = opts.groups }
  for _, g in ipairs(opts.groups) do
    for _, p in ipairs(g.particles) do self.act_of[p] = id end
  end
  return id
end

--- Pneumatic chamber (seed 003 eqs. 14-16) on a wall { particles, normal, area } (group.chambers[name] of a box or
--- ball with cavities, or of a Gmsh mesh): each wall particle feels f = p J F^-T N dA, Nanson's relation, with N its
--- unit normal from the cavity into the solid and dA its area (2D: length per unit depth). The actuation u is the
--- pressure as a fraction of max (the pressure at u = 1; default 1, so u is the pressure itself). closed (default
--- true): the wall encloses its cavities, so their pressure exerts no net force or torque on the body; the actuator
--- is then of kind "cavity", which corrects the particle forces to that (engine/stages/chamber.h). false: kind "chamber",
--- Nanson's forces as they are (a pressure on an open surface). F is each wall particle's F_w, fitted to its
--- neighbours' positions (engine/terms/wall.h; docs/api.md "The wall's F"). surface (default true where the wall
--- has offsets, as the walls of robot:box, robot:ball and robot:gmsh do): the pressure acts on the surface each
--- particle carries, at its wall.offset (docs/api.md "Where the pressure acts"); false: at the particles.
--- Returns its index.
function Robot:chamber(opts)
  local where = "robot:chamber"
  check.options(where, opts, CHAMBER_OPTIONS)
  local wall = opts.wall
  local names = chambers.names_of(wall) -- (indexing it for wall.particles would raise its "no chamber wall named")
  if names then
    local first = names[1] and (names[1]:match("^[%a_][%w_]*$") and "." .. names[1] or "[" .. check.fmt(names[1]) .. "]")
    check.fail(where, string.format("wall must be one chamber wall%s, not a group's whole chambers table (the walls " ..
      "in it: %s)", first and ", e.g. group.chambers" .. first or "", #names > 0 and table.concat(names, ", ") or "none"),
      check.shown(string.format("a chambers table of %d wall%s", #names, #names == 1 and "" or "s")))
  end
  if type(wall) ~= "table" or type(wall.particles) ~= "table" or type(wall.normal) ~= "table" or type(wall.area) ~= "table" then
    check.fail(where, "wall must be a chamber wall { particles, normal, area } (group.chambers[name] of robot:box or " ..
      "robot:ball with cavities, or of robot:gmsh)", wall)
  end
  check.options(where .. ".wall", wall, chambers.WALL_KEYS)
  -- lists without holes (ipairs would stop at one, robot:world index past it), one entry per particle each
  local count = check.list(where, "wall.particles", wall.particles)
  if count == 0 then check.fail(where, "wall has no particles", 0) end
  local max = check.number(where, "max", opts.max or 1, 0, math.huge, { open_lo = true })
  if opts.closed ~= nil and type(opts.closed) ~= "boolean" then check.fail(where, "closed must be true or false", opts.closed) end
  if opts.surface ~= nil and type(opts.surface) ~= "boolean" then check.fail(where, "surface must be true or false", opts.surface) end
  if wall.offset ~= nil and type(wall.offset) ~= "table" then
    check.fail(where, "wall.offset must be a list of vectors, one per particle", wall.offset)
  end
  for _, key in ipairs { "normal", "area", "offset" } do
    if wall[key] ~= nil then
      local len = check.list(where, "wall." .. key, wall[key])
      if len ~= count then
        check.fail(where, string.format("wall.%s must hold one entry per particle: wall.particles has %d", key, count),
          check.shown(string.format("%d entries", len)))
      end
    end
  end
  if opts.surface and wall.offset == nil then
    check.fail(where, "surface = true needs wall.offset (each particle's offset to the surface it carries; the walls of " ..
      "robot:box, robot:ball and robot:gmsh have it)", "none")
  end
  local surface = opts.surface ~= false and wall.offset ~= nil
  local id = #self.actuators + 1
  local seen = {}
  for i, p in ipairs(wall.particles) do
    check.integer(where, "wall.particles[" .. i .. "]", p, 1, #self.x)
    if seen[p] then
      check.fail(where, string.format("wall.particles[%d] repeats wall.particles[%d] (a wall particle carries its " ..
        "area once)", i, seen[p]), p)
    end
    seen[p] = i
    check.vector(where, "wall.normal[" .. i .. "]", wall.normal[i], self.dim)
    local len2 = 0
    for a = 1, self.dim do len2 = len2 + wall.normal[i][a] ^ 2 end
    if math.abs(math.sqrt(len2) - 1) > 1e-6 then -- N scales the pressure force: {0, 2} would double it
      check.fail(where, "wall.normal[" .. i .. "] must be a unit vector (length 1, from the cavity into the solid)",
        check.shown(string.format("%s, of length %.6g", check.list_text(wall.normal[i]), math.sqrt(len2))))
    end
    check.number(where, "wall.area[" .. i .. "]", wall.area[i], 0, math.huge)
    if wall.offset ~= nil then check.vector(where, "wall.offset[" .. i .. "]", wall.offset[i], self.dim) end
    if self.act_of[p] then
      check.fail(where, "particle " .. p .. " already belongs to actuator " .. self.act_of[p] .. " (a particle carries " ..
        "one chamber's wall: make the walls between chambers at least two particles thick, or give the cavities one name)",
        check.shown(string.format("wall.particles[%d] = %d", i, p)))
    end
  end
  if wall.offset ~= nil then -- an offset reaches the surface the particle carries: about half a spacing away
    local h = 0 -- the particle spacing: the largest wall particle's (a mesh's sliver elements have small volumes)
    for _, p in ipairs(wall.particles) do h = math.max(h, self.vol[p] ^ (1 / self.dim)) end
    local reach = chambers.OFFSET_SPACINGS * h
    for i, o in ipairs(wall.offset) do
      local len = 0
      for a = 1, self.dim do len = len + o[a] ^ 2 end
      len = math.sqrt(len)
      if len > reach then
        check.fail(where, string.format("wall.offset[%d] must be at most %g particle spacings long (%.4g: an offset " ..
          "runs from the particle to the centroid of the surface it carries, about half a spacing, vol^(1/%d) = %.4g " ..
          "for the wall's largest particle)", i, chambers.OFFSET_SPACINGS, reach, self.dim, h),
          check.shown(string.format("%s, of length %.4g", check.list_text(o), len)))
      end
    end
  end
  if surface then -- the surface a wall particle carries lies on the cavity's side: N (into the solid) . offset < 0
    local cos, area = 0, 0
    for i = 1, #wall.particles do
      local o, N, len = wall.offset[i], wall.normal[i], 0
      for a = 1, self.dim do len = len + o[a] ^ 2 end
      if len > 0 then
        local dot = 0
        for a = 1, self.dim do dot = dot + o[a] * N[a] end
        cos, area = cos + wall.area[i] * dot / math.sqrt(len), area + wall.area[i]
      end
    end
    if area > 0 and cos / area > -0.5 then
      require("cq._warn").warn(string.format("cqlua: warning: %s: the wall of actuator %d has its offsets (where on " ..
        "the wall the pressure acts) at a mean cosine of %.2f to its normals, where the surface it carries lies on the " ..
        "cavity's side (about -1): were the particles and normals moved or turned without wall.offset? Turn the " ..
        "offsets with the normals, or pass surface = false", where, id, cos / area))
    end
  end
  local opening = chambers.opening(wall, self.dim)
  if opts.closed ~= false and opening > chambers.CLOSED_TOL then
    require("cq._warn").warn(string.format("cqlua: warning: %s: the wall of actuator %d (%d particles) is not a closed " ..
      "surface: its area vectors N dA sum to %.3g of its area (a closed surface's sum to 0), yet closed = true " ..
      "corrects its pressure forces to no net force and torque, which hides the force an open wall really feels: " ..
      "close the surface (every face around the cavity in its physical group), or pass closed = false", where, id,
      #wall.particles, opening))
  end
  -- the actuator keeps a copy: edits of the caller's wall after this call (its vectors included) do not reach the world
  local kept = { particles = {}, normal = {}, area = {}, offset = wall.offset and {} or nil }
  for i, p in ipairs(wall.particles) do
    kept.particles[i], kept.area[i] = p, wall.area[i]
    kept.normal[i] = { unpack(wall.normal[i], 1, self.dim) }
    if wall.offset then kept.offset[i] = { unpack(wall.offset[i], 1, self.dim) } end
  end
  self.actuators[id] = { kind = opts.closed == false and "chamber" or "cavity", max = max, wall = kept }
  for i, p in ipairs(kept.particles) do
    self.act_of[p] = id
    local N = {}
    for a = 1, self.dim do N[a] = max * kept.normal[i][a] end
    self.wall_of[p] = { axis = N, area = kept.area[i], offset = surface and kept.offset[i] or nil }
  end
  return id
end

--- Cable actuator (seed 000 eq. 17) through particles (1-based indices, in order along the cable): stiffness k,
--- rest length (default: the initial cable length, so u = 1 is just taut; u <= 0 pulls the cable to zero
--- length). Contract-only: a slack cable exerts no force. Returns its actuator index.
function Robot:cable_actuator(opts)
  local where = "robot:cable_actuator"
  check.options(where, opts, CABLE_OPTIONS)
  if type(opts.particles) ~= "table" or #opts.particles < 2 then
    check.fail(where, "particles must be a list of at least 2 particle indices", opts.particles)
  end
  for i, p in ipairs(opts.particles) do check.integer(where, "particles[" .. i .. "]", p, 1, #self.x) end
  local k = check.number(where, "k", opts.k or 10, 0, math.huge)
  if opts.rest then check.number(where, "rest", opts.rest, 0, math.huge) end
  if k == 0 then
    require("cq._warn").warn("cqlua: warning: robot:cable_actuator: k = 0: the cable has no stiffness, so it exerts no " ..
      "force at any actuation and its gradients are 0; give k > 0 (default 10)")
  end
  local id = #self.actuators + 1
  self.actuators[id] = { kind = "cable", particles = opts.particles, k = k, rest = opts.rest }
  return id
end

--- Creates the world for this robot (options of cq.world except n and actuators) and its initial state.
function Robot:world(opts)
  opts = opts or {}
  if type(opts) ~= "table" then check.fail("robot:world", "expects an options table", opts) end
  if #self.x == 0 then check.raise("robot:world: the robot has no particles (add groups with robot:box)") end
  if opts.n ~= nil then
    check.fail("robot:world", "n is set by the robot (" .. #self.x .. " particles); leave it out", opts.n)
  end
  -- n_actuators: the robot's own actuators; or, for a robot without any, the engine actuators that design:actuators
  -- (seed 004's actuator layout: one per particle of its selection) assigns
  if opts.n_actuators ~= nil and #self.actuators > 0 then
    check.fail("robot:world", "n_actuators is set by the robot's " .. #self.actuators .. " actuators; leave it out " ..
      "(it is for a robot without actuators whose design:actuators assigns them)", opts.n_actuators)
  end
  local n_act = #self.actuators
  if opts.n_actuators ~= nil then n_act = check.integer("robot:world", "n_actuators", opts.n_actuators, 1, #self.x) end
  if opts.dim ~= nil and opts.dim ~= self.dim then
    check.fail("robot:world", "dim must be the robot's (" .. self.dim .. ") or left out", opts.dim)
  end
  local known = {} -- cq.world's options less those the robot sets
  for k in pairs(check.option_sets["cq.world"]) do
    if k ~= "n" then known[k] = true end
  end
  check.options("robot:world", opts, known)
  local wopts = {}
  for k, v in pairs(opts) do wopts[k] = v end
  wopts.dim, wopts.n, wopts.n_actuators = self.dim, #self.x, n_act
  if opts.fluid == nil and opts.volumetric ~= "averaged" then
    -- a fluid meeting a solid: each fluid particle's own J would lock against it (cq._warn.locking_fluid)
    local fluids, solids = false, false
    for p = 1, #self.x do
      if self.mat[p].model == "fluid" then fluids = true else solids = true end
    end
    if fluids and solids then wopts.fluid = "grid" end
  end
  local w = cq.world(wopts)
  local P = {}
  local mat_fields = require("cq.materials").fields()
  for _, name in ipairs { "material", "vol0", "mass", "act_id", "act_axis", "wall_area", "wall_offset", unpack(mat_fields) } do
    P[name] = w:_writable(name)
  end
  local n = w.n
  for p = 1, n do
    local m = self.mat[p]
    for _, name in ipairs(mat_fields) do -- a number, or a vector's components (component-major)
      local v = m[name]
      if type(v) == "table" then for c = 1, self.dim do P[name][(c - 1) * n + p - 1] = v[c] or 0 end
      elseif v ~= nil then P[name][p - 1] = v end
    end
    P.material[p - 1] = cq.MATERIAL[m.model]
    P.vol0[p - 1] = self.vol[p]
    P.mass[p - 1] = m.density * self.vol[p]
    local a = self.act_of[p]
    P.act_id[p - 1] = a and a - 1 or -1
    local wall = self.wall_of[p]
    local axis = wall and wall.axis or (a and self.actuators[a].axis)
    if axis then for d = 1, self.dim do P.act_axis[(d - 1) * w.n + p - 1] = axis[d] end end
    if wall then P.wall_area[p - 1] = wall.area end
    if wall and wall.offset then for d = 1, self.dim do P.wall_offset[(d - 1) * n + p - 1] = wall.offset[d] end end
  end
  for i, a in ipairs(self.actuators) do w:set_actuator(i, a.kind) end
  for i, a in ipairs(self.actuators) do
    if a.kind == "cable" then
      local len = 0
      for j = 1, #a.particles - 1 do
        local p, q = self.x[a.particles[j]], self.x[a.particles[j + 1]]
        local d2 = 0
        for b = 1, self.dim do d2 = d2 + (q[b] - p[b]) ^ 2 end
        len = len + math.sqrt(d2)
      end
      w:add_cable(i, a.particles, a.k, a.rest or len)
    end
  end
  w.groups = self.groups -- blow-up messages and warnings name the group of the particle
  local solid -- the particles that are not fluid, for the chamber walls' thickness
  for i, a in ipairs(self.actuators) do -- a cavity the grid cannot resolve glues shut; a wall it cannot balloons
    if a.wall then
      chambers.narrow(i, a.wall, self.x, w.dx, self.dim)
      if not solid then
        solid = {}
        for p = 1, n do if self.mat[p].model ~= "fluid" then solid[#solid + 1] = p end end
      end
      chambers.thin(i, a.wall, self.x, self.vol, solid, w.dx, self.dim, #solid < n)
    end
  end
  w:commit()
  local s = w:state()
  for p = 1, w.n do
    s:set("x", p, self.x[p])
    if #self.v[p] > 0 then s:set("v", p, self.v[p]) end
  end
  w:_take_groups(s) -- the groups of volumetric_groups = "initial" and the chamber walls' neighbours (engine/terms/wall.c)
  -- are the robot's, whichever state is stepped first
  return w, s
end

--- Runs f(...) with the warnings (a sparse fluid's, ...) collected instead of written to stderr. Returns the list of
--- warnings, then f's results (f's error is raised once the warnings go to stderr again).
M.warnings_of = require("cq._warn").warnings_of

--- Number of particles so far.
function Robot:size() return #self.x end

return M
