#!/usr/bin/env bash
# run.sh - builds the gem's extension against a build tree and runs the
# Ruby benchmarks, printing their tables: the Feature #11625 workload
# (feature11625.rb), the fastest that workload can be here (ceiling.rb
# with ceiling.c), where releasing the GVL pays (gvl_threshold.rb) and
# how fast an interrupted wait returns (interrupt_latency.rb). Also builds
# the issue's probe extension (probe/), a row of the first table.
# Usage: bench/ruby/run.sh [BUILD_DIR]   (default: build; the library must
#        be built there: scripts/build.sh BUILD_DIR)
#   env: passed on to the scripts (N, SIZE, REPS, THREADS, ONLY, IPS,
#        EXPLORE; BYTES, SIZES), SKIP_CEILING=1 and SKIP_THRESHOLD=1 to
#        leave those out.
# Writes only under BUILD_DIR/ruby-bench.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
lib=$(dirname "$(find "$build/host" -maxdepth 1 -name 'libhashbatch.*' | head -n1)")
out=$build/ruby-bench
mkdir -p "$out/ext" "$out/lib/hashbatch"
(cd "$out/ext" && ruby "$root/ruby/ext/hashbatch/extconf.rb" \
    --with-hashbatch-include="$root/host/include" --with-hashbatch-lib="$lib" >/dev/null &&
    make -s >/dev/null)
cp "$out/ext/hashbatch_ext.so" "$out/lib/hashbatch/"
# the probe of issue 5 (probe/probe.c), measured beside the gem
mkdir -p "$out/probe"
(cd "$out/probe" && ruby "$root/bench/ruby/probe/extconf.rb" >/dev/null && make -s >/dev/null)
cp "$out/probe/hashbatch_probe.so" "$out/lib/"
rubyargs=(-I"$root/ruby/lib" -I"$out/lib")
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(uptime)"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
ruby "${rubyargs[@]}" "$root/bench/ruby/feature11625.rb"
if [ "${SKIP_CEILING:-0}" != 1 ]; then
    echo
    cc -O2 -DOPENSSL_SUPPRESS_DEPRECATED "$root/bench/ruby/ceiling.c" -o "$out/ceiling" -lcrypto -lpthread
    CEILING_BIN=$out/ceiling ruby "${rubyargs[@]}" "$root/bench/ruby/ceiling.rb"
fi
if [ "${SKIP_THRESHOLD:-0}" != 1 ]; then
    echo
    ruby "${rubyargs[@]}" "$root/bench/ruby/gvl_threshold.rb"
fi
echo
ruby "${rubyargs[@]}" "$root/bench/ruby/interrupt_latency.rb"
