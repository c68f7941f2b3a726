-- docs/api.md cannot go stale: its field and registry tables are generated from the engine (tools/gendocs.lua) and
-- every option table lists exactly the options the code accepts (the option sets of lua/cq/_check.lua).
package.path = "./?.lua;" .. package.path
local gendocs = require "tools.gendocs"

describe("docs/api.md", function()
  it("matches the engine's field and registry tables and the code's option sets", function()
    local f = assert(io.open(gendocs.FILE))
    local text = f:read("*a")
    f:close()
    local new, problems = gendocs.render(text)
    for _, p in ipairs(problems) do print("  " .. p) end
    assert.are.same({}, problems)
    if new ~= text then print("  generated sections are out of date: run build/bin/cqlua tools/gendocs.lua") end
    assert.is_true(new == text)
    local sets = 0
    for _ in pairs(require("cq._check").option_sets) do sets = sets + 1 end
    print(string.format("  %d option tables checked against the code", sets))
    assert.is_true(sets >= 25)
  end)
  it("notices a stale table: an undocumented option and a generated section edited by hand", function()
    local f = assert(io.open(gendocs.FILE))
    local text = f:read("*a")
    f:close()
    local stale = text:gsub("| `substeps` |[^\n]*\n", "", 1):gsub("| `E` | real | 1 | 10 |", "| `E` | real | 1 | 11 |", 1)
    local new, problems = gendocs.render(stale)
    assert.is_truthy(table.concat(problems, "\n"):find("cq.world: option `substeps` is not documented", 1, true))
    assert.is_true(new ~= stale)
  end)
end)
