-- Built-in objective terms (seed 000 sec. 4): each returns a function recorded on a cq.tape. Final terms have the
-- signature (t, state) -> scalar node; running terms (t, state, u, k) -> scalar node.
local check = require "cq._check"

local M = {}

-- idx: nil (all particles) or a non-empty list of particle indices (their range is checked against the state
-- when the term runs, by t:centroid / t:gather).
local function check_idx(where, idx)
  if idx == nil then return end
  if type(idx) ~= "table" or #idx == 0 then
    check.fail(where, "idx must be nil (all particles) or a non-empty list of particle indices", idx, 3)
  end
  for i, p in ipairs(idx) do check.integer(where, "idx[" .. i .. "]", p, 1) end
end

-- idx against the particles of the state a term runs on (once per list and particle count, as cq.tape's leaves):
-- the error names the objective, not the tape op inside it.
local checked_n = setmetatable({}, { __mode = "k" })
local function check_idx_n(where, idx, s)
  if idx == nil or type(s) ~= "table" or type(s.n) ~= "number" or checked_n[idx] == s.n then return end
  for i, p in ipairs(idx) do
    if p > s.n then
      check.fail(where, string.format("idx[%d] must be a particle index in [1, %d] (the world's particles)", i, s.n), p)
    end
  end
  checked_n[idx] = s.n
end

-- The last control step a running term's keyframes reach, by term (weak keys): cq.rollout warns of keyframes past
-- its steps.
local last_keyframe = setmetatable({}, { __mode = "k" })
--- The last control step of the keyframes a term made by keyframes (or weighted over such terms) matches, or nil.
function M.last_step(term) return term and last_keyframe[term] end

--- Forward progress: -mean position along axis (default 1, x) of the particles idx (nil = all).
function M.forward_progress(axis, idx)
  axis = check.integer("cq.objectives.forward_progress", "axis", axis or 1, 1, 3)
  check_idx("cq.objectives.forward_progress", idx)
  return function(t, s)
    if axis > s.dim then check.fail("cq.objectives.forward_progress", "axis must be in [1, " .. s.dim .. "] (the world's dim)", axis) end
    check_idx_n("cq.objectives.forward_progress", idx, s)
    return t:scale(t:index(t:centroid(s, "x", idx), axis), -1)
  end
end

--- Squared distance of the centroid of idx (nil = all) to a target point.
function M.distance_to_target(target, idx)
  local where = "cq.objectives.distance_to_target"
  if type(target) ~= "table" or (#target ~= 2 and #target ~= 3) then
    check.fail(where, "target must be a point {x, y} or {x, y, z}", type(target) == "table" and ("a table of " .. #target) or target)
  end
  check.vector(where, "target", target, #target)
  check_idx(where, idx)
  return function(t, s)
    if type(s) == "table" and s.dim ~= nil and #target ~= s.dim then
      check.fail(where, "target must have " .. tostring(s.dim) .. " coordinates (the world's dim)", target)
    end
    check_idx_n(where, idx, s)
    local c = t:centroid(s, "x", idx)
    return t:dot(t:sub(c, t:const(target)), t:sub(c, t:const(target)))
  end
end

--- Mean squared particle velocity of idx (nil = all particles).
function M.final_velocity(idx)
  check_idx("cq.objectives.final_velocity", idx)
  return function(t, s)
    check_idx_n("cq.objectives.final_velocity", idx, s)
    if not idx then idx = {} for p = 1, s.n do idx[p] = p end end
    local v = t:gather(s, "v", idx)
    return t:scale(t:dot(v, v), 1 / #idx)
  end
end

--- Running actuation penalty 1/2 u^T u.
function M.actuation_penalty()
  return function(t, _, u)
    if u == nil then
      check.fail("cq.objectives.actuation_penalty", "u (the actuation) must be a tape node: this is a running term " ..
        "(t, state, u, k), given u as the running loss of a rollout with a controller (not as final)", u)
    end
    return t:scale(t:dot(u, u), 0.5)
  end
end

--- Keyframe matching (eq. 18): sum over keyframe steps of ||x_p - r_p||^2 for tracked particles idx.
--- keyframes[k] (0-based control step k) = flat list of target coordinates, particle-major; steps without a
--- keyframe contribute nothing.
function M.keyframes(keyframes, idx)
  local where = "cq.objectives.keyframes"
  if type(keyframes) ~= "table" then
    check.fail(where, "keyframes must be a table {[k] = {x1, y1, x2, y2, ...}} (0-based control steps)", keyframes)
  end
  if idx == nil then check.fail(where, "idx (the tracked particles) is required", idx) end
  check_idx(where, idx)
  local last
  for k, r in pairs(keyframes) do
    if type(k) ~= "number" or k < 0 or k % 1 ~= 0 then check.fail(where, "keyframes keys must be control steps >= 0", k) end
    if type(r) ~= "table" or #r % #idx ~= 0 or #r == 0 then
      check.fail(where, string.format("keyframes[%d] must be a flat list of dim * %d target coordinates", k, #idx),
        type(r) == "table" and ("a table of " .. #r) or r)
    end
    for i = 1, #r do check.number(where, string.format("keyframes[%d][%d]", k, i), r[i]) end
    last = math.max(last or k, k)
  end
  local f = function(t, s, _, k)
    local r = keyframes[k]
    if not r then return t:const({ 0 }) end
    if type(s) == "table" and s.dim ~= nil and #r ~= s.dim * #idx then
      check.fail(where, string.format("keyframes[%d] must have dim * %d = %d coordinates (dim = %d: the world's)", k,
        #idx, s.dim * #idx, s.dim), r)
    end
    check_idx_n(where, idx, s)
    local d = t:sub(t:gather(s, "x", idx), t:const(r))
    return t:dot(d, d)
  end
  last_keyframe[f] = last
  return f
end

--- Weighted sum of terms: { {term, weight}, ... } -> one term with the same signature.
function M.weighted(list)
  local where = "cq.objectives.weighted"
  if type(list) ~= "table" or #list == 0 then check.fail(where, "list must be a non-empty list of {term, weight}", list) end
  for i, tw in ipairs(list) do
    if type(tw) ~= "table" or type(tw[1]) ~= "function" then
      check.fail(where, "list[" .. i .. "] must be {term (a function), weight (a number, default 1)}", tw)
    end
    if tw[2] ~= nil then check.number(where, "list[" .. i .. "][2] (weight)", tw[2]) end
  end
  local last
  for _, tw in ipairs(list) do
    local l = last_keyframe[tw[1]]
    if l then last = math.max(last or l, l) end
  end
  local f = function(t, ...)
    local total
    for _, tw in ipairs(list) do
      local v = t:scale(tw[1](t, ...), tw[2] or 1)
      total = total and t:add(total, v) or v
    end
    return total
  end
  last_keyframe[f] = last
  return f
end

return M
