-- Recorded trajectories (the queryable "memo" of seed 000 sec. 4): particle positions / velocities (and deformation
-- gradients, for stress pictures and exports) at every control step, the actuation u_k and running loss h_k of each
-- step, and the loss; export to CSV / JSON files.
-- cq.rollout records one per forward (run:trajectory()); cq.trajectory{} records by hand around memo:step.
local ffi = require "ffi"
local check = require "cq._check"
local fs = require "cq._fs"

local M = {}
local OPTIONS = check.option_set("cq.trajectory", { "world", "steps", "record", "running" })
local Trajectory = {}
Trajectory.__index = Trajectory
M.Trajectory = Trajectory

-- The state fields a trajectory can keep: positions and velocities (dim per particle) and the deformation gradient
-- (dim x dim per particle: J and stresses of recorded frames).
local RECORDABLE = { x = true, v = true, F = true }

--- Parses a record option: false (nothing), true ({"x", "v"}), nil (default {"x"}) or a list drawn from "x", "v", "F".
function M.record_fields(where, record)
  if record == nil then return { "x" } end
  if record == false then return {} end
  if record == true then return { "x", "v" } end
  if type(record) ~= "table" then check.fail(where, "record must be false, true or a list of \"x\", \"v\", \"F\"", record, 3) end
  local out, seen = {}, {}
  for i, f in ipairs(record) do
    if not RECORDABLE[f] then check.fail(where, "record[" .. i .. "] must be one of x, v, F", f, 3) end
    if not seen[f] then out[#out + 1], seen[f] = f, true end
  end
  return out
end

--- cq.trajectory{ world, steps, record = {"x"} (default) | true (x and v) | false | a list of "x", "v", "F", running? }
--- Buffers (double) for control steps 0..steps: dim * n values per recorded x or v and step (dim * dim * n for F),
--- steps * n_actuators actuations, and steps running-loss values when running = true. Memory: 8 * dim * n *
--- (steps + 1) bytes per vector field, dim times that for F.
function M.new(opts)
  local where = "cq.trajectory"
  check.options(where, opts, OPTIONS)
  local w = opts.world
  if type(w) ~= "table" or not w.dim or not w.n then check.fail(where, "world must be a cq.world", w) end
  local steps = check.integer(where, "steps", opts.steps, 1)
  local self = setmetatable({ world = w, steps = steps, n = w.n, dim = w.dim, n_actuators = w.n_actuators,
    dt = w.dt, t0 = 0, record = M.record_fields(where, opts.record), data = {}, len = {} }, Trajectory)
  for _, f in ipairs(self.record) do
    self.len[f] = (f == "F" and w.dim or 1) * w.dim * w.n -- values per control step
    self.data[f] = check.alloc(where, "steps", "double[?]", (steps + 1) * self.len[f])
  end
  self.act = check.alloc(where, "steps", "double[?]", math.max(1, steps * w.n_actuators))
  if opts.running then self.h = check.alloc(where, "steps", "double[?]", steps) end
  return self
end

function Trajectory:__tostring()
  return string.format("cq.trajectory: %d control steps, %d particles, fields {%s}%s", self.steps, self.n,
    table.concat(self.record, ", "), self.loss and string.format(", loss %.6g", self.loss) or "")
end

local function check_step(self, where, k, last)
  if type(k) ~= "number" or k ~= math.floor(k) or k < 0 or k > last then
    check.fail("trajectory:" .. where, "k must be a control step in [0, " .. last .. "]", k, 3)
  end
end

--- Copies the recorded fields of state s as control step k (0..steps); the time of step 0 sets t0.
function Trajectory:record_state(k, s)
  check_step(self, "record_state", k, self.steps)
  if type(s) ~= "table" or s.n ~= self.n or s.dim ~= self.dim or s.x == nil then
    check.fail("trajectory:record_state", string.format("s must be a cq state of %d particles in %dD", self.n, self.dim),
      type(s) == "table" and s.n and string.format("a state of %s particles", tostring(s.n)) or s)
  end
  local engine = s._handle ~= nil
  if engine then require("cq.state").check_arg("trajectory:record_state", "s", s, self.world) end
  if k == 0 and s.time then self.t0 = s:time() end
  for f, buf in pairs(self.data) do
    local len = self.len[f]
    local src, dst = s[f], buf + k * len
    if src == nil then check.fail("trajectory:record_state", "s has no field " .. f .. " to record", s) end
    if engine then -- read by the engine where the state is (on the GPU: no migration of its pages to the host)
      local w = self.world
      w:_check(w._lib.cq_state_read(w:_handle("trajectory:record_state"), s._h, f, dst), "trajectory:record_state")
    elseif self.world.precision == "f64" then ffi.copy(dst, src, 8 * len)
    else for i = 0, len - 1 do dst[i] = src[i] end end
  end
end

--- Records the actuation of control step k (0..steps-1): a double array or a Lua table of n_actuators values.
function Trajectory:record_action(k, u)
  check_step(self, "record_action", k, self.steps - 1)
  local na, dst = self.n_actuators, self.act + k * self.n_actuators
  if type(u) == "table" then
    if #u ~= na then check.fail("trajectory:record_action", "u must have " .. na .. " values", "a table of " .. #u) end
  elseif na > 0 then
    if u == nil then check.fail("trajectory:record_action", "u must be a table or a double array of " .. na .. " values", u) end
    check.doubles("trajectory:record_action", "u", u, na)
  end
  if type(u) == "table" then for i = 1, na do dst[i - 1] = u[i] end
  elseif na > 0 then ffi.copy(dst, u, 8 * na) end
end

--- Records the running loss h_k of control step k (0..steps-1).
function Trajectory:record_running(k, h)
  check_step(self, "record_running", k, self.steps - 1)
  check.number("trajectory:record_running", "h", h, nil, nil, { inf = true })
  if not self.h then self.h = ffi.new("double[?]", self.steps) end
  self.h[k] = h
end

-- The buffer of a recorded field, or a clear error naming the record option.
function Trajectory:_field(field, where)
  local buf = self.data[field]
  if not buf then
    if not RECORDABLE[field] then check.fail("trajectory:" .. where, "field must be x, v or F", field, 3) end
    check.raise(string.format("trajectory:%s: field %q was not recorded (record = {%s}; pass record = {\"x\", \"v\"%s} to " ..
      "cq.rollout to keep it)", where, field, table.concat(self.record, ", "), field == "F" and ', "F"' or ""))
  end
  return buf
end

--- FFI view (no copy) of field ("x", "v" or "F") at control step k: dim * n doubles (dim * dim * n for F),
--- component-major (all x, then all y; F entry (i, j) of particle p at ((i-1) * dim + j-1) * n + p-1).
function Trajectory:view(field, k)
  local buf = self:_field(field, "view")
  check_step(self, "view", k, self.steps)
  return buf + k * self.len[field]
end

local function points(self, field, k, p)
  local buf = self:_field(field, field)
  check_step(self, field, k, self.steps)
  local n, dim, base = self.n, self.dim, k * self.dim * self.n
  if p then
    check.integer("trajectory:" .. field, "p", p, 1, n)
    local out = {}
    for a = 1, dim do out[a] = buf[base + (a - 1) * n + p - 1] end
    return out
  end
  local out = {}
  for q = 1, n do
    local pt = {}
    for a = 1, dim do pt[a] = buf[base + (a - 1) * n + q - 1] end
    out[q] = pt
  end
  return out
end

--- Particle positions at control step k (0..steps): a list of n points {x, y[, z]}, or one point for particle p.
function Trajectory:x(k, p) return points(self, "x", k, p) end
--- Particle velocities at control step k (needs record = {"x", "v"} or true).
function Trajectory:v(k, p) return points(self, "v", k, p) end

--- Actuation vector u_k of control step k (0..steps-1) as a Lua table of n_actuators values.
function Trajectory:u(k)
  check_step(self, "u", k, self.steps - 1)
  local out = {}
  for i = 1, self.n_actuators do out[i] = self.act[k * self.n_actuators + i - 1] end
  return out
end

--- Running loss h_k of control step k (0..steps-1), or nil when the rollout has no running loss.
function Trajectory:running(k)
  check_step(self, "running", k, self.steps - 1)
  return self.h and self.h[k] or nil
end

--- Time of control step k (seconds).
function Trajectory:time(k)
  if type(k) ~= "number" then check.fail("trajectory:time", "k must be a number (a control step)", k) end
  return self.t0 + k * self.dt
end

--- Centroid of the positions (field "x", or "v") at control step k over particles idx (1-based list; nil = all).
function Trajectory:centroid(k, idx, field)
  if field ~= nil and field ~= "x" and field ~= "v" then check.fail("trajectory:centroid", "field must be x or v", field) end
  local buf = self:_field(field or "x", "centroid")
  check_step(self, "centroid", k, self.steps)
  local n, base, out = self.n, k * self.dim * self.n, {}
  if idx ~= nil then
    if type(idx) ~= "table" or #idx == 0 then
      check.fail("trajectory:centroid", "idx must be nil (all) or a non-empty list of particle indices", idx)
    end
    for i, p in ipairs(idx) do check.integer("trajectory:centroid", "idx[" .. i .. "]", p, 1, n) end
  end
  for a = 0, self.dim - 1 do
    local s = 0
    if idx then for _, p in ipairs(idx) do s = s + buf[base + a * n + p - 1] end
    else for p = 0, n - 1 do s = s + buf[base + a * n + p] end end
    out[a + 1] = s / (idx and #idx or n)
  end
  return out
end

--- Centroids at every control step: list[k + 1] = centroid at step k, k = 0..steps.
function Trajectory:centroids(idx, field)
  local out = {}
  for k = 0, self.steps do out[k + 1] = self:centroid(k, idx, field) end
  return out
end

local function fmt(v) return string.format("%.17g", v) end

-- Files are written under a temporary name and renamed when complete (close), so an interrupted export never
-- leaves a file cut mid-row: each path holds the previous complete file or the new one.
local function open(path, where)
  local f, err = io.open(path .. ".part", "w")
  if not f then check.raise(string.format("%s: cannot write %s (%s)", where, path, tostring(err))) end
  return f
end
local function close(f, path, where)
  local ok, err = f:close()
  if ok then ok, err = os.rename(path .. ".part", path) end
  if not ok then check.raise(string.format("%s: cannot write %s (%s)", where, path, tostring(err))) end
end

--- Writes the trajectory as files named prefix .. suffix (missing directories are created) and returns their
--- paths. Every number is printed with 17 significant digits, so the files read back to the same doubles.
---   <prefix>_actuation.csv  header k,time,u1..uM[,running]; one row per control step k = 0..steps-1
---   <prefix>_x.csv          header k,time,x1,y1[,z1],x2,...; one row per control step k = 0..steps (positions
---                           of particle p in columns 3 + dim*(p-1) ...); <prefix>_v.csv likewise (vx1,vy1,...),
---                           <prefix>_F.csv row-major per particle (F11_1,F12_1,...)
---   <prefix>_meta.json      steps, n, dim, dt, n_actuators, loss, final, accumulate, argbest, fields, files
--- numpy: a = np.loadtxt(prefix + "_x.csv", delimiter=",", skiprows=1); x = a[:, 2:].reshape(len(a), n, dim)
--- pandas: pd.read_csv(prefix + "_actuation.csv")
function Trajectory:export(prefix)
  local where = "trajectory:export"
  if type(prefix) ~= "string" or prefix == "" or prefix:sub(-1) == "/" then
    check.fail(where, "prefix must be a path prefix such as \"out/biped2d\"", prefix)
  end
  local dir = fs.dirname(prefix)
  local ok, err = fs.mkdir_p(dir)
  if not ok then check.raise(string.format("%s: cannot create directory %s (%s)", where, dir, tostring(err))) end
  local written, files = {}, {}
  local na, n, dim = self.n_actuators, self.n, self.dim

  local path = prefix .. "_actuation.csv"
  local f = open(path, where)
  local head = { "k", "time" }
  for i = 1, na do head[#head + 1] = "u" .. i end
  if self.h then head[#head + 1] = "running" end
  f:write(table.concat(head, ","), "\n")
  for k = 0, self.steps - 1 do
    local row = { tostring(k), fmt(self:time(k)) }
    for i = 0, na - 1 do row[#row + 1] = fmt(self.act[k * na + i]) end
    if self.h then row[#row + 1] = fmt(self.h[k]) end
    f:write(table.concat(row, ","), "\n")
  end
  close(f, path, where)
  written[#written + 1], files.actuation = path, path

  local axes = { "x", "y", "z" }
  for _, field in ipairs(self.record) do
    path = prefix .. "_" .. field .. ".csv"
    f = open(path, where)
    head = { "k", "time" }
    local comps = self.len[field] / n -- values per particle: dim, or dim * dim for F
    for p = 1, n do
      for c = 1, comps do
        head[#head + 1] = field == "F" and string.format("F%d%d_%d", math.floor((c - 1) / dim) + 1, (c - 1) % dim + 1, p)
          or (field == "v" and "v" or "") .. axes[c] .. p
      end
    end
    f:write(table.concat(head, ","), "\n")
    local buf = self.data[field]
    for k = 0, self.steps do
      local row, base = { tostring(k), fmt(self:time(k)) }, k * self.len[field]
      for p = 0, n - 1 do for c = 0, comps - 1 do row[#row + 1] = fmt(buf[base + c * n + p]) end end
      f:write(table.concat(row, ","), "\n")
    end
    close(f, path, where)
    written[#written + 1], files[field] = path, path
  end

  path = prefix .. "_meta.json"
  f = open(path, where)
  local function num(v) return v == nil and "null" or (v ~= v or v == math.huge or v == -math.huge) and "null" or fmt(v) end
  local flist, fnames = {}, {}
  for name in pairs(files) do fnames[#fnames + 1] = name end
  table.sort(fnames)
  for _, name in ipairs(fnames) do flist[#flist + 1] = string.format("%q: %q", name, files[name]) end
  local quoted = {}
  for i, fld in ipairs(self.record) do quoted[i] = string.format("%q", fld) end
  f:write("{", table.concat({
    '"steps": ' .. self.steps, '"n": ' .. n, '"dim": ' .. dim, '"n_actuators": ' .. na, '"dt": ' .. fmt(self.dt),
    '"t0": ' .. fmt(self.t0), '"loss": ' .. num(self.loss), '"final": ' .. num(self.final),
    '"accumulate": ' .. (self.accumulate and string.format("%q", self.accumulate) or "null"),
    '"argbest": ' .. (self.argbest and tostring(self.argbest) or "null"),
    '"fields": [' .. table.concat(quoted, ", ") .. "]", '"files": {' .. table.concat(flist, ", ") .. "}" }, ", "),
    "}\n")
  close(f, path, where)
  written[#written + 1] = path
  return written
end

return M
