-- 3D frames: a software renderer of particles as shaded sphere splats in a z-buffer, over a checkered floor (the
-- floor wall, axis 2 = y up) with soft shadows, seen by a perspective or orthographic camera that frames the robot
-- by default. cq.frames.render_state / cq.frames.write call it for 3D worlds.
local ffi = require "ffi"
local check = require "cq._check"

local M = {}
M.CAMERA_OPTIONS = check.option_set("cq.frames camera", { "eye", "target", "up", "azimuth", "elevation", "distance",
  "fov", "orthographic", "follow" })

local SKY_TOP, SKY_HORIZON = { 200, 214, 232 }, { 246, 247, 250 }
local TILE_A, TILE_B, OUTSIDE, GRID_LINE = { 222, 222, 216 }, { 204, 204, 198 }, { 190, 190, 186 }, { 150, 150, 146 }
local LIGHT = { -0.35, 1.0, 0.45 } -- towards the key light: above, a little left and in front
local AMBIENT, DIFFUSE, SPECULAR = 0.38, 0.62, 0.22 -- specular exponent 32 (splat squares five times)
local SHADOW = 0.42                  -- darkening of the floor under a full shadow
local OUTLINE = 0.6                  -- brightness of silhouette pixels
local FILL = 0.82                    -- fraction of the image the automatic camera gives the robot

local function dot(a, b) return a[1] * b[1] + a[2] * b[2] + a[3] * b[3] end
local function cross(a, b) return { a[2] * b[3] - a[3] * b[2], a[3] * b[1] - a[1] * b[3], a[1] * b[2] - a[2] * b[1] } end
local function scaled(a, s) return { a[1] * s, a[2] * s, a[3] * s } end
local function add(a, b) return { a[1] + b[1], a[2] + b[2], a[3] + b[3] } end
local function sub(a, b) return { a[1] - b[1], a[2] - b[2], a[3] - b[3] } end
local function unit(a) local l = math.sqrt(dot(a, a)); return scaled(a, 1 / l) end

---------------------------------------------------------------- camera
local Camera = {}
Camera.__index = Camera

-- Orients the camera: eye, forward (unit), right, up from eye, target and the world's up.
local function orient(cam, eye, target, up)
  cam.eye, cam.target = eye, target
  cam.fwd = unit(sub(target, eye))
  local r = cross(cam.fwd, up)
  if dot(r, r) < 1e-12 then r = cross(cam.fwd, { 0, 0, -1 }) end -- looking straight down: keep x to the right
  cam.right = unit(r)
  cam.up = cross(cam.right, cam.fwd)
end

--- Pixel coordinates (fractional, 0 at the left / top edge) and camera depth of world point (x, y, z); nil behind
--- the camera.
function Camera:to_pixel(x, y, z)
  local d = { x - self.eye[1], y - self.eye[2], z - self.eye[3] }
  local zc = dot(d, self.fwd)
  if self.ortho then return self.cx + self.scale * dot(d, self.right), self.cy - self.scale * dot(d, self.up), zc end
  if zc <= 1e-9 then return nil end
  return self.cx + self.f * dot(d, self.right) / zc, self.cy - self.f * dot(d, self.up) / zc, zc
end

-- Direction from the target to the eye for azimuth / elevation in degrees: azimuth 0 looks from the front (+z)
-- towards -z, positive azimuth moves the eye towards +x; elevation is the angle above the floor plane.
local function eye_direction(az, el)
  az, el = math.rad(az), math.rad(el)
  return { math.cos(el) * math.sin(az), math.sin(el), math.cos(el) * math.cos(az) }
end

-- Projected pixel bounds of the 8 corners of box {lo, hi}.
local function projected_bounds(cam, lo, hi)
  local i0, i1, j0, j1 = math.huge, -math.huge, math.huge, -math.huge
  for c = 0, 7 do
    local x = c % 2 == 0 and lo[1] or hi[1]
    local y = math.floor(c / 2) % 2 == 0 and lo[2] or hi[2]
    local z = math.floor(c / 4) == 0 and lo[3] or hi[3]
    local i, j = cam:to_pixel(x, y, z)
    if not i then return nil end
    i0, i1, j0, j1 = math.min(i0, i), math.max(i1, i), math.min(j0, j), math.max(j1, j)
  end
  return i0, i1, j0, j1
end

--- The camera for image w x h from the camera options (checked here) and the box {lo, hi} to frame.
function M.camera(where, opts, w, h, lo, hi)
  opts = opts or {}
  if type(opts) ~= "table" then check.fail(where, "camera must be a table of camera options", opts) end
  check.options(where .. " camera", opts, M.CAMERA_OPTIONS)
  local cam = setmetatable({ dim = 3, w = w, h = h, cx = w / 2, cy = h / 2 }, Camera)
  local up = opts.up and check.vector(where, "camera.up", opts.up, 3) or { 0, 1, 0 }
  if dot(up, up) == 0 then check.fail(where, "camera.up must not be zero", "{0, 0, 0}") end
  local fov = check.number(where, "camera.fov", opts.fov or 30, 1, 170)
  cam.ortho = opts.orthographic and true or false
  if opts.orthographic ~= nil and type(opts.orthographic) ~= "boolean" then
    check.fail(where, "camera.orthographic must be true or false", opts.orthographic)
  end
  if opts.follow ~= nil and type(opts.follow) ~= "boolean" then
    check.fail(where, "camera.follow must be true or false", opts.follow)
  end
  cam.follow = opts.follow
  cam.f = (h / 2) / math.tan(math.rad(fov) / 2)
  local center = scaled(add(lo, hi), 0.5)
  local radius = math.max(0.5 * math.sqrt(dot(sub(hi, lo), sub(hi, lo))), 1e-6)
  local target = opts.target and check.vector(where, "camera.target", opts.target, 3) or center
  if opts.eye then
    check.vector(where, "camera.eye", opts.eye, 3)
    for _, k in ipairs { "azimuth", "elevation", "distance" } do
      if opts[k] ~= nil then check.fail(where, "camera." .. k .. " cannot be combined with camera.eye", opts[k]) end
    end
    if dot(sub(target, opts.eye), sub(target, opts.eye)) == 0 then
      check.fail(where, "camera.eye must differ from camera.target", "the same point")
    end
    orient(cam, opts.eye, target, up)
    if cam.ortho then
      local i0, i1, j0, j1
      cam.scale = 1
      i0, i1, j0, j1 = projected_bounds(cam, lo, hi)
      cam.scale = FILL * math.min(w / math.max(i1 - i0, 1e-12), h / math.max(j1 - j0, 1e-12))
    end
    return cam
  end
  local dir = eye_direction(check.number(where, "camera.azimuth", opts.azimuth or 35),
    check.number(where, "camera.elevation", opts.elevation or 22, -89, 89))
  local d = opts.distance and check.number(where, "camera.distance", opts.distance, 0, math.huge, { open_lo = true })
    or radius / math.sin(math.rad(fov) / 2)
  cam.scale = FILL * math.min(w, h) / (2 * radius)
  -- refine: centre the projected box and size it to FILL of the image (a few fixed-point steps)
  for _ = 1, 6 do
    orient(cam, add(target, scaled(dir, cam.ortho and 4 * radius or d)), target, up)
    local i0, i1, j0, j1 = projected_bounds(cam, lo, hi)
    if not i0 then break end
    local depth = cam.ortho and 1 or d
    local per_pixel = cam.ortho and 1 / cam.scale or depth / cam.f
    if not opts.target then
      target = add(target, add(scaled(cam.right, ((i0 + i1) / 2 - cam.cx) * per_pixel),
        scaled(cam.up, -((j0 + j1) / 2 - cam.cy) * per_pixel)))
    end
    local need = math.max((i1 - i0) / (FILL * w), (j1 - j0) / (FILL * h))
    if need <= 0 then break end
    if cam.ortho then cam.scale = cam.scale / need elseif not opts.distance then d = d * need end
  end
  orient(cam, add(target, scaled(dir, cam.ortho and 4 * radius or d)), target, up)
  return cam
end

--- The camera moved by offset (follow mode).
function Camera:moved(offset)
  local c = setmetatable({}, Camera)
  for k, v in pairs(self) do c[k] = v end
  c.eye, c.target = add(self.eye, offset), add(self.target, offset)
  return c
end

---------------------------------------------------------------- background: sky, floor, shadow cells
local function mixc(a, b, t) return a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t, a[3] + (b[3] - a[3]) * t end

-- Per camera: the RGB of sky and floor, their depth (floor) or +inf (sky), and for each floor pixel the shadow
-- cell below it (-1: none) with its position inside the cell (for bilinear shadow lookups).
local function background(cfg, cam)
  local W, H = cfg.W, cfg.H
  local bg = { rgb = ffi.new("uint8_t[?]", W * H * 3), z = ffi.new("float[?]", W * H), cell = ffi.new("int32_t[?]", W * H),
    fu = ffi.new("float[?]", W * H), fv = ffi.new("float[?]", W * H) }
  local fh, Lx, Lz, g = cfg.floor_y, cfg.Lx, cfg.Lz, cfg.tile
  local sc = cfg.shadow
  local e, fw, rt, up = cam.eye, cam.fwd, cam.right, cam.up
  local ref = math.sqrt(dot(sub(cam.target, e), sub(cam.target, e))) -- fog starts past the target
  for j = 0, H - 1 do
    for i = 0, W - 1 do
      local a, b = (i + 0.5 - cam.cx), -(j + 0.5 - cam.cy)
      local ox, oy, oz, dx, dy, dz
      if cam.ortho then
        a, b = a / cam.scale, b / cam.scale
        ox, oy, oz = e[1] + rt[1] * a + up[1] * b, e[2] + rt[2] * a + up[2] * b, e[3] + rt[3] * a + up[3] * b
        dx, dy, dz = fw[1], fw[2], fw[3]
      else
        a, b = a / cam.f, b / cam.f
        ox, oy, oz = e[1], e[2], e[3]
        dx, dy, dz = fw[1] + rt[1] * a + up[1] * b, fw[2] + rt[2] * a + up[2] * b, fw[3] + rt[3] * a + up[3] * b
      end
      local idx = j * W + i
      local r, gg, bb
      local t = (cfg.floor and dy < 0) and (fh - oy) / dy or -1
      bg.cell[idx] = -1
      if t > 0 then
        local px, pz = ox + dx * t, oz + dz * t
        bg.z[idx] = t -- camera depth: the ray's forward component is 1
        local c
        if px >= 0 and px <= Lx and pz >= 0 and pz <= Lz then
          local ti, tk = math.floor(px / g), math.floor(pz / g)
          c = (ti + tk) % 2 == 0 and TILE_A or TILE_B
          -- grid lines, anti-aliased over the pixel's footprint on the floor
          local grazing = math.max(math.abs(dy) / math.sqrt(dx * dx + dy * dy + dz * dz), 0.05)
          local foot = (cam.ortho and 1 / cam.scale or t / cam.f) / grazing
          local dl = math.min(math.abs(px / g - math.floor(px / g + 0.5)), math.abs(pz / g - math.floor(pz / g + 0.5))) * g
          local line = math.max(0, 1 - dl / math.max(0.6 * foot, 1e-12)) * math.min(1, 0.5 * g / foot)
          r, gg, bb = mixc(c, GRID_LINE, line * 0.8)
          if sc then
            local u, v = px / sc.size - 0.5, pz / sc.size - 0.5 -- relative to the cell centres
            local ci, ck = math.floor(u), math.floor(v)
            if ci >= 0 and ck >= 0 and ci < sc.nx - 1 and ck < sc.nz - 1 then
              bg.cell[idx], bg.fu[idx], bg.fv[idx] = ci * sc.nz + ck, u - ci, v - ck
            end
          end
        else
          r, gg, bb = OUTSIDE[1], OUTSIDE[2], OUTSIDE[3]
        end
        local fog = math.max(0, math.min(0.9, (t / ref - 1.3) / 3))
        r, gg, bb = mixc({ r, gg, bb }, SKY_HORIZON, fog)
      else
        bg.z[idx] = math.huge
        local up_t = math.max(0, math.min(1, dy / math.sqrt(dx * dx + dy * dy + dz * dz) * 2.5))
        r, gg, bb = mixc(SKY_HORIZON, SKY_TOP, up_t)
      end
      bg.rgb[3 * idx], bg.rgb[3 * idx + 1], bg.rgb[3 * idx + 2] = r + 0.5, gg + 0.5, bb + 0.5
    end
  end
  return bg
end

---------------------------------------------------------------- setup and drawing
--- The 3D drawing configuration of render_state / write options for world w, framing box {lo, hi} (the particles'
--- bounds). Checks the 3D options; the colouring is set by the caller (cfg.spec).
function M.setup(where, opts, w, lo, hi)
  local width = check.integer(where, "width", opts.width or 640, 8, 16384)
  local height = check.integer(where, "height", opts.height or math.floor(width * 3 / 4 + 0.5), 8, 16384)
  local ss = check.integer(where, "supersample", opts.supersample or 1, 1, 4)
  if opts.view ~= nil then
    check.vector(where, "view", opts.view, 6)
    local v = opts.view
    if not (v[4] > v[1] and v[5] > v[2] and v[6] > v[3]) then
      check.fail(where, "view must be {x0, y0, z0, x1, y1, z1} with x1 > x0, y1 > y0, z1 > z0 in 3D",
        table.concat(v, ", "))
    end
    lo, hi = { v[1], v[2], v[3] }, { v[4], v[5], v[6] }
  end
  local boundary = check.number(where, "boundary", opts.boundary or 3, 0, math.max(w.res[1], w.res[2], w.res[3]))
  local vol = 0
  for p = 0, w.n - 1 do vol = vol + w.params.vol0[p] end
  local radius = opts.radius and check.number(where, "radius", opts.radius, 0, math.huge, { open_lo = true })
    or 0.6 * math.min((vol / w.n) ^ (1 / 3), w.dx)
  local cfg = { world = w, width = width, height = height, ss = ss, W = width * ss, H = height * ss, radius = radius,
    Lx = w.res[1] * w.dx, Lz = w.res[3] * w.dx, floor = boundary > 0, floor_y = boundary * w.dx,
    targets = opts.targets or {} }
  if type(cfg.targets) ~= "table" then check.fail(where, "targets must be a list of points {x, y, z}", cfg.targets) end
  for i, t in ipairs(cfg.targets) do check.vector(where, "targets[" .. i .. "]", t, 3) end
  if cfg.floor then lo = { lo[1], math.min(lo[2], cfg.floor_y), lo[3] } end -- show where the robot stands
  cfg.camera = M.camera(where, opts.camera, cfg.W, cfg.H, lo, hi)
  -- floor tiles: a round length giving about 10-20 tiles across the framed box
  local span = math.max(hi[1] - lo[1], hi[3] - lo[3], 1e-9)
  local tile = 10 ^ math.floor(math.log10(span / 4))
  if span / tile > 20 then tile = tile * 5 elseif span / tile > 8 then tile = tile * 2 end
  cfg.tile = tile
  local size = math.max(2 * radius, math.max(cfg.Lx, cfg.Lz) / 1024)
  cfg.shadow = { size = size, nx = math.ceil(cfg.Lx / size), nz = math.ceil(cfg.Lz / size) }
  cfg.shadow.count = ffi.new("float[?]", cfg.shadow.nx * cfg.shadow.nz)
  cfg.shadow.soft = ffi.new("float[?]", cfg.shadow.nx * cfg.shadow.nz)
  cfg.z = ffi.new("float[?]", cfg.W * cfg.H)
  cfg.mask = ffi.new("uint8_t[?]", cfg.W * cfg.H)
  return cfg
end

-- Soft shadow amounts per floor cell: particles projected along the light onto the floor, counted per cell and
-- spread over the neighbouring cells.
local function cast_shadows(cfg, x, n)
  local sc = cfg.shadow
  local nx, nz, size, count, soft = sc.nx, sc.nz, sc.size, sc.count, sc.soft
  ffi.fill(count, 4 * nx * nz)
  ffi.fill(soft, 4 * nx * nz)
  local L = unit(LIGHT)
  local lx, lz, fh = L[1] / L[2], L[3] / L[2], cfg.floor_y
  for p = 0, n - 1 do
    local h = x[n + p] - fh
    if h > -size then
      local ci, ck = math.floor((x[p] - lx * h) / size), math.floor((x[2 * n + p] - lz * h) / size)
      if ci >= 0 and ck >= 0 and ci < nx and ck < nz then count[ci * nz + ck] = count[ci * nz + ck] + 1 end
    end
  end
  for ci = 0, nx - 1 do
    for ck = 0, nz - 1 do
      local c = count[ci * nz + ck]
      if c > 0 then
        for a = -1, 1 do
          for b = -1, 1 do
            local i, k = ci + a, ck + b
            if i >= 0 and k >= 0 and i < nx and k < nz then
              local wgt = (a == 0 and 0.5 or 0.25) * (b == 0 and 0.5 or 0.25)
              soft[i * nz + k] = soft[i * nz + k] + c * wgt
            end
          end
        end
      end
    end
  end
end

-- The particles ordered front to back (a counting sort of their camera depths), so that the z-buffer rejects most
-- hidden ones before shading them.
local function front_to_back(cfg, cam, x, n)
  local e, fw = cam.eye, cam.fwd
  if not cfg.order or cfg.order_n ~= n then
    cfg.order, cfg.depth, cfg.order_n = ffi.new("int32_t[?]", n), ffi.new("double[?]", n), n
    cfg.bucket = ffi.new("int32_t[?]", 1025)
  end
  local order, depth, bucket = cfg.order, cfg.depth, cfg.bucket
  local lo, hi = math.huge, -math.huge
  for p = 0, n - 1 do
    local d = (x[p] - e[1]) * fw[1] + (x[n + p] - e[2]) * fw[2] + (x[2 * n + p] - e[3]) * fw[3]
    depth[p] = d
    if d < lo then lo = d end
    if d > hi then hi = d end
  end
  local scale = hi > lo and 1023.999 / (hi - lo) or 0
  ffi.fill(bucket, 4 * 1025)
  for p = 0, n - 1 do local b = math.floor((depth[p] - lo) * scale) + 1; bucket[b] = bucket[b] + 1 end
  for b = 1, 1024 do bucket[b] = bucket[b] + bucket[b - 1] end -- bucket[b]: particles in buckets before b
  for p = 0, n - 1 do
    local b = math.floor((depth[p] - lo) * scale)
    order[bucket[b]] = p
    bucket[b] = bucket[b] + 1
  end
  return order
end

-- Splats every particle as a shaded sphere into rgb / z / mask.
local function splat(cfg, cam, rgb, x, n, color_of)
  local W, H, z, mask, R = cfg.W, cfg.H, cfg.z, cfg.mask, cfg.radius
  local e, fw, rt, up = cam.eye, cam.fwd, cam.right, cam.up
  local L = unit(LIGHT)
  local lx, ly, lz = dot(L, rt), dot(L, up), dot(L, fw) -- light in camera coordinates (x right, y up, z forward)
  local hx, hy, hz = lx, ly, lz - 1                      -- half vector towards the viewer (0, 0, -1)
  local hl = math.sqrt(hx * hx + hy * hy + hz * hz)
  hx, hy, hz = hx / hl, hy / hl, hz / hl
  local ortho, f, s, cx, cy = cam.ortho, cam.f, cam.scale, cam.cx, cam.cy
  local ref = math.sqrt(dot(sub(cam.target, e), sub(cam.target, e)))
  local order = front_to_back(cfg, cam, x, n)
  for q = 0, n - 1 do
    local p = order[q]
    local dx, dy, dz = x[p] - e[1], x[n + p] - e[2], x[2 * n + p] - e[3]
    local zc = dx * fw[1] + dy * fw[2] + dz * fw[3]
    if ortho or zc > R then
      local xc, yc = dx * rt[1] + dy * rt[2] + dz * rt[3], dx * up[1] + dy * up[2] + dz * up[3]
      local sx, sy, rp
      if ortho then sx, sy, rp = cx + s * xc, cy - s * yc, s * R
      else sx, sy, rp = cx + f * xc / zc, cy - f * yc / zc, f * R / zc end
      local i0, i1 = math.max(0, math.floor(sx - rp)), math.min(W - 1, math.floor(sx + rp))
      local j0, j1 = math.max(0, math.floor(sy - rp)), math.min(H - 1, math.floor(sy + rp))
      if i0 <= i1 and j0 <= j1 then
        local c = color_of(p + 1)
        local depth_fade = 1 - 0.25 * math.max(0, math.min(1, (zc / ref - 1) * 2))
        local cr, cg, cb = c[1] * depth_fade, c[2] * depth_fade, c[3] * depth_fade
        local inv, front = 1 / math.max(rp, 0.5), zc - R
        for j = j0, j1 do
          local ddy = (j + 0.5 - sy) * inv
          local half = rp < 0.75 and rp + 1 or rp * math.sqrt(math.max(0, 1 - ddy * ddy)) -- the disc's row span
          for i = math.max(i0, math.ceil(sx - half - 0.5)), math.min(i1, math.floor(sx + half - 0.5)) do
            local idx = j * W + i
            if front < z[idx] then -- the sphere's nearest point is in front of what is there
              local ddx = (i + 0.5 - sx) * inv
              local nz = math.sqrt(math.max(0, 1 - ddx * ddx - ddy * ddy))
              local depth = zc - R * nz
              if depth < z[idx] then
                z[idx], mask[idx] = depth, 1
                -- normal (ddx, -ddy, -nz) in camera coordinates; Blinn-Phong with the exponent by squaring
                local diff = ddx * lx - ddy * ly - nz * lz
                local spec = ddx * hx - ddy * hy - nz * hz
                local shade = AMBIENT + DIFFUSE * (diff > 0 and diff or 0)
                local hi = 0
                if spec > 0 then
                  spec = spec * spec; spec = spec * spec; spec = spec * spec; spec = spec * spec; spec = spec * spec
                  hi = SPECULAR * 255 * spec
                end
                local o = 3 * idx
                rgb[o] = math.min(255, cr * shade + hi)
                rgb[o + 1] = math.min(255, cg * shade + hi)
                rgb[o + 2] = math.min(255, cb * shade + hi)
              end
            end
          end
        end
      end
    end
  end
end

-- Darkens particle pixels at silhouettes (next to the background, or in front of something much farther away).
local function outline(cfg, rgb)
  local W, H, z, mask, gap = cfg.W, cfg.H, cfg.z, cfg.mask, 2.5 * cfg.radius
  for j = 1, H - 2 do
    for i = 1, W - 2 do
      local idx = j * W + i
      if mask[idx] == 1 then
        local d = z[idx] + gap
        if mask[idx - 1] == 0 or mask[idx + 1] == 0 or mask[idx - W] == 0 or mask[idx + W] == 0 or z[idx - 1] > d or
            z[idx + 1] > d or z[idx - W] > d or z[idx + W] > d then
          local o = 3 * idx
          rgb[o], rgb[o + 1], rgb[o + 2] = rgb[o] * OUTLINE, rgb[o + 1] * OUTLINE, rgb[o + 2] * OUTLINE
        end
      end
    end
  end
end

-- Box-filters the supersampled rgb (W x H) into img (W/ss x H/ss).
local function downsample(cfg, rgb, img)
  local ss, W = cfg.ss, cfg.W
  local norm = 1 / (ss * ss)
  for j = 0, img.h - 1 do
    for i = 0, img.w - 1 do
      local r, g, b = 0, 0, 0
      for a = 0, ss - 1 do
        local o = 3 * ((j * ss + a) * W + i * ss)
        for _ = 0, ss - 1 do r, g, b, o = r + rgb[o], g + rgb[o + 1], b + rgb[o + 2], o + 3 end
      end
      local o = 3 * (j * img.w + i)
      img.rgb[o], img.rgb[o + 1], img.rgb[o + 2] = r * norm + 0.5, g * norm + 0.5, b * norm + 0.5
    end
  end
end

--- Draws one frame (positions x: component-major view of 3n values) into img (cfg.width x cfg.height), colouring
--- particle p (1-based) with color_of(p). Returns the camera used.
function M.draw(cfg, img, x, n, color_of)
  local cam = cfg.camera
  if cam.follow then -- keep the robot's centroid where the first frame had it (horizontally)
    local cxm, czm = 0, 0
    for p = 0, n - 1 do cxm, czm = cxm + x[p], czm + x[2 * n + p] end
    cxm, czm = cxm / n, czm / n
    cfg.follow0 = cfg.follow0 or { cxm, czm }
    cam = cam:moved({ cxm - cfg.follow0[1], 0, czm - cfg.follow0[2] })
  end
  if not cfg.bg or cfg.bg_camera ~= cam then cfg.bg, cfg.bg_camera = background(cfg, cam), cam end
  local W, H, bg = cfg.W, cfg.H, cfg.bg
  local rgb = cfg.ss == 1 and img.rgb or (cfg.big or ffi.new("uint8_t[?]", W * H * 3))
  cfg.big = cfg.ss > 1 and rgb or nil
  ffi.copy(rgb, bg.rgb, W * H * 3)
  ffi.copy(cfg.z, bg.z, 4 * W * H)
  ffi.fill(cfg.mask, W * H)
  if cfg.floor then
    cast_shadows(cfg, x, n)
    local soft, cell, fu, fv, nz = cfg.shadow.soft, bg.cell, bg.fu, bg.fv, cfg.shadow.nz
    for idx = 0, W * H - 1 do
      local c = cell[idx]
      if c >= 0 and soft[c] + soft[c + 1] + soft[c + nz] + soft[c + nz + 1] > 0 then
        local a, b = fu[idx], fv[idx]
        local sh = (1 - a) * ((1 - b) * soft[c] + b * soft[c + 1]) + a * ((1 - b) * soft[c + nz] + b * soft[c + nz + 1])
        local k = 1 - SHADOW * math.min(1, sh)
        local o = 3 * idx
        rgb[o], rgb[o + 1], rgb[o + 2] = rgb[o] * k, rgb[o + 1] * k, rgb[o + 2] * k
      end
    end
  end
  splat(cfg, cam, rgb, x, n, color_of)
  outline(cfg, rgb)
  if cfg.ss > 1 then downsample(cfg, rgb, img) end
  -- the camera of the output image (supersampling divides its pixel measures), and the targets as green crosses
  local view = setmetatable({}, Camera)
  for k, v in pairs(cam) do view[k] = v end
  view.w, view.h, view.cx, view.cy, view.f = img.w, img.h, cam.cx / cfg.ss, cam.cy / cfg.ss, cam.f / cfg.ss
  view.scale = cam.scale and cam.scale / cfg.ss
  local green = { 0, 150, 60 }
  local m = math.max(3, math.floor(img.w / 100))
  for _, t in ipairs(cfg.targets) do
    local fi, fj = view:to_pixel(t[1], t[2], t[3])
    if fi then
      local ci, cj = math.floor(fi), math.floor(fj)
      for d = -m, m do
        img:set(ci + d, cj, green); img:set(ci, cj + d, green)
        img:set(ci + d, cj + 1, green); img:set(ci + 1, cj + d, green)
      end
    end
  end
  return view
end

--- Bounds {lo}, {hi} of positions x (3n, component-major), widened by an earlier lo, hi.
function M.bounds(x, n, lo, hi)
  lo = lo or { math.huge, math.huge, math.huge }
  hi = hi or { -math.huge, -math.huge, -math.huge }
  for a = 0, 2 do
    local l, h = lo[a + 1], hi[a + 1]
    for p = a * n, a * n + n - 1 do
      local v = x[p]
      if v < l then l = v end
      if v > h then h = v end
    end
    lo[a + 1], hi[a + 1] = l, h
  end
  return lo, hi
end

return M
