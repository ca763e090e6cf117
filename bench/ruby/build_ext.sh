#!/usr/bin/env bash
# build_ext.sh - builds the gem's extension against a build tree (as
# ruby/cmake/ruby_test.cmake does), for the bench/ruby scripts.
# Usage: bench/ruby/build_ext.sh BUILD_DIR NAME   (the library must be
#        built in BUILD_DIR: scripts/build.sh BUILD_DIR)
# Writes only under BUILD_DIR/NAME; prints the folder to put on Ruby's
# load path (-I) beside ruby/lib.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
lib=$(dirname "$(find "$build/host" -maxdepth 1 -name 'libhashbatch.*' | head -n1)")
out=$build/$2
mkdir -p "$out/ext" "$out/lib/hashbatch"
(cd "$out/ext" && ruby "$root/ruby/ext/hashbatch/extconf.rb" \
    --with-hashbatch-include="$root/host/include" --with-hashbatch-lib="$lib" >/dev/null &&
    make -s >/dev/null)
cp "$out/ext/hashbatch_ext.so" "$out/lib/hashbatch/"
echo "$out/lib"
