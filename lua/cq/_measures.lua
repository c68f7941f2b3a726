-- Private: per-particle quantities derived from a state or a recorded frame, for colours and exports: speed |v|,
-- J = det F, the Cauchy stress (asked of the engine: world:stress) and its von Mises value, actuation, group.
local ffi = require "ffi"
local check = require "cq._check"

local M = {}

--- |v_p| of a component-major velocity array into out (double[n]).
function M.speed(v, dim, n, out)
  for p = 0, n - 1 do
    local s = 0
    for a = 0, dim - 1 do local c = v[a * n + p]; s = s + c * c end
    out[p] = math.sqrt(s)
  end
  return out
end

--- det F_p of a component-major, row-major-per-particle F array into out (double[n]).
function M.J(F, dim, n, out)
  if dim == 2 then
    for p = 0, n - 1 do out[p] = F[p] * F[3 * n + p] - F[n + p] * F[2 * n + p] end
  else
    for p = 0, n - 1 do
      local a, b, c = F[p], F[n + p], F[2 * n + p]
      local d, e, f = F[3 * n + p], F[4 * n + p], F[5 * n + p]
      local g, h, i = F[6 * n + p], F[7 * n + p], F[8 * n + p]
      out[p] = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
    end
  end
  return out
end

--- Von Mises equivalent stress of Cauchy stresses (world:stress layout) into out (double[n]): in 3D
--- sqrt(3/2 s:s) with s the deviator; in 2D the plane-stress form sqrt(s11^2 - s11 s22 + s22^2 + 3 s12^2).
function M.von_mises(sig, dim, n, out)
  if dim == 2 then
    for p = 0, n - 1 do
      local a, d, b = sig[p], sig[3 * n + p], 0.5 * (sig[n + p] + sig[2 * n + p])
      out[p] = math.sqrt(math.max(0, a * a - a * d + d * d + 3 * b * b))
    end
  else
    for p = 0, n - 1 do
      local a, e, i = sig[p], sig[4 * n + p], sig[8 * n + p]
      local b = 0.5 * (sig[n + p] + sig[3 * n + p])
      local c = 0.5 * (sig[2 * n + p] + sig[6 * n + p])
      local f = 0.5 * (sig[5 * n + p] + sig[7 * n + p])
      out[p] = math.sqrt(0.5 * ((a - e) ^ 2 + (e - i) ^ 2 + (i - a) ^ 2) + 3 * (b * b + c * c + f * f))
    end
  end
  return out
end

-- One scratch state per world for frames that are not states (trajectory frames): F is copied into it.
local scratch = setmetatable({}, { __mode = "k" })

--- The Cauchy stress (double[dim*dim*n]) of a frame { state? | F, u? }: the engine's stress at that deformation with
--- that actuation (world:stress). where names the caller in messages.
function M.stress(where, world, frame, out)
  local s = frame.state
  if not s then
    if not frame.F then
      check.raise(where .. ": the stress needs deformation gradients: record = {\"x\", \"F\"} in cq.rollout / " ..
        "cq.trajectory, or pass a state")
    end
    s = scratch[world] or world:state()
    scratch[world] = s
    local len, F, dst = world.dim * world.dim * world.n, frame.F, s.F
    if world.precision == "f64" then ffi.copy(dst, F, 8 * len) else for i = 0, len - 1 do dst[i] = F[i] end end
  end
  local u = world.n_actuators > 0 and frame.u or nil
  return world:stress(s, u, nil, out)
end

-- Buffers of n doubles reused per (world, name), so a video does not allocate per frame.
local buffers = setmetatable({}, { __mode = "k" })
local function buffer(world, name, len)
  local b = buffers[world] or {}
  buffers[world] = b
  if not b[name] then b[name] = ffi.new("double[?]", len) end
  return b[name]
end

-- Names of the per-particle parameters that can be shown as a quantity (real scalars).
local function scalar_param(world, name)
  local f = world._fields and world._fields[name]
  return f and f.type == 0 and f.shape == 0
end

--- True when name is a quantity M.values can compute for world.
function M.known(world, name)
  return name == "speed" or name == "J" or name == "von_mises" or scalar_param(world, name)
end

--- The quantity name ("speed", "J", "von_mises" or a scalar parameter such as "E") of every particle of frame
--- { x, v?, F?, u?, state? } as double[n] (a buffer reused by the next call with the same name).
function M.values(where, world, frame, name)
  local n, dim = world.n, world.dim
  local out = buffer(world, name, n)
  if name == "speed" then
    local v = frame.v or (frame.state and frame.state.v)
    if not v then
      check.raise(where .. ": speed needs velocities: record = {\"x\", \"v\"} in cq.rollout / cq.trajectory, or pass a state")
    end
    return M.speed(v, dim, n, out)
  elseif name == "J" then
    local F = frame.F or (frame.state and frame.state.F)
    if not F then
      check.raise(where .. ": J needs deformation gradients: record = {\"x\", \"F\"} in cq.rollout / cq.trajectory, " ..
        "or pass a state")
    end
    return M.J(F, dim, n, out)
  elseif name == "von_mises" then
    local sig = M.stress(where, world, frame, buffer(world, "stress", dim * dim * n))
    return M.von_mises(sig, dim, n, out)
  end
  local param = world.params[name]
  for p = 0, n - 1 do out[p] = param[p] end
  return out
end

--- Actuation of each particle's actuator in frame.u (0 for passive particles) as double[n].
function M.actuation(world, frame)
  local out, ids, u = buffer(world, "actuation", world.n), world.params.act_id, frame.u
  for p = 0, world.n - 1 do
    local a = ids[p]
    out[p] = (a >= 0 and u) and u[a + 1] or 0
  end
  return out
end

--- Group number of each particle (1-based index into groups, robot groups or lists of 1-based particle indices;
--- 0 = none) as int32_t[n].
function M.group_ids(world, groups)
  local out = ffi.new("int32_t[?]", world.n)
  for i, g in ipairs(groups or {}) do
    if g.first and g.last then for p = g.first, g.last do out[p - 1] = i end
    else for _, p in ipairs(g.particles or g) do out[p - 1] = i end end
  end
  return out
end

return M
