-- Test helpers for error messages, shared by the specs that check bad input.
local assert = require "luassert" -- busted's assert lives in the specs' environment, not in _G
local M = {}

--- The error message of f(...), which must fail; printed for the log.
function M.err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error, got none")
  e = tostring(e)
  print("  " .. e)
  return e
end

--- Asserts that msg contains every one of the given plain strings.
function M.has(msg, ...)
  for _, s in ipairs({ ... }) do
    assert.is_truthy(string.find(msg, s, 1, true), string.format("message %q does not contain %q", msg, s))
  end
end

return M
