-- Private: running external programs (ffmpeg, gnuplot) as subprocesses: finding them on PATH, quoting arguments for
-- the shell, and running a command with its error output kept for the message.
local M = {}

--- The argument s quoted for /bin/sh.
function M.quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

--- The path of program name found on PATH, or nil.
function M.which(name)
  for dir in (os.getenv("PATH") or ""):gmatch("[^:]+") do
    local path = dir .. "/" .. name
    local f = io.open(path, "rb")
    if f then f:close() return path end
  end
  return nil
end

--- Runs a shell command; returns true, or false and its error output (last lines) with the exit status.
function M.run(cmd)
  local errfile = os.tmpname()
  local a, _, code = os.execute(cmd .. " 2>" .. M.quote(errfile))
  local ok = a == true or a == 0 -- LuaJIT: the raw status; Lua 5.2 compatible builds: true / nil, "exit", code
  local f = io.open(errfile, "rb")
  local err = f and f:read("*a") or ""
  if f then f:close() end
  os.remove(errfile)
  if ok then return true end
  if #err > 2000 then err = "..." .. err:sub(-2000) end
  local status = code or (type(a) == "number" and math.floor(a / 256)) or "?"
  return false, string.format("exit status %s%s", tostring(status), err ~= "" and (": " .. err:gsub("%s+$", "")) or "")
end

--- Runs gnuplot on a script (a list of lines); returns true, or false and gnuplot's error output.
function M.gnuplot(lines)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
  local ok, why = M.run("gnuplot " .. M.quote(path) .. " </dev/null >/dev/null")
  os.remove(path)
  return ok, why
end

return M
