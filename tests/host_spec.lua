-- tests/host_spec.lua: checks the cqlua host program itself by running the built binary as a subprocess.

local paths = require 'cq._paths'

local function shell_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local function dirname(p)
  return p:match('^(.*)/[^/]*$') or '.'
end

local function is_file(p)
  local f = io.open(p, 'r')
  if f then f:close() end
  return f ~= nil
end

-- The binary under test: the running host, made absolute so tests may cd elsewhere.
local function host_exe()
  local exe = paths.exe or arg[-1]
  assert(exe, 'cannot tell which cqlua binary is running')
  if exe:sub(1, 1) ~= '/' then exe = os.getenv('PWD') .. '/' .. exe end
  return exe
end
local EXE = host_exe()

local function read_file(p)
  local f = assert(io.open(p, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end

local function write_file(p, text)
  local f = assert(io.open(p, 'wb'))
  f:write(text)
  f:close()
end

-- Runs a shell command line; returns stdout, stderr and the exit code.
local function sh(cmdline)
  local errfile = os.tmpname()
  local p = assert(io.popen('(' .. cmdline .. ') 2>' .. shell_quote(errfile) .. '; echo "__rc=$?"'))
  local all = p:read('*a')
  p:close()
  local err = read_file(errfile)
  os.remove(errfile)
  local out, code = all:match('^(.*)__rc=(%d+)\n$')
  assert(code, 'could not read the exit code of: ' .. cmdline)
  return out, err, tonumber(code)
end

-- Runs the host with the given (unquoted) arguments.
local function cqlua(...)
  local args = { shell_quote(EXE) }
  for i = 1, select('#', ...) do args[#args + 1] = shell_quote((select(i, ...))) end
  return sh(table.concat(args, ' '))
end

local function temp_dir()
  local out, _, code = sh('mktemp -d /tmp/cqlua_host_spec.XXXXXX')
  assert(code == 0, 'mktemp failed')
  return (out:gsub('%s+$', ''))
end

local function remove_tree(dir)
  assert(dir:match('^/tmp/cqlua_host_spec%.'), 'refusing to remove ' .. dir)
  os.execute('rm -rf ' .. shell_quote(dir))
end

describe('cqlua host', function()
  local dir

  before_each(function() dir = temp_dir() end)
  after_each(function() remove_tree(dir) end)

  local function script(name, text)
    local p = dir .. '/' .. name
    write_file(p, text)
    return p
  end

  describe('command line', function()
    it('--version prints "cqlua <version> (LuaJIT x.y.z)"', function()
      local out, err, code = cqlua('--version')
      assert.are.equal(0, code)
      assert.are.equal('', err)
      local version, luajit = out:match('^cqlua (%S+) %(LuaJIT (%d+%.%d+%.%d+%S*)%)\n$')
      assert.is_not_nil(version, 'unexpected --version output: ' .. out)
      assert.are.equal(paths.version, version)
      assert.are.equal(jit.version, 'LuaJIT ' .. luajit)
    end)

    it('--help explains usage, the environment and where cq is found', function()
      local out, _, code = cqlua('--help')
      assert.are.equal(0, code)
      assert.truthy(out:find('usage: cqlua', 1, true))
      assert.truthy(out:find('require "cq"', 1, true))
      assert.truthy(out:find('CQ_LUA_PATH', 1, true))
      assert.truthy(out:find('CQ_LIB_PATH', 1, true))
      assert.truthy(out:find('share/cqlua/lua', 1, true))
      assert.truthy(out:find('cq package dir:  ' .. paths.lua, 1, true))
    end)

    it('without a script prints usage and exits 1', function()
      local out, err, code = cqlua()
      assert.are.equal(1, code)
      assert.are.equal('', out)
      assert.truthy(err:find('usage: cqlua', 1, true))
    end)

    it('rejects an unknown option with exit 1', function()
      local _, err, code = cqlua('--frobnicate', 'x.lua')
      assert.are.equal(1, code)
      assert.truthy(err:find("unknown option '--frobnicate'", 1, true))
    end)

    it('runs -e code and a script read from stdin', function()
      local out, _, code = cqlua('-e', 'io.write(6 * 7)')
      assert.are.equal(0, code)
      assert.are.equal('42', out)
      out, _, code = sh('echo "io.write(\'from stdin\') os.exit(4)" | ' .. shell_quote(EXE) .. ' -')
      assert.are.equal(4, code)
      assert.are.equal('from stdin', out)
    end)
  end)

  describe('scripts', function()
    it('get the arg table and ... like the lua standalone', function()
      local p = script('args.lua', [[
        local n = select('#', ...)
        io.write(arg[0], '|', arg[-1], '|', #arg, '|', n, '|', table.concat(arg, ','), '|', table.concat({...}, ','))
      ]])
      local out, err, code = cqlua(p, 'one', 'two words', '')
      assert.are.equal(0, code)
      assert.are.equal('', err)
      assert.are.equal(p .. '|' .. EXE .. '|3|3|one,two words,|one,two words,', out)
    end)

    it('report a runtime error as "cqlua: file:line: message" with a traceback and exit 1', function()
      local p = script('boom.lua', 'local function f()\n  error("boom")\nend\nf()\n')
      local out, err, code = cqlua(p)
      assert.are.equal(1, code)
      assert.are.equal('', out)
      assert.are.equal('cqlua: ' .. p .. ':2: boom\n', err:match('^[^\n]*\n'))
      assert.truthy(err:find('stack traceback:', 1, true))
      assert.truthy(err:find(p .. ':4: in main chunk', 1, true))
    end)

    it('report syntax errors and missing files with exit 1', function()
      local p = script('bad.lua', 'x = = 1\n')
      local _, err, code = cqlua(p)
      assert.are.equal(1, code)
      assert.truthy(err:find('cqlua: ' .. p .. ':1:', 1, true))
      _, err, code = cqlua(dir .. '/missing.lua')
      assert.are.equal(1, code)
      assert.truthy(err:find('cqlua: cannot open ' .. dir .. '/missing.lua', 1, true))
    end)

    it('describe non-string error objects', function()
      local _, err, code = cqlua('-e', 'error({})')
      assert.are.equal(1, code)
      assert.truthy(err:find('cqlua: (error object is a table value)', 1, true))
    end)

    it('pass os.exit codes through', function()
      for _, case in ipairs({ { 'os.exit(3)', 3 }, { 'os.exit(0)', 0 }, { 'os.exit(true)', 0 },
                              { 'os.exit(false)', 1 }, { 'print("x")', 0 } }) do
        local _, _, code = cqlua(script('exit.lua', case[1]))
        assert.are.equal(case[2], code, case[1])
      end
    end)
  end)

  describe('finding the cq package', function()
    -- what the host should have found for the build tree: <exe_dir>/../../lua
    local build_root = dirname(dirname(dirname(EXE)))

    local probe = [[
      local p = require 'cq._paths'
      local cq = require 'cq'
      io.write(tostring(p.lua), '\n', tostring(p.lib), '\n', tostring(p.exe), '\n',
               type(cq), '\n', package.path, '\n')
    ]]

    local function lines(s)
      local t = {}
      for l in s:gmatch('([^\n]*)\n') do t[#t + 1] = l end
      return t
    end

    it('works from another directory with an empty environment', function()
      assert.is_true(is_file(build_root .. '/lua/cq/init.lua'), 'test expects a build-tree binary')
      local p = script('probe.lua', probe)
      local out, err, code = sh('cd /tmp && env -i ' .. shell_quote(EXE) .. ' ' .. shell_quote(p))
      assert.are.equal('', err)
      assert.are.equal(0, code)
      local l = lines(out)
      assert.are.equal(build_root .. '/lua', l[1])
      assert.are.equal(build_root .. '/' .. EXE:match('([^/]+)/bin/[^/]+$') .. '/lib', l[2])
      assert.are.equal(EXE, l[3])
      assert.are.equal('table', l[4])
      -- ours first, the system's Lua paths (busted, penlight) still after it
      local luadir = build_root .. '/lua'
      assert.are.equal(luadir .. '/?.lua;' .. luadir .. '/?/init.lua;', l[5]:sub(1, 2 * #luadir + 19))
      assert.truthy(l[5]:find('/usr/share/lua/5.1/?.lua', 1, true))
    end)

    it('uses the installed layout <prefix>/share/cqlua/lua', function()
      os.execute('mkdir -p ' .. shell_quote(dir .. '/bin') .. ' ' .. shell_quote(dir .. '/share/cqlua/lua/cq'))
      os.execute('cp ' .. shell_quote(EXE) .. ' ' .. shell_quote(dir .. '/bin/cqlua'))
      write_file(dir .. '/share/cqlua/lua/cq/init.lua', 'return { installed = true }\n')
      local p = script('probe.lua', probe .. "io.write(tostring(require('cq').installed))")
      local out, err, code = sh('cd / && env -i ' .. shell_quote(dir .. '/bin/cqlua') .. ' ' .. shell_quote(p))
      assert.are.equal('', err)
      assert.are.equal(0, code)
      local l = lines(out .. '\n')
      assert.are.equal(dir .. '/share/cqlua/lua', l[1])
      assert.are.equal(dir .. '/lib/cqlua', l[2])
      assert.are.equal(dir .. '/bin/cqlua', l[3])
      assert.are.equal('true', l[6])
    end)

    it('still runs scripts when no layout matches, and CQ_LUA_PATH / CQ_LIB_PATH override', function()
      os.execute('mkdir -p ' .. shell_quote(dir .. '/bin'))
      local exe = dir .. '/bin/cqlua'
      os.execute('cp ' .. shell_quote(EXE) .. ' ' .. shell_quote(exe))
      local p = script('nolayout.lua', [[
        local p = require 'cq._paths'
        io.write(tostring(p.lua), ' ', tostring(p.lib), ' ', p.version, '\n')
        require 'cq'
      ]])
      local out, err, code = sh('env -i ' .. shell_quote(exe) .. ' ' .. shell_quote(p))
      assert.are.equal(1, code)
      assert.are.equal('nil nil ' .. paths.version .. '\n', out)
      assert.truthy(err:find("module 'cq' not found", 1, true))

      out, err, code = sh('env -i CQ_LUA_PATH=' .. shell_quote(build_root .. '/lua')
        .. ' CQ_LIB_PATH=/opt/cqlibs ' .. shell_quote(exe) .. ' ' .. shell_quote(p))
      assert.are.equal('', err)
      assert.are.equal(0, code)
      assert.are.equal(build_root .. '/lua /opt/cqlibs ' .. paths.version .. '\n', out)
    end)
  end)
end)
