-- tests/study_slurm_spec.lua: `cqlua study slurm` against a real SLURM (issue 13), not a mock. tools/slurm_cluster.sh
-- (the script behind `cqlua study cluster start|status|stop`) installs slurm-wlm and munge when missing (--install),
-- starts munged, slurmctld and slurmd on this machine with a generated slurm.conf (private ports, state and logs in a
-- temporary directory); the study is submitted as one job array and waited for (sbatch --wait); every row's manifest
-- and the collected CSV are checked, and the collect command the submission prints is run as printed; a second
-- submission sends only the failed rows; `cqlua study cluster status` reports the cluster and `stop` stops it. When
-- SLURM cannot start, the test fails with the daemons' logs. Without a SLURM: tests/study_slurm_cli_spec.lua.
local study = require "cq.study"
local shell = require "tests._shell"
local EXE = require("cq._paths").exe
local CLUSTER = os.getenv("PWD") .. "/tools/slurm_cluster.sh"

local write = shell.write_file

describe("cqlua study slurm", function()
  local dir, conf
  setup(function()
    dir = shell.tmpdir()
    os.execute("chmod 755 " .. dir)
    local out, rc = shell.sh(CLUSTER .. " start " .. dir .. "/cluster --install")
    conf = out:match("SLURM_CONF=(%S+)")
    assert(rc == 0 and conf, "SLURM did not start:\n" .. out)
  end)
  teardown(function()
    if dir then shell.sh(CLUSTER .. " stop " .. dir .. "/cluster") end
  end)

  it("runs a study as one job array: a manifest per row with its SLURM task, failures recorded, collect works", function()
    -- 6 rows; y = a * b; the row a = 3, b = 2 fails
    write(dir .. "/arr.lua", [[
local study = require "cq.study"
return study.define {
  name = "arr",
  space = study.grid { a = { 1, 2, 3 }, b = { 1, 2 } },
  run = function(row)
    if row.a * row.b == 6 and not os.getenv("ARR_FIXED") then error("six is not allowed") end
    return { y = row.a * row.b, task = tonumber(os.getenv("SLURM_ARRAY_TASK_ID")) }
  end,
  metrics = { "y", "task" }, goal = "max",
}
]])
    local env = "cd " .. dir .. " && SLURM_CONF=" .. conf .. " "
    local out, rc = shell.sh(env .. EXE .. " study slurm arr.lua --wait --time=5")
    assert.matches("6 of 6 rows to run as array 1%-6", out)
    assert.matches("submitted job (%d+)", out)
    assert.are.equal(1, rc, out) -- one row failed: sbatch --wait reports it
    local job = out:match("submitted job (%d+)")
    local s = study.load(dir .. "/arr.lua", dir .. "/out/studies/arr")
    for i, row in ipairs(s.rows) do
      local m = s:manifest(i)
      assert.is_table(m, "row " .. i .. " has no manifest:\n" .. out)
      assert.are.equal(job, m.slurm.job_id)
      assert.are.equal(tostring(i), m.slurm.array_task_id) -- task id = row
      if row.a * row.b == 6 then
        assert.are.equal("failed", m.status)
        assert.matches("six is not allowed", m.message)
      else
        assert.are.equal("ok", m.status, m.message)
        assert.are.same({ y = row.a * row.b, task = i }, m.metrics)
      end
    end
    local cout = shell.sh(env .. EXE .. " study collect arr.lua")
    assert.matches("6 rows: 5 ok, 1 failed", cout)
    -- the collect command the submission printed works as printed, from any directory
    local hint = out:match("then: (cqlua study collect [^\n]+)")
    assert.are.equal("cqlua study collect " .. dir .. "/arr.lua --dir " .. dir .. "/out/studies/arr", hint)
    local hout, hrc = shell.sh("cd / && " .. hint:gsub("^cqlua", EXE))
    assert.are.equal(0, hrc, hout)
    assert.matches("6 rows: 5 ok, 1 failed", hout)
    local csv = assert(io.open(dir .. "/out/studies/arr/results.csv")):read("*a")
    assert.matches("\n3,ok,2,1,2,3,", csv)   -- row 3: a = 2, b = 1, y = 2, task 3
    assert.matches("\n6,failed,3,2,,,", csv)
    -- resubmitting sends the failed row only
    local out2, rc2 = shell.sh(env .. "ARR_FIXED=1 " .. EXE .. " study slurm arr.lua --wait --time=5")
    assert.are.equal(0, rc2, out2)
    assert.matches("1 of 6 rows to run as array 6 ", out2)
    assert.are.equal("ok", s:manifest(6).status)
    assert.are.equal(2, s:manifest(6).attempt)
    local out3 = shell.sh(env .. EXE .. " study slurm arr.lua")
    assert.matches("every row is done; nothing to submit", out3)
  end)

  it("cqlua study cluster status reports it, start again leaves it running, stop stops it", function()
    local cdir = dir .. "/cluster"
    local out, rc = shell.sh(EXE .. " study cluster status --dir " .. cdir)
    assert.are.equal(0, rc, out)
    assert.matches("slurmctld: %d+; slurmd: %d+; munged: %d+", out)
    assert.matches("debug%*%s+up.*idle", out)
    assert.matches("export SLURM_CONF=" .. conf, out, 1, true)
    out, rc = shell.sh(EXE .. " study cluster start --dir " .. cdir)
    assert.are.equal(0, rc, out)
    assert.matches("already running in " .. cdir, out, 1, true)
    assert.matches("export SLURM_CONF=" .. conf, out, 1, true)
    assert.matches("stop it with: cqlua study cluster stop --dir " .. cdir, out, 1, true)
    out, rc = shell.sh(EXE .. " study cluster stop --dir " .. cdir)
    assert.are.equal(0, rc, out)
    assert.matches("stopped the cluster in " .. cdir, out, 1, true)
    out, rc = shell.sh(EXE .. " study cluster status --dir " .. cdir)
    assert.are.equal(1, rc, out)
    assert.matches("no cluster is running in " .. cdir, out, 1, true)
  end)
end)
