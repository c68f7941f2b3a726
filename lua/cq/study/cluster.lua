-- Private: `cqlua study cluster start|stop|status [--dir DIR]` (cq.study): a one-node SLURM on this machine (munged,
-- slurmctld and slurmd, as root; Debian's slurm-wlm and munge) for trying `cqlua study slurm`. The shipped script
-- tools/slurm_cluster.sh does the work (the test suite starts its cluster with the same script); its files, its
-- generated slurm.conf and the daemons' logs are in DIR (default /tmp/cqlua-slurm).
local fs = require "cq._fs"
local proc = require "cq._proc"

local M = {}

M.DEFAULT_DIR = "/tmp/cqlua-slurm"
M.START = "cqlua study cluster start"

--- s as one shell word: as it is when it needs no quoting, else quoted.
function M.word(s)
  s = tostring(s)
  if s:match("^[%w%./_%-+,:=@%%]+$") then return s end
  return proc.quote(s)
end

local function with_dir(command, dir)
  if dir == M.DEFAULT_DIR then return command end
  return command .. " --dir " .. M.word(dir)
end

--- The path of tools/slurm_cluster.sh: next to the cq Lua package's directory (the source tree's <root>/tools, or
--- <prefix>/share/cqlua/tools installed).
function M.script()
  local lua = require("cq._paths").lua
  local tried = "(the cq Lua package's directory is unknown)"
  if lua then
    lua = tostring(lua):gsub("/+$", "")
    local root = lua:find("/", 1, true) and fs.dirname(lua) or "." -- "lua" -> ".", "/lua" -> ""
    local path = root .. "/tools/slurm_cluster.sh"
    if fs.exists(path) then return path end
    tried = path
  end
  error("cqlua study cluster: cannot find the script that starts the cluster, tools/slurm_cluster.sh (looked for " ..
    tried .. "; make install puts it in <prefix>/share/cqlua/tools)", 0)
end

-- Runs the script with cmd and dir; its stdout lines are handed to each_line as they come, its stderr goes to ours.
-- Returns the exit status and the stdout lines.
local function run_script(cmd, dir, each_line)
  local command = string.format("CQ_CLUSTER_PROG='cqlua study cluster' bash %s %s %s; echo \"rc=$?\"",
    proc.quote(M.script()), cmd, proc.quote(dir))
  io.stdout:flush()
  local p = assert(io.popen(command))
  local lines, rc = {}, 1
  for line in p:lines() do
    local code = line:match("^rc=(%d+)$")
    if code then
      rc = tonumber(code)
    else
      lines[#lines + 1] = line
      if each_line then each_line(line) end
    end
  end
  p:close()
  return rc, lines
end

local function pid_alive(path)
  local f = io.open(path, "r")
  if not f then return false end
  local pid = f:read("*l")
  f:close()
  return pid ~= nil and pid:match("^%d+$") ~= nil and fs.exists("/proc/" .. pid)
end

--- The slurm.conf of a cluster started by `cqlua study cluster start --dir dir` (default DIR) whose controller is
--- running, or nil.
function M.running_conf(dir)
  dir = dir or M.DEFAULT_DIR
  if pid_alive(dir .. "/slurmctld.pid") and fs.exists(dir .. "/slurm.conf") then return dir .. "/slurm.conf" end
  return nil
end

--- Runs `cqlua study cluster CMD` (start, stop or status) for the cluster in dir (nil: the default); returns the exit
--- status.
function M.main(cmd, dir)
  dir = require("cq.study").absolute(dir or M.DEFAULT_DIR):gsub("/+$", "")
  if cmd == "start" then
    local rc, lines = run_script("start", dir)
    local conf
    for _, line in ipairs(lines) do conf = conf or line:match("^SLURM_CONF=(.+)$") end
    if rc ~= 0 or not conf then
      io.stderr:write("cqlua study cluster: the local SLURM did not start (see above)", "\n")
      return rc ~= 0 and rc or 1
    end
    print("cqlua study cluster: a one-node SLURM is running on this machine (its files and logs: " .. dir .. ")")
    print("  point sbatch at it (in each shell that submits):  export SLURM_CONF=" .. M.word(conf))
    print("  then: cqlua study slurm STUDY.lua [--wait]; see it with: " .. with_dir("cqlua study cluster status", dir) ..
      "; stop it with: " .. with_dir("cqlua study cluster stop", dir))
    return 0
  elseif cmd == "status" then
    local rc = run_script("status", dir, function(line)
      if line:match("^SLURM_CONF=") then line = "export SLURM_CONF=" .. M.word(line:sub(#"SLURM_CONF=" + 1)) end
      print(line)
    end)
    if rc ~= 0 then io.stderr:write("  start it with: ", with_dir(M.START, dir), "\n") end
    return rc
  elseif cmd == "stop" then
    return (run_script("stop", dir, print))
  end
  error("cqlua study cluster: give start, stop or status (cqlua study --help)", 0)
end

return M
