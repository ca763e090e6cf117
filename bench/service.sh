#!/usr/bin/env bash
# service.sh - the service benchmarks: coalescing, idle latency, and every
# device at once against each alone. Prints a Markdown section for
# bench/RESULTS.md on stdout.
# Usage: bench/service.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$root/build"}
svc="$build/bench/hb_service_bench"
thr="$build/bench/hb_throughput"
echo "### Service benchmarks, $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo
echo "Coalescing: 16 threads, single 64-byte messages, 3 s each way."
echo "INFLIGHT 0 is hb_sha1_batch per message; 64 is 64 one-message jobs in flight per thread."
echo '```'
for backend in cpu opencl all; do
  for inflight in 0 64; do
    "$svc" coalesce "$backend" 16 3 "$inflight"
  done
done
echo '```'
echo
echo "Latency of one 64-byte job on an idle engine (submit to wait's return):"
echo '```'
"$svc" latency cpu 5000
"$svc" latency opencl 2000
"$svc" latency all 2000
echo '```'
echo
echo "Every device at once (all = pocl + the OpenSSL pool) against each alone,"
echo "65,536 messages of 4 KiB, end to end, sampled verification; three rounds,"
echo "backends alternating; each line a median of 7 batches:"
echo '```'
for round in 1 2 3; do
  for backend in cpu opencl all; do
    "$thr" "$backend" 4096 65536 7 sample
  done
done
echo '```'
