#!/usr/bin/env bash
# literal_11625.sh - builds the gem's extension against a build tree and
# runs literal_11625.rb: the program of Ruby Feature #11625 as published,
# one process per run, whole-process and threads'-phase times.
# Usage: bench/ruby/literal_11625.sh [BUILD_DIR]   (default: build; the
#        library must be built there: scripts/build.sh BUILD_DIR)
#   env: REPS, THREADS, SIZE (passed on). Run it alone on the machine.
# Writes only under BUILD_DIR/ruby-bench-literal.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
rm -rf "$build/ruby-bench-literal"
ext_lib=$(bash "$root/bench/ruby/build_ext.sh" "$build" ruby-bench-literal)
exec ruby "$root/bench/ruby/literal_11625.rb" "$root/ruby/lib" "$ext_lib"
