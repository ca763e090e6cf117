#!/usr/bin/env bash
# storage.sh - issue 15's benchmark: `hashbatch dedup` and `sum` on real
# storage, side by side with jdupes, rmlint and rdfind, warm and cold.
#
# Two trees, made here under OUT_DIR/trees (the script changes files in
# them, so shared trees such as route.sh's are never used):
#   big    bench/trees.sh's 2.2 GB tree (30,000 files, 0 B to 64 MiB, a
#          third of them copies): `trees.sh DIR 30000 2200000000`
#   small  100,000 small files (1 B to 16 KiB, log-uniform; a third of them
#          copies, 2% near-duplicates), from the generator below
# Workloads, each timed as one run of the tool (wall seconds):
#   first   the first scan: hashbatch dedup, jdupes -r, rmlint (-T df -o
#           fdupes: duplicate files only, fdupes layout on stdout), rdfind
#           (-dryrun true, no results file)
#   rescan  after 1% of the files changed (half touched, half rewritten in
#           place with one byte flipped; the same files for every tool):
#           hashbatch dedup --cache (--cache-file in OUT_DIR), rmlint
#           --xattr, jdupes -r (which has no cache: its scan), and
#           hashbatch sum -r --cache beside sum -r
# each warm (the page cache holds the tree and the tools' caches; the
# previous tool's writes are synced first) and cold (`sync; echo 3 >
# /proc/sys/vm/drop_caches` before each run; needs root, else "skipped").
# The caches (hashbatch's files, rmlint's xattrs) are filled once before
# the first round. rmlint --xattr works on a copy of each tree (TREE.xattr,
# changed the same way): writing its xattrs changes every file's inode
# change time, which is part of hashbatch's cache key, so on one shared
# tree each tool's cache would be spoilt by the other's run. Each round runs
# every tool in turn per workload (A B C A B C); medians of the rounds
# with [min-max]. A tool that fails (exit status not 0; hashbatch's --cache
# may not exist yet) is recorded, and shown as "failed" in the table.
#
# Usage: bench/storage.sh [--quick] [OUT_DIR]
#   --quick   one round, a 300 MB tree of 3,000 files and 5,000 small
#             files: a smoke test of the whole script (about a minute),
#             not figures
#   OUT_DIR   raw results, the trees and the caches (default: a new
#             /tmp/hashbatch-storage.XXXXXX); must not exist or be empty.
#             The trees are removed at the end unless KEEP_TREES=1.
# Environment: HB (the hashbatch binary; default build/host/cli/hashbatch),
#   ROUNDS (default 5; --quick: 1), COLD (1: cold runs too, the default;
#   0: warm only).
# The full run takes some 15 to 30 minutes (cold runs dominate; they read
# 2.2 GB each). Run it on a quiet machine, as root for the cold runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
quick=0
if [[ ${1:-} == --quick ]]; then
    quick=1
    shift
fi
hb=${HB:-$here/../build/host/cli/hashbatch}
[[ -x $hb ]] || { echo "storage.sh: no hashbatch binary at $hb (set HB)" >&2; exit 2; }
hb=$(cd "$(dirname "$hb")" && pwd)/$(basename "$hb")
if ((quick)); then
    rounds=${ROUNDS:-1}
    big_args=(3000 300000000)
    small_files=5000
else
    rounds=${ROUNDS:-5}
    big_args=(30000 2200000000)
    small_files=100000
fi
cold=${COLD:-1}
out=${1:-$(mktemp -d /tmp/hashbatch-storage.XXXXXX)}
mkdir -p "$out"
[[ -z $(ls -A "$out") ]] || { echo "storage.sh: $out is not empty" >&2; exit 2; }
out=$(cd "$out" && pwd)
unset HASHBATCH_BACKEND HASHBATCH_DEVICE HASHBATCH_VERIFY HASHBATCH_CPU_IMPL
trees=$out/trees
mkdir -p "$trees" "$out/xdg-sum" "$out/work"

# make_small DIR N: N small files (deterministic, seed 1).
make_small() {
    python3 - "$1" "$2" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)
dirs = ["d%02d/s%d" % (a, b) for a in range(25) for b in range(4)]
for d in dirs:
    os.makedirs(os.path.join(root, d), exist_ok=True)
n_copy, n_near = n // 3, max(n // 50, 1)
origs = []
for i in range(n - n_copy - n_near):
    size = int(2 ** (rng.random() * 14))          # 1 B to 16 KiB
    origs.append(rng.randbytes(size))
def write(i, data):
    with open(os.path.join(root, dirs[i % len(dirs)], "f%06d" % i), "wb") as f:
        f.write(data)
i = 0
for data in origs:
    write(i, data); i += 1
for _ in range(n_copy):
    write(i, rng.choice(origs)); i += 1
for _ in range(n_near):
    b = bytearray(rng.choice(origs))
    b[rng.randrange(len(b))] ^= 1
    write(i, bytes(b)); i += 1
print("small tree: %d files" % i)
PY
}

# mutate TREE SEED: 1% of the files (at least one) changed: half touched,
# half rewritten in place with one byte flipped (same size, same inode).
mutate() {
    python3 - "$1" "$2" <<'PY'
import os, random, sys, time
root, seed = sys.argv[1], sys.argv[2]  # a string seed: deterministic
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
               if os.path.isfile(os.path.join(d, f)) and not os.path.islink(os.path.join(d, f)))
rng = random.Random(seed)
pick = rng.sample(files, max(len(files) // 100, 1))
now = time.time_ns()
for k, p in enumerate(pick):
    size = os.path.getsize(p)
    if k % 2 == 1 and size > 0:
        with open(p, "r+b") as f:
            f.seek(size // 2)
            b = f.read(1)
            f.seek(size // 2)
            f.write(bytes([b[0] ^ 0x5A]))
    else:
        os.utime(p, ns=(now, now))
PY
}

# warm_up DIR...: the page cache holds DIRs' files, every tool's cache
# and every tool's program and libraries (a cold run before dropped them
# all; a warm rescan that read its SQLite file from the disk would time the
# disk, not the cache, and in one such run hashbatch's first warm scan
# took 0.70 s against 0.50-0.55 s, loading pocl's LLVM from the disk).
# `hashbatch devices` loads what a run that opens OpenCL loads. The files
# are read twice: a page read once after a drop sits on the kernel's
# inactive list, and the first tool to read it again pays for moving it
# (after one read, hashbatch dedup took 0.63 s against 0.54 s the run
# after, and jdupes 0.77 s against 0.67 s; after two reads, 0.57-0.61 and
# 0.67 s), which favoured whichever tool ran second.
warm_up() {
    find "$@" "$out"/*.sqlite* "$out/xdg-sum" -type f -exec cat {} + >/dev/null 2>&1 || true
    find "$@" "$out"/*.sqlite* "$out/xdg-sum" -type f -exec cat {} + >/dev/null 2>&1 || true
    "$hb" devices >/dev/null 2>&1 || true
    local t
    for t in jdupes rmlint rdfind; do
        command -v "$t" >/dev/null && "$t" --version >/dev/null 2>&1 || true
    done
}

drop_ok=0
if ((cold)) && [[ -w /proc/sys/vm/drop_caches ]] && sync && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
    drop_ok=1
fi

# timed TREE TEMP WORKLOAD TOOL COMMAND...: one run into runs.tsv; for a
# cold run the page cache is dropped first (or the run is skipped).
timed() {
    local tree=$1 temp=$2 workload=$3 tool=$4 t0 t1 rc=0
    shift 4
    if [[ $temp == cold ]]; then
        if ((!drop_ok)); then
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$tree" "$temp" "$workload" \
                "$tool" "" skip >>"$out/runs.tsv"
            return 0
        fi
        sync
        echo 3 >/proc/sys/vm/drop_caches
    else
        sync # the previous tool's writes (rmlint's xattrs) are not billed to this one
    fi
    echo "== $round $tree $temp $workload $tool: $*" >>"$out/stderr.txt"
    t0=$EPOCHREALTIME
    (cd "$out/work" && "$@") >/dev/null 2>>"$out/stderr.txt" || rc=$?
    t1=$EPOCHREALTIME
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$tree" "$temp" "$workload" "$tool" \
        "$(echo "$t1 - $t0" | bc)" "$rc" >>"$out/runs.tsv"
}

# The tools, by label: run_tool LABEL TREE_DIR TREE_NAME.
run_tool() {
    local dir=$2 name=$3
    case $1 in
    hashbatch) "$hb" dedup -q "$dir" ;;
    jdupes) jdupes -q -r "$dir" ;;
    rmlint) rmlint -T df -o fdupes "$dir" ;;
    rdfind) rdfind -dryrun true -makeresultsfile false "$dir" ;;
    "hashbatch --cache") "$hb" dedup -q --cache --cache-file "$out/dedup-cache-$name.sqlite" "$dir" ;;
    "rmlint --xattr") rmlint -T df -o fdupes --xattr "$dir.xattr" ;;
    "sum -r") "$hb" sum -r --quiet "$dir" ;;
    "sum -r --cache") XDG_CACHE_HOME=$out/xdg-sum/$name "$hb" sum -r --quiet --cache "$dir" ;;
    esac
}

first_tools=(hashbatch jdupes rmlint rdfind)
rescan_tools=("rmlint --xattr" "hashbatch --cache" jdupes "sum -r --cache" "sum -r")
# have LABEL: is the tool installed? (hashbatch is $hb)
have() {
    case $1 in
    hashbatch* | sum*) return 0 ;;
    *) command -v "${1%% *}" >/dev/null ;;
    esac
}

echo "storage.sh: making the trees in $trees" >&2
"$here/trees.sh" "$trees/big" "${big_args[@]}" >&2
make_small "$trees/small" "$small_files" >&2
for t in big small; do
    cp -a "$trees/$t" "$trees/$t.xattr"
done
sync

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
    echo "cores: $(nproc)"
    echo "memory: $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
    echo "load_before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "hashbatch: $("$hb" --version)"
    echo "commit: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
    src=$(findmnt -no SOURCE -T "$trees" 2>/dev/null || echo unknown)
    echo "storage: $src ($(findmnt -no FSTYPE -T "$trees" 2>/dev/null || echo '?')), rotational: $(lsblk -dno ROTA "$src" 2>/dev/null | head -1 | tr -d ' ' || echo '?')"
    echo "reads: $("$hb" dedup -q -v "$trees/small" 2>&1 >/dev/null | sed -n 's/^hashbatch: reads: //p' | head -1)"
    echo "rounds: $rounds"
    echo "quick: $quick"
    echo "cold: $([[ $drop_ok == 1 ]] && echo yes || echo 'skipped (drop_caches not writable)')"
    for t in big small; do
        echo "tree_$t: $(find "$trees/$t" -type f | wc -l) files, $(du -sb --apparent-size "$trees/$t" | cut -f1) bytes"
    done
    echo "jdupes: $(jdupes -v 2>&1 | head -1 || echo none)"
    echo "rmlint: $(rmlint --version 2>&1 | head -1 | sed 's/\x1b\[[0-9;]*m//g' || echo none)"
    echo "rdfind: $(rdfind -v 2>&1 | head -1 || echo none)"
} >"$out/machine.txt"

printf 'round\ttree\ttemp\tworkload\ttool\tseconds\trc\n' >"$out/runs.tsv"
round=0
echo "storage.sh: filling the caches" >&2
for t in big small; do
    for tool in "rmlint --xattr" "hashbatch --cache" "sum -r --cache"; do
        have "$tool" || continue
        (cd "$out/work" && run_tool "$tool" "$trees/$t" "$t") >/dev/null 2>>"$out/stderr.txt" || true
    done
done

temps=(warm)
((cold)) && temps+=(cold)
for ((round = 1; round <= rounds; round++)); do
    echo "storage.sh: round $round of $rounds" >&2
    for t in big small; do
        for temp in "${temps[@]}"; do
            [[ $temp == warm ]] && warm_up "$trees/$t"
            for tool in "${first_tools[@]}"; do
                have "$tool" || continue
                timed "$t" "$temp" first "$tool" run_tool "$tool" "$trees/$t" "$t"
            done
        done
        for temp in "${temps[@]}"; do
            mutate "$trees/$t" "$round-$temp"
            mutate "$trees/$t.xattr" "$round-$temp"
            [[ $temp == warm ]] && warm_up "$trees/$t" "$trees/$t.xattr"
            for tool in "${rescan_tools[@]}"; do
                have "$tool" || continue
                timed "$t" "$temp" rescan "$tool" run_tool "$tool" "$trees/$t" "$t"
            done
        done
    done
done
echo "load_after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
if [[ ${KEEP_TREES:-0} != 1 ]]; then
    rm -rf "$trees"
fi
echo "storage.sh: raw results in $out" >&2
python3 "$here/storage_table.py" "$out" | tee "$out/table.md"
