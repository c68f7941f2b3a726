-- docs/experiments/cantilever_set.lua (issue 62): does a loaded and unloaded cantilever come back? The cantilever of
-- tests/volumetric_spec.lua (Mooney-Rivlin, shear modulus 6000 Pa, height 1/16 m, dx 1/64, 2 particles per cell and
-- axis, clamped in a sticky left band 3 cells thick, damping 20/s, f64), loaded by gravity 10 as a force for 0.6 s
-- (at once, or ramped over ramp= seconds), then unloaded (at once, or ramped down) and held 1.2 s: the rms and the
-- largest vertical displacement left, against the loaded ones.
-- usage: cqlua docs/experiments/cantilever_set.lua [ratio=1e3] [dt=2e-3] [volumetric=solids]
--          [integrator=implicit|explicit] [substeps=1] [ramp=0] [g=10]
local cq = require "cq"
local ffi = require "ffi"
local o = { ratio = 1e3, dt = 2e-3, volumetric = "solids", integrator = "implicit", g = 10, ramp = 0 }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^([%w_]+)=(.+)$")
  if not k or (o[k] == nil and k ~= "substeps") then error("cantilever_set: unknown argument " .. a, 0) end
  o[k] = tonumber(v) or v
end
local MU, H, DX = 6000, 1 / 16, 1 / 64
local r = cq.robot { dim = 2 }
r:box { offset = { 0.02, 0.5 }, size = { 0.5, H }, spacing = DX / 2,
  material = { model = "mooney_rivlin", c10 = MU / 2, c01 = 0, bulk = o.ratio * MU, density = 1 } }
local w, s = r:world { res = { 64, 64 }, dx = DX, dt = o.dt, gravity = { 0, 0 }, damping = 20, threads = 1,
  walls = { left = { type = "sticky", thickness = 3 } }, substeps = o.substeps, integrator = o.integrator,
  volumetric = o.volumetric, precision = "f64" }
local n = w.n
local x0 = {}
for i = 0, 2 * n - 1 do x0[i] = s.x[i] end
local force = ffi.new("double[?]", 2 * n)
local function load(f) for p = 0, n - 1 do force[n + p] = -w.params.mass[p] * o.g * f end end
-- the rms displacement of every particle and the largest vertical one
local function displacement()
  local rms, mx = 0, 0
  for p = 0, n - 1 do
    local ux, uy = s.x[p] - x0[p], s.x[n + p] - x0[n + p]
    rms, mx = rms + (ux * ux + uy * uy) / n, math.max(mx, math.abs(uy))
  end
  return math.sqrt(rms), mx
end
local steps = math.floor(0.6 / o.dt + 0.5)
for k = 1, steps do
  load(o.ramp > 0 and math.min(1, k * o.dt / o.ramp) or 1)
  w:step(s, nil, force)
end
local lr, lm = displacement()
for k = 1, 2 * steps do
  load(o.ramp > 0 and math.max(0, 1 - k * o.dt / o.ramp) or 0)
  w:step(s, nil, force)
end
local ur, um = displacement()
print(string.format("%s, bulk / shear %g, %s dt %g, ramp %g s: loaded rms %.4f mm, largest sag %.4f mm; left after " ..
  "unloading: rms %.4f mm (%.2f %%), largest %.4f mm (%.2f %%)", o.volumetric, o.ratio, o.integrator, o.dt, o.ramp,
  lr * 1e3, lm * 1e3, ur * 1e3, 100 * ur / lr, um * 1e3, 100 * um / lm))
