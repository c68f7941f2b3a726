-- tools/gpu_sanitize.lua [backend]: the CUDA scenes that tools/gpu_check.sh runs under compute-sanitizer (memcheck,
-- racecheck), without busted (which does not start under the sanitizer): forward and backward through every kind of
-- stage the backend launches: a chamber, a 3D hyperelastic scene in f64, cables, the implicit integrator, a
-- checkpointed recording, the averaged bulk term with a cavity, the implicit solve with the pressure inside it, and
-- the mass moments of t:spin / t:mass_centroid (their block reduction and adjoint).
-- It checks nothing itself (tests/gpu_spec.lua compares with the CPU); the sanitizer reports.
if os.getenv("SANITIZE_JIT_OFF") then jit.off() end -- see tools/gpu_check.sh
package.path = "./?.lua;" .. package.path
local G = require "tests._grad"
local backend, only = arg[1] or "cuda", arg[2] -- only: run the scenes whose name contains it
local scenes = {
  { dim = 2, bc = "friction", precision = "f32", act2 = "chamber", name = "2D f32 neohookean, chamber" },
  { dim = 3, bc = "sticky", material = "mooney_rivlin", params = { c10 = 4, c01 = 1.5, bulk = 40, visc = 0.2 },
    name = "3D f64 mooney_rivlin+visc" },
  { dim = 2, bc = "separate", moving = true, material = "ogden",
    params = { mu1 = 6, alpha1 = 1.3, mu2 = 0.2, alpha2 = 5, mu3 = -1, alpha3 = -2, bulk = 40 }, name = "2D f64 ogden, moving floor" },
  { dim = 2, bc = "friction", cable = true, name = "2D f64 cables" },
  { dim = 2, bc = "friction", moving = true, act2 = "chamber", strain = 0.1, integrator = "implicit", E = 3000, dt = 5e-3,
    implicit = { tol = 1e-12, precond = "mass" }, steps = 3, name = "2D f64 implicit, chamber" },
  { dim = 2, bc = "slip", substeps = 3, dt = 6e-3, checkpoint = 11, name = "2D f64 checkpointed" },
  { dim = 2, bc = "friction", precision = "f32", material = "mooney_rivlin", params = { c10 = 4, c01 = 1.5, bulk = 150 },
    act2 = "cavity", volumetric = "averaged", name = "2D f32 averaged bulk, cavity" },
  { dim = 2, bc = "friction", moving = true, act2 = "cavity", strain = 0.1, integrator = "implicit", E = 3000,
    dt = 5e-3, implicit = { tol = 1e-12, precond = "mass", pressure = "implicit" }, steps = 3,
    name = "2D f64 implicit, cavity in the solve" },
  { dim = 3, bc = "slip", side = 3, material = "mooney_rivlin", params = { c10 = 375, c01 = 150, bulk = 9e4 },
    volumetric = "averaged", integrator = "implicit", E = 3000, dt = 5e-3,
    implicit = { tol = 1e-12, precond = "mass" }, steps = 3, name = "3D f64 implicit, averaged bulk" },
  { dim = 3, bc = "slip", precision = "f32", moments = true, name = "3D f32 mass moments (t:spin, t:mass_centroid)" },
}
local failed = 0
for _, o in ipairs(scenes) do
  if only and not o.name:find(only, 1, true) then goto next end
  io.stderr:write("scene: " .. o.name .. "\n")
  o.backend = backend
  local w, s0 = G.scene(o)
  if o.cable then
    w:set_actuator(2, "cable")
    w:add_cable(2, { 1, 7, 13, 19, 25, 31 }, 400, 0.25)
  end
  local ok, err = xpcall(function()
    if o.moments then -- a rollout whose losses read the engine's mass moments every control step, both ways
      local run = require("cq").rollout { world = w, steps = o.steps or 10,
        final = function(t, st) return t:index(t:mass_centroid(st, "x"), 2) end,
        running = function(t, st) return t:add(t:scale(t:spin(st, 2), 1e-2), t:index(t:mass_centroid(st, "v"), 1)) end }
      local L = run:forward(s0)
      local m = run:backward()
      print(string.format("%-32s loss %.6e  dL/dx[0] %.6e", o.name, L, m.grad.x[0]))
      return
    end
    local P = G.problem(w, s0, o.steps or 20, o.checkpoint)
    local L = P.loss()
    local g = P.backward()
    print(string.format("%-32s loss %.6e  dL/dx[0] %.6e", o.name, L, g.x[0]))
  end, debug.traceback)
  if not ok then
    failed = failed + 1
    print(o.name .. ": " .. tostring(err))
  end
  w:release()
  collectgarbage()
  ::next::
end
os.exit(failed == 0 and 0 or 1)
