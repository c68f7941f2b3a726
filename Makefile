# cqlua: build the C host, the engine (float32 and float64 libraries), run tests, benchmarks and the demo.
# Every user-facing target installs its Debian dependencies first (apt-get, as root) if they are missing.

PREFIX   ?= /usr/local
BUILD    ?= build
CC       ?= gcc
OPT      ?= -O3 -march=native
CFLAGS   ?= $(OPT) -g
CFLAGS   += -std=c99 -fno-math-errno -ffp-contract=fast -Wall -Wextra -Wno-unused-parameter -fPIC -fopenmp -D_GNU_SOURCE
LUAJIT_CFLAGS := $(shell pkg-config --cflags luajit 2>/dev/null || echo -I/usr/include/luajit-2.1)
LUAJIT_LIBS   := $(shell pkg-config --libs luajit 2>/dev/null || echo -lluajit-5.1)
VERSION  := 0.1.0

DEB_PACKAGES := luajit libluajit-5.1-dev lua-busted libstb-dev libnlopt-dev pkg-config gcc make

ENGINE_SRC := $(wildcard engine/*.c)
ENGINE_SRC := $(filter-out engine/cqlua.c engine/png.c,$(ENGINE_SRC))
ENGINE_HDR := $(wildcard engine/*.h)

.PHONY: all deps test bench demo install clean
all: $(BUILD)/bin/cqlua $(BUILD)/lib/libcq_f32.so $(BUILD)/lib/libcq_f64.so

# Install the Debian packages that are missing (needs root; prints what to run otherwise).
deps:
	@missing=""; for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "run as root: apt-get install$$missing"; exit 1; fi; \
	fi

# The host also carries engine/png.c (PNG frames via stb); -Wl,-E exports its cq_png_* symbols to the FFI (ffi.C).
$(BUILD)/bin/cqlua: engine/cqlua.c engine/png.c | $(BUILD)/bin
	$(CC) $(CFLAGS) $(LUAJIT_CFLAGS) -DCQ_VERSION='"$(VERSION)"' -o $@ engine/cqlua.c engine/png.c $(LUAJIT_LIBS) -Wl,-E -ldl -lm

# The same engine sources compiled twice: float32 and float64 (selectable from Lua). -z nodelete: the
# libraries (and the OpenMP runtime) stay mapped when LuaJIT unloads them at exit, while worker threads exist.
$(BUILD)/lib/libcq_f32.so: $(ENGINE_SRC) $(ENGINE_HDR) Makefile | $(BUILD)/lib
	$(CC) $(CFLAGS) -shared -Wl,-z,nodelete -DCQ_REAL_BITS=32 -o $@ $(ENGINE_SRC) -lm
$(BUILD)/lib/libcq_f64.so: $(ENGINE_SRC) $(ENGINE_HDR) Makefile | $(BUILD)/lib
	$(CC) $(CFLAGS) -shared -Wl,-z,nodelete -DCQ_REAL_BITS=64 -o $@ $(ENGINE_SRC) -lm

# CUDA backend (cuda/, issue 4): when nvcc is found, the same engine sources plus cuda/cuda.cu, compiled with
# -DCQ_WITH_CUDA, give libcq_cuda_f32.so / libcq_cuda_f64.so (chosen at run time by cq.world{backend = ...}).
# cudart is linked statically, so only the driver (libcuda.so) is needed at run time; the CPU libraries above
# never depend on CUDA. `make NVCC=` builds without it.
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_GENCODE ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
NVCCFLAGS ?= -O3 -std=c++17 -lineinfo
CUDA_SRC := $(wildcard cuda/*.cu) $(wildcard cuda/*.cuh)
ifneq ($(strip $(NVCC)),)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
CUDA_LIBDIR ?= $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/targets/x86_64-linux/lib $(CUDA_HOME)/lib))
CUDA_LIBS := $(BUILD)/lib/libcq_cuda_f32.so $(BUILD)/lib/libcq_cuda_f64.so
all: $(CUDA_LIBS)
$(BUILD)/cuda/cuda_f32.o $(BUILD)/cuda/cuda_f64.o: $(BUILD)/cuda/cuda_f%.o: $(CUDA_SRC) $(ENGINE_HDR) Makefile | $(BUILD)/cuda
	$(NVCC) $(NVCCFLAGS) $(CUDA_GENCODE) -Xcompiler -fPIC,-Wall,-Wextra,-Wno-unused-parameter -DCQ_WITH_CUDA \
	  -DCQ_REAL_BITS=$* -c cuda/cuda.cu -o $@
$(CUDA_LIBS): $(BUILD)/lib/libcq_cuda_f%.so: $(BUILD)/cuda/cuda_f%.o $(ENGINE_SRC) $(ENGINE_HDR) Makefile | $(BUILD)/lib
	$(CC) $(CFLAGS) -shared -Wl,-z,nodelete -DCQ_WITH_CUDA -DCQ_REAL_BITS=$* -o $@ $(ENGINE_SRC) $< \
	  -L$(CUDA_LIBDIR) -lcudart_static -lstdc++ -ldl -lrt -lpthread -lm
else
all: cuda-skip
.PHONY: cuda-skip
cuda-skip:
	@echo "make: nvcc not found: skipping the CUDA backend ($(BUILD)/lib/libcq_cuda_*.so); set NVCC=/path/to/nvcc to build it"
endif

$(BUILD)/bin $(BUILD)/lib $(BUILD)/cuda:
	mkdir -p $@

test: deps all
	$(BUILD)/bin/cqlua tests/run.lua

bench: deps all
	$(BUILD)/bin/cqlua tools/bench.lua

demo: deps all
	$(BUILD)/bin/cqlua examples/walker2d.lua

install: all
	install -d $(PREFIX)/bin $(PREFIX)/lib/cqlua $(PREFIX)/share/cqlua/lua/cq
	install -m 755 $(BUILD)/bin/cqlua $(PREFIX)/bin/cqlua
	install -m 644 $(BUILD)/lib/*.so $(PREFIX)/lib/cqlua/
	cp -r lua/. $(PREFIX)/share/cqlua/lua/

clean:
	rm -rf $(BUILD)
