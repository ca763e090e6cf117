#!/usr/bin/env bash
# floor_side_by_side.sh - the distinct-strings floor for THREADS=2
# (ceiling.rb) and Hashbatch::SHA1 at THREADS=2 (threads_11625.rb),
# measured alternately, ROUNDS rounds: the floor moves with the machine
# (its C2 moved by 14% within an hour on a 2-core guest), so a run is
# compared with the floor taken beside it, never with one from minutes
# before.
# Usage: bench/ruby/floor_side_by_side.sh [BUILD_DIR]   (default: build;
#        the library must be built there: scripts/build.sh BUILD_DIR)
#   env: ROUNDS (3). Run it alone on the machine.
# Writes only under BUILD_DIR/ruby-bench-11625 and BUILD_DIR/ceiling.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
ext_lib=$(bash "$root/bench/ruby/build_ext.sh" "$build" ruby-bench-11625)
cc -O2 -Wno-deprecated-declarations -o "$build/ceiling" "$root/bench/ruby/ceiling.c" -lcrypto -lpthread
echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; ROUNDS=${ROUNDS:-3}"
echo "| round | floor s | Hashbatch::SHA1 T=2 s | above the floor |"
echo "| ---: | ---: | ---: | ---: |"
for round in $(seq "${ROUNDS:-3}"); do
    floor=$(REPS=3 CEILING_BIN="$build/ceiling" ruby -I"$root/ruby/lib" -I"$ext_lib" \
        "$root/bench/ruby/ceiling.rb" | sed -n 's/^| floor for THREADS=2[^|]*| *\([0-9.]*\) *|$/\1/p')
    run=$(ONLY='Hashbatch::SHA1 THREADS=2' REPS=5 ruby -I"$root/ruby/lib" -I"$ext_lib" \
        "$root/bench/ruby/threads_11625.rb" | awk -F'|' '/Hashbatch::SHA1 THREADS=2/ { gsub(/ /, "", $3); print $3 }')
    [ -n "$floor" ] && [ -n "$run" ] || { echo "round $round: no figure read (floor '$floor', run '$run')" >&2; exit 1; }
    awk -v r="$round" -v f="$floor" -v t="$run" 'BEGIN { printf("| %d | %.3f | %.3f | %.1f%% |\n", r, f, t, (t / f - 1) * 100) }'
done
