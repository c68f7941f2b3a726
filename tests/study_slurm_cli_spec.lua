-- tests/study_slurm_cli_spec.lua: what `cqlua study slurm` and `cqlua study cluster` say when there is no SLURM to
-- submit to (issue 63 item 6), without starting one: a fake sbatch first on PATH fails as the real one does without
-- a controller (no slurm.conf: its DNS lookup; a slurm.conf whose controller is down: connect failure) or for
-- another reason, or succeeds; sbatch missing altogether; the collect hint, with --dir, run as printed; the
-- cluster command's messages when its packages or root are missing (a fake dpkg / id first on PATH). The real
-- cluster and a real submission: tests/study_slurm_spec.lua.
local shell = require "tests._shell"
local cluster = require "cq.study.cluster"
local EXE = require("cq._paths").exe

local write = shell.write_file

-- An executable shell script at path.
local function script(path, body)
  write(path, "#!/bin/sh\n" .. body .. "\n")
  os.execute("chmod 755 " .. path)
end

local function plain(s) return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")) end

describe("cqlua study slurm without a SLURM to submit to", function()
  local dir, file, sdir, run_cmd, collect_cmd
  setup(function()
    dir = shell.tmpdir()
    os.execute("mkdir -p " .. dir .. "/bin " .. dir .. "/empty")
    write(dir .. "/two.lua", [[
local study = require "cq.study"
return study.define { name = "two", space = study.grid { a = { 1, 2 } },
  run = function(row) return { y = row.a } end, metrics = { "y" } }
]])
    file, sdir = dir .. "/two.lua", dir .. "/out/studies/two"
    run_cmd = "cqlua study run " .. file .. " --dir " .. sdir
    collect_cmd = "cqlua study collect " .. file .. " --dir " .. sdir
  end)
  teardown(function() if dir then os.execute("rm -rf " .. dir) end end)

  -- `cqlua study slurm two.lua ARGS` in dir with the fake sbatch (its body) first on PATH and SLURM_CONF unset.
  local function submit(sbatch_body, args, env)
    script(dir .. "/bin/sbatch", sbatch_body)
    return shell.sh("cd " .. dir .. " && env -u SLURM_CONF PATH=" .. dir .. "/bin:$PATH " .. (env or "") .. " " ..
      EXE .. " study slurm two.lua " .. (args or ""))
  end

  local function expect_controller_hint(out)
    assert.matches("no SLURM controller answered; ", out, 1, true)
    if cluster.running_conf() then -- a local cluster runs here: the hint points SLURM_CONF at it
      assert.matches("a local cluster is running on this machine", out, 1, true)
    else
      assert.matches("to try studies on this machine start a local one-node cluster with `cqlua study cluster " ..
        "start` (as root) and export the SLURM_CONF it prints", out, 1, true)
    end
    assert.matches(", or run the study locally with `" .. run_cmd .. "`", out, 1, true)
  end

  it("no slurm.conf (sbatch's DNS lookup fails): sbatch's last line and the hint, not its DNS errors", function()
    local out, rc = submit([[
echo "sbatch: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host" >&2
echo "sbatch: error: fetch_config: DNS SRV lookup failed" >&2
echo "sbatch: error: _establish_config_source: failed to fetch config" >&2
echo "sbatch: fatal: Could not establish a configuration source" >&2
exit 1]])
    assert.are.equal(1, rc, out)
    assert.matches("cqlua study slurm: sbatch could not submit the array (exit status 1): sbatch: fatal: Could " ..
      "not establish a configuration source\n", out, 1, true)
    assert.not_matches("res_nsearch", out)
    expect_controller_hint(out)
  end)

  it("a slurm.conf whose controller is down (connect failure): the same hint", function()
    local out, rc = submit([[
echo "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)" >&2
exit 1]])
    assert.are.equal(1, rc, out)
    assert.matches("(exit status 1): sbatch: error: Batch job submission failed: Unable to contact slurm " ..
      "controller (connect failure)", out, 1, true)
    expect_controller_hint(out)
  end)

  it("sbatch refusing for another reason: its whole message, no controller hint", function()
    local out, rc = submit([[
echo "sbatch: error: invalid partition specified: nosuch" >&2
echo "sbatch: error: Batch job submission failed: Invalid partition name specified" >&2
exit 1]], "--partition=nosuch")
    assert.are.equal(1, rc, out)
    assert.matches("cqlua study slurm: sbatch failed (exit status 1): sbatch: error: invalid partition specified: " ..
      "nosuch\nsbatch: error: Batch job submission failed: Invalid partition name specified", out, 1, true)
    assert.not_matches("no SLURM controller", out)
  end)

  it("sbatch not installed: says so, how to install SLURM and start a local cluster, or run here", function()
    local out, rc = shell.sh("cd " .. dir .. " && PATH=" .. dir .. "/empty " .. EXE .. " study slurm two.lua")
    assert.are.equal(1, rc, out)
    assert.matches("cqlua study slurm: sbatch is not on PATH (on a cluster, run this on its login node; " ..
      "`--dry-run` writes the script only)", out, 1, true)
    assert.matches("to try studies on this machine install SLURM as root (`apt-get install slurm-wlm munge`) and " ..
      "start a local one-node cluster with `cqlua study cluster start`, or run the study locally with `" ..
      run_cmd .. "`", out, 1, true)
  end)

  it("SLURM_CONF naming a missing file: said at once, sbatch not run", function()
    local out, rc = submit("touch " .. dir .. "/sbatch_ran; exit 1", "", "SLURM_CONF=" .. dir .. "/gone/slurm.conf")
    assert.are.equal(1, rc, out)
    assert.matches("SLURM_CONF names " .. dir .. "/gone/slurm.conf, which does not exist", out, 1, true)
    assert.matches("or run the study locally with `" .. run_cmd .. "`", out, 1, true)
    assert.is_nil(shell.read_file(dir .. "/sbatch_ran"))
  end)

  it("a submission prints the collect command with --dir, and that command works from anywhere", function()
    local out, rc = submit('echo "$@" > ' .. dir .. '/sbatch_args; echo 4242')
    assert.are.equal(0, rc, out)
    assert.matches("2 of 2 rows to run as array 1-2", out, 1, true)
    assert.matches("  submitted job 4242; follow it with squeue -j 4242; logs in " .. sdir .. "/slurm/; then: " ..
      collect_cmd .. "\n", out, 1, true)
    assert.matches("--parsable", shell.read_file(dir .. "/sbatch_args"), 1, true)
    local cout, crc = shell.sh("cd / && " .. collect_cmd:gsub("^cqlua", EXE))
    assert.are.equal(0, crc, cout)
    assert.matches("two: 2 rows: 2 not run", cout, 1, true)
    -- sbatch --wait's status when rows failed: the job id first, then the status
    out, rc = submit("echo 4243; exit 1", "--wait")
    assert.are.equal(1, rc, out)
    assert.matches("submitted job 4243;.*sbatch exited with status 1 %(with %-%-wait: some rows failed", out)
  end)

  it("a study dir with a space: the printed commands quote it and work as printed", function()
    local qdir = dir .. "/my out"
    local out, rc = submit("echo 77", "--dir '" .. qdir .. "'")
    assert.are.equal(0, rc, out)
    local hint = out:match("then: (cqlua study collect [^\n]+)")
    assert.are.equal("cqlua study collect " .. file .. " --dir '" .. qdir .. "'", hint)
    local cout, crc = shell.sh("cd / && " .. hint:gsub("^cqlua", EXE))
    assert.are.equal(0, crc, cout)
    assert.matches(qdir .. "/results.csv", cout, 1, true)
  end)

  it("every row done: nothing submitted, the collect command with --dir", function()
    local rout, rrc = shell.sh("cd " .. dir .. " && " .. EXE .. " study run two.lua --jobs 1")
    assert.are.equal(0, rrc, rout)
    local out, rc = submit("touch " .. dir .. "/sbatch_ran2; exit 1")
    assert.are.equal(0, rc, out)
    assert.matches("two: every row is done; nothing to submit (" .. collect_cmd .. ")", out, 1, true)
    assert.is_nil(shell.read_file(dir .. "/sbatch_ran2"))
  end)
end)

describe("cqlua study cluster", function()
  local dir
  setup(function()
    dir = shell.tmpdir()
    os.execute("mkdir -p " .. dir .. "/bin")
  end)
  teardown(function() if dir then os.execute("rm -rf " .. dir) end end)

  local function cq_cluster(args, path_prefix)
    return shell.sh((path_prefix and ("PATH=" .. path_prefix .. ":$PATH ") or "") .. EXE .. " study cluster " .. args)
  end

  it("finds its script, tools/slurm_cluster.sh, the one the test suite starts its cluster with", function()
    assert.matches("/tools/slurm_cluster%.sh$", cluster.script())
  end)

  it("missing Debian packages: says which and how to install them, starts nothing", function()
    script(dir .. "/bin/dpkg", "exit 1") -- dpkg -s: not installed
    local out, rc = cq_cluster("start --dir " .. dir .. "/c1", dir .. "/bin")
    assert.are.equal(1, rc, out)
    assert.matches("cqlua study cluster: missing the Debian package(s) slurm-wlm munge; install them as root: " ..
      "apt-get install slurm-wlm munge (in the cqlua source tree: make deps-slurm)", out, 1, true)
    assert.matches("the local SLURM did not start", out, 1, true)
    assert.is_nil(shell.read_file(dir .. "/c1/slurm.conf"))
  end)

  it("not root: says that the daemons need root", function()
    script(dir .. "/bin/dpkg", "exit 0")
    script(dir .. "/bin/id", "echo 1000")
    local out, rc = cq_cluster("start --dir " .. dir .. "/c2", dir .. "/bin")
    os.remove(dir .. "/bin/id")
    assert.are.equal(1, rc, out)
    assert.matches("SLURM's daemons need root (slurmd starts each job as its user): run this as root (sudo)", out,
      1, true)
  end)

  it("status and stop when none runs; a wrong action", function()
    local out, rc = cq_cluster("status --dir " .. dir .. "/c3")
    assert.are.equal(1, rc, out)
    assert.matches("no cluster is running in " .. dir .. "/c3\n  start it with: cqlua study cluster start --dir " ..
      dir .. "/c3", out, 1, true)
    out, rc = cq_cluster("stop --dir " .. dir .. "/c3")
    assert.are.equal(0, rc, out)
    assert.matches("no cluster was running in " .. dir .. "/c3", out, 1, true)
    out, rc = cq_cluster("begin")
    assert.are.equal(1, rc, out)
    assert.matches("cluster takes start, stop or status: cqlua study cluster start|status|stop [--dir DIR] " ..
      "(got \"begin\")", out, 1, true)
    assert.matches(plain("(cqlua study --help)"), out)
  end)
end)
