-- Bad input on the physical-model side of the API (issue 64 items 3 and 4): cq.world and its options, walls and
-- implicit options, world:fill / fill_lame / params and the other world methods, state:set / get, cq.robot and every
-- robot method and file format (PNG, OBJ / STL, .msh), materials and presets, cq.design and its variables, and the
-- engine's commit / step checks. Each case is a table entry: a name, a function that makes the call, and the
-- substrings its error must hold (the argument's name, the valid range and the value); every error is raised at this
-- file's line. Legal input that is almost surely a mistake warns instead (cq._warn: robot.warnings_of collects them),
-- and calls that fail leave their object as it was.
--
-- Run: build/bin/cqlua tests/run.lua tests/badinput_model_spec.lua
package.path = "./scenes/?.lua;./tests/?.lua;" .. package.path
local ffi = require "ffi"
local cq = require "cq"
local robot = require "cq.robot"
local E = require "tests._errors"
local err_of, has = E.err_of, E.has

local S = require "tests._shell"
local TMP = S.tmpdir()
local function write(name, bytes) -- a file in TMP; its path
  S.write_file(TMP .. "/" .. name, bytes)
  return TMP .. "/" .. name
end
-- An RGBA PNG of w x h pixels from pixel(i, j) -> {r, g, b[, a]} (nil: white).
local function png(name, w, h, pixel) return S.png(TMP .. "/" .. name, w, h, pixel) end
local function read(path) return assert(S.read_file(path)) end
-- PNG chunks: a chunk of type and data with its CRC.
local function crc32(s)
  local crc = 0xffffffff
  for i = 1, #s do
    crc = bit.bxor(crc, s:byte(i))
    for _ = 1, 8 do
      local low = bit.band(crc, 1)
      crc = bit.rshift(crc, 1)
      if low == 1 then crc = bit.bxor(crc, 0xedb88320) end
    end
  end
  return bit.bxor(crc, 0xffffffff)
end
local function be32(v) return string.char(bit.band(bit.rshift(v, 24), 255), bit.band(bit.rshift(v, 16), 255),
  bit.band(bit.rshift(v, 8), 255), bit.band(v, 255)) end
local function chunk(kind, data) return be32(#data) .. kind .. data .. be32(crc32(kind .. data)) end
local SIGNATURE = "\137PNG\r\n\26\n"

-- A committed 2D world of 4 particles (n_actuators actuators, act_id 0 on every particle when it has any) and a state
-- with them in a row.
local function world4(n_act, opts)
  local o = { n = 4, res = 32, n_actuators = n_act or 0 }
  for k, v in pairs(opts or {}) do o[k] = v end
  local w = cq.world(o)
  if (n_act or 0) > 0 then w:fill("act_id", 0) end
  w:commit()
  local s = w:state()
  for p = 1, 4 do s:set("x", p, { 0.4 + 0.02 * p, 0.5 }) end
  return w, s
end
-- A 2D robot of a 4 x 4 box, and its group.
local function robot2()
  local r = cq.robot { dim = 2 }
  local g = r:box { offset = { 0.4, 0.4 }, size = { 0.04, 0.04 }, count = { 4, 4 } }
  return r, g
end
-- A 2D box with a box cavity: the robot, the group and its chamber wall.
local function chambered()
  local r = cq.robot { dim = 2 }
  local g = r:box { offset = { 0.3, 0.3 }, size = { 0.2, 0.2 }, spacing = 0.01,
    cavities = { { offset = { 0.35, 0.35 }, size = { 0.1, 0.1 }, name = "c" } } }
  return r, g, g.chambers.c
end
-- A robot world and a design over it.
local function designed()
  local r, g = robot2()
  local w, s = r:world { res = 64, dt = 1e-4 }
  return cq.design { world = w }, w, s, g
end

local png_ok = png("ok.png", 4, 4, function() return { 0, 0, 0 } end)
local meshes = require "meshes"
meshes.write_obj(TMP .. "/cube.obj", meshes.box({ 0, 0, 0 }, { 1, 1, 1 }))

---------------------------------------------------------------- the cases
-- { name, function making the call, { substrings of the error } }
local CASES = {
  -- cq.world
  { "cq.world walls = \"sticky\" (not a table)", function() cq.world { n = 1, walls = "sticky" } end,
    { "cq.world: walls must be a table", "all", "floor", "(got \"sticky\")" } },
  { "cq.world walls.floor = \"slip\" (a string, not a spec)", function() cq.world { n = 1, walls = { floor = "slip" } } end,
    { "cq.world.walls.floor", "must be a table", "(got \"slip\")" } },
  { "cq.world walls = { { type = \"slip\" } } (a list)", function() cq.world { n = 1, walls = { { type = "slip" } } } end,
    { "walls keys must be", "left", "(got 1)" } },
  { "cq.world walls.front in 2D", function() cq.world { n = 1, walls = { front = {} } } end,
    { "walls keys must be", "(got \"front\")" } },
  { "cq.world walls.floor.type = \"glue\"", function() cq.world { n = 1, walls = { floor = { type = "glue" } } } end,
    { "type must be one of", "sticky", "(got \"glue\")" } },
  { "cq.world walls.floor.friction = -1", function() cq.world { n = 1, walls = { floor = { type = "friction", friction = -1 } } } end,
    { "friction must be >= 0", "(got -1)" } },
  { "cq.world walls.all.thickness = 40 on a 64 grid", function() cq.world { n = 1, walls = { all = { thickness = 40 } } } end,
    { "cq.world.walls.all: thickness must be", "[1, 32]", "(got 40)" } },
  { "cq.world walls.right.thickness = 20 on a 32-wide grid", function()
      cq.world { n = 1, res = { 32, 64 }, walls = { right = { thickness = 20 } } } end,
    { "cq.world.walls.right: thickness must be", "[1, 16]", "(got 20)" } },
  { "cq.world walls.floor.velocity of 1 number", function() cq.world { n = 1, walls = { floor = { velocity = { 1 } } } } end,
    { "velocity must be a table of 2 numbers", "(got a table of 1)" } },
  { "cq.world walls.floor.oscillation = 5", function() cq.world { n = 1, walls = { floor = { oscillation = 5 } } } end,
    { "oscillation", "table", "(got 5)" } },
  { "cq.world walls.floor.oscillation without amplitude",
    function() cq.world { n = 1, walls = { floor = { oscillation = { omega = 3 } } } } end,
    { "oscillation.amplitude must be a table of 2 numbers", "(got nil)" } },
  { "cq.world gravity = -9.8 (a number)", function() cq.world { n = 1, gravity = -9.8 } end,
    { "cq.world: gravity must be a table of 2 numbers", "(got -9.8)" } },
  { "cq.world gravity of 3 numbers in 2D", function() cq.world { n = 1, gravity = { 0, -9.8, 0 } } end,
    { "gravity must be a table of 2 numbers", "(got a table of 3)" } },
  { "cq.world res = 4", function() cq.world { n = 1, res = 4 } end, { "res[1] must be", "[5, 65536]", "(got 4)" } },
  { "cq.world res = { 64.5, 64 }", function() cq.world { n = 1, res = { 64.5, 64 } } end,
    { "res[1] must be an integer", "(got 64.5)" } },
  { "cq.world dx = \"0.01\"", function() cq.world { n = 1, dx = "0.01" } end, { "dx must be a number", "(got \"0.01\")" } },
  { "cq.world dt = 0", function() cq.world { n = 1, dt = 0 } end, { "dt must be > 0", "(got 0)" } },
  { "cq.world damping = -1", function() cq.world { n = 1, damping = -1 } end, { "damping must be >= 0", "(got -1)" } },
  { "cq.world damping = inf", function() cq.world { n = 1, damping = math.huge } end, { "damping must be finite", "(got inf)" } },
  { "cq.world n = -3", function() cq.world { n = -3 } end, { "n must be >= 1", "(got -3)" } },
  { "cq.world n_actuators = 1.5", function() cq.world { n = 1, n_actuators = 1.5 } end,
    { "n_actuators must be an integer", "(got 1.5)" } },
  { "cq.world precision = \"f16\"", function() cq.world { n = 1, precision = "f16" } end,
    { "precision must be one of f32, f64", "(got \"f16\")" } },
  { "cq.world backend = \"gpu\"", function() cq.world { n = 1, backend = "gpu" } end,
    { "backend must be one of auto, cpu, cuda", "(got \"gpu\")" } },
  { "cq.world integrator = \"rk4\"", function() cq.world { n = 1, integrator = "rk4" } end,
    { "integrator must be one of", "implicit", "(got \"rk4\")" } },
  -- a number is an index of the registry's entries, not a name (issue 64 finding 2: it reached the FFI as a table)
  { "cq.world integrator = 1", function() cq.world { n = 1, integrator = 1 } end,
    { "cq.world: integrator must be one of explicit, implicit (got 1)" } },
  { "cq.world walls.floor.type = 1", function() cq.world { n = 1, walls = { floor = { type = 1 } } } end,
    { "cq.world.walls.floor: type must be one of", "sticky", "(got 1)" } },
  { "world:set_actuator(1, 2)", function() cq.world { n = 2, n_actuators = 1 }:set_actuator(1, 2) end,
    { "world:set_actuator: kind must be one of", "cavity", "(got 2)" } },
  { "world:set_node_bcs type = 1", function() cq.world { n = 2 }:set_node_bcs({ 1 }, { { 0, 1 } }, { type = 1 }) end,
    { "world:set_node_bcs: type must be one of", "slip", "(got 1)" } },
  { "cq.world implicit = true", function() cq.world { n = 1, implicit = true } end,
    { "implicit must be a table", "(got true)" } },
  { "cq.world implicit.tol = 1", function() cq.world { n = 1, implicit = { tol = 1 } } end,
    { "implicit.tol must be in [0, 1)", "(got 1)" } },
  { "cq.world implicit.max_newton = -1", function() cq.world { n = 1, implicit = { max_newton = -1 } } end,
    { "implicit.max_newton must be >= 0", "(got -1)" } },
  { "cq.world implicit.precond = \"ilu\"", function() cq.world { n = 1, implicit = { precond = "ilu" } } end,
    { "implicit.precond must be one of auto, mass, factor", "(got \"ilu\")" } },
  { "cq.world implicit.error_tol = 0", function() cq.world { n = 1, implicit = { error_tol = 0 } } end,
    { "implicit.error_tol", "in (0, 1)", "(got 0)" } },
  { "cq.world implicit.adapt = \"yes\"", function() cq.world { n = 1, implicit = { adapt = "yes" } } end,
    { "implicit.adapt must be true or false", "(got \"yes\")" } },
  { "cq.world implicit.max_split = 31", function() cq.world { n = 1, implicit = { max_split = 31 } } end,
    { "implicit.max_split must be", "[0, 30]", "(got 31)" } },
  { "cq.world implicit.fill_rounds = 17", function() cq.world { n = 1, implicit = { fill_rounds = 17 } } end,
    { "implicit.fill_rounds must be", "[0, 16]", "(got 17)" } },
  { "cq.world volumetric = \"mixed\"", function() cq.world { n = 1, volumetric = "mixed" } end,
    { "volumetric must be one of solids, particle, averaged", "(got \"mixed\")" } },
  { "cq.world volumetric_own = 0", function() cq.world { n = 1, volumetric_own = 0 } end,
    { "volumetric_own must be in [1e-06, 1000000]", "(got 0)" } },
  { "cq.world fluid = \"water\"", function() cq.world { n = 1, fluid = "water" } end,
    { "fluid must be one of particle, grid", "(got \"water\")" } },
  { "cq.world fluid_rest = \"zero\"", function() cq.world { n = 1, fluid_rest = "zero" } end,
    { "fluid_rest must be one of initial, one", "(got \"zero\")" } },
  { "cq.world threads = 2000", function() cq.world { n = 1, threads = 2000 } end, { "threads must be", "(got 2000)" } },
  { "cq.world substeps = 3e9", function() cq.world { n = 1, substeps = 3e9 } end,
    { "substeps must be >= 1 and <= 2^31 - 1", "(got 3000000000)" } },
  { "cq.world gravity = { 0, NaN }", function() cq.world { n = 1, gravity = { 0, 0 / 0 } } end,
    { "gravity[2] must be a finite number", "(got nan)" } },
  { "cq.world dim = 2.5", function() cq.world { n = 1, dim = 2.5 } end, { "dim must be an integer", "(got 2.5)" } },
  { "cq.world(\"2d\") (not a table)", function() cq.world("2d") end, { "cq.world: expects an options table", "(got \"2d\")" } },

  -- world:fill, fill_lame and the other world methods
  { "world:fill(\"act_id\", 0.5)", function() cq.world { n = 2, n_actuators = 1 }:fill("act_id", 0.5) end,
    { "world:fill: act_id must be -1 (none) or an actuator index", "[0, 0]", "the world has 1 actuator)", "(got 0.5)" } },
  { "world:fill(\"act_id\", 2) with 2 actuators", function() cq.world { n = 2, n_actuators = 2 }:fill("act_id", 2) end,
    { "world:fill: act_id must be -1 (none) or an actuator index", "[0, 1]", "(got 2)" } },
  { "world:fill(\"act_id\", 0) with no actuators", function() cq.world { n = 2 }:fill("act_id", 0) end,
    { "world:fill: act_id must be -1", "no actuators", "(got 0)" } },
  { "world:fill(\"act_id\", function) giving 1e10", function()
      cq.world { n = 2, n_actuators = 1 }:fill("act_id", function() return 1e10 end) end,
    { "world:fill: act_id", "particle 1", "(got 10000000000)" } },
  { "world:fill(\"material\", -1)", function() cq.world { n = 2 }:fill("material", -1) end,
    { "world:fill: material must be a material name", "an id in [0, 7]", "(got -1)" } },
  { "world:fill(\"material\", 1.5)", function() cq.world { n = 2 }:fill("material", 1.5) end,
    { "world:fill: material must be", "(got 1.5)" } },
  { "world:fill(\"material\", { 1, 300 })", function() cq.world { n = 2 }:fill("material", { 1, 300 }) end,
    { "world:fill: material", "values[2]", "(got 300)" } },
  { "world:fill(\"material\", \"jelly\")", function() cq.world { n = 2 }:fill("material", "jelly") end,
    { "material must be one of", "neohookean", "(got \"jelly\")" } },
  { "world:fill(\"E\", \"stiff\")", function() cq.world { n = 2 }:fill("E", "stiff") end,
    { "world:fill: E value must be a number", "(got \"stiff\")" } },
  { "world:fill(\"E\", { 1 }) on 2 particles", function() cq.world { n = 2 }:fill("E", { 1 }) end,
    { "world:fill: E values must hold one number per particle 1..2 (2)", "(got a table of 1)" } },
  -- issue 64 finding 14: the values past the particles were dropped without a word
  { "world:fill(\"E\", a list of n + 5) on 3 particles", function()
      cq.world { n = 3 }:fill("E", { 1, 2, 3, 4, 5, 6, 7, 8 }) end,
    { "world:fill: E values must hold one number per particle 1..3 (3)", "(got a table of 8)" } },
  { "world:fill(\"E\", a list of 3, 2, 3) (particles 2..3)", function()
      cq.world { n = 3 }:fill("E", { 1, 2, 3 }, 2, 3) end,
    { "world:fill: E values must hold one number per particle 2..3 (2)", "(got a table of 3)" } },
  { "world:fill(\"E\", { 1, nil, 3 }) on 3 particles", function() cq.world { n = 3 }:fill("E", { 1, nil, 3 }) end,
    { "world:fill: E values must be a list without holes: E values[2] is nil, yet E values[3] is set" } },
  { "world:fill(\"E\", function returning nil)", function() cq.world { n = 2 }:fill("E", function() end) end,
    { "E function must return a number for particle 1", "(got nil)" } },
  { "world:fill(\"act_axis\", 1) (a number for a vector)", function() cq.world { n = 2 }:fill("act_axis", 1) end,
    { "act_axis must be a table of 2 numbers", "(got 1)" } },
  { "world:fill(\"E\", 5, 0)", function() cq.world { n = 2 }:fill("E", 5, 0) end, { "first must be", "[1, 2]", "(got 0)" } },
  { "world:fill(\"E\", 5, 2, 1)", function() cq.world { n = 2 }:fill("E", 5, 2, 1) end, { "last must be", "[2, 2]", "(got 1)" } },
  { "world:fill(\"youngs\", 5)", function() cq.world { n = 2 }:fill("youngs", 5) end,
    { "name must be a particle parameter", "(got \"youngs\")" } },
  { "world:fill_lame(0, 1)", function() cq.world { n = 2 }:fill_lame(0, 1) end, { "world:fill_lame: mu must be > 0", "(got 0)" } },
  { "world:fill_lame(3, -2.5)", function() cq.world { n = 2 }:fill_lame(3, -2.5) end,
    { "world:fill_lame: lambda must be > -2", "(got -2.5)" } },
  { "world:fill_lame(1, NaN)", function() cq.world { n = 2 }:fill_lame(1, 0 / 0) end,
    { "world:fill_lame: lambda must be a number", "(got nan)" } },
  { "world:fill_lame(inf, 1)", function() cq.world { n = 2 }:fill_lame(math.huge, 1) end, { "mu must be finite", "(got inf)" } },
  { "world.params.E = 5", function() cq.world { n = 2 }.params.E = 5 end, { "world.params", "read-only", "world:fill" } },
  { "world.params.youngs", function() return cq.world { n = 2 }.params.youngs end,
    { "world.params", "no particle parameter youngs", "(got \"youngs\")" } },
  { "world.params[{}] (a table for a name)", function() return cq.world { n = 2 }.params[{}] end,
    { "world.params: no particle parameter of that name", "(got a table of 0)" } },
  { "world:set_actuator(0, \"stress\")", function() cq.world { n = 2, n_actuators = 1 }:set_actuator(0, "stress") end,
    { "world:set_actuator: actuator must be", "[1, 1]", "(got 0)" } },
  { "world:set_actuator(1, \"pneumatic\")", function() cq.world { n = 2, n_actuators = 1 }:set_actuator(1, "pneumatic") end,
    { "kind must be one of", "stress", "(got \"pneumatic\")" } },
  { "world:add_cable(1, { 1 }, ...)", function() cq.world { n = 2, n_actuators = 1 }:add_cable(1, { 1 }, 1, 0.1) end,
    { "world:add_cable: particles must be a list of at least 2", "(got a table of 1)" } },
  { "world:add_cable on actuator 2 of 1", function() cq.world { n = 2, n_actuators = 1 }:add_cable(2, { 1, 2 }, 1, 0.1) end,
    { "world:add_cable: actuator must be in [1, 1]", "(got 2)" } },
  { "world:add_cable through particle 3 of 2", function() cq.world { n = 2, n_actuators = 1 }:add_cable(1, { 1, 3 }, 1, 0.1) end,
    { "world:add_cable: particles[2] must be in [1, 2]", "(got 3)" } },
  { "world:add_cable k = -1", function() cq.world { n = 2, n_actuators = 1 }:add_cable(1, { 1, 2 }, -1, 0.1) end,
    { "world:add_cable: k must be >= 0", "(got -1)" } },
  { "world:add_cable rest = NaN", function() cq.world { n = 2, n_actuators = 1 }:add_cable(1, { 1, 2 }, 1, 0 / 0) end,
    { "world:add_cable: rest must be a number", "nan" } },
  { "world:set_node_bcs normal { 0, 0 }", function() cq.world { n = 2 }:set_node_bcs({ 5 }, { { 0, 0 } }) end,
    { "world:set_node_bcs: normals[1] must be a non-zero vector", "(got {0, 0})" } },
  { "world:set_node_bcs with 2 nodes and 1 normal", function() cq.world { n = 2 }:set_node_bcs({ 1, 2 }, { { 0, 1 } }) end,
    { "normals must have one entry per node (2)", "(got 1)" } },
  { "world:set_node_bcs node 4096 on a 64 x 64 grid", function() cq.world { n = 2 }:set_node_bcs({ 4096 }, { { 0, 1 } }) end,
    { "nodes[1] must be", "[0, 4095]", "(got 4096)" } },
  { "world:set_node_bcs type = \"none\"", function() cq.world { n = 2 }:set_node_bcs({ 1 }, { { 0, 1 } }, { type = "none" }) end,
    { "type must be one of sticky, slip, separate, friction", "(got \"none\")" } },
  { "world:set_gravity({ 0 })", function() cq.world { n = 2 }:set_gravity { 0 } end,
    { "world:set_gravity: gravity must be a table of 2 numbers", "(got a table of 1)" } },
  { "world:set_threads(-1)", function() cq.world { n = 2 }:set_threads(-1) end, { "world:set_threads: threads must be", "(got -1)" } },
  { "world:check_fracture(\"yes\")", function() cq.world { n = 2 }:check_fracture("yes") end,
    { "world:check_fracture: on must be true or false", "(got \"yes\")" } },
  { "world:check_fracture(true, 0)", function() cq.world { n = 2 }:check_fracture(true, 0) end,
    { "every must be >= 1", "(got 0)" } },
  { "world:check_fracture(true, 1.5)", function() cq.world { n = 2 }:check_fracture(true, 1.5) end,
    { "every must be an integer >= 1", "(got 1.5)" } },
  { "world:solver_stats(\"reset\")", function() cq.world { n = 2 }:solver_stats("reset") end,
    { "reset must be true, false or nil", "(got \"reset\")" } },
  { "world:memo{ steps = 0 }", function() world4():memo { steps = 0 } end, { "world:memo: steps must be", "(got 0)" } },
  { "world:memo before commit", function() cq.world { n = 2 }:memo { steps = 1 } end, { "world:memo", "commit" } },

  -- world:step and the engine's commit checks
  { "world:step before commit", function() local w = cq.world { n = 2 }; w:step(w:state()) end, { "world:step", "commit" } },
  { "world:step with u of 1 value for a world with no actuators", function() local w, s = world4(); w:step(s, { 0.5 }) end,
    { "world:step: u must be nil", "no actuators", "(got a table of 1)" } },
  { "world:step with u of 2 values for 1 actuator", function() local w, s = world4(1); w:step(s, { 0.5, 0.5 }) end,
    { "u must be a table of 1 actuation values", "(got a table of 2)" } },
  { "world:step with u = { \"a\" }", function() local w, s = world4(1); w:step(s, { "a" }) end,
    { "u[1] must be a number", "(got \"a\")" } },
  { "world:step with a number for s", function() local w = world4(); w:step(5) end,
    { "world:step: s must be a cq state", "(got 5)" } },
  { "world:step with a state of another world", function()
      local w = world4(); local other = cq.world { n = 3 }; w:step(other:state()) end,
    { "world:step: s must be a state of a world with 4 particles in 2D" } },
  { "world:step with u = { NaN }", function() local w, s = world4(1); w:step(s, { 0 / 0 }) end,
    { "world:step: step 1: u[1] (actuator 1) is not finite (nan)" } },
  { "world:step with a NaN force", function()
      local w, s = world4(); local f = ffi.new("double[8]"); f[0] = 0 / 0; w:step(s, nil, f) end,
    { "world:step: step 1: force of particle 1, component 1 is not finite (nan)" } },
  { "world:stress with a short out array", function() local w, s = world4(); w:stress(s, nil, nil, ffi.new("double[3]")) end,
    { "world:stress: out must be an FFI array of 16 doubles", "(got an array of 3)" } },
  { "memo:step before memo:begin", function() local w = world4(); w:memo { steps = 2 }:step() end,
    { "memo:step: call memo:begin(s0) first" } },
  { "memo:begin from a state of another world", function() local w = world4(); w:memo { steps = 2 }:begin(cq.world { n = 3 }:state()) end,
    { "memo:begin: s0 must be a state of a world with 4 particles in 2D, f64", "(got cq.state: 3 particles" } },
  { "memo:step past its steps", function()
      local w, s = world4(); local m = w:memo { steps = 1 }; m:begin(s); m:step(); m:step() end,
    { "memo:step: memo is full: it was created for 1 steps" } },
  { "memo:grad_u of step 2 of 1", function()
      local w, s = world4(1); local m = w:memo { steps = 1 }; m:begin(s); m:step { 0 }; m:backward(); m:grad_u(2, 1) end,
    { "memo:grad_u: k (control step) must be in [1, 1]", "(got 2)" } },
  { "world:step with a short force array", function() local w, s = world4(); w:step(s, nil, ffi.new("double[?]", 3)) end,
    { "force must be an FFI array of 8 doubles", "(got an array of 3)" } },
  { "world:commit with E = inf", function() local w = cq.world { n = 2 }; w:fill("E", math.huge); w:commit() end,
    { "world:commit: particle 1: E (Young's modulus) must be finite and > 0 (got inf)" } },
  { "world:commit with nu = -inf", function() local w = cq.world { n = 2 }; w:fill("nu", -math.huge); w:commit() end,
    { "nu (Poisson's ratio) must be finite and in (-1, 0.5) (got -inf)" } },
  { "world:commit with c20 = NaN (a parameter bounded only by finite)", function()
      local w = cq.world { n = 2 }; w:fill("c20", 0 / 0); w:commit() end,
    { "particle 1: c20", "must be finite (got nan)" } },
  { "world:commit with E = 1e300 (the substeps it would need pass 2^31 - 1)", function()
      local w = cq.world { n = 2 }; w:fill("E", 1e300); w:commit() end,
    { "world:commit", "above the stable limit", "more than 2^31 - 1 substeps", "smaller dt" } },
  { "world:step with a NaN position", function() local w, s = world4(); s:set("x", 2, { 0 / 0, 0.5 }); w:step(s) end,
    { "world:step", "particle 2", "x = (nan, 0.5)" } },

  -- state:set / get / mean / copy_from
  { "state:set(\"x\", 0, ...)", function() local _, s = world4(); s:set("x", 0, { 0.5, 0.5 }) end,
    { "state:set: p must be", "[1, 4]", "(got 0)" } },
  { "state:set(\"x\", 1.5, ...)", function() local _, s = world4(); s:set("x", 1.5, { 0.5, 0.5 }) end,
    { "state:set: p must be an integer", "(got 1.5)" } },
  { "state:set(\"x\", 1, { 0.5 })", function() local _, s = world4(); s:set("x", 1, { 0.5 }) end,
    { "state:set: values must be a table of 2 numbers", "(got a table of 1)" } },
  { "state:set(\"x\", 1, { \"a\", 0 })", function() local _, s = world4(); s:set("x", 1, { "a", 0 }) end,
    { "values[1] must be", "(got \"a\")" } },
  { "state:set(\"q\", ...)", function() local _, s = world4(); s:set("q", 1, { 0 }) end,
    { "state:set: field must be one of", "x, v", "(got \"q\")" } },
  { "state:get(\"x\", 5) of 4 particles", function() local _, s = world4(); s:get("x", 5) end,
    { "state:get: p must be", "[1, 4]", "(got 5)" } },
  { "state:mean(\"F\")", function() local _, s = world4(); s:mean("F") end, { "state:mean: field must be x or v", "(got \"F\")" } },
  { "state:mean(\"x\", {})", function() local _, s = world4(); s:mean("x", {}) end, { "idx must be nil", "(got a table of 0)" } },
  { "state:copy_from a state of another world", function() local _, s = world4(); s:copy_from(cq.world { n = 3 }:state()) end,
    { "state:copy_from: other must be a state of a world with 4 particles", "(got cq.state: 3 particles" } },

  -- cq.robot and robot:box / ball
  { "cq.robot{ dim = 4 }", function() cq.robot { dim = 4 } end, { "cq.robot: dim must be", "[2, 3]", "(got 4)" } },
  { "cq.robot(\"2d\")", function() cq.robot "2d" end, { "cq.robot: expects an options table", "(got \"2d\")" } },
  { "robot:box size = { 0, 0.1 }", function() cq.robot():box { offset = { 0, 0 }, size = { 0, 0.1 } } end,
    { "robot:box: size[1] must be > 0", "(got 0)" } },
  { "robot:box spacing = 0", function() cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, spacing = 0 } end,
    { "robot:box: spacing must be > 0", "(got 0)" } },
  { "robot:box count = { 0, 3 }", function() cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, count = { 0, 3 } } end,
    { "robot:box: count[1] must be", ">= 1", "(got 0)" } },
  { "robot:box without offset", function() cq.robot():box { size = { 0.1, 0.1 } } end,
    { "robot:box: offset must be a table of 2 numbers", "(got nil)" } },
  { "robot:box offset = { 0, inf }", function() cq.robot():box { offset = { 0, math.huge }, size = { 0.1, 0.1 } } end,
    { "offset[2] must be a finite number", "(got inf)" } },
  { "robot:box name = 5", function() cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, name = 5 } end,
    { "robot:box: name must be a string", "(got 5)" } },
  { "robot:box keep = true", function() cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, keep = true } end,
    { "keep must be a function", "(got true)" } },
  { "robot:box keep keeps nothing", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, keep = function() return false end } end,
    { "robot:box: the shape holds no particle at this spacing (keep kept no lattice point)", "(got spacing 0.00769231)" } },
  { "robot:box with spacing and count both", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, count = { 2, 2 }, spacing = 0.01 } end,
    { "robot:box: give spacing or count, not both", "(got spacing = 0.01 and count = {2, 2})" } },
  { "robot:box of 1e10 particles", function() cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, count = { 1e5, 1e5 } } end,
    { "the lattice would hold 1e+10 points", "(got count = {100000, 100000})" } },
  { "robot:box velocity of 3 numbers in 2D", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, velocity = { 1, 0, 0 } } end,
    { "velocity must be a table of 2 numbers", "(got a table of 3)" } },
  { "robot:box cavities = {}", function() cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, cavities = {} } end,
    { "cavities must be a list of", "(got a table of 0)" } },
  { "robot:box cavity sticking out of the body", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, spacing = 0.01,
        cavities = { { offset = { 0.05, 0.05 }, size = { 0.1, 0.02 } } } } end,
    { "cavities[1] (cavity1) is not enclosed by the body", "(got spacing 0.01)" } },
  { "robot:box cavity radius = -1", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, cavities = { { center = { 0.05, 0.05 }, radius = -1 } } } end,
    { "cavities[1]", "radius must be > 0", "(got -1)" } },
  { "robot:box cavity name = 3", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, cavities = { { center = { 0.05, 0.05 }, radius = 0.02, name = 3 } } } end,
    { "cavities[1]", "name must be a non-empty string", "(got 3)" } },
  { "robot:ball radius = 0", function() cq.robot():ball { center = { 0.5, 0.5 }, radius = 0 } end,
    { "robot:ball: radius must be > 0", "(got 0)" } },
  { "robot:ball center of 3 numbers in 2D", function() cq.robot():ball { center = { 0.5, 0.5, 0.5 }, radius = 0.1 } end,
    { "robot:ball: center must be a table of 2 numbers", "(got a table of 3)" } },
  { "robot:ball rad = 0.1 (a typo)", function() cq.robot():ball { center = { 0.5, 0.5 }, rad = 0.1 } end,
    { "robot:ball: unknown option 'rad'", "radius" } },

  -- materials and presets
  { "material.model = \"steel\"", function() cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, material = { model = "steel" } } end,
    { "material.model must be one of", "neohookean", "(got \"steel\")" } },
  { "material.preset = \"steel\"", function() cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, material = { preset = "steel" } } end,
    { "material.preset must be one of", "dragonskin30", "(got \"steel\")" } },
  { "material.E = -1", function() cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, material = { E = -1 } } end,
    { "material.E must be > 0", "(got -1)" } },
  { "material.E = inf", function() cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, material = { E = math.huge } } end,
    { "material.E must be finite", "(got inf)" } },
  { "material.nu = 0.5", function() cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, material = { nu = 0.5 } } end,
    { "material.nu must be in (-1, 0.5)", "(got 0.5)" } },
  { "material.density = 0", function() cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, material = { density = 0 } } end,
    { "material.density must be > 0", "(got 0)" } },
  { "material.density = \"heavy\"", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, material = { density = "heavy" } } end,
    { "material.density must be a number", "(got \"heavy\")" } },
  { "material mooney_rivlin without c10", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, material = { model = "mooney_rivlin", c01 = 1, bulk = 10 } } end,
    { "material.c10 is required by model mooney_rivlin" } },
  { "material.c10 on neohookean", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, material = { c10 = 1 } } end,
    { "material.c10 is not a parameter of model neohookean" } },
  { "material.youngs (unknown key)", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, material = { youngs = 1 } } end,
    { "robot:box.material: unknown option 'youngs'" } },
  { "material.damping = -2", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, material = { damping = -2 } } end,
    { "material.damping must be -1", "or a finite rate >= 0", "(got -2)" } },
  { "material.inc_p = 1", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, material = { inc_p = 1 } } end,
    { "material.inc_p must be >= 2", "(got 1)" } },
  { "material ogden lists of different lengths", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 },
        material = { model = "ogden", mu = { 1, 2 }, alpha = { 2 }, bulk = 10 } } end,
    { "the lists material.alpha and material.mu must have the same length" } },
  { "material.fiber_dir of 3 numbers in 2D", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 },
        material = { model = "fiber_reinforced", fiber_E = 1, fiber_dir = { 1, 0, 0 } } } end,
    { "material.fiber_dir must be a list of 2 numbers", "(got a table of 3)" } },
  { "material = \"rubber\" (not a table)", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, material = "rubber" } end,
    { "robot:box.material: expects an options table", "(got \"rubber\")" } },

  -- pressure, chamber and cable actuators; select and split
  { "robot:pressure_actuator groups = {}", function() local r = robot2(); r:pressure_actuator { groups = {} } end,
    { "groups must be a non-empty list of groups", "(got a table of 0)" } },
  { "robot:pressure_actuator groups = { 5 }", function() local r = robot2(); r:pressure_actuator { groups = { 5 } } end,
    { "groups[1] must be a group", "(got 5)" } },
  { "robot:pressure_actuator axis = 3 in 2D", function() local r, g = robot2(); r:pressure_actuator { groups = { g }, axis = 3 } end,
    { "axis must be", "[1, 2]", "(got 3)" } },
  { "robot:pressure_actuator max = 0", function() local r, g = robot2(); r:pressure_actuator { groups = { g }, max = 0 } end,
    { "max must be > 0", "(got 0)" } },
  { "robot:pressure_actuator on a group already actuated", function()
      local r, g = robot2(); r:pressure_actuator { groups = { g } }; r:pressure_actuator { groups = { g } } end,
    { "particle 1 already belongs to actuator 1 (a particle belongs to one actuator)",
      "(got groups[1].particles[1] = 1)" } }, -- (was "got 2", the new actuator's number: issue 64 finding 13)
  { "robot:chamber on a wall whose particles a pressure actuator holds", function()
      local r, g, wall = chambered(); r:pressure_actuator { groups = { g } }; r:chamber { wall = wall } end,
    { "robot:chamber: particle " , " already belongs to actuator 1 (a particle carries one chamber's wall",
      "(got wall.particles[1] = " } },
  { "robot:pressure_actuator particle index 99 of a 16-particle robot", function()
      local r = robot2(); r:pressure_actuator { groups = { { particles = { 99 } } } } end,
    { "groups[1].particles[1] must be", "[1, 16]", "(got 99)" } },
  { "robot:chamber wall normal { 0, 2 } (not a unit vector)", function()
      local r, _, wall = chambered()
      wall.normal[1] = { 0, 2 }
      r:chamber { wall = wall } end,
    { "robot:chamber: wall.normal[1] must be a unit vector", "(got {0, 2}, of length 2)" } },
  { "robot:chamber wall normal { 0, 0 }", function()
      local r, _, wall = chambered(); wall.normal[1] = { 0, 0 }; r:chamber { wall = wall } end,
    { "wall.normal[1] must be a unit vector", "(got {0, 0}, of length 0)" } },
  { "robot:chamber wall area -1", function()
      local r, _, wall = chambered(); wall.area[2] = -1; r:chamber { wall = wall } end,
    { "wall.area[2] must be >= 0", "(got -1)" } },
  { "robot:chamber wall without particles", function()
      local r = robot2(); r:chamber { wall = { particles = {}, normal = {}, area = {} } } end,
    { "robot:chamber: wall has no particles" } },
  { "robot:chamber wall = group (no normals)", function() local r, g = robot2(); r:chamber { wall = g } end,
    { "wall must be a chamber wall { particles, normal, area }" } },
  { "robot:chamber max = -1", function() local r, _, wall = chambered(); r:chamber { wall = wall, max = -1 } end,
    { "robot:chamber: max must be > 0", "(got -1)" } },
  { "robot:chamber closed = \"yes\"", function() local r, _, wall = chambered(); r:chamber { wall = wall, closed = "yes" } end,
    { "closed must be true or false", "(got \"yes\")" } },
  { "robot:chamber surface = 1", function() local r, _, wall = chambered(); r:chamber { wall = wall, surface = 1 } end,
    { "surface must be true or false", "(got 1)" } },
  { "robot:chamber surface = true without wall.offset", function()
      local r, _, wall = chambered()
      r:chamber { wall = { particles = wall.particles, normal = wall.normal, area = wall.area }, surface = true } end,
    { "surface = true needs wall.offset" } },
  { "robot:chamber wall.offset[1] of the wrong length", function()
      local r, _, wall = chambered()
      local offset = {}
      for i = 1, #wall.particles do offset[i] = { 0, 0 } end
      offset[1] = { 0, 0, 0 }
      r:chamber { wall = { particles = wall.particles, normal = wall.normal, area = wall.area, offset = offset } } end,
    { "wall.offset[1]" } },
  -- issue 64 findings 1 and 3: a list with a hole (ipairs stopped at it, robot:world indexed it) and lists of
  -- unequal lengths were taken
  { "robot:chamber wall.particles with a hole", function()
      local r, _, wall = chambered(); wall.particles[3] = nil; r:chamber { wall = wall } end,
    { "robot:chamber: wall.particles must be a list without holes: wall.particles[3] is nil, yet wall.particles[40] is set" } },
  { "robot:chamber wall.normal with a hole", function()
      local r, _, wall = chambered(); wall.normal[7] = nil; r:chamber { wall = wall } end,
    { "wall.normal must be a list without holes: wall.normal[7] is nil" } },
  { "robot:chamber wall.area with a key that is no index", function()
      local r, _, wall = chambered(); wall.area.total = 1; r:chamber { wall = wall } end,
    { "wall.area must be a list (keys 1..n), but has the key 'total'" } },
  { "robot:chamber wall of 39 particles and 40 normals", function()
      local r, _, wall = chambered(); wall.particles[40] = nil; r:chamber { wall = wall } end,
    { "wall.normal must hold one entry per particle: wall.particles has 39", "(got 40 entries)" } },
  { "robot:chamber wall.offset one longer than wall.particles", function()
      local r, _, wall = chambered(); wall.offset[41] = { 0, 0 }; r:chamber { wall = wall } end,
    { "wall.offset must hold one entry per particle: wall.particles has 40", "(got 41 entries)" } },
  -- issue 64 finding 5: any offset was taken (the engine cut its shift to 0.4 cells without a word)
  { "robot:chamber wall.offset 5 long on a 0.01 lattice", function()
      local r, _, wall = chambered(); wall.offset[4] = { 5, 0 }; r:chamber { wall = wall } end,
    { "robot:chamber: wall.offset[4] must be at most 2 particle spacings long (0.02", "half a spacing",
      "(got {5, 0}, of length 5)" } },
  -- issue 64 finding 12: the whole chambers table was indexed for .particles, and robot:box's "no chamber wall named"
  -- answered
  { "robot:chamber wall = group.chambers (the whole table)", function()
      local r, g = chambered(); r:chamber { wall = g.chambers } end,
    { "robot:chamber: wall must be one chamber wall, e.g. group.chambers.c, not a group's whole chambers table " ..
      "(the walls in it: c)", "(got a chambers table of 1 wall)" } },
  -- issue 64 finding 7: unknown and conflicting keys of a cavity and of a wall were ignored
  { "robot:chamber wall with a key foo", function()
      local r, _, wall = chambered(); wall.foo = 1; r:chamber { wall = wall } end,
    { "robot:chamber.wall: unknown option 'foo' (known: area", "particles", "(got \"foo\")" } },
  { "robot:chamber wall with normals (a typo of normal)", function()
      local r, _, wall = chambered(); r:chamber { wall = { particles = wall.particles, normal = wall.normal,
        area = wall.area, normals = wall.normal } } end,
    { "robot:chamber.wall: unknown option 'normals'", "(got \"normals\")" } },
  { "robot:box cavity with offset, size, center and radius", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, spacing = 0.01,
        cavities = { { offset = { 0.03, 0.03 }, size = { 0.04, 0.04 }, center = { 0.05, 0.05 }, radius = 0.02 } } } end,
    { "robot:box: cavities[1]: give offset and size (a box) or center and radius (a ball), not both: center is a " ..
      "ball's key, offset a box's", "(got {0.05, 0.05})" } },
  { "robot:box box cavity with radius = 1", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, spacing = 0.01,
        cavities = { { offset = { 0.03, 0.03 }, size = { 0.04, 0.04 }, radius = 1 } } } end,
    { "cavities[1]: give offset and size (a box) or center and radius (a ball), not both: radius is a ball's key",
      "(got 1)" } },
  { "robot:ball cavity with a key foo", function()
      cq.robot():ball { center = { 0.5, 0.5 }, radius = 0.1, spacing = 0.01,
        cavities = { { center = { 0.5, 0.5 }, radius = 0.03, foo = 1 } } } end,
    { "robot:ball: cavities[1]: unknown option 'foo' (known: center, name, offset, radius, size)", "(got \"foo\")" } },
  -- issue 64 findings 6 and 14: a default name equal to another cavity's explicit one merged the two; "" was a name
  { "robot:box cavities[2] named cavity1, the default name of the unnamed cavities[1]", function()
      cq.robot():box { offset = { 0.3, 0.3 }, size = { 0.4, 0.2 }, spacing = 0.01,
        cavities = { { offset = { 0.35, 0.35 }, size = { 0.1, 0.1 } },
          { offset = { 0.55, 0.35 }, size = { 0.1, 0.1 }, name = "cavity1" } } } end,
    { "robot:box: cavities[2]: name \"cavity1\" is the default name of cavities[1], which has none, so the two would " ..
      "form one chamber", "(got \"cavity1\")" } },
  { "robot:ball cavities[1] named cavity2, the default name of the unnamed cavities[2]", function()
      cq.robot():ball { center = { 0.5, 0.5 }, radius = 0.2, spacing = 0.01,
        cavities = { { center = { 0.42, 0.5 }, radius = 0.05, name = "cavity2" }, { center = { 0.58, 0.5 }, radius = 0.05 } } } end,
    { "robot:ball: cavities[1]: name \"cavity2\" is the default name of cavities[2]", "(got \"cavity2\")" } },
  { "robot:box cavity name = \"\"", function()
      cq.robot():box { offset = { 0, 0 }, size = { 0.1, 0.1 }, cavities = { { center = { 0.05, 0.05 }, radius = 0.02, name = "" } } } end,
    { "cavities[1]", "name must be a non-empty string", "(got \"\")" } },
  -- issue 64 finding 8: a cavity between lattice points left no hole and a wall of cancelling normals
  { "robot:box cavity 0.001 wide at spacing 0.01", function()
      cq.robot():box { offset = { 0.3, 0.3 }, size = { 0.2, 0.2 }, spacing = 0.01,
        cavities = { { offset = { 0.352, 0.352 }, size = { 0.001, 0.001 }, name = "t" } } } end,
    { "robot:box: cavities[1] (t) holds no lattice point, so it leaves no hole in the body", "spacing 0.01",
      "(got offset {0.352, 0.352}, size {0.001, 0.001} at spacing 0.01)" } },
  { "robot:box ball cavity of radius 0.6 spacings between four lattice points", function()
      cq.robot():box { offset = { 0.3, 0.3 }, size = { 0.2, 0.2 }, spacing = 0.01,
        cavities = { { center = { 0.4, 0.4 }, radius = 0.006 } } } end,
    { "cavities[1] (cavity1) holds no lattice point", "(got center {0.4, 0.4}, radius 0.006 at spacing 0.01)" } },
  -- issue 64 finding 11: overlapping cavities were reported as "not enclosed by the body"
  { "robot:box cavities c and d overlapping", function()
      cq.robot():box { offset = { 0.3, 0.3 }, size = { 0.3, 0.2 }, spacing = 0.01,
        cavities = { { offset = { 0.35, 0.35 }, size = { 0.1, 0.1 }, name = "c" },
          { offset = { 0.4, 0.35 }, size = { 0.1, 0.1 }, name = "d" } } } end,
    { "robot:box: cavities[1] (c) and cavities[2] (d) overlap: the surface of cavities[1] at", "lies inside cavities[2]",
      "(got {offset {0.35, 0.35}, size {0.1, 0.1}} and {offset {0.4, 0.35}, size {0.1, 0.1}})" } },
  { "robot:ball cavities of one name overlapping (an L of two boxes)", function()
      cq.robot():ball { center = { 0.5, 0.5 }, radius = 0.2, spacing = 0.01,
        cavities = { { offset = { 0.4, 0.4 }, size = { 0.2, 0.06 }, name = "L" },
          { offset = { 0.4, 0.4 }, size = { 0.06, 0.2 }, name = "L" } } } end,
    { "robot:ball: cavities[1] (L) and cavities[2] (L) overlap", "overlapping ones are not joined" } },
  -- issue 64 finding 9: a state of another world of the same size ran
  { "world:step of a state of another world of the same size", function()
      local w = world4(); local _, s2 = world4(); w:step(s2) end,
    { "world:step: s belongs to another world (cq.world: 2D 32x32, 4 particles", "not this one",
      "s:copy_from(other)", "(got cq.state: 4 particles, substep 0)" } },
  { "world:stress of a state of another world of the same size", function()
      local w = world4(); local _, s2 = world4(); w:stress(s2) end,
    { "world:stress: s belongs to another world", "(got cq.state: 4 particles" } },
  { "group.chambers.chamer (a typo)", function() local _, g = chambered(); return g.chambers.chamer end,
    { "no chamber wall named \"chamer\" (the cavities with a wall here: c)" } },
  { "robot:cable_actuator particles = { 1 }", function() local r = robot2(); r:cable_actuator { particles = { 1 } } end,
    { "particles must be a list of at least 2 particle indices", "(got a table of 1)" } },
  { "robot:cable_actuator particle 0", function() local r = robot2(); r:cable_actuator { particles = { 0, 1 } } end,
    { "particles[1] must be", "[1, 16]", "(got 0)" } },
  { "robot:cable_actuator k = -1", function() local r = robot2(); r:cable_actuator { particles = { 1, 2 }, k = -1 } end,
    { "robot:cable_actuator: k must be >= 0", "(got -1)" } },
  { "robot:cable_actuator rest = -1", function() local r = robot2(); r:cable_actuator { particles = { 1, 2 }, rest = -1 } end,
    { "robot:cable_actuator: rest must be >= 0", "(got -1)" } },
  { "robot:select where = true", function() local r, g = robot2(); r:select { group = g, where = true } end,
    { "robot:select: where must be a function", "(got true)" } },
  { "robot:select keeping nothing", function() local r, g = robot2(); r:select { group = g, where = function() return false end } end,
    { "robot:select: where keeps no particle of the group", "(got false for all 16 particles of the group)" } },
  { "robot:select group = 3", function() local r = robot2(); r:select { group = 3, where = function() return true end } end,
    { "robot:select: group must be a group", "(got 3)" } },
  { "robot:split by = \"x\"", function() local r, g = robot2(); r:split { group = g, by = "x" } end,
    { "robot:split: by must be a function", "(got \"x\")" } },
  { "robot:split by returning NaN", function() local r, g = robot2(); r:split { group = g, by = function() return 0 / 0 end } end,
    { "robot:split: by must not return NaN", "(got nan for particle 1)" } },

  { "robot:split by returning a table (a new key per particle)", function()
      local r, g = robot2(); r:split { group = g, by = function() return {} end } end,
    { "robot:split: by must return a number, string or boolean key", "(got a table of 0 for particle 1)" } },
  { "cq.world with a table as an option name", function() cq.world { n = 1, [{}] = 1 } end,
    { "cq.world: unknown option a table of 0 (known:", "(got a table of 0)" } },

  -- robot:world
  { "robot:world of a robot with no particles", function() cq.robot():world() end, { "robot:world: the robot has no particles" } },
  { "robot:world{ n = 5 }", function() local r = robot2(); r:world { n = 5 } end, { "robot:world: n is set by the robot", "(got 5)" } },
  { "robot:world{ dim = 3 } for a 2D robot", function() local r = robot2(); r:world { dim = 3 } end,
    { "dim must be the robot's (2)", "(got 3)" } },
  { "robot:world{ n_actuators = 2 } with an actuator", function()
      local r, g = robot2(); r:pressure_actuator { groups = { g } }; r:world { n_actuators = 2 } end,
    { "n_actuators is set by the robot's 1 actuators", "(got 2)" } },
  { "robot:world{ n_actuators = 17 } for 16 particles", function() local r = robot2(); r:world { n_actuators = 17 } end,
    { "robot:world: n_actuators must be", "[1, 16]", "(got 17)" } },
  { "robot:world(\"fast\")", function() local r = robot2(); r:world "fast" end, { "robot:world: expects an options table", "(got \"fast\")" } },
  { "robot:world{ walls = \"slip\" }", function() local r = robot2(); r:world { walls = "slip" } end,
    { "cq.world: walls must be a table", "(got \"slip\")" } },

  -- robot:image and PNG files
  { "robot:image in a 3D robot", function() cq.robot { dim = 3 }:image { path = png_ok, scale = 0.01, offset = { 0, 0 } } end,
    { "robot:image: needs a 2D robot", "(got 3)" } },
  { "robot:image scale = 0", function() cq.robot():image { path = png_ok, scale = 0, offset = { 0, 0 } } end,
    { "scale (the size of a pixel) must be > 0", "(got 0)" } },
  { "robot:image with path and image both", function()
      cq.robot():image { path = png_ok, image = cq.frames.image(4, 4), scale = 0.01, offset = { 0, 0 } } end,
    { "give either path (a PNG file) or image", "(got \"both\")" } },
  { "robot:image palette of a grey", function()
      cq.robot():image { path = png_ok, scale = 0.01, offset = { 0, 0 }, palette = { { 100, 100, 100 } } } end,
    { "palette[1] must be a saturated colour", "(got {100, 100, 100})" } },
  { "robot:image palette entry 300", function()
      cq.robot():image { path = png_ok, scale = 0.01, offset = { 0, 0 }, palette = { { 300, 0, 0 } } } end,
    { "palette[1][1] must be", "[0, 255]", "(got 300)" } },
  { "robot:image actuators = \"yes\"", function()
      cq.robot():image { path = png_ok, scale = 0.01, offset = { 0, 0 }, actuators = "yes" } end,
    { "actuators must be true", "(got \"yes\")" } },
  { "robot:image axis = 0", function() cq.robot():image { path = png_ok, scale = 0.01, offset = { 0, 0 }, axis = 0 } end,
    { "robot:image: axis must be", "(got 0)" } },
  { "robot:image of a PNG without image data (no IDAT)", function()
      local ihdr = be32(4) .. be32(4) .. string.char(8, 6, 0, 0, 0)
      local path = write("noidat.png", SIGNATURE .. chunk("IHDR", ihdr) .. chunk("IEND", ""))
      cq.robot():image { path = path, scale = 0.01, offset = { 0, 0 } } end,
    { "robot:image:", "noidat.png", "a corrupt PNG" } },
  { "robot:image of a PNG with garbage image data", function()
      local ihdr = be32(4) .. be32(4) .. string.char(8, 6, 0, 0, 0)
      local path = write("garbage.png", SIGNATURE .. chunk("IHDR", ihdr) .. chunk("IDAT", "not zlib data at all") ..
        chunk("IEND", ""))
      cq.robot():image { path = path, scale = 0.01, offset = { 0, 0 } } end,
    { "robot:image:", "garbage.png", "a corrupt PNG" } },
  { "robot:image of a PNG with an unknown critical chunk whose type is not printable", function()
      local ihdr = be32(4) .. be32(4) .. string.char(8, 6, 0, 0, 0)
      local path = write("chunk.png", SIGNATURE .. chunk("IHDR", ihdr) .. chunk("I\1AT", "xx") .. chunk("IEND", ""))
      cq.robot():image { path = path, scale = 0.01, offset = { 0, 0 } } end,
    { "robot:image:", "chunk.png", "a corrupt PNG (I?AT PNG chunk not known)" } },
  { "robot:image of a PNG with a zero width", function()
      local whole = read(png_ok)
      local path = write("zero.png", SIGNATURE .. chunk("IHDR", be32(0) .. be32(4) .. string.char(8, 6, 0, 0, 0)) ..
        whole:sub(8 + 25 + 1))
      cq.robot():image { path = path, scale = 0.01, offset = { 0, 0 } } end,
    { "robot:image:", "zero.png", "a corrupt PNG" } },

  -- robot:mesh, robot:gmsh and their files
  { "robot:mesh in a 2D robot", function() cq.robot():mesh { path = TMP .. "/cube.obj", offset = { 0, 0 } } end,
    { "robot:mesh: needs a 3D robot", "(got 2)" } },
  { "robot:mesh format = \"ply\"", function()
      cq.robot { dim = 3 }:mesh { path = TMP .. "/cube.obj", format = "ply", offset = { 0, 0, 0 } } end,
    { "robot:mesh: format must be one of obj, stl", "(got \"ply\")" } },
  { "robot:mesh up = \"x\"", function()
      cq.robot { dim = 3 }:mesh { path = TMP .. "/cube.obj", up = "x", offset = { 0, 0, 0 } } end,
    { "robot:mesh: up must be one of y, z", "(got \"x\")" } },
  { "robot:mesh scale = -1", function()
      cq.robot { dim = 3 }:mesh { path = TMP .. "/cube.obj", scale = -1, offset = { 0, 0, 0 } } end,
    { "robot:mesh: scale must be > 0", "(got -1)" } },
  { "robot:mesh path = 5", function() cq.robot { dim = 3 }:mesh { path = 5, offset = { 0, 0, 0 } } end,
    { "robot:mesh: path must be an OBJ or STL file name", "(got 5)" } },
  { "robot:mesh name = {}", function()
      cq.robot { dim = 3 }:mesh { path = TMP .. "/cube.obj", spacing = 0.25, offset = { 0, 0, 0 }, name = {} } end,
    { "robot:mesh: name must be a string", "(got a table of 0)" } },
  { "robot:mesh of an OBJ face with 2 vertices", function()
      local path = write("line.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2\n")
      cq.robot { dim = 3 }:mesh { path = path, offset = { 0, 0, 0 } } end,
    { "robot:mesh:", "line.obj", "1 face line with fewer than 3 vertices (the first at line 4)" } },
  { "robot:mesh of a tetrahedron with one face line of 2 vertices among 4 (once dropped without a word)", function()
      local path = write("short.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4\nf 1 4 3\nf 2 3 4\n")
      cq.robot { dim = 3 }:mesh { path = path, offset = { 0, 0, 0 } } end,
    { "robot:mesh:", "short.obj", "1 face line with fewer than 3 vertices (the first at line 7)" } },
  { "robot:mesh of an OBJ face with index 0", function()
      local path = write("zero.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n")
      cq.robot { dim = 3 }:mesh { path = path, offset = { 0, 0, 0 } } end,
    { "robot:mesh:", "zero.obj", "zero value for face index", "line 4" } },
  { "robot:gmsh path = \"finger.step\"", function() cq.robot { dim = 3 }:gmsh { path = "finger.step", offset = { 0, 0, 0 } } end,
    { "robot:gmsh: path must be a Gmsh .geo file", "(got \"finger.step\")" } },
  { "robot:gmsh mesh_size with a .msh file", function()
      local path = write("cube.msh", require("_msh_files").ascii(require("_msh_files").cube()))
      cq.robot { dim = 3 }:gmsh { path = path, mesh_size = 0.1, offset = { 0, 0, 0 } } end,
    { "robot:gmsh: mesh_size needs a .geo file", "(got 0.1)" } },
  { "robot:gmsh groups naming no physical volume", function()
      local path = write("cube.msh", require("_msh_files").ascii(require("_msh_files").cube()))
      cq.robot { dim = 3 }:gmsh { path = path, offset = { 0, 0, 0 }, groups = { cub = {} } } end,
    { "robot:gmsh: groups: the mesh has no physical volume named cub", "\"cube\"", "(got \"cub\")" } },
  { "robot:gmsh of a truncated .msh", function()
      local text = require("_msh_files").ascii(require("_msh_files").cube())
      local path = write("cut.msh", text:sub(1, math.floor(#text / 2)))
      cq.robot { dim = 3 }:gmsh { path = path, offset = { 0, 0, 0 } } end,
    { "robot:gmsh:", "cut.msh" } },
  { "robot:gmsh name = 5", function()
      local path = write("cube.msh", require("_msh_files").ascii(require("_msh_files").cube()))
      cq.robot { dim = 3 }:gmsh { path = path, offset = { 0, 0, 0 }, name = 5 } end,
    { "robot:gmsh: name must be a string", "(got 5)" } },

  -- cq.design and its variables
  { "cq.design{ world = 5 }", function() cq.design { world = 5 } end, { "cq.design: world must be a cq.world", "(got 5)" } },
  { "design:variable field = \"youngs\"", function() local d = designed(); d:variable { field = "youngs" } end,
    { "design:variable: field must be density or a differentiable particle parameter", "(got \"youngs\")" } },
  { "design:variable field = \"act_id\" (not differentiable)", function() local d = designed(); d:variable { field = "act_id" } end,
    { "field must be density or a differentiable particle parameter", "(got \"act_id\")" } },
  { "design:variable per = \"group\" without groups", function() local d = designed(); d:variable { field = "E", per = "group" } end,
    { "per = \"group\" needs groups" } },
  { "design:variable with groups and particles", function()
      local d, _, _, g = designed(); d:variable { field = "E", groups = { g }, particles = { 1 } } end,
    { "give groups or particles, not both" } },
  { "design:variable particles = { 0 }", function() local d = designed(); d:variable { field = "E", particles = { 0 } } end,
    { "particles[1] must be", "[1, 16]", "(got 0)" } },
  { "design:variable particles = { 1, 1 }", function() local d = designed(); d:variable { field = "E", particles = { 1, 1 } } end,
    { "each particle may appear once", "(got 1)" } },
  { "design:variable map = \"log\"", function() local d = designed(); d:variable { field = "E", map = "log" } end,
    { "map must be scale, linear, exp, sigmoid", "(got \"log\")" } },
  { "design:variable map = \"linear\", scale = 0", function()
      local d = designed(); d:variable { field = "E", map = "linear", scale = 0, init = 10 } end,
    { "scale must be non-zero", "(got 0)" } },
  { "design:variable map = \"sigmoid\" without range", function() local d = designed(); d:variable { field = "E", map = "sigmoid" } end,
    { "map = \"sigmoid\" needs range = {lo, hi}", "(got nil)" } },
  { "design:variable range = { 5, 5 }", function()
      local d = designed(); d:variable { field = "E", map = "sigmoid", range = { 5, 5 } } end,
    { "range[2] must be > 5", "(got 5)" } },
  { "design:variable init of the wrong count", function()
      local d = designed(); d:variable { field = "E", per = "particle", init = { 1, 2 } } end,
    { "init must have 16 values", "(got a table of 2)" } },
  { "design:variable init = NaN", function() local d = designed(); d:variable { field = "E", init = 0 / 0 } end,
    { "init must give finite values", "nan" } },
  { "design:variable bounds = { 2, 1 }", function() local d = designed(); d:variable { field = "E", bounds = { 2, 1 } } end,
    { "bounds must be {lo, hi} with lo <= hi", "(got {2, 1})" } },
  { "design:variable bounds = { 0, NaN }", function() local d = designed(); d:variable { field = "E", bounds = { 0, 0 / 0 } } end,
    { "bounds must be {lo, hi} with lo <= hi", "nan" } },
  { "design:variable name taken", function()
      local d = designed(); d:variable { field = "E" }; d:variable { field = "nu" , name = "E" } end,
    { "name must be unique in the design (E exists)" } },
  { "design:variable density with init = -1", function() local d = designed(); d:variable { field = "density", init = -1 } end,
    { "design:variable: init must give density > 0", "variable \"density\"", "(got -1 at particle 1)" } },
  { "design:variable E with init = -2 (scale map)", function() local d = designed(); d:variable { field = "E", init = -2 } end,
    { "design:variable: init must give E > 0", "variable \"E\"", "(got -20 at particle 1)" } },
  { "design:variable nu with init = 2 (nu = 0.6)", function() local d = designed(); d:variable { field = "nu", init = 2 } end,
    { "design:variable: init must give nu in (-1, 0.5)", "(got 0.6 at particle 1)" } },
  { "design:variable E with map = \"exp\", init = 800 (E = inf)", function()
      local d = designed(); d:variable { field = "E", map = "exp", init = 800 } end,
    { "design:variable: init must give E", "finite", "(got inf at particle 1)" } },
  { "design:stretch init = 0", function() local d = designed(); d:stretch { axis = 1, origin = 0.4, init = 0 } end,
    { "design:stretch: init must be > 0", "(got 0)" } },
  { "design:stretch axis = 3 in 2D", function() local d = designed(); d:stretch { axis = 3, origin = 0 } end,
    { "design:stretch: axis must be", "[1, 2]", "(got 3)" } },
  { "design:stretch without origin", function() local d = designed(); d:stretch { axis = 1 } end,
    { "design:stretch: origin must be a table of 2 numbers", "(got nil)" } },
  { "design:layout without state", function() local d = designed(); d:layout { radius = 0.02 } end,
    { "design:layout: state must be a cq state", "(got nil)" } },
  { "design:layout radius = 0", function() local d, _, s = designed(); d:layout { state = s, radius = 0 } end,
    { "design:layout: radius must be > 0", "(got 0)" } },
  { "design:layout beta = 0", function() local d, _, s = designed(); d:layout { state = s, radius = 0.02, beta = 0 } end,
    { "design:layout: beta must be > 0", "(got 0)" } },
  { "design:layout eps = 2", function() local d, _, s = designed(); d:layout { state = s, radius = 0.02, eps = 2 } end,
    { "design:layout: eps must be in [0, 1]", "(got 2)" } },
  { "design:actuators outputs = 0", function() local d, _, s = designed(); d:actuators { state = s, radius = 0.02, outputs = 0 } end,
    { "design:actuators: outputs must be", ">= 1", "(got 0)" } },
  { "design:actuators on a world without one actuator per particle", function()
      local d, _, s = designed(); d:actuators { state = s, radius = 0.02, outputs = 2 } end,
    { "the world needs one actuator per particle of the actuator layout: n_actuators = 16", "(got 0)" } },
  { "design:actuators layout of another design", function()
      local d, _, s = designed()
      local d2 = designed()
      local phi = d2:layout { state = d2.world:state(), radius = 0.02 }
      d:actuators { state = s, radius = 0.02, outputs = 2, layout = phi } end,
    { "layout must be a variable of this design made by design:layout" } },
  { "design:apply with a density pushed below 0 by an optimiser", function()
      local d, _, s = designed()
      local rho = d:variable { field = "density" }
      rho.v[0] = -0.5
      d:apply(s) end,
    { "design:apply: design variable \"density\" must give density > 0", "(got -0.5 at particle 1" } },
  { "design:apply with a stretch pushed to 0", function()
      local d, _, s = designed()
      local st = d:stretch { axis = 1, origin = 0.4 }
      st.v[0] = 0
      d:apply(s) end,
    { "design:apply: design variable \"stretch\" must be > 0", "(got 0)" } },
  { "design:apply with NaN theta", function()
      local d, _, s = designed(); local v = d:variable { field = "E" }; v.v[0] = 0 / 0; d:apply(s) end,
    { "design:apply: design variable E[1] is nan (not finite)" } },
  { "design:apply(5) with a stretch", function()
      local d = designed(); d:stretch { axis = 1, origin = 0.4 }; d:apply(5) end,
    { "design:apply: s0 must be a cq state", "(got 5)" } },
  { "psi.controller(5)", function()
      local r = robot2()
      local w, s = r:world { res = 64, dt = 1e-4, n_actuators = 16 }
      local psi = cq.design { world = w }:actuators { state = s, radius = 0.02, outputs = 2 }
      psi.controller(5) end,
    { "psi.controller: inner must be a controller", "(got 5)" } },
  { "design:backward before design:apply", function() local d = designed(); d:variable { field = "E" }; d:backward({}) end,
    { "design:backward: call design:apply first" } },
  { "design:backward(5) after apply", function()
      local d, _, s = designed(); d:variable { field = "E" }; d:apply(s); d:backward(5) end,
    { "design:backward: memo must be the memo of the run", "(got 5)" } },
}

-- { name, function, { substrings of the warning } }: legal input that is almost surely a mistake.
local WARNINGS = {
  { "a world of 100 actuators with no act_id (zero gradients)", function()
      local w = cq.world { n = 4, res = 32, n_actuators = 100 }
      w:commit()
      local s = w:state()
      for p = 1, 4 do s:set("x", p, { 0.4 + 0.02 * p, 0.5 }) end
      w:step(s)
    end, { "world:step", "100 of the world's 100 actuators drive no particle", "actuators 1, 2, 3",
      "act_id", "gradients" } },
  { "a memo over a world with an actuator that drives nothing", function()
      local w = cq.world { n = 4, res = 32, n_actuators = 2 }
      w:fill("act_id", 0)
      w:commit()
      local s = w:state()
      for p = 1, 4 do s:set("x", p, { 0.4 + 0.02 * p, 0.5 }) end
      local m = w:memo { steps = 1 }
      m:begin(s)
    end, { "memo:begin", "1 of the world's 2 actuators drive no particle", "actuator 2" } },
  { "a robot's pressure actuator on a group without particles", function()
      local r = robot2()
      r:pressure_actuator { groups = { { particles = {} } } }
      local w, s = r:world { res = 64, dt = 1e-4 }
      w:step(s)
    end, { "1 of the world's 1 actuators drive no particle" } },
  { "a chamber wall whose normals were turned without its offsets", function()
      local r, _, wall = chambered()
      for i, N in ipairs(wall.normal) do wall.normal[i] = { N[2], -N[1] } end
      r:chamber { wall = wall }
    end, { "robot:chamber", "offsets", "mean cosine", "Turn the offsets with the normals", "surface = false" } },
  { "a cable actuator of stiffness 0", function()
      local r = robot2()
      r:cable_actuator { particles = { 1, 16 }, k = 0 }
    end, { "robot:cable_actuator", "k = 0", "no force" } },
  { "a design layout whose radius reaches no neighbour", function()
      local d, _, s = designed()
      d:layout { state = s, radius = 1e-4 }
    end, { "design:layout", "radius", "no other particle", "the filter does nothing" } },
}

describe("bad input to the physical model is refused at the caller's line, naming the argument, range and value",
  function()
    for _, case in ipairs(CASES) do
      it(case[1], function()
        local msg = err_of(case[2])
        assert.is_truthy(msg:find("^[^:]*badinput_model_spec%.lua:%d+: "), "not raised at the caller's line: " .. msg)
        has(msg, unpack(case[3]))
        assert.is_falsy(msg:find("table: 0x", 1, true), "a table's address in the message: " .. msg)
        assert.is_falsy(msg:find("(null)", 1, true), "(null) in the message: " .. msg)
      end)
    end
  end)

describe("legal input that is almost surely a mistake warns", function()
  for _, case in ipairs(WARNINGS) do
    it(case[1], function()
      local warned = robot.warnings_of(case[2])
      for _, w in ipairs(warned) do print("  " .. w) end
      local all = table.concat(warned, "\n")
      assert.is_true(#warned >= 1, "no warning")
      has(all, unpack(case[3]))
    end)
  end
  it("a chamber wall as robot:box makes it, and turned with its offsets, is not warned of", function()
    local r, _, wall = chambered()
    assert.are.same({}, robot.warnings_of(r.chamber, r, { wall = wall }))
    local r2, _, wall2 = chambered()
    for i, N in ipairs(wall2.normal) do wall2.normal[i] = { N[2], -N[1] } end
    for i, o in ipairs(wall2.offset) do wall2.offset[i] = { o[2], -o[1] } end
    assert.are.same({}, robot.warnings_of(r2.chamber, r2, { wall = wall2 }))
  end)
  it("a world whose actuators all drive particles is not warned of", function()
    local w, s = world4(1)
    assert.are.same({}, robot.warnings_of(w.step, w, s))
  end)
  it("design:actuators' world (n_actuators set by robot:world, act_id by the layout) is not warned of", function()
    local r = robot2()
    local w, s = r:world { res = 64, dt = 1e-4, n_actuators = 16 }
    local d = cq.design { world = w }
    d:actuators { state = s, radius = 0.02, outputs = 2 }
    assert.are.same({}, robot.warnings_of(w.step, w, s))
  end)
end)

describe("a call that fails leaves its object as it was", function()
  local function snapshot(r)
    local acts, owned = #r.actuators, 0
    for _ in pairs(r.act_of) do owned = owned + 1 end
    return { particles = #r.x, groups = #r.groups, actuators = acts, owned = owned }
  end
  it("robot:pressure_actuator with a bad second group adds no actuator and claims no particle", function()
    local r, g = robot2()
    local before = snapshot(r)
    err_of(r.pressure_actuator, r, { groups = { g, 5 } })
    assert.are.same(before, snapshot(r))
    local sub = r:select { group = g, where = function(_, p) return p <= 2 end }
    r:pressure_actuator { groups = { sub } }
    local b2 = snapshot(r)
    err_of(r.pressure_actuator, r, { groups = { g } }) -- particle 1 is taken: none of g is claimed
    assert.are.same(b2, snapshot(r))
    assert.are.equal(2, r:pressure_actuator { groups = { r:select { group = g, where = function(_, p) return p > 2 end } } })
  end)
  it("robot:chamber with a bad normal adds no actuator", function()
    local r, _, wall = chambered()
    local before = snapshot(r)
    local normal = wall.normal[3]
    wall.normal[3] = { 0, 2 }
    err_of(r.chamber, r, { wall = wall })
    assert.are.same(before, snapshot(r))
    wall.normal[3] = normal
    assert.are.equal(1, r:chamber { wall = wall })
  end)
  it("robot:box / ball / image / mesh refused add no particle or group", function()
    local r = robot2()
    local before = snapshot(r)
    err_of(r.box, r, { offset = { 0, 0 }, size = { 0.1, 0.1 }, material = { E = -1 } })
    err_of(r.box, r, { offset = { 0, 0 }, size = { 0.1, 0.1 }, name = 5 })
    err_of(r.ball, r, { center = { 0.5, 0.5 }, radius = 0.1, cavities = { { center = { 0.9, 0.9 }, radius = 0.05 } } })
    err_of(r.image, r, { path = png_ok, scale = 0.01, offset = { 0, 0 }, palette = { { 0, 0, 0 } } })
    assert.are.same(before, snapshot(r))
  end)
  it("world:fill refused midway writes nothing", function()
    local w = cq.world { n = 3, n_actuators = 1 }
    err_of(w.fill, w, "act_id", { 0, 0, 0.5 })
    err_of(w.fill, w, "E", { 5, 6, "x" })
    err_of(w.fill, w, "act_axis", function(p) return p < 3 and { 1, 0 } or { 1 } end)
    for p = 0, 2 do
      assert.are.equal(-1, w.params.act_id[p])
      assert.are.equal(10, w.params.E[p])
      assert.are.equal(0, w.params.act_axis[p])
    end
  end)
  it("design:variable refused registers no variable; design:apply refused writes no parameter", function()
    local d, w, s = designed()
    err_of(d.variable, d, { field = "density", init = -1 })
    assert.are.equal(0, #d.params)
    assert.is_nil(d.variables.density)
    local rho = d:variable { field = "density" }
    local E = d:variable { field = "E", init = 2 }
    rho.v[0] = -1
    err_of(d.apply, d, s)
    assert.are.equal(10, w.params.E[0]) -- the E variable ran before the refusal, yet nothing was written
    rho.v[0] = 1
    d:apply(s)
    assert.are.equal(20, w.params.E[0])
    assert.are.equal(E, d.variables.E)
  end)
end)

describe("robot:chamber keeps a copy of its wall", function()
  -- issue 64 finding 4: the offset vectors were kept by reference, so edits after the call reached the world
  it("edits of the wall's offsets, normals and areas after the call do not reach the world", function()
    local function params(edit)
      local r, _, wall = chambered()
      r:chamber { wall = wall }
      local p = wall.particles[1]
      if edit then
        wall.offset[1][1], wall.offset[1][2] = 99, 99
        wall.normal[1][1], wall.normal[1][2] = 0, 1
        wall.area[1], wall.particles[1] = 5, wall.particles[2]
      end
      local w = r:world { res = 64, dt = 1e-4 }
      local n = w.n
      return { w.params.wall_offset[p - 1], w.params.wall_offset[n + p - 1], w.params.act_axis[p - 1],
        w.params.act_axis[n + p - 1], w.params.wall_area[p - 1], w.params.act_id[p - 1] }
    end
    local kept, edited = params(false), params(true)
    print(string.format("  particle 1 of the wall: offset (%g, %g), axis (%g, %g), area %g, act_id %d", unpack(kept)))
    assert.are.same(kept, edited)
    assert.is_true(kept[1] ~= 0 or kept[2] ~= 0) -- the wall has offsets
  end)
end)

it("the campaign holds at least 80 cases", function()
  print(string.format("  %d error cases, %d warning cases", #CASES, #WARNINGS))
  assert.is_true(#CASES + #WARNINGS >= 80)
end)
