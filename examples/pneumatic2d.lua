-- The soft-pneumatic quick start (docs/pneumatic.md): a Gmsh drawing of a pneumatic finger (scenes/finger2d.geo, the
-- longitudinal section of seed 003's PneuNet finger) in DragonSkin-30 silicone, hanging from a clamp at its base as
-- in the seed's experiment, swept over chamber pressures, then its material identified from the swept tip positions. Every physics option is the
-- engine's default: the real bulk modulus (1.75 GPa, 3.6e4 x the shear modulus) without locking, the implicit
-- integrator at 1 ms steps; what is set is what the paper sets (geometry, material, pressure, gravity, damping, dt).
--
-- Usage: cqlua examples/pneumatic2d.lua [pressures_kPa=0,0.5,1,1.5] [evaluations=10] [mesh_mm=2] [hold_s=0.3]
--          [dx_mm=2.5] [ramp_s=0.1] [gravity_ramp_s=0]   (--help: every key and its meaning)
-- dx_mm: the grid's cell (the clamp kept at the drawing's first 3.5 mm, the grid's size and the finger's place kept);
-- at 2.5 mm the walls are 0.8 cells and the tips 23-24 % short of the finite-element reference, at 0.625 mm with
-- mesh_mm = 0.25 (4 particles per cell and axis) within 4 % at 1.5-8 kPa with ramp_s = 0.5 and gravity_ramp_s = 0.3
-- (docs/pneumatic.md, "How right the numbers are"; mesh 0.5 is warned of there: 2 per cell and axis).
-- ramp_s: the pressure's ramp; gravity_ramp_s > 0: gravity as a force on every particle ramped in over that time
-- (0: the world's gravity from the start).
-- Writes out/pneumatic2d.csv (pressure, tip displacement) and out/pneumatic2d.png, and out/pneumatic2d_fit.csv (the
-- identification's evaluations).
local cq = require "cq"

local A = cq.args(arg, { name = "examples/pneumatic2d.lua",
  about = "The soft-pneumatic quick start: seed 003's 2D finger section hanging from a clamp, swept over chamber " ..
    "pressures, then its silicone's c01 identified from the swept tips (L-BFGS).",
  example = "cqlua examples/pneumatic2d.lua pressures_kPa=1 evaluations=4 hold_s=0.1",
  { "pressures_kPa", "0,0.5,1,1.5", "the swept chamber pressures (kPa), comma-separated" },
  { "evaluations", 10, "L-BFGS evaluations of the identification", min = 1, integer = true },
  { "mesh_mm", 2, "gmsh's element size (mm): one particle per triangle", min = 0 },
  { "hold_s", 0.3, "time held at each pressure after its ramp (s)", min = 0 },
  { "dx_mm", 2.5, "the grid's cell (mm)", min = 0 },
  { "ramp_s", 0.1, "the pressure's ramp (s)", min = 0 },
  { "gravity_ramp_s", 0, "> 0: gravity as a force ramped in over that time (s); 0: the world's gravity from the " ..
    "start", min = 0 },
})
local PRESSURES = {}
for v in A.pressures_kPa:gmatch("[^,]+") do PRESSURES[#PRESSURES + 1] = tonumber(v) end
local EVALS, MESH, HOLD = A.evaluations, A.mesh_mm, A.hold_s
local DXMM, RAMP, GRAMP = A.dx_mm, A.ramp_s, A.gravity_ramp_s
local DT, P_MAX = 1e-3, 20e3 -- s, Pa at u = 1
local STEPS = math.floor((RAMP + HOLD) / DT + 0.5)
local C01 = require("cq.materials").presets.dragonskin30.c01 -- the seed's fit (most of its shear modulus 2 (c10 + c01)):
-- the identification starts from twice it

-- 1. The robot: the .geo meshed by gmsh (one particle per triangle, mm scaled to m), its "chamber" curves the
-- pressure's walls. The drawing runs along its x from the base; hung from the ceiling, its x becomes -y and its y +x
-- (positions and the walls' normals alike), so that the base's first 3.5 mm (CLAMP_MM) lie in the top wall's sticky band.
-- The grid: 2.5 mm cells on 48 x 56 by default; a finer dx keeps the grid's size. The sticky top band's nodes hold
-- the drawing's first 3.5 mm at every dx (BAND cells thick, the base CLAMP_MM into it).
local DX, CLAMP_MM = DXMM * 1e-3, 3.5
local RES = { math.floor(48 * 2.5 / DXMM + 0.5), math.floor(56 * 2.5 / DXMM + 0.5) }
local BAND = math.ceil(CLAMP_MM / DXMM + 1.6 - 1e-9) -- 3 at 2.5 mm
local r = cq.robot { dim = 2 }
local finger = r:gmsh { path = "scenes/finger2d.geo", scale = 1e-3, offset = { 0, 0 }, mesh_size = MESH,
  material = { preset = "dragonskin30" } }
local X0, Y0 = 0.06, (RES[2] - BAND + CLAMP_MM / DXMM) * DX -- the layer's side at x = 60 mm; the base 1.6 cells
-- below the top row at 2.5 mm
for _, p in ipairs(finger.particles) do
  local x = r.x[p]
  x[1], x[2] = X0 + x[2], Y0 - x[1]
end
local wall = finger.chambers.chamber
for i, nrm in ipairs(wall.normal) do wall.normal[i] = { nrm[2], -nrm[1] } end
for i, o in ipairs(wall.offset) do wall.offset[i] = { o[2], -o[1] } end -- where on the wall the pressure acts
r:chamber { wall = wall, max = P_MAX }

-- 2. The world: 2.5 mm cells (the chambers span 3 cells, the walls between them about one), the top wall sticky and 3
-- cells thick (the clamp), gravity, damping 25/s (about half critical for the first bending mode, 23 rad/s by the FEM).
local world, s0 = r:world { res = RES, dx = DX, dt = DT, gravity = { 0, GRAMP > 0 and 0 or -9.8 }, damping = 25,
  walls = { top = { type = "sticky", thickness = BAND } }, integrator = "implicit" }

-- The tip: the particles within 3 mm of the finger's free end at rest.
local n, tip, ymin = world.n, {}, math.huge
for p = 0, n - 1 do ymin = math.min(ymin, s0.x[n + p]) end
for p = 0, n - 1 do if s0.x[n + p] < ymin + 3e-3 then tip[#tip + 1] = p + 1 end end

-- 3. One pressure: ramped over RAMP, held to RAMP + HOLD; the tip's mean position at the end (m). A memo records the
-- run, so that its backward gives the gradient of the tip's position with respect to every parameter.
local memo = world:memo { steps = STEPS }
local force = GRAMP > 0 and require("ffi").new("double[?]", 2 * n) or nil -- gravity ramped in
local function settle(kPa)
  memo:begin(s0)
  for k = 1, STEPS do
    if force then
      for p = 0, n - 1 do force[n + p] = -world.params.mass[p] * 9.8 * math.min(1, k * DT / GRAMP) end
    end
    memo:step({ kPa * 1e3 / P_MAX * math.min(1, k * DT / RAMP) }, force)
  end
  return memo.state:mean("x", tip)
end

-- The pressure sweep: tip displacement from the unpressurised (sagging) finger.
local rest = settle(0)
local csv = assert(io.open("out/pneumatic2d.csv", "w"))
csv:write("pressure_kPa,tip_dx_mm,tip_dy_mm,tip_mm\n")
local measured = {}
for _, kPa in ipairs(PRESSURES) do
  local t = settle(kPa)
  measured[kPa] = t
  local dx, dy = (t[1] - rest[1]) * 1e3, (t[2] - rest[2]) * 1e3
  csv:write(string.format("%g,%.5f,%.5f,%.5f\n", kPa, dx, dy, math.sqrt(dx * dx + dy * dy)))
  print(string.format("pneumatic2d: %4.1f kPa: tip moved %7.3f mm (dx %7.3f, dy %7.3f mm)", kPa,
    math.sqrt(dx * dx + dy * dy), dx, dy))
end
csv:close()
cq.plot { csv = "out/pneumatic2d.csv", x = "pressure_kPa", y = { "tip_mm" }, out = "out/pneumatic2d.png",
  title = "pneumatic finger (2D section): tip displacement", xlabel = "chamber pressure (kPa)",
  ylabel = "tip displacement (mm)" }

-- 4. Identification: c01 from the swept tip positions (here the sweep above stands for a measurement), by L-BFGS
-- through the simulation's gradients, from twice the true value. The loss: the squared distances (mm^2) between the
-- simulated and the measured tips over the pressures; its gradient: each pressure's backward, dL/dc01 summed over the
-- particles (every particle has the one c01).
local theta = cq.param { n = 1, init = { 2 } } -- c01 / C01
local function set_c01() world:fill("c01", function() return theta.v[0] * C01 end) end
local fit = assert(io.open("out/pneumatic2d_fit.csv", "w"))
fit:write("evaluation,c01_Pa,loss_mm2\n")
local evals, first_loss = 0, nil
cq.nlopt { algorithm = "lbfgs", params = { theta }, bounds = { [theta] = { 0.3, 3 } }, maxeval = EVALS,
  objective = function(need_grad)
    set_c01()
    local L, g = 0, 0
    for _, kPa in ipairs(PRESSURES) do
      local t, m = settle(kPa), measured[kPa]
      local e = { (t[1] - m[1]) * 1e3, (t[2] - m[2]) * 1e3 }
      L = L + e[1] ^ 2 + e[2] ^ 2
      if need_grad then
        memo:backward(function(k, mm)
          if k == STEPS then -- dL/d(tip position) into each tip particle's x
            for _, p in ipairs(tip) do
              for a = 1, 2 do mm.grad.x[(a - 1) * n + p - 1] = mm.grad.x[(a - 1) * n + p - 1] + 2e3 * e[a] / #tip end
            end
          end
        end)
        for p = 0, n - 1 do g = g + memo.grad_params.c01[p] * C01 end
      end
    end
    theta.g[0] = g
    evals = evals + 1
    first_loss = first_loss or L
    fit:write(string.format("%d,%.6g,%.6g\n", evals, theta.v[0] * C01, L))
    fit:flush()
    print(string.format("pneumatic2d: evaluation %2d: c01 = %8.2f Pa (true %g), loss %.3e mm^2", evals,
      theta.v[0] * C01, C01, L))
    return L
  end }:run()
fit:close()
print(string.format("pneumatic2d: identified c01 = %.2f Pa, %.3f %% from the true %g Pa", theta.v[0] * C01,
  100 * (theta.v[0] - 1), C01))
return { c01 = theta.v[0] * C01, true_c01 = C01, evaluations = evals, first_loss = first_loss }
