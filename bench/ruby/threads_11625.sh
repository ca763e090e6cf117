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
ext_lib=$(bash "$root/bench/ruby/build_ext.sh" "$build" ruby-bench-11625)
exec ruby -I"$root/ruby/lib" -I"$ext_lib" "$root/bench/ruby/threads_11625.rb"
