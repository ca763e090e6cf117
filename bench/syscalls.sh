#!/usr/bin/env bash
# syscalls.sh - what `hashbatch dedup` and `hashbatch sum -r` ask the
# kernel for, per file (issue 32): `strace -f -c` of each command over a
# tree, the stat-family calls (newfstatat, statx, fstat, lstat, stat)
# per file scanned, the opens (openat, openat2, open) per file, closes,
# reads (read, pread64, preadv, preadv2) and getdents64, beside jdupes
# and `find -printf` (one stat per file: the floor of a scan) on the
# same tree. The counts include the calls on folders and the program's
# own start (libraries, the model cache): a few dozen, nothing per file.
# A warm page cache throughout (strace slows the calls, not their count).
#
# Usage: bench/syscalls.sh HASHBATCH TREE [EXTRA_DEDUP_ARGS...]
#   HASHBATCH: the binary; TREE: a folder (bench/trees.sh makes one).
# Prints one line a command: files, then calls per file.
set -euo pipefail
bin=${1:?usage: syscalls.sh HASHBATCH TREE [DEDUP_ARGS...]}
tree=${2:?usage: syscalls.sh HASHBATCH TREE [DEDUP_ARGS...]}
shift 2
command -v strace >/dev/null || { echo "syscalls.sh: strace is not installed" >&2; exit 2; }
[[ -x $bin && -d $tree ]] || { echo "syscalls.sh: $bin or $tree missing" >&2; exit 2; }
files=$(find "$tree" -type f | wc -l)
((files > 0)) || { echo "syscalls.sh: no files under $tree" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# per_file NAME LOG: the strace -c summary in LOG as calls per file
per_file() {
  python3 - "$1" "$2" "$files" <<'PY'
import re, sys
name, log, files = sys.argv[1], sys.argv[2], int(sys.argv[3])
calls = {}
for line in open(log):
    f = line.split()
    # % time, seconds, usecs/call, calls, [errors], syscall
    if len(f) >= 5 and re.match(r"^[\d.]+$", f[0]) and f[-1] not in ("total",):
        try:
            calls[f[-1]] = int(f[3])
        except ValueError:
            pass
groups = {
    "stat": ("newfstatat", "statx", "fstat", "lstat", "stat"),
    "open": ("openat", "openat2", "open"),
    "close": ("close",),
    "read": ("read", "pread64", "preadv", "preadv2"),
    "getdents": ("getdents64",),
}
parts = [f"{k} {sum(calls.get(c, 0) for c in v) / files:.2f}" for k, v in groups.items()]
print(f"{name:28s} files {files}  per file: " + ", ".join(parts))
PY
}

run() { # NAME COMMAND...: the command under strace -f -c, its output dropped
  local name=$1
  shift
  strace -f -c -o "$out/log" "$@" >/dev/null 2>"$out/err" || {
    echo "$name: failed: $(tail -1 "$out/err")" >&2
    return 1
  }
  per_file "$name" "$out/log"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); $tree"
cat "$tree" >/dev/null 2>&1 || true
"$bin" sum -r "$tree" >/dev/null # warm the page cache
run "find -printf (stat floor)" find "$tree" -type f -printf '%s %i %T@\n'
run "hashbatch dedup" "$bin" dedup "$@" "$tree"
run "hashbatch dedup --json" "$bin" dedup --json "$@" "$tree"
run "hashbatch sum -r" "$bin" sum -r "$tree"
if command -v jdupes >/dev/null; then
  run "jdupes -r -H" jdupes -r -H "$tree" || true
fi
