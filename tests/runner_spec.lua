-- tests/run.lua --jobs N (tests/_parallel.lua): the spec files in worker processes, their counts summed into the last
-- line, and every way a worker can go wrong counted as a failure: a failing test, a worker that dies without a count
-- line, a spec directory that does not exist. Each case runs the runner itself on small specs in a temporary directory.
local shell = require "tests._shell"
local paths = package.loaded["cq._paths"] or {}

local function runner(args)
  return shell.sh(string.format("%s tests/run.lua %s", paths.exe or "build/bin/cqlua", args))
end

describe("tests/run.lua --jobs", function()
  local dir
  before_each(function()
    dir = shell.tmpdir()
    shell.write_file(dir .. "/a_spec.lua", 'describe("a", function() it("passes", function() end) ' ..
      'it("fails", function() assert.are.equal(1, 2) end) end)\n')
    shell.write_file(dir .. "/b_spec.lua", 'describe("b", function() it("one", function() end) ' ..
      'it("two", function() end) end)\n')
  end)
  after_each(function() os.execute("rm -rf '" .. dir .. "'") end)

  it("sums the workers' counts, names the failing test, and exits 1", function()
    local out, rc = runner("--jobs 2 " .. dir)
    assert.are.equal(1, rc, out)
    assert.matches("\n3 passed, 1 failed, 0 skipped\n$", out)
    assert.is_truthy(out:find("FAIL  " .. dir .. "/a_spec.lua:1: a fails", 1, true), out)
    assert.is_truthy(out:find("in 2 workers", 1, true), out)
  end)

  it("counts the same as one process does, options passed to every worker", function()
    local serial = runner("--filter=one " .. dir)
    local parallel = runner("-j2 --filter=one " .. dir)
    assert.are.equal(serial:match("(%d+ passed, %d+ failed, %d+ skipped)\n$"),
      parallel:match("(%d+ passed, %d+ failed, %d+ skipped)\n$"))
    assert.matches("\n1 passed, 0 failed, 3 skipped\n$", parallel)
  end)

  it("counts a worker that dies without a count line and a missing directory as failures", function()
    shell.write_file(dir .. "/c_spec.lua", "os.exit(3)\n")
    local out, rc = runner("--jobs 2 " .. dir .. " " .. dir .. "/nowhere")
    assert.are.equal(1, rc, out)
    assert.matches("\n3 passed, 3 failed, 0 skipped\n$", out) -- a's failure, c's worker, the missing directory
    assert.is_truthy(out:find("c_spec.lua: its worker exited with status 3 without a count line", 1, true), out)
    assert.is_truthy(out:find(dir .. "/nowhere: no such spec file or directory", 1, true), out)
  end)

  it("refuses a --jobs that is not a whole number >= 1", function()
    local out, rc = runner("--jobs 0 " .. dir)
    assert.are_not.equal(0, rc)
    assert.is_truthy(out:find("--jobs must be a whole number >= 1, got '0'", 1, true), out)
  end)
end)
