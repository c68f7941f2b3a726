-- cq.args: the examples' key=value arguments (lua/cq/args.lua).
local cq = require "cq"

local SPEC = { name = "demo.lua", about = "A demo.",
  { "iters", 100, "iterations", min = 1, integer = true },
  { "precision", "f32", "precision", oneof = { "f32", "f64" } },
  { "dt", nil, "substep (s)", type = "number" },
  { "video", false, "write a video" },
}

describe("cq.args", function()
  it("takes defaults, key=value pairs and positional values in the list's order", function()
    local a = cq.args({}, SPEC)
    assert.are.same({ iters = 100, precision = "f32", video = false }, a)
    a = cq.args({ "iters=7", "dt=2.5e-3", "video=true" }, SPEC)
    assert.are.same({ iters = 7, precision = "f32", dt = 2.5e-3, video = true }, a)
    a = cq.args({ "3", "f64", "dt=" }, SPEC) -- an empty value keeps the default
    assert.are.same({ iters = 3, precision = "f64", video = false }, a)
    a = cq.args({ "", "f64" }, SPEC)
    assert.are.same({ iters = 100, precision = "f64", video = false }, a)
  end)
  it("refuses unknown keys, bad values, repeats and positions after keys, naming the key", function()
    local function err(argv)
      local ok, e = pcall(cq.args, argv, SPEC)
      assert.is_false(ok)
      return tostring(e)
    end
    assert.truthy(err({ "iter=3" }):find('demo.lua: unknown key "iter" (keys: iters, precision, dt, video', 1, true))
    assert.truthy(err({ "iters=abc" }):find('iters must be a number, got "abc"', 1, true))
    assert.truthy(err({ "iters=0" }):find("iters must be >= 1, got 0", 1, true))
    assert.truthy(err({ "iters=2.5" }):find("iters must be a whole number", 1, true))
    assert.truthy(err({ "precision=f16" }):find('precision must be one of f32, f64, got "f16"', 1, true))
    assert.truthy(err({ "video=maybe" }):find("video must be true or false", 1, true))
    assert.truthy(err({ "iters=1", "iters=2" }):find("key iters given twice", 1, true))
    assert.truthy(err({ "5", "iters=2" }):find("key iters given twice", 1, true))
    assert.truthy(err({ "iters=1", "f64" }):find("positional values must come before", 1, true))
    assert.truthy(err({ "1", "f32", "0.1", "true", "x" }):find("at most 4", 1, true))
  end)
  it("prints every key, its default and its meaning for --help", function()
    local a, text = cq.args({ "--help" }, SPEC, { exit = false })
    assert.is_nil(a)
    assert.truthy(text:find("usage: cqlua demo.lua [key=value ...]", 1, true))
    for _, k in ipairs { "iters  ", "precision", "dt", "video", "one of f32, f64", "[100]", "[none]" } do
      assert.truthy(text:find(k, 1, true), k)
    end
  end)
end)

describe("cq.args on the command line", function()
  it("stops a script with one line naming the key, no traceback, exit status 1", function()
    local shell = require "tests._shell"
    local out, rc = shell.sh(shell.quote(shell.exe()) .. " examples/biped2d.lua iter=3")
    assert.are.equal(1, rc)
    assert.truthy(out:find('examples/biped2d.lua: unknown key "iter" (keys: iters, spacing, lr)', 1, true), out)
    assert.falsy(out:find("traceback", 1, true), out)
  end)
end)
