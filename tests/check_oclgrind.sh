#!/usr/bin/env bash
# check_oclgrind.sh - the GPU shape on Oclgrind, a simulated GPU that checks
# every work-item's memory accesses, data races, uninitialised values and
# the OpenCL API calls (issue 30). Three runs, each failing on a wrong
# digest, a non-zero exit or any Oclgrind diagnostic (any line on stderr,
# below):
#  1. test_oclgrind's TCase "backend" (one thread) under --data-races
#     --uninitialized --check-api: NIST's short messages, every length
#     0-300 and 4,090-4,100 packed, long messages streamed through 64 KiB
#     launches with carried state;
#  2. its TCase "engine" under --data-races --check-api: the engine opened
#     on the simulator within its calibration budget, a mixed batch all on
#     the device, a corrupted read-back caught by verification;
#  3. `hashbatch sum --backend opencl` of 22 files of 0-4,097 bytes under
#     --data-races --check-api, identical to sha1sum's output.
# Why --uninitialized only for run 1: Oclgrind 21.10 keeps that check's
# shadow memory pool per thread, made on the thread that creates the
# context; a buffer write enqueued from any other thread (the engine's
# device workers) dereferences a null pool and crashes the simulator
# (SIGSEGV in ShadowContext::getCleanValue from Uninitialized::
# hostMemoryStore). Run 1 makes every OpenCL call on one thread.
#
# Usage: check_oclgrind.sh TEST_OCLGRIND HASHBATCH_CLI
# Exits 77 (skip, saying why) when oclgrind is not installed
# (scripts/setup.sh installs it). About a minute on 2 cores.
set -uo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: check_oclgrind.sh TEST_OCLGRIND HASHBATCH_CLI" >&2
  exit 2
fi
# absolute: the sum run changes into its tree (CI passes build/... paths)
suite=$(realpath -- "$1") cli=$(realpath -- "$2")
if ! command -v oclgrind >/dev/null; then
  echo "SKIP: oclgrind is not installed (apt-get install oclgrind; scripts/setup.sh does)"
  exit 77
fi
work=$(mktemp -d /tmp/hb-oclgrind-XXXXXX)
trap 'rm -rf "$work"' EXIT
# A model cache of its own: each run calibrates on the simulator, within
# its budget, and no user's cache is read or written.
export HASHBATCH_MODEL_CACHE="$work/models.txt" XDG_CACHE_HOME="$work/cache" CK_FORK=no
status=0

# run NAME OCLGRIND_FLAGS... -- COMMAND...: the command under oclgrind; its
# stderr ($work/NAME.err, Oclgrind's diagnostics) must stay empty.
run() {
  local name=$1
  shift
  local flags=()
  while [[ $1 != -- ]]; do
    flags+=("$1")
    shift
  done
  shift
  local err="$work/$name.err" start end rc
  start=$(date +%s.%N)
  oclgrind "${flags[@]}" "$@" >"$work/$name.out" 2>"$err"
  rc=$?
  end=$(date +%s.%N)
  printf '%s: oclgrind %s: exit %d in %.1f s\n' "$name" "${flags[*]}" "$rc" \
    "$(echo "$end - $start" | bc)"
  cat "$work/$name.out"
  if [[ $rc -ne 0 ]]; then
    echo "FAIL: $name exited $rc" >&2
    status=1
  fi
  if [[ -s $err ]]; then
    echo "FAIL: $name: $(grep -c . "$err") lines on stderr (Oclgrind's diagnostics among them):" >&2
    head -60 "$err" >&2
    status=1
  fi
}

run backend --data-races --uninitialized --check-api -- \
  env CK_RUN_CASE=backend "$suite"
run engine --data-races --check-api -- env CK_RUN_CASE=engine "$suite"

# the CLI against sha1sum on a small tree
tree="$work/tree"
mkdir -p "$tree"
sizes=(0 1 55 56 63 64 65 100 119 120 127 128 129 255 256 300 1000 2048 4000 4095 4096 4097)
for i in "${!sizes[@]}"; do
  head -c "${sizes[$i]}" /dev/urandom >"$tree/f$i"
done
(cd "$tree" && sha1sum -- f* >"$work/want.txt")
run sum --data-races --check-api -- \
  bash -c 'cd "$1" && exec "$2" sum --backend opencl --verify off -- f*' _ "$tree" "$cli"
if ! diff -u "$work/want.txt" "$work/sum.out"; then
  echo "FAIL: hashbatch sum on the simulator differs from sha1sum (above)" >&2
  status=1
fi
[[ $status -eq 0 ]] && echo "check_oclgrind: every run right, no Oclgrind diagnostics"
exit "$status"
