#!/usr/bin/env bash
# first_figures.sh - end-to-end throughput of each backend, side by side.
# Usage: bench/first_figures.sh [BUILD_DIR]
# Each line is the median of 7 timed batches after a warm-up, with the
# backends alternating so that noise on this shared machine hits both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-"$root/build"}/bench/hb_throughput
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for size_count in "4096 65536" "64 1000000" "1048576 256"; do
  set -- $size_count
  for backend in cpu opencl; do
    "$bin" "$backend" "$1" "$2" 7 sample
  done
done
