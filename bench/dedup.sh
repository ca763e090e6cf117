#!/usr/bin/env bash
# dedup.sh - times `hashbatch dedup` against jdupes, rdfind, rmlint and
# fdupes on one tree, warm cache, medians of several runs, after checking
# that our groups equal jdupes' (-r -H: hard links listed, as ours are).
#
# Usage: bench/dedup.sh [TREE_DIR] [RUNS]
#   TREE_DIR: made with bench/trees.sh (default arguments) when it does
#             not exist; default /tmp/hashbatch-dedup-tree
#   RUNS:     timed runs per tool (default 5); the tools take turns
# Environment: HB (the hashbatch binary; default build/host/cli/hashbatch),
#              TOOLS (default "hb hb-cpu jdupes rdfind rmlint fdupes").
# Prints a Markdown table (wall median, min, max; CPU seconds, user+sys,
# median; each over ours) with the machine's load before and after. Nothing in the
# tree is changed; no tool writes into the current directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tree=${1:-/tmp/hashbatch-dedup-tree}
runs=${2:-5}
hb=${HB:-$here/../build/host/cli/hashbatch}
tools=${TOOLS:-"hb hb-cpu jdupes rdfind rmlint fdupes"}
[ -x "$hb" ] || { echo "dedup.sh: no hashbatch binary at $hb (set HB)" >&2; exit 2; }
[ -d "$tree" ] || "$here/trees.sh" "$tree" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# cmd TOOL: the command line of one tool, output to /dev/null.
cmd() {
    case $1 in
    hb) echo "$hb dedup -q $tree" ;;
    hb-cpu) echo "$hb dedup -q --backend cpu $tree" ;;
    jdupes) echo "jdupes -q -r $tree" ;;
    rdfind) echo "rdfind -dryrun true -makeresultsfile false $tree" ;;
    # rmlint replaces an output file by renaming: never point it at /dev/null
    rmlint) echo "rmlint -o summary:$work/rmlint.summary $tree" ;;
    fdupes) echo "fdupes -q -r $tree" ;;
    *) echo "dedup.sh: unknown tool $1" >&2; exit 2 ;;
    esac
}

# 1. same groups as jdupes (as sets of sets), both through NUL-separated
#    output so any name survives
"$hb" dedup -q -z "$tree" > "$work/ours" 2> "$work/ours.err" || true
jdupes -q -r -H -0 "$tree" > "$work/jdupes"
python3 - "$work/ours" "$work/jdupes" <<'PY'
import sys
def groups(p):
    out = open(p, "rb").read()
    return {frozenset(x for x in b.split(b"\0") if x) for b in out.split(b"\0\0") if b.strip(b"\0")}
a, b = groups(sys.argv[1]), groups(sys.argv[2])
if a != b:
    sys.exit("dedup.sh: groups differ from jdupes': %d only ours, %d only jdupes'"
             % (len(a - b), len(b - a)))
print("groups: %d, equal to jdupes -r -H" % len(a), file=sys.stderr)
PY

# 2. warm the cache, then time each tool RUNS times, taking turns
cat $(find "$tree" -type f) > /dev/null 2>&1 || true
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for t in $tools; do
    (cd "$work" && $(cmd $t) > /dev/null 2>&1) || true
done
for ((i = 0; i < runs; i++)); do
    for t in $tools; do
        # wall, user and system seconds (GNU time); the CPU seconds do not
        # depend on what else the machine runs, the wall time does
        (cd "$work" && /usr/bin/time -f "$t %e %U %S" -o "$work/one" $(cmd $t) \
            > /dev/null 2>&1) || true
        tail -n 1 "$work/one" >> "$work/times"
    done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# 3. the table
files=$(find "$tree" -type f | wc -l)
bytes=$(du -sb "$tree" | cut -f1)
echo "Tree: $tree, $files files, $bytes bytes; $runs runs per tool, warm cache;"
echo "load average before: $load_before, after: $load_after; $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
python3 - "$work/times" "$tools" <<'PY'
import statistics, sys
wall, cpu = {}, {}
for line in open(sys.argv[1]):
    t, e, u, s = line.split()
    wall.setdefault(t, []).append(float(e))
    cpu.setdefault(t, []).append(float(u) + float(s))
order = sys.argv[2].split()
ours = statistics.median(wall["hb"]) if "hb" in wall else None
ours_cpu = statistics.median(cpu["hb"]) if "hb" in cpu else None
names = {"hb": "hashbatch dedup (default backend)", "hb-cpu": "hashbatch dedup --backend cpu",
         "jdupes": "jdupes -r", "rdfind": "rdfind -dryrun true",
         "rmlint": "rmlint -o summary:FILE", "fdupes": "fdupes -r"}
print("| tool | wall median s | min | max | wall / hashbatch's | CPU (user+sys) median s | CPU / hashbatch's |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for t in order:
    v, c = wall[t], cpu[t]
    m, mc = statistics.median(v), statistics.median(c)
    print("| %s | %.3f | %.3f | %.3f | %.2f | %.3f | %.2f |"
          % (names.get(t, t), m, min(v), max(v), m / ours, mc, mc / ours_cpu))
PY
