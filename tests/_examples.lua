-- Test helper: runs an example script in this process, as `cqlua examples/<name>.lua args...` would.
local M = {}

--- Runs the example at path with its own `arg` table, returning what the script returns.
--- A checkpoint left by an interrupted full run would make cq.train resume it: the smoke tests start afresh.
function M.run_example(path, args)
  os.remove("out/" .. path:match("([^/]+)%.lua$") .. ".ckpt.json")
  local chunk = assert(loadfile(path))
  setfenv(chunk, setmetatable({ arg = args }, { __index = _G }))
  return chunk()
end

return M
