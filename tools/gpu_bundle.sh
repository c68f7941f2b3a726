#!/bin/bash
# tools/gpu_bundle.sh: packs what build/bin/cqlua needs at run time into .gpu/ (git-ignored), for a machine that has
# a GPU but none of the Debian packages (the lent device machines of docs/benchmarks.md, issue 14): the shared
# libraries outside glibc that the host, the engine libraries and the Lua C modules link, LuaJIT's jit.* modules,
# and busted with its Lua dependencies. On that machine: `source .gpu/env.sh` and run build/bin/cqlua as usual.
set -euo pipefail
cd "$(dirname "$0")/.."
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
