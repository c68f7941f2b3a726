-- Smoke tests of the examples: a few optimization iterations must already improve the objective.
-- (The full runs, with their stated targets, are `cqlua examples/<name>.lua`; see docs/benchmarks.md.)

-- Runs an example script with its own `arg` table, returning what the script returns.
local function run_example(path, args)
  local chunk = assert(loadfile(path))
  setfenv(chunk, setmetatable({ arg = args }, { __index = _G }))
  return chunk()
end
describe("examples/walker2d.lua", function()
  it("three gradient-descent iterations move the walker forward", function()
    local r = run_example("examples/walker2d.lua", { "3", "f32", "2" })
    print(string.format("  walker2d: loss %.5f -> %.5f after 3 iterations (%.3f s/iter)", r.initial, r.final,
      r.seconds_per_iter))
    assert.is_true(r.final < r.initial - 0.01)
  end)
end)

describe("examples/biped2d.lua", function()
  it("four Adam iterations of the closed-loop MLP move the biped forward", function()
    local log = run_example("examples/biped2d.lua", { "4", tostring(1 / 128), "1e-3" })
    print(string.format("  biped2d: distance %.4f -> %.4f, loss %.5f -> %.5f", log.first.distance, log.last.distance,
      log.first.loss, log.last.loss))
    assert.is_true(log.last.loss < log.first.loss - 0.005)
    assert.is_true(log.last.distance > log.first.distance + 0.005)
  end)
end)
