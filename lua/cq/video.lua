-- MP4 videos from PNG frames through ffmpeg (a subprocess; Debian package ffmpeg): cq.frames.video{...}.
local check = require "cq._check"
local fs = require "cq._fs"
local proc = require "cq._proc"

local M = {}
local OPTIONS = check.option_set("cq.frames.video", { "dir", "prefix", "frames", "out", "fps", "crf" })

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

-- A temporary directory holding links 000000.png, 000001.png, ... to the listed frames (ffmpeg reads a numbered
-- sequence); returns its pattern and a cleanup function.
local function linked_sequence(where, frames)
  local dir = os.tmpname()
  os.remove(dir)
  local ok, err = fs.mkdir_p(dir)
  if not ok then check.raise(string.format("%s: cannot create a temporary directory %s (%s)", where, dir, tostring(err))) end
  local script, cmds = dir .. ".sh", {}
  for i, path in ipairs(frames) do
    local abs = path:sub(1, 1) == "/" and path or (os.getenv("PWD") or ".") .. "/" .. path
    cmds[#cmds + 1] = string.format("ln -s %s %s", proc.quote(abs), proc.quote(string.format("%s/%06d.png", dir, i - 1)))
  end
  local f = assert(io.open(script, "w"))
  f:write(table.concat(cmds, "\n"), "\n")
  f:close()
  local linked, why = proc.run("sh " .. proc.quote(script))
  os.remove(script)
  local function cleanup() proc.run("rm -rf " .. proc.quote(dir)) end
  if not linked then cleanup(); check.raise(where .. ": cannot link the frames into " .. dir .. " (" .. why .. ")") end
  return dir .. "/%06d.png", cleanup
end

--- cq.frames.video{ dir = "out/frames" (with prefix = "frame_": dir/frame_0000.png ...) | frames = {png paths},
---   out = "out/x.mp4", fps = 30, crf = 20 } -> { path = out, frames = count }
--- Encodes H.264 (yuv420p, odd sizes padded to even) into out.tmp, then renames it to out.
function M.make(opts)
  local where = "cq.frames.video"
  check.options(where, opts, OPTIONS)
  local fps = check.number(where, "fps", opts.fps or 30, 0, 1000, { open_lo = true })
  local crf = check.integer(where, "crf", opts.crf or 20, 0, 51)
  local out = opts.out
  if type(out) ~= "string" or out == "" or out:sub(-1) == "/" then
    check.fail(where, "out must be a file name such as \"out/run.mp4\"", out)
  end
  if (opts.dir == nil) == (opts.frames == nil) then
    check.fail(where, "give exactly one of dir (a directory of numbered frames) or frames (a list of PNG files)", nil)
  end
  local pattern, count, cleanup
  if opts.frames ~= nil then
    if type(opts.frames) ~= "table" or #opts.frames == 0 then
      check.fail(where, "frames must be a non-empty list of PNG files", opts.frames)
    end
    for i, path in ipairs(opts.frames) do
      if type(path) ~= "string" or not exists(path) then
        check.fail(where, "frames[" .. i .. "] must be an existing PNG file", path)
      end
    end
    count = #opts.frames
  else
    if type(opts.dir) ~= "string" or opts.dir == "" then check.fail(where, "dir must be a directory name", opts.dir) end
    local prefix = opts.prefix or "frame_"
    if type(prefix) ~= "string" or prefix:find("/") then check.fail(where, "prefix must be a file name prefix", prefix) end
    count = 0
    while exists(string.format("%s/%s%04d.png", opts.dir, prefix, count)) do count = count + 1 end
    if count == 0 then
      check.raise(string.format("%s: no frames in %s (expected %s/%s0000.png, as cq.frames.write names them)", where,
        opts.dir, opts.dir, prefix))
    end
    pattern = opts.dir .. "/" .. prefix:gsub("%%", "%%%%") .. "%04d.png"
  end
  if not proc.which("ffmpeg") then
    check.raise(where .. ": ffmpeg is not installed or not on PATH (install it: apt-get install ffmpeg; " ..
      "`make deps-video` installs it)")
  end
  if opts.frames then pattern, cleanup = linked_sequence(where, opts.frames) end
  local ok, err = fs.mkdir_p(fs.dirname(out))
  if not ok then
    if cleanup then cleanup() end
    check.raise(string.format("%s: cannot create directory %s (%s)", where, fs.dirname(out), tostring(err)))
  end
  local tmp = out .. ".tmp"
  local cmd = table.concat({ "ffmpeg -nostdin -hide_banner -loglevel error -y -framerate", string.format("%.17g", fps),
    "-start_number 0 -i", proc.quote(pattern), "-frames:v", tostring(count),
    "-c:v libx264 -preset medium -crf", tostring(crf), "-pix_fmt yuv420p -vf", proc.quote("pad=ceil(iw/2)*2:ceil(ih/2)*2"),
    "-movflags +faststart -f mp4", proc.quote(tmp) }, " ")
  local done, why = proc.run(cmd)
  if cleanup then cleanup() end
  if not done then os.remove(tmp); check.raise(where .. ": ffmpeg failed (" .. why .. ")") end
  local renamed, rerr = fs.rename_over(tmp, out)
  if not renamed then check.raise(string.format("%s: cannot rename %s to %s (%s)", where, tmp, out, tostring(rerr))) end
  return { path = out, frames = count }
end

return M
