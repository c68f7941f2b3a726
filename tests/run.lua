-- tests/run.lua: runs the busted specs inside the cqlua host and ends with a "N passed, N failed, N skipped" line.
--
-- usage: build/bin/cqlua tests/run.lua [--jobs N] [busted options] [spec files or dirs]
-- Without files it runs every tests/**/*_spec.lua. Busted options pass through
-- (--tags, --exclude-tags=gpu, --filter, -v for tracebacks, --list, ...).
-- --jobs N: the spec files in N worker processes at once (tests/_parallel.lua; make test gives one per core).
--
-- How it hooks busted: busted.runner is called in-process (so specs use this very
-- host). Our reporter subscribes to busted's event mediator from a `-e` statement,
-- which busted runs right after it initialises and before it loads any spec, so it
-- sees every event whichever output handler is chosen. By default the output
-- handler is a silent one and the reporter prints; with `-o NAME` busted's handler
-- prints and the reporter only adds the closing summary line.

local SILENT_OUTPUT = 'cqtest.silent_output'
local DEFAULT_PATTERN = '_spec%.lua$'

local function die(msg)
  io.stderr:write('run.lua: ', msg, '\n')
  os.exit(1)
end

local have_runner, runner = pcall(require, 'busted.runner')
if not have_runner then
  die('cannot load busted (install the Debian package lua-busted):\n' .. tostring(runner))
end
local pretty = require 'pl.pretty'

io.stdout:setvbuf('line')   -- keep our lines in order with specs' print() and subprocess output

---------------------------------------------------------------------------
-- Reporter: counts results and prints them as they happen.

local settings = { verbose = false, quiet = false }

local Reporter = {}
Reporter.__index = Reporter

local function new_reporter()
  return setmetatable({
    passed = 0, failed = 0, pending = 0,
    registered = 0, finished = 0,   -- tests defined vs. tests that reached their end
    problems = {},                  -- it element -> { kind, message, trace } until its end
    failed_names = {},
    file_seconds = {},              -- spec file name -> seconds (summed over --repeat runs)
    seconds = 0,
  }, Reporter)
end

local reporter = new_reporter()

local function out(...)
  if not settings.quiet then io.stdout:write(...) end
end

local function seconds(t)
  return string.format('%7.3f s', t or 0)
end

local function message_text(message)
  if type(message) == 'string' then return message end
  if message == nil then return 'nil error' end
  return pretty.write(message)
end

local function indent(text, pad)
  return pad .. text:gsub('\n', '\n' .. pad)
end

local function location(element)
  local t = element and element.trace
  if t and t.short_src then return t.short_src .. ':' .. tostring(t.currentline) end
  return nil
end

-- "describe name it name", like busted's own handlers (the file is not part of it).
local function full_name(busted, element)
  local names = { element.name or element.descriptor or '?' }
  local parent = busted.parent(element)
  while parent and (parent.name or parent.descriptor) and parent.descriptor ~= 'file' do
    table.insert(names, 1, parent.name or parent.descriptor)
    parent = busted.parent(parent)
  end
  return table.concat(names, ' ')
end

-- One result line: label, time, name; for problems also where and the message.
function Reporter:line(label, time, name, where)
  local t = time and seconds(time) or string.rep(' ', #seconds(0))
  out('  ', label, ' ', t, '  ', name, where and ('  (' .. where .. ')') or '', '\n')
end

function Reporter:problem(label, time, name, where, message, trace)
  self:line(label, time, name, where)
  out(indent(message_text(message), '        '), '\n')
  if settings.verbose and trace and trace.traceback then
    out(indent(trace.traceback:match('^%s*(.-)%s*$'), '        '), '\n')
  end
  table.insert(self.failed_names, label .. ' ' .. (where and where .. ': ' or '') .. name)
end

function Reporter:test_end(busted, element, status)
  self.finished = self.finished + 1
  local name = full_name(busted, element)
  local problem = self.problems[element]
  self.problems[element] = nil
  if status == 'success' then
    self.passed = self.passed + 1
    self:line('ok   ', element.duration, name)
  elseif status == 'pending' then
    self.pending = self.pending + 1
    local why = problem and type(problem.message) == 'string' and problem.message
    self:line('skip ', nil, why and (name .. ': ' .. why) or name, not why and location(element) or nil)
  else
    self.failed = self.failed + 1
    self:problem(status == 'failure' and 'FAIL ' or 'ERROR', element.duration, name,
      location(element), problem and problem.message, problem and problem.trace)
  end
end

-- Errors outside any test (a spec file that does not load, a failing before_each, ...).
function Reporter:outside_error(busted, element, parent, message, trace)
  self.failed = self.failed + 1
  local what = element.descriptor or 'runner'
  if element.name then what = what .. ' "' .. element.name .. '"' end
  if parent and parent.descriptor and parent.descriptor ~= 'file' then
    what = what .. ' of "' .. full_name(busted, parent) .. '"'
  end
  self:problem('ERROR', nil, 'in ' .. what, location(element), message, trace)
end

function Reporter:file_end(file)
  local name = file.name or '?'
  self.file_seconds[name] = (self.file_seconds[name] or 0) + (file.duration or 0)
  out('  file  ', seconds(file.duration), '  ', file.name or '?', '\n')
end

-- Registration counter, added once filters exist so it runs before them: tests
-- that a tag or name filter drops are then counted as skipped. (Tests inside an
-- excluded describe are never defined, so they cannot be counted.)
function Reporter:count_registrations(busted)
  if self.counting then return end
  self.counting = true
  local function count() self.registered = self.registered + 1; return nil, true end
  busted.subscribe({ 'register', 'it' }, count, { priority = 1 })
  busted.subscribe({ 'register', 'pending' }, count, { priority = 1 })
end

function Reporter:attach(busted)
  local function on(channel, fn) busted.subscribe(channel, function(...) fn(...); return nil, true end) end

  on({ 'suite', 'start' }, function(suite, run, runs, seed)
    self:count_registrations(busted)
    if runs and runs > 1 then out('-- run ', run, ' of ', runs, '\n') end
    if seed then out('-- random seed ', seed, '\n') end
  end)
  on({ 'suite', 'end' }, function(suite) self.seconds = self.seconds + (suite.duration or 0) end)
  on({ 'file', 'start' }, function(file) out(file.name or '?', '\n') end)
  on({ 'file', 'end' }, function(file) self:file_end(file) end)
  on({ 'test', 'end' }, function(element, parent, status) self:test_end(busted, element, status) end)

  -- a test's failure (or pending reason) arrives before its end; keep it until then
  local function test_problem(kind)
    return function(element, parent, message, trace)
      self.problems[element] = { kind = kind, message = message, trace = trace }
    end
  end
  on({ 'pending' }, test_problem('pending'))
  on({ 'failure', 'it' }, test_problem('failure'))
  on({ 'error', 'it' }, test_problem('error'))

  local function other_problem(element, parent, message, trace)
    if element.descriptor ~= 'it' then self:outside_error(busted, element, parent, message, trace) end
  end
  on({ 'failure' }, other_problem)
  on({ 'error' }, other_problem)
end

function Reporter:skipped()
  return self.pending + math.max(0, self.registered - self.finished)
end

-- Ends the run; the counts line is always the very last line. With a busted
-- output handler chosen (quiet) only that line is added to its output.
function Reporter:print_summary()
  local files = {}
  for name, t in pairs(self.file_seconds) do table.insert(files, { name = name, seconds = t }) end
  if #files > 1 then
    table.sort(files, function(a, b) return a.seconds > b.seconds end)
    out('\nslowest spec files:\n')
    for i = 1, math.min(5, #files) do
      out('  ', seconds(files[i].seconds), '  ', files[i].name, '\n')
    end
  end
  if #self.failed_names > 0 then
    out('\nfailed:\n')
    for _, name in ipairs(self.failed_names) do out('  ', name, '\n') end
  end
  out('\ntotal time ', seconds(self.seconds), '\n')
  io.stdout:write(('%d passed, %d failed, %d skipped\n'):format(self.passed, self.failed, self:skipped()))
  io.stdout:flush()
end

package.preload['cqtest.reporter'] = function()
  return { attach = function() reporter:attach(require 'busted') end }
end
-- Prints nothing, but loads busted's messages as its handlers do (busted needs them).
package.preload[SILENT_OUTPUT] = function()
  return function()
    return { subscribe = function(_, options)
      require('busted.languages.en')
      if options.language and options.language ~= 'en' then
        require('busted.languages.' .. options.language)
      end
    end }
  end
end

---------------------------------------------------------------------------
-- Command line: busted's own parser tells us what the user gave.

local function script_dir()
  local dir = (arg and arg[0] or ''):match('^(.*)/[^/]*$')
  return dir or '.'
end

local function has_help_flag(args)
  for _, a in ipairs(args) do
    if a == '--' then return false end
    if a == '-h' or a == '--help' then return true end
  end
  return false
end

local function print_help(busted_help)
  print('usage: cqlua tests/run.lua [busted options] [spec files or dirs]\n')
  print('Runs busted inside the cqlua host. Without files it runs '
    .. script_dir() .. '/**/*_spec.lua.')
  print('The last line is "N passed, N failed, N skipped"; exit code 0 iff nothing failed.')
  print('--jobs N: the spec files in N worker processes at once, their reports printed as each ends.')
  print('Examples: --exclude-tags=gpu   --tags=fast   --filter=gradient   -v (tracebacks)   --jobs 2\n')
  print('busted options:')
  print((busted_help:gsub('^.-error: ', ''):gsub('; re%-run with %-%-help for usage%.%s*$', '')))
end

-- Returns busted's argument list: the user's, plus our default pattern and root.
local function busted_args(user)
  local parser = require 'busted.modules.cli'({ standalone = false, output = SILENT_OUTPUT })
  parser:set_name('run.lua')
  local parsed, err = parser:parse(user)
  if not parsed then
    if has_help_flag(user) then print_help(err); os.exit(0) end
    io.stderr:write(err, '\n')
    os.exit(1)
  end

  settings.verbose = parsed.verbose and true or false
  settings.quiet = parsed.output ~= SILENT_OUTPUT   -- the user picked a busted output handler

  local args = { [0] = arg[0], '-e', "require('cqtest.reporter').attach()" }
  for i = -1, -math.huge, -1 do   -- keep the interpreter entries busted may look at
    if arg[i] == nil then break end
    args[i] = arg[i]
  end
  local pattern_given, root_given = false, false
  for _, a in ipairs(user) do
    if a == '-p' or a:match('^%-%-pattern') or a:match('^%-p.') then pattern_given = true end
    if a == 'spec' then root_given = true end   -- busted's default root, given on purpose
  end
  if not pattern_given then table.insert(args, '--pattern=' .. DEFAULT_PATTERN) end
  for _, a in ipairs(user) do table.insert(args, a) end
  local roots = parsed.ROOT or {}
  if not root_given and #roots == 1 and roots[1] == 'spec' then
    table.insert(args, script_dir())   -- positional, so it goes last (after any "--")
  end
  return args
end

---------------------------------------------------------------------------

-- Takes --jobs N (or --jobs=N, -j N, -jN) out of the user's arguments; returns N (1 without it).
local function take_jobs(user)
  for i, a in ipairs(user) do
    if a == '--' then break end
    local n = a:match('^%-%-jobs=(.*)$') or a:match('^%-j(%d.*)$')
    local width = 1
    if not n and (a == '--jobs' or a == '-j') then n, width = user[i + 1], 2 end
    if n or width == 2 then
      local jobs = tonumber(n)
      if not jobs or jobs < 1 or jobs % 1 ~= 0 then
        die('--jobs must be a whole number >= 1, got ' .. (n and ("'" .. n .. "'") or 'nothing'))
      end
      for _ = 1, width do table.remove(user, i) end
      return jobs
    end
  end
  return 1
end

-- A busted option's values as a list (it gives a string or a list).
local function list(v)
  if v == nil then return {} end
  return type(v) == 'table' and v or { v }
end

-- With --jobs N > 1: the files under the roots in N workers (tests/_parallel.lua), each given the same options.
-- Not with a busted output handler or --list, whose output is busted's own.
local function run_parallel(jobs, user)
  local parser = require 'busted.modules.cli'({ standalone = false, output = SILENT_OUTPUT })
  local parsed = parser:parse(user)
  if not parsed or parsed.output ~= SILENT_OUTPUT or parsed.list or has_help_flag(user) then return end
  local opts, roots = {}, {}
  for _, a in ipairs(user) do opts[#opts + 1] = a end
  for _, root in ipairs(parsed.ROOT or {}) do
    if root ~= 'spec' then
      roots[#roots + 1] = root
      for i = #opts, 1, -1 do
        if opts[i] == root then table.remove(opts, i); break end
      end
    end
  end
  local full = #roots == 0 and #opts == 0 -- every spec file, unfiltered
  if #roots == 0 then roots = { script_dir() } end
  local patterns = {}
  for _, p in ipairs(list(parsed.pattern)) do
    if p ~= '_spec' then patterns[#patterns + 1] = p end -- busted's own default, when none was given
  end
  if #patterns == 0 then patterns = { DEFAULT_PATTERN } end
  local interpreter = 0
  while arg[interpreter - 1] do interpreter = interpreter - 1 end
  package.path = script_dir() .. '/?.lua;' .. package.path
  -- the files' times are kept from full runs only (a filtered run's would misorder the next one)
  require('_parallel').run(jobs, roots, opts, arg[interpreter], arg[0], patterns, list(parsed['exclude-pattern']),
    full)
end

local function main()
  local user = {}
  for i = 1, #arg do user[i] = arg[i] end
  local jobs = take_jobs(user)
  if jobs > 1 then run_parallel(jobs, user) end
  arg = busted_args(user)

  -- busted exits through error() when something failed; we want the summary either way
  local ok, err = pcall(function() runner({ standalone = false, output = SILENT_OUTPUT }) end)
  if not ok and err ~= nil then
    reporter.failed = reporter.failed + 1
    io.stdout:flush()
    io.stderr:write('run.lua: busted stopped: ', tostring(err), '\n')
    io.stderr:flush()
  end
  reporter:print_summary()
  os.exit(reporter.failed == 0 and 0 or 1, true) -- close the Lua state: engine objects are freed (leak checks see it)
end

main()
