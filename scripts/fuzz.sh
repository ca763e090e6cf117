#!/usr/bin/env bash
# fuzz.sh - builds the libFuzzer targets (tests/fuzz/fuzz_*.c) with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer into build-fuzz/, and runs
# each for SECONDS (default 60) on a copy of its seed corpus
# (tests/fuzz/corpus/<name>/) plus the crashes once found
# (tests/fuzz/crashes/<name>/), as many targets at once as there are cores.
#
# Usage: scripts/fuzz.sh [SECONDS]
# Env:   HB_FUZZ_BUILD   build folder (default build-fuzz/ in the repository)
#        HB_FUZZ_JOBS    targets run at once (default: the number of cores)
#        HB_FUZZ_TARGETS only these targets (e.g. "fuzz_plan fuzz_batch");
#                        default: every tests/fuzz/fuzz_*.c
#        HB_FUZZ_ARGS    more libFuzzer options for every target, e.g.
#                        "-fork=4" (4 processes per target) or "-max_len=65536"
# Exit status: 0 when no target failed; 1 when one crashed, leaked, hung or
# ran out of memory: the script names the target and the input, and copies
# the input into tests/fuzz/crashes/<name>/, where the replay test of the
# normal build (ctest -L fuzz) runs it from then on (commit it with its
# fix); 2 on a usage error.
# The inputs the fuzzers find stay in build-fuzz/work/<name>/corpus (not
# committed; copy the interesting ones into the seed corpus by hand).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds == 0)) || (($# > 1)); then
  echo "usage: scripts/fuzz.sh [SECONDS] (a whole number of seconds above 0)" >&2
  exit 2
fi
build=${HB_FUZZ_BUILD:-$root/build-fuzz}
jobs=${HB_FUZZ_JOBS:-$(nproc)}
read -r -a extra_args <<<"${HB_FUZZ_ARGS:-}"

HB_SETUP_SANITIZERS=1 bash "$root/scripts/setup.sh"
command -v clang >/dev/null || { echo "fuzz.sh: clang not found" >&2; exit 1; }

echo "== fuzz.sh: configuring $build (clang, libFuzzer, address,undefined)"
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHB_FUZZ=ON -DHB_SANITIZE=address,undefined -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link \
  >"$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; exit 1; }

# The targets CMake made (one needing a library that does not exist yet is
# left out there, and says so in the configure log).
available=$(cmake --build "$build" --target help)
wanted=()
for src in "$root"/tests/fuzz/fuzz_*.c; do
  wanted+=("$(basename "$src" .c)")
done
[ -n "${HB_FUZZ_TARGETS:-}" ] && read -r -a wanted <<<"$HB_FUZZ_TARGETS"
targets=()
for t in "${wanted[@]}"; do
  if grep -qw -- "$t" <<<"$available"; then
    targets+=("$t")
  else
    echo "fuzz.sh: $t is not a target of this build (see $build/configure.log)"
  fi
done
((${#targets[@]})) || { echo "fuzz.sh: no fuzz targets" >&2; exit 1; }
for t in "${targets[@]}"; do
  [ -d "$root/tests/fuzz/corpus/${t#fuzz_}" ] && [ -n "$(ls -A "$root/tests/fuzz/corpus/${t#fuzz_}")" ] ||
    { echo "fuzz.sh: $t has no seed corpus in tests/fuzz/corpus/${t#fuzz_}/" >&2; exit 1; }
done
echo "== fuzz.sh: building ${targets[*]}"
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >"$build/build.log" 2>&1 ||
  { tail -n 40 "$build/build.log" >&2; exit 1; }

export ASAN_OPTIONS="abort_on_error=1:allocator_may_return_null=1:detect_leaks=1"
# As in sanitize.sh: pocl's own lifetime state is not our leak, and
# LeakSanitizer's tracer must not walk pocl's dynamic TLS.
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:print_suppressions=0:intercept_tls_get_addr=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# run_target T: T for $seconds on a fresh copy of its corpus; its log,
# corpus and artifacts under $build/work/<name>/.
run_target() {
  local t=$1 name=${1#fuzz_} work="$build/work/${1#fuzz_}"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp "$root/tests/fuzz/corpus/$name"/* "$work/corpus/"
  if [ -d "$root/tests/fuzz/crashes/$name" ]; then
    find "$root/tests/fuzz/crashes/$name" -maxdepth 1 -type f -exec cp {} "$work/corpus/" \;
  fi
  # -timeout: one input may take this long (the first opens OpenCL engines);
  # -rss_limit_mb: pocl and AddressSanitizer together need more than 2 GB.
  local rc=0
  "$build/tests/fuzz/$t" -max_total_time="$seconds" -timeout=120 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/" "${extra_args[@]}" \
    "$work/corpus" >"$work/log" 2>&1 || rc=$?
  echo "$rc" >"$work/rc"
}

echo "== fuzz.sh: running ${#targets[@]} targets for ${seconds}s each, $jobs at a time"
running=0
for t in "${targets[@]}"; do
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$t" &
  running=$((running + 1))
done
wait

failed=0
for t in "${targets[@]}"; do
  name=${t#fuzz_}
  work="$build/work/$name"
  rc=$(cat "$work/rc" 2>/dev/null || echo "?")
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$' || echo "?")
  found=("$work"/artifacts/*)
  [ -e "${found[0]}" ] || found=()
  if [ "$rc" = 0 ] && ((${#found[@]} == 0)); then
    echo "fuzz.sh: $t: ok, $runs runs, corpus $(ls "$work/corpus" | wc -l) inputs"
    continue
  fi
  failed=1
  echo "fuzz.sh: $t FAILED (exit $rc) after $runs runs; log: $work/log"
  mkdir -p "$root/tests/fuzz/crashes/$name"
  for f in "${found[@]}"; do
    cp "$f" "$root/tests/fuzz/crashes/$name/"
    echo "fuzz.sh: $t: input kept as tests/fuzz/crashes/$name/$(basename "$f")" \
         "(run it again: $build/tests/fuzz/$t tests/fuzz/crashes/$name/$(basename "$f"))"
  done
  grep -m1 -E 'ERROR: |runtime error|check failed|deadly signal' "$work/log" || true
  tail -n 30 "$work/log"
done
exit $failed
