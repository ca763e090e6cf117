#!/usr/bin/env bash
# sanitize.sh - builds with the given sanitizers and runs the C tests.
# Usage: scripts/sanitize.sh address,undefined|thread [CTEST_ARGS...]
# CTEST_ARGS default to -LE "huge|install"; suites run one per CPU side by
# side (HB_TEST_JOBS overrides).
# Left out: the >4 GiB test (label "huge"), which only repeats, slower, what
# the plain run checks, and the install test (label "install"), whose
# consumer is built without sanitizers. Leak reports from inside pocl/LLVM (not our code)
# are suppressed by scripts/lsan.supp, which says why for each entry.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kinds=${1:-address,undefined}
shift || true
ctest_args=("$@")
((${#ctest_args[@]})) || ctest_args=(-LE "huge|install|oclgrind")
build="$root/build-san-${kinds//,/-}"
HB_SETUP_SANITIZERS=1 bash "$root/scripts/setup.sh"
bash "$root/scripts/build.sh" "$build" -DHB_SANITIZE="$kinds"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:allocator_may_return_null=1"
# intercept_tls_get_addr=0: LeakSanitizer's tracer crashes ("Tracer caught
# signal 11") walking the dynamic TLS of pocl's worker threads; static TLS
# and every other root are still scanned.
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:print_suppressions=0:intercept_tls_get_addr=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="suppressions=$root/scripts/tsan.supp"
cd "$build"
ctest --output-on-failure --timeout 1800 -j "${HB_TEST_JOBS:-$(nproc)}" "${ctest_args[@]}"
