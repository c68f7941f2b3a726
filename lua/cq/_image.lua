-- Private: RGB images (8 bits per channel, top row first) for frames and plots, read from and written to PNG files
-- by the cqlua host (engine/host/png.c, stb) through ffi.C.
local ffi = require "ffi"
local check = require "cq._check"

require "cq._ffi" -- declares cqh_png_* (engine/host/png.h)

local M = {}
local Image = {}
Image.__index = Image
M.Image = Image

local WHITE = { 255, 255, 255 }

--- ffi.C with the cqh_png_* symbols, or a clear error (they live in build/bin/cqlua, exported with -Wl,-E).
function M.png(where)
  local ok = pcall(function() return ffi.C.cqh_png_write end)
  if not ok then check.raise(where .. ": cqh_png_write is not available: run the script with build/bin/cqlua (make)") end
  return ffi.C
end

--- A w x h RGB image filled with colour c (default white).
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
  c = c or WHITE
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

--- Pixel (i, j) of world point (x, y[, z]) under this image's camera (images from render_state), or nil when
--- outside the image.
function Image:to_pixel(x, y, z)
  local cam = self.camera
  if not cam then check.raise("image:to_pixel: this image has no camera (only images from cq.frames.render_state have one)") end
  check.number("image:to_pixel", "x", x)
  check.number("image:to_pixel", "y", y)
  if cam.dim == 3 then check.number("image:to_pixel", "z", z) end
  local fi, fj = cam:to_pixel(x, y, z)
  if not fi then return nil end
  local i, j = math.floor(fi), math.floor(fj)
  if i < 0 or j < 0 or i >= self.w or j >= self.h then return nil end
  return i, j
end

--- Writes the image as a PNG file.
function Image:write(path)
  if type(path) ~= "string" or path == "" then check.fail("image:write", "path must be a file name", path) end
  if M.png("image:write").cqh_png_write(path, self.w, self.h, self.rgb) ~= 0 then
    check.raise("image:write: cannot write " .. path .. " (does its directory exist and is it writable?)")
  end
end

--- Reads a PNG file into an image (any PNG colour type, converted to RGB).
function M.read(path)
  if type(path) ~= "string" or path == "" then check.fail("cq.frames.read", "path must be a file name", path) end
  local C = M.png("cq.frames.read")
  local w, h = ffi.new("int[1]"), ffi.new("int[1]")
  local data = C.cqh_png_read(path, w, h)
  if data == nil then check.raise("cq.frames.read: cannot read " .. tostring(path) .. " as a PNG") end
  local img = setmetatable({ w = w[0], h = h[0], rgb = ffi.new("uint8_t[?]", w[0] * h[0] * 3) }, Image)
  ffi.copy(img.rgb, data, w[0] * h[0] * 3)
  C.cqh_png_free(data)
  return img
end

return M
