-- tools/bitcheck.lua: fingerprints of CPU results (states, losses and every gradient) on fixed scenes, to show that
-- a restructuring changed no bit. It hashes the exact bit patterns (FNV-1a 64) of every number.
--
-- usage: cqlua tools/bitcheck.lua save FILE      write the fingerprints of this build to FILE
--        cqlua tools/bitcheck.lua compare FILE   compare this build against FILE; exit 1 on any difference
--
-- References (tools/bitcheck/): ref-<commit>.txt from the default build, ref-<commit>-exact.txt from a build without
-- fused multiply-adds, which fixes every result by the order of operations in the source:
--   make BUILD=build-exact FP_CONTRACT=off NVCC= && build-exact/bin/cqlua tools/bitcheck.lua compare \
--     tools/bitcheck/ref-b6e6b01-exact.txt
-- With contraction on (-ffp-contract=fast), GCC decides which a*b + c to fuse after inlining, so moving a formula
-- into its own function can change the last bits of a result without changing the math.
--
-- Scenes: the walker2d scene (300 steps of the diffmpm walker, f32 and f64, forward + backward through a memo),
-- the FD gradient matrix of tests/gradient_spec.lua (2D/3D x 3 materials x 5 walls, 100 steps, every gradient
-- kind), a control case with a cable, a user force and a user stress, and the physics terms and implicit solves
-- (terms below). Results depend on the compiler and
-- -march, so compare builds made on the same machine.
package.path = "./?.lua;" .. package.path
local ffi = require "ffi"
local cq = require "cq"
local G = require "tests._grad"

-- Builds before the issue-8 restructuring named the actuator count `actuators`.
local function world(opts)
  if not cq.INTEGRATOR then opts.actuators, opts.n_actuators = opts.n_actuators, nil end
  return cq.world(opts)
end

local mode, file = arg[1], arg[2]
if (mode ~= "save" and mode ~= "compare") or not file then
  io.stderr:write("usage: cqlua tools/bitcheck.lua save|compare FILE\n")
  os.exit(2)
end

-- FNV-1a over the 8 bytes of each double.
local Hash = {}
Hash.__index = Hash
local PRIME, box = 1099511628211ULL, ffi.new("union { double d; uint8_t b[8]; }")
local function hasher() return setmetatable({ h = 14695981039346656037ULL, count = 0 }, Hash) end
function Hash:add(x)
  box.d = x
  local h = self.h
  for i = 0, 7 do h = bit.bxor(h, box.b[i]) * PRIME end
  self.h, self.count = h, self.count + 1
end
function Hash:array(a, len) for i = 0, len - 1 do self:add(a[i]) end end
function Hash:hex() return bit.tohex(self.h, 16) end

local results, order = {}, {}
local function record(name, h)
  results[name] = string.format("%s %d", h:hex(), h.count)
  order[#order + 1] = name
end

-- Every state field of a state view into h.
local function state_into(h, s, w)
  for _, f in ipairs { "x", "v", "C", "F" } do
    h:array(s[f], (f == "x" or f == "v") and w.dim * w.n or w.dim * w.dim * w.n)
  end
end

---------------------------------------------------------------- walker2d scene, 300 steps
local function walker(precision)
  local dx, steps = 1 / 128, 300
  local pts, act = {}, {}
  local function rect(x, y, wd, ht, a)
    local nw, nh = math.floor(wd / dx) * 2, math.floor(ht / dx) * 2
    for i = 0, nw - 1 do for j = 0, nh - 1 do
      pts[#pts + 1] = { 0.1 + x + (i + 0.5) * wd / nw, 0.03 + y + (j + 0.5) * ht / nh }
      act[#act + 1] = a
    end end
  end
  rect(0.0, 0.1, 0.3, 0.1, -1)
  for k, x in ipairs { 0.0, 0.05, 0.2, 0.25 } do rect(x, 0.0, 0.05, 0.1, k - 1) end
  local world = world { dim = 2, res = { 128, 128 }, dx = dx, dt = 1e-3, gravity = { 0, -3.8 }, n = #pts,
    n_actuators = 4, precision = precision, threads = 2, backend = "cpu",
    walls = { all = { type = "friction", friction = math.huge, thickness = 3 } } }
  world:fill("material", "corotated")
  world:fill_lame(10, 10)
  world:fill("act_axis", { 0, 4 })
  world:fill("act_id", function(p) return act[p] end)
  world:commit()
  local s0 = world:state()
  for p, x in ipairs(pts) do s0:set("x", p, x) end
  local memo = world:memo { steps = steps }
  memo:begin(s0)
  for k = 0, steps - 1 do
    local u = {}
    for i = 1, 4 do u[i] = math.tanh(0.8 * math.sin(20 * k * 1e-3 + i)) end
    memo:step(u)
  end
  local h = hasher()
  state_into(h, memo.state, world)
  record("walker2d " .. precision .. " final state", h)
  local n = world.n
  memo:backward(function(k, m)
    if k == steps then for p = 0, n - 1 do m.grad.x[p] = m.grad.x[p] - 1 / n end end
  end)
  h = hasher()
  state_into(h, memo.grad, world)
  for k = 1, steps do for i = 1, 4 do h:add(memo:grad_u(k, i)) end end
  for _, f in ipairs { "mass", "vol0", "E", "nu" } do h:array(memo.grad_params[f], n) end
  record("walker2d " .. precision .. " gradients", h)
end

---------------------------------------------------------------- gradient matrix
local function matrix()
  local materials = { { "corotated", 0 }, { "neohookean", 0 }, { "neohookean", 2 } }
  for _, dim in ipairs { 2, 3 } do
    for _, mat in ipairs(materials) do
      for _, bc in ipairs { "sticky", "slip", "separate", "friction", "moving" } do
        local w, s0 = G.scene { dim = dim, material = mat[1], inc_p = mat[2],
          bc = bc == "moving" and "friction" or bc, moving = bc == "moving" }
        local P = G.problem(w, s0, 100)
        local h = hasher()
        h:add(P.loss())
        state_into(h, P.memo.state, w)
        local g = P.backward()
        for _, kind in ipairs { "x", "v", "C", "F", "mass", "vol0", "E", "nu" } do
          for i = 0, #g[kind] do h:add(g[kind][i]) end
        end
        for k = 1, 100 do h:add(g.act[k][1]); h:add(g.act[k][2]) end
        record(string.format("matrix %dD %s%s %s", dim, mat[1], mat[2] > 0 and "+inc" or "", bc), h)
      end
    end
  end
end

---------------------------------------------------------------- cable, user force and user stress
local function controls()
  local w = world { dim = 2, res = { 24, 24 }, dx = 1 / 20, dt = 2e-3, gravity = { 0, -5 }, n = 64, n_actuators = 2,
    threads = 2, backend = "cpu", walls = { all = { type = "slip", thickness = 2 } } }
  w:fill("E", function(p) return 40 * (1 + 0.2 * G.prand(p, 1)) end)
  w:fill("act_id", function(p) return p % 2 == 0 and 0 or -1 end)
  w:fill("act_axis", { 1, 0.5 })
  w:set_actuator(1, "stress")
  w:set_actuator(2, "cable")
  w:add_cable(2, { 1, 9, 17, 25, 33 }, 30, 0.3)
  if w.enable_user_forces then w:enable_user_forces() end -- needed by builds before the issue-8 restructuring
  w:commit()
  local s0 = w:state()
  for p = 1, 64 do
    local i, j = (p - 1) % 8, math.floor((p - 1) / 8)
    s0:set("x", p, { 0.35 + i * 0.04 + 0.003 * G.prand(p, 2), 0.35 + j * 0.04 })
    s0:set("v", p, { 0.3 * G.prand(p, 3), 0.3 * G.prand(p, 4) })
  end
  local steps, n = 40, 64
  local memo = w:memo { steps = steps, checkpoint_every = 7 }
  memo:begin(s0)
  local force, stress = ffi.new("double[?]", 2 * n), ffi.new("double[?]", 4 * n)
  for k = 1, steps do
    for i = 0, 2 * n - 1 do force[i] = 0.5 * G.prand(i + 100 * k, 5) end
    for i = 0, 4 * n - 1 do stress[i] = 3 * G.prand(i + 100 * k, 6) end
    memo:step({ 0.5 * math.sin(0.2 * k), 0.8 + 0.1 * math.cos(0.3 * k) }, force, k % 3 ~= 0 and stress or nil)
  end
  local h = hasher()
  state_into(h, memo.state, w)
  local gf, gs = hasher(), hasher()
  memo:backward(function(k, m)
    if k == steps then for i = 0, 2 * n - 1 do m.grad.x[i] = m.grad.x[i] + G.prand(i, 7) end end
    if k < steps then
      gf:array(m.grad_force, 2 * n)
      gs:array(m.grad_stress, 4 * n)
    end
  end)
  state_into(h, memo.grad, w)
  for k = 1, steps do h:add(memo:grad_u(k, 1)); h:add(memo:grad_u(k, 2)) end
  for _, f in ipairs { "mass", "vol0", "E", "nu" } do h:array(memo.grad_params[f], n) end
  record("controls state and gradients", h)
  record("controls user force gradients", gf)
  record("controls user stress gradients", gs)
end

---------------------------------------------------------------- physics terms, implicit solve, chamber pressure
-- The averaged volumetric term and the grid fluid (engine/terms/) with both integrators, the implicit solve's
-- preconditioners (masses, factor; the 2D fixed groups' wide blocks, the fill's augmented matrix and active-set
-- rounds) and the implicit chamber pressure (BiCGStab): loss, final state, every gradient kind and the solver counts.
local function terms()
  local MR = { c10 = 375, c01 = 150, bulk = 9e4 }
  local tight, mass = { tol = 1e-12 }, { tol = 1e-12, precond = "mass" }
  local cases = {
    { "averaged implicit mass", { dim = 2, bc = "friction", material = "mooney_rivlin", params = MR,
      volumetric = "averaged", integrator = "implicit", E = 3000, dt = 5e-3, implicit = mass, steps = 5 } },
    { "averaged implicit factor", { dim = 2, bc = "friction", material = "mooney_rivlin", params = MR,
      volumetric = "averaged", integrator = "implicit", E = 3000, dt = 5e-3, implicit = tight, steps = 5 } },
    { "averaged fixed groups implicit 2D", { dim = 2, bc = "friction", material = "mooney_rivlin", params = MR,
      volumetric = "averaged", volumetric_groups = "initial", volumetric_own = 16, integrator = "implicit", E = 3000,
      dt = 5e-3, implicit = tight, steps = 5 } },
    { "averaged fixed groups implicit 3D", { dim = 3, bc = "friction", material = "mooney_rivlin",
      params = { c10 = 4, c01 = 1.5, bulk = 300 }, volumetric = "averaged", volumetric_groups = "initial",
      integrator = "implicit", E = 30, dt = 5e-3, implicit = tight, steps = 3 } },
    { "averaged fixed groups explicit 2D", { dim = 2, bc = "slip", material = "neohookean", volumetric = "averaged",
      volumetric_groups = "initial", steps = 30 } },
    { "averaged explicit 3D", { dim = 3, bc = "slip", material = "mooney_rivlin",
      params = { c10 = 4, c01 = 1.5, bulk = 150 }, volumetric = "averaged", steps = 30 } },
    -- the default (volumetric = "solids": fixed groups, own share 16) on a nearly incompressible solid
    { "solids default implicit 2D", { dim = 2, bc = "friction", material = "mooney_rivlin", params = MR,
      integrator = "implicit", E = 3000, dt = 5e-3, implicit = tight, steps = 5 } },
    { "solids default explicit 3D", { dim = 3, bc = "slip", material = "mooney_rivlin",
      params = { c10 = 4, c01 = 1.5, bulk = 300 }, steps = 30 } },
    { "fill explicit", { dim = 2, bc = "slip", material = "fluid", params = { bulk = 35, visc = 0.15 },
      fluid = "grid", steps = 30 } },
    { "fill implicit factor", { dim = 2, bc = "slip", material = "fluid", params = { bulk = 3000, visc = 0.05 },
      fluid = "grid", integrator = "implicit", E = 3000, dt = 5e-3, implicit = tight, steps = 5 } },
    { "fill implicit mass", { dim = 2, bc = "slip", material = "fluid", params = { bulk = 3000, visc = 0.05 },
      fluid = "grid", integrator = "implicit", E = 3000, dt = 5e-3, implicit = mass, steps = 5 } },
    { "fill implicit 3D", { dim = 3, bc = "slip", material = "fluid", params = { bulk = 300, visc = 0.05 },
      fluid = "grid", integrator = "implicit", E = 30, dt = 5e-3, implicit = { tol = 1e-10 }, steps = 3 } },
    { "chamber implicit pressure", { dim = 2, bc = "friction", moving = true, act2 = "chamber", strain = 0.1,
      integrator = "implicit", E = 3000, dt = 5e-3, implicit = { tol = 1e-12, precond = "mass", pressure = "implicit" },
      steps = 5 } },
    { "cavity explicit", { dim = 2, bc = "friction", act2 = "cavity", strain = 0.05, steps = 30 } },
    { "cavity implicit", { dim = 2, bc = "friction", act2 = "cavity", strain = 0.1, integrator = "implicit", E = 3000,
      dt = 5e-3, implicit = tight, steps = 5 } },
    { "implicit factor", { dim = 2, bc = "friction", integrator = "implicit", E = 3000, dt = 5e-3, implicit = tight,
      steps = 5 } },
  }
  for _, case in ipairs(cases) do
    local o = case[2]
    local w, s0 = G.scene(o)
    local P = G.problem(w, s0, o.steps)
    local h = hasher()
    h:add(P.loss())
    state_into(h, P.memo.state, w)
    local g = P.backward()
    local kinds = {}
    for kind, a in pairs(g) do if type(a) == "table" and type(a[0]) == "number" then kinds[#kinds + 1] = kind end end
    table.sort(kinds)
    for _, kind in ipairs(kinds) do for i = 0, #g[kind] do h:add(g[kind][i]) end end
    local st = w:solver_stats()
    for _, f in ipairs { "newton", "cg", "adjoint_cg", "factorizations", "fill_rounds", "halvings" } do
      h:add(tonumber(st[f]) or 0)
    end
    record("terms " .. case[1], h)
  end
end

walker("f32")
walker("f64")
matrix()
controls()
if cq.INTEGRATOR and cq.INTEGRATOR.implicit then terms() end -- builds before the implicit integrator have none

if mode == "save" then
  local f = assert(io.open(file, "w"))
  f:write("# tools/bitcheck.lua fingerprints: FNV-1a 64 of the bits, number of values\n")
  for _, name in ipairs(order) do f:write(name, " = ", results[name], "\n") end
  f:close()
  print(string.format("bitcheck: %d fingerprints written to %s", #order, file))
else
  local ref = {}
  for line in io.lines(file) do
    local name, value = line:match("^(.-) = (.*)$")
    if name then ref[name] = value end
  end
  local bad, new = 0, 0
  for _, name in ipairs(order) do
    local same = ref[name] == results[name]
    if ref[name] == nil then new = new + 1 elseif not same then bad = bad + 1 end
    print(string.format("%-4s %-40s %s%s", same and "same" or ref[name] == nil and "new" or "DIFF", name,
      results[name], (same or ref[name] == nil) and "" or ("  (reference " .. tostring(ref[name]) .. ")")))
  end
  print(string.format("bitcheck: %d of %d fingerprints identical%s", #order - bad - new, #order - new,
    new > 0 and string.format(" (%d not in the reference, which is older)", new) or ""))
  os.exit(bad == 0 and 0 or 1)
end
