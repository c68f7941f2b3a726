-- Videos (cq.frames.video through ffmpeg, checked with ffprobe), plots (cq.plot through gnuplot, read back as PNG)
-- with clear messages when either program is missing, and the README's 3D tutorial (examples/quadruped3d.lua),
-- quoted verbatim and run with two iterations.
local cq = require "cq"
local shell = require "tests._shell"
local sh, tmpdir = shell.sh, shell.tmpdir
local frames = require "cq.frames"
local paths = require "cq._paths"

-- The running host as an absolute path, for child scripts.
local EXE = paths.exe or arg[-1]
if EXE:sub(1, 1) ~= "/" then EXE = os.getenv("PWD") .. "/" .. EXE end

-- Runs Lua code in a child cqlua whose PATH is one directory with the basic tools (sh, mkdir, rm, ln) but neither
-- ffmpeg nor gnuplot; returns its output and exit status.
local function without_programs(code)
  local dir = tmpdir()
  local f = assert(io.open(dir .. "/child.lua", "w"))
  f:write(code)
  f:close()
  os.execute("mkdir -p " .. dir .. "/bin")
  for _, tool in ipairs { "sh", "mkdir", "rm", "ln" } do
    os.execute(string.format("ln -s \"$(command -v %s)\" %s/bin/%s", tool, dir, tool))
  end
  local out, rc = sh("cd " .. dir .. " && PATH=" .. dir .. "/bin " .. EXE .. " child.lua")
  os.execute("rm -rf " .. dir)
  return out, rc
end

-- Six small frames (a moving square) in dir, as cq.frames.write names them.
local function write_frames(dir, w, h)
  for k = 0, 5 do
    local img = frames.image(w, h, { 240, 240, 240 })
    for j = 10, 30 do for i = 10 + 8 * k, 30 + 8 * k do img:set(i, j, { 200, 40, 40 }) end end
    img:write(string.format("%s/frame_%04d.png", dir, k))
  end
end

describe("cq.frames.video", function()
  it("encodes numbered frames (or a list) into an H.264 MP4 that ffprobe reads: frame count, size, codec", function()
    local dir = tmpdir()
    write_frames(dir, 121, 80) -- an odd width: padded to even for yuv420p
    local r = frames.video { dir = dir, out = dir .. "/movie/run.mp4", fps = 12 }
    assert.are.same({ dir .. "/movie/run.mp4", 6 }, { r.path, r.frames })
    local probe = dir .. "/movie/run.mp4"
    local out, rc = sh("ffprobe -v error -count_frames -select_streams v:0 -show_entries " ..
      "stream=codec_name,width,height,nb_read_frames,r_frame_rate -of default=noprint_wrappers=1 " .. probe)
    assert.are.equal(0, rc, out)
    print("  ffprobe: " .. out:gsub("\n", " "))
    assert.are.equal("h264", out:match("codec_name=(%w+)"))
    assert.are.same({ 122, 80 }, { tonumber(out:match("width=(%d+)")), tonumber(out:match("height=(%d+)")) })
    assert.are.equal(6, tonumber(out:match("nb_read_frames=(%d+)")))
    assert.are.equal("12/1", out:match("r_frame_rate=([%d/]+)"))
    assert.is_nil(io.open(probe .. ".tmp")) -- written as out.tmp, then renamed
    local list = { dir .. "/frame_0005.png", dir .. "/frame_0000.png", dir .. "/frame_0003.png" }
    r = frames.video { frames = list, out = dir .. "/list.mp4" }
    out = sh("ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of csv=p=0 " .. dir .. "/list.mp4")
    assert.are.equal(3, tonumber(out:match("%d+")))
    os.execute("rm -rf " .. dir)
  end)

  it("says how to install ffmpeg when it is missing, and names bad options", function()
    local out, rc = without_programs([[
local cq = require "cq"
local img = cq.frames.image(8, 8)
os.execute("mkdir -p f")
img:write("f/frame_0000.png")
cq.frames.video { dir = "f", out = "x.mp4" }
]])
    assert.are.equal(1, rc)
    assert.truthy(out:find("child.lua:5: cq.frames.video: ffmpeg is not installed or not on PATH (install it: apt-get " ..
      "install ffmpeg; `make deps-video` installs it)", 1, true), out)
    local ok, err = pcall(frames.video, { dir = "/nonexistent", out = "x.mp4" })
    assert.truthy(tostring(err):find("cq.frames.video: no frames in /nonexistent (expected /nonexistent/frame_0000.png", 1, true))
    ok, err = pcall(frames.video, { dir = "d", frames = {}, out = "x.mp4" })
    assert.truthy(tostring(err):find("give exactly one of dir", 1, true))
    ok, err = pcall(frames.video, { dir = "d", out = "x.mp4", fps = 0 })
    assert.truthy(tostring(err):find("fps must be in (0, 1000] (got 0)", 1, true))
    assert.is_false(ok)
  end)
end)

describe("cq.plot", function()
  it("draws CSV columns into a PNG of the requested size with curves on it", function()
    local dir = tmpdir()
    local csv = dir .. "/log.csv"
    local f = assert(io.open(csv, "w"))
    f:write("iteration,loss,E_design,seconds\n")
    for i = 1, 40 do f:write(string.format("%d,%.6g,%s,0.1\n", i, math.exp(-i / 8), i == 7 and "" or tostring(10 + i))) end
    f:close()
    local out = cq.plot { csv = csv, x = "iteration", y = { "loss", "E_design" }, out = dir .. "/plot.png", width = 640,
      height = 400, title = "loss and design", logscale = "y" }
    assert.are.equal(dir .. "/plot.png", out)
    local img = frames.read(out)
    assert.are.same({ 640, 400 }, { img.w, img.h })
    local ink, colored = 0, 0
    for j = 0, img.h - 1 do
      for i = 0, img.w - 1 do
        local r, g, b = img:pixel(i, j)
        if r + g + b < 3 * 250 then ink = ink + 1 end                       -- not the white background
        if math.max(r, g, b) - math.min(r, g, b) > 80 then colored = colored + 1 end -- curve colours
      end
    end
    print(string.format("  plot: %d non-background pixels, %d curve-coloured", ink, colored))
    assert.is_true(ink > 2000 and colored > 500)
    os.execute("rm -rf " .. dir)
  end)

  it("plots a cq.log's CSV, says how to install gnuplot when it is missing, and names unknown columns", function()
    local out, rc = without_programs([[
local cq = require "cq"
local log = cq.log { name = "p", columns = { "iteration", "loss" } }
log:iteration(1, 1, { loss = 1 })
cq.plot { log = log, y = "loss", out = "p.png" }
]])
    assert.are.equal(1, rc)
    assert.truthy(out:find("child.lua:4: cq.plot: gnuplot is not installed or not on PATH (install it: apt-get install " ..
      "gnuplot-nox; `make deps-plot` installs it)", 1, true), out)
    local dir = tmpdir()
    local csv = dir .. "/log.csv"
    local f = assert(io.open(csv, "w"))
    f:write("iteration,loss\n1,2\n")
    f:close()
    local ok, err = pcall(cq.plot, { csv = csv, y = { "los" }, out = dir .. "/p.png" })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cq.plot: y[1] must be a column of " .. csv .. " (iteration, loss) (got \"los\")", 1, true))
    ok, err = pcall(cq.plot, { csv = csv, y = "loss", out = dir .. "/p.png", logscale = "z" })
    assert.truthy(tostring(err):find("logscale must be one of x, y, xy", 1, true))
    ok, err = pcall(cq.plot, { csv = csv, y = "loss", out = dir .. "/p.png", key = "middle" })
    assert.truthy(tostring(err):find("key must be one of top right, top left, bottom right, bottom left, off", 1, true),
      tostring(err))
    assert.are.equal(dir .. "/k.png", cq.plot { csv = csv, y = "loss", out = dir .. "/k.png", key = "off" })
    os.execute("rm -rf " .. dir)
  end)
end)

describe("the README's 3D tutorial (examples/quadruped3d.lua)", function()
  it("is quoted verbatim in README.md and, run for two iterations at spacing 1/48, walks forward and draws", function()
    local function read(path) local h = assert(io.open(path)); local t = h:read("*a"); h:close(); return t end
    local code = read("examples/quadruped3d.lua")
    assert.truthy(read("README.md"):find("```lua\n" .. code .. "```", 1, true))
    local chunk = assert(loadfile("examples/quadruped3d.lua"))
    setfenv(chunk, setmetatable({ arg = { "2", tostring(1 / 48) } }, { __index = _G })) -- 2 iterations, coarse
    local log = chunk()
    print(string.format("  quadruped3d: distance %.4f -> %.4f after 2 iterations", log.first.distance, log.last.distance))
    assert.is_true(log.last.distance > log.first.distance)
    local n = 0
    while io.open(string.format("out/quadruped3d/frame_%04d.png", n)) do n = n + 1 end
    assert.are.equal(21, n) -- T = 40, every 2
    local probe = sh("ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of csv=p=0 out/quadruped3d.mp4")
    assert.are.equal(21, tonumber(probe:match("%d+")))
    assert.is_not_nil(io.open("out/quadruped3d_vtk/frames.pvd"))
    local plot = frames.read("out/quadruped3d_distance.png")
    assert.are.same({ 800, 500 }, { plot.w, plot.h })
  end)
end)
