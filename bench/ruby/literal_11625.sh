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
lib=$(dirname "$(find "$build/host" -maxdepth 1 -name 'libhashbatch.*' | head -n1)")
out=$build/ruby-bench-literal
rm -rf "$out"
mkdir -p "$out/ext" "$out/lib/hashbatch"
(cd "$out/ext" && ruby "$root/ruby/ext/hashbatch/extconf.rb" \
    --with-hashbatch-include="$root/host/include" --with-hashbatch-lib="$lib" >/dev/null &&
    make -s >/dev/null)
cp "$out/ext/hashbatch_ext.so" "$out/lib/hashbatch/"
exec ruby "$root/bench/ruby/literal_11625.rb" "$root/ruby/lib" "$out/lib"
