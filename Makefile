# cqlua: build the C host, the engine (float32 and float64 libraries), run tests, benchmarks and the demo.
# Every user-facing target installs its Debian dependencies first (apt-get, as root) if they are missing.

PREFIX   ?= /usr/local
BUILD    ?= build
CC       ?= gcc
OPT      ?= -O3 -march=native
CFLAGS   ?= $(OPT) -g
FP_CONTRACT ?= fast
# -fno-trapping-math: nothing here enables floating-point traps (blow-ups are found by checking values), and it lets
# GCC vectorise floor() in the particle loops (engine/backends/cpu/cpu_loops.h).
CFLAGS   += -std=c99 -fno-math-errno -fno-trapping-math -ffp-contract=$(FP_CONTRACT) -Wall -Wextra -Wno-unused-parameter -fPIC -fopenmp -D_GNU_SOURCE
LUAJIT_CFLAGS := $(shell pkg-config --cflags luajit 2>/dev/null || echo -I/usr/include/luajit-2.1)
LUAJIT_LIBS   := $(shell pkg-config --libs luajit 2>/dev/null || echo -lluajit-5.1)
VERSION  := 0.1.0
# The version cqlua reports (and every study manifest records): the release; src.<hash>, a hash of the sources whose
# change can change a result (engine/, cuda/, lua/, scenes/, as they are on disk), so that builds of two commits that
# differ only in docs or tests count as one build; and, for finding the code, the git commit built from, "-modified"
# when engine/, cuda/ or lua/ differed from it. Between src and git, the CPU the engine was compiled for (-march=native
# on an AMD host gives other code, other roundings, than on an Intel one). Results of different sources or targets are
# told apart (a chaotic rollout amplifies any change of rounding). build/version.txt changes only when this does, and
# the host is rebuilt then.
SRC_HASH := $(shell find engine cuda lua scenes -type f \( -name '*.[ch]' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.lua' \) \
              | LC_ALL=C sort | xargs cat | sha1sum | cut -c1-10)
GIT_REV  := $(shell git rev-parse --short=10 HEAD 2>/dev/null)
GIT_MOD  := $(if $(GIT_REV),$(shell git diff --quiet HEAD -- engine cuda lua 2>/dev/null || echo -modified))
TARGET_ARCH := $(shell $(CC) $(OPT) -Q --help=target 2>/dev/null | awk '$$1 == "-march=" { print $$2; exit }')
FULL_VERSION := $(VERSION)+src.$(SRC_HASH)$(if $(TARGET_ARCH),.$(TARGET_ARCH))$(if $(GIT_REV),.git.$(GIT_REV)$(GIT_MOD))
$(shell mkdir -p $(BUILD) && (echo '$(FULL_VERSION)' | cmp -s - $(BUILD)/version.txt || echo '$(FULL_VERSION)' > $(BUILD)/version.txt))

# What building and the demo need (make deps, make demo): the host, the engine and the walker's PNG frames.
# the implicit solve's direct preconditioner (engine/integrators/implicit_factor.c, engine/integrators/sparse_cholesky.c): METIS (Apache-2.0)
# orders it, LAPACK/BLAS do its dense work; OpenBLAS's pthread build takes the BLAS and LAPACK alternatives. The engine
# sets it to one thread (its own OpenMP threads are the parallelism, so the factors stay the same for any thread
# count); its serial build is not safe to call from two threads at once (see check_blas in sparse_cholesky.c)
DEB_PACKAGES := luajit libluajit-5.1-dev lua-cjson lua-filesystem libstb-dev libnlopt-dev libtinyobjloader-dev libassimp-dev \
  pkg-config gcc g++ make libmetis-dev liblapack-dev libblas-dev libopenblas0-pthread
# Features that run other programs, each its own target (make deps-video ...); make deps-all (and make test) installs
# them all. A feature whose program is missing says which of these targets installs it.
# videos (cq.frames.video)
DEB_VIDEO := ffmpeg
# plots (cq.plot)
DEB_PLOT := gnuplot-nox
# robot:gmsh meshes .geo files with gmsh, run as a subprocess only (GPL: never linked)
DEB_GMSH := gmsh
# parameter studies on a SLURM cluster (cqlua study slurm, cqlua study cluster): a one-node SLURM with munge here
DEB_SLURM := slurm-wlm munge
# the test suite: busted, and the independent PLY reader of tests/export_spec.lua
DEB_TEST := lua-busted python3-meshio
DEB_ALL := $(DEB_PACKAGES) $(DEB_VIDEO) $(DEB_PLOT) $(DEB_GMSH) $(DEB_SLURM) $(DEB_TEST)

# The engine library's folders, by layer (docs/architecture.md's folder map); engine/host/ is the cqlua program and
# its PNG, mesh and Gmsh MSH loaders, not part of the library.
ENGINE_DIRS := engine/core engine/stages engine/materials engine/terms engine/integrators engine/backends \
  engine/backends/cpu
HOST_DIR := engine/host
HOST_SRC := $(wildcard $(HOST_DIR)/*.c)
HOST_HDR := $(wildcard $(HOST_DIR)/*.h)
HOST_CXXFLAGS := $(OPT) -g -std=c++11 -Wall -Wextra -fPIC
ENGINE_SRC := $(foreach d,$(ENGINE_DIRS),$(wildcard $(d)/*.c))
vpath %.c $(ENGINE_DIRS)
# The list of material headers, generated from the material registry (engine/core/registry.h, CQ_MATERIALS): fields.h
# (their parameters) and material.h (their code) include it, so that a material is its header plus its registry line.
GEN := $(BUILD)/gen
MATERIALS_H := $(GEN)/cq_materials.h
ENGINE_HDR_SRC := $(foreach d,$(ENGINE_DIRS),$(wildcard $(d)/*.h))
ENGINE_HDR := $(ENGINE_HDR_SRC) $(MATERIALS_H)
ENGINE_INC := -I$(GEN) $(addprefix -I,$(ENGINE_DIRS))
CFLAGS += $(ENGINE_INC)
ENGINE_CFLAGS := -DCQ_LIB_VERSION='"$(VERSION)"' 
ENGINE_LIBS := -lmetis -llapack -lblas -lm

.PHONY: all deps deps-all deps-video deps-plot deps-gmsh deps-slurm test test-slurm bench bench-fluid bench-implicit bench-peers demo install clean
all: $(BUILD)/bin/cqlua $(BUILD)/lib/libcq_f32.so $(BUILD)/lib/libcq_f64.so $(BUILD)/lib/cq_ffi.h

# Install the Debian packages that are missing (needs root; prints what to run otherwise): deps what the build and
# the demo need, deps-all everything (the features' programs and the test suite's packages too), deps-<feature> one
# feature's.
define install_missing
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	  else echo "run as root: apt-get install$$missing"; exit 1; fi; \
	fi
endef
deps:
	$(call install_missing,$(DEB_PACKAGES))
deps-all:
	$(call install_missing,$(DEB_ALL))
deps-video:
	$(call install_missing,$(DEB_VIDEO))
deps-plot:
	$(call install_missing,$(DEB_PLOT))
deps-gmsh:
	$(call install_missing,$(DEB_GMSH))
deps-slurm:
	$(call install_missing,$(DEB_SLURM))

# material_list DIR OUT: the list of the material headers registered in DIR/registry.h, written to OUT
define material_list
	printf '#include "registry.h"\n#define CQI_NAME(ID, name, ...) CQI_HEADER name\nCQ_MATERIALS(CQI_NAME)\n' | \
	  $(CC) -E -P -I$(1) -x c - | tr ' ' '\n' | \
	  awk 'BEGIN { print "/* Generated by the Makefile from registry.h (CQ_MATERIALS): every material header. */" } \
	       p { print "#include \"material_" $$0 ".h\""; p = 0 } $$0 == "CQI_HEADER" { p = 1 }' > $(2).tmp
	cmp -s $(2).tmp $(2) && rm $(2).tmp || mv $(2).tmp $(2) # unchanged: the engine is not rebuilt
endef
$(MATERIALS_H): engine/core/registry.h Makefile
	mkdir -p $(GEN)
	$(call material_list,engine/core,$@)

# The host also carries the PNG (stb) and mesh loaders (OBJ: tinyobjloader, compiled into engine/host/mesh_obj.cpp; STL:
# assimp's C API) and the interruption flag (host.h); -Wl,-E exports their cqh_png_* / cqh_mesh_* / cqh_* symbols
# to the FFI (ffi.C).
$(BUILD)/obj/host/mesh_obj.o: $(HOST_DIR)/mesh_obj.cpp $(HOST_DIR)/mesh_load.h $(HOST_DIR)/readfile.h Makefile
	mkdir -p $(dir $@)
	$(CXX) $(HOST_CXXFLAGS) -c $< -o $@
$(BUILD)/bin/cqlua: $(HOST_SRC) $(HOST_HDR) $(BUILD)/obj/host/mesh_obj.o $(BUILD)/version.txt | $(BUILD)/bin
	$(CC) $(CFLAGS) -I$(HOST_DIR) $(LUAJIT_CFLAGS) -DCQ_VERSION='"$(FULL_VERSION)"' -o $@ $(HOST_SRC) $(BUILD)/obj/host/mesh_obj.o \
	  $(LUAJIT_LIBS) -lassimp -lstdc++ -Wl,-E -ldl -lm

# The Lua layer's FFI declarations: the public headers run through the preprocessor (no hand-written copy).
$(BUILD)/lib/cq_ffi.h: $(ENGINE_HDR) $(HOST_HDR) Makefile | $(BUILD)/lib
	$(CC) -E -P $(ENGINE_INC) engine/core/cq.h > $@.tmp && \
	  for h in png mesh msh host; do $(CC) -E -P $(HOST_DIR)/$$h.h >> $@.tmp || exit 1; done && mv $@.tmp $@

# The engine, one object per source and flavour (f32, f64, and with the CUDA backend), so that `nm` shows the layering
# (tests/layers_spec.lua). -z nodelete: the libraries (and the OpenMP runtime) stay mapped when LuaJIT unloads them
# at exit, while worker threads exist.
define ENGINE_FLAVOUR
$(BUILD)/obj/$(1)/%.o: %.c $(ENGINE_HDR) Makefile | $(BUILD)/obj/$(1)
	$$(CC) $$(CFLAGS) $$(ENGINE_CFLAGS) $(2) -c $$< -o $$@
$(BUILD)/obj/$(1):
	mkdir -p $$@
ENGINE_OBJ_$(1) := $(patsubst %.c,$(BUILD)/obj/$(1)/%.o,$(notdir $(ENGINE_SRC)))
endef
# nodelete: LuaJIT dlcloses the engine at exit while idle OpenMP workers may still be running its code.
SHARED := -shared -Wl,-z,nodelete
# The SIMD lanes (engine/backends/cpu/cpu_loops.h) vectorise only through gathers, and some GCC tunings turn gathers off: Debian's
# GCC 12 under -mtune=generic (which -march=native gives on Intel hosts it does not know, e.g. a Xeon it calls
# cooperlake) has them off since its fix for Intel's "Downfall", and the f32 lanes then stay scalar: 0 zmm
# instructions in p2g_adj_lanes_NEOHOOKEAN_3, the rotator's iteration about twice as slow. GATHER_TUNE turns 8- and
# more-element gathers back on, for every flavour; where a tuning has them on already (Zen) it changes nothing.
# GCC's Zen tuning also turns 2- and 4-element gathers off, and without them the float64 SIMD lanes (4 doubles to an
# AVX2 register) do not vectorise at all ("unsupported masked emulated gather"). F64_TUNE turns those back on for the
# f64 flavours: -25 % on the f64 seed 004 2D iteration of an AVX2 Zen 3 host (for f32 it was about 5 % slower there).
# Each is used where the compiler takes the switch (GCC on x86).
tune_if_taken = $(shell echo 'int x;' | $(CC) $(OPT) -mtune-ctrl=$(1) -x c -c -o /dev/null - 2>/dev/null && echo -mtune-ctrl=$(1))
GATHER_TUNE := $(call tune_if_taken,use_gather)
comma := ,
F64_TUNE := $(call tune_if_taken,use_gather$(comma)use_gather_4parts$(comma)use_gather_2parts)
$(eval $(call ENGINE_FLAVOUR,f32,-DCQ_REAL_BITS=32 $(GATHER_TUNE)))
$(eval $(call ENGINE_FLAVOUR,f64,-DCQ_REAL_BITS=64 $(F64_TUNE)))
$(BUILD)/lib/libcq_f32.so: $(ENGINE_OBJ_f32) | $(BUILD)/lib
	$(CC) $(CFLAGS) $(SHARED) -o $@ $^ $(ENGINE_LIBS)
$(BUILD)/lib/libcq_f64.so: $(ENGINE_OBJ_f64) | $(BUILD)/lib
	$(CC) $(CFLAGS) $(SHARED) -o $@ $^ $(ENGINE_LIBS)

# CUDA backend (cuda/): when nvcc is found, the same engine objects built with -DCQ_WITH_CUDA plus cuda/cuda.cu give
# libcq_cuda_f32.so / libcq_cuda_f64.so (chosen at run time by cq.world{backend = ...}). cudart is linked
# statically, so only the driver (libcuda.so) is needed at run time; the CPU libraries above never depend on CUDA.
# `make NVCC=` builds without it.
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
# Machine code for the GPUs people have: sm_80 (A100, A30), sm_86 (A10/A40, RTX 30xx), sm_89 (L4/L40, RTX 40xx),
# sm_90 (H100, H200), and compute_90 PTX that the driver compiles for anything newer (sm_80 code would run on every
# 8.x too; each 8.x gets its own, tuned for its SM, at about 20 s of nvcc per architecture and precision). The code
# has nothing Hopper-only; the register caps in cuda/cuda_loops.cuh were tuned on an H100. A build for one GPU
# compiles faster: e.g. CUDA_GENCODE='-gencode arch=compute_90,code=sm_90'.
CUDA_GENCODE ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 \
  -gencode arch=compute_89,code=sm_89 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
comma := ,
# the targets, named in the library's message when it holds no code for a device: sm_80/sm_90/compute_90
CUDA_TARGETS = $(subst $(eval) ,/,$(strip $(patsubst code=%,%,$(filter code=%,$(subst $(comma), ,$(CUDA_GENCODE))))))
NVCCFLAGS ?= -O3 -std=c++17 -lineinfo
CUDA_SRC := $(wildcard cuda/*.cu) $(wildcard cuda/*.cuh)
ifneq ($(strip $(NVCC)),)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
CUDA_LIBDIR ?= $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/targets/x86_64-linux/lib $(CUDA_HOME)/lib))
CUDA_LIBS := $(BUILD)/lib/libcq_cuda_f32.so $(BUILD)/lib/libcq_cuda_f64.so
all: $(CUDA_LIBS)
$(eval $(call ENGINE_FLAVOUR,cuda_f32,-DCQ_REAL_BITS=32 -DCQ_WITH_CUDA $(GATHER_TUNE)))
$(eval $(call ENGINE_FLAVOUR,cuda_f64,-DCQ_REAL_BITS=64 -DCQ_WITH_CUDA $(F64_TUNE)))
$(BUILD)/cuda/cuda_f32.o $(BUILD)/cuda/cuda_f64.o: $(BUILD)/cuda/cuda_f%.o: $(CUDA_SRC) $(ENGINE_HDR) Makefile | $(BUILD)/cuda
	$(NVCC) $(NVCCFLAGS) $(CUDA_GENCODE) $(ENGINE_INC) -Xcompiler -fPIC,-Wall,-Wextra,-Wno-unused-parameter -DCQ_WITH_CUDA \
	  -DCQ_REAL_BITS=$* '-DCQ_CUDA_TARGETS="$(CUDA_TARGETS)"' -c cuda/cuda.cu -o $@
$(BUILD)/lib/libcq_cuda_f32.so: $(BUILD)/cuda/cuda_f32.o $(ENGINE_OBJ_cuda_f32) | $(BUILD)/lib
	$(CC) $(CFLAGS) $(SHARED) -o $@ $^ -L$(CUDA_LIBDIR) -lcudart_static -lstdc++ -ldl -lrt -lpthread $(ENGINE_LIBS)
$(BUILD)/lib/libcq_cuda_f64.so: $(BUILD)/cuda/cuda_f64.o $(ENGINE_OBJ_cuda_f64) | $(BUILD)/lib
	$(CC) $(CFLAGS) $(SHARED) -o $@ $^ -L$(CUDA_LIBDIR) -lcudart_static -lstdc++ -ldl -lrt -lpthread $(ENGINE_LIBS)
else
all: cuda-skip
.PHONY: cuda-skip
cuda-skip:
	@echo "make: nvcc not found: skipping the CUDA backend ($(BUILD)/lib/libcq_cuda_*.so); set NVCC=/path/to/nvcc to build it"
endif

$(BUILD)/bin $(BUILD)/lib $(BUILD)/cuda:
	mkdir -p $@

# A test-only copy of the engine with one line added to each table of fields.h: a state field J and a differentiable
# parameter C10 (tests/engine_spec.lua shows that everything else follows from the tables).
FIELDS_TEST := $(BUILD)/test-fields
$(FIELDS_TEST)/lib/libcq_f64.so: $(ENGINE_SRC) $(ENGINE_HDR) $(BUILD)/lib/cq_ffi.h Makefile
	rm -rf $(FIELDS_TEST) && mkdir -p $(FIELDS_TEST)/src $(FIELDS_TEST)/lib
	cp $(ENGINE_SRC) $(ENGINE_HDR) $(FIELDS_TEST)/src/
	sed -i '/^  X(F, CQ_SHAPE_MAT/i\  X(J, CQ_SHAPE_SCALAR, CQ_INIT_ZERO, "volume ratio (the one added line)") \\' $(FIELDS_TEST)/src/fields.h
	sed -i '/^  X(nu, cq_real/a\  X(C10, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 2, 0, INFINITY, CQ_OPEN_LO, "Mooney-Rivlin C10 (the one added line)") \\' $(FIELDS_TEST)/src/fields.h
	diff engine/core/fields.h $(FIELDS_TEST)/src/fields.h > $(FIELDS_TEST)/fields.diff || true
	$(CC) $(CFLAGS) $(ENGINE_CFLAGS) $(SHARED) -DCQ_REAL_BITS=64 -o $@ \
	  $(addprefix $(FIELDS_TEST)/src/,$(notdir $(ENGINE_SRC))) $(ENGINE_LIBS)
	cp $(BUILD)/lib/cq_ffi.h $(FIELDS_TEST)/lib/

# A test-only copy of the engine with one material added as docs/architecture.md's recipe says: its header (a copy of
# material_neohookean.h named neohookean_copy) and its one registry line (tests/engine_spec.lua FD-checks it and
# compares it with neohookean).
MATERIAL_TEST := $(BUILD)/test-material
$(MATERIAL_TEST)/lib/libcq_f64.so: $(ENGINE_SRC) $(ENGINE_HDR) $(BUILD)/lib/cq_ffi.h Makefile
	rm -rf $(MATERIAL_TEST) && mkdir -p $(MATERIAL_TEST)/src $(MATERIAL_TEST)/lib
	cp $(ENGINE_SRC) $(ENGINE_HDR_SRC) $(MATERIAL_TEST)/src/
	sed 's/neohookean/neohookean_copy/g' engine/materials/material_neohookean.h > $(MATERIAL_TEST)/src/material_neohookean_copy.h
	sed -i '/^  X(COROTATED, corotated,/i\  X(NEOHOOKEAN_COPY, neohookean_copy, "a copy of neohookean (the one added line)", 1, 0, 0, __VA_ARGS__) \\' \
	  $(MATERIAL_TEST)/src/registry.h
	diff engine/core/registry.h $(MATERIAL_TEST)/src/registry.h > $(MATERIAL_TEST)/registry.diff || true
	$(call material_list,$(MATERIAL_TEST)/src,$(MATERIAL_TEST)/src/cq_materials.h)
	$(CC) $(CFLAGS) $(ENGINE_CFLAGS) $(SHARED) -DCQ_REAL_BITS=64 -o $@ \
	  $(addprefix $(MATERIAL_TEST)/src/,$(notdir $(ENGINE_SRC))) $(ENGINE_LIBS)
	cp $(BUILD)/lib/cq_ffi.h $(MATERIAL_TEST)/lib/

# Unit test of backend primitives in C (tests/c/), linked against the f64 engine objects.
$(BUILD)/test/backend_test: tests/c/backend_test.c $(ENGINE_OBJ_f64) $(ENGINE_HDR)
	mkdir -p $(BUILD)/test
	$(CC) $(CFLAGS) -DCQ_REAL_BITS=64 -o $@ tests/c/backend_test.c $(ENGINE_OBJ_f64) $(ENGINE_LIBS)

# The grid fluid's gradient and Hessian product against central differences (tests/c/fill_test.c).
$(BUILD)/test/fill_test: tests/c/fill_test.c $(ENGINE_OBJ_f64) $(ENGINE_HDR)
	mkdir -p $(BUILD)/test
	$(CC) $(CFLAGS) -DCQ_REAL_BITS=64 -o $@ tests/c/fill_test.c $(ENGINE_OBJ_f64) $(ENGINE_LIBS)

# The material adjoints against central differences at repeated stretches (tests/c/material_test.c).
$(BUILD)/test/material_test: tests/c/material_test.c $(ENGINE_HDR)
	mkdir -p $(BUILD)/test
	$(CC) $(CFLAGS) -DCQ_REAL_BITS=64 -o $@ tests/c/material_test.c -lm

# The sparse Cholesky of the implicit solve and the semi-definite projection, on their own (tests/c/cholesky_test.c).
$(BUILD)/test/cholesky_test: tests/c/cholesky_test.c $(BUILD)/obj/f64/sparse_cholesky.o $(ENGINE_HDR)
	mkdir -p $(BUILD)/test
	$(CC) $(CFLAGS) -DCQ_REAL_BITS=64 -o $@ tests/c/cholesky_test.c $(BUILD)/obj/f64/sparse_cholesky.o $(ENGINE_LIBS)

# The spec files run in one worker process per core (tests/_parallel.lua); TEST_JOBS=1 runs them one after another.
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
# The build runs on every core (a recursive make with -j: a -j added inside a makefile takes effect only from GNU make
# 4.4 on, and Debian 12's is 4.3); then the specs.
TEST_TARGETS := all $(FIELDS_TEST)/lib/libcq_f64.so $(MATERIAL_TEST)/lib/libcq_f64.so $(BUILD)/test/backend_test \
  $(BUILD)/test/fill_test $(BUILD)/test/material_test $(BUILD)/test/cholesky_test
test: deps-all
	$(MAKE) -j$(TEST_JOBS) $(TEST_TARGETS)
	$(BUILD)/bin/cqlua tests/run.lua --jobs $(TEST_JOBS)

# The SLURM part of the suite alone (make test runs it too): a one-node SLURM started here, a study submitted as a
# job array and collected (tests/study_slurm_spec.lua; needs root, like the daemons). The cluster is started by
# tools/slurm_cluster.sh, the script behind `cqlua study cluster start|status|stop` (a local cluster for users).
test-slurm: deps-all all
	$(BUILD)/bin/cqlua tests/run.lua tests/study_slurm_spec.lua

bench: deps all
	$(BUILD)/bin/cqlua tools/bench.lua

# The fluid validations (hydrostatic column, Martin & Moyce's dam break) at 8 to 64 cells across the column, about
# a minute and a half on 2 cores; tables on stdout, CSV files and figures in out/ (docs/results/history.md).
bench-fluid: deps-all all
	$(BUILD)/bin/cqlua tools/fluid_validation.lua

# Issue 11's cost benchmark: 1 s of the seed's finger (real bulk modulus, 5 kPa ramped over 0.5 s) implicitly at
# 5 ms substeps against the explicit integrator at half its CFL limit (0.02 s of it run, the rest extrapolated):
# wall times, their ratio, tip trajectories (tools/implicit_finger.lua; about 12 minutes; docs/results/history.md). Mesh 3
# (7,670 particles): at mesh 4 (2.6 particles per cell) the unlocked finger sheds a tip particle at 0.68 s.
bench-implicit: deps-all all
	$(BUILD)/bin/cqlua tools/implicit_finger.lua bulk=1.75e9 kPa=5 ramp=0.5 T=1 dt=5e-3 precond=factor explicit_T=0.02 mesh=3

# The walker against a Taichi implementation of the same scene (tools/peers/taichi_walker.py), interleaved in one
# run (tools/bench_peers.lua). Installs taichi from PyPI into the user site when $(PYTHON) cannot import it (pip
# itself from Debian's python3-pip when missing; --break-system-packages where Debian's python3 needs it).
PYTHON ?= python3
bench-peers: deps-all all
	@$(PYTHON) -c "import taichi" >/dev/null 2>&1 || { \
	  $(PYTHON) -m pip --version >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pip; }; \
	  echo "installing taichi: $(PYTHON) -m pip install --user taichi"; \
	  $(PYTHON) -m pip install -q --user taichi || $(PYTHON) -m pip install -q --user --break-system-packages taichi \
	  || $(PYTHON) -m pip install -q taichi || echo "make: could not install taichi for $(PYTHON)"; }
	PYTHON=$(PYTHON) $(BUILD)/bin/cqlua tools/bench_peers.lua

# The demo builds only what the walker needs (the host and the float32 library: no float64, no CUDA), to train
# within about two minutes of the first command on a fresh machine; `make` builds the rest.
demo: deps
	$(MAKE) -j$(TEST_JOBS) $(BUILD)/bin/cqlua $(BUILD)/lib/libcq_f32.so $(BUILD)/lib/cq_ffi.h
	$(BUILD)/bin/cqlua examples/walker2d.lua

# AddressSanitizer + UndefinedBehaviorSanitizer (float-cast-overflow included, every report fatal): the host and the
# CPU engine libraries built again in $(ASAN_BUILD)/ and the whole suite run under them. The host is linked with
# -fsanitize so the sanitizer runtimes load before the ffi.load'ed engine; LuaJIT and libgomp are not instrumented
# and need nothing; tests/lsan.supp names the third-party leaks left. allocator_may_return_null=1: a too-large allocation returns NULL, which the engine reports as
# out of memory, instead of aborting the run. tests/run.lua closes the Lua state at exit, so leaks are checked too.
ASAN_BUILD ?= build-asan
ASAN_OPT   ?= -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all
ASAN_ENV   ?= ASAN_OPTIONS=allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp CQ_SANITIZED=1
.PHONY: test-asan
test-asan: deps-all
	$(MAKE) BUILD=$(ASAN_BUILD) OPT='$(ASAN_OPT)' NVCC= all $(ASAN_BUILD)/test-fields/lib/libcq_f64.so \
	  $(ASAN_BUILD)/test-material/lib/libcq_f64.so $(ASAN_BUILD)/test/backend_test \
	  $(ASAN_BUILD)/test/fill_test $(ASAN_BUILD)/test/material_test $(ASAN_BUILD)/test/cholesky_test
	$(ASAN_ENV) $(ASAN_BUILD)/bin/cqlua tests/run.lua

# Fuzzing the host's loaders with libFuzzer (clang; not part of `make test`): PNG decoding, OBJ and STL (binary and
# ASCII) files, the particle lattice of closed meshes, Gmsh MSH 4.1 files, and JSON checkpoints read back by cq.load
# and cq.train's resumption (json: LuaJIT embedded; a Lua runtime error instead of a message is a finding); the targets
# are described in tests/fuzz/README.md. Each target runs FUZZ_SECONDS from seeds written by tests/fuzz/seeds.lua and
# its growing corpus in $(FUZZ_BUILD)/corpus/, then tests/fuzz/run.sh prints executions and crashes (inputs saved in
# $(FUZZ_BUILD)/crashes/<target>/; replay one with $(FUZZ_BUILD)/fuzz_<target> FILE).
FUZZ_SECONDS ?= 60
FUZZ_BUILD   ?= $(BUILD)/fuzz
FUZZ_CC      ?= clang
FUZZ_CXX     ?= clang++
FUZZ_SAN     ?= address,undefined
FUZZ_FLAGS   ?= -g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=all -D_GNU_SOURCE -I$(HOST_DIR)
FUZZ_TARGETS := png obj stl lattice msh json
FUZZ_MESH    := $(HOST_DIR)/readfile.c $(HOST_DIR)/mesh.c $(HOST_DIR)/mesh_stl.c $(FUZZ_BUILD)/mesh_lattice.o $(FUZZ_BUILD)/mesh_obj.o
.PHONY: fuzz fuzz-deps
fuzz: deps $(BUILD)/bin/cqlua $(BUILD)/lib/cq_ffi.h $(addprefix $(FUZZ_BUILD)/fuzz_,$(FUZZ_TARGETS))
	$(BUILD)/bin/cqlua tests/fuzz/seeds.lua $(FUZZ_BUILD)/seeds
	FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh $(FUZZ_TARGETS)
# clang only for fuzzing: installed here (as root) when missing, like `make deps` does for the rest
fuzz-deps:
	@$(MAKE) --no-print-directory deps DEB_PACKAGES=clang
$(FUZZ_BUILD)/mesh_obj.o: $(HOST_DIR)/mesh_obj.cpp $(HOST_DIR)/mesh_load.h $(HOST_DIR)/readfile.h Makefile | fuzz-deps
	mkdir -p $(FUZZ_BUILD)
	$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link,$(FUZZ_SAN) -std=c++11 -c $< -o $@
# The lattice without comparison tracing (here and in the whole lattice target): its integer compares are lattice
# indices, not input bytes, and tracing them made the fill and its checks five times slower (the lattice target ran at
# a few hundred inputs a second)
$(FUZZ_BUILD)/mesh_lattice.o: $(HOST_DIR)/mesh_lattice.c $(HOST_HDR) Makefile | fuzz-deps
	mkdir -p $(FUZZ_BUILD)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link,$(FUZZ_SAN) -fno-sanitize-coverage=trace-cmp -c $< -o $@
$(FUZZ_BUILD)/fuzz_png: tests/fuzz/fuzz_png.c $(HOST_DIR)/png.c $(HOST_DIR)/readfile.c $(HOST_HDR) | fuzz-deps
	mkdir -p $(FUZZ_BUILD)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer,$(FUZZ_SAN) -o $@ tests/fuzz/fuzz_png.c $(HOST_DIR)/png.c $(HOST_DIR)/readfile.c -lm
$(FUZZ_BUILD)/fuzz_msh: tests/fuzz/fuzz_msh.c $(HOST_DIR)/msh.c $(HOST_DIR)/msh_lattice.c $(HOST_DIR)/readfile.c $(HOST_HDR) | fuzz-deps
	mkdir -p $(FUZZ_BUILD)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer,$(FUZZ_SAN) -o $@ tests/fuzz/fuzz_msh.c $(HOST_DIR)/msh.c $(HOST_DIR)/msh_lattice.c $(HOST_DIR)/readfile.c -lm
# (the Lua code it drives is read at run time: the target is rebuilt for the C side only)
$(FUZZ_BUILD)/fuzz_json: tests/fuzz/fuzz_json.c | fuzz-deps
	mkdir -p $(FUZZ_BUILD)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(LUAJIT_CFLAGS) -fsanitize=fuzzer,$(FUZZ_SAN) -o $@ tests/fuzz/fuzz_json.c $(LUAJIT_LIBS) -lm
$(FUZZ_BUILD)/fuzz_obj $(FUZZ_BUILD)/fuzz_stl: $(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_mesh.c tests/fuzz/fuzz_check.h $(FUZZ_MESH) $(HOST_HDR)
	$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer,$(FUZZ_SAN) -x c -DFUZZ_FORMAT=CQH_MESH_$(shell echo $* | tr a-z A-Z) \
	  -o $@ tests/fuzz/fuzz_mesh.c $(HOST_DIR)/readfile.c $(HOST_DIR)/mesh.c $(HOST_DIR)/mesh_stl.c -x none \
	  $(FUZZ_BUILD)/mesh_lattice.o $(FUZZ_BUILD)/mesh_obj.o -lassimp -lm
$(FUZZ_BUILD)/fuzz_lattice: tests/fuzz/fuzz_lattice.c tests/fuzz/fuzz_check.h $(FUZZ_MESH) $(HOST_HDR)
	$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer,$(FUZZ_SAN) -fno-sanitize-coverage=trace-cmp -x c -o $@ \
	  tests/fuzz/fuzz_lattice.c $(HOST_DIR)/readfile.c \
	  $(HOST_DIR)/mesh.c $(HOST_DIR)/mesh_stl.c -x none $(FUZZ_BUILD)/mesh_lattice.o $(FUZZ_BUILD)/mesh_obj.o -lassimp -lm

# The one code style (.clang-format) over every C, C++ and CUDA source; Debian's clang-format installed when missing.
.PHONY: format
format:
	@$(MAKE) --no-print-directory deps DEB_PACKAGES=clang-format
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cpp' '*.cu' '*.cuh')

install: all
	install -d $(PREFIX)/bin $(PREFIX)/lib/cqlua $(PREFIX)/share/cqlua/lua/cq
	install -m 755 $(BUILD)/bin/cqlua $(PREFIX)/bin/cqlua
	install -m 644 $(BUILD)/lib/*.so $(BUILD)/lib/cq_ffi.h $(PREFIX)/lib/cqlua/
	cp -r lua/. $(PREFIX)/share/cqlua/lua/
	install -d $(PREFIX)/share/cqlua/tools
	install -m 755 tools/slurm_cluster.sh $(PREFIX)/share/cqlua/tools/

clean:
	rm -rf $(BUILD)
