-- tools/bench_peers.lua: cqlua's walker2d against a Taichi implementation of the same scene, run back to back.
--
-- usage: build/bin/cqlua tools/bench_peers.lua [rounds=3] [iters=4] [threads=2]      (make bench-peers)
--   env PYTHON: the Python interpreter (default python3); it needs taichi (make bench-peers installs it)
--
-- Each round runs examples/walker2d.lua (f32) for `iters` optimization iterations, then
-- tools/peers/taichi_walker.py (Taichi's CPU backend, cpu_max_num_threads = threads) for as many, both from the
-- same initial controller weights (the walker's, regenerated here and handed to the script as JSON), so the
-- two sides alternate: cqlua, Taichi, cqlua, Taichi, ... An iteration is forward + backward + gradient step.
-- The first iteration of every round is left out of the means (Taichi compiles its kernels there). The ratio
-- printed is the one measured in this invocation; without python3 or taichi it prints "peer not measured: ..."
-- and exits 0. cpu = process CPU seconds / wall seconds over the timed iterations: about the thread count on an
-- idle machine; other processes taking a core show as a lower cqlua figure (its OpenMP threads wait at barriers).

local root = ((package.loaded["cq._paths"] or {}).lua or "lua") .. "/.."
local now = require("cq.clock").now

local ROUNDS = tonumber(arg and arg[1]) or 3
local ITERS = tonumber(arg and arg[2]) or 4
local THREADS = tonumber(arg and arg[3]) or 2
if ROUNDS < 1 or ITERS < 2 or THREADS < 1 then
  print("usage: cqlua tools/bench_peers.lua [rounds=3 (>= 1)] [iters=4 (>= 2)] [threads=2 (>= 1)]")
  os.exit(1)
end
local PYTHON = os.getenv("PYTHON") or "python3"
local SCRIPT = root .. "/tools/peers/taichi_walker.py"

local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local function command(cmd) -- stdout + stderr of a shell command, trailing white space removed
  local p = io.popen(cmd .. " 2>&1")
  local s = p:read("*a") or ""
  p:close()
  return (s:gsub("%s+$", ""))
end
local function loadavg()
  local f = io.open("/proc/loadavg")
  local s = f and f:read("*l") or ""
  if f then f:close() end
  return s:match("^(%S+ %S+ %S+)") or "?"
end

---------------------------------------------------------------- is the peer there?
local function not_measured(why)
  print("peer not measured: " .. why)
  os.exit(0)
end
if command("command -v " .. PYTHON .. " >/dev/null && echo yes") ~= "yes" then
  not_measured(PYTHON .. " not found (set PYTHON=/path/to/python3)")
end
local tver = command(PYTHON .. " -c 'import taichi; print(\".\".join(map(str, taichi.__version__)))'")
local taichi_version = tver:match("([%d%.]+)$")
if not taichi_version then
  not_measured("taichi is not importable by " .. PYTHON .. " (make bench-peers installs it): " ..
    (tver:match("([^\n]*)$") or tver))
end

---------------------------------------------------------------- the walker's initial weights
-- The same draw as examples/walker2d.lua (math.randomseed(0), W_ij = 0.01 N(0, 1) by Box-Muller, b = 0).
math.randomseed(0)
local W = {}
for i = 1, 4 do W[i] = {} for j = 1, 4 do
  W[i][j] = 0.01 * math.sqrt(-2 * math.log(1 - math.random())) * math.cos(2 * math.pi * math.random())
end end
local weights = os.tmpname()
do
  local rows = {}
  for i = 1, 4 do rows[i] = string.format("[%.17g, %.17g, %.17g, %.17g]", W[i][1], W[i][2], W[i][3], W[i][4]) end
  local f = assert(io.open(weights, "w"))
  f:write('{"W": [' .. table.concat(rows, ", ") .. '], "b": [0, 0, 0, 0]}\n')
  f:close()
end

---------------------------------------------------------------- one round of each side
-- cqlua: examples/walker2d.lua in its own environment, its per-iteration lines captured.
local function run_cqlua(round)
  local chunk = assert(loadfile(root .. "/examples/walker2d.lua"))
  local r = { loss = {}, seconds = {} }
  local c1, w1 -- CPU and wall clock at the end of the first iteration (the walker prints right after each)
  local function capture(...)
    local line = table.concat({ ... }, "\t")
    local it, loss, sec = line:match("^iter%s+(%d+)%s+loss%s+(%S+)%s+(%S+) s/iter")
    if it then
      r.loss[#r.loss + 1], r.seconds[#r.seconds + 1] = tonumber(loss), tonumber(sec)
      if it == "1" then c1, w1 = os.clock(), now() else r.cpu = (os.clock() - c1) / (now() - w1) end
      print(string.format("  cqlua   round %d  %s", round, line))
      io.stdout:flush()
    end
  end
  setfenv(chunk, setmetatable({ arg = { tostring(ITERS), "f32", tostring(THREADS) }, print = capture },
    { __index = _G }))
  local ret = chunk()
  r.loss[1] = ret.initial -- full precision (the printed one has 6 decimals)
  collectgarbage()
  return r
end

-- Taichi: tools/peers/taichi_walker.py in a child process; its last line carries the numbers.
local function run_taichi(round)
  local cmd = string.format("%s %s --iters %d --threads %d --weights %s 2>&1", PYTHON, quote(SCRIPT), ITERS,
    THREADS, quote(weights))
  local p = assert(io.popen(cmd))
  local r, tail = nil, {}
  for line in p:lines() do
    if line:match("^iter ") then
      print(string.format("  Taichi  round %d  %s", round, line))
      io.stdout:flush()
    elseif line:match("^RESULT ") then
      r = { loss = {}, seconds = {} }
      for v in line:match("loss=(%S+)"):gmatch("[^,]+") do r.loss[#r.loss + 1] = tonumber(v) end
      for v in line:match("seconds=(%S+)"):gmatch("[^,]+") do r.seconds[#r.seconds + 1] = tonumber(v) end
      local cpu, wall, it = 0, 0, 0
      for v in line:match("cpu=(%S+)"):gmatch("[^,]+") do
        it = it + 1
        if it > 1 then cpu, wall = cpu + tonumber(v), wall + r.seconds[it] end
      end
      r.cpu = cpu / wall
    else
      tail[#tail + 1] = line
      if #tail > 20 then table.remove(tail, 1) end
    end
  end
  p:close()
  if not r or #r.seconds ~= ITERS then
    print("peer not measured: " .. SCRIPT .. " failed; its last lines:\n" .. table.concat(tail, "\n"))
    os.remove(weights)
    os.exit(1)
  end
  return r
end

---------------------------------------------------------------- run, interleaved
print("bench_peers: walker2d (examples/walker2d.lua) vs the same scene in Taichi (tools/peers/taichi_walker.py)")
print(string.format("date:    %s", os.date("%Y-%m-%d %H:%M:%S %Z")))
print(string.format("machine: %s, nproc %s", command("grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'"),
  command("nproc")))
print(string.format("peer:    Taichi %s CPU backend (%s), cpu_max_num_threads = %d", taichi_version,
  command(PYTHON .. " --version"), THREADS))
print(string.format("setup:   %d rounds x %d iterations each side, cqlua then Taichi; f32, %d threads", ROUNDS, ITERS,
  THREADS))
print(string.format("load:    %s (1/5/15 min) at start", loadavg()))
io.stdout:flush()
local t_start = now()
local runs = { cqlua = {}, taichi = {} }
for round = 1, ROUNDS do
  runs.cqlua[round] = run_cqlua(round)
  runs.taichi[round] = run_taichi(round)
end
os.remove(weights)

---------------------------------------------------------------- report
-- Iterations after the first of each round: mean, min, max; per round: mean and cpu/wall.
local function steady(side)
  local sum, n, lo, hi, rounds, cpu = 0, 0, math.huge, 0, {}, {}
  for round, r in ipairs(runs[side]) do
    local rs = 0
    for it = 2, #r.seconds do
      local s = r.seconds[it]
      sum, n, lo, hi, rs = sum + s, n + 1, math.min(lo, s), math.max(hi, s), rs + s
    end
    rounds[round] = string.format("%.3f", rs / (#r.seconds - 1))
    cpu[round] = string.format("%.2f", r.cpu)
  end
  return { mean = sum / n, min = lo, max = hi, n = n, rounds = table.concat(rounds, " "), cpu = table.concat(cpu, " ") }
end
local c, t = steady("cqlua"), steady("taichi")
print()
print("loss by iteration (round 1; plain gradient descent, lr 0.1, from the same initial weights):")
print(string.format("  %4s %14s %14s %10s", "iter", "cqlua", "Taichi", "rel. diff"))
local lc, lt = runs.cqlua[1].loss, runs.taichi[1].loss
for it = 1, ITERS do
  print(string.format("  %4d %14.7f %14.7f %10.2e", it, lc[it], lt[it], math.abs(lc[it] - lt[it]) / math.abs(lc[it])))
end
print(string.format("initial loss: cqlua %.7f, Taichi %.7f (relative difference %.1e)", lc[1], lt[1],
  math.abs(lc[1] - lt[1]) / math.abs(lc[1])))
print()
print(string.format("seconds per iteration (forward + backward + update), %d iterations each (first of each round " ..
  "left out):", c.n))
print(string.format("  cqlua   mean %.3f  min %.3f  max %.3f   round means %s   cpu %s", c.mean, c.min, c.max,
  c.rounds, c.cpu))
print(string.format("  Taichi  mean %.3f  min %.3f  max %.3f   round means %s   cpu %s", t.mean, t.min, t.max,
  t.rounds, t.cpu))
local ratio = t.mean / c.mean
print(string.format("measured in this run: Taichi %s CPU / cqlua = %.2f (mean / mean; min / min %.2f): " ..
  "cqlua is %.1fx %s", taichi_version, ratio, t.min / c.min, ratio >= 1 and ratio or 1 / ratio,
  ratio >= 1 and "faster" or "slower"))
local busy = false
for _, r in ipairs(runs.cqlua) do busy = busy or r.cpu < 0.8 * THREADS end
if busy then
  print(string.format("NOTE: cqlua's cpu/wall fell below 0.8 x %d threads in some round: other processes", THREADS))
  print("      held the cores and the ratio is not meaningful; rerun on an idle machine.")
end
print(string.format("load:    %s (1/5/15 min) at end; total %.0f s", loadavg(), now() - t_start))
