-- tests/study_spec.lua: parameter studies (cq.study, `cqlua study run | collect`, issue 13) on this machine: the
-- spaces, runs in worker processes with manifests, failures and time limits recorded without stopping the study,
-- resuming, a changed study never mixing results, SIGINT, script rows with their own threads, and the collected CSV.
-- The same against a real SLURM: tests/study_slurm_spec.lua.
local study = require "cq.study"
local shell = require "tests._shell"
local EXE = require("cq._paths").exe

local write = shell.write_file
local read = shell.read_file

-- Runs `cqlua study ARGS` in dir; returns output and exit status.
local function cq_study(dir, args) return shell.sh("cd " .. dir .. " && " .. EXE .. " study " .. args) end

-- The CSV file at path as a list of {column = text} rows.
local function read_csv(path)
  local text = assert(read(path), "no " .. path)
  local lines = {}
  for line in text:gmatch("[^\n]+") do lines[#lines + 1] = line end
  local header = {}
  for name in (lines[1] .. ","):gmatch("([^,]*),") do header[#header + 1] = name end
  local rows = {}
  for k = 2, #lines do
    local cells, r = {}, {}
    for cell in (lines[k] .. ","):gmatch('("?[^,]*"?),') do cells[#cells + 1] = cell end
    for c, name in ipairs(header) do r[name] = cells[c] end
    rows[#rows + 1] = r
  end
  return rows, header
end

describe("cq.study spaces", function()
  it("grid is the full factorial in the given order, the last parameter fastest", function()
    local g = study.grid { { "b", { 1, 2, 3 } }, { "a", { "x", "y" } } }
    assert.are.same({ "b", "a" }, g.names)
    assert.are.equal(6, #g.rows)
    assert.are.same({ b = 1, a = "x" }, g.rows[1])
    assert.are.same({ b = 1, a = "y" }, g.rows[2])
    assert.are.same({ b = 3, a = "y" }, g.rows[6])
    local named = study.grid { z = { true, false }, m = { 1 } } -- named keys: alphabetical
    assert.are.same({ "m", "z" }, named.names)
  end)

  it("lhs puts exactly one sample in each of the n strata of every range, reproducibly per seed", function()
    local n = 50
    local s = study.lhs { n = n, seed = 7, ranges = { E = { 7, 20 }, nu = { 0.2, 0.4 } }, log = { E = true } }
    for _, p in ipairs { { "E", 7, 20, true }, { "nu", 0.2, 0.4, false } } do
      local hit = {}
      for _, row in ipairs(s.rows) do
        local v = row[p[1]]
        local u = p[4] and math.log(v / p[2]) / math.log(p[3] / p[2]) or (v - p[2]) / (p[3] - p[2])
        assert.is_true(u >= 0 and u < 1)
        local k = math.floor(u * n)
        assert.is_nil(hit[k], p[1] .. ": two samples in stratum " .. k)
        hit[k] = true
      end
    end
    local again = study.lhs { n = n, seed = 7, ranges = { E = { 7, 20 }, nu = { 0.2, 0.4 } }, log = { E = true } }
    assert.are.same(s.rows, again.rows)
    local other = study.lhs { n = n, seed = 8, ranges = { E = { 7, 20 }, nu = { 0.2, 0.4 } }, log = { E = true } }
    assert.are_not.same(s.rows, other.rows)
  end)

  it("random samples lie in their ranges and choices; product and concat combine spaces", function()
    local r = study.random { n = 200, seed = 3, ranges = { x = { -1, 1 } }, choices = { m = { "a", "b", "c" } } }
    local seen = {}
    for _, row in ipairs(r.rows) do
      assert.is_true(row.x >= -1 and row.x < 1)
      seen[row.m] = (seen[row.m] or 0) + 1
    end
    for _, c in ipairs { "a", "b", "c" } do assert.is_true(seen[c] > 40, c .. " picked " .. tostring(seen[c])) end
    local p = study.product(study.list { { a = 1 }, { a = 2 } }, study.grid { s = { 1, 2, 3 } })
    assert.are.equal(6, #p.rows)
    assert.are.same({ a = 2, s = 1 }, p.rows[4])
    local c = study.concat(study.list { { a = 1 } }, study.list { { a = 2, b = true } })
    assert.are.same({ "a", "b" }, c.names)
    assert.are.same({ a = 2, b = true }, c.rows[2])
  end)

  it("rejects bad declarations at the call site, naming the option", function()
    local function err(f) local ok, e = pcall(f) assert.is_false(ok) return tostring(e) end
    assert.matches("study_spec.lua:%d+: cq.study.grid: b must be a non%-empty list of values",
      err(function() study.grid { a = { 1 }, b = {} } end))
    assert.matches("cq.study.lhs: ranges.x must be {lo, hi} with lo < hi",
      err(function() study.lhs { n = 3, ranges = { x = { 2, 1 } } } end))
    assert.matches("cq.study.product: two spaces both set parameter a",
      err(function() study.product(study.list { { a = 1 } }, study.list { { a = 2 } }) end))
    assert.matches("row 1: parameter a must be finite",
      err(function() study.list { { a = 0 / 0 } } end))
    local space = study.grid { a = { 1 } }
    assert.matches("cq.study.define: name must be a non%-empty string of letters",
      err(function() study.define { name = "a b", space = space, run = print, metrics = { "y" } } end))
    assert.matches("give exactly one of run %(a function of the row%) or script",
      err(function() study.define { name = "s", space = space, metrics = { "y" } } end))
    assert.matches("best must be one of the metrics %(y%)",
      err(function() study.define { name = "s", space = space, run = print, metrics = { "y" }, best = "z" } end))
    assert.matches("unknown option", err(function()
      study.define { name = "s", space = space, run = print, metrics = { "y" }, jobs = 2 } end))
  end)
end)

describe("cqlua study run", function()
  local dir
  before_each(function() dir = shell.tmpdir() end)

  -- A study of 8 rows: y = (a - 2)^2 + seed / 10; a = 3 fails with an error, a = 4 sleeps past the time limit.
  local function quad_study(extra)
    write(dir .. "/quad.lua", [[
local study = require "cq.study"
return study.define {
  name = "quad",
  space = study.product(study.grid { a = { 1, 2, 3, 4 } }, study.list { { seed = 1 }, { seed = 2 } }),
  run = function(row)
    if row.a == 3 then error("row asked to fail (a = 3)") end
    if row.a == 4 then jit.off() while true do require("cq._spawn").sleep(0.1) end end
    local f = assert(io.open("written_here.txt", "w")) f:write("x") f:close()
    return { y = (row.a - 2) ^ 2 + row.seed / 10, twice = 2 * row.a ]] .. (extra or "") .. [[ }
  end,
  metrics = { "y", "twice" }, by = { "a" },
  time_limit = 1,
}
]])
  end

  it("runs every row in 2 workers, records ok, failed and timeout rows with manifests, and collects them", function()
    quad_study()
    local out, rc = cq_study(dir, "run quad.lua --jobs 2")
    assert.are.equal(1, rc, out) -- some rows failed: exit status 1, the study still ran every row
    assert.matches("8 rows, 0 done already, 8 to run in 2 workers x 1 thread", out)
    assert.matches("4 ok %(0 of them earlier%), 2 failed, 2 timed out", out)
    local s = study.load(dir .. "/quad.lua", dir .. "/out/studies/quad")
    for i, row in ipairs(s.rows) do
      local m = s:manifest(i)
      assert.is_table(m, "row " .. i .. " has no manifest")
      assert.are.same(row, m.params)
      assert.are.equal(s:row_hash(i), m.hash)
      assert.are.equal(1, m.attempt)
      assert.is_string(m.host)
      assert.is_string(m.engine.version)
      assert.is_true(m.wall_seconds > 0)
      if row.a <= 2 then
        assert.are.equal("ok", m.status)
        assert.are.equal((row.a - 2) ^ 2 + row.seed / 10, m.metrics.y)
        assert.are.equal(2 * row.a, m.metrics.twice)
        assert.are.equal("x", read(s:row_dir(i) .. "/written_here.txt")) -- the run's own directory
      elseif row.a == 3 then
        assert.are.equal("failed", m.status)
        assert.matches("row asked to fail %(a = 3%)", m.message)
        assert.matches("row asked to fail", read(s:row_dir(i) .. "/log.txt")) -- with the traceback
      else
        assert.are.equal("timeout", m.status)
        assert.matches("time limit of 1 s", m.message)
      end
    end
    local cout = cq_study(dir, "collect quad.lua")
    assert.matches("8 rows: 4 ok, 2 failed, 2 timeout", cout)
    assert.matches("best rows %(lowest y%)", cout)
    assert.matches("row 5 %(a=3, seed=1%): failed: .*row asked to fail", cout)
    local rows, header = read_csv(s.dir .. "/results.csv")
    assert.are.same({ "row", "status", "a", "seed", "y", "twice" }, { unpack(header, 1, 6) })
    assert.are.equal(8, #rows)
    assert.are.equal("ok", rows[1].status)
    assert.are.equal(1 + 0.1, tonumber(rows[1].y))
    assert.are.equal("timeout", rows[8].status)
    local summary = read_csv(s.dir .. "/summary.csv")
    assert.are.equal("2", summary[1].a) -- lowest mean y first
    assert.are.equal(0.15, tonumber(summary[1].y_mean))
    assert.is_true(math.abs(tonumber(summary[1].y_se) - 0.05) < 1e-9) -- std 0.0707 / sqrt(2)
    assert.is_true(#(read(s.dir .. "/y.png") or "") > 1000, "no y.png")
    assert.are.equal(s:manifest(1).engine.version, rows[1].engine) -- the build each row ran on
    assert.is_nil(cout:match("engine builds"))
    -- a row of another commit but the same sources and target (src.<hash>.<arch>) is of the same build: no note
    local path = s:row_dir(1) .. "/manifest.json"
    local version = s:manifest(2).engine.version
    local src = version:match("^[^+]*(%+src%.%x+%.[^.]+)%.git%.") or version:match("^[^+]*(%+src%.%x+%.[^.]+)$")
    assert.is_truthy(src, version)
    write(path, (read(path):gsub('"version": *"[^"]*"', '"version": "0.1.0' .. src .. '.git.0123456789"')))
    assert.is_nil(cq_study(dir, "collect quad.lua"):match("engine builds"))
    -- the same sources compiled for another CPU are another build
    write(path, (read(path):gsub('"version": *"[^"]*"', '"version": "0.1.0' .. src .. 'x.git.0123456789"')))
    assert.matches("note: the finished rows come from 2 engine builds", cq_study(dir, "collect quad.lua"))
    -- a finished row of other sources: collect says the rows mix builds
    local text = read(path):gsub('"version": *"[^"]*"', '"version": "0.0.1+git.other"')
    write(path, text)
    assert.are.equal("0.0.1+git.other", s:manifest(1).engine.version)
    cout = cq_study(dir, "collect quad.lua")
    assert.matches("note: the finished rows come from 2 engine builds: 0%.0%.1%+git%.other %(1 rows%), " ..
      s:manifest(2).engine.version:gsub("%p", "%%%0") .. " %(3 rows%)", cout)
  end)

  it("resumes: finished rows are kept, failed ones rerun; a changed study reruns every row and keeps the old apart", function()
    quad_study()
    cq_study(dir, "run quad.lua --jobs 2 --rows 1-6")
    local s = study.load(dir .. "/quad.lua", dir .. "/out/studies/quad")
    local before = s:manifest(1)
    local out, rc = cq_study(dir, "run quad.lua --jobs 2 --rows 1-6")
    assert.are.equal(1, rc, out)
    assert.matches("6 rows, 4 done already, 2 to run", out)
    assert.are.same(before, s:manifest(1)) -- not run again
    assert.are.equal(2, s:manifest(5).attempt) -- the failed row ran again
    -- change what a run returns: every row gets a new hash and directory, nothing old is collected
    quad_study(", extra = 1")
    local s2 = study.load(dir .. "/quad.lua", dir .. "/out/studies/quad")
    assert.are_not.equal(s:row_hash(1), s2:row_hash(1))
    assert.is_nil(s2:manifest(1))
    local cout = cq_study(dir, "collect quad.lua")
    assert.matches("8 rows: 8 not run", cout)
    assert.matches("6 row directories of earlier versions of the study are ignored", cout)
  end)

  it("stops cleanly on SIGINT: the running rows are recorded as interrupted and the next run finishes them", function()
    write(dir .. "/slow.lua", [[
local study = require "cq.study"
return study.define { name = "slow", space = study.grid { a = { 1, 2, 3, 4 } }, metrics = { "y" },
  run = function(row)
    jit.off() -- interpreted: the host's SIGINT hook runs (the engine itself polls at every substep)
    for _ = 1, tonumber(os.getenv("SLOW_STEPS") or "40") do require("cq._spawn").sleep(0.1) end
    return { y = row.a }
  end }
]])
    local out = shell.sh("cd " .. dir .. " && { SLOW_STEPS=40 " .. EXE .. " study run slow.lua --jobs 2 >run.log 2>&1 & " ..
      "pid=$!; sleep 2; kill -INT $pid; wait $pid; echo \"exit=$?\"; }")
    local log = read(dir .. "/run.log")
    assert.matches("exit=130", out, log)
    assert.matches("interrupted; run the same command again to resume", log)
    local s = study.load(dir .. "/slow.lua", dir .. "/out/studies/slow")
    assert.are.equal("interrupted", s:manifest(1).status)
    assert.are.equal("interrupted", s:manifest(2).status)
    assert.is_nil(s:manifest(3)) -- never started
    local out2, rc = shell.sh("cd " .. dir .. " && SLOW_STEPS=2 " .. EXE .. " study run slow.lua --jobs 2")
    assert.are.equal(0, rc, out2)
    assert.matches("4 rows, 0 done already, 4 to run", out2)
    for i = 1, 4 do assert.are.equal("ok", s:manifest(i).status) end
    assert.are.equal(2, s:manifest(1).attempt)
  end)

  it("does not start a row that another live worker on this host is running", function()
    quad_study()
    local s = study.load(dir .. "/quad.lua", dir .. "/out/studies/quad")
    local live = shell.sh("sleep 30 >/dev/null 2>&1 & echo $!"):match("(%d+)") -- a live process stands in for it
    require("cq.json").write(s:row_dir(1) .. "/.claim/owner.json", { host = require("cq._spawn").hostname(),
      pid = tonumber(live) })
    require("cq.json").write(s:row_dir(1) .. "/manifest.json", { hash = s:row_hash(1), status = "running",
      host = require("cq._spawn").hostname(), worker_pid = tonumber(live), row = 1 })
    local out, rc = cq_study(dir, "run quad.lua --jobs 2 --rows 1-2")
    os.execute("kill " .. live)
    assert.are.equal(1, rc, out) -- not every row is done
    assert.matches("row 1 %(a=1, seed=1%): not started: another worker on this host %(pid " .. live .. "%) runs it", out)
    assert.matches("1 ok %(0 of them earlier%), 0 failed, 0 timed out, 0 interrupted, 0 not run, 1 run by another worker", out)
    assert.are.equal("running", s:manifest(1).status)
    local out2 = cq_study(dir, "run quad.lua --rows 1") -- the stand-in is gone: its claim is stale, the row runs
    assert.matches("1 ok", out2)
    assert.are.equal("ok", s:manifest(1).status)
  end)

  it("gives a run function the same row hashes in every process, and rejects a repeated configuration", function()
    -- a table constructor with several constant string keys: string.dump orders them differently per process
    write(dir .. "/tab.lua", [[
local study = require "cq.study"
local scale = 3
local function helper(row) return { dt = 0.01, substeps = 10, gravity = -9.8, name = "x", y = scale * row.a } end
return study.define { name = "tab", space = study.grid { a = { 1, 2, 3, 4, 5, 6 } }, metrics = { "y" },
  run = function(row) local cfg = { dt = 0.01, substeps = 10, damping = 0, label = "walker" } return helper(row) end }
]])
    local hashes = {}
    for _ = 1, 4 do
      local out = shell.sh("cd " .. dir .. " && " .. EXE .. " -e 'print(require(\"cq.study\").load(\"tab.lua\"):row_hash(1))'")
      hashes[out:match("%x+")] = true
    end
    local n = 0
    for _ in pairs(hashes) do n = n + 1 end
    assert.are.equal(1, n)
    local out, rc = cq_study(dir, "run tab.lua --jobs 2")
    assert.are.equal(0, rc, out)
    assert.matches("6 rows: 6 ok", cq_study(dir, "collect tab.lua"))
    -- what the function reaches through upvalues is part of the hash: a changed helper or constant reruns
    local s1 = study.load(dir .. "/tab.lua", dir .. "/out/studies/tab")
    write(dir .. "/tab.lua", read(dir .. "/tab.lua"):gsub("local scale = 3", "local scale = 4"))
    local s2 = study.load(dir .. "/tab.lua", dir .. "/out/studies/tab")
    assert.are_not.equal(s1:row_hash(1), s2:row_hash(1))
    local ok, err = pcall(study.define, { name = "d", space = study.concat(study.grid { a = { 1, 2 } },
      study.list { { a = 2 } }), run = print, metrics = { "y" } })
    assert.is_false(ok)
    assert.matches("rows 2 and 3 are the same configuration", err)
  end)

  it("passes numbers to scripts exactly (all 17 digits) and plots spaces whose rows lack a parameter", function()
    write(dir .. "/echo.lua", "return { back = tonumber(arg[1]) }\n")
    write(dir .. "/exact.lua", [[
local study = require "cq.study"
return study.define { name = "exact", space = study.concat(study.lhs { n = 3, seed = 5, ranges = { x = { 0, 1 } } },
  study.list { { z = 0.1 } }), script = "echo.lua", args = function(row) return { row.x or row.z } end,
  metrics = { "back" } }
]])
    local out, rc = cq_study(dir, "run exact.lua")
    assert.are.equal(0, rc, out)
    local s = study.load(dir .. "/exact.lua", dir .. "/out/studies/exact")
    for i = 1, 3 do assert.are.equal(s.rows[i].x, s:manifest(i).metrics.back) end -- bit for bit
    assert.are.equal(0.1, s:manifest(4).metrics.back)
    local cout, crc = cq_study(dir, "collect exact.lua")
    assert.are.equal(0, crc, cout)
    assert.is_true(#(read(s.dir .. "/back.png") or "") > 1000, cout)
  end)

  it("runs script rows with templated arguments, each with the threads it was given", function()
    write(dir .. "/scr.lua", [[
local cq = require "cq"
local n, tag = tonumber(arg[1]), arg[2]
local w = cq.world { dim = 2, res = { 8, 8 }, dx = 0.125, dt = 1e-3, n = 1 }
return { n2 = n * n, threads = w.threads, tagged = tag == ("t" .. n) }
]])
    write(dir .. "/scripted.lua", [[
local study = require "cq.study"
return study.define { name = "scripted", space = study.grid { n = { 2, 3 } }, script = "scr.lua",
  args = { "{n}", "t{n}" }, metrics = { "n2", "threads", "tagged" } }
]])
    local out, rc = cq_study(dir, "run scripted.lua --jobs 1 --threads 2 --oversubscribe")
    assert.are.equal(0, rc, out)
    local s = study.load(dir .. "/scripted.lua", dir .. "/out/studies/scripted")
    assert.are.same({ n2 = 9, threads = 2, tagged = 1 }, s:manifest(2).metrics)
    assert.are.same({ "3", "t3" }, s:manifest(2).args)
    local cores = tonumber(shell.sh("nproc"):match("%d+"))
    local out2, rc2 = cq_study(dir, "run scripted.lua --jobs " .. (cores + 1) .. " --threads 1")
    assert.are_not.equal(0, rc2)
    assert.matches("would oversubscribe them", out2)
    local out3, rc3 = cq_study(dir, "run scripted.lua --jobs 0")
    assert.are_not.equal(0, rc3)
    assert.matches("%-%-jobs must be an integer >= 1 %(got 0%)", out3)
  end)
end)
