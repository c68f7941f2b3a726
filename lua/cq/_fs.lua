-- Private: small file-system helpers for writers (trajectory export, PNG frames, logs, checkpoints): directory
-- creation and checks, atomic writes, rotation of earlier files.
local M = {}

local lfs = require "lfs" -- LuaFileSystem (Debian lua-filesystem, installed by the Makefile)

--- True when path names an existing directory.
function M.is_dir(path) return lfs.attributes(path, "mode") == "directory" end

--- Creates directory dir and its missing parents; returns true, or nil and a reason.
function M.mkdir_p(dir)
  if dir == "" or M.is_dir(dir) then return true end
  local prefix = dir:sub(1, 1) == "/" and "/" or ""
  for part in dir:gmatch("[^/]+") do
    prefix = prefix .. part
    if not M.is_dir(prefix) then
      local ok, err = lfs.mkdir(prefix)
      if not ok and not M.is_dir(prefix) then return nil, err end
    end
    prefix = prefix .. "/"
  end
  return true
end

--- Renames the finished temporary file tmp over path (one step: readers see the old file or the new one, never a
--- partial one); on failure removes tmp and returns nil and the reason.
function M.rename_over(tmp, path)
  local ok, err = os.rename(tmp, path)
  if not ok then os.remove(tmp) return nil, err end
  return true
end

--- The directory part of a path ("" when there is none).
function M.dirname(path) return path:match("^(.*)/[^/]*$") or "" end

--- True when a file exists at path.
function M.exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

--- Writes text to path atomically: into path .. ".part.<process id>" first (two processes writing one file do not
--- share the temporary), then renamed over path (a rename within a directory is atomic), so path always holds a
--- complete file, the old or the new. where names the caller in errors.
function M.write_atomic(where, path, text)
  local check = require "cq._check"
  if type(path) ~= "string" or path == "" then check.fail(where, "path must be a file name", path) end
  local dir = M.dirname(path)
  if dir ~= "" and not M.mkdir_p(dir) then check.raise(where .. ": cannot create the directory " .. dir) end
  local tmp = path .. ".part." .. require("cq._spawn").pid()
  local f, why = io.open(tmp, "wb")
  if not f then check.raise(where .. ": cannot write " .. tmp .. ": " .. tostring(why)) end
  local ok, werr = f:write(text)
  local closed, cerr = f:close()
  if not ok or not closed then
    os.remove(tmp)
    check.raise(where .. ": writing " .. tmp .. " failed: " .. tostring(werr or cerr))
  end
  local renamed, rerr = M.rename_over(tmp, path)
  if not renamed then check.raise(where .. ": cannot rename " .. tmp .. " to " .. path .. ": " .. tostring(rerr)) end
end

--- Removes the temporaries that writes of path by write_atomic left unfinished (path .. ".part.<process id>", a
--- process killed mid-write): those of a process that has ended, of this one, or older than an hour (a process id
--- taken again by another program). A process still writing path keeps its own. Returns the paths removed.
function M.remove_stale_parts(path)
  local removed = {}
  if type(path) ~= "string" or path == "" then return removed end
  local dir = M.dirname(path)
  local base = dir == "" and path or path:sub(#dir + 2)
  local where = dir == "" and "." or dir
  if not M.is_dir(where) then return removed end
  local spawn = require "cq._spawn"
  local me, prefix, now = spawn.pid(), base .. ".part.", os.time()
  for name in lfs.dir(where) do
    local pid = name:sub(1, #prefix) == prefix and tonumber(name:sub(#prefix + 1):match("^%d+$")) or nil
    if pid then
      local full = dir == "" and name or (dir .. "/" .. name)
      local age = now - (lfs.attributes(full, "modification") or now)
      -- (a process of another user answers no signal, but has its /proc entry)
      local running = spawn.alive(pid) or M.is_dir("/proc/" .. pid)
      if (pid == me or not running or age > 3600) and os.remove(full) then removed[#removed + 1] = full end
    end
  end
  return removed
end

--- Moves an existing file out of the way before a new run writes path: path -> <stem>.1<ext>, .1 -> .2, ... up to
--- keep earlier files (the oldest is dropped). Returns the name the old file got, or nil when there was none.
function M.rotate(path, keep)
  if not M.exists(path) then return nil end
  local stem, ext = path:match("^(.*)(%.[^./]*)$")
  if not stem then stem, ext = path, "" end
  local function name(k) return stem .. "." .. k .. ext end
  os.remove(name(keep))
  for k = keep - 1, 1, -1 do
    if M.exists(name(k)) then os.rename(name(k), name(k + 1)) end
  end
  os.rename(path, name(1))
  return name(1)
end

return M
