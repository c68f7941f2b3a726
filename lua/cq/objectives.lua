-- Built-in objective terms (seed 000 sec. 4): each returns a function recorded on a cq.tape. Final terms have the
-- signature (t, state) -> scalar node; running terms (t, state, u, k) -> scalar node.
local M = {}

--- Forward progress: -mean position along axis (default 1, x) of the particles idx (nil = all).
function M.forward_progress(axis, idx)
  axis = axis or 1
  return function(t, s) return t:scale(t:index(t:centroid(s, "x", idx), axis), -1) end
end

--- Squared distance of the centroid of idx (nil = all) to a target point.
function M.distance_to_target(target, idx)
  return function(t, s)
    local c = t:centroid(s, "x", idx)
    return t:dot(t:sub(c, t:const(target)), t:sub(c, t:const(target)))
  end
end

--- Mean squared particle velocity of idx (nil = all particles).
function M.final_velocity(idx)
  return function(t, s)
    if not idx then idx = {} for p = 1, s.n do idx[p] = p end end
    local v = t:gather(s, "v", idx)
    return t:scale(t:dot(v, v), 1 / #idx)
  end
end

--- Running actuation penalty 1/2 u^T u.
function M.actuation_penalty()
  return function(t, _, u) return t:scale(t:dot(u, u), 0.5) end
end

--- Keyframe matching (eq. 18): sum over keyframe steps of ||x_p - r_p||^2 for tracked particles idx.
--- keyframes[k] (0-based control step k) = flat list of target coordinates, particle-major; steps without a
--- keyframe contribute nothing.
function M.keyframes(keyframes, idx)
  return function(t, s, _, k)
    local r = keyframes[k]
    if not r then return t:const({ 0 }) end
    local d = t:sub(t:gather(s, "x", idx), t:const(r))
    return t:dot(d, d)
  end
end

--- Weighted sum of terms: { {term, weight}, ... } -> one term with the same signature.
function M.weighted(list)
  return function(t, ...)
    local total
    for _, tw in ipairs(list) do
      local v = t:scale(tw[1](t, ...), tw[2] or 1)
      total = total and t:add(total, v) or v
    end
    return total
  end
end

return M
