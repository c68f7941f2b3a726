-- Seed 000 sec. 5.3.2 (Fig. 11): the 2D biped of scenes/biped2d.lua learns to walk right with its closed-loop MLP
-- controller while, optionally, every particle's Young's modulus, Poisson's ratio and density are co-designed
-- (bounds E in [7, 20], nu in [0.2, 0.4], density in [0.7, 2.0]; initial 10 / 0.3 / 1.0; max chamber pressure 2).
-- One run of examples/biped_codesign_study.lua, which sweeps all 8 combinations over several seeds.
-- Usage: cqlua examples/biped_codesign.lua [iters=60] [seed=1] [materials=E,nu,density | none]
--        [spacing=0.0078125 (1/128)] [lr=1e-2]   (--help: every key and its meaning)
-- Returns { walked, best_iteration, first_walked, materials }: walked is the distance the best iterate's
-- controller and materials walk in 4 s (re-simulated).
local here = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")
package.path = here .. "../scenes/?.lua;" .. package.path -- works from any directory (a study runs it in its row's)
local cq = require "cq"
local biped2d = require "biped2d"

local A = cq.args(arg, { name = "examples/biped_codesign.lua",
  about = "Seed 000 sec. 5.3.2 (Fig. 11), one run: the 2D biped learns to walk with its MLP controller while any of " ..
    "E, nu and density are co-designed per particle.",
  example = "cqlua examples/biped_codesign.lua iters=30 seed=2 materials=E,density",
  { "iters", 60, "Adam iterations", min = 1, integer = true },
  { "seed", 1, "the controller's random seed", integer = true },
  { "materials", "E,nu,density", "the co-designed materials: a comma-separated subset of E,nu,density, or none" },
  { "spacing", 1 / 128, "particle spacing (1/128: 2 particles per cell and axis)", min = 0 },
  { "lr", 1e-2, "Adam's learning rate", min = 0 },
})
local iters, seed, materials, spacing, lr = A.iters, A.seed, A.materials, A.spacing, A.lr

-- The seed's bounds as a factor on the initial value (each design variable is theta with value = base * theta).
local BOUNDS = { E = { 0.7, 2.0 }, nu = { 0.2 / 0.3, 0.4 / 0.3 }, density = { 0.7, 2.0 } }
local b = biped2d.build { spacing = spacing, seed = seed }
local design, on = cq.design { world = b.world }, {}
for name in materials:gmatch("[^,]+") do
  if name ~= "none" then
    if not BOUNDS[name] then error("materials: expected a comma-separated subset of E,nu,density or none, got " .. materials, 0) end
    design:variable { name = name, field = name, per = "particle", bounds = BOUNDS[name] }
    on[#on + 1] = name
  end
end
local run = b.rollout { design = design }
local x0 = b.state:mean("x")[1]
local result = cq.train { rollout = run, state = b.state, iterations = iters, -- checkpointed: a rerun resumes
  name = string.format("biped_codesign_%s_s%d", materials:gsub(",", "_"), seed),
  optimizer = cq.adam { params = run:parameters(), lr = lr, clip_norm = 1 },
  lr_schedule = function(it) return 0.99 ^ (it - 1) end,
  keep_best = true,
  columns = { "distance" }, values = function() return { distance = run.memo.state:mean("x")[1] - x0 } end }
run:forward(b.state) -- the best iterate, re-simulated
local walked = run.memo.state:mean("x")[1] - x0
local out = { walked = walked, best_iteration = result.best.iteration, first_walked = result.log.first.distance,
  materials = #on > 0 and table.concat(on, ",") or "none" }
print(string.format("biped_codesign: materials %s, seed %d: walked %.3f (iteration %d of %d; first %.3f)",
  out.materials, seed, walked, out.best_iteration, iters, out.first_walked))
return out
