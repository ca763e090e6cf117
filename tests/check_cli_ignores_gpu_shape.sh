#!/usr/bin/env bash
# check_cli_ignores_gpu_shape.sh - the ctest hashbatch_ignores_gpu_shape.
# Owns: checking that the installed library (which the CLI links) ignores
# the test-only switch HASHBATCH_TEST_GPU_SHAPE=1: `hashbatch sum --verbose
# --backend opencl FILE...` run with it set must exit 0, describe its
# engine as "engine: opencl: " in the device's own shape (no "GPU shape"),
# report no mismatch, fallback or device error, and print exactly what
# `sha1sum FILE...` prints. Must not: judge what the GPU shape itself does
# (test_gpu_shape and the *_gpu_shape reruns do).
# Usage: check_cli_ignores_gpu_shape.sh HASHBATCH_BINARY FILE...
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: check_cli_ignores_gpu_shape.sh HASHBATCH_BINARY FILE..." >&2
  exit 2
fi
cli=$1
shift
tmp=$(mktemp -d /tmp/hb-gpu-shape-cli-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() {
  echo "FAIL: $*" >&2
  fail=1
}

HASHBATCH_TEST_GPU_SHAPE=1 "$cli" sum --verbose --backend opencl "$@" >"$tmp/out" 2>"$tmp/err"
rc=$?
awk '{ print "  hashbatch stderr: " $0 }' "$tmp/err" >&2
[ "$rc" -eq 0 ] || bad "hashbatch sum exited $rc"
grep -q 'engine: opencl: ' "$tmp/err" || bad "no 'engine: opencl: ' line on stderr"
if grep -q 'GPU shape' "$tmp/err" "$tmp/out"; then
  bad "the CLI's engine took the GPU shape (the switch leaked into the installed library)"
fi
grep -q ' 0 mismatches, 0 fallbacks, 0 device errors' "$tmp/err" ||
  bad "the engine's stats show a mismatch, a fallback or a device error (or are missing)"

sha1sum "$@" >"$tmp/want" || bad "sha1sum $* failed"
if ! cmp -s "$tmp/want" "$tmp/out"; then
  bad "hashbatch sum's lines differ from sha1sum's (diff want got):"
  diff "$tmp/want" "$tmp/out" >&2
fi
[ "$fail" -eq 0 ] && echo "ok: hashbatch sum --backend opencl with HASHBATCH_TEST_GPU_SHAPE=1 matches sha1sum on $# files"
exit "$fail"
