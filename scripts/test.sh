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
# depends on timing or on having the machine to itself.
ctest --output-on-failure --timeout 1800 -j "${HB_TEST_JOBS:-$(nproc)}" "$@"
