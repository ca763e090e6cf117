#!/usr/bin/env bash
# multibuffer.sh - the CPU implementations side by side (issue 12): OpenSSL
# one message at a time on each core (HASHBATCH_CPU_IMPL=sha-ni), each
# multi-buffer implementation this CPU runs, pocl, and isa-l_crypto's
# multi-buffer SHA-1 when a build of it is given; on 65,536 x 4 KiB,
# 256 x 1 MiB and 1,000,000 x 64 B (hb_throughput, end to end through the
# public API, sampled verification on), one message of 64 B (latency), and
# `hashbatch sum -r` over a tree against `xargs -P<cores> sha1sum`. The
# default implementation runs once more with verification off, the
# like-for-like row against isa-l_crypto (which verifies nothing).
# Rounds alternate the methods case by case, so load on the shared
# machine falls on all alike; the summary is the median over rounds of
# each run's median.
# Usage: bench/multibuffer.sh [BUILD_DIR]   (default build-bench; built here)
#   env: ROUNDS (5), HASHBATCH_PEER_ISAL (an isa-l_crypto install: include/,
#        lib/; never required), TREE (/usr/lib) for the sum case
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
rounds=${ROUNDS:-5}
tree=${TREE:-/usr/lib}
cores=$(nproc)

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHB_BUILD_TESTS=ON >/dev/null
cmake --build "$build" -j "$cores" --target hb_throughput hashbatch_cli hb_cpu_impls >/dev/null
thr=$build/bench/hb_throughput
cli=$build/host/cli/hashbatch
[[ -x $cli ]] || cli=$(find "$build" -name hashbatch -type f -perm -u+x | head -1)
impls=$("$build/tests/hb_cpu_impls" | awk '$1 == "runnable" {print $2}')
default_impl=$("$build/tests/hb_cpu_impls" | awk '$1 == "default" {print $2}')

isal=""
if [[ -n ${HASHBATCH_PEER_ISAL:-} ]]; then
  isal=$(bash "$root/bench/isal_peer.sh" "$HASHBATCH_PEER_ISAL" "$build/isal_peer" | tail -1)
fi

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(uptime)"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $cores CPUs; $(lscpu | grep -o 'avx512f\|sha_ni' | sort -u | tr '\n' ' ')"
echo "# commit $(git -C "$root" rev-parse --short HEAD); runnable: $(echo $impls); default: $default_impl"
[[ -n $isal ]] && echo "# isa-l_crypto: $HASHBATCH_PEER_ISAL"

sum_seconds() { # IMPL (or "" for the default): seconds of one warm sum -r
  local t0 t1
  t0=$(date +%s.%N)
  if [[ -n $1 ]]; then
    HASHBATCH_CPU_IMPL=$1 "$cli" sum -r "$tree" >/dev/null 2>&1 || true
  else
    "$cli" sum -r "$tree" >/dev/null 2>&1 || true
  fi
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc
}
xargs_seconds() {
  local t0 t1
  t0=$(date +%s.%N)
  find "$tree" -type f -print0 | xargs -0 -P "$cores" -n 64 sha1sum >/dev/null 2>&1 || true
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc
}

cases=("4096 65536" "1048576 256" "64 1000000" "64 1")
sum_seconds "" >/dev/null # warm the tree's pages
for ((r = 1; r <= rounds; r++)); do
  for c in "${cases[@]}"; do
    read -r bytes count <<<"$c"
    runs=5
    ((count == 1)) && runs=3000 # one message: the median of many single calls
    for impl in $impls; do
      printf 'round %d cpu-%s ' "$r" "$impl"
      HASHBATCH_CPU_IMPL=$impl "$thr" cpu "$bytes" "$count" "$runs"
    done
    # the default implementation without sampled verification: isa-l_crypto
    # verifies nothing, so this is the like-for-like row against it
    printf 'round %d cpu-%s-verify-off ' "$r" "$default_impl"
    "$thr" cpu "$bytes" "$count" "$runs" off
    printf 'round %d opencl ' "$r"
    "$thr" opencl "$bytes" "$count" "$runs" || echo "opencl: not measured"
    if [[ -n $isal ]]; then
      printf 'round %d isal ' "$r"
      if ((count == 1)); then "$isal" --one "$bytes"; else "$isal" "$bytes" "$count" 5 "$cores" | tail -1; fi
    fi
  done
  echo "round $r sum-default $(sum_seconds "") s"
  for impl in $impls; do
    echo "round $r sum-$impl $(sum_seconds "$impl") s"
  done
  echo "round $r sum-cpu-backend $(HASHBATCH_BACKEND=cpu sum_seconds "") s"
  echo "round $r xargs-sha1sum $(xargs_seconds) s"
done
echo "# end: $(uptime)"
