#!/usr/bin/env bash
# actions.sh - issue 27's benchmark: `link --hard` and `remove` on 100,000
# duplicate groups, and `dedup` and `sum -r` on bench/trees.sh's tree, for
# two binaries side by side (BASE: before the change, NEW: after), so that
# "at most 10% slower" (the actions) and "no slower than today" (the scans)
# can be read off one table. Run it with NEW=BASE first (an A/A run): the
# ratios it prints are this machine's noise floor.
#
# Usage: BASE=OLD_BINARY [NEW=NEW_BINARY] bench/actions.sh
#   BASE   the hashbatch binary before the change (required), e.g. one built
#          from `git archive 042389b` with scripts/build.sh
#   NEW    the binary after it (default: build/host/cli/hashbatch)
# Environment:
#   RUNS     timed runs per binary and row (default 5); medians
#   NGROUPS  duplicate groups of the action tree (default 100000)
#   WORK     where everything is made (default /tmp/hb-actions); the action
#            tree, its pristine template and the plan share its filesystem
#   TREES    trees for dedup and sum -r, made by bench/trees.sh as
#            "FILES:BYTES" words (default "30000:3221225472": trees.sh's
#            defaults, 30,000 files, 3 GiB, seed 1); "" for none
#   ONLY     actions | scans | all (default all)
#   ACTIONS  the actions timed, comma-separated (default "link --hard,remove")
#   HASHBATCH_BACKEND  default cpu here (the engine's calibration and a
#            GPU's start-up would otherwise dominate a 1 s scan)
# Templates and trees are kept in WORK and reused by later runs.
#
# The action tree: NGROUPS groups of 2 files, 1-8 KiB each (uniform),
# distinct content per group (the group number, then a slice of a seeded
# random pool), the two files of a group in two different directories of
# 1,000 (WORK/act/tree/A/B/C/gNNNNNNa|b, A B C in 0-9). The tree is a
# `cp -a` of a template made once; before each timed action, outside the
# timing, the names the previous action changed (removed, or replaced by a
# link) are copied back from the template (bytes, mode, times) and checked
# (every name a file with one link, nothing else), the tree `sync`ed, and
# the plan made by the binary about to act (`dedup --json tree`, from
# WORK/act: the plan must name the restored inodes, as the actions refuse
# a file whose inode is not the plan's), then `sync` again. The cache is not dropped: every run is warm (the copy and the
# plan's scan leave the whole tree in the page cache). Only the action
# is timed (its stdout to /dev/null), then checked: exit 0, and the tree
# holds NGROUPS files after remove, 2*NGROUPS all with two links after
# link --hard, nothing else. Binaries take turns: A B A B ... per row.
# dedup (`dedup -q TREE`) and sum (`sum -r --quiet TREE`) write to
# /dev/null; their outputs are compared between the binaries once first.
# A third scan row is a rescan from the hash cache (`sum -r --cache-file`,
# each binary its own cache file, filled by one untimed run first): it
# reads no file, so it times the stats that key the cache.
#
# Prints a Markdown table (wall medians with min-max, CPU user+sys
# medians, NEW/BASE for both) on stdout; progress on stderr; the raw
# times in WORK/times.tsv. The binaries are copied into WORK/bin first,
# so a rebuild during the run does not change what is measured.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
base=${BASE:?usage: BASE=OLD_BINARY [NEW=NEW_BINARY] bench/actions.sh}
new=${NEW:-$here/../build/host/cli/hashbatch}
runs=${RUNS:-5}
ngroups=${NGROUPS:-100000}
work=${WORK:-/tmp/hb-actions}
trees=${TREES-30000:3221225472}
only=${ONLY:-all}
export HASHBATCH_BACKEND=${HASHBATCH_BACKEND:-cpu}
export LC_ALL=C
case $only in actions | scans | all) ;; *) echo "actions.sh: ONLY is actions, scans or all" >&2; exit 2 ;; esac
for b in "$base" "$new"; do
    [ -x "$b" ] || { echo "actions.sh: no binary at $b" >&2; exit 2; }
done
mkdir -p "$work/bin" "$work/act" "$work/trees"
work=$(cd "$work" && pwd)
cp "$base" "$work/bin/base.tmp" && mv -f "$work/bin/base.tmp" "$work/bin/base"
cp "$new" "$work/bin/new.tmp" && mv -f "$work/bin/new.tmp" "$work/bin/new"
bin_base=$work/bin/base
bin_new=$work/bin/new
times=$work/times.tsv
: > "$times"
log() { echo "actions.sh: $*" >&2; }

# timed LABEL ROW DIR CMD...: runs CMD in DIR, stdout to /dev/null, and
# appends "ROW LABEL wall user sys" to the times; a failure stops the run.
timed() {
    local label=$1 row=$2 dir=$3 tf rc
    shift 3
    tf=$work/time.one
    set +e
    (
        cd "$dir"
        TIMEFORMAT='%3R %3U %3S'
        { time "$@" > /dev/null 2> "$work/err.one"; } 2> "$tf"
    )
    rc=$?
    set -e
    if [ $rc -ne 0 ]; then
        log "$label: '$*' failed (exit $rc):"
        tail -n 5 "$work/err.one" >&2
        exit 1
    fi
    printf '%s\t%s\t%s\n' "$row" "$label" "$(tr ' ' '\t' < "$tf")" >> "$times"
}

# --- the action tree's template (made once, reused) ------------------------
template=$work/act/template-$ngroups
make_template() {
    [ -f "$template.done" ] && return
    rm -rf "$template"
    log "making $template ($ngroups groups of 2 files, 1-8 KiB)"
    python3 - "$template" "$ngroups" <<'PY'
import os, random, sys
root, groups = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)
POOL = 1 << 24
pool = random.Random(2).randbytes(POOL + 8192)
dirs = ["%d/%d/%d" % (a, b, c) for a in range(10) for b in range(10) for c in range(10)]
for d in dirs:
    os.makedirs(os.path.join(root, d))
for g in range(groups):
    size = rng.randrange(1024, 8193)
    off = rng.randrange(POOL)
    data = (b"%08d" % g) + pool[off:off + size - 8]
    for k, d in ((0, dirs[g % 1000]), (1, dirs[(g * 7 + 500) % 1000])):
        with open(os.path.join(root, d, "g%06d%s" % (g, "ab"[k])), "wb") as f:
            f.write(data)
PY
    touch "$template.done"
}

# restore: brings WORK/act/tree back to the template's state, copying back
# (as `cp -a` would: bytes, mode, times) only the names whose inode is not
# the one recorded when it was last made (removed, or replaced by a link),
# and records the new inodes; a tree that is missing is copied whole. Then
# every name must be there, a regular file with one link, nothing else.
restore() {
    local tree=$work/act/tree map=$work/act/tree.inodes
    if [ ! -d "$tree" ] || [ ! -f "$map" ]; then
        rm -rf "$tree" "$map"
        cp -a "$template" "$tree"
    fi
    python3 - "$template" "$tree" "$map" <<'PY'
import json, os, shutil, sys
tmpl, tree, mapfile = sys.argv[1:4]
names = []
for d, _, files in os.walk(tmpl):
    rel = os.path.relpath(d, tmpl)
    names += [os.path.normpath(os.path.join(rel, f)) for f in files]
try:
    inodes = json.load(open(mapfile))
except FileNotFoundError:
    inodes = {}
fixed = 0
for n in names:
    p = os.path.join(tree, n)
    try:
        ino = os.lstat(p).st_ino
    except FileNotFoundError:
        ino = None
    if ino is not None and inodes.get(n) == ino:
        continue
    if ino is not None and n in inodes:
        os.unlink(p)
    if ino is None or n in inodes:
        shutil.copy2(os.path.join(tmpl, n), p)
        fixed += 1
    inodes[n] = os.lstat(p).st_ino
want = set(names)
for d, _, files in os.walk(tree):
    for f in files:
        n = os.path.normpath(os.path.join(os.path.relpath(d, tree), f))
        st = os.lstat(os.path.join(tree, n))
        if n not in want or st.st_nlink != 1 or not os.path.isfile(os.path.join(tree, n)):
            sys.exit("actions.sh: restore: %s is not as the template has it" % n)
        want.discard(n)
if want:
    sys.exit("actions.sh: restore: %d names missing" % len(want))
json.dump(inodes, open(mapfile + ".tmp", "w"))
os.replace(mapfile + ".tmp", mapfile)
print("actions.sh: restore: %d names copied back" % fixed, file=sys.stderr)
PY
}

# act LABEL BINARY ACTION...: one timed action on the restored tree.
act() {
    local label=$1 bin=$2 row n
    shift 2
    row="$*"
    restore
    rm -f "$work/act/plan.json"
    sync
    (cd "$work/act" && "$bin" dedup --json tree > plan.json 2> /dev/null) ||
        { log "$label: dedup --json failed"; exit 1; }
    sync
    timed "$label" "$row" "$work/act" "$bin" "$@" plan.json
    if [ "$1" = remove ]; then
        n=$(find "$work/act/tree" -type f | wc -l)
        [ "$n" -eq "$ngroups" ] || { log "$label $row: $n files left, not $ngroups"; exit 1; }
    else
        n=$(find "$work/act/tree" -type f -links 2 | wc -l)
        [ "$n" -eq $((2 * ngroups)) ] || { log "$label $row: $n files with 2 links, not $((2 * ngroups))"; exit 1; }
    fi
    n=$(find "$work/act/tree" -mindepth 1 -not -name 'g*[ab]' -not -type d | wc -l)
    [ "$n" -eq 0 ] || { log "$label $row: $n unexpected names left in the tree"; exit 1; }
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t_start=$(date +%s)

if [ "$only" != scans ]; then
    make_template
    rm -rf "$work/act/tree" "$work/act/tree.inodes" "$work/act/plan.json"
    IFS=, read -r -a action_list <<<"${ACTIONS:-link --hard,remove}"
    for action in "${action_list[@]}"; do
        for ((i = 1; i <= runs; i++)); do
            log "$action: run $i of $runs"
            # shellcheck disable=SC2086
            act BASE "$bin_base" $action
            # shellcheck disable=SC2086
            act NEW "$bin_new" $action
        done
    done
    rm -rf "$work/act/tree" "$work/act/tree.inodes" "$work/act/plan.json"
fi

tree_list=()
if [ "$only" != actions ]; then
    for spec in $trees; do
        files=${spec%%:*}
        bytes=${spec#*:}
        t=$work/trees/tree-$files-$bytes
        if [ ! -f "$t.done" ]; then
            rm -rf "$t"
            "$here/trees.sh" "$t" "$files" "$bytes" >&2
            touch "$t.done"
        fi
        tree_list+=("$t")
        # the outputs first: equal, or a warning
        for b in base new; do
            "$work/bin/$b" dedup -q "$t" > "$work/dedup.$b" 2> /dev/null || true
            "$work/bin/$b" sum -r --quiet "$t" > "$work/sum.$b" 2> /dev/null || true
        done
        cmp -s "$work/dedup.base" "$work/dedup.new" || log "warning: dedup's outputs differ on $t"
        cmp -s "$work/sum.base" "$work/sum.new" || log "warning: sum -r's outputs differ on $t"
        # each binary's own hash cache, filled once (a rescan then reads nothing)
        for b in base new; do
            rm -f "$work/cache.$b.sqlite"
            "$work/bin/$b" sum -r --quiet --cache-file "$work/cache.$b.sqlite" "$t" > /dev/null 2>&1 || true
        done
        for ((i = 1; i <= runs; i++)); do
            log "$(basename "$t"): run $i of $runs"
            for b in base new; do
                label=$(echo "$b" | tr a-z A-Z)
                timed "$label" "dedup $(basename "$t")" "$work" "$work/bin/$b" dedup -q "$t"
            done
            for b in base new; do
                label=$(echo "$b" | tr a-z A-Z)
                timed "$label" "sum -r $(basename "$t")" "$work" "$work/bin/$b" sum -r --quiet "$t"
            done
            for b in base new; do
                label=$(echo "$b" | tr a-z A-Z)
                timed "$label" "sum -r --cache-file rescan $(basename "$t")" "$work" \
                    "$work/bin/$b" sum -r --quiet --cache-file "$work/cache.$b.sqlite" "$t"
            done
        done
    done
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
t_end=$(date +%s)

# --- the table ---------------------------------------------------------------
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
fam=$(lscpu | sed -n 's/^CPU family: *//p' | head -1)
model=$(lscpu | sed -n 's/^Model: *//p' | head -1)
fs=$(findmnt -T "$work" -no FSTYPE,SOURCE,OPTIONS | head -1)
echo "## issue 27: actions and scans, BASE against NEW"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); the whole run took $(( (t_end - t_start) / 60 )) min $(( (t_end - t_start) % 60 )) s"
echo "- machine: $cpu (family $fam, model $model), $(nproc) CPUs, $(free -g | awk '/^Mem:/ {print $2}') GiB; kernel $(uname -r)"
echo "- filesystem of WORK ($work): $fs"
echo "- load average before: $load_before, after: $load_after"
echo "- BASE: $base (sha256 $(sha256sum "$bin_base" | cut -c1-12)); NEW: $new (sha256 $(sha256sum "$bin_new" | cut -c1-12))"
echo "- HASHBATCH_BACKEND=$HASHBATCH_BACKEND; warm page cache (nothing dropped); $runs runs per binary and row, taking turns (A B A B ...)"
if [ "$only" != scans ]; then
    echo "- actions: $ngroups groups of 2 files (1-8 KiB, distinct per group) in 1,000 directories; before each run the changed names copied back from a template, synced, the plan made by the acting binary (\`dedup --json\`), only the action timed"
fi
for t in "${tree_list[@]}"; do
    echo "- $(basename "$t"): bench/trees.sh $(basename "$t" | sed 's/^tree-//; s/-/ /') (seed 1): $(find "$t" -type f | wc -l) files, $(du -sb "$t" | cut -f1) bytes"
done
echo
python3 - "$times" <<'PY'
import statistics, sys
rows, data = [], {}
for line in open(sys.argv[1]):
    row, label, wall, user, sys_ = line.rstrip("\n").split("\t")
    if row not in data:
        rows.append(row)
        data[row] = {"BASE": [], "NEW": []}
    data[row][label].append((float(wall), float(user) + float(sys_)))
print("| row | BASE wall s, median [min-max] | NEW wall s, median [min-max] | NEW/BASE wall "
      "| BASE CPU s | NEW CPU s | NEW/BASE CPU | limit |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
for row in rows:
    b, n = data[row]["BASE"], data[row]["NEW"]
    bw, nw = [x[0] for x in b], [x[0] for x in n]
    bc, nc = [x[1] for x in b], [x[1] for x in n]
    mbw, mnw = statistics.median(bw), statistics.median(nw)
    mbc, mnc = statistics.median(bc), statistics.median(nc)
    r = mnw / mbw if mbw else float("nan")
    rc = mnc / mbc if mbc else float("nan")
    if row.startswith(("link", "remove")):
        limit = "<= 1.10: " + ("met" if r <= 1.10 else "NOT met")
    else:
        limit = "no slower (<= 1.00 within the A/A spread)"
    print("| %s | %.3f [%.3f-%.3f] | %.3f [%.3f-%.3f] | %.3f | %.3f | %.3f | %.3f | %s |"
          % (row, mbw, min(bw), max(bw), mnw, min(nw), max(nw), r, mbc, mnc, rc, limit))
PY
echo
echo "Issue 27's limits: link --hard and remove at most 10% slower (NEW/BASE wall <= 1.10);"
echo "dedup and sum -r no slower than BASE. Read the ratios against an A/A run (NEW=BASE) on the same machine."
