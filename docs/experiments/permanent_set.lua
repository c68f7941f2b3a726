-- Issue 62: does a body come back to its rest shape? A free square (0.2 m, Mooney-Rivlin, shear modulus 60 Pa, bulk /
-- shear 1e3, density 1, 2 particles per cell and axis, dx 1/64, no gravity, no walls in reach, damping 20/s, implicit
-- 2 ms, f64) set moving in a pure-shear mode v = a (x - c, -(y - c)); after 1.2 s it has come to rest. An elastic
-- body's particles end where they started, less a translation: the rms of what is left, against the peak
-- displacement of the first 0.2 s, for the default volumetric term and the particle term.
-- Run: cqlua docs/experiments/permanent_set.lua
local cq = require "cq"
local MU, DX = 60, 1 / 64
local function run(volumetric, a)
  local r = cq.robot { dim = 2 }
  local g = r:box { offset = { 0.4, 0.4 }, size = { 0.2, 0.2 }, spacing = DX / 2,
    material = { model = "mooney_rivlin", c10 = MU / 2, c01 = 0, bulk = 1e3 * MU, density = 1 } }
  for _, p in ipairs(g.particles) do
    local x = r.x[p]
    r.v[p] = { a * (x[1] - 0.5), -a * (x[2] - 0.5) }
  end
  local w, s = r:world { res = { 64, 64 }, dx = DX, dt = 2e-3, gravity = { 0, 0 }, damping = 20, threads = 1,
    integrator = "implicit", precision = "f64", volumetric = volumetric }
  local n = w.n
  local x0 = {}
  for i = 0, 2 * n - 1 do x0[i] = s.x[i] end
  local peak = 0
  for k = 1, 600 do
    w:step(s)
    if k <= 100 then
      local d = 0
      for p = 0, n - 1 do d = math.max(d, math.abs(s.x[p] - x0[p])) end
      peak = math.max(peak, d)
    end
  end
  -- remove the mean translation; rms of the rest
  local m = { 0, 0 }
  for a2 = 0, 1 do for p = 0, n - 1 do m[a2 + 1] = m[a2 + 1] + (s.x[a2 * n + p] - x0[a2 * n + p]) / n end end
  local rms = 0
  for a2 = 0, 1 do for p = 0, n - 1 do rms = rms + (s.x[a2 * n + p] - x0[a2 * n + p] - m[a2 + 1]) ^ 2 / n end end
  print(string.format("%-8s a %g: peak displacement %.2f mm; left after 1.2 s: rms %.4f mm (%.2f %% of the peak)",
    volumetric, a, 1e3 * peak, 1e3 * math.sqrt(rms), 100 * math.sqrt(rms) / peak))
end
for _, a in ipairs { 10, 20 } do run("solids", a); run("particle", a) end
