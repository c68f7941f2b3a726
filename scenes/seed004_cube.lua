-- Seed 004's 3D timing scene (issues 12 and 14): a 0.1 m cube of 8,000 particles (0.5 dx apart, dx = 0.01 m)
-- resting on the floor of a 1 m box of 1e6 nodes, E = 0.1 MPa, nu = 0.4, rho = 1000, sticky walls, four stress
-- actuators (particle p drives actuator p mod 4), control steps of 1e-3 s in 10 substeps. Used by tools/bench.lua
-- (the seed's iteration time) and tools/gpu_small.lua. Asserts nothing.
local cq = require "cq"

local M = {}

--- A world and its initial state on backend ("cpu", "cuda", "auto") in precision ("f32", "f64").
function M.build(backend, precision)
  local side, dx = 20, 0.01
  local n = side ^ 3
  local w = cq.world { dim = 3, res = { 100, 100, 100 }, dx = dx, dt = 1e-3, substeps = 10, gravity = { 0, -9.8, 0 },
    n = n, n_actuators = 4, precision = precision, backend = backend, walls = { all = { type = "sticky" } } }
  local h = dx / 2
  w:fill("vol0", h ^ 3); w:fill("mass", h ^ 3 * 1000); w:fill("material", "neohookean")
  w:fill_lame(1e5 / (2 * 1.4), 1e5 * 0.4 / (1.4 * 0.2))
  w:fill("act_axis", { 1, 1, 1 })
  w:fill("act_id", function(p) return (p - 1) % 4 end)
  w:commit()
  local s0 = w:state()
  local x, p = s0.x, 0
  for i = 0, side - 1 do for j = 0, side - 1 do for k = 0, side - 1 do
    x[p], x[n + p], x[2 * n + p] = 0.45 + (i + 0.5) * h, 0.03 + (j + 0.5) * h, 0.45 + (k + 0.5) * h
    p = p + 1
  end end end
  return w, s0
end

return M
