-- PNG frames of 2D and 3D motion through one API (render_state, write): 2D draws particles as discs over the domain
-- (white background, grey wall band); 3D hands the frame to cq.render3d (shaded spheres over a floor). Particles are
-- coloured by actuation (blue = contract, red = expand, grey = passive), group, a quantity (speed, J, von Mises
-- stress, a parameter such as E) through a colour map with a colour bar, a list or a function.
local ffi = require "ffi"
local check = require "cq._check"
local fs = require "cq._fs"
local image = require "cq._image"
local colors = require "cq._colors"

local M = {}
M.Image, M.image, M.read = image.Image, image.image, image.read
M.by_group = colors.by_group

M.BACKGROUND = { 255, 255, 255 }
M.WALL = { 232, 232, 232 }      -- boundary band (walls, floor)
M.WALL_EDGE = { 140, 140, 140 } -- inner edge of the band: the ground line
M.TARGET = { 0, 150, 60 }
M.PASSIVE, M.ACTUATED, M.CONTRACT, M.EXPAND, M.PALETTE = colors.PASSIVE, colors.ACTUATED, colors.CONTRACT,
  colors.EXPAND, colors.PALETTE

-- Options shared by render_state and write.
local COMMON = { "world", "width", "height", "view", "camera", "supersample", "color", "actuator", "groups", "colormap",
  "range", "legend", "radius", "targets", "boundary" }
local KNOWN = {}
for _, k in ipairs(COMMON) do KNOWN[k] = true end
local function with_common(names) for _, k in ipairs(COMMON) do names[#names + 1] = k end return names end
local RENDER_OPTIONS = check.option_set("cq.frames.render_state", with_common { "state", "x", "u", "k" })
local WRITE_OPTIONS = check.option_set("cq.frames.write", with_common { "trajectory", "dir", "every", "prefix" })
local ONLY_3D = { "height", "camera", "supersample" }

local function check_world(where, w)
  if type(w) ~= "table" or not w.dim or not w.res then check.fail(where, "world must be a cq.world", w) end
  return w
end

---------------------------------------------------------------- 2D
-- The 2D camera: world (x, y) to fractional pixel coordinates of an image of height h.
local Camera2 = {}
Camera2.__index = Camera2
function Camera2:to_pixel(x, y) return (x - self.x0) * self.s, self.h - (y - self.y0) * self.s end

local function setup2d(where, opts)
  local w = opts.world
  for _, k in ipairs(ONLY_3D) do
    if opts[k] ~= nil then
      check.fail(where, k .. " is an option of 3D frames (2D frames are sized by width and view)", opts[k])
    end
  end
  local width = check.integer(where, "width", opts.width or 640, 8, 16384)
  local view = opts.view or { 0, 0, w.res[1] * w.dx, w.res[2] * w.dx }
  check.vector(where, "view", view, 4)
  if view[3] <= view[1] or view[4] <= view[2] then
    check.fail(where, "view must be {x0, y0, x1, y1} with x1 > x0 and y1 > y0", table.concat(view, ", "))
  end
  local s = width / (view[3] - view[1])
  local height = math.max(1, math.floor((view[4] - view[2]) * s + 0.5))
  local cfg = { world = w, width = width, height = height,
    camera = setmetatable({ dim = 2, x0 = view[1], y0 = view[2], s = s, h = height }, Camera2),
    radius = check.number(where, "radius", opts.radius or math.max(1, 0.3 * w.dx * s), 0, width),
    boundary = check.number(where, "boundary", opts.boundary or 3, 0, math.max(w.res[1], w.res[2])),
    targets = opts.targets or {} }
  if type(cfg.targets) ~= "table" then check.fail(where, "targets must be a list of points {x, y}", cfg.targets) end
  for i, t in ipairs(cfg.targets) do check.vector(where, "targets[" .. i .. "]", t, 2) end
  return cfg
end

-- The background (white, boundary band with its inner edge line), drawn once per configuration.
local function background(cfg, W, H)
  local img = M.image(W, H)
  local cam = cfg.camera
  if cfg.boundary > 0 then
    local wd = cfg.world
    local b = cfg.boundary * wd.dx
    local Lx, Ly = wd.res[1] * wd.dx, wd.res[2] * wd.dx
    local function px(xw) return math.floor((xw - cam.x0) * cam.s) end
    local function py(yw) return math.floor(H - (yw - cam.y0) * cam.s) end
    -- band: x < b, x > Lx - b, y < b, y > Ly - b (clipped to the image); edge lines on its inner side
    local i_lo, i_hi, j_lo, j_hi = px(b), px(Lx - b), py(b), py(Ly - b)
    for j = 0, H - 1 do
      for i = 0, W - 1 do
        if i < i_lo or i > i_hi or j > j_lo or j < j_hi then img:set(i, j, M.WALL) end
      end
    end
    for i = math.max(i_lo, 0), math.min(i_hi, W - 1) do img:set(i, j_lo, M.WALL_EDGE); img:set(i, j_hi, M.WALL_EDGE) end
    for j = math.max(j_hi, 0), math.min(j_lo, H - 1) do img:set(i_lo, j, M.WALL_EDGE); img:set(i_hi, j, M.WALL_EDGE) end
  end
  return img
end

-- Draws a 2D frame into img: background, particles (x: component-major view of 2 * n positions; particle p coloured
-- color_of(p), 1-based), targets.
local function draw2d(img, cfg, x, n, color_of)
  local cam, W, H = cfg.camera, img.w, img.h
  cfg.bg = cfg.bg or background(cfg, W, H)
  ffi.copy(img.rgb, cfg.bg.rgb, W * H * 3)
  local r = cfg.radius
  local ri, r2 = math.floor(r), r * r + r
  for p = 0, n - 1 do
    local ci = math.floor((x[p] - cam.x0) * cam.s)
    local cj = math.floor(H - (x[n + p] - cam.y0) * cam.s)
    if ci >= -ri and cj >= -ri and ci < W + ri and cj < H + ri then
      local c = color_of(p + 1)
      for dj = -ri, ri do for di = -ri, ri do
        if di * di + dj * dj <= r2 then img:set(ci + di, cj + dj, c) end
      end end
    end
  end
  local m = math.max(3, math.floor(2 * r + 2))
  for _, t in ipairs(cfg.targets) do
    local ci = math.floor((t[1] - cam.x0) * cam.s)
    local cj = math.floor(H - (t[2] - cam.y0) * cam.s)
    for d = -m, m do
      img:set(ci + d, cj, M.TARGET); img:set(ci, cj + d, M.TARGET)
      img:set(ci + d, cj + 1, M.TARGET); img:set(ci + 1, cj + d, M.TARGET)
    end
  end
end

---------------------------------------------------------------- both
-- The drawing configuration of opts for world w (2D or 3D); lo, hi: the 3D box to frame (particle bounds).
local function setup(where, opts, w, lo, hi)
  local cfg
  if w.dim == 2 then cfg = setup2d(where, opts)
  else
    local r3 = require "cq.render3d"
    if opts.view == nil and lo then -- pad by a particle so spheres at the edge stay inside
      local pad = opts.radius or 0.6 * w.dx
      lo, hi = { lo[1] - pad, lo[2] - pad, lo[3] - pad }, { hi[1] + pad, hi[2] + pad, hi[3] + pad }
    end
    cfg = r3.setup(where, opts, w, lo, hi)
  end
  cfg.spec = colors.parse(where, opts, w)
  return cfg
end

-- Draws frame { x, v?, F?, u?, k, state? } into img (the configuration's size); returns the image's camera.
local function draw(where, img, cfg, frame)
  local w = cfg.world
  local color_of, range = colors.resolve(where, cfg.spec, w, frame)
  local cam
  if w.dim == 2 then draw2d(img, cfg, frame.x, w.n, color_of); cam = cfg.camera
  else cam = require("cq.render3d").draw(cfg, img, frame.x, w.n, color_of) end
  if cfg.spec.kind == "field" and cfg.spec.legend then colors.draw_legend(img, cfg.spec, range) end
  return cam
end

--- cq.frames.render_state{ world, state | x, u?, k?, and the drawing options (docs/api.md) } -> image
--- (img.w, img.h, img:pixel(i, j), img:to_pixel(x, y[, z]), img:write(path)). x: a component-major view of dim * n
--- positions (a state's .x, or trajectory:view("x", k)); u: the actuation table used by the default colouring.
function M.render_state(opts)
  local where = "cq.frames.render_state"
  check.options(where, opts, RENDER_OPTIONS)
  local w = check_world(where, opts.world)
  if opts.state ~= nil and (type(opts.state) ~= "table" or opts.state.x == nil or opts.state.n ~= w.n) then
    check.fail(where, "state must be a cq state of this world (" .. w.n .. " particles)", opts.state)
  end
  local x = opts.x or (opts.state and opts.state.x)
  if x == nil then check.fail(where, "state (a cq state) or x (positions) is required", nil) end
  if type(x) ~= "cdata" then
    check.fail(where, "x must be an FFI array of " .. w.dim .. " * n positions, component-major (a state's .x or " ..
      "trajectory:view)", x)
  end
  if not tostring(ffi.typeof(x)):find("%*>$") then check.doubles(where, "x", x, w.dim * w.n) end -- pointers pass
  if opts.k ~= nil then check.integer(where, "k", opts.k, 0) end
  if opts.u ~= nil and type(opts.u) ~= "table" then check.fail(where, "u must be a table of actuation values", opts.u) end
  local lo, hi
  if w.dim == 3 then lo, hi = require("cq.render3d").bounds(x, w.n) end
  local cfg = setup(where, opts, w, lo, hi)
  local img = M.image(cfg.width, cfg.height)
  local s = opts.state
  img.camera = draw(where, img, cfg, { x = x, state = s, v = s and s.v, F = s and s.F, u = opts.u, k = opts.k or 0 })
  return img
end

--- cq.frames.write{ trajectory, world? (default trajectory.world), dir, every = 1, prefix = "frame_", and the
---   drawing options of render_state } -> number of frames.
--- Writes dir/<prefix>0000.png, 0001, ... for control steps k = 0, every, 2 every, ... <= steps (the last step is
--- always included); frame k is coloured with u(k) (u(steps - 1) for the last state). Creates dir if missing.
--- Quantities (color = "speed", ...) share one colour range over all frames unless range is given.
function M.write(opts)
  local where = "cq.frames.write"
  check.options(where, opts, WRITE_OPTIONS)
  local tr = opts.trajectory
  if type(tr) ~= "table" or type(tr.view) ~= "function" then
    check.fail(where, "trajectory must be a cq.trajectory (run:trajectory())", tr)
  end
  local o = {}
  for key, v in pairs(opts) do if KNOWN[key] then o[key] = v end end
  o.world = check_world(where, o.world or tr.world)
  if not tr.data.x then check.raise(where .. ": the trajectory has no positions (it was recorded with record = false)") end
  local dir = opts.dir
  if type(dir) ~= "string" or dir == "" then check.fail(where, "dir must be a directory name such as \"out/frames\"", dir) end
  local every = check.integer(where, "every", opts.every or 1, 1)
  local prefix = opts.prefix or "frame_"
  if type(prefix) ~= "string" or prefix:find("/") then check.fail(where, "prefix must be a file name prefix", prefix) end
  local steps = {}
  local k = 0
  while true do
    steps[#steps + 1] = k
    if k == tr.steps then break end
    k = math.min(k + every, tr.steps)
  end
  local function frame(k)
    return { x = tr:view("x", k), v = tr.data.v and tr:view("v", k), F = tr.data.F and tr:view("F", k),
      u = tr.n_actuators > 0 and tr:u(math.min(k, tr.steps - 1)) or nil, k = k }
  end
  local w, lo, hi = o.world, nil, nil
  if w.dim == 3 then -- frame every written step (only the first when the camera follows the robot)
    local r3 = require "cq.render3d"
    local follow = type(o.camera) == "table" and o.camera.follow
    for i = 1, follow and 1 or #steps do lo, hi = r3.bounds(tr:view("x", steps[i]), w.n, lo, hi) end
  end
  local cfg = setup(where, o, w, lo, hi)
  if cfg.spec.kind == "field" and not cfg.spec.range then -- one range for the whole movie
    local range
    for _, kk in ipairs(steps) do
      range = colors.extend_range(cfg.spec, require("cq._measures").values(where, w, frame(kk), cfg.spec.field), w.n, range)
    end
    cfg.spec.range = range
  end
  local ok, err = fs.mkdir_p(dir)
  if not ok then check.raise(string.format("%s: cannot create directory %s (%s)", where, dir, tostring(err))) end
  local C = image.png(where)
  local img = M.image(cfg.width, cfg.height)
  for count, kk in ipairs(steps) do
    img.camera = draw(where, img, cfg, frame(kk))
    local path = string.format("%s/%s%04d.png", dir, prefix, count - 1)
    if C.cqh_png_write(path, img.w, img.h, img.rgb) ~= 0 then
      check.raise(string.format("%s: cannot write %s (is dir a writable directory?)", where, path))
    end
  end
  return #steps
end

--- cq.frames.video{...}: an MP4 from frames through ffmpeg (cq/video.lua).
function M.video(opts) return require("cq.video").make(opts) end

return M
