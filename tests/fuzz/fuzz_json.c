/* fuzz_json.c: libFuzzer target for reading JSON checkpoints back (lua/cq/json.lua through lua-cjson, cq.load in
 * lua/cq/save.lua, cq.train's resumption in lua/cq/train.lua): LuaJIT embedded, the cq package from ./lua (run from
 * the repository root, as `make fuzz` does), and tests/fuzz/fuzz_json.lua's check() on each input, which returns the
 * text of a finding (a Lua runtime error instead of a message, a run that does not stop ...): printed, then abort(),
 * so libFuzzer saves the input. One Lua state for the whole run; the inputs are written to a directory of its own.
 * The Lua code is not compiled with the fuzzer's instrumentation, so a line hook feeds its coverage to libFuzzer:
 * each step from one Lua line to the next bumps a counter of libFuzzer's extra counters (the JIT is off, so every
 * line is seen). */
#include <dirent.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static lua_State* L;
static char dir[64];

/* Lua line coverage: counters libFuzzer reads as its own (the section it collects), indexed by a hash of the previous
 * and the current (chunk, line), as AFL counts edges. */
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t lua_edges[1 << 16];
static uint64_t prev_line;

static void line_hook(lua_State* L_, lua_Debug* ar) {
  uint64_t at;
  if (!lua_getinfo(L_, "S", ar)) return;
  at = ((uint64_t)(uintptr_t)ar->source * 31 + (uint64_t)ar->currentline) * 0x9E3779B97F4A7C15ull;
  lua_edges[(at ^ prev_line) >> 48]++;
  prev_line = at >> 1;
}

/* The directory emptied and removed: at exit, and before an abort on a finding. */
static void remove_dir(void) {
  char path[600];
  DIR* d = opendir(dir);
  struct dirent* e;
  while (d != NULL && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  if (d != NULL) closedir(d);
  rmdir(dir);
}

/* At exit: the Lua state closed (its finalizers free what lua-cjson allocated, which LeakSanitizer cannot see held
 * in LuaJIT's own heap), then the directory removed. */
static void cleanup(void) {
  lua_close(L);
  remove_dir();
}

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc, (void)argv;
  /* in memory when /dev/shm is there: the checkpoints' writes and renames on a disk took half the time */
  strcpy(dir, "/dev/shm/cq-fuzz-json.XXXXXX");
  if (mkdtemp(dir) == NULL) {
    strcpy(dir, "/tmp/cq-fuzz-json.XXXXXX");
    if (mkdtemp(dir) == NULL) {
      perror("fuzz_json: mkdtemp");
      exit(1);
    }
  }
  atexit(cleanup);
  L = luaL_newstate();
  luaL_openlibs(L);
  if (luaL_dostring(L,
                    "package.path = './lua/?.lua;./lua/?/init.lua;./tests/?.lua;' .. package.path\n"
                    "return require 'fuzz.fuzz_json'") != 0) {
    fprintf(stderr, "fuzz_json: cannot load tests/fuzz/fuzz_json.lua (run from the repository root): %s\n",
            lua_tostring(L, -1));
    exit(1);
  }
  lua_getfield(L, -1, "check");
  lua_setfield(L, LUA_REGISTRYINDEX, "fuzz_json_check");
  /* every module and lazily made buffer loaded now, not in the first inputs (where they would count as leaks) */
  lua_getfield(L, -1, "warm");
  lua_pushstring(L, dir);
  if (lua_pcall(L, 1, 0, 0) != 0) {
    fprintf(stderr, "fuzz_json: the seeds do not load: %s\n", lua_tostring(L, -1));
    exit(1);
  }
  lua_settop(L, 0);
  luaL_dostring(L, "jit.off()");
  lua_sethook(L, line_hook, LUA_MASKLINE, 0);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  prev_line = 0;
  lua_getfield(L, LUA_REGISTRYINDEX, "fuzz_json_check");
  lua_pushlstring(L, (const char*)data, size);
  lua_pushstring(L, dir);
  if (lua_pcall(L, 2, 1, 0) != 0) {
    fprintf(stderr, "fuzz_json: the check itself failed: %s\n", lua_tostring(L, -1));
    remove_dir();
    abort();
  }
  if (!lua_isnil(L, -1)) {
    fprintf(stderr, "fuzz_json: %s\n", lua_tostring(L, -1));
    remove_dir();
    abort();
  }
  lua_settop(L, 0);
  return 0;
}
