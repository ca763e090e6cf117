#!/usr/bin/env bash
# threads_11625.sh - builds the gem's extension against a build tree (as
# ruby/cmake/ruby_test.cmake does) and runs threads_11625.rb, the Feature
# #11625 workload at THREADS=1, 2, 4 with wall time and user CPU.
# Usage: bench/ruby/threads_11625.sh [BUILD_DIR]   (default: build; the
#        library must be built there: scripts/build.sh BUILD_DIR)
#   env: passed on to the script (N, SIZE, REPS, THREADS, ONLY).
# Writes only under BUILD_DIR/ruby-bench-11625. Run it alone: the table
# means something only while nothing else loads the machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
lib=$(dirname "$(find "$build/host" -maxdepth 1 -name 'libhashbatch.*' | head -n1)")
out=$build/ruby-bench-11625
mkdir -p "$out/ext" "$out/lib/hashbatch"
(cd "$out/ext" && ruby "$root/ruby/ext/hashbatch/extconf.rb" \
    --with-hashbatch-include="$root/host/include" --with-hashbatch-lib="$lib" >/dev/null &&
    make -s >/dev/null)
cp "$out/ext/hashbatch_ext.so" "$out/lib/hashbatch/"
exec ruby -I"$root/ruby/lib" -I"$out/lib" "$root/bench/ruby/threads_11625.rb"
