-- Wall-clock time in seconds (CLOCK_MONOTONIC), for progress lines and benchmarks.
local ffi = require "ffi"
pcall(ffi.cdef, [[
typedef struct cq_timespec { long tv_sec; long tv_nsec; } cq_timespec;
int clock_gettime(int clk_id, cq_timespec* tp);
]])
local M = {}
local ts = ffi.new("cq_timespec")
function M.now()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end
return M
