-- tools/bench.lua: forward / backward cost of the CPU engine on the ChainQueen (Hu et al. 2019) Table II scenes.
--
-- usage: build/bin/cqlua tools/bench.lua [quick] [FILTER...]
--   quick    a short smoke-test run (few steps, numbers are noisy)
--   FILTER   only scenes whose name contains one of these substrings (e.g. 2d, 64k; gpu = the CUDA section alone,
--            with seed 004's 3D iteration on the GPU, the engine's alone and through rotator3d_topo's whole design;
--            rotator = that design iteration alone (on the GPU when there is one); seed004 = the engine's 3D iteration
--            on the CPU, about 2 minutes here, and the 2D iteration through walker2d_topo's design; topo2d = that
--            2D iteration alone;
--            busy = the busy-machine rows alone: 1 vs 2 threads, idle and with one other CPU-bound process)
-- Without the host:  luajit tools/bench.lua [quick] [FILTER...]  (run from anywhere; paths come from arg[0]).
--
-- For each scene x precision (f32, f64) x threads (1, 2) it reports, per substep (substeps = 1, so a control step
-- is one substep, which is what ChainQueen's "step" is):
--   fwd    world:step on a state (after a warm-up), best of 3 timed chunks;
--   rec    recording the same number of steps into a memo with checkpoint_every = 1 (all states stored);
--   bwd    memo:backward() over that recording (only the backward), best of 2 runs, seeded with dL/dx_T = 1/n;
-- and the ratio to ChainQueen's Table II (CUDA, GTX 1080 Ti). Ours is a CPU, theirs a GPU: ratio > 1 means slower.
-- A last section compares checkpoint_every = 1, 0 (auto) and ceil(sqrt(N)) on one configuration (the largest
-- selected scene, f64, 2 threads); with sqrt(N) checkpoints the backward pass also recomputes forward states.

---------------------------------------------------------------- paths (the cqlua host sets cq._paths itself)
if not package.loaded["cq._paths"] then
  local script = (arg and arg[0]) or "tools/bench.lua"
  local dir = script:match("^(.*)/[^/]*$") or "."
  local root = dir .. "/.."
  package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. package.path
  package.loaded["cq._paths"] = { lua = root .. "/lua", lib = root .. "/build/lib" }
end
local ROOT = ((((arg and arg[0]) or "tools/bench.lua"):match("^(.*)/[^/]*$")) or ".") .. "/.." -- the checkout

local ffi = require "ffi"
local cq = require "cq"

local now = require("cq.clock").now

---------------------------------------------------------------- arguments
local QUICK, FILTERS, BUSY_CHILD = false, {}, nil
for i, a in ipairs(arg or {}) do
  if a == "busy-child" then BUSY_CHILD = arg[i + 1]; FILTERS[#FILTERS + 1] = "busy"
  elseif BUSY_CHILD and a == BUSY_CHILD and arg[i - 1] == "busy-child" then -- its argument
  elseif a == "quick" or a == "--quick" then QUICK = true
  elseif a == "-h" or a == "--help" then
    print("usage: cqlua tools/bench.lua [quick] [FILTER...]   (FILTER: scene name substring)")
    os.exit(0)
  else FILTERS[#FILTERS + 1] = a end
end

-- Time targets (seconds) and step bounds.
local T_FWD = QUICK and 0.05 or 1.5     -- forward: total over 3 chunks
local T_BWD = QUICK and 0.05 or 1.0     -- sets the recording length: S_b * fwd_step ~ T_BWD
local MIN_STEPS = QUICK and 2 or 10
local MAX_STEPS = QUICK and 10 or 2000
local WARMUP = QUICK and 1 or 5
local PRECISIONS = { "f32", "f64" }
local THREADS = { 1, 2 }

---------------------------------------------------------------- machine info
local function read_first(path, pattern)
  local f = io.open(path, "r")
  if not f then return nil end
  for line in f:lines() do
    local m = line:match(pattern)
    if m then f:close() return m end
  end
  f:close()
end
local function command(cmd)
  local p = io.popen(cmd .. " 2>/dev/null")
  if not p then return nil end
  local s = p:read("*a")
  p:close()
  s = s and s:gsub("%s+$", "")
  return s ~= "" and s or nil
end

local cpu_model = read_first("/proc/cpuinfo", "^model name%s*:%s*(.-)%s*$") or "unknown CPU"
local nproc = command("nproc") or "?"
local mem_kb = read_first("/proc/meminfo", "^MemTotal:%s*(%d+)")
print("cqlua benchmark" .. (QUICK and " (quick: smoke test, numbers are not meaningful)" or ""))
print(string.format("date:    %s", os.date("%Y-%m-%d %H:%M:%S %Z")))
print(string.format("machine: %s, nproc %s%s", cpu_model, nproc,
  mem_kb and string.format(", %.1f GiB RAM", tonumber(mem_kb) / 1048576) or ""))
local load0 = read_first("/proc/loadavg", "^(%S+ %S+ %S+)")
print(string.format("load:    %s (1/5/15 min)%s", load0 or "?",
  load0 and tonumber(load0:match("^%S+")) > 0.5 and "  (recent load: other processes may disturb the timings, see the cpu column)" or ""))
print(string.format("engine:  cq %s, %s, LuaJIT %s", cq._VERSION, jit and jit.version or _VERSION,
  (jit and jit.arch) or ""))
print()

---------------------------------------------------------------- scenes
-- Each builds a world (precision, threads) and its initial state. Blocks are lattices with spacing dx/2 (2 particles
-- per cell per axis), rest volume (dx/2)^dim, density 1, NeoHookean E = 1e3, nu = 0.3, gravity -9.8, a friction
-- floor and slip walls elsewhere. dt is fixed per scene at about half of world:stable_dt().
local E, NU, RHO = 1e3, 0.3, 1.0

local function block_world(o, precision, threads, backend)
  local dim, dx, m = o.dim, o.dx, o.per_side
  local n = m ^ dim
  local walls = { left = { type = "slip" }, right = { type = "slip" }, floor = { type = "friction", friction = 0.5 },
                  top = { type = "slip" } }
  if dim == 3 then walls.back, walls.front = { type = "slip" }, { type = "slip" } end
  local gravity = dim == 2 and { 0, -9.8 } or { 0, -9.8, 0 }
  local w = cq.world { dim = dim, res = o.res, dx = dx, dt = o.dt * (o.substeps or 1), substeps = o.substeps or 1, gravity = gravity, n = n,
                       precision = precision, threads = threads, walls = walls, backend = backend or "cpu" }
  local h = dx / 2
  local vol = h ^ dim
  w:fill("vol0", vol)
  w:fill("mass", vol * RHO)
  w:fill("E", E)
  w:fill("nu", NU)
  w:fill("material", "neohookean")
  local sdt = w:stable_dt()
  if o.dt > sdt then error(string.format("%s: dt %g above world:stable_dt() %g", o.name, o.dt, sdt)) end
  w:commit()
  local s = w:state()
  local x = s.x
  local p = 0
  if dim == 2 then
    for i = 0, m - 1 do for j = 0, m - 1 do
      x[p] = o.origin[1] + (i + 0.5) * h
      x[n + p] = o.origin[2] + (j + 0.5) * h
      p = p + 1
    end end
  else
    for i = 0, m - 1 do for j = 0, m - 1 do for k = 0, m - 1 do
      x[p] = o.origin[1] + (i + 0.5) * h
      x[n + p] = o.origin[2] + (j + 0.5) * h
      x[2 * n + p] = o.origin[3] + (k + 0.5) * h
      p = p + 1
    end end end
  end
  return w, s, sdt
end

-- ChainQueen Table II (CUDA, GTX 1080 Ti), ms per step.
local SCENES = {
  { name = "2d-block", dim = 2, res = { 128, 128 }, dx = 1 / 128, per_side = 80, dt = 1e-4,
    origin = { 0.34375, 0.1 }, cq_fwd = 0.10, cq_bwd = 0.14 },
  { name = "3d-cube-8k", dim = 3, res = { 64, 64, 64 }, dx = 1 / 64, per_side = 20, dt = 2e-4,
    origin = { 0.421875, 0.1, 0.421875 }, cq_fwd = 0.392, cq_bwd = 0.406 },
  { name = "3d-cube-64k", dim = 3, res = { 64, 64, 64 }, dx = 1 / 64, per_side = 40, dt = 2e-4,
    origin = { 0.34375, 0.1, 0.34375 }, cq_fwd = 1.594, cq_bwd = 1.774 },
}

local function selected(name)
  if #FILTERS == 0 then return true end
  for _, f in ipairs(FILTERS) do if name:find(f, 1, true) then return true end end
  return false
end

---------------------------------------------------------------- measurement
local function clamp(v, lo, hi) return math.max(lo, math.min(hi, v)) end

-- Seeds dL/dx_T = 1/n (the mean position loss) so the adjoint carries non-zero values.
local function seeded_backward(memo, T)
  local n, dim = memo.world.n, memo.world.dim
  local t0
  memo:backward(function(k, m)
    if k == T then
      local gx = m.grad.x
      for i = 0, dim * n - 1 do gx[i] = gx[i] + 1 / n end
    end
  end)
end

-- Best of reps backward passes; also returns CPU seconds / wall seconds over all of them.
local function time_backward(memo, T, reps)
  local best, wall, c0 = math.huge, 0, os.clock()
  for _ = 1, reps do
    local t0 = now()
    seeded_backward(memo, T)
    local dt = now() - t0
    wall = wall + dt
    if dt < best then best = dt end
  end
  return best, (os.clock() - c0) / wall
end

-- One configuration: returns a result row.
local function bench_once(sc, precision, threads)
  local w, s0, sdt = block_world(sc, precision, threads)
  local n = w.n
  local s = s0:copy()
  -- warm-up (also calibrates the step count)
  local t0 = now()
  for _ = 1, WARMUP do w:step(s) end
  local est = (now() - t0) / WARMUP
  local chunk = clamp(math.ceil(T_FWD / 3 / est), math.ceil(MIN_STEPS / 3), MAX_STEPS)
  local fwd, wall, c0 = math.huge, 0, os.clock()
  for _ = 1, 3 do
    t0 = now()
    for _ = 1, chunk do w:step(s) end
    local dt = now() - t0
    wall = wall + dt
    if dt / chunk < fwd then fwd = dt / chunk end
  end
  local util = (os.clock() - c0) / wall
  -- recording + backward: S_b steps from the warmed-up state, all states stored
  local S = clamp(math.ceil(T_BWD / fwd), MIN_STEPS, MAX_STEPS)
  local start = s0:copy()
  for _ = 1, WARMUP do w:step(start) end
  local memo = w:memo { steps = S, checkpoint_every = 1 }
  -- the first recording writes fresh memory (page faults); the second, over the same buffers, is the one reported
  local rec_cold
  for pass = 1, 2 do
    t0 = now()
    memo:begin(start)
    for _ = 1, S do memo:step() end
    if pass == 1 then rec_cold = (now() - t0) / S end
  end
  local rec = (now() - t0) / S
  local bwd, util_b = time_backward(memo, S, QUICK and 1 or 2)
  bwd = bwd / S
  local row = { scene = sc.name, n = n, precision = precision, threads = threads, fwd_steps = 3 * chunk,
    bwd_steps = S, util = math.min(util, util_b), fwd = fwd, rec = rec, rec_cold = rec_cold, bwd = bwd, stored = memo:stored_states(), sc = sc, dt = sc.dt, sdt = sdt }
  memo:release()
  w:release()
  collectgarbage()
  return row
end

-- On a shared machine other processes can take the cores (with OpenMP, a descheduled thread stalls every barrier):
-- when the CPU/wall ratio shows it, wait a little and measure again (at most RETRIES more times).
local RETRIES = QUICK and 0 or 1
local function sleep(sec) os.execute("sleep " .. sec) end
local function bench(sc, precision, threads)
  local row
  for attempt = 0, RETRIES do
    row = bench_once(sc, precision, threads)
    row.attempts = attempt + 1
    row.contended = row.util < 0.8 * threads
    if not row.contended then break end
    if attempt < RETRIES then
      io.stderr:write(string.format("bench: %s %s %d threads: cpu/wall %.2f (machine busy), measuring again\n",
        sc.name, precision, threads, row.util))
      sleep(3)
    end
  end
  return row
end

-- Checkpointing variants for one configuration: 1 (store all), 0 (auto: all if <= 256 MiB, else ~sqrt(N)) and
-- K = ceil(sqrt(N)) explicitly (backward then recomputes each K-substep segment from its checkpoint).
local function bench_ckpt(sc, precision, threads, S)
  local w, s0 = block_world(sc, precision, threads)
  local start = s0:copy()
  for _ = 1, WARMUP do w:step(start) end
  local out = {}
  local state_bytes = w.n * (2 * w.dim + 2 * w.dim * w.dim) * (precision == "f32" and 4 or 8)
  for _, ck in ipairs({ 1, 0, math.ceil(math.sqrt(S)) }) do
    local memo = w:memo { steps = S, checkpoint_every = ck }
    local t0 = now()
    memo:begin(start)
    for _ = 1, S do memo:step() end
    local rec = (now() - t0) / S
    local bwd, util = time_backward(memo, S, QUICK and 1 or 2)
    bwd = bwd / S
    out[#out + 1] = { ck = ck, util = util, rec = rec, bwd = bwd, stored = memo:stored_states(),
      mib = memo:stored_states() * state_bytes / 1048576 }
    memo:release()
    collectgarbage()
  end
  w:release()
  collectgarbage()
  return out
end

---------------------------------------------------------------- busy machine
-- Forward time per control step with 1 and 2 threads, on an idle machine and with one other CPU-bound process
-- running (a shell busy loop), in this invocation. "2 fixed" runs in a child with CQ_FIXED_THREADS set: the old
-- behaviour, 2 threads whatever the machine does (each waits for its descheduled partner at every barrier).
local BUSY_SCENES = {
  { name = "2d-small", dim = 2, res = { 64, 64 }, dx = 1 / 64, per_side = 32, dt = 2e-4, origin = { 0.375, 0.1 } },
  { name = "3d-cube-8k", dim = 3, res = { 64, 64, 64 }, dx = 1 / 64, per_side = 20, dt = 2e-4,
    origin = { 0.421875, 0.1, 0.421875 } },
}

-- Seconds per forward step of scene sc with `threads` (best of 3 chunks of about 0.4 s each).
local function forward_time(sc, threads)
  local w, s = block_world(sc, "f32", threads)
  for _ = 1, WARMUP do w:step(s) end
  local t0 = now()
  for _ = 1, WARMUP do w:step(s) end
  local chunk = clamp(math.ceil((QUICK and 0.02 or 0.4) / ((now() - t0) / WARMUP)), 3, 5000)
  local best = math.huge
  for _ = 1, 3 do
    t0 = now()
    for _ = 1, chunk do w:step(s) end
    best = math.min(best, (now() - t0) / chunk)
  end
  local used = w:threads_used()
  w:release()
  return best, used
end

local function busy_start()
  os.execute("sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $! > /tmp/cq_bench_busy.pid")
  local f = io.open("/tmp/cq_bench_busy.pid")
  local pid = f and f:read("*n")
  if f then f:close() end
  os.execute("sleep 0.3")
  return pid
end
local function busy_stop(pid) if pid then os.execute("kill " .. pid .. " 2>/dev/null") end end

local function bench_contended()
  if BUSY_CHILD then -- child: one measurement, printed for the parent
    local sc = BUSY_SCENES[tonumber(BUSY_CHILD)]
    local t = forward_time(sc, 2)
    print(string.format("RESULT %.9g", t))
    return
  end
  print("busy machine: forward s/step, f32, 1 vs 2 threads, idle and with one other CPU-bound process (a busy loop)")
  print(string.format("%-11s %7s | %9s %9s %6s | %9s %9s %6s %12s %6s", "scene", "n", "idle t=1", "t=2", "t2/t1",
    "busy t=1", "t=2", "t2/t1", "t=2 fixed", "f/t1"))
  for i, sc in ipairs(BUSY_SCENES) do
    local i1 = forward_time(sc, 1)
    local i2 = forward_time(sc, 2)
    local pid = busy_start()
    local ok, err = pcall(function()
      local b1 = forward_time(sc, 1)
      local b2, used = forward_time(sc, 2)
      local script = (arg and arg[0]) or "tools/bench.lua"
      local exe = (package.loaded["cq._paths"] or {}).exe or "cqlua"
      local p = io.popen(string.format("CQ_FIXED_THREADS=1 %q %q busy-child %d %s 2>&1", exe, script, i,
        QUICK and "quick" or ""))
      local out = p:read("*a")
      p:close()
      local fixed = tonumber(out:match("RESULT (%S+)"))
      print(string.format("%-11s %7d | %9.2e %9.2e %6.2f | %9.2e %9.2e %6.2f %12s %6s   (t=2 ran on %d thread%s)",
        sc.name, sc.per_side ^ sc.dim, i1, i2, i2 / i1, b1, b2, b2 / b1,
        fixed and string.format("%.2e", fixed) or "?", fixed and string.format("%.1f", fixed / b1) or "?", used,
        used == 1 and "" or "s"))
    end)
    busy_stop(pid)
    if not ok then error(err, 0) end
  end
  print()
end

---------------------------------------------------------------- run
-- Walker2d (DiffTaichi's diffmpm.py scene): forward + backward + update per optimization iteration. A ratio to
-- Taichi is printed only where both ran in the same invocation: `make bench-peers` (tools/bench_peers.lua).
local function bench_walker()
  local chunk = assert(loadfile((package.loaded["cq._paths"].lua or "lua") .. "/../examples/walker2d.lua"))
  local iters = QUICK and 2 or 6
  setfenv(chunk, setmetatable({ arg = { tostring(iters), "f32", "2" }, print = function() end }, { __index = _G }))
  local r = chunk()
  local s = r.steady_seconds_per_iter
  print(string.format("\nwalker2d (2,976 particles, 1,023 steps, f32, 2 threads): %.3f s/iteration after the first" ..
    " (%.3f incl. it)", s, r.seconds_per_iter))
  print("Taichi: not measured in this run (make bench-peers runs it back to back)")
  print()
  io.stdout:flush()
end
if selected("busy") then bench_contended() end
if BUSY_CHILD then os.exit(0) end
if selected("walker2d") then bench_walker() end

---------------------------------------------------------------- GPU (CUDA backend, issue 4)
-- Table II scenes plus 512k and 1M-particle cubes on backend = "cuda", f32, substeps = 1: fwd = world:step, bwd =
-- memo:backward over a recording with every state stored, ms per step and ns per particle-step. GB/s is a model
-- of the compulsory DRAM traffic of a forward step (state read + written, parameters read; grid of the active box
-- zeroed, scattered into (read + write), updated (read + write) and gathered) over the measured time, and "of D2D"
-- that rate over the device-to-device cudaMemcpy rate measured here (read + written bytes). CUDA states are managed
-- memory that stays on the device while the host does not touch it (cuda/README.md; CQ_CUDA_SHARED_STATES=0 copies
-- them to and from page-locked host memory every control step instead, as before); "sub10" is the time per substep
-- with 10 substeps per step. The scenes run with world:check_fracture(false) (the engine's time alone) but for
-- "2d + fracture", the 2D block with the check on, as world:step has it by default: on an H100 (2026-11-28, 6929d2e)
-- the 2D block's forward took 1.8-3.2 ms per step with it, against 0.05 ms at 2cb31de, before the check existed.
local GPU_SCENES = {
  SCENES[1], setmetatable({ name = "2d + fracture", fracture = true }, { __index = SCENES[1] }), SCENES[2], SCENES[3],
  { name = "3d-cube-512k", dim = 3, res = { 128, 128, 128 }, dx = 1 / 128, per_side = 80, dt = 1e-4,
    origin = { 0.34375, 0.1, 0.34375 } },
  { name = "3d-cube-1M", dim = 3, res = { 128, 128, 128 }, dx = 1 / 128, per_side = 100, dt = 1e-4,
    origin = { 0.3046875, 0.1, 0.3046875 } },
}
local function bench_gpu()
  print("GPU: CUDA backend, f32, per step (substeps = 1)")
  local lib, why = require("cq._ffi").cuda_lib("f32")
  if not lib then
    print("skipped: no GPU (" .. tostring(why) .. ")")
    print()
    io.stdout:flush()
    return
  end
  local buf = ffi.new("char[256]")
  lib.cq_cuda_device_info(buf, 256)
  print("device:  " .. ffi.string(buf))
  local d2d = lib.cq_cuda_memcpy_bandwidth(512 * 1048576, QUICK and 3 or 20, buf, 256)
  print(d2d > 0 and string.format("device-to-device cudaMemcpy: %.1f GB/s (read + written)", d2d / 1e9)
    or ("device-to-device copy failed: " .. ffi.string(buf)))
  local hdr = string.format("%-13s %8s | %9s %9s | %8s %8s | %9s | %7s %6s | %7s %7s", "scene", "parts", "fwd ms",
    "bwd ms", "fwd ns", "bwd ns", "sub10 ms", "GB/s", "of D2D", "fwd/CQ", "bwd/CQ")
  print(hdr)
  print(string.rep("-", #hdr))
  for _, sc in ipairs(GPU_SCENES) do
    local w, s0 = block_world(sc, "f32", 0, "cuda")
    -- the engine's time, as recorded since issue 4; the row "+ fracture check" has world:step's check of numerical
    -- fracture on (the default: cq._fracture, host-side, reading the state every so many steps)
    if not sc.fracture then w:check_fracture(false) end
    local n, D, R = w.n, sc.dim, 4
    local s = s0:copy()
    for _ = 1, WARMUP do w:step(s) end
    local t0 = now()
    w:step(s)
    local est = now() - t0
    local steps = clamp(math.ceil(T_FWD / est), MIN_STEPS, MAX_STEPS)
    t0 = now()
    for _ = 1, steps do w:step(s) end
    local fwd = (now() - t0) / steps
    -- recording: every state stored, at most ~2 GiB of host memory
    local state_bytes = n * (2 * D + 2 * D * D) * R
    local S = clamp(math.ceil(T_BWD / fwd), QUICK and 2 or 5, math.max(2, math.min(MAX_STEPS, math.floor(2 ^ 31 / state_bytes))))
    local memo = w:memo { steps = S, checkpoint_every = 1 }
    memo:begin(s)
    for _ = 1, S do memo:step() end
    local bwd = time_backward(memo, S, 1) / S
    memo:release()
    -- the same per substep with 10 substeps per control step: the state's transfers to and from the host (once per
    -- control step) shared by 10 substeps, so close to the device's own time per substep
    local w10, s10 = block_world(setmetatable({ substeps = 10 }, { __index = sc }), "f32", 0, "cuda")
    if not sc.fracture then w10:check_fracture(false) end
    for _ = 1, WARMUP do w10:step(s10) end
    local steps10 = math.max(2, math.ceil(steps / 10))
    t0 = now()
    for _ = 1, steps10 do w10:step(s10) end
    local sub10 = (now() - t0) / steps10 / 10
    w10:release()
    local active = (sc.per_side / 2 + 3) ^ D
    local bytes = n * (R * (2 * (2 * D + 2 * D * D) + 5 + D) + 5) + 6 * (D + 1) * R * active
    local rate = bytes / fwd
    print(string.format("%-13s %8d | %9.3f %9.3f | %8.2f %8.2f | %9.3f | %7.1f %5.1f%% | %7s %7s", sc.name, n, fwd * 1e3,
      bwd * 1e3, fwd / n * 1e9, bwd / n * 1e9, sub10 * 1e3, rate / 1e9, d2d > 0 and 100 * rate / d2d or 0,
      sc.cq_fwd and string.format("%.2f", fwd * 1e3 / sc.cq_fwd) or "-",
      sc.cq_bwd and string.format("%.2f", bwd * 1e3 / sc.cq_bwd) or "-"))
    io.stdout:flush()
    w:release()
    collectgarbage()
  end
  print()
end
-- Seed 004's 3D iteration (issues 12 and 14): scenes/seed004_cube.lua (8,000 particles, 1e6 nodes, four stress
-- actuators driven per control step): 1 s = 1e4 substeps (1,000 control steps of 10) forward into a memo, then
-- backward. The seed
-- reports 30 s per iteration on an RTX 3090 (Taichi autodiff); goal <= 2 s.
local function bench_seed004(backend, precision)
  local w, s0 = dofile(ROOT .. "/scenes/seed004_cube.lua").build(backend, precision)
  local n = w.n
  local steps = QUICK and 50 or 1000
  local memo = w:memo { steps = steps }
  local t0 = now()
  memo:begin(s0)
  for k = 1, steps do
    local a = 2e3 * math.sin(2 * math.pi * k / 100)
    memo:step { a, -a, a, -a }
  end
  local fwd = now() - t0
  t0 = now()
  memo:backward(function(k, m)
    if k == steps then for i = 0, n - 1 do m.grad.x[i] = m.grad.x[i] - 1 / n end end
  end)
  local bwd = now() - t0
  print(string.format("seed 004 3D iteration (%s, %s, %d particles, 1e6 nodes, %d substeps, %d stored states): "
    .. "forward %.2f s + backward %.2f s = %.2f s per iteration (seed 004: 30 s on an RTX 3090; goal <= 2 s)%s",
    backend, precision, n, steps * 10, memo:stored_states(), fwd, bwd, fwd + bwd,
    QUICK and " [quick: 1/20 of the steps]" or ""))
  memo:release()
  w:release()
end

-- Seed 004's iteration through its whole design (issues 12 and 14): example name's design domain of scenes/topo.lua
-- (walker2d_topo: 1,600 particles, 1e4 nodes; rotator3d_topo: 8,000 particles, 1e6 nodes) with its whole design
-- (material and actuator layouts, 4 pulse signals mixed into one actuator per particle) and its objective (the
-- rotator's spin is read from the state every control step) over the seed's timing horizon, 1 s = 1e4 substeps,
-- through cq.rollout forward and backward: what one optimisation iteration costs. The seed reports about 22 s per
-- iteration on one core of an i9-11900K in 2D (goal 2 s on one core here) and 30 s on an RTX 3090 in 3D (goal 2 s on
-- an H100; bench_seed004 above times the engine alone).
local function bench_topo_iteration(name, backend, precision)
  local cq = require "cq"
  local topo = dofile(ROOT .. "/scenes/topo.lua")
  local w, s0, info = topo.build(name, { precision = precision, backend = backend, threads = 1 })
  local steps = QUICK and 50 or 1000
  local design = cq.design { world = w }
  local phi = design:layout { state = s0, radius = 1.5 * info.dx, init = function(i) return 0.5 * math.sin(i) end }
  local psi = design:actuators { state = s0, outputs = 4, layout = phi, radius = 1.5 * info.dx,
    init = function(i) return math.cos(i) end }
  local pulses = cq.pulses { outputs = 4, steps = steps, dt = info.ctl_dt, amplitude = info.example.A_act,
    init_sgn = function(i) return 0.3 * math.sin(i) end, init_abs = function(i) return 0.3 * math.cos(i) end }
  local final, running = topo.objective(info.example, s0)
  local run = cq.rollout { world = w, steps = steps, controller = psi.controller(pulses), design = design, final = final,
    running = running, checkpoint_every = topo.checkpoint_every(w, steps) }
  -- Five iterations: the first touches the memo's fresh memory (page faults: 0.5-2 s in f64), the others reuse it as
  -- every later iteration of an optimisation does; their median is the iteration time (this VM is noisy: the range
  -- of the four is printed too).
  -- With CQ_CUDA_TIMING=1 on the GPU, the last iteration's device time per operation and the device's idle time
  -- (host work and synchronisation between operations) are printed after it (cuda/timing.cuh).
  local timing = backend == "cuda" and os.getenv("CQ_CUDA_TIMING") == "1" and require("cq._ffi").cuda_lib(precision)
  local report = timing and ffi.new("char[?]", 65536)
  local t = {}
  for it = 1, 5 do
    if timing and it == 5 then timing.cq_cuda_timing_report(report, 65536) end -- drop iterations 1-4
    local t0 = now()
    run:forward(s0)
    local fwd = now() - t0
    t0 = now()
    run:backward()
    t[it] = { fwd, now() - t0, fwd + now() - t0 }
  end
  local later = { t[2], t[3], t[4], t[5] }
  table.sort(later, function(a, b) return a[3] < b[3] end)
  local med = { (later[2][1] + later[3][1]) / 2, (later[2][2] + later[3][2]) / 2, (later[2][3] + later[3][3]) / 2 }
  local seed = w.dim == 2 and "seed 004: ~22 s on one core of an i9-11900K; goal <= 2 s"
    or "seed 004: 30 s on an RTX 3090; goal <= 2 s on the GPU"
  print(string.format("seed 004 %dD iteration (%s, %s, %s%d particles, %s nodes, %d substeps, %d stored states, the " ..
    "whole design of %s): forward %.2f s + backward %.2f s = %.2f s per iteration (median of iterations 2-5, range " ..
    "%.2f-%.2f s; the first, on fresh memory: %.2f s; %s)%s", w.dim, backend, precision,
    backend == "cpu" and "1 thread, " or "", w.n, w.dim == 2 and "1e4" or "1e6", steps * 10,
    run.memo:stored_states(), name, med[1], med[2], med[3], later[1][3], later[4][3], t[1][3], seed,
    QUICK and " [quick: 1/20 of the steps]" or ""))
  if timing then
    timing.cq_cuda_timing_report(report, 65536)
    print("the last iteration on the device (CQ_CUDA_TIMING=1):")
    io.write(ffi.string(report))
  end
  w:release()
end

if selected("gpu") then
  bench_gpu()
  if require("cq._ffi").cuda_lib("f32") then
    bench_seed004("cuda", "f32")
    bench_topo_iteration("rotator3d_topo", "cuda", "f32")
    print()
  end
end
if selected("rotator") and not selected("gpu") then -- the rotator's iteration alone, on the GPU when there is one
  bench_topo_iteration("rotator3d_topo", require("cq._ffi").cuda_lib("f32") and "cuda" or "cpu", "f32")
  print()
end
if selected("seed004") or selected("topo2d") then
  if selected("seed004") then bench_seed004("cpu", "f32") end
  for _, precision in ipairs { "f32", "f64" } do bench_topo_iteration("walker2d_topo", "cpu", precision) end
  print()
end

local any = false
for _, sc in ipairs(SCENES) do any = any or selected(sc.name) end
if not any and (selected("walker2d") or selected("gpu") or selected("busy") or selected("seed004") or
    selected("rotator") or selected("topo2d")) then os.exit(0) end
if not any then
  local names = {}
  for _, sc in ipairs(SCENES) do names[#names + 1] = sc.name end
  print("no scene matches the filter " .. table.concat(FILTERS, ", ") .. " (scenes: " .. table.concat(names, ", ") .. ", walker2d)")
  os.exit(1)
end
local t_start = now()
local rows = {}
local hdr = string.format("%-12s %7s %4s %3s | %9s %9s %9s | %8s %8s %8s | %6s %6s %4s | %7s %7s",
  "scene", "parts", "prec", "thr", "fwd ns", "rec ns", "bwd ns", "fwd ms", "rec ms", "bwd ms", "S_fwd", "S_bwd",
  "cpu", "fwd/CQ", "bwd/CQ")
print("Per substep. ns = ns per particle-substep; ms = wall ms per substep; S = steps timed;")
print("fwd/CQ, bwd/CQ = our ms / ChainQueen's ms (CUDA on a GTX 1080 Ti; ours: this CPU).")
print("rec = forward while recording a memo (checkpoint_every = 1; second recording into the same memo, see rec1 below);")
print("bwd = memo:backward() alone over that recording.")
print("cpu = process CPU seconds / wall seconds while timing fwd and bwd (the lower): about the thread count when the")
print("      machine is idle; below 0.8 x threads (BUSY) means other processes took the cores: those numbers are unreliable.")
print()
print(hdr)
print(string.rep("-", #hdr))
io.stdout:flush()
for _, sc in ipairs(SCENES) do
  if selected(sc.name) then
    for _, prec in ipairs(PRECISIONS) do
      for _, th in ipairs(THREADS) do
        local r = bench(sc, prec, th)
        rows[#rows + 1] = r
        print(string.format("%-12s %7d %4s %3d | %9.1f %9.1f %9.1f | %8.3f %8.3f %8.3f | %6d %6d %4.2f | %7.1f %7.1f%s",
          r.scene, r.n, r.precision, r.threads, r.fwd / r.n * 1e9, r.rec / r.n * 1e9, r.bwd / r.n * 1e9,
          r.fwd * 1e3, r.rec * 1e3, r.bwd * 1e3, r.fwd_steps, r.bwd_steps, r.util,
          r.fwd * 1e3 / sc.cq_fwd, r.bwd * 1e3 / sc.cq_bwd, r.contended and "  BUSY" or ""))
        io.stdout:flush()
      end
    end
  end
end
local busy = 0
for _, r in ipairs(rows) do if r.contended then busy = busy + 1 end end
if busy > 0 then
  print(string.format("NOTE: %d row(s) BUSY: other processes held the cores. OpenMP threads that spin at barriers", busy))
  print("      (libgomp's default) stall badly when a core is taken; rerun on an idle machine, or with")
  print("      OMP_WAIT_POLICY=passive to see the cost under contention.")
end

print()
print("Derived: bwd/fwd = backward over forward cost (1 and 2 threads); x2t = 2-thread speedup (1-thread ms / 2-thread ms);")
print("rec1 ms = first recording into a fresh memo (includes first-touch page faults), 1 and 2 threads.")
local hdr2 = string.format("%-12s %4s | %8s %8s | %8s %8s | %8s %8s", "scene", "prec", "bwd/fwd1", "bwd/fwd2",
  "fwd x2t", "bwd x2t", "rec1 ms1", "rec1 ms2")
print(hdr2)
print(string.rep("-", #hdr2))
local by = {}
for _, r in ipairs(rows) do by[r.scene .. "/" .. r.precision .. "/" .. r.threads] = r end
for _, sc in ipairs(SCENES) do
  for _, prec in ipairs(PRECISIONS) do
    local r1, r2 = by[sc.name .. "/" .. prec .. "/1"], by[sc.name .. "/" .. prec .. "/2"]
    if r1 and r2 then
      print(string.format("%-12s %4s | %8.2f %8.2f | %8.2f %8.2f | %8.3f %8.3f", sc.name, prec, r1.bwd / r1.fwd,
        r2.bwd / r2.fwd, r1.fwd / r2.fwd, r1.bwd / r2.bwd, r1.rec_cold * 1e3, r2.rec_cold * 1e3))
    end
  end
end

-- Checkpointing variants: on the last selected scene (the largest), f64, 2 threads, with that row's S_bwd.
print()
local pick
for _, r in ipairs(rows) do if r.precision == "f64" and r.threads == 2 then pick = r end end
pick = pick or rows[#rows]
print(string.format("Checkpointing (%s, %s, %d threads, %d steps): checkpoint_every = 1 (store all), 0 (auto: all if",
  pick.scene, pick.precision, pick.threads, pick.bwd_steps))
print("they fit in 256 MiB, else ~sqrt(N)), K = ceil(sqrt(N)) (backward recomputes each segment's states).")
local hdr3 = string.format("%-16s %7s %9s | %9s %9s | %8s %8s | %7s %4s", "checkpoint_every", "stored", "MiB",
  "rec ns", "bwd ns", "rec ms", "bwd ms", "bwd/fwd", "cpu")
print(hdr3)
print(string.rep("-", #hdr3))
for _, v in ipairs(bench_ckpt(pick.sc, pick.precision, pick.threads, pick.bwd_steps)) do
  print(string.format("%-16s %7d %9.1f | %9.1f %9.1f | %8.3f %8.3f | %7.2f %4.2f%s",
    v.ck == 0 and "0 (auto)" or tostring(v.ck), v.stored, v.mib, v.rec / pick.n * 1e9, v.bwd / pick.n * 1e9,
    v.rec * 1e3, v.bwd * 1e3, v.bwd / pick.fwd, v.util, v.util < 0.8 * pick.threads and "  BUSY" or ""))
end

print()
print("Scene setup: spacing dx/2, density 1, NeoHookean E = 1e3, nu = 0.3, gravity -9.8, friction floor (0.5), slip walls.")
for _, sc in ipairs(SCENES) do
  for _, r in ipairs(rows) do
    if r.scene == sc.name then
      print(string.format("  %-12s %dD grid %s, dx = 1/%d, dt = %g (stable_dt %.3g), ChainQueen %.3f ms F / %.3f ms B",
        sc.name, sc.dim, table.concat(sc.res, "x"), math.floor(1 / sc.dx + 0.5), sc.dt, r.sdt, sc.cq_fwd, sc.cq_bwd))
      break
    end
  end
end

print(string.format("\nload at end: %s", read_first("/proc/loadavg", "^(%S+ %S+ %S+)") or "?"))
print(string.format("total time: %.1f s", now() - t_start))
