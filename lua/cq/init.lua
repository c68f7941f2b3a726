-- The cq package: a differentiable MLS-MPM engine for soft robots. Every object is made by one constructor,
-- cq.<name>{options}: cq.world, cq.robot, cq.rollout, cq.design, cq.trajectory, cq.mlp, cq.open_loop, cq.sine,
-- cq.centroid_observer, cq.tape, cq.param, cq.adam, cq.sgd, cq.nlopt, cq.keep_best, cq.log, cq.train. Functions:
-- cq.save, cq.load, cq.plot (draws CSV logs); collections stay namespaced: cq.objectives, cq.frames, cq.export,
-- cq.json. Each lives in its own module (cq/<module>.lua), loaded on first use.

local M = {}


--- The engine's field tables (engine/core/fields.h) of a precision's library: state, param and control fields, each
--- {name, type, shape, shape_name, diff, doc, range, default}.
function M.fields(precision)
  local registry = require "cq._registry"
  local lib = require("cq._ffi").lib(precision or "f64")
  return { state = registry.fields(lib, "state"), param = registry.fields(lib, "param"),
    control = registry.fields(lib, "control") }
end

-- Constructors, classes, registries and collections, loaded on first use: `require "cq"` itself loads no engine
-- library.
local lazy = {
  -- the release (the Makefile's VERSION, through the engine library)
  _VERSION = function() return require("ffi").string(require("cq._ffi").tables_lib().cq_version()) end,
  world = function() return require("cq.world").new end,
  World = function() return require("cq.world").World end,
  State = function() return require("cq.state").State end,
  Memo = function() return require("cq.memo").Memo end,
  -- the engine's registries as name -> id tables (engine/core/registry.h)
  BC = function() local r = require "cq._registry"; return r.ids(r.BC) end,
  MATERIAL = function() local r = require "cq._registry"; return r.ids(r.MATERIAL) end,
  ACTUATOR = function() local r = require "cq._registry"; return r.ids(r.ACTUATOR) end,
  INTEGRATOR = function() local r = require "cq._registry"; return r.ids(r.INTEGRATOR) end,
  robot = function() return require("cq.robot").new end,
  rollout = function() return require("cq.rollout").new end,
  design = function() return require("cq.design").new end,
  trajectory = function() return require("cq.trajectory").new end,
  tape = function() return require("cq.tape").new end,
  param = function() return require("cq.tape").param_opts end,
  mlp = function() return require("cq.control").mlp end,
  open_loop = function() return require("cq.control").open_loop end,
  sine = function() return require("cq.control").sine end,
  pulses = function() return require("cq.control").pulses end,
  augmented_lagrangian = function() return require("cq.auglag").run end,
  centroid_observer = function() return require("cq.control").centroid_observer end,
  kmeans_groups = function() return require("cq.control").kmeans_groups end,
  adam = function() return require("cq.optim").adam end,
  sgd = function() return require("cq.optim").sgd end,
  keep_best = function() return require("cq.optim").keep_best end,
  nlopt = function() return require("cq.nlopt").new end,
  log = function() return require("cq.log").new end,
  train = function() return require("cq.train").train end,
  save = function() return require("cq.save").save end,
  load = function() return require("cq.save").load end,
  json = function() return require "cq.json" end,
  grad_norm = function() return require("cq.log").grad_norm end,
  objectives = function() return require "cq.objectives" end,
  frames = function() return require "cq.frames" end,
  export = function() return require "cq.export" end,
  plot = function() return require("cq.plot").plot end,
  study = function() return require "cq.study" end,
  -- a script's key=value arguments, checked, with --help (cq/args.lua)
  args = function() return require "cq.args" end,
}
setmetatable(M, { __index = function(t, k)
  local f = lazy[k]
  if f then local v = f(); rawset(t, k, v); return v end
end })

return M
