-- tests/_parallel.lua: `tests/run.lua --jobs N`: the spec files in N worker processes at once (make test uses one
-- per core). Each worker is `cqlua tests/run.lua [the same options] FILE` with CQ_THREADS = cores / N, so the
-- workers do not oversubscribe the cores (a test that sets its world's threads keeps them). A worker's report is
-- printed whole when it ends; the counts of all of them are summed into the usual last line.
--
-- Order: the slowest files of the last full run first (their times are kept in build/test_times.txt), so that no
-- long file starts last; files without a time go first, largest first.
local ffi = require "ffi"
pcall(ffi.cdef, "int usleep(unsigned int usec);")
local read_file = require("_shell").read_file

local M = {}

local TIMES = "build/test_times.txt"

local function quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local function cores()
  local p = io.popen("nproc --all 2>/dev/null")
  local n = p and tonumber(p:read("*a")) or nil
  if p then p:close() end
  return n or 1
end

local function any_match(name, patterns)
  for _, p in ipairs(patterns) do
    if name:find(p) then return true end
  end
  return false
end

-- The spec files under the roots, as busted picks them: a file is kept as given; in a directory, the files whose base
-- name matches one of the patterns and none of the excluded ones, outside hidden directories. A root that is
-- neither is returned in missing.
local function spec_files(roots, patterns, excluded)
  local files, missing = {}, {}
  for _, root in ipairs(roots) do
    local p = io.popen("test -d " .. quote(root) .. " && find " .. quote(root) ..
      " -name '.*' -prune -o -type f -name '*.lua' -print | sort")
    local found = false
    for line in p:lines() do
      found = true
      local base = line:match("[^/]+$")
      if any_match(base, patterns) and not any_match(base, excluded) then table.insert(files, line) end
    end
    p:close()
    if not found then
      local f = io.open(root, "r")
      if f then f:close() end
      table.insert(f and root:match("%.lua$") and files or missing, root)
    end
  end
  return files, missing
end

-- The files' times of the runs before: name -> seconds.
local function last_times()
  local last = {}
  for name, t in (read_file(TIMES) or ""):gmatch("([^\t\n]+)\t([%d.]+)\n") do last[name] = tonumber(t) end
  return last
end

-- Slowest first by the last run's times; unknown files before them, largest first.
local function schedule(files)
  local last = last_times()
  local function size(f)
    local h = io.open(f, "r")
    if not h then return 0 end
    local n = h:seek("end")
    h:close()
    return n
  end
  local key = {}
  for _, f in ipairs(files) do key[f] = last[f] and last[f] or 1e9 + size(f) end
  table.sort(files, function(a, b) return key[a] > key[b] end)
  return files
end

-- Splits a worker's report into its test lines and its summary (counts, failed names, the file's time): the summary
-- is what follows the reporter's last "  file" line.
local function parse(report)
  local r = { passed = 0, failed = 0, skipped = 0, failed_names = {}, lines = {} }
  local lines = {}
  for line in (report .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
  local last_file = 0
  for i, line in ipairs(lines) do
    if line:match("^  file%s+[%d.]+ s  ") then last_file = i end
  end
  local in_failed = false
  for i, line in ipairs(lines) do
    local p, f, s = line:match("^(%d+) passed, (%d+) failed, (%d+) skipped$")
    if i <= last_file or last_file == 0 and not p then
      table.insert(r.lines, line)
      local fs = line:match("^  file%s+([%d.]+) s  ")
      if fs then r.seconds = tonumber(fs) end
    elseif p then
      r.passed, r.failed, r.skipped, r.counted = tonumber(p), tonumber(f), tonumber(s), true
    elseif line == "failed:" then
      in_failed = true
    elseif in_failed and line:match("^  ") then
      table.insert(r.failed_names, (line:gsub("^  ", "")))
    elseif line:match("^run%.lua:") then -- the runner's own complaint (busted stopped)
      table.insert(r.lines, line)
    end
  end
  while r.lines[#r.lines] == "" do table.remove(r.lines) end
  return r
end

local function sleep_ms(ms)
  if not pcall(ffi.C.usleep, ms * 1000) then os.execute("sleep " .. ms / 1000) end
end

--- Runs the spec files under roots (opts: the busted options for each worker; patterns, excluded: busted's file
--- patterns; record: keep the files' times for the next run's order) in jobs workers. Prints every worker's report
--- and the summed counts, and exits.
function M.run(jobs, roots, opts, cqlua, runner, patterns, excluded, record)
  local files, missing = spec_files(roots, patterns, excluded)
  files = schedule(files)
  local threads = os.getenv("CQ_THREADS") or tostring(math.max(1, math.floor(cores() / jobs)))
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. quote(dir))
  local prefix = "CQ_THREADS=" .. quote(threads) .. " " .. quote(cqlua) .. " " .. quote(runner)
  for _, o in ipairs(opts) do prefix = prefix .. " " .. quote(o) end

  local running, next_file, t0 = {}, 1, os.time()
  local total = { passed = 0, failed = 0, skipped = 0, failed_names = {}, seconds = {} }
  for _, root in ipairs(missing) do
    total.failed = total.failed + 1
    table.insert(total.failed_names, "ERROR " .. root .. ": no such spec file or directory")
  end
  local function start(i)
    local base = dir .. "/" .. i
    local cmd = prefix .. " " .. quote(files[i]) .. " > " .. quote(base .. ".out") .. " 2>&1; echo $? > " ..
      quote(base .. ".rc")
    -- io.popen, not "&": a background job of sh ignores SIGINT, a popen'ed one stops with us on ^C
    running[i] = assert(io.popen(cmd, "r"))
  end
  local function finish(i)
    running[i]:close()
    running[i] = nil
    local base = dir .. "/" .. i
    local rc = tonumber(read_file(base .. ".rc"))
    local r = parse(read_file(base .. ".out") or "")
    io.stdout:write(table.concat(r.lines, "\n"), "\n")
    total.passed, total.failed, total.skipped = total.passed + r.passed, total.failed + r.failed,
      total.skipped + r.skipped
    for _, n in ipairs(r.failed_names) do table.insert(total.failed_names, n) end
    if not r.counted or (rc ~= 0 and r.failed == 0) then
      total.failed = total.failed + 1
      table.insert(total.failed_names, "ERROR " .. files[i] .. ": its worker exited with status " .. tostring(rc) ..
        (r.counted and " after a count line without failures" or " without a count line"))
    end
    if r.seconds then total.seconds[files[i]] = r.seconds end
    os.remove(base .. ".out")
    os.remove(base .. ".rc")
  end

  local ok, err = pcall(function()
    while next_file <= #files or next(running) do
      local n = 0
      for _ in pairs(running) do n = n + 1 end
      if n < jobs and next_file <= #files then
        start(next_file)
        next_file = next_file + 1
      else
        local done = false
        for i in pairs(running) do
          if read_file(dir .. "/" .. i .. ".rc") then
            finish(i)
            done = true
            break
          end
        end
        if not done then sleep_ms(50) end
      end
    end
  end)
  if not ok then -- ^C (the workers got it too) or a runner error: no files left behind
    for _, p in pairs(running) do pcall(p.close, p) end
    os.execute("rm -rf " .. quote(dir))
    if tostring(err):find("interrupted", 1, true) then
      io.stderr:write("run.lua: interrupted; ", total.passed, " passed and ", total.failed, " failed before it\n")
      os.exit(130)
    end
    error(err, 0)
  end
  os.remove(dir)

  local order, kept = {}, last_times()
  for f, t in pairs(total.seconds) do
    table.insert(order, { f, t })
    kept[f] = t
  end
  table.sort(order, function(a, b) return a[2] > b[2] end)
  local times = record and io.open(TIMES, "w")
  if times then -- this run's files updated, the others kept
    for f, t in pairs(kept) do times:write(f, "\t", string.format("%.3f", t), "\n") end
    times:close()
  end
  if #order > 1 then
    io.stdout:write("\nslowest spec files:\n")
    for i = 1, math.min(5, #order) do io.stdout:write(string.format("  %7.3f s  %s\n", order[i][2], order[i][1])) end
  end
  if #total.failed_names > 0 then
    io.stdout:write("\nfailed:\n")
    for _, n in ipairs(total.failed_names) do io.stdout:write("  ", n, "\n") end
  end
  io.stdout:write(string.format("\nwall time %d s in %d workers of %s threads\n", os.time() - t0, jobs, threads))
  io.stdout:write(string.format("%d passed, %d failed, %d skipped\n", total.passed, total.failed, total.skipped))
  io.stdout:flush()
  os.exit(total.failed == 0 and 0 or 1, true)
end

return M
