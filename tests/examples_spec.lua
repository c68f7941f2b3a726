-- Smoke tests of the examples: a few optimization iterations must already improve the objective.
-- (The full runs, with their stated targets, are `cqlua examples/<name>.lua`; see docs/benchmarks.md.)
describe("examples/walker2d.lua", function()
  it("three gradient-descent iterations move the walker forward", function()
    arg = { "3", "f32", "2" }
    local r = dofile("examples/walker2d.lua")
    arg = nil
    print(string.format("  walker2d: loss %.5f -> %.5f after 3 iterations (%.3f s/iter)", r.initial, r.final,
      r.seconds_per_iter))
    assert.is_true(r.final < r.initial - 0.01)
  end)
end)
