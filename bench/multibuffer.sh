#!/usr/bin/env bash
# multibuffer.sh - the CPU implementations side by side (issues 12, 31):
# OpenSSL one message at a time on each core (HASHBATCH_CPU_IMPL=sha-ni),
# each multi-buffer implementation this CPU runs (forced), the default
# (nothing forced: the engine may hash a short take in narrower lanes or
# OpenSSL), pocl, and isa-l_crypto's multi-buffer SHA-1 when a build of it
# is given; on 65,536 x 4 KiB, 256 x 1 MiB, 1,000,000 x 64 B, 16 x 16 MiB
# and 2 x 1 GiB (hb_throughput, end to end through the public API), one
# message of 64 B (latency), and `hashbatch sum -r` over a tree against
# `xargs -P<cores> sha1sum`. Every row verifies as the default does
# (sampled); the default and pocl run once more with verification off,
# which is what sampling costs, and the like-for-like row against
# isa-l_crypto (which verifies nothing). Beside those separate runs, the
# same cost measured in pairs (hb_verify_cost: a sampling engine and a
# non-verifying one in one process, batches alternating), which a noisy
# host disturbs far less.
# Rounds alternate the methods case by case, so load on the shared
# machine falls on all alike, and swap their order from round to round;
# the summary (bench/multibuffer_table.py) is the median over rounds of
# each run's median.
# Usage: bench/multibuffer.sh [BUILD_DIR]   (default build-bench; built here)
#   env: ROUNDS (5), HASHBATCH_PEER_ISAL (an isa-l_crypto install: include/,
#        lib/; never required), TREE (/usr/lib) for the sum case,
#        CASES ("BYTES COUNT" pairs separated by commas: only those)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
rounds=${ROUNDS:-5}
tree=${TREE:-/usr/lib}
cores=$(nproc)

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHB_BUILD_TESTS=ON >/dev/null
cmake --build "$build" -j "$cores" --target hb_throughput hb_verify_cost hashbatch_cli hb_cpu_impls >/dev/null
thr=$build/bench/hb_throughput
paired=$build/bench/hb_verify_cost
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

if [[ -n ${CASES:-} ]]; then
  IFS=, read -r -a cases <<<"$CASES"
else
  cases=("4096 65536" "1048576 256" "64 1000000" "16777216 16" "1073741824 2" "64 1")
fi
run_isal() { # ROUND BYTES COUNT: isa-l_crypto's line, when a build was given
  [[ -n $isal ]] || return 0
  printf 'round %d isal ' "$1"
  if (($3 == 1)); then "$isal" --one "$2"; else "$isal" "$2" "$3" 5 "$cores" | tail -1; fi
}

sum_seconds "" >/dev/null # warm the tree's pages
for ((r = 1; r <= rounds; r++)); do
  # Which runs first in a round moves the results here by a few percent
  # (separate runs of sample and off at 1 MiB: 0.954 by round with
  # sample first, 1.021 with off first), so odd and even rounds swap the
  # order of the verify modes, and isa-l_crypto runs last in odd rounds
  # and first in even ones.
  verify_order=$( ((r % 2 == 1)) && echo "sample off" || echo "off sample")
  for c in "${cases[@]}"; do
    read -r bytes count <<<"$c"
    runs=5
    ((count == 1)) && runs=3000 # one message: the median of many single calls
    ((bytes * count > 1 << 30)) && runs=3
    ((r % 2 == 0)) && run_isal "$r" "$bytes" "$count"
    for impl in $impls; do
      printf 'round %d cpu-%s ' "$r" "$impl"
      HASHBATCH_CPU_IMPL=$impl "$thr" cpu "$bytes" "$count" "$runs"
    done
    for verify in $verify_order; do
      suffix=$([[ $verify == off ]] && echo -verify-off || true)
      printf 'round %d cpu-default%s ' "$r" "$suffix"
      "$thr" cpu "$bytes" "$count" "$runs" "$verify"
      printf 'round %d opencl%s ' "$r" "$suffix"
      "$thr" opencl "$bytes" "$count" "$runs" "$verify" || echo "opencl: not measured"
    done
    if ((count > 1 && bytes * count <= 1 << 30)); then # the sizes of the 3% target
      for backend in cpu opencl; do
        printf 'round %d paired-%s ' "$r" "$backend"
        "$paired" "$backend" "$bytes" "$count" 9 || echo "$backend: not measured"
      done
    fi
    ((r % 2 == 1)) && run_isal "$r" "$bytes" "$count"
  done
  # warm the tree again: the 2 x 1 GiB case's processes push part of it
  # out of the page cache (a gigabyte here), which made the first sum
  # after them a cold one
  sum_seconds "" >/dev/null
  echo "round $r sum-default $(sum_seconds "") s"
  for impl in $impls; do
    echo "round $r sum-$impl $(sum_seconds "$impl") s"
  done
  echo "round $r sum-cpu-backend $(HASHBATCH_BACKEND=cpu sum_seconds "") s"
  echo "round $r xargs-sha1sum $(xargs_seconds) s"
done
echo "# end: $(uptime)"
