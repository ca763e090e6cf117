#!/usr/bin/env bash
# plan_memory.sh - issue 27's plan memory: the peak resident set of
# loading a 1,000,000-file plan, against the plan's size (the goal: at
# most 3x).
#
# The plan: NFILES files in groups of 2, paths like
# /srv/store/dir0123/file-000456.dat (1,000 files a directory), one
# distinct inode each. LAYOUT=dedup (the default) writes it as
# `hashbatch dedup --json` does (its spacing, every field: sha1,
# distinct_files, mtime_ns, roots, collisions, errors, summary);
# LAYOUT=compact writes only what a plan needs (size, files of path,
# device, inode), with no white space: the fewest bytes a file, so the
# hardest ratio. The run is `hashbatch remove --dry-run PLAN` in an empty
# directory: none of the paths exist, so every pair is skipped and the
# run is the load (and the skips). Its peak RSS is /usr/bin/time -v's
# "Maximum resident set size".
#
# Usage: bench/plan_memory.sh
# Environment: HB (the hashbatch binary; default build/host/cli/hashbatch),
#              NFILES (default 1000000), LAYOUT (dedup | compact | both;
#              default both), WORK (default: a fresh temporary folder,
#              removed at the end).
# Prints the CPU model, then per layout: the plan's bytes, the peak RSS,
# the ratio and the run's wall time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
hb=${HB:-$here/../build/host/cli/hashbatch}
nfiles=${NFILES:-1000000}
layouts=${LAYOUT:-both}
[ "$layouts" = both ] && layouts="dedup compact"
[ -x "$hb" ] || { echo "plan_memory.sh: no hashbatch binary at $hb (set HB)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "plan_memory.sh: needs /usr/bin/time (GNU time)" >&2; exit 2; }
if [ -e /srv/store ]; then
    echo "plan_memory.sh: /srv/store exists here; the plan's paths must not" >&2
    exit 2
fi
work=${WORK:-}
if [ -z "$work" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work/empty"

# gen LAYOUT FILE: writes the plan.
gen() {
    python3 - "$1" "$2" "$nfiles" <<'EOF'
import sys
layout, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def path(i):
    return "/srv/store/dir%04d/file-%06d.dat" % (i // 1000, i % 1000)
with open(out, "w") as f:
    w = f.write
    if layout == "compact":
        w('{"groups":[')
        for g in range(n // 2):
            w('%s{"size":%d,"files":[' % ("," if g else "", 4096 + g % 4096))
            for j in (0, 1):
                i = 2 * g + j
                w('%s{"path":"%s","device":2049,"inode":%d}' % ("," if j else "", path(i), 1000000 + i))
            w(']}')
        w(']}\n')
    else:
        w('{\n  "roots": [{"path": "/srv/store", "device": 2049, "inode": 2}],\n  "groups": [')
        for g in range(n // 2):
            size = 4096 + g % 4096
            w('%s\n    {"size": %d, "sha1": "%040x", "distinct_files": 2, "hard_links_only": false,'
              ' "reclaimable_bytes": %d,\n     "files": [' % ("," if g else "", size, g * 7919, size))
            for j in (0, 1):
                i = 2 * g + j
                w('%s\n       {"path": "%s", "device": 2049, "inode": %d, "mtime_ns": %d}'
                  % ("," if j else "", path(i), 1000000 + i, 1700000000123456789 + i))
            w(']}')
        w('\n  ],\n  "collisions": [],\n  "errors": [],\n')
        w('  "summary": {"files_scanned": %d, "groups": %d, "hard_link_groups": 0, '
          '"duplicate_files": %d, "reclaimable_bytes": 0, "collisions": 0, "errors": 0}\n}\n'
          % (n, n // 2, n // 2))
EOF
}

echo "CPU: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1), $(nproc) cores"
echo "binary: $hb"
printf '%-8s %14s %14s %7s %8s\n' layout plan_bytes peak_rss_bytes ratio wall_s
for layout in $layouts; do
    plan="$work/plan-$layout.json"
    [ -s "$plan" ] || gen "$layout" "$plan"
    bytes=$(stat -c %s "$plan")
    (cd "$work/empty" && /usr/bin/time -v -o "$work/time-$layout.txt" "$hb" remove --dry-run \
        "$plan" >/dev/null 2>&1) || true
    kib=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time-$layout.txt")
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time-$layout.txt")
    if [ -z "$kib" ]; then
        echo "plan_memory.sh: no measurement for $layout:" >&2
        tail -5 "$work/time-$layout.txt" >&2
        exit 1
    fi
    rss=$((kib * 1024))
    ratio=$(awk -v r="$rss" -v b="$bytes" 'BEGIN { printf "%.2f", r / b }')
    printf '%-8s %14d %14d %6sx %8s\n' "$layout" "$bytes" "$rss" "$ratio" "$wall"
done
