-- Test helpers for specs that run programs: a shell command's output and exit status, and a fresh temporary directory.
local M = {}

--- Runs cmd in a subshell; returns its stdout and stderr together, and its exit status.
function M.sh(cmd)
  local p = assert(io.popen("(" .. cmd .. ") 2>&1; echo \"rc=$?\""))
  local out = p:read("*a")
  p:close()
  local rc = tonumber(out:match("rc=(%d+)%s*$"))
  return out:gsub("rc=%d+%s*$", ""), rc
end

--- s quoted for the shell.
function M.quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

--- A new, empty temporary directory.
function M.tmpdir()
  local d = os.tmpname()
  os.remove(d)
  os.execute("mkdir -p " .. M.quote(d))
  return d
end

--- The absolute path of the cqlua host running the specs (to start more of it in child processes).
function M.exe()
  local exe = require("cq._paths").exe or arg[-1]
  if exe:sub(1, 1) ~= "/" then exe = os.getenv("PWD") .. "/" .. exe end
  return exe
end

--- Writes text to the file at path.
function M.write_file(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

--- The text of the file at path, or nil when it cannot be read.
function M.read_file(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

return M
