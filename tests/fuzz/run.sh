#!/bin/sh
# tests/fuzz/run.sh: runs each fuzzer of `make fuzz` for FUZZ_SECONDS from its corpus and prints one line per target:
# executions, seconds, crashes (inputs libFuzzer saved under $FUZZ_BUILD/crashes/<target>/). Exits 1 on any crash.
# usage (from the Makefile): FUZZ_BUILD=... FUZZ_SECONDS=... tests/fuzz/run.sh png obj stl lattice msh json
set -u
status=0
printf '%-6s %12s %8s %8s  %s\n' target execs seconds crashes log
for t in "$@"; do
  corpus="$FUZZ_BUILD/corpus/$t"; crashes="$FUZZ_BUILD/crashes/$t"; log="$FUZZ_BUILD/$t.log"
  mkdir -p "$corpus" "$crashes"
  found="tests/fuzz/found/$t" # inputs that once crashed, kept as seeds
  [ -d "$found" ] || found=
  dict="tests/fuzz/$t.dict" # tokens of the format, when it has them
  if [ -f "$dict" ]; then dict="-dict=$dict"; else dict=; fi
  "$FUZZ_BUILD/fuzz_$t" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 $dict \
    -artifact_prefix="$crashes/" "$corpus" "$FUZZ_BUILD/seeds/$t" $found >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  crashed=$(ls "$crashes" | wc -l)
  printf '%-6s %12s %8s %8s  %s\n' "$t" "${execs:-?}" "${secs:-?}" "$crashed" "$log"
  if [ "$rc" -ne 0 ] || [ "$crashed" -ne 0 ]; then status=1; fi
done
exit $status
