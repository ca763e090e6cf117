#!/usr/bin/env bash
# build.sh - configures and builds hashbatch into a build folder.
# Usage: scripts/build.sh [BUILD_DIR] [extra cmake args...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$root/build"}
shift || true
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHB_WERROR=ON "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
