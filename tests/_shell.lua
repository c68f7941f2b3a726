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

--- Starts `cqlua script` (a file name in dir) in the background in dir; returns a handle: out, err, rc (the files of
--- its output, errors and exit status), pid() (nil until it has started), wait(pattern, seconds) (true once its output
--- matches pattern, or once it has ended when pattern is "rc").
function M.spawn(dir, tag, script)
  local h = { dir = dir, out = dir .. "/" .. tag .. ".out", err = dir .. "/" .. tag .. ".err", rc = dir .. "/" .. tag .. ".rc" }
  os.execute(string.format("cd %s && (sh -c 'echo $$ > %s.pid; exec %s %s' > %s 2> %s; echo $? > %s) &",
    M.quote(dir), tag, M.quote(M.exe()), script, M.quote(h.out), M.quote(h.err), M.quote(h.rc)))
  h.pid = function() return tonumber(M.read_file(dir .. "/" .. tag .. ".pid") or "") end
  h.wait = function(pattern, seconds)
    for _ = 1, seconds * 20 do
      if pattern == "rc" then if (M.read_file(h.rc) or ""):match("%d") then return true end
      elseif (M.read_file(h.out) or ""):find(pattern) then return true end
      os.execute("sleep 0.05")
    end
    return false
  end
  return h
end

--- Writes an RGBA PNG of w x h pixels to path from pixel(i, j) -> {r, g, b[, a]} (column i, row j from the top,
--- 0-based; nil = white), through the host's PNG writer; returns path.
function M.png(path, w, h, pixel)
  local ffi = require "ffi"
  local rgba = ffi.new("uint8_t[?]", 4 * w * h)
  for j = 0, h - 1 do
    for i = 0, w - 1 do
      local c = pixel(i, j) or { 255, 255, 255 }
      local o = 4 * (j * w + i)
      rgba[o], rgba[o + 1], rgba[o + 2], rgba[o + 3] = c[1], c[2], c[3], c[4] or 255
    end
  end
  assert(ffi.C.cqh_png_write_rgba(path, w, h, rgba) == 0)
  return path
end

return M
