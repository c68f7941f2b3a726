-- The GPU tools' scenes (tools/gpu_prof.lua, tools/gpu_small.lua, tools/gpu_timeline.lua): a 3D neohookean cube of
-- per^3 particles 0.5 dx apart in a 128^3 grid (per = 80: the 512k cube of tools/bench.lua), and the 2D 6.4k block
-- of tools/bench.lua, in f32. Asserts nothing.
local cq = require "cq"

local M = {}

--- The cube: opts.per (80), opts.substeps (1), opts.backend ("cuda"), opts.floor ("slip"; gpu_prof: friction).
function M.cube(opts)
  local per, dx = opts.per or 80, 1 / 128
  local n = per ^ 3
  local walls = { all = { type = "slip" } }
  if opts.floor == "friction" then walls.floor = { type = "friction", friction = 0.5 } end
  local w = cq.world { dim = 3, res = { 128, 128, 128 }, dx = dx, dt = 1e-3, substeps = opts.substeps or 1,
    gravity = { 0, -9.8, 0 }, n = n, precision = "f32", backend = opts.backend or "cuda", walls = walls }
  local h = dx / 2
  w:fill("vol0", h ^ 3); w:fill("mass", h ^ 3 * 1000); w:fill("E", 1e4); w:fill("nu", 0.3)
  w:fill("material", "neohookean")
  w:commit()
  local s = w:state()
  local x, p, o = s.x, 0, 0.5 - per * h / 2
  for i = 0, per - 1 do for j = 0, per - 1 do for k = 0, per - 1 do
    x[p], x[n + p], x[2 * n + p] = o + (i + 0.5) * h, 0.1 + (j + 0.5) * h, o + (k + 0.5) * h
    p = p + 1
  end end end
  return w, s
end

--- The 2D block: 80 x 80 particles, 10 substeps per control step, on backend ("cuda").
function M.block2d(backend)
  local n, dx = 6400, 1 / 128
  local w = cq.world { dim = 2, res = { 128, 128 }, dx = dx, dt = 1e-3, substeps = 10, gravity = { 0, -9.8 }, n = n,
    precision = "f32", backend = backend or "cuda", walls = { all = { type = "slip" } } }
  local h = dx / 2
  w:fill("vol0", h * h); w:fill("mass", h * h * 1000); w:fill("E", 1e4); w:fill("nu", 0.3)
  w:commit()
  local s = w:state()
  for p = 0, n - 1 do s.x[p], s.x[n + p] = 0.3 + (p % 80 + 0.5) * h, 0.1 + (math.floor(p / 80) + 0.5) * h end
  return w, s
end

return M
