-- cq.export: .vtp/.pvd and binary .ply files read back by independent readers (VTK's own XML reader and Python's
-- meshio) give the positions, velocities, J, von Mises stresses, actuations and groups of the trajectory; files are
-- written under a temporary name and renamed, so a failed write leaves the old file whole.
local ffi = require "ffi"
local cq = require "cq"
local shell = require "tests._shell"
local sh, tmpdir = shell.sh, shell.tmpdir
local measures = require "cq._measures"

-- A Python command that can import module, installing it into the user site with pip when no interpreter has it
-- (nil and the reason when nothing works).
local found = {}
local function python_with(module, pip_name)
  if found[module] ~= nil then return found[module] or nil, found[module .. "_why"] end
  -- Debian's python3 without the user site first: its numpy matches its meshio
  local candidates = { "/usr/bin/python3 -s", "python3", "python3 -s" }
  for _, py in ipairs(candidates) do
    local _, rc = sh(py .. " -c 'import " .. module .. "'")
    if rc == 0 then found[module] = py; return py end
  end
  print(string.format("  %s is not importable: installing it with pip --user (once)", module))
  local out, rc = sh("python3 -m pip install -q --user " .. pip_name .. " || python3 -m pip install -q --user " ..
    "--break-system-packages " .. pip_name)
  if rc == 0 and select(2, sh("python3 -c 'import " .. module .. "'")) == 0 then found[module] = "python3"; return "python3" end
  found[module], found[module .. "_why"] = false, "cannot import or install " .. module .. ": " .. out:sub(-300)
  return nil, found[module .. "_why"]
end

-- Runs a Python script (text) with args; returns its output lines split into words.
local function run_python(py, script, args)
  local path = os.tmpname() .. ".py"
  local f = assert(io.open(path, "w"))
  f:write(script)
  f:close()
  local out, rc = sh(py .. " " .. path .. " " .. table.concat(args, " "))
  os.remove(path)
  assert.are.equal(0, rc, out)
  local rows = {}
  for line in out:gmatch("[^\n]+") do
    local words = {}
    for w in line:gmatch("%S+") do words[#words + 1] = w end
    rows[#rows + 1] = words
  end
  return rows
end

local VTK_READER = [[
import os, sys, xml.etree.ElementTree as ET
from vtkmodules.vtkIOXML import vtkXMLPolyDataReader
pvd = sys.argv[1]
for ds in ET.parse(pvd).getroot().iter("DataSet"):
    r = vtkXMLPolyDataReader()
    r.SetFileName(os.path.join(os.path.dirname(pvd), ds.get("file")))
    r.Update()
    o = r.GetOutput()
    print("frame", ds.get("file"), repr(float(ds.get("timestep"))), o.GetNumberOfPoints(), o.GetNumberOfVerts())
    for i in range(o.GetNumberOfPoints()):
        print("position", i, *map(repr, o.GetPoint(i)))
    pd = o.GetPointData()
    for k in range(pd.GetNumberOfArrays()):
        a = pd.GetArray(k)
        for i in range(a.GetNumberOfTuples()):
            print(a.GetName(), i, *map(repr, a.GetTuple(i)))
]]

local MESHIO_READER = [[
import sys, meshio
for path in sys.argv[1:]:
    m = meshio.read(path)
    print("frame", path, len(m.points))
    for i, p in enumerate(m.points):
        print("position", i, *[repr(float(c)) for c in p])
    for name, values in m.point_data.items():
        for i, v in enumerate(values):
            print(name, i, repr(float(v)))
]]

-- Two 3x3x3 boxes (group 1 actuated), 4 recorded steps with u = 0.7.
local function scene()
  local robot = cq.robot { dim = 3 }
  local mat = { model = "corotated", E = 30, nu = 0.3, density = 1 }
  local a = robot:box { offset = { 0.2, 0.13, 0.2 }, size = { 0.06, 0.06, 0.06 }, count = { 3, 3, 3 }, material = mat }
  robot:box { offset = { 0.3, 0.13, 0.2 }, size = { 0.06, 0.06, 0.06 }, count = { 3, 3, 3 }, material = mat }
  robot:pressure_actuator { groups = { a }, axis = 2, max = 3 }
  local world, s0 = robot:world { res = { 24, 16, 24 }, dx = 1 / 24, dt = 0.01, substeps = 10, gravity = { 0, -3.8, 0 },
    walls = { all = { type = "friction", friction = math.huge } } }
  local run = cq.rollout { world = world, steps = 4, controller = cq.open_loop { steps = 4, outputs = 1, init = 0.7 },
    final = cq.objectives.forward_progress(1), record = { "x", "v", "F" } }
  run:forward(s0)
  return world, run:trajectory(), a
end

-- Expected values of step k: position/velocity per particle (3 each), J, von Mises, actuation, group.
local function expected(world, tr, a, k)
  local n = world.n
  local frame = { F = tr:view("F", k), u = tr:u(math.min(k, tr.steps - 1)) }
  local J = measures.J(frame.F, 3, n, ffi.new("double[?]", n))
  local vm = measures.von_mises(measures.stress("test", world, frame), 3, n, ffi.new("double[?]", n))
  local e = { position = {}, velocity = {}, J = {}, von_mises = {}, actuation = {}, group = {} }
  for p = 1, n do
    e.position[p], e.velocity[p] = tr:x(k, p), tr:v(k, p)
    e.J[p], e.von_mises[p] = J[p - 1], vm[p - 1]
    local in_a = p >= a.first and p <= a.last
    e.actuation[p], e.group[p] = in_a and frame.u[1] or 0, in_a and 1 or 2
  end
  return e
end

describe("cq.export", function()
  it("writes .vtp frames and a .pvd series that VTK's XML reader reads back to the trajectory's values", function()
    local py, why = python_with("vtkmodules.vtkIOXML", "vtk")
    if not py then pending("skipped: no VTK for Python (" .. why .. ")") return end
    local world, tr, a = scene()
    local dir = tmpdir()
    local r = cq.export.vtk { trajectory = tr, dir = dir, every = 2 }
    assert.are.equal(dir .. "/frames.pvd", r.pvd)
    assert.are.equal(3, #r.files) -- k = 0, 2, 4
    local rows = run_python(py, VTK_READER, { r.pvd })
    local steps, frames, worst = { 0, 2, 4 }, {}, 0
    local current
    for _, w in ipairs(rows) do
      if w[1] == "frame" then
        current = { file = w[2], time = tonumber(w[3]), n = tonumber(w[4]), verts = tonumber(w[5]), values = {} }
        frames[#frames + 1] = current
      else
        current.values[w[1]] = current.values[w[1]] or {}
        local vals = {}
        for i = 3, #w do vals[#vals + 1] = tonumber(w[i]) end
        current.values[w[1]][tonumber(w[2]) + 1] = vals
      end
    end
    assert.are.equal(3, #frames)
    for i, fr in ipairs(frames) do
      local k = steps[i]
      assert.are.equal(string.format("frames_%04d.vtp", i - 1), fr.file)
      assert.are.equal(tr:time(k), fr.time)
      assert.are.same({ world.n, world.n }, { fr.n, fr.verts })
      local e = expected(world, tr, a, k)
      for name, list in pairs(e) do
        assert.is_not_nil(fr.values[name], name)
        for p = 1, world.n do
          local got, want = fr.values[name][p], type(list[p]) == "table" and list[p] or { list[p] }
          for c = 1, #want do worst = math.max(worst, math.abs(got[c] - want[c])) end
        end
      end
    end
    print(string.format("  VTK reader vs trajectory: max |difference| = %.1e over %d frames x %d particles x 6 fields",
      worst, #frames, world.n))
    assert.are.equal(0, worst) -- Float64 and Int32 arrays: the same numbers
    local leftovers = sh("ls " .. dir .. " | grep -c tmp")
    assert.are.equal("0", leftovers:match("%d+"))
    sh("rm -rf " .. dir)
  end)

  it("writes binary .ply frames that meshio reads back to the same values", function()
    local py, why = python_with("meshio", "meshio")
    if not py then pending("skipped: no meshio for Python (" .. why .. ")") return end
    local world, tr, a = scene()
    local dir = tmpdir()
    local r = cq.export.ply { trajectory = tr, dir = dir, every = 4 }
    assert.are.equal(2, #r.files) -- k = 0, 4
    local rows = run_python(py, MESHIO_READER, r.files)
    local frames, current = {}, nil
    for _, w in ipairs(rows) do
      if w[1] == "frame" then current = { n = tonumber(w[3]), values = {} }; frames[#frames + 1] = current
      else
        current.values[w[1]] = current.values[w[1]] or {}
        local vals = {}
        for i = 3, #w do vals[#vals + 1] = tonumber(w[i]) end
        current.values[w[1]][tonumber(w[2]) + 1] = vals
      end
    end
    local worst = 0
    for i, k in ipairs { 0, 4 } do
      local fr, e = frames[i], expected(world, tr, a, k)
      assert.are.equal(world.n, fr.n)
      for p = 1, world.n do
        local got = {
          position = fr.values.position[p],
          velocity = { fr.values.vx[p][1], fr.values.vy[p][1], fr.values.vz[p][1] },
          J = fr.values.J[p], von_mises = fr.values.von_mises[p], actuation = fr.values.actuation[p],
          group = fr.values.group[p],
        }
        for name, list in pairs(e) do
          local want = type(list[p]) == "table" and list[p] or { list[p] }
          for c = 1, #want do worst = math.max(worst, math.abs(got[name][c] - want[c])) end
        end
      end
    end
    print(string.format("  meshio vs trajectory: max |difference| = %.1e over 2 frames x %d particles x 6 fields", worst,
      world.n))
    assert.are.equal(0, worst)
    sh("rm -rf " .. dir)
  end)

  it("writes one state (2D: z = 0), keeps the old file when a write fails, and names missing fields", function()
    local robot = cq.robot { dim = 2 }
    robot:box { offset = { 0.2, 0.2 }, size = { 0.1, 0.1 }, count = { 2, 2 } }
    local world, s = robot:world { res = 16, dx = 1 / 16 }
    local dir = tmpdir()
    local path = dir .. "/state.ply"
    cq.export.ply { state = s, path = path, fields = { "velocity", "E" } }
    local f = assert(io.open(path, "rb"))
    local bytes = f:read("*a")
    f:close()
    assert.truthy(bytes:find("element vertex 4\nproperty double x\nproperty double y\nproperty double z\n" ..
      "property double vx\nproperty double vy\nproperty double vz\nproperty double E\n", 1, true))
    local body = bytes:sub(bytes:find("end_header\n", 1, true) + 11)
    local stride = 7 * 8 + 3
    assert.are.equal(4 * stride, #body)
    local rec = ffi.new("double[7]")
    ffi.copy(rec, body:sub(1, 56), 56)
    assert.are.same({ s:get("x", 1)[1], s:get("x", 1)[2], 0, 10 }, { rec[0], rec[1], rec[2], rec[6] })
    -- a write that fails (its temporary name is taken by a directory) raises and leaves the old file as it was
    sh("mkdir " .. path .. ".tmp")
    local ok, err = pcall(cq.export.ply, { state = s, path = path })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cq.export.ply: cannot write " .. path .. ".tmp", 1, true))
    f = assert(io.open(path, "rb"))
    assert.are.equal(bytes, f:read("*a"))
    f:close()
    -- fields the trajectory did not record are named with the record option that keeps them
    local tr = cq.trajectory { world = world, steps = 1 }
    tr:record_state(0, s)
    tr:record_state(1, s)
    ok, err = pcall(cq.export.vtk, { trajectory = tr, dir = dir, fields = { "J" } })
    assert.truthy(tostring(err):find('cq.export.vtk: field J needs F, which the trajectory did not record ' ..
      '(record = {"x", "F"}', 1, true))
    ok, err = pcall(cq.export.vtk, { trajectory = tr, dir = dir, fields = { "pressure" } })
    assert.truthy(tostring(err):find("fields[1] must be one of velocity, speed, J, von_mises, actuation, group", 1, true))
    ok, err = pcall(cq.export.vtk, { state = s, trajectory = tr })
    assert.truthy(tostring(err):find("give exactly one of trajectory (cq.trajectory) or state (a cq state)", 1, true))
    -- by default a trajectory of positions only exports what it has: position, actuation, group
    local r = cq.export.vtk { trajectory = tr, dir = dir }
    f = assert(io.open(r.files[1], "rb"))
    local text = f:read("*a")
    f:close()
    assert.truthy(text:find('Name="actuation"', 1, true) and text:find('Name="group"', 1, true))
    assert.is_nil(text:find('Name="velocity"', 1, true))
    sh("rm -rf " .. dir)
  end)
end)
