#!/usr/bin/env bash
# sum.sh - times `hashbatch sum -r` against `find | xargs -0 -P2 sha1sum`
# (one sha1sum per core on this 2-core machine; -PN with N = nproc),
# plain `find | xargs -0 sha1sum` and `hashdeep -c sha1 -r` on one tree,
# warm cache, medians of several runs, after checking that every tool
# gives the same digest for every path.
#
# Usage: bench/sum.sh [TREE_DIR] [RUNS]
#   TREE_DIR: made with bench/trees.sh (30,000 files, 3 GiB, 0 B to
#             64 MiB) when it does not exist; default
#             /tmp/hashbatch-sum-tree
#   RUNS:     timed runs per tool (default 5); the tools take turns
# Environment: HB (the hashbatch binary; default build/host/cli/hashbatch),
#              TOOLS (default "hb hb-cpu hb-all xargs-p xargs hashdeep").
# Prints a Markdown table (median, min, max wall seconds, GB/s, median
# CPU seconds (user + system, which the other jobs on a shared machine
# disturb less than wall time); each tool's median over hashbatch's) with
# the machine's load before and after.
# Nothing in the tree is changed; no tool writes into the current
# directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tree=${1:-/tmp/hashbatch-sum-tree}
runs=${2:-5}
hb=${HB:-$here/../build/host/cli/hashbatch}
tools=${TOOLS:-"hb hb-cpu hb-all xargs-p xargs hashdeep"}
cores=$(nproc)
[ -x "$hb" ] || { echo "sum.sh: no hashbatch binary at $hb (set HB)" >&2; exit 2; }
[ -d "$tree" ] || "$here/trees.sh" "$tree" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run TOOL: one tool over the tree, its output on stdout.
run() {
    case $1 in
    hb) "$hb" sum -r --quiet "$tree" ;;
    hb-cpu) "$hb" sum -r --quiet --backend cpu "$tree" ;;
    hb-all) "$hb" sum -r --quiet --device all "$tree" ;;
    xargs-p) find "$tree" -type f -print0 | xargs -0 -P"$cores" sha1sum -- ;;
    xargs) find "$tree" -type f -print0 | xargs -0 sha1sum -- ;;
    hashdeep) hashdeep -c sha1 -r "$tree" ;;
    *) echo "sum.sh: unknown tool $1" >&2; exit 2 ;;
    esac
}

# 1. the same digest for every path from every tool; ours also in the
#    promised order (find | LC_ALL=C sort), byte for byte
cat $(find "$tree" -type f) > /dev/null 2>&1 || true
for t in $tools; do
    (cd "$work" && run "$t" > "$work/out.$t" 2> "$work/err.$t") || {
        echo "sum.sh: $t failed:" >&2; cat "$work/err.$t" >&2; exit 1; }
done
find "$tree" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha1sum -- > "$work/out.oracle"
python3 - "$work" "$tools" <<'PY'
import sys
work, tools = sys.argv[1], sys.argv[2].split()
def parse(tool):
    data = open("%s/out.%s" % (work, tool), "rb").read()
    got = {}
    for line in data.split(b"\n"):
        if not line or line.startswith((b"%", b"#")):
            continue
        if tool == "hashdeep":             # size,sha1,path
            size, digest, path = line.split(b",", 2)
        else:                              # sha1sum's "HEX  NAME"
            if line.startswith(b"\\"):
                sys.exit("sum.sh: escaped names in the tree; not compared")
            digest, path = line[:40], line[42:]
        got[path] = digest
    return got
want = parse("oracle")
for t in tools:
    got = parse(t)
    if got != want:
        bad = [p for p in set(got) | set(want) if got.get(p) != want.get(p)]
        sys.exit("sum.sh: %s differs from sha1sum on %d paths, e.g. %r"
                 % (t, len(bad), bad[:3]))
if open(work + "/out.hb", "rb").read() != open(work + "/out.oracle", "rb").read() \
        and "hb" in tools:
    sys.exit("sum.sh: hashbatch sum -r output is not find|sort|sha1sum's")
print("digests: %d paths, equal for %s; hashbatch's output equal byte "
      "for byte to find | LC_ALL=C sort | sha1sum" % (len(want), ", ".join(tools)),
      file=sys.stderr)
PY

# 2. warm, then time each tool RUNS times, taking turns
export hb tree cores
export -f run
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for ((i = 0; i < runs; i++)); do
    for t in $tools; do
        (cd "$work" && /usr/bin/time -a -o "$work/times" -f "$t %e %U %S" \
            bash -c 'run "$0" > /dev/null 2>&1' "$t") || true
    done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# 3. the table
files=$(find "$tree" -type f | wc -l)
bytes=$(find "$tree" -type f -printf '%s\n' | paste -sd+ | bc)
echo "Tree: $tree, $files files, $bytes bytes; $runs runs per tool, warm cache; $cores cores;"
echo "load average before: $load_before, after: $load_after; $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
python3 - "$work/times" "$tools" "$bytes" "$cores" <<'PY'
import statistics, sys
times, cpu = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 4:
        continue
    times.setdefault(f[0], []).append(float(f[1]))
    cpu.setdefault(f[0], []).append(float(f[2]) + float(f[3]))
order, nbytes, cores = sys.argv[2].split(), int(sys.argv[3]), sys.argv[4]
ours = statistics.median(times["hb"]) if "hb" in times else None
ours_cpu = statistics.median(cpu["hb"]) if "hb" in cpu else None
names = {"hb": "hashbatch sum -r (default backend)",
         "hb-cpu": "hashbatch sum -r --backend cpu",
         "hb-all": "hashbatch sum -r --device all",
         "xargs-p": "find | xargs -0 -P%s sha1sum" % cores,
         "xargs": "find | xargs -0 sha1sum",
         "hashdeep": "hashdeep -c sha1 -r"}
print("| tool | median s | min s | max s | GB/s (median) | median / hashbatch's "
      "| CPU s (median) | CPU / hashbatch's |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for t in order:
    v = times[t]
    m, c = statistics.median(v), statistics.median(cpu[t])
    ratio = "%.2f" % (m / ours) if ours else "-"
    cratio = "%.2f" % (c / ours_cpu) if ours_cpu else "-"
    print("| %s | %.3f | %.3f | %.3f | %.2f | %s | %.2f | %s |"
          % (names.get(t, t), m, min(v), max(v), nbytes / m / 1e9, ratio, c, cratio))
PY
