#!/usr/bin/env bash
# isal_peer.sh - builds bench/isal_peer.c (isa-l_crypto's multi-buffer
# SHA-1 rate, the peer in issue 12's benchmarks) against an installed
# isa-l_crypto: ISAL_DIR/include/isa-l_crypto.h and isa-l_crypto/sha1_mb.h,
# ISAL_DIR/lib (or lib64) with libisal_crypto.a (preferred: nothing to find
# at run time) or libisal_crypto.so (then an rpath to it).
# Must not: fetch or build isa-l_crypto (that build is never required, and
# its sources never enter this repository), or run the benchmark.
# Usage: bench/isal_peer.sh [ISAL_DIR] [OUT_BIN]
#   ISAL_DIR defaults to $HASHBATCH_PEER_ISAL; OUT_BIN to /tmp/isal_peer.
# An isa-l_crypto install, e.g. from its v2.25.0 sources:
#   ./autogen.sh && ./configure --prefix=/tmp/isal && make -j && make install
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

die() {
  echo "isal_peer.sh: $1" >&2
  exit "${2:-1}"
}

[[ $# -le 2 ]] || die "usage: bench/isal_peer.sh [ISAL_DIR] [OUT_BIN]" 2
isal=${1:-${HASHBATCH_PEER_ISAL:-}}
out=${2:-/tmp/isal_peer}
[[ -n $isal ]] || die "no isa-l_crypto build given: pass ISAL_DIR or set HASHBATCH_PEER_ISAL
usage: bench/isal_peer.sh [ISAL_DIR] [OUT_BIN]" 2
[[ -d $isal ]] || die "ISAL_DIR '$isal' is not a directory"
for h in isa-l_crypto.h isa-l_crypto/sha1_mb.h; do
  [[ -f $isal/include/$h ]] ||
    die "'$isal' has no include/$h: expected an isa-l_crypto install prefix (make install with --prefix=ISAL_DIR)"
done

lib=()
for d in lib lib64; do
  if [[ -f $isal/$d/libisal_crypto.a ]]; then
    lib=("$isal/$d/libisal_crypto.a")
    break
  fi
done
if [[ ${#lib[@]} -eq 0 ]]; then
  for d in lib lib64; do
    if [[ -f $isal/$d/libisal_crypto.so ]]; then
      lib=("-L$isal/$d" -lisal_crypto "-Wl,-rpath,$isal/$d")
      break
    fi
  done
fi
[[ ${#lib[@]} -gt 0 ]] || die "'$isal' has no lib/libisal_crypto.a or lib/libisal_crypto.so (nor under lib64/)"

gcc -std=c11 -O2 -Wall -Wextra -I"$isal/include" "$root/bench/isal_peer.c" "${lib[@]}" \
  -lcrypto -lpthread -o "$out" || die "compiling bench/isal_peer.c against '$isal' failed"
echo "$out"
