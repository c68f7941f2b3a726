-- Private: small file-system helpers for writers (trajectory export, PNG frames): directory creation and checks.
local M = {}

local ok_lfs, lfs = pcall(require, "lfs")

--- True when path names an existing directory.
function M.is_dir(path)
  if ok_lfs then return lfs.attributes(path, "mode") == "directory" end
  local f = io.open(path .. "/.", "r")
  if f then f:close() return true end
  return false
end

--- Creates directory dir and its missing parents; returns true, or nil and a reason.
function M.mkdir_p(dir)
  if dir == "" or M.is_dir(dir) then return true end
  if ok_lfs then
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
  os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'")
  if M.is_dir(dir) then return true end
  return nil, "mkdir failed"
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

return M
