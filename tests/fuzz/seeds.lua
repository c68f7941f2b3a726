-- tests/fuzz/seeds.lua: the starting corpus of the fuzzers (make fuzz): a few small valid files per loader.
-- usage: build/bin/cqlua tests/fuzz/seeds.lua <directory>   (writes <directory>/{png,obj,stl,lattice,msh,json}/...)
package.path = "./scenes/?.lua;./tests/?.lua;" .. package.path
local cq = require "cq"
local meshes = require "meshes"
local msh = require "_msh_files"

local dir = assert(arg[1], "usage: cqlua tests/fuzz/seeds.lua <directory>")
for _, sub in ipairs { "png", "obj", "stl", "lattice", "msh", "json" } do os.execute("mkdir -p '" .. dir .. "/" .. sub .. "'") end
local function write(path, bytes)
  local f = assert(io.open(dir .. "/" .. path, "wb"))
  f:write(bytes)
  f:close()
end

-- PNG: a tiny robot image (body and two actuator colours on white)
local img = cq.frames.image(12, 8)
for i = 1, 10 do for j = 2, 5 do img:set(i, j, { 60, 60, 60 }) end end
for j = 6, 7 do img:set(2, j, { 255, 0, 0 }); img:set(9, j, { 0, 0, 255 }) end
img:write(dir .. "/png/robot.png")

-- OBJ: triangles, quads with texture/normal indices, negative (relative) indices
local cube = meshes.box({ 0, 0, 0 }, { 1, 1, 1 })
meshes.write_obj(dir .. "/obj/cube.obj", cube)
write("obj/quads.obj", "o box\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nv 0 0 1\nv 1 0 1\nv 0 1 1\nv 1 1 1\nvt 0 0\nvn 0 0 1\n" ..
  "f 1/1/1 3/1/1 4/1/1 2/1/1\nf 5//1 6//1 8//1 7//1\nf 1 2 6 5\nf 3 7 8 4\nf 1 5 7 3\nf 2 4 8 6\n")
write("obj/relative.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf -4 -2 -3\nf -4 -3 -1\nf -3 -2 -1\nf -4 -1 -2\n")
meshes.write_obj(dir .. "/obj/sphere.obj", meshes.uv_sphere({ 0, 0, 0 }, 1, 6, 4))

-- STL: binary and ASCII
meshes.write_stl(dir .. "/stl/cube.stl", cube, "solid cube (binary)")
meshes.write_stl_ascii(dir .. "/stl/cube_ascii.stl", cube, "cube")
meshes.write_stl(dir .. "/stl/sphere.stl", meshes.uv_sphere({ 0, 0, 0 }, 1, 6, 4))

-- lattice: topology byte, lattice byte, then signed coordinates in eighths
local function bytes(t) local s = {} for i, b in ipairs(t) do s[i] = string.char(b % 256) end return table.concat(s) end
write("lattice/tetra", bytes { 0, 10, 0, 0, 0, 16, 0, 0, 0, 16, 0, 0, 0, 16 })
write("lattice/octa", bytes { 1, 40, 8, 0, 0, -8, 0, 0, 0, 8, 0, 0, -8, 0, 0, 0, 8, 0, 0, -8 })
write("lattice/cube", bytes { 2, 7, 0, 0, 0, 8, 0, 0, 0, 8, 0, 8, 8, 0, 0, 0, 8, 8, 0, 8, 0, 8, 8, 8, 8, 8 })
write("lattice/nested", bytes { 3, 12, 0, 0, 0, 32, 0, 0, 0, 32, 0, 0, 0, 32, 2, 2, 2, 10, 2, 2, 2, 10, 2, 2, 2, 10 })

-- MSH 4.1: the hand-written cube of tests/_msh_files.lua in ASCII and binary (both byte orders, 4-byte size_t,
-- sparse node tags)
write("msh/cube.msh", msh.ascii(msh.cube()))
write("msh/cube_bin.msh", msh.binary(msh.cube()))
write("msh/cube_swap.msh", msh.binary(msh.cube(), { swap = true }))
write("msh/cube_size4.msh", msh.binary(msh.cube(), { size = 4 }))
write("msh/cube_sparse.msh", msh.ascii(msh.cube(1000003)))
-- and what gmsh writes (a coarse finger2d, with every element saved, and a coarse 3D cube), when gmsh is installed
local proc = require "cq._proc"
if proc.which("gmsh") then
  local q = proc.quote
  assert(proc.run(string.format("gmsh -2 -format msh41 -save_all -v 0 -setnumber mesh_size 6 -o %s " ..
    "scenes/finger2d.geo >/dev/null", q(dir .. "/msh/finger2d.msh"))))
  local geo = dir .. "/msh/box.geo"
  write("msh/box.geo", 'SetFactory("OpenCASCADE");\nBox(1) = {0, 0, 0, 1, 1, 1};\nPhysical Volume("box") = {1};\n' ..
    'Physical Surface("top") = {4};\n')
  assert(proc.run(string.format("gmsh -3 -format msh41 -bin -clscale 4 -v 0 -o %s %s >/dev/null",
    q(dir .. "/msh/box_bin.msh"), q(geo))))
  os.remove(geo)
end

-- JSON: cq.save files and cq.train checkpoints of the objects the json target reads them into (tests/fuzz/fuzz_json.lua)
require("fuzz.fuzz_json").seeds(dir .. "/json")
