#!/bin/bash
# tools/gpu_check.sh PART... : issue 14's checks on a machine with a GPU, for a lent device machine that has none of
# the Debian packages (tools/gpu_bundle.sh packs them into .gpu/ here; carry build/bin, build/lib and .gpu).
# Parts, run in the order given, each under its own time limit, logs in $OUT (default out/gpu):
#   info       nvidia-smi and the device the engine sees
#   tests      cqlua tests/run.lua --tags=gpu (CUDA vs CPU, every material, actuator kind and integrator)
#   ptx80      the same tests with build/lib80's CUDA libraries: compute_80 PTX alone (tools/gpu_bundle.sh --ptx80
#              builds them), which the driver compiles at load: the code a compute capability 8.x GPU runs, on this one
#   bench      cqlua tools/bench.lua gpu (Table II scenes, 512k and 1M particles, fwd and bwd)
#   bench-pinned  the same with CQ_CUDA_SHARED_STATES=0 (states copied to and from the host every control step)
#   memcheck   compute-sanitizer memcheck over the scenes of tools/gpu_sanitize.lua
#   racecheck  compute-sanitizer racecheck over the same scenes
#   suite      the whole suite, with backend = "auto" choosing the GPU
#   profile    Nsight Compute's duration of every kernel of tools/gpu_prof.lua (the 512k cube; PROF_SIDE=20: the 8k
#              cube), summed per kernel
#   detail     Nsight Compute's stall reasons for one launch of DETAIL_KERNEL (cqk_p2g_3) on the cube of DETAIL_SIDE^3
#              particles (20: 8k), and its atomics
#   small      tools/gpu_small.lua (2D 6.4k, seed 004's 3D scene) under Nsight Systems: where small scenes' time goes
#   timeline   tools/gpu_timeline.lua under CQ_CUDA_TIMING=1: device time per operation and idle time, per phase
#   topo       rotator3d_topo's iteration through its whole design (tools/bench.lua rotator): states in managed
#              memory (the default), then in page-locked host memory copied every control step
#              (CQ_CUDA_SHARED_STATES=0), then the default under CQ_CUDA_TIMING=1 (device time and idle time)
#   walker     examples/walker2d.lua for 10 iterations (backend "auto": the GPU), to compare with the CPU's log
# Environment: T_TESTS, T_BENCH, T_SAN, T_SUITE, T_TOPO, T_WALKER (seconds); TOPO_PINNED=0 skips topo's pinned run.
set -u -o pipefail
cd "$(dirname "$0")/.."
source .gpu/env.sh
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
run() { # name limit command...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - t0)) s (limit $limit s); last lines:"
  grep -E "passed|failed|Error|error|ERROR|FAIL|====" "$OUT/$name.log" | tail -15
}
for part in "$@"; do
  case $part in
    info) nvidia-smi > "$OUT/info.log" 2>&1; nvcc --version >> "$OUT/info.log" 2>&1
          build/bin/cqlua -e 'local C = require "cq._ffi"; local lib, why = C.cuda_lib("f32"); print(lib and "cuda ok" or why)' \
            >> "$OUT/info.log" 2>&1; tail -5 "$OUT/info.log" ;;
    tests) run tests "${T_TESTS:-330}" build/bin/cqlua tests/run.lua --tags=gpu tests/gpu_spec.lua; tail -25 "$OUT/tests.log" ;;
    ptx80) CQ_LIB_PATH=build/lib80 build/bin/cqlua -e 'local ffi = require "ffi"; local lib = assert(require("cq._ffi").cuda_lib("f32"))
             local b = ffi.new("char[256]"); lib.cq_cuda_device_info(b, 256); print(ffi.string(b))'
           CQ_LIB_PATH=build/lib80 run ptx80 "${T_TESTS:-330}" build/bin/cqlua tests/run.lua --tags=gpu tests/gpu_spec.lua
           tail -8 "$OUT/ptx80.log" ;;
    bench) run bench "${T_BENCH:-200}" build/bin/cqlua tools/bench.lua gpu; cat "$OUT/bench.log" ;;
    bench-pinned) # the same with states in page-locked host memory, copied in and out every control step
      CQ_CUDA_SHARED_STATES=0 run bench-pinned "${T_BENCH:-200}" build/bin/cqlua tools/bench.lua gpu
      cat "$OUT/bench-pinned.log" ;;
    memcheck|racecheck)
      # LuaJIT's compiler does not run under the sanitizer (the process exits silently): the interpreter does.
      # CQ_CUDA_LOCAL_MIN_BLOCKS=0: the scenes are small, and would otherwise skip the shared-memory scatter
      CQ_CUDA_LOCAL_MIN_BLOCKS=${CQ_CUDA_LOCAL_MIN_BLOCKS:-0} SANITIZE_JIT_OFF=1 run "$part" "${T_SAN:-150}" compute-sanitizer --tool "$part" --error-exitcode 9 \
        build/bin/cqlua tools/gpu_sanitize.lua
      cat "$OUT/$part.log" ;;
    topo) run topo "${T_TOPO:-90}" build/bin/cqlua tools/bench.lua rotator; grep "iteration" "$OUT/topo.log"
          if [ "${TOPO_PINNED:-1}" != 0 ]; then
            CQ_CUDA_SHARED_STATES=0 run topo-pinned "${T_TOPO:-90}" build/bin/cqlua tools/bench.lua rotator
            grep "iteration" "$OUT/topo-pinned.log"
          fi
          CQ_CUDA_TIMING=1 run topo-timing "${T_TOPO:-90}" build/bin/cqlua tools/bench.lua rotator
          cat "$OUT/topo-timing.log" ;;
    suite) run suite "${T_SUITE:-400}" build/bin/cqlua tests/run.lua ;;
    profile) ncu --metrics gpu__time_duration.sum --csv --print-units base build/bin/cqlua tools/gpu_prof.lua \
               ${PROF_SIDE:-80} > "$OUT/profile.csv" 2> "$OUT/profile.err"; python3 tools/ncu_summary.py "$OUT/profile.csv" ;;
    detail) # Nsight Compute's stall reasons for one P2G launch of the 8k cube, and the shared-memory atomics in its SASS
      ncu --kernel-name regex:${DETAIL_KERNEL:-cqk_p2g_3} --launch-skip 3 --launch-count 1 --section WarpStateStats \
        --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
        build/bin/cqlua tools/gpu_prof.lua ${DETAIL_SIDE:-20} \
        > "$OUT/detail.log" 2>&1
      grep -vE "^==PROF==|^gpu_prof" "$OUT/detail.log" | grep -E "[0-9]" | cut -c1-150 | head -70
      cuobjdump -sass build/lib/libcq_cuda_f32.so 2>/dev/null \
        | awk -v k="${DETAIL_KERNEL:-cqk_p2g_3}" '/Function :/{p = index($0, k) > 0} p' \
        | grep -oE "ATOMS\.[A-Z0-9.]+|RED\.[A-Z0-9.]+|ATOM\.[A-Z0-9.]+|LDL[.A-Z0-9]*|STL[.A-Z0-9]*" | sort | uniq -c ;;
    small) # where the time of small scenes goes: Nsight Systems' API and kernel summaries, else the wall times alone
      if command -v nsys > /dev/null; then
        nsys profile --stats=true --force-overwrite true -o "$OUT/small" build/bin/cqlua tools/gpu_small.lua \
          > "$OUT/small.log" 2>&1
        grep -E "us per substep|per substep" "$OUT/small.log"
        awk '/cuda_api_sum|cuda_gpu_kern_sum|cuda_gpu_mem_time_sum/{p=1} p&&NF==0{c++} p&&c<3{print}' "$OUT/small.log" \
          | cut -c1-160 | head -90
      else
        echo "no nsys"; build/bin/cqlua tools/gpu_small.lua
      fi ;;
    timeline) CQ_CUDA_TIMING=1 build/bin/cqlua tools/gpu_timeline.lua ${TIMELINE_SCENES:-} > "$OUT/timeline.log" 2>&1
              cat "$OUT/timeline.log" ;;
    walker) run walker "${T_WALKER:-150}" build/bin/cqlua examples/walker2d.lua 10; tail -4 "$OUT/walker.log" ;;
    *) echo "gpu_check.sh: unknown part '$part' (info, tests, ptx80, bench, bench-pinned, memcheck, racecheck, suite, profile, detail, small, timeline, walker)"; exit 2 ;;
  esac
done
