-- Private: the pictures of design:picture and design:signals_plot (lua/cq/design.lua). A layout picture has one
-- panel per layout (the material layout gamma through a colour map with a colour bar; the actuator layout in
-- cq.frames' PALETTE, actuator j = PALETTE[j], with a legend), each particle a square (2D, or a slice through a 3D
-- body) or a shaded sphere (3D: cq.render3d, the frames' renderer). A signals plot stacks one panel per actuation
-- signal, drawn in the same colours. Text is the frames' 5x7 pixel font (lua/cq/_font.lua); both return a
-- cq.frames image.
local ffi = require "ffi"
local check = require "cq._check"
local colors = require "cq._colors"
local font = require "cq._font"
local image = require "cq._image"
local fs = require "cq._fs"

local M = {}

local BLACK, TEXT, FRAME, GRID, ZERO = { 0, 0, 0 }, { 40, 40, 40 }, { 150, 150, 150 }, { 228, 228, 228 },
  { 160, 160, 160 }

--- The colour of actuator j (1-based; 0 = the passive column): cq.frames' PALETTE, as for groups.
function M.actuator_color(j)
  if j == nil or j <= 0 then return colors.PASSIVE end
  return colors.PALETTE[(j - 1) % #colors.PALETTE + 1]
end

--- Colour c faded towards white by 1 - g (g = gamma in [0, 1]: a void particle is white, a solid one c).
function M.fade(c, g)
  g = math.max(0, math.min(1, g))
  return { math.floor(255 - g * (255 - c[1]) + 0.5), math.floor(255 - g * (255 - c[2]) + 0.5),
    math.floor(255 - g * (255 - c[3]) + 0.5) }
end

--- Per-particle colours (1-based list of n) of a layout's data { gamma_of[p], act_of[p] } (see design.lua):
--- "material": gamma through the colour map over [0, 1]; "actuators": the actuator of largest weight, faded by gamma
--- when fade. Particles outside the layout are PASSIVE.
function M.particle_colors(n, what, data, colormap, fade)
  local out = {}
  for p = 1, n do
    local g = data.gamma_of[p]
    if what == "material" then out[p] = g and colors.map(colormap, g, 0, 1) or colors.PASSIVE
    else
      local c = M.actuator_color(data.act_of[p])
      out[p] = (fade and g) and M.fade(c, g) or c
    end
  end
  return out
end

---------------------------------------------------------------- drawing helpers
local function fill_rect(img, i0, j0, w, h, c)
  for j = j0, j0 + h - 1 do for i = i0, i0 + w - 1 do img:set(i, j, c) end end
end

local function rect_outline(img, i0, j0, w, h, c)
  for i = i0, i0 + w - 1 do img:set(i, j0, c); img:set(i, j0 + h - 1, c) end
  for j = j0, j0 + h - 1 do img:set(i0, j, c); img:set(i0 + w - 1, j, c) end
end

-- text cut to at most width pixels at scale s
local function fit(text, width, s)
  local chars = math.floor((width + s) / (6 * s))
  if #text <= chars then return text end
  return text:sub(1, math.max(0, chars))
end

local function text(img, str, i, j, c, s, width)
  if width then str = fit(str, width, s) end
  font.draw(img, str, i, j, c, s)
  return font.width(str, s)
end

-- Copies image src into dst with its top-left corner at (i0, j0), clipped.
local function blit(dst, src, i0, j0)
  for j = 0, src.h - 1 do
    local dj = j0 + j
    if dj >= 0 and dj < dst.h then
      local a, b = math.max(0, -i0), math.min(src.w, dst.w - i0)
      if b > a then ffi.copy(dst.rgb + 3 * (dj * dst.w + i0 + a), src.rgb + 3 * (j * src.w + a), 3 * (b - a)) end
    end
  end
end

-- A line from (x0, y0) to (x1, y1) (fractional pixels) with a square brush of half-width r.
local function line(img, x0, y0, x1, y1, c, r)
  local n = math.max(1, math.ceil(math.max(math.abs(x1 - x0), math.abs(y1 - y0))))
  for k = 0, n do
    local x, y = math.floor(x0 + (x1 - x0) * k / n), math.floor(y0 + (y1 - y0) * k / n)
    for dj = -r, r do for di = -r, r do img:set(x + di, y + dj, c) end end
  end
end

-- A round number step giving about `count` intervals over span (1, 2 or 5 times a power of ten).
local function nice_step(span, count)
  local raw = span / count
  local p = 10 ^ math.floor(math.log10(raw))
  for _, m in ipairs { 1, 2, 5, 10 } do if m * p >= raw then return m * p end end
  return 10 * p
end

local function tick_label(v, step)
  if math.abs(v) < 1e-9 * step then return "0" end
  local digits = math.max(0, -math.floor(math.log10(step) + 1e-9))
  if math.abs(v) >= 1e5 or math.abs(v) < 1e-3 then return colors.label(v) end
  return string.format("%." .. digits .. "f", v)
end

---------------------------------------------------------------- the layout picture
-- The two in-plane axes of a slice across axis a (1-based): right, up.
local IN_PLANE = { [1] = { 3, 2 }, [2] = { 1, 3 }, [3] = { 1, 2 } }
local AXIS_NAME = { "X", "Y", "Z" }

-- Particles as squares of side 2 half_side (length) over a white panel (the cells of a lattice body meet without
-- gaps), the bounds of {u, v} fitted into the panel (aspect kept, centred).
local function draw_flat(img, pts, spacing, half_side)
  local ulo, uhi, vlo, vhi = math.huge, -math.huge, math.huge, -math.huge
  for _, q in ipairs(pts) do
    ulo, uhi, vlo, vhi = math.min(ulo, q[1]), math.max(uhi, q[1]), math.min(vlo, q[2]), math.max(vhi, q[2])
  end
  if #pts == 0 then return end
  local pad = spacing
  local s = math.min(img.w / (uhi - ulo + 2 * pad), img.h / (vhi - vlo + 2 * pad))
  local ox = img.w / 2 - (ulo + uhi) / 2 * s
  local oy = img.h / 2 + (vlo + vhi) / 2 * s
  local half = math.max(0.5, half_side * s)
  for _, q in ipairs(pts) do
    local cx, cy = ox + q[1] * s, oy - q[2] * s
    local c = q[3]
    for j = math.floor(cy - half + 0.5), math.floor(cy + half + 0.5) do
      for i = math.floor(cx - half + 0.5), math.floor(cx + half + 0.5) do img:set(i, j, c) end
    end
  end
end

-- The aspect (height / width) of the padded bounds of pts.
local function flat_aspect(pts, spacing)
  local ulo, uhi, vlo, vhi = math.huge, -math.huge, math.huge, -math.huge
  for _, q in ipairs(pts) do
    ulo, uhi, vlo, vhi = math.min(ulo, q[1]), math.max(uhi, q[1]), math.min(vlo, q[2]), math.max(vhi, q[2])
  end
  if #pts == 0 then return 0.75 end
  return (vhi - vlo + 2 * spacing) / (uhi - ulo + 2 * spacing)
end

-- The legend of a panel, drawn (when img) or measured (img nil) in a strip of width w from (i0, j0); returns its
-- height and, when drawn, its entries { label, color, i, j } (a pixel inside each swatch) and colour bar.
local function legend(img, panel, i0, j0, w, s)
  local pad, lh = 4 * s, 7 * s
  local entries = {}
  if panel.kind == "material" then
    local bar_h = 10 * s
    if img then
      local x = i0 + pad
      x = x + text(img, "GAMMA", x, j0 + pad + math.floor((bar_h - lh) / 2), TEXT, s) + 6 * s
      local l0 = "0"
      x = x + text(img, l0, x, j0 + pad + math.floor((bar_h - lh) / 2), TEXT, s) + 2 * s
      local l1w = font.width("1", s)
      local bw = math.max(16, math.min(200 * s, i0 + w - pad - l1w - 2 * s - x))
      local map = panel.colormap
      for i = 0, bw - 1 do
        local c = colors.map(map, i / (bw - 1), 0, 1)
        for j = 0, bar_h - 1 do img:set(x + i, j0 + pad + j, c) end
      end
      rect_outline(img, x - 1, j0 + pad - 1, bw + 2, bar_h + 2, BLACK)
      text(img, "1", x + bw + 2 * s, j0 + pad + math.floor((bar_h - lh) / 2), TEXT, s)
      local mid = "0.5"
      text(img, mid, x + math.floor(bw / 2) - math.floor(font.width(mid, s) / 2), j0 + pad + bar_h + 2 * s, TEXT, s)
      entries.colorbar = { i0 = x, i1 = x + bw - 1, j = j0 + pad + math.floor(bar_h / 2), range = { 0, 1 },
        colormap = map }
      text(img, panel.range_text, i0 + pad, j0 + pad + bar_h + 3 * s + lh + pad, TEXT, s, w - 2 * pad)
    end
    return pad + bar_h + 3 * s + lh + pad + lh + pad, entries
  end
  -- actuators: swatches and labels, wrapped
  local sw = lh + 2
  local x, y = i0 + pad, j0 + pad
  local function place(width)
    if x + width > i0 + w - pad and x > i0 + pad then x, y = i0 + pad, y + sw + pad end
    local at = x
    x = x + width + 4 * s
    return at, y
  end
  local head = "ACTUATOR"
  local hx, hy = place(font.width(head, s))
  if img then text(img, head, hx, hy + 1, TEXT, s) end
  for _, e in ipairs(panel.entries) do
    local ex, ey = place(sw + 2 * s + font.width(e.label, s))
    if img then
      fill_rect(img, ex, ey, sw, sw, e.color)
      rect_outline(img, ex - 1, ey - 1, sw + 2, sw + 2, BLACK)
      text(img, e.label, ex + sw + 2 * s, ey + 1, TEXT, s)
      entries[#entries + 1] = { label = e.label, color = { e.color[1], e.color[2], e.color[3] },
        i = ex + math.floor(sw / 2), j = ey + math.floor(sw / 2), actuator = e.actuator }
    end
  end
  local h = y - j0 + sw + pad
  if panel.note then
    if img then text(img, panel.note, i0 + pad, j0 + h, TEXT, s, w - 2 * pad) end
    h = h + lh + pad
  end
  return h, entries
end

--- The picture: panels = list of { kind = "material" | "actuators", heading, colors (per particle), visible(p),
--- entries (actuators: { label, color, actuator }), note, colormap, range_text }; x: component-major positions of
--- world w; opts: width, height, slice = { axis (1..3), at (0..1) } or nil, camera, title. Returns the image with
--- .legend (every panel's swatches) and .colorbar.
function M.picture(where, w, x, panels, opts)
  local n, dim = w.n, w.dim
  local np = #panels
  local width = opts.width or 480 * np
  local pw = math.floor(width / np)
  local s = pw >= 360 and 2 or 1
  local pad, lh = 4 * s, 7 * s
  local title_h = opts.title and (lh + 2 * pad + 2 * s) or 0
  local head_h = lh + 2 * pad
  local leg_h = 0
  for _, p in ipairs(panels) do leg_h = math.max(leg_h, (legend(nil, p, 0, 0, pw, s))) end
  -- the mean particle spacing (from the rest volumes) and the sphere radius (3D)
  local vol = 0
  for p = 0, n - 1 do vol = vol + w.params.vol0[p] end
  local spacing = (vol / n) ^ (1 / dim)
  local radius = 0.6 * math.min(spacing, w.dx) -- the frames' spheres (3D)
  -- what each panel draws: 2D and slices: {u, v} points; 3D: the visible particles' positions
  local flat = dim == 2 or opts.slice
  local layer, chosen
  if flat then
    local ua, va = 1, 2
    local keep = nil
    if dim == 3 then
      local a = opts.slice.axis
      ua, va = IN_PLANE[a][1], IN_PLANE[a][2]
      local lo, hi = math.huge, -math.huge
      for p = 0, n - 1 do local v = x[(a - 1) * n + p]; lo, hi = math.min(lo, v), math.max(hi, v) end
      local target, best = lo + opts.slice.at * (hi - lo), nil
      for p = 0, n - 1 do
        local v = x[(a - 1) * n + p]
        if not best or math.abs(v - target) < math.abs(best - target) then best = v end
      end
      keep = {}
      for p = 0, n - 1 do keep[p + 1] = math.abs(x[(a - 1) * n + p] - best) <= 0.5 * spacing + 1e-12 end
      layer = string.format("SLICE %s = %s", AXIS_NAME[a], colors.label(best))
    end
    chosen = { ua = ua, va = va, keep = keep }
  end
  local panel_h
  if opts.height then
    panel_h = opts.height - title_h - head_h - leg_h
    if panel_h < 16 then
      check.fail(where, string.format("height must leave 16 pixels for the drawing (title, headings and legends " ..
        "take %d at this width)", title_h + head_h + leg_h), opts.height)
    end
  elseif flat then
    local pts = {}
    for p = 1, n do
      if not chosen.keep or chosen.keep[p] then
        pts[#pts + 1] = { x[(chosen.ua - 1) * n + p - 1], x[(chosen.va - 1) * n + p - 1] }
      end
    end
    panel_h = math.floor(pw * math.max(0.35, math.min(1.2, flat_aspect(pts, spacing))) + 0.5)
  else
    panel_h = math.floor(pw * 3 / 4 + 0.5)
  end
  local H = title_h + head_h + panel_h + leg_h
  local img = image.image(width, H)
  img.legend = {}
  if opts.title then
    local tw = font.width(fit(opts.title, width - 2 * pad, s), s)
    text(img, opts.title, math.max(pad, math.floor((width - tw) / 2)), pad + s, BLACK, s, width - 2 * pad)
  end
  for k, panel in ipairs(panels) do
    local i0 = (k - 1) * pw
    local heading = panel.heading .. (layer and (", " .. layer) or "")
    text(img, heading, i0 + pad, title_h + pad, BLACK, s, pw - 2 * pad)
    local sub = image.image(pw - 2 * s, panel_h)
    if flat then
      local pts = {}
      for p = 1, n do
        if (not chosen.keep or chosen.keep[p]) and panel.visible(p) then
          pts[#pts + 1] = { x[(chosen.ua - 1) * n + p - 1], x[(chosen.va - 1) * n + p - 1], panel.colors[p] }
        end
      end
      draw_flat(sub, pts, spacing, 0.5 * spacing)
    else
      local r3 = require "cq.render3d"
      local list = {}
      for p = 1, n do if panel.visible(p) then list[#list + 1] = p end end
      if #list == 0 then for p = 1, n do list[p] = p end end
      local m = #list
      local xs = ffi.new("double[?]", 3 * m)
      for i, p in ipairs(list) do
        for a = 0, 2 do xs[a * m + i - 1] = x[a * n + p - 1] end
      end
      local lo, hi = r3.bounds(xs, m)
      lo = { lo[1] - radius, lo[2] - radius, lo[3] - radius }
      hi = { hi[1] + radius, hi[2] + radius, hi[3] + radius }
      local cfg = r3.setup(where, { width = sub.w, height = sub.h, supersample = 2, camera = opts.camera }, w, lo, hi)
      local cols = panel.colors
      r3.draw(cfg, sub, xs, m, function(q) return cols[list[q]] end)
    end
    blit(img, sub, i0 + s, title_h + head_h)
    local _, entries = legend(img, panel, i0, title_h + head_h + panel_h, pw, s)
    for _, e in ipairs(entries) do img.legend[#img.legend + 1] = e end
    if entries.colorbar then img.colorbar = entries.colorbar end
    if k > 1 then for j = title_h, H - 1 do img:set(i0, j, GRID) end end
  end
  return img
end

---------------------------------------------------------------- the signals plot
--- The signals plot: values[j][k] (signal j at control step k = 0 .. steps - 1) against t = k dt, one panel per
--- signal in actuator_color(j), a common symmetric value range; opts: width, height, title, xlabel. Returns the
--- image with .legend (each panel's swatch).
function M.signals(where, values, dt, opts)
  local K, steps = #values, #values[1] + 1
  local W = opts.width or 640
  local s = W >= 560 and 2 or 1
  local pad, lh = 4 * s, 7 * s
  local top = opts.title and (lh + 3 * pad) or pad
  local bottom = 2 * lh + 4 * pad
  local sw = lh + 2                   -- a swatch
  local head = sw + 2 * pad           -- each panel's label line above it: swatch and name
  local H = opts.height or math.min(16384, top + bottom + K * (70 * s + head))
  local ph = math.floor((H - top - bottom - K * head) / K)
  if ph < 8 then
    check.fail(where, string.format("height must leave 8 pixels per signal (%d signals; the title, the labels and " ..
      "the time axis take %d)", K, top + bottom + K * head), H)
  end
  local A = 0
  for j = 1, K do for k = 0, steps - 1 do A = math.max(A, math.abs(values[j][k])) end end
  if A == 0 then A = 1 end
  local function value(v)
    if math.abs(v) >= 100 and math.abs(v) < 1e6 then return string.format("%.0f", v) end
    return colors.label(v)
  end
  local labels = { value(A), "0", value(-A) }
  local lw = 0
  for _, l in ipairs(labels) do lw = math.max(lw, font.width(l, s)) end
  local left, right = lw + 3 * pad, 3 * pad
  local pwid = W - left - right
  local img = image.image(W, H)
  img.legend = {}
  if opts.title then
    local tw = font.width(fit(opts.title, W - 2 * pad, s), s)
    text(img, opts.title, math.max(pad, math.floor((W - tw) / 2)), pad, BLACK, s, W - 2 * pad)
  end
  local t1 = math.max((steps - 1) * dt, 1e-300)
  local step = nice_step(t1, math.max(2, math.floor(pwid / (50 * s))))
  local function px(t) return left + t / t1 * (pwid - 1) end
  for j = 1, K do
    local y0 = top + (j - 1) * (ph + head) + head
    local function py(v) return y0 + (1 - (v + A) / (2 * A)) * (ph - 1) end
    for t = 0, t1 + 1e-9 * t1, step do
      local i = math.floor(px(t))
      for y = y0, y0 + ph - 1 do img:set(i, y, GRID) end
    end
    local zj = math.floor(py(0))
    for i = left, left + pwid - 1, 2 do img:set(i, zj, ZERO) end
    local c = M.actuator_color(j)
    local r = s > 1 and 1 or 0
    for k = 1, steps - 1 do line(img, px((k - 1) * dt), py(values[j][k - 1]), px(k * dt), py(values[j][k]), c, r) end
    if steps == 1 then line(img, px(0), py(values[j][0]), px(0), py(values[j][0]), c, r) end
    rect_outline(img, left - 1, y0 - 1, pwid + 2, ph + 2, FRAME)
    for q, l in ipairs(labels) do
      local ty = ({ y0, y0 + math.floor(ph / 2) - math.floor(lh / 2), y0 + ph - lh })[q]
      text(img, l, left - 2 * pad - font.width(l, s), ty, TEXT, s)
    end
    -- the panel's label above it: a swatch of the actuator's colour and its name
    local name = "ACTUATOR " .. j
    local bx, by = left, y0 - head + pad
    fill_rect(img, bx, by, sw, sw, c)
    rect_outline(img, bx - 1, by - 1, sw + 2, sw + 2, BLACK)
    text(img, name, bx + sw + 3 * s, by + 1, TEXT, s)
    img.legend[#img.legend + 1] = { label = name, color = { c[1], c[2], c[3] }, i = bx + math.floor(sw / 2),
      j = by + math.floor(sw / 2), actuator = j }
  end
  -- the time axis under the last panel
  local yb = top + K * (ph + head) + pad
  for t = 0, t1 + 1e-9 * t1, step do
    local l = tick_label(t, step)
    local i = math.floor(px(t))
    for d = 0, 2 * s do img:set(i, yb - pad + d, FRAME) end
    text(img, l, math.min(W - font.width(l, s) - 1, math.max(0, i - math.floor(font.width(l, s) / 2))), yb + s, TEXT, s)
  end
  local xl = opts.xlabel or "TIME (S)"
  text(img, xl, left + math.floor((pwid - font.width(xl, s)) / 2), yb + lh + 2 * pad, TEXT, s)
  return img
end

--- Writes img to path (creating its directory).
function M.write(where, img, path)
  local ok, err = fs.mkdir_p(fs.dirname(path))
  if not ok then check.raise(string.format("%s: cannot create directory %s (%s)", where, fs.dirname(path), tostring(err))) end
  if image.png(where).cqh_png_write(path, img.w, img.h, img.rgb) ~= 0 then
    check.raise(string.format("%s: cannot write %s (is its directory writable?)", where, path))
  end
end

return M
