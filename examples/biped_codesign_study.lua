-- Seed 000 sec. 5.3.2 (Fig. 11) as a parameter study: the 2D biped (examples/biped_codesign.lua) with every
-- combination of Young's modulus, Poisson's ratio and density co-designed or fixed (8 combinations), each trained
-- from several controller seeds; the metric is the distance the best iterate walks in 4 s.
--   cqlua study run examples/biped_codesign_study.lua --jobs 2      (locally; rerun to resume)
--   cqlua study slurm examples/biped_codesign_study.lua --time=30   (the same rows as a SLURM job array)
--   cqlua study collect examples/biped_codesign_study.lua           (results.csv, walked.png, summary by combination)
-- Environment: CQ_BIPED_ITERATIONS (100) and CQ_BIPED_SEEDS (3: seeds 1..3) size the study; CQ_BIPED_FIRST_SEED (1)
-- starts the seeds later, to grow a study whose first rows were collected elsewhere by the same build (a row's hash
-- covers its iterations and seed, so a grown study reuses every row it already has).
-- Usage: cqlua study run examples/biped_codesign_study.lua [--jobs N]; run by itself it takes no keys
--   (`cqlua examples/biped_codesign_study.lua --help` says so).
local study = require "cq.study"
-- Run as the script itself (not loaded by `cqlua study`, whose command line is its own): --help, and no keys.
local me = debug.getinfo(1, "S").source:match("([^/@]+)$")
if arg and type(arg[0]) == "string" and arg[0]:match("([^/]+)$") == me then
  require("cq.args")(arg, { name = "examples/biped_codesign_study.lua",
    about = "Seed 000 sec. 5.3.2 (Fig. 11) as a parameter study of examples/biped_codesign.lua: the 8 combinations " ..
      "of E, nu and density co-designed or fixed, each from several seeds. It takes no keys: run it with `cqlua " ..
      "study run|slurm|collect examples/biped_codesign_study.lua`, sized by the environment (CQ_BIPED_ITERATIONS, " ..
      "default 100; CQ_BIPED_SEEDS, 3; CQ_BIPED_FIRST_SEED, 1).",
    example = "CQ_BIPED_SEEDS=2 cqlua study run examples/biped_codesign_study.lua --jobs 2",
  })
end
local iterations = tonumber(os.getenv("CQ_BIPED_ITERATIONS") or "") or 100
local seeds = {}
for s = tonumber(os.getenv("CQ_BIPED_FIRST_SEED") or "") or 1, tonumber(os.getenv("CQ_BIPED_SEEDS") or "") or 3 do
  seeds[#seeds + 1] = s
end

return study.define {
  name = "biped_codesign",
  -- seed first: the rows of one seed (all 8 combinations) run together, so a study stopped part way holds whole
  -- replicates (the order of the rows is not part of their hashes)
  space = study.grid { { "seed", seeds }, { "E", { false, true } }, { "nu", { false, true } },
    { "density", { false, true } } },
  script = "biped_codesign.lua",
  depends = { "../scenes/biped2d.lua" },
  args = function(row)
    local on = {}
    for _, m in ipairs { "E", "nu", "density" } do if row[m] then on[#on + 1] = m end end
    return { iterations, row.seed, #on > 0 and table.concat(on, ",") or "none" }
  end,
  metrics = { "walked", "best_iteration" },
  best = "walked", goal = "max",
  by = { "E", "nu", "density" },
}
