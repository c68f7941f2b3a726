-- tests/fuzz/fuzz_json.lua: the Lua half of the JSON checkpoint fuzzer (tests/fuzz/fuzz_json.c): what resuming reads,
-- on arbitrary bytes: cq.load of a cq.save file and cq.train's checkpoint (with a recovery after the first iteration
-- when the input's length is odd, so the checkpoint's snapshot is read back too). Each must succeed or raise a
-- message; a finding is a Lua runtime error ("attempt to index a nil value", "attempt to compare" ...: the loader
-- took a field on trust), an error that is not a string, a run that does not stop, or non-finite values loaded into a
-- parameter: check() returns its text and the C side aborts, so libFuzzer keeps the input. The seeds
-- (tests/fuzz/seeds.lua) are written by M.seeds with the same objects, so mutations start from files that load.
-- FUZZ_JSON_SHOW=1 build/fuzz/fuzz_json FILE prints what each loader made of FILE.
local cq = require "cq"

local M = {}

-- The objects every seed is written from and every input read into: a vector and a 2 x 2 matrix, Adam over them, a
-- keeper of the best.
local function objects()
  local a = cq.param { n = 3, init = { 0.5, -1, 2 } }
  local b = cq.param { n = 4, init = { 1, 2, 3, 4 }, rows = 2 }
  a.name, b.name = "a", "b"
  local opt = cq.adam { params = { a, b }, lr = 0.05 }
  return { a, b }, opt
end

-- A quadratic loss and its gradient; fail: the call that returns nan (a numerical failure cq.train recovers from).
-- Past `limit` calls it raises a finding: a checkpoint made the run go on (a huge negative iteration ...).
local function evaluator(params, fail, limit)
  local calls = 0
  return function()
    calls = calls + 1
    if calls > limit then error("FUZZ: cq.train evaluated " .. calls .. " times for 3 iterations", 0) end
    local loss = 0
    for _, p in ipairs(params) do
      for i = 0, p.n - 1 do
        local d = p.v[i] - 0.25 * i
        loss, p.g[i] = loss + d * d, 2 * d
      end
    end
    if calls == fail then return 0 / 0 end
    return loss
  end
end

local NOLOG = { note = function() end, iteration = function() end, close = function() end }

-- cq.train over objects() for `iterations`, checkpoint at path; extra checks what the checkpoint hands its load().
local function train(path, iterations, fail, resume)
  local params, opt = objects()
  return cq.train { optimizer = opt, iterations = iterations, evaluate = evaluator(params, fail, 4 * iterations + 20),
    checkpoint = path, resume = resume, log = NOLOG, quiet = true, keep_best = true,
    fingerprint = { args = { iters = iterations, scene = "fuzz" }, scene = "fuzz" },
    extra = { save = function() return { seed = 7 } end, load = function(t)
      if type(t) ~= "table" then error("FUZZ: extra.load was given a " .. type(t) .. ", not a table", 0) end
    end } }
end

-- The text of a finding in the outcome of a pcall, or nil. A Lua runtime error (or a library function's) is at the
-- start of the message or right after a Lua position ("./lua/cq/train.lua:216: attempt to index ...", also inside a
-- message that wraps it): the checkpoint's own strings, which messages quote, cannot pass for one (the fuzzer learns
-- these texts from the comparisons below and writes them into its inputs).
local RUNTIME = { "attempt to %a+", "bad argument #", "table index is", "invalid key to 'next'", "'for' %a+ ",
  "number has no integer representation", "cannot convert", "stack overflow", "invalid value %(at index",
  "invalid order function", "chain too long" }
local SHOW = os.getenv("FUZZ_JSON_SHOW") -- set: every outcome on stderr (replaying an input)
local function finding(what, ok, err)
  if SHOW then io.stderr:write(what, ": ", ok and "loaded" or tostring(err), "\n") end
  if ok then return nil end
  if type(err) ~= "string" then return what .. " raised a " .. type(err) .. " (" .. tostring(err) .. "), not a message" end
  if err:find("^FUZZ: ") then return what .. ": " .. err:sub(7) end -- (the checks' own, passed through as raised)
  for _, p in ipairs(RUNTIME) do
    if err:find("^" .. p) or err:find("%.lua:%d+: " .. p) then return what .. " raised a Lua error, not a message: " .. err end
  end
  return nil
end

local function finite_params(what, params)
  for k, p in ipairs(params) do
    for i = 0, p.n - 1 do
      local x = p.v[i]
      if x ~= x or x == math.huge or x == -math.huge then
        return string.format("%s loaded %s into parameter %d value %d", what, tostring(x), k, i + 1)
      end
    end
  end
end

local function write(path, bytes)
  local f = assert(io.open(path, "wb"))
  f:write(bytes)
  f:close()
end

--- The finding of one input (nil when the loaders behaved), dir: a directory of the fuzzer's own.
function M.check(bytes, dir)
  local path = dir .. "/save.json"
  write(path, bytes)
  local params, opt = objects()
  local keeper = cq.keep_best { params = params }
  local ok, err = pcall(cq.load, path, { params = params, optimizer = opt, best = keeper })
  local f = finding("cq.load", ok, err) or (ok and finite_params("cq.load", params))
  if f then return f end
  path = dir .. "/train.ckpt.json"
  write(path, bytes)
  local res
  ok, res = pcall(train, path, 3, #bytes % 2 == 1 and 1 or nil, true)
  f = finding("cq.train", ok, res)
  if f then return f end
  os.remove(path)
  return nil
end

--- Writes the seeds into dir: cq.save files of the objects (with and without extra, a keeper that has seen losses)
--- and cq.train checkpoints: unfinished (after 1 and 2 of 3 iterations, one after a recovery) and finished.
function M.seeds(dir)
  local params, opt = objects()
  local keeper = cq.keep_best { params = params }
  cq.save(dir .. "/save.json", { params = params, optimizer = opt, best = keeper })
  keeper:consider(3.5)
  cq.save(dir .. "/save_extra.json", { params = params, optimizer = opt, best = keeper }, { iteration = 4, note = "x" })
  train(dir .. "/train1.ckpt.json", 1, nil, false)
  train(dir .. "/train2.ckpt.json", 2, nil, false)
  train(dir .. "/train_recovered.ckpt.json", 2, 2, false)
  -- a run of 3 stopped after 1: its checkpoint is unfinished (the same budget, so the fingerprints agree)
  local p2, opt2 = objects()
  local n = 0
  pcall(cq.train, { optimizer = opt2, iterations = 3, evaluate = function()
    n = n + 1
    if n == 2 then error("stopped", 0) end
    return evaluator(p2, nil, 10)()
  end, checkpoint = dir .. "/train_unfinished.ckpt.json", resume = false, log = NOLOG, quiet = true, keep_best = true,
    fingerprint = { args = { iters = 3, scene = "fuzz" }, scene = "fuzz" },
    extra = { save = function() return { seed = 7 } end, load = function() end } })
  train(dir .. "/train_finished.ckpt.json", 3, nil, false)
end

--- Writes the seeds into dir and checks each (every module the checks need is loaded once, before the fuzzing).
function M.warm(dir)
  M.seeds(dir)
  for _, name in ipairs { "save.json", "save_extra.json", "train1.ckpt.json", "train2.ckpt.json",
    "train_recovered.ckpt.json", "train_unfinished.ckpt.json", "train_finished.ckpt.json" } do
    local f = assert(io.open(dir .. "/" .. name, "rb"))
    local bytes = f:read("*a")
    f:close()
    os.remove(dir .. "/" .. name)
    for _, b in ipairs { bytes, bytes .. " " } do -- (even and odd lengths: with and without a recovery)
      local problem = M.check(b, dir)
      if problem then error(name .. ": " .. problem, 0) end
    end
  end
  M.check("{}", dir)
end

return M
