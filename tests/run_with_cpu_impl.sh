#!/usr/bin/env bash
# run_with_cpu_impl.sh - runs one test suite with HASHBATCH_CPU_IMPL forced.
# Usage: run_with_cpu_impl.sh CPU_IMPLS_BINARY IMPL SUITE [ARGS...]
# The suite's engines get IMPL through HB_TEST_CPU_IMPL, which tu_config
# (test_util.c) puts in hb_config.cpu_impl and tu_open_cfg and
# tu_run_suite check against each engine's description (the suites ignore
# the environment otherwise); HASHBATCH_CPU_IMPL is set too, for the
# engines a test opens with use_environment = 1.
# Heavy suites run at HB_TEST_SCALE=4 unless it is set (see below).
# Exits 77 (ctest: skipped) when this CPU cannot run IMPL, or when IMPL is
# what the engine takes by default here (the plain run of the suite already
# tested it); says which on stderr. Any other answer runs the suite.
set -uo pipefail
probe=$1 impl=$2
shift 2
"$probe" "$impl"
case $? in
  0) ;;
  3) echo "skipped: $impl is this machine's default CPU implementation; the plain run tested it" >&2
     exit 77 ;;
  4) echo "skipped: this CPU cannot run the $impl implementation" >&2
     exit 77 ;;
  *) echo "run_with_cpu_impl: cannot tell whether $impl runs here" >&2
     exit 1 ;;
esac
# The reruns test the implementation under every suite's cases, not the
# load again: heavy suites shrink their job counts by 4 unless the caller
# chose a scale (sanitizer runs do).
HB_TEST_SCALE=${HB_TEST_SCALE:-4} HB_TEST_CPU_IMPL=$impl HASHBATCH_CPU_IMPL=$impl exec "$@"
