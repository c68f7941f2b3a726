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

-- The map pages name files and functions; a rename or a removal must not leave them pointing at nothing. Each
-- backticked path must exist; each backticked identifier (with an underscore) in a table row's last cell must occur
-- in one of the files that cell names, and one in a paragraph somewhere in the sources.
local function read(path)
  local f = io.open(path)
  if not f then return nil end
  local t = f:read("*a")
  f:close()
  return t
end

local ROOTS = { engine = true, cuda = true, lua = true, scenes = true, tests = true, examples = true, tools = true,
                docs = true, [".ci"] = true }

local function is_path(tok)
  if tok == "Makefile" then return true end
  local root = tok:match("^([%w_%.]+)/")
  return root and ROOTS[root] and not tok:find("[%*<>%s]") and tok:match("%.%w+$")
end

local SOURCES -- the text of every tracked source file, read once
local SOURCE_EXT = { c = true, h = true, cu = true, cuh = true, cpp = true, lua = true, sh = true, py = true,
                     Makefile = true }

local function check_refs(doc)
  local text = assert(read(doc), doc)
  local problems, cache = {}, {}
  local function content(p)
    if cache[p] == nil then cache[p] = read(p) or false end
    return cache[p]
  end
  local function in_sources(tok)
    if not SOURCES then
      local parts = {}
      local list = io.popen("git ls-files engine cuda lua tools tests scenes examples Makefile 2>/dev/null")
      for path in list:lines() do
        if SOURCE_EXT[path:match("%.(%w+)$") or path] then parts[#parts + 1] = read(path) or "" end
      end
      list:close()
      SOURCES = table.concat(parts, "\n")
    end
    return SOURCES:find(tok, 1, true) ~= nil
  end
  local function check_group(s, where, strict)
    local files = {}
    for tok in s:gmatch("`([^`]+)`") do
      if is_path(tok) then
        if content(tok) then files[#files + 1] = tok
        else problems[#problems + 1] = string.format("%s: %s: no such file", doc, tok) end
      end
    end
    if not where or (#files == 0 and strict) then return end
    for tok in where:gmatch("`([^`]+)`") do
      if tok:match("^[%a_][%w_]*$") and tok:find("_", 1, true) then
        local found = false
        for _, f in ipairs(files) do
          if content(f):find(tok, 1, true) then found = true break end
        end
        if not found and strict then
          problems[#problems + 1] = string.format("%s: `%s` is in none of %s", doc, tok, table.concat(files, ", "))
        elseif not found and not in_sources(tok) then
          problems[#problems + 1] = string.format("%s: `%s` is in no source file", doc, tok)
        end
      end
    end
  end
  local para = {}
  local function flush()
    if #para > 0 then
      local s = table.concat(para, " ")
      check_group(s, s, false)
    end
    para = {}
  end
  local in_code = false
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("^```") then flush() in_code = not in_code
    elseif in_code then -- a picture: paths only
    elseif line:match("^|") then
      flush()
      check_group(line, line:match("|([^|]*)|%s*$"), true)
    elseif line:match("^%s*$") or line:match("^#") then flush()
    else para[#para + 1] = line end
  end
  flush()
  return problems
end

describe("docs' file and function references", function()
  for _, doc in ipairs { "docs/architecture.md", "docs/equations.md", "docs/internals.md", "docs/modelling.md", "docs/experiments/README.md", "README.md",
                         "cuda/README.md", "scenes/README.md" } do
    it(doc .. " names only files that exist and functions that are in them", function()
      local problems = check_refs(doc)
      for _, p in ipairs(problems) do print("  " .. p) end
      assert.are.same({}, problems)
    end)
  end
  it("notices a renamed function and a moved file", function()
    local tmp = os.tmpname()
    local f = assert(io.open(tmp, "w"))
    f:write("| g2p | `engine/stages/g2p.h` (`g2p_adj`, `g2p_renamed`) |\n\nSee `engine/gone.h` and `engine/stages/p2g.h` (`p2g_adj`).\n")
    f:close()
    local problems = check_refs(tmp)
    os.remove(tmp)
    assert.are.equal(2, #problems)
    assert.is_truthy(problems[1]:find("`g2p_renamed` is in none of engine/stages/g2p.h", 1, true))
    assert.is_truthy(problems[2]:find("engine/gone.h: no such file", 1, true))
  end)
end)

-- The front door (issue 63): every example and every public constructor is in the README or docs/api.md; every
-- file under docs/ is linked from some page; every relative link in a page leads to a file that exists.
local function git_files(args)
  local out = {}
  local p = io.popen("git ls-files -co --exclude-standard " .. args .. " 2>/dev/null")
  for line in p:lines() do if read(line) or line:match("/$") then out[#out + 1] = line end end
  p:close()
  return out
end

local function normalize(path)
  local parts = {}
  for seg in path:gmatch("[^/]+") do
    if seg == ".." then
      if #parts == 0 then return nil end
      parts[#parts] = nil
    elseif seg ~= "." then parts[#parts + 1] = seg end
  end
  return table.concat(parts, "/")
end

-- The paths a markdown page points at: its links' targets and its backticked or bare tokens that look like paths,
-- each resolved against the page's folder and against the repository root.
local function page_refs(doc, text)
  local dir = doc:match("^(.*)/") or ""
  local refs, links = {}, {}
  local function add(tok, is_link)
    tok = tok:gsub("#.*$", ""):gsub("%?.*$", "")
    if tok == "" or tok:match("^%a+:") then return end
    for _, base in ipairs { dir, "" } do
      local p = normalize((base ~= "" and base .. "/" or "") .. tok)
      if p then refs[p] = true end
    end
    if is_link then links[#links + 1] = tok end
  end
  for target in text:gmatch("%]%(([^)%s]+)") do add(target, true) end
  for tok in text:gmatch("[%w_%./%-]+") do
    if tok:find("/", 1, true) or tok:match("%.%a+$") then add(tok:gsub("[%.,;:]+$", ""), false) end
  end
  return refs, links
end

local function all_pages()
  local pages = {}
  for _, f in ipairs(git_files("'*.md'")) do pages[#pages + 1] = f end
  return pages
end

local function unlinked_docs(pages, files)
  local refs = {}
  for _, doc in ipairs(pages) do
    local r = page_refs(doc, read(doc) or "")
    for p in pairs(r) do refs[p] = true end
  end
  local missing = {}
  for _, f in ipairs(files) do
    local ok = refs[f] or false
    local folder = f:match("^(.*)/")
    while not ok and folder and folder ~= "docs" and folder ~= "docs/results" do
      ok = refs[folder] or refs[folder .. "/"] or false
      folder = folder:match("^(.*)/")
    end
    if not ok and not f:match("%.md$") then missing[#missing + 1] = f end
    if not ok and f:match("%.md$") and f ~= "docs/README.md" then missing[#missing + 1] = f end
  end
  return missing
end

describe("the docs as a front door", function()
  it("list every example and every public constructor in README.md or docs/api.md", function()
    local readme, api = assert(read("README.md")), assert(read("docs/api.md"))
    local problems = {}
    for _, f in ipairs(git_files("examples/")) do
      local name = f:match("^examples/([%w_]+)%.lua$")
      if name and not readme:find("examples/" .. name .. ".lua", 1, true) then
        problems[#problems + 1] = "README.md does not name " .. f
      end
    end
    local init = assert(read("lua/cq/init.lua"))
    local lazy = init:match("local lazy = (%b{})")
    local n = 0
    for name in lazy:gmatch("\n%s*([%a][%w_]*) = function") do
      if name:match("^%l") then
        n = n + 1
        if not (readme:find("cq." .. name, 1, true) or api:find("cq." .. name, 1, true)) then
          problems[#problems + 1] = "neither README.md nor docs/api.md names cq." .. name
        end
      end
    end
    for _, p in ipairs(problems) do print("  " .. p) end
    assert.are.same({}, problems)
    assert.is_true(n >= 25, "found " .. n .. " constructors in lua/cq/init.lua")
  end)
  it("link every file under docs/ from some page, and every page's relative links lead to files", function()
    local pages, files = all_pages(), git_files("docs/")
    local problems = unlinked_docs(pages, files)
    for i, p in ipairs(problems) do problems[i] = p .. ": no page links to it" end
    for _, doc in ipairs(pages) do
      local _, links = page_refs(doc, read(doc) or "")
      local dir = doc:match("^(.*)/") or ""
      for _, l in ipairs(links) do
        local p = normalize((dir ~= "" and dir .. "/" or "") .. l)
        local f = p and io.open(p)
        if f then f:close()
        elseif not (p and os.execute("test -d '" .. p .. "'") == 0) then
          problems[#problems + 1] = string.format("%s: the link %s leads nowhere", doc, l)
        end
      end
    end
    for _, p in ipairs(problems) do print("  " .. p) end
    assert.are.same({}, problems)
  end)
  it("notices an unlinked figure", function()
    local missing = unlinked_docs({ "README.md" }, { "docs/results/seed004/walker.png", "docs/api.md" })
    assert.are.same({ "docs/results/seed004/walker.png" }, missing)
  end)
end)
