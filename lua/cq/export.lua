-- Particle data for ParaView and Blender: VTK XML PolyData (.vtp, raw appended binary, one file per frame plus a .pvd
-- time series) and binary PLY (one file per frame), with position, velocity, J, von Mises stress, actuation, group
-- and any scalar parameter. Every file is written under a temporary name and renamed, so none is ever truncated.
local ffi = require "ffi"
local check = require "cq._check"
local fs = require "cq._fs"
local measures = require "cq._measures"
local colors = require "cq._colors"

local M = {}
local OPTION_NAMES = { "trajectory", "state", "world", "u", "dir", "name", "path", "every", "fields", "groups" }
local VTK_OPTIONS = check.option_set("cq.export.vtk", OPTION_NAMES)
local PLY_OPTIONS = check.option_set("cq.export.ply", OPTION_NAMES)
local DEFAULT_FIELDS = { "velocity", "J", "von_mises", "actuation", "group" }

-- What each field needs from a frame, to say why a field is missing.
local NEEDS = { velocity = "v", speed = "v", J = "F", von_mises = "F" }

-- Writes text (a string or a list of strings) to path through path.tmp and a rename.
local function write_atomic(where, path, parts)
  local tmp = path .. ".tmp"
  local f, err = io.open(tmp, "wb")
  if not f then check.raise(string.format("%s: cannot write %s (%s)", where, tmp, tostring(err))) end
  local ok, werr = true, nil
  for _, s in ipairs(type(parts) == "table" and parts or { parts }) do
    ok, werr = f:write(s)
    if not ok then break end
  end
  f:close()
  if not ok then os.remove(tmp); check.raise(string.format("%s: cannot write %s (%s)", where, tmp, tostring(werr))) end
  local renamed, rerr = fs.rename_over(tmp, path)
  if not renamed then check.raise(string.format("%s: cannot rename %s to %s (%s)", where, tmp, path, tostring(rerr))) end
end

-- The options common to both formats: world, frames ({x, v?, F?, u?, k, time}), fields, groups, output names.
local function parse(where, opts, known)
  check.options(where, opts, known)
  local tr, s = opts.trajectory, opts.state
  if (tr == nil) == (s == nil) then
    check.fail(where, "give exactly one of trajectory (cq.trajectory) or state (a cq state)", nil)
  end
  local job = { where = where }
  if tr ~= nil then
    if type(tr) ~= "table" or type(tr.view) ~= "function" then check.fail(where, "trajectory must be a cq.trajectory", tr) end
    if not tr.data.x then check.raise(where .. ": the trajectory has no positions (it was recorded with record = false)") end
    if opts.path ~= nil then check.fail(where, "path is for a state; a trajectory writes dir/<name>_0000...", opts.path) end
    if opts.u ~= nil then check.fail(where, "u is for a state; a trajectory has its own actuation", "a table") end
    job.world = opts.world or tr.world
    local every = check.integer(where, "every", opts.every or 1, 1)
    if type(opts.dir) ~= "string" or opts.dir == "" then
      check.fail(where, "dir must be a directory name such as \"out/run_vtk\"", opts.dir)
    end
    job.name = opts.name or "frames"
    if type(job.name) ~= "string" or job.name == "" or job.name:find("/") then
      check.fail(where, "name must be a file name without /", job.name)
    end
    job.dir, job.frames = opts.dir, {}
    local k = 0
    while true do
      job.frames[#job.frames + 1] = { x = tr:view("x", k), v = tr.data.v and tr:view("v", k), F = tr.data.F and tr:view("F", k),
        u = tr.n_actuators > 0 and tr:u(math.min(k, tr.steps - 1)) or nil, k = k, time = tr:time(k) }
      if k == tr.steps then break end
      k = math.min(k + every, tr.steps)
    end
  else
    if type(s) ~= "table" or s.x == nil or s.F == nil then check.fail(where, "state must be a cq state", s) end
    for _, key in ipairs { "dir", "name", "every" } do
      if opts[key] ~= nil then check.fail(where, key .. " is for a trajectory; a state writes one file at path", opts[key]) end
    end
    if type(opts.path) ~= "string" or opts.path == "" then
      check.fail(where, "path must be a file name such as \"out/state.vtp\"", opts.path)
    end
    job.world, job.path = opts.world or s.world, opts.path
    if opts.u ~= nil and (type(opts.u) ~= "table" or #opts.u ~= job.world.n_actuators) then
      check.fail(where, "u must be a table of " .. job.world.n_actuators .. " actuation values", opts.u)
    end
    job.frames = { { x = s.x, v = s.v, F = s.F, state = s, u = opts.u, k = 0, time = s.time and s:time() or 0 } }
  end
  local w = job.world
  if type(w) ~= "table" or not w.dim or not w.params then check.fail(where, "world must be a cq.world", w) end
  local groups = opts.groups or w.groups
  if groups ~= nil then colors.check_groups(where, groups, w.n) end
  job.group = measures.group_ids(w, groups)
  local first, fields = job.frames[1], {}
  if opts.fields ~= nil then
    if type(opts.fields) ~= "table" then check.fail(where, "fields must be a list of field names", opts.fields) end
    for i, f in ipairs(opts.fields) do
      if not (f == "velocity" or f == "actuation" or f == "group" or measures.known(w, f)) then
        check.fail(where, "fields[" .. i .. "] must be one of velocity, speed, J, von_mises, actuation, group or a " ..
          "scalar parameter such as E", f)
      end
      local need = NEEDS[f]
      if need and not first[need] then
        check.raise(string.format("%s: field %s needs %s, which the trajectory did not record (record = {\"x\", \"%s\"} in " ..
          "cq.rollout / cq.trajectory)", where, f, need, need))
      end
      fields[#fields + 1] = f
    end
  else -- every default field the frames can give
    for _, f in ipairs(DEFAULT_FIELDS) do if not NEEDS[f] or first[NEEDS[f]] then fields[#fields + 1] = f end end
  end
  job.fields = fields
  if job.dir then
    local ok, err = fs.mkdir_p(job.dir)
    if not ok then check.raise(string.format("%s: cannot create directory %s (%s)", where, job.dir, tostring(err))) end
  else
    local dir = fs.dirname(job.path)
    local ok, err = fs.mkdir_p(dir)
    if not ok then check.raise(string.format("%s: cannot create directory %s (%s)", where, dir, tostring(err))) end
  end
  return job
end

-- The arrays of one frame: { name, comps, ctype ("double" / "int32_t"), values(i) per component-major slot }.
-- Vectors become 3 components (z = 0 in 2D), as VTK and PLY expect.
local function frame_arrays(job, frame)
  local w = job.world
  local n, dim = w.n, w.dim
  local out = {}
  local function vec3(name, src)
    local a = ffi.new("double[?]", 3 * n) -- point-major: p x, p y, p z
    for p = 0, n - 1 do for c = 0, dim - 1 do a[3 * p + c] = src[c * n + p] end end
    out[#out + 1] = { name = name, comps = 3, ctype = "double", data = a }
  end
  local function scalar(name, src, ctype)
    local a = ffi.new(ctype .. "[?]", n)
    for p = 0, n - 1 do a[p] = src[p] end
    out[#out + 1] = { name = name, comps = 1, ctype = ctype, data = a }
  end
  vec3("position", frame.x)
  for _, f in ipairs(job.fields) do
    if f == "velocity" then vec3("velocity", frame.v)
    elseif f == "actuation" then scalar("actuation", measures.actuation(w, frame), "double")
    elseif f == "group" then scalar("group", job.group, "int32_t")
    else scalar(f, measures.values(job.where, w, frame, f), "double") end
  end
  return out
end

---------------------------------------------------------------- VTK XML PolyData
local VTK_TYPE = { double = "Float64", int32_t = "Int32", int64_t = "Int64" }

-- One .vtp file: points with a vertex cell each (so ParaView shows them as they are) and the point arrays.
local function write_vtp(job, path, frame)
  local n = job.world.n
  local arrays = frame_arrays(job, frame)
  local conn, offs = ffi.new("int64_t[?]", n), ffi.new("int64_t[?]", n)
  for p = 0, n - 1 do conn[p], offs[p] = p, p + 1 end
  local xml, blobs, offset = {}, {}, 0
  local function appended(name, ctype, comps, data, count)
    local bytes = ffi.sizeof(ctype) * comps * count
    local header = ffi.new("uint64_t[1]", bytes)
    blobs[#blobs + 1] = ffi.string(header, 8)
    blobs[#blobs + 1] = ffi.string(data, bytes)
    local tag = string.format('<DataArray type="%s" Name="%s" NumberOfComponents="%d" format="appended" offset="%d"/>',
      VTK_TYPE[ctype], name, comps, offset)
    offset = offset + 8 + bytes
    return tag
  end
  local point_tags = {}
  for i = 2, #arrays do
    local a = arrays[i]
    point_tags[#point_tags + 1] = "        " .. appended(a.name, a.ctype, a.comps, a.data, n)
  end
  local points_tag = appended("Points", "double", 3, arrays[1].data, n)
  local conn_tag = appended("connectivity", "int64_t", 1, conn, n)
  local offs_tag = appended("offsets", "int64_t", 1, offs, n)
  xml[#xml + 1] = '<?xml version="1.0"?>\n'
  xml[#xml + 1] = string.format('<VTKFile type="PolyData" version="1.0" byte_order="%s" header_type="UInt64">\n',
    ffi.abi("le") and "LittleEndian" or "BigEndian")
  xml[#xml + 1] = "  <PolyData>\n"
  xml[#xml + 1] = string.format('    <Piece NumberOfPoints="%d" NumberOfVerts="%d" NumberOfLines="0" NumberOfStrips="0" ' ..
    'NumberOfPolys="0">\n', n, n)
  xml[#xml + 1] = "      <PointData>\n" .. table.concat(point_tags, "\n") .. (#point_tags > 0 and "\n" or "") ..
    "      </PointData>\n"
  xml[#xml + 1] = "      <Points>\n        " .. points_tag .. "\n      </Points>\n"
  xml[#xml + 1] = "      <Verts>\n        " .. conn_tag .. "\n        " .. offs_tag .. "\n      </Verts>\n"
  xml[#xml + 1] = "    </Piece>\n  </PolyData>\n"
  xml[#xml + 1] = '  <AppendedData encoding="raw">\n   _'
  for _, b in ipairs(blobs) do xml[#xml + 1] = b end
  xml[#xml + 1] = "\n  </AppendedData>\n</VTKFile>\n"
  write_atomic(job.where, path, xml)
end

--- cq.export.vtk{ trajectory, dir, name = "frames", every = 1 | state, path, u?; fields?, groups?, world? } ->
--- { pvd = path (trajectories), files = {paths} }. Trajectories: dir/<name>_0000.vtp ... and dir/<name>.pvd (the
--- time series ParaView opens); a state: one .vtp at path.
function M.vtk(opts)
  local job = parse("cq.export.vtk", opts, VTK_OPTIONS)
  local files = {}
  if job.path then
    write_vtp(job, job.path, job.frames[1])
    return { files = { job.path } }
  end
  local rows = {}
  for i, frame in ipairs(job.frames) do
    local file = string.format("%s_%04d.vtp", job.name, i - 1)
    write_vtp(job, job.dir .. "/" .. file, frame)
    files[#files + 1] = job.dir .. "/" .. file
    rows[#rows + 1] = string.format('    <DataSet timestep="%.17g" part="0" file="%s"/>\n', frame.time, file)
  end
  local pvd = job.dir .. "/" .. job.name .. ".pvd"
  write_atomic(job.where, pvd, '<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1">\n  <Collection>\n' ..
    table.concat(rows) .. "  </Collection>\n</VTKFile>\n")
  return { pvd = pvd, files = files }
end

---------------------------------------------------------------- PLY
local PLY_TYPE = { double = "double", int32_t = "int", uint8_t = "uchar" }

-- One binary little-endian PLY: a vertex element with x, y, z, the fields (vectors as name_x/_y/_z: vx, vy, vz for
-- velocity) and red, green, blue by group (Blender shows them as vertex colours).
local function write_ply(job, path, frame)
  local n = job.world.n
  local arrays = frame_arrays(job, frame)
  local props, header = {}, { "ply", "format binary_little_endian 1.0",
    "comment cqlua particles: " .. table.concat(job.fields, " "), "element vertex " .. n }
  local names = { position = { "x", "y", "z" }, velocity = { "vx", "vy", "vz" } }
  for _, a in ipairs(arrays) do
    for c = 1, a.comps do
      local pname = a.comps == 1 and a.name or names[a.name][c]
      props[#props + 1] = { array = a, comp = c - 1, ctype = a.ctype }
      header[#header + 1] = "property " .. PLY_TYPE[a.ctype] .. " " .. pname
    end
  end
  for _, c in ipairs { "red", "green", "blue" } do header[#header + 1] = "property uchar " .. c end
  header[#header + 1] = "end_header\n"
  local stride = 3
  for _, pr in ipairs(props) do stride = stride + ffi.sizeof(pr.ctype) end
  local buf = ffi.new("uint8_t[?]", stride * n)
  local group, palette, passive = job.group, colors.PALETTE, colors.PASSIVE
  for p = 0, n - 1 do
    local o = p * stride
    for _, pr in ipairs(props) do
      local a = pr.array
      local v = a.data[p * a.comps + pr.comp]
      if pr.ctype == "double" then ffi.cast("double*", buf + o)[0] = v; o = o + 8
      else ffi.cast("int32_t*", buf + o)[0] = v; o = o + 4 end
    end
    local g = group[p]
    local c = g > 0 and palette[(g - 1) % #palette + 1] or passive
    buf[o], buf[o + 1], buf[o + 2] = c[1], c[2], c[3]
  end
  if not ffi.abi("le") then check.raise(job.where .. ": binary PLY is written on little-endian machines only") end
  write_atomic(job.where, path, { table.concat(header, "\n"), ffi.string(buf, stride * n) })
end

--- cq.export.ply{ trajectory, dir, name = "frames", every = 1 | state, path, u?; fields?, groups?, world? } ->
--- { files = {paths} }: dir/<name>_0000.ply ... per frame, or one file at path for a state.
function M.ply(opts)
  local job = parse("cq.export.ply", opts, PLY_OPTIONS)
  if job.path then
    write_ply(job, job.path, job.frames[1])
    return { files = { job.path } }
  end
  local files = {}
  for i, frame in ipairs(job.frames) do
    local path = string.format("%s/%s_%04d.ply", job.dir, job.name, i - 1)
    write_ply(job, path, frame)
    files[#files + 1] = path
  end
  return { files = files }
end

return M
