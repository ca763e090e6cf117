#!/usr/bin/env bash
# regress.sh - end-to-end throughput of this tree against an older commit,
# side by side: hb_throughput (bench/throughput.c, public API only) built
# against both libraries and run alternately, case by case, so that load
# on the shared machine falls on both alike. For changes to the engine,
# the CPU path or the kernels that must not cost speed.
# Usage: bench/regress.sh OLD_COMMIT    env: ROUNDS (3; each round runs every
#        case once per library, each run a median of hb_throughput's RUNS=5)
# Writes only under build-regress/ (the old commit as a git worktree there).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
old_commit=${1:?usage: bench/regress.sh OLD_COMMIT}
rounds=${ROUNDS:-3}
out=$root/build-regress
mkdir -p "$out"

# build SRC BUILD: SRC's library, and hb_throughput linked against it.
build() {
  local src=$1 build=$2
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHB_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)" --target hashbatch >/dev/null
  cc -O2 -D_POSIX_C_SOURCE=200809L -I"$src/host/include" "$root/bench/throughput.c" \
     "$build/host/libhashbatch.a" -lOpenCL -lcrypto -lpthread -o "$build/hb_throughput"
}

old=$out/old-src
[[ -d $old ]] || git -C "$root" worktree add --detach "$old" "$old_commit" >/dev/null
git -C "$old" checkout -q --detach "$old_commit"
build "$old" "$out/old"
build "$root" "$out/new"

# backend, message bytes, count
cases=("cpu 64 1000000" "opencl 64 1000000" "cpu 4096 65536" "opencl 4096 65536"
       "cpu 16777216 16" "opencl 16777216 16" "auto 4096 65536")
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(uptime)"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
echo "# old: $(git -C "$old" rev-parse --short HEAD); new: $(git -C "$root" rev-parse --short HEAD) (+ working tree)"
for ((r = 1; r <= rounds; r++)); do
  for c in "${cases[@]}"; do
    read -r backend bytes count <<<"$c"
    for side in old new; do
      printf '%s round %d  ' "$side" "$r"
      "$out/$side/hb_throughput" "$backend" "$bytes" "$count" 5
    done
  done
done
echo "# end: $(uptime)"
