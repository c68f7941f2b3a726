-- Private: how frames colour particles (by actuation, group, a per-particle quantity through a colour map, a list or
-- a function), the colour maps, and the colour bar drawn for quantities.
local check = require "cq._check"
local measures = require "cq._measures"
local font = require "cq._font"

local M = {}

M.PASSIVE = { 175, 175, 175 }
M.ACTUATED = { 110, 110, 110 }  -- an actuated particle at u = 0
M.CONTRACT = { 30, 80, 230 }    -- u = +1 (positive pressure actuation shortens the material along its axis)
M.EXPAND = { 225, 45, 35 }      -- u = -1
M.PALETTE = { { 31, 119, 180 }, { 255, 127, 14 }, { 44, 160, 44 }, { 214, 39, 40 }, { 148, 103, 189 },
  { 140, 86, 75 }, { 227, 119, 194 }, { 127, 127, 127 }, { 188, 189, 34 }, { 23, 190, 207 } }

-- Colour maps as anchor colours evenly spaced over [0, 1], linearly interpolated. "heat": dark blue through teal
-- and yellow to red (sequential: speed, stress, E); "diverging": blue, light grey at the middle, red (J around 1).
M.COLORMAPS = {
  heat = { { 25, 30, 95 }, { 35, 95, 170 }, { 40, 160, 160 }, { 130, 200, 90 }, { 245, 205, 55 }, { 235, 120, 40 },
    { 190, 35, 35 } },
  diverging = { { 35, 65, 165 }, { 110, 150, 215 }, { 225, 225, 225 }, { 230, 135, 105 }, { 175, 30, 35 } },
  gray = { { 40, 40, 40 }, { 235, 235, 235 } },
}

-- 256 colour tables per map, shared by every particle that maps to the same entry (no table per particle).
local lut_cache = {}
local function lut(name)
  if lut_cache[name] then return lut_cache[name] end
  local anchors, out = M.COLORMAPS[name], {}
  local segs = #anchors - 1
  for i = 0, 255 do
    local t = i / 255 * segs
    local s = math.min(math.floor(t), segs - 1)
    local f, a, b = t - s, anchors[s + 1], anchors[s + 2]
    out[i] = { math.floor(a[1] + (b[1] - a[1]) * f + 0.5), math.floor(a[2] + (b[2] - a[2]) * f + 0.5),
      math.floor(a[3] + (b[3] - a[3]) * f + 0.5) }
  end
  lut_cache[name] = out
  return out
end

--- The colour of value v in colour map name over range {lo, hi} (clamped).
function M.map(name, v, lo, hi)
  local t = hi > lo and (v - lo) / (hi - lo) or 0.5
  if t ~= t then t = 0.5 end
  return lut(name)[math.floor(math.max(0, math.min(1, t)) * 255 + 0.5)]
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

local TITLES = { speed = "speed", J = "J = det F", von_mises = "von Mises" }

local function mix(a, b, t) return { a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t, a[3] + (b[3] - a[3]) * t } end

-- Checks a list of groups (robot groups or lists of 1-based particle indices) of a world of n particles.
local function check_groups(where, groups, n)
  if type(groups) ~= "table" then check.fail(where, "groups must be a list of robot groups or particle index lists", groups) end
  for i, g in ipairs(groups) do
    if type(g) ~= "table" then check.fail(where, "groups[" .. i .. "] must be a robot group or a list of particle indices", g) end
    for j, p in ipairs(g.particles or g) do check.integer(where, "groups[" .. i .. "][" .. j .. "]", p, 1, n) end
  end
  return groups
end
M.check_groups = check_groups

--- The colouring of opts (color, actuator, groups, colormap, range, legend) for world w: a spec for M.resolve.
function M.parse(where, opts, w)
  local color, spec = opts.color, { legend = opts.legend }
  if opts.legend ~= nil and type(opts.legend) ~= "boolean" then check.fail(where, "legend must be true or false", opts.legend) end
  if opts.range ~= nil then
    check.vector(where, "range", opts.range, 2)
    if not (opts.range[2] > opts.range[1]) then
      check.fail(where, "range must be {lo, hi} with hi > lo", table.concat(opts.range, ", "))
    end
    spec.range = opts.range
  end
  if opts.colormap ~= nil and not M.COLORMAPS[opts.colormap] then
    check.fail(where, "colormap must be one of heat, diverging, gray", opts.colormap)
  end
  if opts.groups ~= nil then check_groups(where, opts.groups, w.n) end
  if type(color) == "string" and color ~= "actuation" then
    if color == "group" then
      spec.kind = "list"
      spec.list = M.by_group(opts.groups or w.groups or {}, w.n)
    elseif measures.known(w, color) then
      spec.kind, spec.field = "field", color
      spec.colormap = opts.colormap or (color == "J" and "diverging" or "heat")
      spec.title = TITLES[color] or color
      if spec.legend == nil then spec.legend = true end
    else
      local names = { "actuation", "group", "speed", "J", "von_mises" }
      for _, name in ipairs(w._param_names or {}) do if measures.known(w, name) then names[#names + 1] = name end end
      check.fail(where, "color must be a function, a list of {r, g, b} or one of " .. table.concat(names, ", "), color)
    end
    return spec
  end
  if color ~= nil and color ~= "actuation" and type(color) ~= "function" and type(color) ~= "table" then
    check.fail(where, "color must be nil (by actuation), a name (\"group\", \"speed\", \"von_mises\", ...), a " ..
      "function(p, k) -> {r, g, b} or a list of {r, g, b} per particle", color)
  end
  if type(color) == "table" then
    if #color ~= w.n then check.fail(where, "color must have one {r, g, b} per particle (" .. w.n .. ")", #color) end
    for p = 1, w.n do
      local c = color[p]
      if type(c) ~= "table" or type(c[1]) ~= "number" or type(c[2]) ~= "number" or type(c[3]) ~= "number" then
        check.fail(where, "color[" .. p .. "] must be {r, g, b} (0..255)", c)
      end
    end
    spec.kind, spec.list = "list", color
  elseif type(color) == "function" then
    spec.kind, spec.fn = "function", color
  else -- by actuation: the actuator of each particle (1-based, 0 = passive)
    spec.kind = "actuation"
    local ids = {}
    if opts.actuator then
      if type(opts.actuator) ~= "table" or #opts.actuator ~= w.n then
        check.fail(where, "actuator must list one actuator number per particle (1-based, 0 = passive; " .. w.n ..
          " particles)", opts.actuator)
      end
      for p = 1, w.n do ids[p] = opts.actuator[p] or 0 end
      for p = 1, w.n do
        if type(ids[p]) ~= "number" then check.fail(where, "actuator[" .. p .. "] must be a number", ids[p]) end
      end
    elseif w.params and w.params.act_id then
      for p = 1, w.n do ids[p] = w.params.act_id[p - 1] + 1 end
    else
      for p = 1, w.n do ids[p] = 0 end
    end
    spec.act_id = ids
  end
  return spec
end

-- The value below which 99% of values[0 .. n-1] (>= 0) lie, to a 1/1024 of their maximum (a histogram, O(n)).
local function percentile99(values, n)
  local top = 0
  for p = 0, n - 1 do if values[p] > top then top = values[p] end end
  if top <= 0 then return 0 end
  local bins = {}
  for b = 0, 1024 do bins[b] = 0 end
  for p = 0, n - 1 do local b = math.floor(values[p] / top * 1024); bins[b] = bins[b] + 1 end
  local seen = 0
  for b = 0, 1024 do
    seen = seen + bins[b]
    if seen >= 0.99 * n then return math.min(top, (b + 1) / 1024 * top) end
  end
  return top
end

--- The {lo, hi} of a quantity's values (double[n]), widened by a previous range. Speeds and stresses range from 0
--- to their 99th percentile (a few contact particles would otherwise leave everything else dark); J ranges are
--- symmetric about 1; parameters span their minimum and maximum.
function M.extend_range(spec, values, n, range)
  local lo, hi = range and range[1] or math.huge, range and range[2] or -math.huge
  if spec.field == "von_mises" or spec.field == "speed" then
    lo, hi = 0, math.max(hi, percentile99(values, n))
  else
    for p = 0, n - 1 do
      local v = values[p]
      if v < lo then lo = v end
      if v > hi then hi = v end
    end
  end
  if spec.field == "J" then
    local d = math.max(math.abs(lo - 1), math.abs(hi - 1), 1e-6)
    lo, hi = 1 - d, 1 + d
  end
  if not (hi > lo) then -- one value everywhere: a range around it (from 0 for speeds and stresses)
    local d = math.max(1e-12, 0.5 * math.abs(lo))
    if lo ~= 0 then lo = lo - d end
    hi = hi + d
  end
  return { lo, hi }
end

--- A function p (1-based) -> {r, g, b} for one frame { x, v?, F?, u?, k, state? } of world w. Quantities use
--- spec.range, else the frame's own range (returned as the second value, for the colour bar).
function M.resolve(where, spec, w, frame)
  local kind = spec.kind
  if kind == "list" then local list = spec.list; return function(p) return list[p] end end
  if kind == "function" then local fn, k = spec.fn, frame.k or 0; return function(p) return fn(p, k) end end
  if kind == "field" then
    local values = measures.values(where, w, frame, spec.field)
    local range = spec.range or M.extend_range(spec, values, w.n)
    local map, lo, hi = spec.colormap, range[1], range[2]
    return function(p) return M.map(map, values[p - 1], lo, hi) end, range
  end
  local ids, u = spec.act_id, frame.u
  return function(p)
    local a = ids[p]
    if a <= 0 then return M.PASSIVE end
    local ua = u and u[a] or 0
    if ua >= 0 then return mix(M.ACTUATED, M.CONTRACT, math.min(ua, 1)) end
    return mix(M.ACTUATED, M.EXPAND, math.min(-ua, 1))
  end
end

-- A short label for a number: 3 significant digits, exponent form outside [1e-3, 1e5).
local function label(v)
  if v == 0 then return "0" end
  local a = math.abs(v)
  if a >= 1e5 or a < 1e-3 then return (string.format("%.2e", v):gsub("e%+?(%-?)0*(%d)", "e%1%2")) end
  local s = string.format("%.3g", v)
  return s
end
M.label = label

--- Draws the colour bar of spec over range {lo, hi} in the top-right corner of img: a vertical gradient with its
--- title above and the values of its ends and middle on its left. Text is black on a translucent white box.
function M.draw_legend(img, spec, range)
  local s = img.w >= 900 and 2 or 1 -- font scale
  local bar_w, bar_h = 10 * s, math.max(40, math.floor(img.h * 0.35))
  local lo, hi = range[1], range[2]
  local labels = { label(hi), label(0.5 * (lo + hi)), label(lo) }
  local text_w = 0
  for _, l in ipairs(labels) do text_w = math.max(text_w, font.width(l, s)) end
  local title_w = font.width(spec.title, s)
  local pad = 4 * s
  local box_w = math.max(title_w, text_w + 3 * s + bar_w) + 2 * pad
  local box_h = bar_h + 7 * s + 3 * pad + 4 * s
  local x0, y0 = img.w - box_w - 6 * s, 6 * s
  if x0 < 0 or box_h + y0 > img.h then return end -- too small an image for a legend
  local rgb, W = img.rgb, img.w
  for j = y0, y0 + box_h - 1 do -- translucent white box
    for i = x0, x0 + box_w - 1 do
      local o = 3 * (j * W + i)
      for c = 0, 2 do rgb[o + c] = math.floor(rgb[o + c] * 0.25 + 255 * 0.75) end
    end
  end
  font.draw(img, spec.title, x0 + pad, y0 + pad, { 0, 0, 0 }, s)
  local bx, by = x0 + box_w - pad - bar_w, y0 + 2 * pad + 7 * s + 2 * s
  local map = lut(spec.colormap)
  for j = 0, bar_h - 1 do
    local c = map[math.floor((1 - j / (bar_h - 1)) * 255 + 0.5)]
    for i = 0, bar_w - 1 do img:set(bx + i, by + j, c) end
  end
  for i = -1, bar_w do img:set(bx + i, by - 1, { 0, 0, 0 }); img:set(bx + i, by + bar_h, { 0, 0, 0 }) end
  for j = -1, bar_h do img:set(bx - 1, by + j, { 0, 0, 0 }); img:set(bx + bar_w, by + j, { 0, 0, 0 }) end
  for n, l in ipairs(labels) do
    local ty = by + math.floor((n - 1) / 2 * (bar_h - 1)) - math.floor(3.5 * s)
    font.draw(img, l, bx - 3 * s - font.width(l, s), ty, { 0, 0, 0 }, s)
  end
end

return M
