-- Private: the `cqlua study ...` command line (engine/host/cqlua.c hands `study` and its arguments here).
local study_mod = require "cq.study"

local M = {}

local USAGE = [[
usage: cqlua study run STUDY.lua [--jobs N] [--threads T] [--rows LIST] [--dir DIR] [--oversubscribe]
       cqlua study slurm STUDY.lua [--threads T] [--max-running K] [--rows LIST] [--dir DIR] [--dry-run]
                                   [sbatch options...]
       cqlua study collect STUDY.lua [--by NAME,...] [--top K] [--dir DIR]
       cqlua study list STUDY.lua [--dir DIR]
       cqlua study cluster start|status|stop [--dir DIR]
  run      runs every unfinished row (missing, failed, timed out, interrupted) in N worker processes of T threads
           each (default T = cores / N); finished rows are skipped, so the same command resumes a study
  slurm    submits the unfinished rows as one SLURM job array (sbatch --array); options it does not know go to
           sbatch (e.g. --partition=short --time=30 --wait)
  collect  gathers the rows' manifests into DIR/results.csv, plots each metric against each swept parameter
           (DIR/<metric>.png), summarises groups of rows (--by; DIR/summary.csv), prints the best rows and failures
  list     prints the rows, their parameters, status and directories
  cluster  starts, reports on or stops a one-node SLURM on this machine for trying `cqlua study slurm` (as root;
           Debian's slurm-wlm and munge; its files and logs in DIR, default /tmp/cqlua-slurm); start prints the
           `export SLURM_CONF=...` that points sbatch at it
  LIST is 1-based rows such as 1,4-6. DIR defaults to the study's dir (out/studies/<name>), for cluster to
  /tmp/cqlua-slurm.
(worker and exec are the runner's own subcommands: cqlua study worker STUDY.lua ROW, cqlua study exec STUDY.lua ROW)]]

local function fail(msg) error("cqlua study: " .. msg .. " (cqlua study --help)", 0) end

local function parse_rows(text)
  local rows = {}
  for part in tostring(text):gmatch("[^,]+") do
    local a, b = part:match("^%s*(%d+)%s*%-%s*(%d+)%s*$")
    if a then
      if tonumber(b) < tonumber(a) then fail("--rows: the range " .. part .. " is empty (write the lower row first)") end
      for i = tonumber(a), tonumber(b) do rows[#rows + 1] = i end
    elseif part:match("^%s*%d+%s*$") then
      rows[#rows + 1] = tonumber(part)
    else
      fail("--rows must be row numbers and ranges such as 1,4-6 (got " .. text .. ")")
    end
  end
  if #rows == 0 then fail("--rows must name at least one row, such as 1,4-6 (got \"" .. tostring(text) .. "\")") end
  return rows
end

local function positive_int(name, v)
  local n = tonumber(v)
  if not n or n < 1 or n ~= math.floor(n) then fail(string.format("%s must be an integer >= 1 (got %s)", name, tostring(v))) end
  return n
end

-- Our options out of args (a list); the rest, in order, when pass_rest (sbatch's), else an error.
local function parse(args, known, pass_rest)
  local o, rest, k = {}, {}, 1
  while k <= #args do
    local a = args[k]
    local name, value = a:match("^(%-%-[%w%-]+)=(.*)$")
    name = name or a
    local kind = known[name]
    if kind == "flag" then
      if value ~= nil then fail(name .. " takes no value (got " .. a .. ")") end
      o[name] = true
    elseif kind then
      if value == nil then
        k = k + 1
        value = args[k]
        if value == nil then fail(name .. " needs a value") end
      end
      o[name] = value
    elseif pass_rest then
      rest[#rest + 1] = a
    else
      fail("unknown option " .. a)
    end
    k = k + 1
  end
  return o, rest
end

local body

--- Runs `cqlua study ...` with the arguments after "study"; returns the exit status. Errors (a bad command line, a
--- study file that does not load) are printed as one message, without a traceback, and give exit status 1; an
--- interruption keeps the host's handling (status 130 / 143).
function M.main(...)
  local ok, status = pcall(body, ...)
  if ok then return status end
  local msg = tostring(status)
  if msg:match("^interrupted by SIG") then error(msg, 0) end
  msg = msg:gsub("^cqlua study:%d+: ", "")
  io.stderr:write(msg:match("^cqlua") and msg or ("cqlua study: " .. msg), "\n")
  return 1
end

function body(...)
  local args = { ... }
  local cmd, file = args[1], args[2]
  if cmd == nil or cmd == "-h" or cmd == "--help" or cmd == "help" then print(USAGE) return 0 end
  if cmd == "cluster" then
    local action = args[2]
    if action ~= "start" and action ~= "stop" and action ~= "status" then
      fail("cluster takes start, stop or status: cqlua study cluster start|status|stop [--dir DIR] (got " ..
        (action and ("\"" .. action .. "\"") or "nothing") .. ")")
    end
    local o = parse({ select(3, ...) }, { ["--dir"] = "value" })
    return require("cq.study.cluster").main(action, o["--dir"])
  end
  if file == nil then fail("give the study file") end
  if file:sub(1, 1) == "-" then fail("the study file comes right after the command: cqlua study " .. cmd .. " STUDY.lua [options] (got " .. file .. ")") end
  local rest = {}
  for k = 3, #args do rest[#rest + 1] = args[k] end
  local run = require "cq.study.run"
  if cmd == "run" then
    local o = parse(rest, { ["--jobs"] = "value", ["--threads"] = "value", ["--rows"] = "value", ["--dir"] = "value",
      ["--oversubscribe"] = "flag" })
    local study = study_mod.load(file, o["--dir"])
    return run.run_local(study, { jobs = o["--jobs"] and positive_int("--jobs", o["--jobs"]),
      threads = o["--threads"] and positive_int("--threads", o["--threads"]),
      rows = o["--rows"] and parse_rows(o["--rows"]), oversubscribe = o["--oversubscribe"] })
  elseif cmd == "slurm" then
    local o, sbatch = parse(rest, { ["--threads"] = "value", ["--max-running"] = "value", ["--rows"] = "value",
      ["--dir"] = "value", ["--dry-run"] = "flag" }, true)
    local study = study_mod.load(file, o["--dir"])
    return require("cq.study.slurm").submit(study, { threads = o["--threads"] and positive_int("--threads", o["--threads"]),
      max_running = o["--max-running"] and positive_int("--max-running", o["--max-running"]),
      rows = o["--rows"] and parse_rows(o["--rows"]), dry_run = o["--dry-run"], sbatch = sbatch })
  elseif cmd == "collect" then
    local o = parse(rest, { ["--by"] = "value", ["--top"] = "value", ["--dir"] = "value" })
    local study = study_mod.load(file, o["--dir"])
    local by
    if o["--by"] then
      by = {}
      for n in o["--by"]:gmatch("[^,%s]+") do by[#by + 1] = n end
      if #by == 0 then fail("--by must name one or more parameters, such as E,nu (got \"" .. o["--by"] .. "\")") end
    end
    local result = require("cq.study.collect").collect(study, { by = by,
      top = o["--top"] and positive_int("--top", o["--top"]) })
    if result.counts.unreadable then -- (a manifest cut short or not JSON: its row's results are lost, say so)
      io.stderr:write(string.format("cqlua study collect: %d manifest%s could not be read (listed above); run the " ..
        "study again to rerun %s\n", result.counts.unreadable, result.counts.unreadable == 1 and "" or "s",
        result.counts.unreadable == 1 and "its row" or "their rows"))
      return 1
    end
    return 0
  elseif cmd == "list" then
    local o = parse(rest, { ["--dir"] = "value" })
    local study = study_mod.load(file, o["--dir"])
    for i = 1, #study.rows do
      local m, unreadable = study:manifest(i)
      print(string.format("%4d  %-12s %s  %s%s", i, m and m.status or unreadable and "unreadable" or "not run",
        study:row_text(i), study:row_dir(i), unreadable and ("  (" .. unreadable .. ")") or ""))
    end
    return 0
  elseif cmd == "worker" or cmd == "exec" then
    local row = positive_int("ROW", rest[1])
    table.remove(rest, 1)
    local o = parse(rest, { ["--dir"] = "value", ["--threads"] = "value" })
    local study = study_mod.load(file, o["--dir"])
    if row > #study.rows then fail(string.format("row %d is not in 1..%d", row, #study.rows)) end
    if cmd == "exec" then return run.exec(study, row) end
    local m, code = run.worker(study, row, { threads = o["--threads"] and positive_int("--threads", o["--threads"]) })
    if code == run.BUSY then
      print(string.format("cqlua study: row %d is being run by worker pid %d on this host; not started again", row,
        m.worker_pid))
    else
      print("cqlua study: " .. run.row_line(study, m))
    end
    return code
  end
  fail("unknown command " .. tostring(cmd))
end

return M
