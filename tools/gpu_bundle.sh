#!/bin/bash
# tools/gpu_bundle.sh: packs what build/bin/cqlua needs at run time into .gpu/ (git-ignored), for a machine that has
# a GPU but none of the Debian packages (the lent device machines of docs/results/history.md, issue 14): the shared
# libraries outside glibc that the host, the engine libraries and the Lua C modules link, LuaJIT's jit.* modules,
# and busted with its Lua dependencies. On that machine: `source .gpu/env.sh` and run build/bin/cqlua as usual.
# tools/gpu_bundle.sh --ptx80 also builds build/lib80/: the CUDA libraries with compute_80 PTX alone (the engine objects
# of build/, the CPU libraries linked), for tools/gpu_check.sh ptx80 on a newer GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --ptx80 ]; then
  mkdir -p build/lib80 build/cuda80
  for bits in 32 64; do
    nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    "$nvcc" -O3 -std=c++17 -lineinfo -gencode arch=compute_80,code=compute_80 -Xcompiler -fPIC -DCQ_WITH_CUDA \
      -DCQ_REAL_BITS=$bits '-DCQ_CUDA_TARGETS="compute_80"' -c cuda/cuda.cu -o build/cuda80/cuda_f$bits.o
    cc -O3 -march=native -fopenmp -shared -Wl,-z,nodelete -o build/lib80/libcq_cuda_f$bits.so build/cuda80/cuda_f$bits.o \
      build/obj/cuda_f$bits/*.o -L/usr/local/cuda/lib64 -lcudart_static -lstdc++ -ldl -lrt -lpthread -lmetis -llapack \
      -lblas -lm
    strip --strip-debug build/lib80/libcq_cuda_f$bits.so
    ln -sf ../lib/libcq_f$bits.so build/lib80/libcq_f$bits.so
  done
  ln -sf ../lib/cq_ffi.h build/lib80/cq_ffi.h
fi
rm -rf .gpu && mkdir -p .gpu/lib .gpu/share .gpu/clib
cp -rL /usr/share/lua/5.1/. .gpu/share/
cp -rL /usr/lib/x86_64-linux-gnu/lua/5.1/. .gpu/clib/
cp -rL /usr/share/luajit-2.1*/. .gpu/share/ 2>/dev/null || true
bins=(build/bin/cqlua build/lib/*.so $(find .gpu/clib -name '*.so'))
# glibc's own libraries come from the target machine; everything else travels
ldd "${bins[@]}" 2>/dev/null | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libresolv)\.so' |
  grep -v libopenblas | while read -r lib; do cp -L "$lib" .gpu/lib/; done
# libraries the Lua layer loads itself (ffi.load), which ldd does not see
cp -L /usr/lib/x86_64-linux-gnu/libnlopt.so.0 .gpu/lib/ && ln -sf libnlopt.so.0 .gpu/lib/libnlopt.so
# the reference BLAS instead of OpenBLAS (35 MB): the device machine's limit on what travels is 64 MiB in all
cp -L /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 .gpu/lib/
cat > .gpu/env.sh <<'ENV'
# source .gpu/env.sh: the bundle's libraries and Lua modules first
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LUA_PATH="$here/share/?.lua;$here/share/?/init.lua;;"
export LUA_CPATH="$here/clib/?.so;;"
ENV
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
du -sh .gpu
