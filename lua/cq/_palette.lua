-- Private: robot images for robot:image (the palette): PNG pixels (read by the host, engine/host/png.c) classified into
-- empty, passive body and actuator k. Errors name the file and the problem at the user's line.
local ffi = require "ffi"
local check = require "cq._check"
require "cq._ffi" -- declares cqh_png_* (engine/host/png.h)

local M = {}

-- The default palette: actuator k is the k-th colour, matched by hue (an antialiased or shaded red is still red).
M.PALETTE = { { 255, 0, 0 }, { 0, 255, 0 }, { 0, 0, 255 }, { 255, 255, 0 }, { 255, 0, 255 }, { 0, 255, 255 } }
M.PALETTE_NAMES = { "red", "green", "blue", "yellow", "magenta", "cyan" }
M.ALPHA_MIN = 128     -- alpha below this: empty (transparent)
M.CHROMA_MIN = 64     -- max - min of r, g, b below this: a grey (empty when light, body when dark)
M.LIGHT_MIN = 192     -- a grey whose brightest channel is at least this is background (white, light grey): empty
M.HUE_TOLERANCE = 30  -- degrees between a coloured pixel's hue and its palette colour's, at most
M.MAX_PIXELS = 2 ^ 26 -- a PNG header may claim any size: bigger images are refused before decoding
M.EMPTY, M.BODY = 0, -1

--- Hue in degrees [0, 360) of an RGB colour, nil for a grey.
function M.hue(r, g, b)
  local hi, lo = math.max(r, g, b), math.min(r, g, b)
  local c = hi - lo
  if c == 0 then return nil end
  local h
  if hi == r then h = ((g - b) / c) % 6
  elseif hi == g then h = (b - r) / c + 2
  else h = (r - g) / c + 4 end
  return h * 60
end

local function hue_distance(a, b)
  local d = math.abs(a - b) % 360
  return math.min(d, 360 - d)
end

--- The palette's hues, after checking a user palette: a list of saturated {r, g, b} colours.
function M.hues(where, palette)
  if type(palette) ~= "table" or #palette == 0 then
    check.fail(where, "palette must be a non-empty list of {r, g, b} colours (actuator k = palette[k])", palette)
  end
  local hues = {}
  for k, c in ipairs(palette) do
    check.vector(where, "palette[" .. k .. "]", c, 3)
    for i = 1, 3 do check.integer(where, "palette[" .. k .. "][" .. i .. "]", c[i], 0, 255) end
    if math.max(c[1], c[2], c[3]) - math.min(c[1], c[2], c[3]) < M.CHROMA_MIN then
      check.fail(where, string.format("palette[%d] must be a saturated colour (max - min of r, g, b >= %d; greys are " ..
        "the body or empty)", k, M.CHROMA_MIN), check.shown(check.list_text(c)))
    end
    hues[k] = M.hue(c[1], c[2], c[3])
  end
  return hues
end

--- What a pixel is: M.EMPTY, M.BODY, an actuator number k (the palette colour of nearest hue, the lower k on a tie),
--- or nil for a colour no palette hue is within HUE_TOLERANCE degrees of.
function M.classify(r, g, b, a, hues)
  if a < M.ALPHA_MIN then return M.EMPTY end
  local hi, lo = math.max(r, g, b), math.min(r, g, b)
  if hi - lo < M.CHROMA_MIN then return hi >= M.LIGHT_MIN and M.EMPTY or M.BODY end
  local h, best, best_d = M.hue(r, g, b), nil, math.huge
  for k, hk in ipairs(hues) do
    local d = hue_distance(h, hk)
    if d < best_d then best, best_d = k, d end
  end
  if best_d > M.HUE_TOLERANCE then return nil end
  return best
end

--- The pixels of a PNG file or of a cq.frames image: { w, h, rgba = uint8_t[w*h*4] (top row first) }.
function M.load(where, path, image)
  if (path == nil) == (image == nil) then
    check.fail(where, "give either path (a PNG file) or image (a cq.frames image)", path == nil and "neither" or "both")
  end
  if image ~= nil then
    if type(image) ~= "table" or type(image.w) ~= "number" or type(image.rgb) ~= "cdata" then
      check.fail(where, "image must be a cq.frames image (cq.frames.image or cq.frames.read)", image)
    end
    local n = image.w * image.h
    local rgba = ffi.new("uint8_t[?]", 4 * n)
    for i = 0, n - 1 do
      rgba[4 * i], rgba[4 * i + 1], rgba[4 * i + 2], rgba[4 * i + 3] = image.rgb[3 * i], image.rgb[3 * i + 1],
        image.rgb[3 * i + 2], 255
    end
    return { w = image.w, h = image.h, rgba = rgba }
  end
  if type(path) ~= "string" or path == "" then check.fail(where, "path must be a PNG file name", path) end
  if not pcall(function() return ffi.C.cqh_png_read_rgba end) then
    check.raise(where .. ": cqh_png_read_rgba is not available: run the script with build/bin/cqlua (make)")
  end
  local w, h, err = ffi.new("int[1]"), ffi.new("int[1]"), ffi.new("char[512]")
  local data = ffi.C.cqh_png_read_rgba(path, M.MAX_PIXELS, w, h, err, 512)
  if data == nil then check.raise(string.format("%s: %s: %s", where, path, ffi.string(err))) end
  local n = w[0] * h[0]
  local rgba = ffi.new("uint8_t[?]", 4 * n)
  ffi.copy(rgba, data, 4 * n)
  ffi.C.cqh_png_free(data)
  return { w = w[0], h = h[0], rgba = rgba }
end

--- Classifies the lattice points of an nx x ny lattice over the image (cell cx x cy, the image spanning
--- w * scale x h * scale): a list per class (EMPTY is dropped, BODY and 1..#hues kept) of {ix, iy}, in lattice order
--- (first axis slowest). A colour outside the palette is an error naming its pixel.
function M.classify_lattice(where, name, pic, hues, scale, nx, ny, cx, cy)
  local classes, cache = {}, {}
  for ix = 0, nx - 1 do
    local col = math.min(pic.w - 1, math.floor((ix + 0.5) * cx / scale))
    for iy = 0, ny - 1 do
      local row = pic.h - 1 - math.min(pic.h - 1, math.floor((iy + 0.5) * cy / scale)) -- rows count from the top
      local o = 4 * (row * pic.w + col)
      local r, g, b, a = pic.rgba[o], pic.rgba[o + 1], pic.rgba[o + 2], pic.rgba[o + 3]
      local key = ((r * 256 + g) * 256 + b) * 256 + a
      local class = cache[key]
      if class == nil then
        class = M.classify(r, g, b, a, hues)
        if class == nil then
          check.raise(string.format("%s: %s: pixel (%d, %d) (column, row from the top) has the colour #%02X%02X%02X, " ..
            "which is neither white/transparent (empty), grey/black (body) nor within %d degrees of hue of a palette " ..
            "colour; use pure palette colours or pass palette = {...}", where, name, col, row, r, g, b, M.HUE_TOLERANCE))
        end
        cache[key] = class
      end
      if class ~= M.EMPTY then
        classes[class] = classes[class] or {}
        local list = classes[class]
        list[#list + 1] = { ix, iy }
      end
    end
  end
  return classes
end

return M
