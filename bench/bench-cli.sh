#!/usr/bin/env bash
# bench-cli.sh - the full `hashbatch bench` on this machine, kept: the
# tables (bench/bench-cli.txt), every measurement (bench/bench-cli.json)
# and the plot (bench/bench-cli.png); then the issue's targets checked
# from that JSON, and the cpu backend against `openssl speed` measured side
# by side (alternating rounds, so that load from elsewhere hits both).
#
# Usage: bench/bench-cli.sh [BUILD_DIR]     (default: build)
# Env:   ROUNDS  rounds of the cpu-vs-openssl comparison (default 3)
#        BENCH_ARGS  extra `hashbatch bench` options (e.g. --quick to try
#                    the script; the kept files then say quick: true)
# Prints a Markdown section on stdout. Needs python3 (to read the JSON)
# and gnuplot; exits 1 if a step fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$root/build"}
hb="$build/host/cli/hashbatch"
rounds=${ROUNDS:-3}
read -r -a extra <<<"${BENCH_ARGS:-}"
out="$root/bench/bench-cli"
cores=$(nproc)

die() { echo "bench-cli.sh: $*" >&2; exit 1; }
[ -x "$hb" ] || die "$hb not built (scripts/build.sh $build)"
command -v python3 >/dev/null || die "python3 is needed to read the JSON"
command -v openssl >/dev/null || die "openssl (the command) is needed for openssl speed"

echo "### \`hashbatch bench\`, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "Load before: $(cut -d' ' -f1-3 /proc/loadavg) ($cores cores)."
echo
"$hb" bench --json-file "$out.json" --plot "$out.png" "${extra[@]}" >"$out.txt" ||
  die "hashbatch bench failed"
echo "Load after: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "Command: \`hashbatch bench --json-file bench/bench-cli.json --plot bench/bench-cli.png${extra[*]:+ ${extra[*]}}\`"
echo "(tables: bench/bench-cli.txt)."
echo
python3 - "$out.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))

def fig(backend, size, count=None, sweep="sizes"):
    for r in doc[sweep]:
        if r["backend"] == backend and r["size"] == size and (count is None or r["count"] == count):
            return r
    return None

def num(v):
    return "%.3g" % v if v < 100 else "%.0f" % v

def gb(r):
    g = r["gb_per_s"]
    return "%s GB/s [%s-%s]" % (num(g["median"]), num(g["min"]), num(g["max"]))

def mps(r):
    m = r["messages_per_s"]
    return "%s M/s [%s-%s]" % (num(m["median"] / 1e6), num(m["min"] / 1e6), num(m["max"] / 1e6))

def size_name(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or n % 1024:
            return "%d %s" % (n, unit)
        n //= 1024
    return "%d TiB" % n

m = doc["machine"]
print("Machine: %s, %d cores, SHA-NI %s; %s; OpenCL: %s." % (
    m["cpu_model"], m["cores"], "yes" if m["sha_ni"] else "no", m["openssl"],
    ", ".join("%s %s (%s)" % (d["id"], d["name"], d["driver_version"]) for d in m["opencl_devices"]) or "none"))
print()
names = [b["name"] for b in doc["backends"]]
print("| size | batch | " + " | ".join(names) + " | OpenSSL, 1 thread |")
print("| --- | --- |" + " --- |" * (len(names) + 1))
for size in doc["settings"]["sizes"]:
    cells, count = [], None
    for n in names + ["openssl"]:
        sweep = "openssl_single_thread" if n == "openssl" else "sizes"
        r = fig(n, size, sweep=sweep)
        count = r["count"] if r else count
        cells.append(gb(r) if r else "-")
    print("| %s | %s | %s |" % (size_name(size), count, " | ".join(cells)))
print()
print("Medians of %d runs [min-max], each run at least %g s of back-to-back batches, "
      "verification %s." % (doc["settings"]["runs"], doc["settings"]["min_time_s"], doc["settings"]["verify"]))
print()
for size in doc["settings"]["batch_message_sizes"]:
    if not doc["settings"]["batches"]:
        break
    print("Messages/s by batch size, %s messages:" % size_name(size))
    print()
    print("| batch | " + " | ".join(names) + " |")
    print("| --- |" + " --- |" * len(names))
    for n in doc["settings"]["batches"]:
        print("| %d | %s |" % (n, " | ".join(
            mps(fig(b, size, n, "batches")) if fig(b, size, n, "batches") else "-" for b in names)))
    print()
if doc["crossover"]:
    print("Crossover (smallest batch from which the backend stays ahead of cpu in messages/s):")
    print()
    for c in doc["crossover"]:
        print("- %s at %s: %s" % (c["backend"], size_name(c["size"]), c["text"]))
    print()
print("Targets (end to end, medians):")
print()
for size, count in ((4096, 65536), (64, 1000000)):
    cpu = fig("cpu", size, count)
    for b in names:
        if not b.startswith("opencl"):
            continue
        d = fig(b, size, count)
        if cpu and d:
            ratio = d["gb_per_s"]["median"] / cpu["gb_per_s"]["median"]
            print("- %s / cpu at %d x %s: **%.2fx** (target >= 2x: %s)" % (
                b, count, size_name(size), ratio, "met" if ratio >= 2 else "not met"))
        else:
            print("- %s / cpu at %d x %s: not measured in this run" % (b, count, size_name(size)))
EOF
echo
echo "cpu backend against \`openssl speed -evp sha1 -multi $cores -bytes 4096 -seconds 3\`,"
echo "alternating, $rounds rounds (the cpu backend: \`hashbatch bench --backend cpu --sizes 4K --batches none\`):"
echo
echo "| round | openssl speed GB/s | cpu backend GB/s (65,536 x 4 KiB) |"
echo "| --- | --- | --- |"
ssl=() cpu=()
for ((i = 1; i <= rounds; i++)); do
  s=$(openssl speed -mr -evp sha1 -multi "$cores" -bytes 4096 -seconds 3 2>/dev/null |
      awk -F: '/^\+F:/ {v = $4} END {if (v == "") exit 1; printf "%.3f", v / 1e9}') ||
    die "openssl speed gave no +F line"
  c=$("$hb" bench --backend cpu --sizes 4K --batches none --json |
      python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.3f" % d["sizes"][0]["gb_per_s"]["median"])')
  ssl+=("$s")
  cpu+=("$c")
  echo "| $i | $s | $c |"
done
python3 - "${ssl[*]}" "${cpu[*]}" <<'EOF'
import statistics, sys
s = [float(x) for x in sys.argv[1].split()]
c = [float(x) for x in sys.argv[2].split()]
ms, mc = statistics.median(s), statistics.median(c)
print("| median | %.3f | %.3f |" % (ms, mc))
print()
print("cpu backend / openssl speed: **%.2f** (target >= 0.90: %s)." % (mc / ms, "met" if mc / ms >= 0.9 else "not met"))
EOF
echo
echo "Plot: bench/bench-cli.png. Load at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
