-- tools/robot3d_picture.lua: renders docs/results/seed000/robot3d.png, the README's picture of a 3D robot: a four-legged box robot
-- with a head, standing on the floor after settling under gravity, coloured by group.
-- usage: build/bin/cqlua tools/robot3d_picture.lua [out = docs/results/seed000/robot3d.png] [spacing = 1/128]
local cq = require "cq"
local out, spacing = arg and arg[1] or "docs/results/seed000/robot3d.png", tonumber(arg and arg[2]) or 1 / 128
local soft = { model = "neohookean", E = 60, nu = 0.3, density = 1 }
local robot = cq.robot { dim = 3 }
robot:box { offset = { 0.15, 0.14, 0.15 }, size = { 0.24, 0.06, 0.16 }, spacing = spacing, material = soft, name = "body" }
robot:box { offset = { 0.39, 0.15, 0.18 }, size = { 0.07, 0.08, 0.1 }, spacing = spacing, material = soft, name = "head" }
for i, corner in ipairs { { 0, 0 }, { 1, 0 }, { 0, 1 }, { 1, 1 } } do
  robot:box { offset = { 0.15 + 0.19 * corner[1], 0.0625, 0.15 + 0.11 * corner[2] }, size = { 0.05, 0.0775, 0.05 },
    spacing = spacing, material = soft, name = "leg " .. i }
end
local world, s = robot:world { res = { 48, 20, 24 }, dx = 1 / 48, dt = 0.02, substeps = 40, gravity = { 0, -4, 0 },
  damping = 5, walls = { all = { type = "friction", friction = math.huge, thickness = 3 } } }
for _ = 1, 15 do world:step(s) end -- settle onto the floor
local img = cq.frames.render_state { world = world, state = s, color = "group", width = 800, height = 450,
  supersample = 2, camera = { azimuth = 40, elevation = 20 } }
img:write(out)
print(string.format("%s: %d particles, %d x %d", out, world.n, img.w, img.h))
