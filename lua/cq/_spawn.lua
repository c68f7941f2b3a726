-- Private: child processes for the study runner (cq.study): start a shell command without waiting for it, poll it,
-- signal it, sleep between polls; plus the host name and the number of cores. POSIX through the ffi, because the
-- runner keeps several workers going at once and os.execute / io.popen wait for one.
local ffi = require "ffi"

ffi.cdef [[
int posix_spawnp(int *pid, const char *file, const void *file_actions, const void *attrp, char *const argv[],
                 char *const envp[]);
int waitpid(int pid, int *status, int options);
int kill(int pid, int sig);
int usleep(unsigned int usec);
int gethostname(char *name, size_t len);
long sysconf(int name);
int getpid(void);
int mkdir(const char *path, unsigned int mode);
int rmdir(const char *path);
char *strerror(int errnum);
extern char **environ;
]]

local M = {}
local WNOHANG = 1
local SC_NPROCESSORS_ONLN = 84 -- glibc's _SC_NPROCESSORS_ONLN
M.SIGINT, M.SIGKILL, M.SIGTERM = 2, 9, 15

--- Starts `/bin/sh -c cmd` in the background; returns its process id (with `exec` in cmd it becomes the command's).
function M.start(cmd)
  local argv = ffi.new("char *[4]")
  local keep = { ffi.new("char[?]", 8, "/bin/sh"), ffi.new("char[?]", 3, "-c"), ffi.new("char[?]", #cmd + 1, cmd) }
  for i = 1, 3 do argv[i - 1] = keep[i] end
  argv[3] = nil
  local pid = ffi.new("int[1]")
  local rc = ffi.C.posix_spawnp(pid, "/bin/sh", nil, nil, argv, ffi.C.environ)
  if rc ~= 0 then error("cannot start /bin/sh: " .. ffi.string(ffi.C.strerror(rc)), 0) end
  return pid[0]
end

--- Nil while process pid runs; once it has ended: its exit status (0-255) and, when a signal killed it, the signal.
function M.poll(pid)
  local status = ffi.new("int[1]")
  local r = ffi.C.waitpid(pid, status, WNOHANG)
  if r == 0 then return nil end
  if r < 0 then return 255, nil end -- not our child any more (already reaped): report a failure
  local s = status[0]
  local sig = bit.band(s, 0x7f)
  if sig == 0 then return bit.band(bit.rshift(s, 8), 0xff), nil end
  return 128 + sig, sig
end

--- True when process pid exists (signal 0 reaches it) and has not ended (a zombie, state Z in /proc, has).
function M.alive(pid)
  if type(pid) ~= "number" or pid <= 0 or ffi.C.kill(pid, 0) ~= 0 then return false end
  local f = io.open("/proc/" .. pid .. "/stat", "r")
  if not f then return true end
  local stat = f:read("*l") or ""
  f:close()
  return stat:match("^%d+ %b() (%a)") ~= "Z"
end

--- Sends signal sig to process pid (ignores a process that is gone); to its whole process group when pid < 0.
function M.kill(pid, sig) ffi.C.kill(pid, sig) end

function M.sleep(seconds) ffi.C.usleep(math.floor(seconds * 1e6)) end

function M.hostname()
  local buf = ffi.new("char[256]")
  if ffi.C.gethostname(buf, 255) ~= 0 then return "unknown" end
  return ffi.string(buf)
end

function M.cores()
  local n = tonumber(ffi.C.sysconf(SC_NPROCESSORS_ONLN))
  return (n and n > 0) and n or 1
end

function M.pid() return ffi.C.getpid() end

--- Creates directory path (not its parents); false when it exists already: an atomic claim.
function M.mkdir(path) return ffi.C.mkdir(path, 493) == 0 end -- 0755

function M.rmdir(path) return ffi.C.rmdir(path) == 0 end

return M
