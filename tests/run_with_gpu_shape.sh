#!/usr/bin/env bash
# run_with_gpu_shape.sh - runs one test suite with the OpenCL backend in
# the GPU shape: HASHBATCH_TEST_GPU_SHAPE=1 makes the test library run any
# device (here pocl's CPU device) exactly as a discrete GPU (one lane per
# work-item, the GPU local size, blocks packed into pinned staging and
# copied to the device and back, no in-place reads, no uniform kernel).
# Usage: run_with_gpu_shape.sh SUITE [ARGS...]
# The OpenCL route is forced for engines that read the environment
# (HASHBATCH_BACKEND=opencl, HASHBATCH_DEVICE=cpu); engines a suite opens
# with an explicit backend and the environment ignored keep theirs, and
# those with backend cpu simply do not exercise the device. Heavy suites
# run at HB_TEST_SCALE=4 unless it is set: the reruns test the shape under
# every suite's cases, not the load again.
set -uo pipefail
if [ $# -lt 1 ]; then
  echo "usage: run_with_gpu_shape.sh SUITE [ARGS...]" >&2
  exit 2
fi
HASHBATCH_TEST_GPU_SHAPE=1 HB_TEST_SCALE=${HB_TEST_SCALE:-4} \
  HASHBATCH_BACKEND=opencl HASHBATCH_DEVICE=cpu exec "$@"
