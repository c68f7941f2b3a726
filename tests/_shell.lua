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

--- A new, empty temporary directory.
function M.tmpdir()
  local d = os.tmpname()
  os.remove(d)
  os.execute("mkdir -p " .. d)
  return d
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
