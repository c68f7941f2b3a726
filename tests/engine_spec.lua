-- The engine's structure, checked: FFI declarations generated from engine/core/cq.h match the C structs, memo views stay
-- valid, the object files form layers without a cycle, adding a field is one line of fields.h, and the backend
-- primitives an implicit solver needs compute what they should (tests/c/backend_test.c).
local ffi = require "ffi"
local cq = require "cq"
local shell = require "tests._shell"
local sh = shell.sh
local C = require "cq._ffi"

local paths = package.loaded["cq._paths"] or {}
local BUILD = (paths.lib or "build/lib"):gsub("/lib$", "")

-- Output and exit status of a shell command.
describe("FFI declarations come from engine/core/cq.h", function()
  it("every public struct has the same size in C and in LuaJIT", function()
    for _, precision in ipairs { "f32", "f64" } do
      local lib = C.lib(precision)
      for _, name in ipairs { "cq_wall_desc", "cq_world_desc", "cq_control", "cq_blowup" } do
        local c_size, lua_size = tonumber(lib.cq_sizeof(name)), ffi.sizeof(name)
        print(string.format("  %s %-14s C %3d  Lua %3d", precision, name, c_size, lua_size))
        assert.are.equal(c_size, lua_size)
      end
      assert.are.equal(0, tonumber(lib.cq_sizeof("no_such_struct")))
    end
  end)
  it("the registries and field tables reach Lua from the library, not from a copy", function()
    assert.are.same({ none = 0, sticky = 1, slip = 2, separate = 3, friction = 4 }, cq.BC)
    assert.are.same({ corotated = 0, neohookean = 1, mooney_rivlin = 2, yeoh = 3, fluid = 4,
      ogden = 5, arruda_boyce = 6, fiber_reinforced = 7 }, cq.MATERIAL)
    assert.are.same({ stress = 0, force = 1, cable = 2, chamber = 3, cavity = 4 }, cq.ACTUATOR)
    local f = cq.fields("f64")
    local names = {}
    for _, x in ipairs(f.state) do names[#names + 1] = x.name end
    assert.are.same({ "x", "v", "C", "F", "pg" }, names)
    assert.are.equal("> 0", f.param[3].range) -- E
    assert.are.equal("in (-1, 0.5)", f.param[4].range) -- nu
  end)
end)

describe("memo views", function()
  it("keep pointing at the memo's buffers through backward steps (a view taken before is still current)", function()
    local G = require "tests._grad"
    local w, s0 = G.scene { dim = 2, material = "neohookean", bc = "slip", substeps = 3, dt = 6e-3 }
    local m = w:memo { steps = 4, checkpoint_every = 2 }
    local gx, gF, gE, bx = m.grad.x, m.grad.F, m.grad_params.E, m.bstate.x
    m:begin(s0)
    for _ = 1, 4 do m:step({ 0.2, -0.1 }) end
    m:backward_begin()
    for i = 0, w.n * 2 - 1 do m.grad.x[i] = 1 end
    for k = 3, 0, -1 do
      assert.are.equal(k, m:backward_step())
      -- the views taken before the backward are the memo's current buffers (same address)
      assert.is_true(gx == m.grad.x and gF == m.grad.F and gE == m.grad_params.E and bx == m.bstate.x)
      assert.are.equal(m.grad.x[7], gx[7])
    end
    assert.is_true(gx[0] ~= 0 and gx[0] == gx[0])
    print(string.format("  dL/dx_0[0] through the old view = %.6g (3 substeps per step: an odd number of ping-pongs)", gx[0]))
  end)
end)

describe("the CPU engine's SIMD lanes (engine/backends/cpu/cpu_loops.h)", function()
  -- The lanes vectorise only through gathers, and a compiler's tuning can turn gathers off (Debian's GCC 12 under
  -- -mtune=generic, i.e. -march=native on many Intel hosts): the lanes then compile to scalar code and the 3D backward
  -- runs about 3x slower, with every result still right. The Makefile turns gathers back on (GATHER_TUNE, F64_TUNE);
  -- this checks that the hottest lane functions of both libraries hold vector gathers.
  it("compile to vector gathers in both precisions (objdump of the f32 and f64 libraries)", function()
    local f = io.open("/proc/cpuinfo")
    local cpu = f and f:read("*a") or ""
    if f then f:close() end
    if not (jit.arch == "x64" and cpu:match("%savx2%s")) then
      pending("no AVX2 on this host: the lanes have no gathers to compile to")
      return
    end
    if os.getenv("CQ_SANITIZED") then -- make test-asan's libraries are built at -O1, which does not vectorise
      pending("a sanitizer build (-O1): the lanes are not vectorised there")
      return
    end
    for _, precision in ipairs { "f32", "f64" } do
      local out, rc = sh("objdump -d --no-show-raw-insn " .. BUILD .. "/lib/libcq_" .. precision .. ".so")
      assert.are.equal(0, rc, out:sub(1, 500))
      local gathers, name = {}, nil
      for line in out:gmatch("[^\n]+") do
        name = line:match("^%x+ <([^>]+)>:$") or name
        if name and line:match("gather") then gathers[name] = (gathers[name] or 0) + 1 end
      end
      for _, fn in ipairs { "p2g_adj_lanes_NEOHOOKEAN_3", "p2g_adj_lanes_NEOHOOKEAN_2", "g2p_adj_chunk_3" } do
        local n = 0
        for sym, k in pairs(gathers) do if sym == fn or sym:sub(1, #fn + 1) == fn .. "." then n = n + k end end
        print(string.format("  %s %s: %d gather instructions", precision, fn, n))
        assert.is_true(n > 0, precision .. " " .. fn .. " has no vector gathers: the SIMD lanes did not vectorise " ..
          "(see the Makefile's GATHER_TUNE)")
      end
    end
  end)
end)

describe("layering of the engine objects", function()
  it("nm shows no cycle among the engine's object files", function()
    local dir = BUILD .. "/obj/f64"
    local out, rc = sh("nm -A " .. dir .. "/*.o")
    assert.are.equal(0, rc, out)
    local defines, needs = {}, {}
    for file, kind, sym in out:gmatch("[^\n]*/([%w_]+)%.o:%x*%s+(%a)%s+([%w_.]+)") do
      needs[file] = needs[file] or {}
      if kind == "U" then needs[file][sym] = true
      elseif kind:match("[TDBR]") then defines[sym] = file end
    end
    local edges = {}
    for file, syms in pairs(needs) do
      edges[file] = {}
      for sym in pairs(syms) do
        local owner = defines[sym]
        if owner and owner ~= file then edges[file][owner] = true end
      end
    end
    -- topological order: an object only uses objects listed before it
    local order, state = {}, {}
    local function visit(f, path)
      if state[f] == "done" then return end
      assert.are_not.equal("active", state[f], "link cycle: " .. table.concat(path, " -> ") .. " -> " .. f)
      state[f] = "active"
      path[#path + 1] = f
      local deps = {}
      for d in pairs(edges[f] or {}) do deps[#deps + 1] = d end
      table.sort(deps)
      for _, d in ipairs(deps) do visit(d, path) end
      path[#path] = nil
      state[f] = "done"
      order[#order + 1] = f
    end
    local files = {}
    for f in pairs(needs) do files[#files + 1] = f end
    table.sort(files)
    for _, f in ipairs(files) do visit(f, {}) end
    print("  layers (each uses only those before it): " .. table.concat(order, " < "))
    local pos = {}
    for i, f in ipairs(order) do pos[f] = i end
    assert.is_true(pos.registry < pos.model and pos.error < pos.model and pos.model < pos.backend_cpu)
    assert.is_true(pos.backend_cpu < pos.world)
    assert.is_true(pos.integrator_explicit < pos.step and pos.step < pos.memo)
    -- the physics terms below the hooks' runner, which is below the integrators (engine/terms/term.h)
    assert.is_true(pos.volumetric < pos.term and pos.fill < pos.term and pos.term < pos.integrator_implicit
      and pos.term < pos.implicit_factor)
  end)
end)

describe("physics terms are entries, not branches (engine/terms/term.h)", function()
  it("the integrators and the factor name no term: their code (comments aside) has no volumetric, fill, cable or " ..
    "cavity identifier", function()
    local files = { "engine/integrators/integrator_explicit.c", "engine/integrators/integrator_implicit.c",
      "engine/integrators/implicit_factor.c", "engine/integrators/integrator.h" }
    local found = {}
    for _, path in ipairs(files) do
      local src = assert(io.open(path)):read("*a")
      src = src:gsub("/%*.-%*/", ""):gsub("//[^\n]*", "")
      -- implicit.fill_rounds and the stats' fill_rounds are the API's names of the active-set rounds
      src = src:gsub("implicit_fill_rounds", ""):gsub("stats%.fill_rounds", "")
      for word in src:gmatch("[%w_]+") do
        local l = word:lower()
        if l:find("vol_", 1, true) or l:find("fill") or l:find("cable") or l:find("cavit") then
          found[#found + 1] = path .. ": " .. word
        end
      end
    end
    assert.are.same({}, found)
    -- the check can fail: the terms' own file names them
    local term = assert(io.open("engine/terms/volumetric.c")):read("*a"):gsub("/%*.-%*/", "")
    assert.is_truthy(term:find("vol_", 1, true))
  end)
end)

describe("adding a field is one line of engine/core/fields.h", function()
  it("a state field J and a differentiable parameter C10 get views, defaults, validation, checkpoints and gradients", function()
    local diff = assert(io.open(BUILD .. "/test-fields/fields.diff")):read("*a")
    print(diff)
    local added = 0
    for _ in diff:gmatch("\n>") do added = added + 1 end
    assert.are.equal(2, added + (diff:sub(1, 1) == ">" and 1 or 0)) -- exactly the two added lines
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
      local cq = require "cq"
      local w = cq.world { n = 4, res = 16, precision = "f64", backend = "cpu", gravity = { 0, -1 } }
      print("C10 default", w.params.C10[0], "range", cq.fields("f64").param[5].range)
      w:commit()
      local s = w:state()
      for p = 1, 4 do s:set("x", p, { 0.4 + 0.02 * p, 0.5 }); s:set("J", p, { 1 + 0.1 * p }) end
      print("J initial", s.J[0], s.J[3])
      local m = w:memo { steps = 6, checkpoint_every = 4 } -- 6 substeps, recomputed from checkpoints in backward
      m:begin(s)
      for _ = 1, 6 do m:step() end
      print("J after 6 steps (no math uses it: carried through)", m.state.J[0], m.state.J[3])
      m:backward()
      print("J of the recomputed initial state", m.bstate.J[0], m.bstate.J[3])
      print("grad C10 (no math: zero)", m.grad_params.C10[0], "grad J", m.grad.J[0])
      print("copy", s:copy().J[3])
      w:fill("C10", -1, 2, 2)
      print("validation", pcall(w.step, w, s))
    ]])
    f:close()
    local out, rc = sh(string.format("env CQ_LIB_PATH=%s %s %s", BUILD .. "/test-fields/lib", paths.exe or "cqlua", script))
    os.remove(script)
    print(out)
    assert.are.equal(0, rc)
    assert.is_truthy(out:find("C10 default\t2\trange\t> 0", 1, true))
    assert.is_truthy(out:find("J initial\t1.1\t1.4", 1, true))
    assert.is_truthy(out:find("carried through)\t1.1\t1.4", 1, true))
    assert.is_truthy(out:find("recomputed initial state\t1.1\t1.4", 1, true))
    assert.is_truthy(out:find("grad C10 (no math: zero)\t0\tgrad J\t0", 1, true))
    assert.is_truthy(out:find("copy\t1.4", 1, true))
    assert.is_truthy(out:find("particle 2: C10 (Mooney-Rivlin C10 (the one added line)) must be > 0 (got -1)", 1, true))
  end)
end)

describe("backend primitives for implicit solvers", function()
  it("grid_axpy, grid_dot, grid_norm_inf and axpy match plain loops, bit-identical for 1 and 2 threads (tests/c/backend_test.c)", function()
    local out, rc = sh(BUILD .. "/test/backend_test")
    print(out)
    assert.are.equal(0, rc)
    assert.is_truthy(out:find("0 failures", 1, true))
  end)
end)

describe("the implicit solve's sparse Cholesky and semi-definite projection", function()
  it("solves block systems on grid graphs to round-off, keeps its analysis, refuses indefinite ones (tests/c/cholesky_test.c)", function()
    local out, rc = sh(BUILD .. "/test/cholesky_test")
    print(out)
    assert.are.equal(0, rc)
    assert.is_truthy(out:find("rc=0", 1, true))
    assert.is_falsy(out:find("FAIL", 1, true))
  end)
end)

describe("adding a material is its header and one registry line", function()
  it("a copy of material_neohookean.h registered as neohookean_copy gives neohookean's loss and gradients, and its " ..
    "E and nu gradients match central differences (f64)", function()
    local diff = assert(io.open(BUILD .. "/test-material/registry.diff")):read("*a")
    print(diff)
    local added, removed = 0, 0
    for line in diff:gmatch("[^\n]+") do
      if line:sub(1, 1) == ">" then added = added + 1 elseif line:sub(1, 1) == "<" then removed = removed + 1 end
    end
    assert.are.equal(1, added) -- exactly the one registry line, nothing else in the engine
    assert.are.equal(0, removed)
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
      package.path = "./?.lua;" .. package.path
      local cq = require "cq"
      local G = require "tests._grad"
      local registry = require "cq._registry"
      print("materials", registry.names(registry.MATERIAL))
      local out = {}
      for _, name in ipairs { "neohookean", "neohookean_copy" } do
        local w, s0 = G.scene { dim = 2, material = name, bc = "friction", steps = 30 }
        local P = G.problem(w, s0, 30)
        out[name] = { L = P.loss(), g = P.backward(), P = P }
      end
      local d, m = G.max_grad_diff(out.neohookean.g, out.neohookean_copy.g, 30)
      print(string.format("loss %.17g %.17g max |difference| %g of %g", out.neohookean.L, out.neohookean_copy.L, d, m))
      for _, kind in ipairs { "E", "nu", "x" } do
        local c = out.neohookean_copy
        local analytic, fd, rel = G.check(c.P, c.g, kind)
        print(string.format("FD %s analytic %.6e fd %.6e rel %.1e", kind, analytic, fd, rel))
      end
    ]])
    f:close()
    local out, rc = sh(string.format("env CQ_LIB_PATH=%s %s %s", BUILD .. "/test-material/lib", paths.exe or "cqlua",
      script))
    os.remove(script)
    print(out)
    assert.are.equal(0, rc)
    assert.is_truthy(out:find("neohookean_copy", 1, true))
    local L1, L2, d = out:match("loss (%S+) (%S+) max |difference| (%S+)")
    assert.are.equal(L1, L2) -- the same math: the same bits
    assert.are.equal(0, tonumber(d))
    local n = 0
    for kind, rel in out:gmatch("FD (%S+) analytic %S+ fd %S+ rel (%S+)") do
      n = n + 1
      assert.is_true(tonumber(rel) < 1e-6, kind)
    end
    assert.are.equal(3, n)
  end)
end)
