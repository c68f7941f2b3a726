-- Private: `cqlua study slurm` (cq.study). Writes <dir>/slurm/array.sh and submits the study's unfinished rows as
-- one SLURM job array (sbatch --array): task id = row number, each task runs `cqlua study worker STUDY ROW`, the
-- same worker as a local run, so rows, manifests and `cqlua study collect` are the same on the cluster.
local fs = require "cq._fs"
local proc = require "cq._proc"

local M = {}

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
    print(string.format("cqlua study slurm: %s: every row is done; nothing to submit (cqlua study collect %s)",
      study.name, study.file))
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
    error("cqlua study slurm: sbatch is not on PATH (run this on a SLURM login node; `--dry-run` writes the script only)", 0)
  end
  local p = io.popen(command .. " 2>&1; echo \"rc=$?\"")
  local out = p:read("*a")
  p:close()
  local rc = tonumber(out:match("rc=(%d+)%s*$")) or 1
  out = out:gsub("rc=%d+%s*$", ""):gsub("%s+$", "")
  local job = out:match("^(%d+)")
  if job then
    print(string.format("  submitted job %s; follow it with squeue -j %s; logs in %s/; then: cqlua study collect %s",
      job, job, sdir, study.file))
    if rc ~= 0 then print("  sbatch exited with status " .. rc .. " (with --wait: some rows failed or timed out)") end
  else
    error("cqlua study slurm: sbatch failed (exit status " .. rc .. "): " .. out, 0)
  end
  return rc
end

return M
