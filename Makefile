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
ENGINE_SRC := $(filter-out engine/cqlua.c,$(ENGINE_SRC))
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

$(BUILD)/bin/cqlua: engine/cqlua.c | $(BUILD)/bin
	$(CC) $(CFLAGS) $(LUAJIT_CFLAGS) -DCQ_VERSION='"$(VERSION)"' -o $@ $< $(LUAJIT_LIBS) -Wl,-E -ldl -lm

# The same engine sources compiled twice: float32 and float64 (selectable from Lua). -z nodelete: the
# libraries (and the OpenMP runtime) stay mapped when LuaJIT unloads them at exit, while worker threads exist.
$(BUILD)/lib/libcq_f32.so: $(ENGINE_SRC) $(ENGINE_HDR) Makefile | $(BUILD)/lib
	$(CC) $(CFLAGS) -shared -Wl,-z,nodelete -DCQ_REAL_BITS=32 -o $@ $(ENGINE_SRC) -lm
$(BUILD)/lib/libcq_f64.so: $(ENGINE_SRC) $(ENGINE_HDR) Makefile | $(BUILD)/lib
	$(CC) $(CFLAGS) -shared -Wl,-z,nodelete -DCQ_REAL_BITS=64 -o $@ $(ENGINE_SRC) -lm

$(BUILD)/bin $(BUILD)/lib:
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
