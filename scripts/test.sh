#!/usr/bin/env bash
# test.sh - the one command that runs every test: installs what is missing,
# builds with warnings as errors, runs every ctest suite (the C library
# through every backend against OpenSSL and NIST's vectors, and the CLI
# against sha1sum).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup.sh"
build="$root/build"
bash "$root/scripts/build.sh" "$build"
cd "$build"
# Suites run side by side, one per CPU (HB_TEST_JOBS overrides): none
# depends on timing or on having the machine to itself. The results go to
# Testing/hb-ctest-junit.xml as well (each test's output, its middle cut
# past 64 KiB so a SKIP: line at the end stays), where
# scripts/check_skips.sh finds the skipped tests and their reasons.
junit="$build/Testing/hb-ctest-junit.xml"
rm -f "$junit"
status=0
ctest --output-on-failure --timeout 1800 -j "${HB_TEST_JOBS:-$(nproc)}" \
  --test-output-size-passed 65536 --test-output-truncation middle \
  --output-junit "$junit" "$@" || status=$?
# Every skipped test, with the reason it gave (a skip is never a pass:
# CI fails on one tests/expected_skips.txt does not list).
if [[ -s "$junit" ]]; then
  bash "$root/scripts/check_skips.sh" --list "$build" || status=1
else
  echo "test.sh: ctest wrote no $junit: the skipped tests cannot be listed" >&2
  status=1
fi
exit "$status"
