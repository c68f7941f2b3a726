/* cqlua.c: the cqlua host program, a LuaJIT standalone that finds the cq Lua package next to its own executable. */

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include <luajit.h>

#include "host.h"

#ifndef CQ_VERSION
#define CQ_VERSION "unknown"
#endif

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

static const char* progname = "cqlua";

/* ---- command line ---------------------------------------------------- */

typedef struct Options {
  int script; /* argv index of the script ("-" = stdin), 0 if none */
  int n_exec; /* how many -e chunks were given */
} Options;

enum { ARGS_RUN, ARGS_HELP, ARGS_VERSION, ARGS_ERROR };

static void print_usage(FILE* f) { fprintf(f, "usage: %s [options] [script [args...]]\n", progname); }

static int parse_args(int argc, char** argv, Options* o) {
  int i;
  o->script = 0;
  o->n_exec = 0;
  for (i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (a[0] != '-' || strcmp(a, "-") == 0) { /* first non-option is the script */
      o->script = i;
      return ARGS_RUN;
    }
    if (strcmp(a, "--") == 0) {
      if (i + 1 < argc) o->script = i + 1;
      return ARGS_RUN;
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) return ARGS_HELP;
    if (strcmp(a, "-v") == 0 || strcmp(a, "--version") == 0) return ARGS_VERSION;
    if (strcmp(a, "-e") == 0) {
      if (i + 1 >= argc) {
        fprintf(stderr, "%s: option '-e' needs an argument\n", progname);
        return ARGS_ERROR;
      }
      i++;
      o->n_exec++;
      continue;
    }
    fprintf(stderr, "%s: unknown option '%s'\n", progname, a);
    return ARGS_ERROR;
  }
  return ARGS_RUN;
}

/* ---- locating the cq package ------------------------------------------ */

static int is_file(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Our own executable: /proc/self/exe, else argv[0] when it names a path. */
static int find_exe(const char* argv0, char* buf, size_t size) {
  ssize_t n = readlink("/proc/self/exe", buf, size - 1);
  if (n > 0 && (size_t)n < size - 1) {
    buf[n] = '\0';
    return 1;
  }
  if (argv0 && strchr(argv0, '/') && size >= PATH_MAX + 1) {
    return realpath(argv0, buf) != NULL;
  }
  return 0;
}

/* Pushes the directory part of path (without trailing slash; "/" for the root). */
static void push_dirname(lua_State* L, const char* path) {
  const char* slash = strrchr(path, '/');
  if (slash == NULL)
    lua_pushliteral(L, ".");
  else if (slash == path)
    lua_pushliteral(L, "/");
  else
    lua_pushlstring(L, path, (size_t)(slash - path));
}

/* Pushes dir/rel, avoiding "//" when dir is the root. */
static void push_join(lua_State* L, const char* dir, const char* rel) {
  size_t n = strlen(dir);
  if (n > 0 && dir[n - 1] == '/')
    lua_pushfstring(L, "%s%s", dir, rel);
  else
    lua_pushfstring(L, "%s/%s", dir, rel);
}

static int has_cq_package(lua_State* L, const char* luadir) {
  int found;
  push_join(L, luadir, "cq/init.lua");
  found = is_file(lua_tostring(L, -1));
  lua_pop(L, 1);
  return found;
}

/* Tries the build-tree then the installed layout around the executable.
   On a match pushes luadir and libdir and returns 1; otherwise pushes nothing. */
static int push_layout(lua_State* L, const char* exe) {
  int base = lua_gettop(L);
  const char *bindir, *up1, *up2;

  push_dirname(L, exe);
  bindir = lua_tostring(L, -1); /* .../bin   */
  push_dirname(L, bindir);
  up1 = lua_tostring(L, -1); /* <build> or <prefix> */
  push_dirname(L, up1);
  up2 = lua_tostring(L, -1); /* <root> */

  /* a) build tree: <root>/build/bin/cqlua */
  push_join(L, up2, "lua");
  if (has_cq_package(L, lua_tostring(L, -1))) {
    push_join(L, up1, "lib");
    goto found;
  }
  lua_pop(L, 1);

  /* b) installed: <prefix>/bin/cqlua */
  push_join(L, up1, "share/cqlua/lua");
  if (has_cq_package(L, lua_tostring(L, -1))) {
    push_join(L, up1, "lib/cqlua");
    goto found;
  }
  lua_settop(L, base);
  return 0;

found:
  /* keep only the two results: drop bindir, up1, up2 below them */
  lua_replace(L, base + 2);
  lua_replace(L, base + 1);
  lua_settop(L, base + 2);
  return 1;
}

/* Environment variable value, or NULL when unset or empty. */
static const char* env_dir(const char* name) {
  const char* v = getenv(name);
  return (v && v[0]) ? v : NULL;
}

/* Sets package.path and package.loaded["cq._paths"] = { lua, lib, exe, version }. */
static void setup_paths(lua_State* L, const char* argv0) {
  char exe[PATH_MAX + 1];
  int have_exe = find_exe(argv0, exe, sizeof exe);
  int base = lua_gettop(L);
  int luadir = base + 1, libdir = base + 2;

  if (!(have_exe && push_layout(L, exe))) {
    lua_pushnil(L);
    lua_pushnil(L);
  }
  /* the environment overrides each directory separately */
  if (env_dir("CQ_LUA_PATH")) {
    lua_pushstring(L, env_dir("CQ_LUA_PATH"));
    lua_replace(L, luadir);
  }
  if (env_dir("CQ_LIB_PATH")) {
    lua_pushstring(L, env_dir("CQ_LIB_PATH"));
    lua_replace(L, libdir);
  }

  lua_getglobal(L, "package");
  if (!lua_isnil(L, luadir)) {
    /* ours first; the defaults (e.g. Debian's /usr/share/lua/5.1) stay after it */
    const char* d = lua_tostring(L, luadir);
    lua_getfield(L, -1, "path");
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s", d, d, lua_tostring(L, -1));
    lua_setfield(L, -3, "path");
    lua_pop(L, 1);
  }

  lua_getfield(L, -1, "loaded");
  lua_createtable(L, 0, 4);
  lua_pushvalue(L, luadir);
  lua_setfield(L, -2, "lua");
  lua_pushvalue(L, libdir);
  lua_setfield(L, -2, "lib");
  if (have_exe) {
    lua_pushstring(L, exe);
    lua_setfield(L, -2, "exe");
  }
  lua_pushliteral(L, CQ_VERSION);
  lua_setfield(L, -2, "version");
  lua_setfield(L, -2, "cq._paths");
  lua_settop(L, base);
}

/* ---- help ------------------------------------------------------------- */

static void print_help(lua_State* L, const char* argv0) {
  print_usage(stdout);
  printf(
      "\n"
      "Runs a Lua script under LuaJIT with the cq soft-robot simulator on the module path.\n"
      "The script sees arg[0] = script, arg[1..n] = args (also as ...), arg[-1] = interpreter.\n"
      "\n"
      "options:\n"
      "  -e CODE        run CODE before the script (may be repeated)\n"
      "  -              read the script from stdin\n"
      "  --             stop handling options; the next argument is the script\n"
      "  -h, --help     show this help and exit\n"
      "  -v, --version  print the version and exit\n"
      "\n"
      "parameter studies: cqlua study run|slurm|collect|list STUDY.lua [options] (cqlua study --help);\n"
      "  a local one-node SLURM to try them: cqlua study cluster start|status|stop\n"
      "\n"
      "environment:\n"
      "  CQ_LUA_PATH    directory holding the cq Lua package (overrides the search below)\n"
      "  CQ_LIB_PATH    directory holding libcq_f32.so and libcq_f64.so\n"
      "  LUA_PATH, LUA_CPATH  usual LuaJIT search paths, searched after the cq directory\n"
      "\n"
      "require \"cq\" looks next to this executable, first match wins\n"
      "(a match is a directory containing cq/init.lua):\n"
      "  build tree: <root>/build/bin/cqlua -> <root>/lua,             libs <root>/build/lib\n"
      "  installed:  <prefix>/bin/cqlua     -> <prefix>/share/cqlua/lua, libs <prefix>/lib/cqlua\n"
      "Lua sees the result as require \"cq._paths\" = { lua, lib, exe, version }.\n"
      "\n");
  setup_paths(L, argv0);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaded");
  lua_getfield(L, -1, "cq._paths");
  lua_getfield(L, -1, "exe");
  lua_getfield(L, -2, "lua");
  lua_getfield(L, -3, "lib");
  printf("this executable: %s\n", lua_isnil(L, -3) ? "(unknown)" : lua_tostring(L, -3));
  printf("cq package dir:  %s\n", lua_isnil(L, -2) ? "(not found)" : lua_tostring(L, -2));
  printf("cq library dir:  %s\n", lua_isnil(L, -1) ? "(not found)" : lua_tostring(L, -1));
  lua_pop(L, 6);
}

/* ---- running chunks ---------------------------------------------------- */

static lua_State* running_state = NULL;

/* ---- interruption (host.h) ---------------------------------------------- */

static volatile sig_atomic_t interrupted = 0; /* signal number of the first SIGINT / SIGTERM */
static volatile sig_atomic_t graceful = 0;    /* 1: the script polls cqh_interrupted() itself */

const volatile int* cqh_interrupt_flag(void) { return (const volatile int*)&interrupted; }
int cqh_interrupted(void) { return interrupted; }
void cqh_clear_interrupt(void) { interrupted = 0; }
int cqh_graceful(int on) {
  int old = graceful;
  graceful = on != 0;
  return old;
}

static const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"; }

/* Runs once Lua code runs again after a signal: cancels the fallback and, unless the script handles the
   interruption itself, turns it into a Lua error (with traceback). */
static void interrupt_hook(lua_State* L, lua_Debug* ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  alarm(0);
  if (!graceful && interrupted) luaL_error(L, "interrupted by %s", signal_name(interrupted));
}

/* The fallback when no Lua code ran within FALLBACK_SECONDS of the signal (a JIT-compiled loop never runs hooks, a
   C call that does not poll the flag never returns): die of the signal after all. The engine polls at every
   substep, so this only catches code outside it. */
#define FALLBACK_SECONDS 5
static void on_alarm(int sig) {
  (void)sig;
  int s = interrupted ? interrupted : SIGINT;
  signal(s, SIG_DFL);
  raise(s);
}

static void on_signal(int sig) {
  if (interrupted) { /* the second signal kills at once */
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  interrupted = sig;
  if (running_state) lua_sethook(running_state, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
  if (!graceful) {
    signal(SIGALRM, on_alarm);
    alarm(FALLBACK_SECONDS);
  }
}

/* Message handler: the error as a string plus a stack traceback. */
static int traceback(lua_State* L) {
  const char* msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      return 1; /* an error object that describes itself */
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  if (interrupted && graceful) return 1; /* the script stopped itself after saving: its message says it all */
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Calls the function below narg arguments under the traceback handler. */
static int docall(lua_State* L, int narg) {
  int status;
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, traceback);
  lua_insert(L, base);
  running_state = L;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  status = lua_pcall(L, narg, 0, base);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  alarm(0); /* the script ended before the fallback fired */
  running_state = NULL;
  lua_remove(L, base);
  return status;
}

/* Builds the global arg table the way the lua standalone does: arg[0] is the script. */
static void create_arg_table(lua_State* L, int argc, char** argv, int script) {
  int i;
  int zero = script ? script : argc; /* without a script everything is negative */
  lua_createtable(L, argc - zero > 0 ? argc - zero : 0, zero + 1);
  for (i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - zero);
  }
  lua_setglobal(L, "arg");
}

static int run_exec_chunks(lua_State* L, int argc, char** argv, int stop) {
  int i;
  for (i = 1; i < stop && i < argc; i++) {
    if (strcmp(argv[i], "-e") == 0) {
      const char* code = argv[++i];
      int status = luaL_loadbuffer(L, code, strlen(code), "=(command line)");
      if (status == 0) status = docall(L, 0);
      if (status != 0) return status;
    }
  }
  return 0;
}

/* `cqlua study ...` (parameter studies, lua/cq/study/cli.lua): a subcommand, not a script file named "study"
   (run such a file as ./study). */
static const char STUDY_CHUNK[] =
    "local status = require('cq.study.cli').main(...) if status ~= 0 then io.stdout:flush() os.exit(status) end";

static int run_script(lua_State* L, int argc, char** argv, int script) {
  int i, status;
  const char* name = argv[script];
  if (strcmp(name, "study") == 0)
    status = luaL_loadbuffer(L, STUDY_CHUNK, sizeof STUDY_CHUNK - 1, "=cqlua study");
  else
    status = luaL_loadfile(L, strcmp(name, "-") == 0 ? NULL : name);
  if (status != 0) return status;
  luaL_checkstack(L, argc - script, "too many arguments to script");
  for (i = script + 1; i < argc; i++) lua_pushstring(L, argv[i]);
  return docall(L, argc - script - 1);
}

/* Prints an error message from the top of the stack as "cqlua: message". */
static void report(lua_State* L) {
  const char* msg = lua_tostring(L, -1);
  if (msg == NULL) msg = "(error object is not a string)";
  fprintf(stderr, "%s: %s\n", progname, msg);
  fflush(stderr);
}

/* ---- main -------------------------------------------------------------- */

typedef struct Main {
  int argc;
  char** argv;
  Options opt;
  int status; /* 0 ok, else the Lua error status of the script (already reported) */
} Main;

/* Everything that touches Lua runs here, protected, so allocation failures become errors. */
static int pmain(lua_State* L) {
  Main* m = (Main*)lua_touserdata(L, 1);
  lua_settop(L, 0);
  lua_gc(L, LUA_GCSTOP, 0);
  luaL_openlibs(L);
  lua_gc(L, LUA_GCRESTART, -1);

  setup_paths(L, m->argv[0]);
  create_arg_table(L, m->argc, m->argv, m->opt.script);

  m->status = run_exec_chunks(L, m->argc, m->argv, m->opt.script ? m->opt.script : m->argc);
  if (m->status == 0 && m->opt.script) m->status = run_script(L, m->argc, m->argv, m->opt.script);
  if (m->status != 0) report(L); /* lua_cpcall drops our stack, so report here */
  return 0;
}

static int print_help_protected(lua_State* L) {
  const char* argv0 = (const char*)lua_touserdata(L, 1);
  lua_settop(L, 0);
  luaL_openlibs(L);
  print_help(L, argv0);
  return 0;
}

/* OpenMP threads spin at every barrier by default; when another process shares a core that makes the many
 * short parallel sections of an MPM step 15-100x slower. A short spin (measured: same speed on an idle machine)
 * avoids it. Only applied when the user has not chosen a policy; must run before libgomp is loaded. */
static void default_openmp_wait(void) {
  if (getenv("OMP_WAIT_POLICY") == NULL && getenv("GOMP_SPINCOUNT") == NULL) setenv("GOMP_SPINCOUNT", "10000", 0);
}

int main(int argc, char** argv) {
  Main m;
  lua_State* L;
  int how, status;

  if (argc < 1 || argv[0] == NULL) {
    fprintf(stderr, "%s: started without argv[0]\n", progname);
    return 1;
  }
  how = parse_args(argc, argv, &m.opt);
  if (how == ARGS_VERSION) {
    printf("cqlua %s (%s)\n", CQ_VERSION, LUAJIT_VERSION);
    return 0;
  }
  if (how == ARGS_ERROR || (how == ARGS_RUN && m.opt.script == 0 && m.opt.n_exec == 0)) {
    print_usage(stderr);
    fprintf(stderr, "try '%s --help' for more information\n", progname);
    return 1;
  }

  default_openmp_wait();
  setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines reach a log file or pipe as they are printed, even if killed */
  L = luaL_newstate();
  if (L == NULL) {
    fprintf(stderr, "%s: cannot create Lua state: not enough memory\n", progname);
    return 1;
  }
  if (how == ARGS_HELP) {
    status = lua_cpcall(L, print_help_protected, argv[0]);
    if (status != 0) report(L);
    lua_close(L);
    return status ? 1 : 0;
  }

  m.argc = argc;
  m.argv = argv;
  m.status = 0;
  status = lua_cpcall(L, pmain, &m);
  if (status != 0) report(L); /* failed outside the script, e.g. out of memory */
  lua_close(L);               /* flushes and closes the script's files */
  if (interrupted) return 128 + interrupted;
  return (status != 0 || m.status != 0) ? 1 : 0;
}
