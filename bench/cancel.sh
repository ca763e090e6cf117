#!/usr/bin/env bash
# cancel.sh - issue 11, defect 2: how long a cancel of a job of long
# messages takes, in C (hb_cancel_latency: hb_job_cancel / hb_job_free 1 ms
# after submit) and from Ruby (interrupt_latency.rb: Timeout 0.05 around
# 1 GiB + 4 x 256 MiB), for this tree and, given OLD, for that commit built
# beside it (a git worktree), so before and after run side by side.
# Usage: bench/cancel.sh [OLD_COMMIT]    env: REPS (5), ROWS (prebuilt)
# Writes only under build-cancel/ (and the worktree build-cancel/old).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build-cancel
mkdir -p "$out"
export REPS=${REPS:-5} ROWS=${ROWS:-prebuilt}

# build_tree SRC BUILD: the library and the gem's extension of SRC.
build_tree() {
  local src=$1 build=$2
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHB_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)" --target hashbatch >/dev/null
  cc -O2 -I"$src/host/include" "$root/bench/cancel_latency.c" "$build/host/libhashbatch.a" \
     -lOpenCL -lcrypto -lpthread -o "$build/hb_cancel_latency"
  mkdir -p "$build/ruby-ext" "$build/ruby-lib/hashbatch"
  (cd "$build/ruby-ext" && ruby "$src/ruby/ext/hashbatch/extconf.rb" \
      --with-hashbatch-include="$src/host/include" --with-hashbatch-lib="$build/host" >/dev/null &&
      make -s >/dev/null)
  cp "$build/ruby-ext/hashbatch_ext.so" "$build/ruby-lib/hashbatch/"
}

# measure NAME SRC BUILD
measure() {
  local name=$1 src=$2 build=$3
  echo "## $name ($(git -C "$src" rev-parse --short HEAD))"
  "$build/hb_cancel_latency" "$REPS"
  ruby -I"$src/ruby/lib" -I"$build/ruby-lib" "$root/bench/ruby/interrupt_latency.rb"
  echo
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(uptime)"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
build_tree "$root" "$out/new"
if [[ $# -ge 1 ]]; then
  old=$out/old-src
  [[ -d $old ]] || git -C "$root" worktree add --detach "$old" "$1" >/dev/null
  git -C "$old" checkout -q --detach "$1"
  build_tree "$old" "$out/old"
  measure "before: $1" "$old" "$out/old"
fi
measure "after: this tree" "$root" "$out/new"
echo "# end: $(uptime)"
