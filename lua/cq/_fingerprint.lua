-- Private: what a checkpoint of the optimisation drivers (cq.train, cq.augmented_lagrangian) records of the
-- experiment it belongs to, and the comparison that keeps a run from resuming another experiment's checkpoint:
-- the parameters' names and sizes, the world's shape, the iteration budget, the script and its arguments, and the
-- script's own items (the drivers' `fingerprint` option).
local json = require "cq.json"

local M = {}

-- The text of an argument's value: numbers exactly (infinities as "inf"), the rest by tostring.
local function text(v)
  if type(v) == "number" then
    if v == math.huge then return "inf" elseif v == -math.huge then return "-inf" elseif v ~= v then return "nan" end
    return json.number_text(v)
  end
  return tostring(v)
end

-- A path as the same script is named from the same directory: without "./" and the working directory.
local function script_path(p)
  if type(p) ~= "string" then return nil end
  p = p:gsub("^%./", "")
  local ok, lfs = pcall(require, "lfs")
  local cwd = ok and lfs.currentdir() or nil
  if cwd and p:sub(1, #cwd + 1) == cwd .. "/" then p = p:sub(#cwd + 2) end
  return p
end

--- The script and its arguments: those cq.args parsed (every key with its value, defaults included: a run started
--- with iters=100 and one started without it, 100 being the default, are the same), else the host's `arg` as given.
--- Returns the script's path (or nil) and a list of "key=value" / positional texts.
function M.script()
  local A = package.loaded["cq.args"]
  local rec = type(A) == "table" and A.parsed
  if type(rec) == "table" and type(rec.spec) == "table" then
    local list = {}
    for _, s in ipairs(rec.spec) do
      local v = rec.values[s[1]]
      if v ~= nil then list[#list + 1] = s[1] .. "=" .. text(v) end
    end
    return script_path(rec.name), list
  end
  local a = rawget(_G, "arg")
  if type(a) ~= "table" then return nil, {} end
  local list = {}
  for i = 1, #a do list[i] = text(a[i]) end
  return script_path(a[0]), list
end

-- The shape of a world: what decides whether a checkpoint's parameters mean the same thing.
local function world_shape(w)
  local res = {}
  for a = 1, w.dim do res[a] = w.res[a] end
  return { dim = w.dim, n = w.n, res = res, dx = w.dx, dt = w.dt, substeps = w.substeps, n_actuators = w.n_actuators,
    precision = w.precision }
end

local function is_world(v)
  local ok, W = pcall(require, "cq.world")
  return ok and type(v) == "table" and getmetatable(v) == W.World
end

--- The fingerprint of a run. o: params (a list of cq.param), world (a cq.world or nil), budget (a table of the
--- iteration limits: {iterations = n} or {inner_max, outer_max}), more (the driver's own items, e.g. the constraints'
--- count), items (the script's `fingerprint` option: JSON-able values, worlds recorded by their shape; its key
--- `args` replaces the script's arguments: false = not compared, a list or a table key -> value). where: for errors.
function M.make(where, o)
  local check = require "cq._check"
  local fp = { version = 1, budget = o.budget, more = o.more }
  fp.params = {}
  for i, p in ipairs(o.params) do fp.params[i] = { name = p.name, n = p.n, rows = p.rows } end
  if o.world then fp.world = world_shape(o.world) end
  local items = o.items
  if items ~= nil and type(items) ~= "table" then
    check.fail(where, "fingerprint must be a table of the script's own items (name = value)", items)
  end
  local args_given
  if items then
    local copy = {}
    for k, v in pairs(items) do
      if type(k) ~= "string" then check.fail(where, "fingerprint's keys must be names (strings)", k) end
      if k == "args" then args_given = true
      else
        if is_world(v) then v = world_shape(v) end
        local ok, err = pcall(json.encode, v)
        if not ok then
          check.fail(where, "fingerprint." .. k .. " must be JSON-able (" .. tostring(err):gsub("^[^:]*:%d+: ", "") ..
            ")", v)
        end
        copy[k] = v
      end
    end
    if next(copy) then fp.items = copy end
  end
  local script, args = M.script()
  fp.script = script
  if args_given then
    local a = items.args
    if a == false then args = nil
    elseif type(a) == "table" then
      args = {}
      if #a > 0 then for i, v in ipairs(a) do args[i] = text(v) end
      else
        local keys = {}
        for k in pairs(a) do keys[#keys + 1] = tostring(k) end
        table.sort(keys)
        for _, k in ipairs(keys) do args[#args + 1] = k .. "=" .. text(a[k]) end
      end
    else
      check.fail(where, "fingerprint.args must be false (the arguments are not compared) or a table of them", a)
    end
  end
  fp.args = args or false
  return fp
end

-- An argument list as {keyed = {key = value}, positional = {...}}.
local function split_args(list)
  local keyed, positional = {}, {}
  for _, a in ipairs(list or {}) do
    local k, v = a:match("^([%a_][%w_]*)=(.*)$")
    if k then keyed[k] = v else positional[#positional + 1] = a end
  end
  return keyed, positional
end

local function q(v)
  if v == nil then return "none" end
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) == "table" then return (json.encode(v):gsub("%s*\n%s*", " ")) end
  return text(v)
end

--- The differences between a checkpoint's fingerprint (there) and this run's (here) that make it another
--- experiment: a list of texts ("particles 388 there, 845 here"). The iteration budget is not among them (a run may
--- be extended); neither is an argument that differs only as the budget does (iters=8 there, iters=12 here with 8
--- and 12 iterations).
function M.differences(there, here)
  local out = {}
  local function add(what, a, b) out[#out + 1] = string.format("%s %s there, %s here", what, q(a), q(b)) end
  local function arg_diff(what, a, b)
    out[#out + 1] = string.format("argument %s: %s there, %s here", what, a or "not given", b or "not given")
  end
  if there.script ~= here.script and there.script and here.script then add("script", there.script, here.script) end
  -- the parameters
  local pa, pb = there.params or {}, here.params or {}
  if #pa ~= #pb then
    out[#out + 1] = string.format("%d parameters there, %d here", #pa, #pb)
  else
    for i = 1, #pb do
      local a, b = pa[i], pb[i]
      local label = "parameter " .. i .. ((b.name or a.name) and (" (" .. tostring(b.name or a.name) .. ")") or "")
      if a.name ~= b.name and a.name and b.name then add("parameter " .. i .. "'s name", a.name, b.name) end
      if a.n ~= b.n then out[#out + 1] = string.format("%s: %s values there, %s here", label, text(a.n), text(b.n))
      elseif a.rows ~= b.rows then add(label .. ": rows", a.rows, b.rows) end
    end
  end
  -- the world
  local wa, wb = there.world, here.world
  if wa and wb then
    local names = { { "dim", "dimension" }, { "n", "particles" }, { "res", "grid" }, { "dx", "dx" }, { "dt", "dt" },
      { "substeps", "substeps" }, { "n_actuators", "actuators" }, { "precision", "precision" } }
    for _, e in ipairs(names) do
      local a, b = wa[e[1]], wb[e[1]]
      if e[1] == "res" then
        a, b = type(a) == "table" and table.concat(a, "x") or a, type(b) == "table" and table.concat(b, "x") or b
        if a ~= b then out[#out + 1] = string.format("grid %s there, %s here", tostring(a), tostring(b)) end
      elseif a ~= b then
        out[#out + 1] = string.format("%s %s there, %s here", e[2], q(a), q(b))
      end
    end
  elseif wa or wb then
    out[#out + 1] = string.format("a world of %s there, %s here", wa and (wa.n .. " particles") or "none",
      wb and (wb.n .. " particles") or "none")
  end
  -- the driver's own items (the constraints' count) and the script's
  for _, group in ipairs { { there.more, here.more, "" }, { there.items, here.items, "" } } do
    local a, b = group[1] or {}, group[2] or {}
    local keys, seen = {}, {}
    for k in pairs(a) do if not seen[k] then seen[k] = true keys[#keys + 1] = k end end
    for k in pairs(b) do if not seen[k] then seen[k] = true keys[#keys + 1] = k end end
    table.sort(keys)
    for _, k in ipairs(keys) do
      if (a[k] == nil and "null" or json.encode(a[k])) ~= (b[k] == nil and "null" or json.encode(b[k])) then
        add(k, a[k], b[k])
      end
    end
  end
  -- the arguments: equal but for those that follow the iteration budget
  if there.args and here.args then
    local ka, pa_ = split_args(there.args)
    local kb, pb_ = split_args(here.args)
    local ba, bb = there.budget or {}, here.budget or {}
    local function budget_only(x, y)
      for k, v in pairs(bb) do
        if ba[k] ~= nil and ba[k] ~= v and x == text(ba[k]) and y == text(v) then return true end
      end
      return false
    end
    local keys, seen = {}, {}
    for k in pairs(ka) do if not seen[k] then seen[k] = true keys[#keys + 1] = k end end
    for k in pairs(kb) do if not seen[k] then seen[k] = true keys[#keys + 1] = k end end
    table.sort(keys)
    for _, k in ipairs(keys) do
      if ka[k] ~= kb[k] and not budget_only(ka[k], kb[k]) then arg_diff(k, ka[k], kb[k]) end
    end
    for i = 1, math.max(#pa_, #pb_) do
      if pa_[i] ~= pb_[i] and not budget_only(pa_[i], pb_[i]) then arg_diff(tostring(i), pa_[i], pb_[i]) end
    end
  end
  return out
end

--- What is wrong with the shape of a fingerprint read from a file (nil when it is one M.make could have written): the
--- comparison below takes each field's type on trust.
function M.damaged(fp)
  local function is_list_of(t, ok)
    if type(t) ~= "table" then return false end
    for k, v in pairs(t) do
      if type(k) ~= "number" or k % 1 ~= 0 or k < 1 or k > #t or not ok(v) then return false end
    end
    return true
  end
  local function is_map(t)
    if type(t) ~= "table" then return false end
    for k in pairs(t) do if type(k) ~= "string" then return false end end
    return true
  end
  local function num_or_nil(v) return v == nil or type(v) == "number" end
  if fp.params ~= nil and not is_list_of(fp.params, function(p)
    return type(p) == "table" and type(p.n) == "number" and (p.name == nil or type(p.name) == "string")
      and num_or_nil(p.rows)
  end) then return "params must be a list of {name, n, rows}" end
  if fp.world ~= nil then
    local w = fp.world
    if type(w) ~= "table" or type(w.n) ~= "number" then return "world must be a table with its particle count n" end
    for _, k in ipairs { "dim", "dx", "dt", "substeps", "n_actuators" } do
      if not num_or_nil(w[k]) then return "world." .. k .. " must be a number" end
    end
    if w.res ~= nil and not is_list_of(w.res, function(v) return type(v) == "number" end) then
      return "world.res must be a list of numbers"
    end
  end
  for _, k in ipairs { "items", "more", "budget" } do
    if fp[k] ~= nil and not is_map(fp[k]) then return k .. " must be a table of named values" end
  end
  if fp.budget then
    for k, v in pairs(fp.budget) do
      if type(v) ~= "number" then return "budget." .. k .. " must be a number" end
    end
  end
  if fp.args ~= nil and fp.args ~= false and not is_list_of(fp.args, function(v) return type(v) == "string" end) then
    return "args must be false or a list of strings"
  end
  if fp.script ~= nil and type(fp.script) ~= "string" then return "script must be a string" end
  return nil
end

--- Checks a checkpoint's fingerprint against this run's: raises, naming the differences, when it belongs to another
--- experiment; warns when it has none (a checkpoint written before they were recorded), and resumes.
function M.check(where, ckpt, there, here)
  local check = require "cq._check"
  if type(there) ~= "table" then
    require("cq._warn").warn(string.format("%s: warning: %s records no fingerprint of its experiment (written " ..
      "before checkpoints did): resumed without checking that it belongs to this run", where, ckpt))
    return
  end
  local damaged = M.damaged(there)
  if damaged then
    check.raise(string.format("%s: the checkpoint %s has a damaged fingerprint (%s); resume = false starts afresh, " ..
      "or remove the file", where, ckpt, damaged))
  end
  local diffs = M.differences(there, here)
  if #diffs > 0 then
    check.raise(string.format("%s: the checkpoint %s belongs to another experiment: %s (resume = false starts " ..
      "afresh, or remove the file)", where, ckpt, table.concat(diffs, "; ")))
  end
end

--- A text of the budget's changes ("iterations 8 -> 12"; no commas: a log's note), or nil when it is the same.
function M.budget_change(there, here)
  local a, b = type(there) == "table" and there.budget or nil, here.budget
  if not a then return nil end
  local parts, keys = {}, {}
  for k in pairs(b) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    if a[k] ~= nil and a[k] ~= b[k] then parts[#parts + 1] = string.format("%s %s -> %s", k, text(a[k]), text(b[k])) end
  end
  return #parts > 0 and table.concat(parts, " and ") or nil
end

return M
