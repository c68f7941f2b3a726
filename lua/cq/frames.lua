-- PNG frames of 2D motion: particles drawn as small discs over the domain (white background, grey wall band),
-- coloured by actuation (blue = contract, red = expand, grey = passive), a group palette or a user function.
-- PNG files are written by the cqlua host (engine/png.c, stb_image_write) through ffi.C.
local ffi = require "ffi"
local check = require "cq._check"
local fs = require "cq._fs"

require "cq._ffi" -- declares cq_png_* (engine/png.h)

local M = {}
local Image = {}
Image.__index = Image
M.Image = Image

-- ffi.C with the cq_png_* symbols, or a clear error (they live in build/bin/cqlua, exported with -Wl,-E).
local function png(where)
  local ok = pcall(function() return ffi.C.cq_png_write end)
  if not ok then check.raise(where .. ": cq_png_write is not available: run the script with build/bin/cqlua (make)") end
  return ffi.C
end

M.BACKGROUND = { 255, 255, 255 }
M.WALL = { 232, 232, 232 }      -- boundary band (walls, floor)
M.WALL_EDGE = { 140, 140, 140 } -- inner edge of the band: the ground line
M.PASSIVE = { 175, 175, 175 }
M.ACTUATED = { 110, 110, 110 }  -- an actuated particle at u = 0
M.CONTRACT = { 30, 80, 230 }    -- u = +1 (positive pressure actuation shortens the material along its axis)
M.EXPAND = { 225, 45, 35 }      -- u = -1
M.TARGET = { 0, 150, 60 }
M.PALETTE = { { 31, 119, 180 }, { 255, 127, 14 }, { 44, 160, 44 }, { 214, 39, 40 }, { 148, 103, 189 },
  { 140, 86, 75 }, { 227, 119, 194 }, { 127, 127, 127 }, { 188, 189, 34 }, { 23, 190, 207 } }

--- A w x h RGB image (8 bits per channel, top row first) filled with colour c (default white).
function M.image(w, h, c)
  check.integer("cq.frames.image", "w", w, 1, 65536)
  check.integer("cq.frames.image", "h", h, 1, 65536)
  if c ~= nil then check.vector("cq.frames.image", "c", c, 3) end
  local img = setmetatable({ w = w, h = h, rgb = check.alloc("cq.frames.image", "w * h", "uint8_t[?]", w * h * 3) }, Image)
  img:clear(c)
  return img
end

function Image:clear(c)
  if c ~= nil then check.vector("image:clear", "c", c, 3) end
  c = c or M.BACKGROUND
  if c[1] == c[2] and c[2] == c[3] then ffi.fill(self.rgb, self.w * self.h * 3, c[1])
  else for i = 0, self.w * self.h - 1 do self.rgb[3 * i], self.rgb[3 * i + 1], self.rgb[3 * i + 2] = c[1], c[2], c[3] end end
end

--- Colour of pixel (i, j): column i from the left, row j from the top, both 0-based. Returns r, g, b.
function Image:pixel(i, j)
  if type(i) ~= "number" or i < 0 or i >= self.w or i % 1 ~= 0 then check.integer("image:pixel", "i", i, 0, self.w - 1) end
  if type(j) ~= "number" or j < 0 or j >= self.h or j % 1 ~= 0 then check.integer("image:pixel", "j", j, 0, self.h - 1) end
  local o = 3 * (j * self.w + i)
  return self.rgb[o], self.rgb[o + 1], self.rgb[o + 2]
end

function Image:set(i, j, c)
  if i < 0 or j < 0 or i >= self.w or j >= self.h then return end
  local o = 3 * (j * self.w + i)
  self.rgb[o], self.rgb[o + 1], self.rgb[o + 2] = c[1], c[2], c[3]
end

--- Pixel (i, j) of world point (x, y) under this image's camera (images from render_state), or nil when outside.
function Image:to_pixel(x, y)
  local cam = self.camera
  if not cam then check.raise("image:to_pixel: this image has no camera (only images from cq.frames.render_state have one)") end
  check.number("image:to_pixel", "x", x)
  check.number("image:to_pixel", "y", y)
  local i, j = math.floor((x - cam.x0) * cam.s), math.floor(self.h - (y - cam.y0) * cam.s)
  if i < 0 or j < 0 or i >= self.w or j >= self.h then return nil end
  return i, j
end

--- Writes the image as a PNG file.
function Image:write(path)
  if type(path) ~= "string" or path == "" then check.fail("image:write", "path must be a file name", path) end
  if png("image:write").cq_png_write(path, self.w, self.h, self.rgb) ~= 0 then
    check.raise("image:write: cannot write " .. path .. " (does its directory exist and is it writable?)")
  end
end

--- Reads a PNG file into an image (any PNG colour type, converted to RGB).
function M.read(path)
  if type(path) ~= "string" or path == "" then check.fail("cq.frames.read", "path must be a file name", path) end
  local C = png("cq.frames.read")
  local w, h = ffi.new("int[1]"), ffi.new("int[1]")
  local data = C.cq_png_read(path, w, h)
  if data == nil then check.raise("cq.frames.read: cannot read " .. tostring(path) .. " as a PNG") end
  local img = setmetatable({ w = w[0], h = h[0], rgb = ffi.new("uint8_t[?]", w[0] * h[0] * 3) }, Image)
  ffi.copy(img.rgb, data, w[0] * h[0] * 3)
  C.cq_png_free(data)
  return img
end

--- Per-particle colours from groups ({ {p, ...}, ... } or robot groups with .particles): group i gets
--- PALETTE[i]; particles in no group are PASSIVE. Pass the result as color.
function M.by_group(groups, n)
  local where = "cq.frames.by_group"
  if type(groups) ~= "table" then check.fail(where, "groups must be a list of particle index lists or robot groups", groups) end
  check.integer(where, "n", n, 1, 100000000) -- one Lua table entry per particle
  for i, g in ipairs(groups) do
    if type(g) ~= "table" then check.fail(where, "groups[" .. i .. "] must be a list of particle indices or a robot group", g) end
    for j, p in ipairs(g.particles or g) do check.integer(where, "groups[" .. i .. "][" .. j .. "]", p, 1, n) end
  end
  local out = {}
  for p = 1, n do out[p] = M.PASSIVE end
  for i, g in ipairs(groups) do
    for _, p in ipairs(g.particles or g) do out[p] = M.PALETTE[(i - 1) % #M.PALETTE + 1] end
  end
  return out
end

local function mix(a, b, t) return { a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t, a[3] + (b[3] - a[3]) * t } end

-- Options shared by render_state and write; returns the camera, radius and colour function builder.
local COMMON = { "world", "width", "view", "color", "actuator", "radius", "targets", "boundary" }
local KNOWN = {}
for _, k in ipairs(COMMON) do KNOWN[k] = true end
local function with_common(names) for _, k in ipairs(COMMON) do names[#names + 1] = k end return names end
local RENDER_OPTIONS = check.option_set("cq.frames.render_state", with_common { "state", "x", "u", "k" })
local WRITE_OPTIONS = check.option_set("cq.frames.write", with_common { "trajectory", "dir", "every", "prefix" })

local function setup(where, opts)
  local w = opts.world
  if type(w) ~= "table" or not w.dim or not w.res then check.fail(where, "world must be a cq.world", w, 3) end
  if w.dim ~= 2 then check.raise(string.format("cq.frames: only 2D worlds are rendered (dim = %d)", w.dim)) end
  local width = check.integer(where, "width", opts.width or 640, 8, 16384)
  local view = opts.view or { 0, 0, w.res[1] * w.dx, w.res[2] * w.dx }
  check.vector(where, "view", view, 4)
  if view[3] <= view[1] or view[4] <= view[2] then
    check.fail(where, "view must be {x0, y0, x1, y1} with x1 > x0 and y1 > y0", table.concat(view, ", "), 3)
  end
  local s = width / (view[3] - view[1])
  local height = math.max(1, math.floor((view[4] - view[2]) * s + 0.5))
  local cfg = { world = w, width = width, height = height, camera = { x0 = view[1], y0 = view[2], s = s },
    radius = check.number(where, "radius", opts.radius or math.max(1, 0.3 * w.dx * s), 0, width),
    boundary = check.number(where, "boundary", opts.boundary or 3, 0, math.max(w.res[1], w.res[2])), targets = opts.targets or {} }
  if type(cfg.targets) ~= "table" then check.fail(where, "targets must be a list of points {x, y}", cfg.targets, 3) end
  for i, t in ipairs(cfg.targets) do check.vector(where, "targets[" .. i .. "]", t, 2) end
  local color = opts.color
  if color ~= nil and type(color) ~= "function" and type(color) ~= "table" then
    check.fail(where, "color must be nil (by actuation), a function(p, k) -> {r, g, b} or a list of {r, g, b} per particle",
      color, 3)
  end
  if type(color) == "table" and #color ~= w.n then
    check.fail(where, "color must have one {r, g, b} per particle (" .. w.n .. ")", #color, 3)
  end
  if type(color) == "table" then
    for p = 1, w.n do
      local c = color[p]
      if type(c) ~= "table" or type(c[1]) ~= "number" or type(c[2]) ~= "number" or type(c[3]) ~= "number" then
        check.fail(where, "color[" .. p .. "] must be {r, g, b} (0..255)", c, 3)
      end
    end
  end
  cfg.color = color
  if color == nil then -- actuator of each particle (1-based, 0 = passive)
    local ids = {}
    if opts.actuator then
      if type(opts.actuator) ~= "table" or #opts.actuator ~= w.n then
        check.fail(where, "actuator must list one actuator number per particle (1-based, 0 = passive; " .. w.n ..
          " particles)", opts.actuator, 3)
      end
      for p = 1, w.n do ids[p] = opts.actuator[p] or 0 end
      for p = 1, w.n do
        if type(ids[p]) ~= "number" then check.fail(where, "actuator[" .. p .. "] must be a number", ids[p], 3) end
      end
    elseif w.params and w.params.act_id then
      for p = 1, w.n do ids[p] = w.params.act_id[p - 1] + 1 end
    else
      for p = 1, w.n do ids[p] = 0 end
    end
    cfg.act_id = ids
  end
  return cfg
end

-- The colour of particle p (1-based) at control step k with actuation u (table or nil).
local function particle_color(cfg, p, k, u)
  local c = cfg.color
  if type(c) == "function" then return c(p, k) end
  if c then return c[p] end
  local a = cfg.act_id[p]
  if a <= 0 then return M.PASSIVE end
  local ua = u and u[a] or 0
  if ua >= 0 then return mix(M.ACTUATED, M.CONTRACT, math.min(ua, 1)) end
  return mix(M.ACTUATED, M.EXPAND, math.min(-ua, 1))
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

-- Draws the frame into img: background, particles (x: component-major view of 2 * n positions), targets.
local function draw(img, cfg, x, n, k, u)
  local cam, W, H = cfg.camera, img.w, img.h
  cfg.bg = cfg.bg or background(cfg, W, H)
  ffi.copy(img.rgb, cfg.bg.rgb, W * H * 3)
  local r = cfg.radius
  local ri, r2 = math.floor(r), r * r + r
  for p = 0, n - 1 do
    local ci = math.floor((x[p] - cam.x0) * cam.s)
    local cj = math.floor(H - (x[n + p] - cam.y0) * cam.s)
    if ci >= -ri and cj >= -ri and ci < W + ri and cj < H + ri then
      local c = particle_color(cfg, p + 1, k, u)
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

--- cq.frames.render_state{ world, state | x, u?, k?, width = 640, view = {x0, y0, x1, y1} (default the domain
---   [0, res[1] dx] x [0, res[2] dx]), color?, act_id?, radius? (pixels), targets? = {{x, y}, ...}, boundary? = 3
---   (wall band in cells; 0 = none) } -> image (img.w, img.h, img:pixel(i, j), img:to_pixel(x, y), img:write(path))
--- x: a component-major view of 2 * n positions (a state's .x, or trajectory:view("x", k)); u: the actuation table
--- used by the default colouring (blue = contract at u = +1, red = expand at u = -1, grey = passive).
--- color: function(p, k) -> {r, g, b} (0..255), or a list of {r, g, b} per particle (see cq.frames.by_group).
function M.render_state(opts)
  local where = "cq.frames.render_state"
  check.options(where, opts, RENDER_OPTIONS)
  local cfg = setup(where, opts)
  if opts.state ~= nil and (type(opts.state) ~= "table" or opts.state.x == nil or opts.state.n ~= cfg.world.n) then
    check.fail(where, "state must be a cq state of this world (" .. cfg.world.n .. " particles)", opts.state)
  end
  local x = opts.x or (opts.state and opts.state.x)
  if x == nil then check.fail(where, "state (a cq state) or x (positions) is required", nil) end
  if type(x) ~= "cdata" then
    check.fail(where, "x must be an FFI array of 2 * n positions, component-major (a state's .x or trajectory:view)", x)
  end
  if not tostring(ffi.typeof(x)):find("%*>$") then check.doubles(where, "x", x, 2 * cfg.world.n) end -- pointers pass
  if opts.k ~= nil then check.integer(where, "k", opts.k, 0) end
  if opts.u ~= nil and type(opts.u) ~= "table" then check.fail(where, "u must be a table of actuation values", opts.u) end
  local img = M.image(cfg.width, cfg.height)
  img.camera = cfg.camera
  draw(img, cfg, x, cfg.world.n, opts.k or 0, opts.u)
  return img
end

--- cq.frames.write{ trajectory, world? (default trajectory.world), dir, every = 1, prefix = "frame_", and the
---   drawing options of render_state } -> number of frames.
--- Writes dir/<prefix>0000.png, 0001, ... for control steps k = 0, every, 2 every, ... <= steps (the last step is
--- always included); frame k is coloured with u(k) (u(steps - 1) for the last state). Creates dir if missing.
--- A movie: ffmpeg -framerate 25 -i dir/frame_%04d.png -pix_fmt yuv420p motion.mp4
function M.write(opts)
  local where = "cq.frames.write"
  check.options(where, opts, WRITE_OPTIONS)
  local tr = opts.trajectory
  if type(tr) ~= "table" or type(tr.view) ~= "function" then
    check.fail(where, "trajectory must be a cq.trajectory (run:trajectory())", tr)
  end
  local o = {}
  for key, v in pairs(opts) do if KNOWN[key] then o[key] = v end end
  o.world = o.world or tr.world
  local cfg = setup(where, o)
  if not tr.data.x then check.raise(where .. ": the trajectory has no positions (it was recorded with record = false)") end
  local dir = opts.dir
  if type(dir) ~= "string" or dir == "" then check.fail(where, "dir must be a directory name such as \"out/frames\"", dir) end
  local every = check.integer(where, "every", opts.every or 1, 1)
  local prefix = opts.prefix or "frame_"
  if type(prefix) ~= "string" or prefix:find("/") then check.fail(where, "prefix must be a file name prefix", prefix) end
  local ok, err = fs.mkdir_p(dir)
  if not ok then check.raise(string.format("%s: cannot create directory %s (%s)", where, dir, tostring(err))) end
  local C = png(where)
  local img = M.image(cfg.width, cfg.height)
  img.camera = cfg.camera
  local count, k = 0, 0
  while true do
    local u = tr.n_actuators > 0 and tr:u(math.min(k, tr.steps - 1)) or nil
    draw(img, cfg, tr:view("x", k), tr.n, k, u)
    local path = string.format("%s/%s%04d.png", dir, prefix, count)
    if C.cq_png_write(path, img.w, img.h, img.rgb) ~= 0 then
      check.raise(string.format("%s: cannot write %s (is dir a writable directory?)", where, path))
    end
    count = count + 1
    if k == tr.steps then break end
    k = math.min(k + every, tr.steps)
  end
  return count
end

return M
