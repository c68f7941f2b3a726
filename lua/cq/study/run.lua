-- Private: running a study's rows (cq.study). Three layers of processes, the same locally and on SLURM:
--   run_local   `cqlua study run`: keeps N workers going, one row each, and prints a line per finished row;
--   worker      `cqlua study worker STUDY ROW` (a SLURM array task runs this): owns the row's manifest. It writes
--               "running", starts the run as a child process in the row's directory, enforces the time limit,
--               forwards an interruption, and writes the final status however the child ended (even by a crash);
--   exec        `cqlua study exec STUDY ROW`: the run itself (the script or the run function, in-process), its
--               metrics or error written to result.json for the worker.
local clock = require "cq.clock"
local fs = require "cq._fs"
local json = require "cq.json"
local proc = require "cq._proc"
local spawn = require "cq._spawn"
local host = require("cq.train").host

local M = {}
local SIGNALS = { [2] = "SIGINT", [15] = "SIGTERM" }
local GRACE = 10 -- s between the signal that stops a run and SIGKILL
M.BUSY = 3 -- the worker's exit status when another live worker on this host has claimed the row

local function now_iso() return os.date("!%Y-%m-%dT%H:%M:%SZ") end

local function cqlua_exe()
  local exe = require("cq._paths").exe
  if not exe then error("cqlua study: cannot find the cqlua executable (/proc/self/exe)", 0) end
  return exe
end

local function engine_info()
  return { version = require("cq._paths").version or "unknown", luajit = jit.version }
end

local function slurm_info()
  local job = os.getenv("SLURM_ARRAY_JOB_ID") or os.getenv("SLURM_JOB_ID")
  if not job then return nil end
  return { job_id = job, array_task_id = os.getenv("SLURM_ARRAY_TASK_ID"), node = os.getenv("SLURMD_NODENAME") }
end

-- The last n lines of a file, for failure messages.
local function tail(path, n)
  local f = io.open(path, "r")
  if not f then return "" end
  local lines = {}
  for line in f:lines() do
    lines[#lines + 1] = line
    if #lines > n then table.remove(lines, 1) end
  end
  f:close()
  return table.concat(lines, "\n")
end

-- ---- exec: one run, in-process -------------------------------------------------------------------------------------

-- The metrics named by the study, from what the run returned.
local function metrics_of(study, value)
  if type(value) ~= "table" then
    error(string.format("the run returned %s, not a table with the metrics %s", type(value),
      table.concat(study.metrics, ", ")), 0)
  end
  local out = {}
  for _, name in ipairs(study.metrics) do
    local v = value[name]
    if type(v) == "boolean" then v = v and 1 or 0 end
    if type(v) ~= "number" then
      error(string.format("the run returned no number for metric %s (got %s %s)", name, type(v),
        type(v) == "string" and string.format("%q", v) or tostring(v)), 0)
    end
    if v ~= v or v == math.huge or v == -math.huge then
      error(string.format("metric %s is %s", name, tostring(v)), 0)
    end
    out[name] = v
  end
  return out
end

--- Runs row i of study in the current directory (the row's) and writes result.json; returns the exit status.
function M.exec(study, i)
  package.path = study.base .. "/?.lua;" .. package.path -- the study's own modules
  local row = {}
  for k, v in pairs(study.rows[i]) do row[k] = v end
  local trace
  local ok, value = xpcall(function()
    if study.run then return study.run(row) end
    local path = study:resolve(study.script)
    local chunk, err = loadfile(path)
    if not chunk then error("cannot load script " .. path .. ": " .. tostring(err), 0) end
    local args = study:script_args(i)
    local a = { [0] = path }
    for k, v in ipairs(args) do a[k] = v end
    _G.arg = a
    return chunk(unpack(args))
  end, function(e)
    trace = debug.traceback(tostring(e), 2)
    return tostring(e)
  end)
  local result
  if ok then
    local good, metrics = pcall(metrics_of, study, value)
    if good then result = { ok = true, metrics = metrics } else result = { ok = false, error = metrics } end
  else
    io.stderr:write(trace or value, "\n")
    result = { ok = false, error = value }
  end
  json.write("result.json", result)
  if result.ok then
    local parts = {}
    for _, m in ipairs(study.metrics) do parts[#parts + 1] = string.format("%s = %.6g", m, result.metrics[m]) end
    print("cqlua study: row " .. i .. " done: " .. table.concat(parts, ", "))
  else
    io.stderr:write("cqlua study: row ", i, " failed: ", result.error, "\n")
  end
  return result.ok and 0 or 1
end

-- ---- worker: the row's manifest and the run's process ----------------------------------------------------------------

-- Claims row directory dir for this worker: an atomic mkdir of dir/.claim, then owner.json {host, pid} in it. A claim
-- held by a live worker on this host stands (two runners on one study); a stale one (its worker gone, or from
-- another host: a killed SLURM task) is taken over. Returns true, or nil and the owner.
local function claim(dir)
  local lock, me = dir .. "/.claim", { host = spawn.hostname(), pid = spawn.pid() }
  local unreadable_since
  for _ = 1, 100 do
    if spawn.mkdir(lock) then
      json.write(lock .. "/owner.json", me)
      return true
    end
    local ok, owner = pcall(json.read, lock .. "/owner.json")
    if ok and type(owner) == "table" then
      if owner.host == me.host and owner.pid ~= me.pid and spawn.alive(owner.pid) then return nil, owner end
      os.remove(lock .. "/owner.json") -- stale: take it over
      spawn.rmdir(lock)
    else -- another worker between its mkdir and its owner.json, or one that died there
      unreadable_since = unreadable_since or clock.now()
      if clock.now() - unreadable_since > 1 then os.remove(lock .. "/owner.json"); spawn.rmdir(lock) end
      spawn.sleep(0.02)
    end
  end
  error("cqlua study: cannot claim " .. dir .. " (" .. lock .. " keeps coming back)", 0)
end

local function release(dir)
  os.remove(dir .. "/.claim/owner.json")
  spawn.rmdir(dir .. "/.claim")
end

--- Runs row i as a child process and records it; returns the manifest (status ok | failed | timeout | interrupted) and
--- an exit status (0 ok, 1 failed or timeout, 130 interrupted). opts: threads.
function M.worker(study, i, opts)
  local dir = study:row_dir(i)
  local ok, err = fs.mkdir_p(dir)
  if not ok then error("cqlua study: cannot create " .. dir .. " (" .. tostring(err) .. ")", 0) end
  local old = study:manifest(i)
  if old and old.status == "ok" then return old, 0 end
  local claimed, owner = claim(dir)
  if not claimed then return { worker_pid = owner.pid }, M.BUSY end
  old = study:manifest(i) -- (it may have finished between the first look and the claim)
  if old and old.status == "ok" then release(dir) return old, 0 end
  local threads = opts.threads or study.threads or tonumber(os.getenv("SLURM_CPUS_PER_TASK")) or 1
  local m = { study = study.name, row = i, hash = study:row_hash(i), params = study.rows[i], status = "running",
    started = now_iso(), host = spawn.hostname(), worker_pid = spawn.pid(), threads = threads,
    attempt = (old and old.attempt or 0) + 1, engine = engine_info(), slurm = slurm_info(), log = "log.txt",
    time_limit = study.time_limit }
  if study.script then
    m.script = study.script
    m.args = study:script_args(i)
  end
  json.write(dir .. "/manifest.json", m)
  os.remove(dir .. "/result.json")

  local cmd = string.format("cd %s && exec env CQ_THREADS=%d OMP_NUM_THREADS=%d CQ_STUDY_ROW=%d %s study exec %s %d " ..
    "--dir %s >%s 2>&1", proc.quote(dir), threads, threads, i, proc.quote(cqlua_exe()), proc.quote(study.file), i,
    proc.quote(study.dir), proc.quote(dir .. "/log.txt"))
  local t0 = clock.now()
  local old_graceful = host.graceful(1)
  local child = spawn.start(cmd)
  local stop_at, kill_at, stopped_by, forwarded
  local code, sig
  while true do
    code, sig = spawn.poll(child)
    if code then break end
    local t = clock.now()
    local int = host.interrupted()
    if int ~= 0 and not forwarded then -- pass the interruption on, once: the run stops at its next substep
      forwarded = int
      spawn.kill(child, int)
      kill_at = kill_at or t + GRACE
    end
    if study.time_limit and not stop_at and t - t0 > study.time_limit then
      stop_at, stopped_by = t, "timeout"
      spawn.kill(child, spawn.SIGTERM)
      kill_at = t + GRACE
    end
    if kill_at and t > kill_at then spawn.kill(child, spawn.SIGKILL); kill_at = math.huge end
    spawn.sleep(0.05)
  end
  host.graceful(old_graceful)
  m.wall_seconds = clock.now() - t0
  m.finished = now_iso()
  m.exit_status = code
  local result
  if fs.exists(dir .. "/result.json") then
    local good, r = pcall(json.read, dir .. "/result.json")
    if good then result = r end
  end
  if result and result.ok then -- finished, even if a signal or the time limit came just after
    m.status, m.metrics = "ok", result.metrics
  elseif stopped_by == "timeout" then
    m.status, m.message = "timeout", string.format("stopped at the time limit of %g s", study.time_limit)
  elseif forwarded then
    m.status, m.message = "interrupted", "interrupted by " .. (SIGNALS[forwarded] or "a signal") .. "; run the study again to resume"
  elseif result then
    m.status, m.message = "failed", result.error
  else
    local last = tail(dir .. "/log.txt", 5)
    m.status = "failed"
    m.message = string.format("the run ended with exit status %d%s and no result%s", code,
      sig and string.format(" (signal %d)", sig) or "", last ~= "" and (": " .. last) or "; its log.txt is empty")
  end
  json.write(dir .. "/manifest.json", m)
  os.remove(dir .. "/result.json")
  release(dir)
  return m, (m.status == "ok" and 0) or (m.status == "interrupted" and 130) or 1
end

-- ---- run_local: N workers at a time -------------------------------------------------------------------------------

-- The rows to consider: every row, or the 1-based list in opts.rows.
local function selected(study, rows)
  local list = {}
  if rows then
    for _, i in ipairs(rows) do
      if i < 1 or i > #study.rows then
        error(string.format("cqlua study: --rows: row %d is not in 1..%d", i, #study.rows), 0)
      end
      list[#list + 1] = i
    end
  else
    for i = 1, #study.rows do list[i] = i end
  end
  return list
end
M.selected = selected

--- One line about a finished row.
function M.row_line(study, m)
  local what
  if m.status == "ok" then
    local parts = {}
    for _, name in ipairs(study.metrics) do parts[#parts + 1] = string.format("%s = %.6g", name, m.metrics[name]) end
    what = "ok, " .. table.concat(parts, ", ")
  else
    what = m.status .. ": " .. tostring(m.message)
  end
  return string.format("row %d (%s): %s [%.1f s]", m.row, study:row_text(m.row), what, m.wall_seconds or 0)
end

--- `cqlua study run`: every unfinished row (not ok: missing, failed, timed out or interrupted) in opts.jobs worker
--- processes of opts.threads threads. Returns the exit status: 0 when every row is ok, 1 when some failed (or were
--- left to another runner's worker), 130 when interrupted.
function M.run_local(study, opts)
  local cores = spawn.cores()
  local jobs = opts.jobs or 1
  local threads = opts.threads or study.threads or math.max(1, math.floor(cores / jobs))
  if jobs * threads > cores and not opts.oversubscribe then
    error(string.format("cqlua study run: --jobs %d x %d threads = %d threads on %d cores would oversubscribe them; " ..
      "lower --jobs or --threads (or pass --oversubscribe)", jobs, threads, jobs * threads, cores), 0)
  end
  local todo, done = {}, 0
  for _, i in ipairs(selected(study, opts.rows)) do
    local m, unreadable = study:manifest(i)
    if unreadable then print(string.format("cqlua study: row %d: %s; running it again", i, unreadable)) end
    if m and m.status == "ok" then done = done + 1 else todo[#todo + 1] = i end
  end
  local total = done + #todo
  print(string.format("cqlua study: %s: %d rows, %d done already, %d to run in %d worker%s x %d thread%s (%s)",
    study.name, total, done, #todo, jobs, jobs == 1 and "" or "s", threads, threads == 1 and "" or "s", study.dir))
  local wdir = study.dir .. "/workers"
  local ok, err = fs.mkdir_p(wdir)
  if not ok then error("cqlua study: cannot create " .. wdir .. " (" .. tostring(err) .. ")", 0) end
  local counts = { ok = 0, failed = 0, timeout = 0, interrupted = 0 }
  local running, nrunning, next_row, finished = {}, 0, 1, 0
  local old_graceful = host.graceful(1)
  local interrupted, kill_at
  local exe = cqlua_exe()
  local t_start = clock.now()
  while (not interrupted and next_row <= #todo) or next(running) do
    local int = host.interrupted()
    if int ~= 0 and not interrupted then -- stop launching; each worker stops its run and records it
      interrupted = int
      print("cqlua study: interrupted: stopping the running rows (a second Ctrl-C kills at once)")
      for pid in pairs(running) do spawn.kill(pid, int) end
      kill_at = clock.now() + 3 * GRACE
    end
    while not interrupted and next_row <= #todo and nrunning < jobs do
      local i = todo[next_row]
      next_row = next_row + 1
      local out = string.format("%s/row-%d.txt", wdir, i)
      -- setsid: a Ctrl-C in the terminal reaches this runner only; it forwards one SIGINT to each worker
      local cmd = string.format("exec setsid %s study worker %s %d --dir %s --threads %d >%s 2>&1", proc.quote(exe),
        proc.quote(study.file), i, proc.quote(study.dir), threads, proc.quote(out))
      running[spawn.start(cmd)] = { row = i, out = out }
      nrunning = nrunning + 1
    end
    for pid, w in pairs(running) do
      local code = spawn.poll(pid)
      if code then
        running[pid] = nil
        nrunning = nrunning - 1
        finished = finished + 1
        local m = study:manifest(w.row)
        if code == M.BUSY then
          counts.busy = (counts.busy or 0) + 1
          print(string.format("[%d/%d] row %d (%s): not started: another worker on this host (pid %s) runs it",
            done + finished, total, w.row, study:row_text(w.row), tostring(m and m.worker_pid)))
        elseif m and m.status ~= "running" then
          counts[m.status] = (counts[m.status] or 0) + 1
          local left = #todo - finished
          local eta = (left > 0 and not interrupted) and
            string.format("  ETA %.0f s", (clock.now() - t_start) * left / finished) or ""
          print(string.format("[%d/%d] %s%s", done + finished, total, M.row_line(study, m), eta))
        else
          counts.failed = counts.failed + 1
          print(string.format("[%d/%d] row %d (%s): the worker exited with status %d before recording the run: %s",
            done + finished, total, w.row, study:row_text(w.row), code, tail(w.out, 5)))
        end
      end
    end
    if kill_at and clock.now() > kill_at then -- a worker leads its own process group (setsid): its run goes too
      for pid in pairs(running) do spawn.kill(-pid, spawn.SIGKILL) end
      kill_at = math.huge
    end
    spawn.sleep(0.05)
  end
  host.graceful(old_graceful)
  print(string.format("cqlua study: %s: %d ok (%d of them earlier), %d failed, %d timed out, %d interrupted, %d not run%s",
    study.name, counts.ok + done, done, counts.failed, counts.timeout, counts.interrupted,
    #todo - finished, counts.busy and string.format(", %d run by another worker", counts.busy) or ""))
  if interrupted then
    print("cqlua study: interrupted; run the same command again to resume (finished rows are kept)")
    return 130
  end
  return (counts.failed + counts.timeout + (counts.busy or 0) > 0) and 1 or 0
end

return M
