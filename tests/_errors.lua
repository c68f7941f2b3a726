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

--- Runs f(...) with cq.robot's warnings captured instead of printed. Returns the list of warnings, then f's results
--- (f's error is raised after the warnings sink is restored).
function M.warnings_of(f, ...)
  local robot, warned = require "cq.robot", {}
  local warn = robot.warn
  robot.warn = function(msg) warned[#warned + 1] = msg end
  local r = { pcall(f, ...) }
  robot.warn = warn
  if not r[1] then error(r[2], 0) end
  return warned, unpack(r, 2)
end

return M
