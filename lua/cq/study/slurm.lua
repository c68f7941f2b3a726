-- Private: `cqlua study slurm` (cq.study). Writes <dir>/slurm/array.sh and submits the study's unfinished rows as
-- one SLURM job array (sbatch --array): task id = row number, each task runs `cqlua study worker STUDY ROW`, the
-- same worker as a local run, so rows, manifests and `cqlua study collect` are the same on the cluster.
local fs = require "cq._fs"
local proc = require "cq._proc"
local cluster = require "cq.study.cluster"

local M = {}

--- The command `cqlua study SUB <study file> --dir <study dir>` for this study, as it works from any directory.
function M.command(sub, study)
  return string.format("cqlua study %s %s --dir %s", sub, cluster.word(study.file), cluster.word(study.dir))
end

--- Whether sbatch's error output says that no controller answered: no configuration found (sbatch then asks DNS
--- for a configless controller and fails), or one configured but not reachable.
function M.no_controller(err)
  local e = err:lower()
  for _, pattern in ipairs { "unable to contact slurm controller", "could not establish a configuration source",
    "fetch_config", "dns srv lookup failed", "unable to establish controller" } do
    if e:find(pattern, 1, true) then return true end
  end
  return false
end

--- The last non-empty line of text (sbatch's own summary of what failed).
function M.last_line(text)
  local last = ""
  for line in text:gmatch("[^\n]+") do
    if line:match("%S") then last = line end
  end
  last = last:gsub("^%s+", ""):gsub("%s+$", "")
  return #last > 300 and (last:sub(1, 300) .. "...") or last
end

--- What to do when no controller answered: point SLURM_CONF at a local cluster that is running, or start one.
function M.controller_hint()
  local conf = cluster.running_conf()
  if conf and os.getenv("SLURM_CONF") ~= conf then
    return "no SLURM controller answered; a local cluster is running on this machine (" .. cluster.DEFAULT_DIR ..
      "): point sbatch at it with `export SLURM_CONF=" .. cluster.word(conf) .. "` and submit again"
  end
  return "no SLURM controller answered; to try studies on this machine start a local one-node cluster with `" ..
    cluster.START .. "` (as root) and export the SLURM_CONF it prints"
end

--- The hint's line, and the way to run the study here instead.
function M.hint(study, what)
  return "\n  " .. what .. ", or run the study locally with `" .. M.command("run", study) .. "`"
end

--- "1-3,5,8-9" for the sorted list of row numbers.
function M.ranges(list)
  local parts, k = {}, 1
  while k <= #list do
    local j = k
    while j < #list and list[j + 1] == list[j] + 1 do j = j + 1 end
    parts[#parts + 1] = j > k and (list[k] .. "-" .. list[j]) or tostring(list[k])
    k = j + 1
  end
  return table.concat(parts, ",")
end

local function has_option(list, name)
  for _, a in ipairs(list) do
    if a == name or a:sub(1, #name + 1) == name .. "=" then return true end
  end
  return false
end

--- Submits the unfinished rows (or opts.rows' unfinished ones). opts: threads (per task, default the study's or 1),
--- max_running (the array's % throttle), sbatch (a list of options passed to sbatch as they are), dry_run (write
--- the script, print the command, submit nothing), rows. Returns the exit status (sbatch's; 0 when nothing to do).
function M.submit(study, opts)
  local sbatch_opts = opts.sbatch or {}
  if has_option(sbatch_opts, "--array") or has_option(sbatch_opts, "-a") then
    error("cqlua study slurm: the study sets --array (one task per unfinished row); choose rows with --rows", 0)
  end
  local pending = {}
  for _, i in ipairs(require("cq.study.run").selected(study, opts.rows)) do
    local m = study:manifest(i)
    if not (m and m.status == "ok") then pending[#pending + 1] = i end
  end
  if #pending == 0 then
    print(string.format("cqlua study slurm: %s: every row is done; nothing to submit (%s)", study.name,
      M.command("collect", study)))
    return 0
  end
  for _, i in ipairs(pending) do study:row_hash(i) end -- a broken script or args fails here, not in 1000 tasks
  local threads = opts.threads or study.threads or 1
  local sdir = study.dir .. "/slurm"
  local ok, err = fs.mkdir_p(sdir)
  if not ok then error("cqlua study slurm: cannot create " .. sdir .. " (" .. tostring(err) .. ")", 0) end
  local array = M.ranges(pending) .. (opts.max_running and ("%" .. opts.max_running) or "")
  local lines = {
    "#!/bin/sh",
    "# Written by cqlua study slurm: one task per row of " .. study.file,
    "#SBATCH --job-name=cq-" .. study.name,
    "#SBATCH --array=" .. array,
    "#SBATCH --cpus-per-task=" .. threads,
    "# (--output is on sbatch's command line, where the path is quoted)",
  }
  if study.time_limit and not has_option(sbatch_opts, "--time") and not has_option(sbatch_opts, "-t") then
    -- the worker stops the run at the study's limit first and records "timeout"; a minute more for that
    lines[#lines + 1] = "#SBATCH --time=" .. math.ceil(study.time_limit / 60) + 1
  end
  lines[#lines + 1] = string.format('exec %s study worker %s "$SLURM_ARRAY_TASK_ID" --dir %s --threads %d',
    proc.quote(require("cq._paths").exe), proc.quote(study.file), proc.quote(study.dir), threads)
  local script = sdir .. "/array.sh"
  fs.write_atomic("cqlua study slurm", script, table.concat(lines, "\n") .. "\n")
  local cmd = { "sbatch", "--parsable", proc.quote("--output=" .. sdir .. "/%A_%a.out") }
  for _, a in ipairs(sbatch_opts) do cmd[#cmd + 1] = proc.quote(a) end
  cmd[#cmd + 1] = proc.quote(script)
  local command = table.concat(cmd, " ")
  print(string.format("cqlua study slurm: %s: %d of %d rows to run as array %s (%s)", study.name, #pending,
    #study.rows, array, script))
  if opts.dry_run then
    print("  (dry run) " .. command)
    return 0
  end
  if not proc.which("sbatch") then
    error("cqlua study slurm: sbatch is not on PATH (on a cluster, run this on its login node; `--dry-run` writes "
      .. "the script only)" .. M.hint(study, "to try studies on this machine install SLURM as root (`apt-get install "
      .. "slurm-wlm munge`) and start a local one-node cluster with `" .. cluster.START .. "`"), 0)
  end
  local conf = os.getenv("SLURM_CONF")
  if conf and conf ~= "" and not fs.exists(conf) then -- sbatch would retry reading it for a minute
    error("cqlua study slurm: SLURM_CONF names " .. conf .. ", which does not exist (a local cluster's directory "
      .. "removed?)" .. M.hint(study, "point SLURM_CONF at your cluster's slurm.conf or unset it; to try studies on "
      .. "this machine start a local one-node cluster with `" .. cluster.START .. "` (as root) and export the "
      .. "SLURM_CONF it prints"), 0)
  end
  -- sbatch's job id (--parsable: its first line) is printed as soon as it comes, so that with --wait the job can be
  -- followed; its error output is kept for the message.
  local errfile = os.tmpname()
  io.stdout:flush()
  local p = io.popen(command .. " 2>" .. proc.quote(errfile) .. "; echo \"rc=$?\"")
  local job, rc = nil, 1
  for line in p:lines() do
    local code = line:match("^rc=(%d+)$")
    if code then
      rc = tonumber(code)
    elseif not job and line:match("^%d+") then
      job = line:match("^(%d+)")
      print(string.format("  submitted job %s; follow it with squeue -j %s; logs in %s/; then: %s", job, job, sdir,
        M.command("collect", study)))
      io.stdout:flush()
    elseif line ~= "" then
      print("  sbatch: " .. line)
    end
  end
  p:close()
  local f = io.open(errfile, "rb")
  local err = f and f:read("*a") or ""
  if f then f:close() end
  os.remove(errfile)
  err = err:gsub("%s+$", "")
  if job then
    if err ~= "" then io.stderr:write(err, "\n") end
    if rc ~= 0 then print("  sbatch exited with status " .. rc .. " (with --wait: some rows failed or timed out)") end
    return rc
  end
  if M.no_controller(err) then
    error(string.format("cqlua study slurm: sbatch could not submit the array (exit status %d): %s", rc,
      M.last_line(err)) .. M.hint(study, M.controller_hint()), 0)
  end
  if #err > 2000 then err = "..." .. err:sub(-2000) end
  error("cqlua study slurm: sbatch failed (exit status " .. rc .. ")" .. (err ~= "" and (": " .. err) or ""), 0)
end

return M
