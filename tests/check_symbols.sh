#!/usr/bin/env bash
# check_symbols.sh - libhashbatch exports exactly the functions of hashbatch.h.
# Usage: tests/check_symbols.sh LIBRARY HEADER
# LIBRARY is libhashbatch.so, or libhashbatch.a, which is then linked whole
# into a temporary shared object: the symbols a shared build would export.
# The expected list is every function the header marks HB_API.
set -euo pipefail
lib=$1 header=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case "$lib" in
  *.a)
    cc -shared -o "$work/libhashbatch.so" -Wl,--whole-archive "$lib" -Wl,--no-whole-archive \
       -lOpenCL -lcrypto -lpthread
    so="$work/libhashbatch.so" ;;
  *) so=$lib ;;
esac

# Defined, exported functions and objects of the shared object.
nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRW]$/ { print $3 }' | sort -u >"$work/exported"
grep -oE '^HB_API [^(]*\bhb_[a-z0-9_]+\(' "$header" | grep -oE 'hb_[a-z0-9_]+\($' |
  tr -d '(' | sort -u >"$work/declared"

if [[ ! -s "$work/declared" ]]; then
  echo "check_symbols: no HB_API function found in $header" >&2
  exit 1
fi
if ! diff -u "$work/declared" "$work/exported" >"$work/diff"; then
  echo "check_symbols: the exported symbols of $so differ from $header's HB_API functions" >&2
  echo "('-' declared but not exported, '+' exported but not declared):" >&2
  tail -n +3 "$work/diff" | grep '^[-+]' >&2
  exit 1
fi
echo "check_symbols: $(wc -l <"$work/exported") exported symbols, all declared in hashbatch.h"
