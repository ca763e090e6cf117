#!/usr/bin/env bash
# route.sh - issue 13's benchmark: the default route (backend auto with the
# default device: every OpenCL device and the CPU pool at once, under the
# scheduler's cost models) against each pinned route (the CPU pool alone,
# --backend cpu; each OpenCL device alone, --backend opencl --device P:D)
# on the same workloads, in one run of the script:
#   in memory, end to end through hb_sha1_batch (`hashbatch bench`:
#   packing, transfers and sampled verification included, every run's
#   digests checked against OpenSSL's): 65,536 x 4 KiB, 1,000,000 x 64 B,
#   256 x 1 MiB and 16 x 16 MiB (bench's size sweep, whose batches hold
#   256 MiB, at most 1,000,000 messages), 1,024 x 64 B, and one 64-byte
#   message alone (its batch sweep; the latency is 1 / messages per second,
#   a run being back-to-back calls for MIN_TIME seconds);
#   on files: `hashbatch sum -r` and `hashbatch dedup` over one tree made
#   by bench/trees.sh (30,000 files, 0 B to 64 MiB, 2.2 GB; a third of
#   them copies), warm page cache, and jdupes -r on it when installed.
# Rounds alternate the routes (A B C A B C ...): a round is one bench run,
# in which every route takes its turn on each workload (one timed run
# each), then every route in turn runs sum, then dedup (jdupes last). The
# table (bench/route_table.py) gives each route's median over the rounds
# [min-max], the best pinned route, and default / best pinned as a ratio
# of speeds (at least 1.00: the default is as fast as the best pin).
#
# Then a second row set, on disjoint cores (issue 30): with
# HASHBATCH_DEVICE_CORES=LAST (the process's last core) the OpenCL runtime's
# threads (pocl's CPU device) run on that core and the CPU pool on the
# others, so the scheduler knows they do not share cores; pinned pool
# (--backend cpu: on its cores), pinned pocl (--backend opencl: on its
# core) and the default (both) alternate on 65,536 x 4 KiB, 4,096 x 64 KiB
# and 1,000,000 x 64 B in memory and on `sum -r` over the tree, in
# OUT_DIR/disjoint with a table of its own. POCL_CPU_MAX_CU_NUM is set to
# the device's core count for it (pocl otherwise starts a thread per core
# of the machine, all on its one core).
#
# Usage: bench/route.sh [--quick] [--disjoint-only] [OUT_DIR]
#   --quick   one round, runs of 0.05 s, a 300 MB tree of 3,000 files: a
#             smoke test of the whole script (a minute or so), not figures
#   --disjoint-only  the disjoint-core row set alone
#   OUT_DIR   where the raw results go (default: a new
#             /tmp/hashbatch-route.XXXXXX); it must not exist or be empty
# Environment: HB (the hashbatch binary; default build/host/cli/hashbatch),
#   ROUNDS (default 5; --quick: 1), MIN_TIME (seconds of one bench run,
#   default 0.25), TREE (the tree for sum and dedup; made with trees.sh
#   when it does not exist; default /tmp/hashbatch-route-tree, with
#   --quick /tmp/hashbatch-route-tree-quick).
# HASHBATCH_BACKEND, _DEVICE, _VERIFY and _CPU_IMPL are unset: the routes
# are chosen here. The model cache is left as it is (the default route
# uses it as any run would); OUT_DIR/calibration.json has the models of a
# fresh calibration, OUT_DIR/sum-v.txt how one sum -r divided the work.
# A few minutes on a 2-core machine with pocl (estimated: each round is one
# bench run of some 15 s and about 10 s of sum and dedup; the tree, made
# once, takes a minute more); --quick takes under a minute. Run it on a
# quiet machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
quick=0 disjoint_only=0
while [[ ${1:-} == --* ]]; do
    case $1 in
    --quick) quick=1 ;;
    --disjoint-only) disjoint_only=1 ;;
    *) echo "route.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
hb=${HB:-$here/../build/host/cli/hashbatch}
[[ -x $hb ]] || { echo "route.sh: no hashbatch binary at $hb (set HB)" >&2; exit 2; }
hb=$(cd "$(dirname "$hb")" && pwd)/$(basename "$hb")
if ((quick)); then
    rounds=${ROUNDS:-1}
    min_time=${MIN_TIME:-0.05}
    tree=${TREE:-/tmp/hashbatch-route-tree-quick}
    tree_args=(3000 300000000)
else
    rounds=${ROUNDS:-5}
    min_time=${MIN_TIME:-0.25}
    tree=${TREE:-/tmp/hashbatch-route-tree}
    tree_args=(30000 2200000000)
fi
out=${1:-$(mktemp -d /tmp/hashbatch-route.XXXXXX)}
mkdir -p "$out"
[[ -z $(ls -A "$out") ]] || { echo "route.sh: $out is not empty" >&2; exit 2; }
unset HASHBATCH_BACKEND HASHBATCH_DEVICE HASHBATCH_VERIFY HASHBATCH_CPU_IMPL

# The OpenCL devices ("P:D" each), as `hashbatch devices --json` lists them.
devices=$("$hb" devices --json | python3 -c '
import json, sys
for d in json.load(sys.stdin)["opencl_devices"]:
    if d["available"]:
        print(d["id"])')

# route_args ROUTE: the engine options of a route.
route_args() {
    case $1 in
    default) ;;
    cpu) echo "--backend cpu" ;;
    opencl\ *) echo "--backend opencl --device ${1#opencl }" ;;
    esac
}
routes=(default cpu)
for d in $devices; do routes+=("opencl $d"); done

[[ -d $tree ]] || "$here/trees.sh" "$tree" "${tree_args[@]}" >&2
# machine_txt FILE: what the table says of the machine and the run.
machine_txt() {
    {
        echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
        echo "cores: $(nproc)"
        echo "load_before: $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "hashbatch: $("$hb" --version)"
        echo "commit: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
        echo "devices: ${devices//$'\n'/ }"
        echo "rounds: $rounds"
        echo "min_time: $min_time"
        echo "quick: $quick"
        echo "tree: $tree, $(find "$tree" -type f | wc -l) files, $(du -sb --apparent-size "$tree" | cut -f1) bytes"
        echo "jdupes: $(command -v jdupes >/dev/null && jdupes -v 2>&1 | head -1 || echo none)"
    } >"$1"
}

# timed NAME ROUND WORKLOAD COMMAND...: one timed run into $set/files.tsv.
timed() {
    local route=$1 round=$2 workload=$3 t0 t1 rc=0
    shift 3
    t0=$EPOCHREALTIME
    "$@" >/dev/null 2>>"$set/stderr.txt" || rc=$? # dedup warns of the collision pairs
    t1=$EPOCHREALTIME
    printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$workload" "$route" \
        "$(echo "$t1 - $t0" | bc)" "$rc" >>"$set/files.tsv"
}

# main_set: the default route against every pinned one, in $out.
main_set() {
    set=$out
    machine_txt "$out/machine.txt"
    "$hb" devices --calibrate --json >"$out/calibration.json"
    find "$tree" -type f -exec cat {} + >/dev/null 2>&1 || true # warm the page cache
    "$hb" sum -r --quiet -v "$tree" 2>"$out/sum-v.txt" >/dev/null || true

    printf 'round\tworkload\troute\tseconds\trc\n' >"$out/files.tsv"
    for ((r = 1; r <= rounds; r++)); do
        echo "route.sh: round $r of $rounds" >&2
        "$hb" bench --json --backend "$backends" --cpu-impl default \
            --sizes 64,4K,1M,16M --batches 1,1024 --runs 1 --min-time "$min_time" \
            >"$out/bench-$r.json"
        for route in "${routes[@]}"; do
            # shellcheck disable=SC2046 # route_args is split on purpose
            timed "$route" "$r" sum "$hb" sum -r --quiet $(route_args "$route") "$tree"
        done
        for route in "${routes[@]}"; do
            # shellcheck disable=SC2046
            timed "$route" "$r" dedup "$hb" dedup -q $(route_args "$route") "$tree"
        done
        if command -v jdupes >/dev/null; then
            timed jdupes "$r" dedup jdupes -q -r "$tree"
        fi
    done
    echo "load_after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
    python3 "$here/route_table.py" "$out" | tee "$out/table.md"
}

# disjoint_set: the default, the pinned pool and the pinned CPU device on
# disjoint cores, in $out/disjoint.
disjoint_set() {
    set=$out/disjoint
    mkdir -p "$set"
    local cores last
    cores=$(taskset -pc $$ | sed 's/.*: //')
    last=$(python3 -c '
import sys
cores = []
for part in sys.argv[1].split(","):
    a, _, b = part.partition("-")
    cores += range(int(a), int(b or a) + 1)
print(cores[-1] if len(cores) > 1 else "")' "$cores")
    if [[ -z $last ]]; then
        echo "route.sh: one core only: no disjoint-core row set" >&2
        return 0
    fi
    export HASHBATCH_DEVICE_CORES=$last POCL_CPU_MAX_CU_NUM=1
    machine_txt "$set/machine.txt"
    echo "set: disjoint cores: HASHBATCH_DEVICE_CORES=$last POCL_CPU_MAX_CU_NUM=1 (the pool on the other cores of $cores)" >>"$set/machine.txt"
    "$hb" sum -r --quiet -v "$tree" 2>"$set/sum-v.txt" >/dev/null || true
    local droutes=(default cpu) d
    for d in $devices; do droutes+=("opencl $d"); done
    printf 'round\tworkload\troute\tseconds\trc\n' >"$set/files.tsv"
    for ((r = 1; r <= rounds; r++)); do
        echo "route.sh: disjoint cores, round $r of $rounds" >&2
        "$hb" bench --json --backend "$backends" --cpu-impl default \
            --sizes 64,4K,64K --batches none --runs 1 --min-time "$min_time" \
            >"$set/bench-$r.json"
        for route in "${droutes[@]}"; do
            # shellcheck disable=SC2046
            timed "$route" "$r" sum "$hb" sum -r --quiet $(route_args "$route") "$tree"
        done
    done
    echo "load_after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$set/machine.txt"
    python3 "$here/route_table.py" "$set" | tee "$set/table.md"
    unset HASHBATCH_DEVICE_CORES POCL_CPU_MAX_CU_NUM
}

backends=default,cpu
[[ -n $devices ]] && backends+=,opencl
((disjoint_only)) || main_set
disjoint_set
echo "route.sh: raw results in $out" >&2
