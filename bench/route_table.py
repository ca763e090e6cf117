#!/usr/bin/env python3
"""route_table.py - the markdown table of bench/route.sh's raw results:
per workload, the default route's figure beside each pinned route's
(the CPU pool; each OpenCL device), the best pinned route, and default /
best pinned as a ratio of speeds (>= 1.00: the default is at least as fast
as the best pin; for times, best pinned time / default time).

Each figure is the median over the rounds, with [min-max] when there were
several. In-memory workloads come from the rounds' `hashbatch bench --json`
documents (bench-N.json), the file workloads from files.tsv (wall seconds
of one run each), the machine from machine.txt.

Usage: bench/route_table.py OUT_DIR   (route.sh's OUT_DIR)
Standard library only; prints the table on stdout.
"""
import glob
import json
import os
import statistics
import sys

MIB = 1 << 20
# (label, sweep, message size, batch or None for the size sweep's, unit)
MEMORY = [
    ("65,536 x 4 KiB", "sizes", 4096, None, "GB/s"),
    ("4,096 x 64 KiB", "sizes", 65536, None, "GB/s"),
    ("1,000,000 x 64 B", "sizes", 64, None, "M msg/s"),
    ("1,024 x 64 B", "batches", 64, 1024, "M msg/s"),
    ("256 x 1 MiB", "sizes", MIB, None, "GB/s"),
    ("16 x 16 MiB", "sizes", 16 * MIB, None, "GB/s"),
    ("one 64 B message (latency)", "batches", 64, 1, "us"),
]
FILES = [("sum", "`hashbatch sum -r` over the tree", "s"),
         ("dedup", "`hashbatch dedup` over the tree", "s")]
LOWER_IS_BETTER = {"us", "s"}


def read_machine(out):
    info = {}
    path = os.path.join(out, "machine.txt")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                key, _, value = line.rstrip("\n").partition(": ")
                info[key] = value
    return info


def figure(result, unit):
    """The value of one bench result in unit."""
    if unit == "GB/s":
        return result["gb_per_s"]["median"]
    mps = result["messages_per_s"]["median"]
    if unit == "M msg/s":
        return mps / 1e6
    return 1e6 / mps if mps else float("nan")  # us per call


def read_memory(out):
    """{(label): {route: [values over rounds]}}, the routes in bench's
    order, and the batch of each size-sweep workload."""
    values, routes, counts = {}, [], {}
    for path in sorted(glob.glob(os.path.join(out, "bench-*.json"))):
        with open(path) as f:
            doc = json.load(f)
        for b in doc["backends"]:
            if b["name"] not in routes:
                routes.append(b["name"])
        for label, sweep, size, batch, unit in MEMORY:
            for r in doc[sweep]:
                if r["size"] != size or (batch is not None and r["count"] != batch):
                    continue
                counts[label] = r["count"]
                values.setdefault(label, {}).setdefault(r["backend"], []).append(
                    figure(r, unit))
    return values, routes, counts


def read_files(out):
    """{workload: {route: [seconds]}} of the runs that exited 0, and a line
    for each run that did not."""
    values, failed = {}, []
    path = os.path.join(out, "files.tsv")
    if not os.path.exists(path):
        return values, failed
    with open(path) as f:
        next(f, None)
        for line in f:
            rnd, workload, route, secs, rc = line.rstrip("\n").split("\t")
            if rc != "0":
                failed.append("%s %s round %s: exit %s" % (workload, route, rnd, rc))
                continue
            values.setdefault(workload, {}).setdefault(route, []).append(float(secs))
    return values, failed


def fmt(v):
    if v != v:  # NaN
        return "-"
    if v >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    if v >= 1:
        return "%.2f" % v
    return "%.3g" % v


def cell(vals):
    if not vals:
        return "-"
    med = statistics.median(vals)
    if len(vals) == 1:
        return fmt(med)
    return "%s [%s-%s]" % (fmt(med), fmt(min(vals)), fmt(max(vals)))


def row(label, unit, by_route, pinned, extra=""):
    """One table row; pinned: the pinned route names, in column order."""
    lower = unit in LOWER_IS_BETTER
    med = {k: statistics.median(v) for k, v in by_route.items() if v}
    best = None
    for name in pinned:
        if name in med and (best is None or
                            (med[name] < med[best] if lower else med[name] > med[best])):
            best = name
    ratio = "-"
    if best is not None and "default" in med and med["default"] > 0 and med[best] > 0:
        r = med[best] / med["default"] if lower else med["default"] / med[best]
        ratio = "%.2f" % r if r >= 0.1 else "%.2g" % r
    cells = [label, unit, cell(by_route.get("default", []))]
    cells += [cell(by_route.get(name, [])) for name in pinned]
    cells += ["%s (%s)" % (fmt(med[best]), best) if best else "-", ratio]
    if extra is not None:
        cells.append(extra)
    return "| " + " | ".join(cells) + " |"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: route_table.py OUT_DIR")
    out = sys.argv[1]
    info = read_machine(out)
    memory, routes, counts = read_memory(out)
    files, failed = read_files(out)
    for by_route in files.values():
        for name in by_route:
            if name not in routes and name != "jdupes":
                routes.append(name)
    pinned = [r for r in routes if r != "default"]
    jdupes = files.get("dedup", {}).get("jdupes", [])

    if info.get("set"):
        print("# Route benchmark, %s\n" % info["set"])
    else:
        print("# Route benchmark: the default route against each pinned one\n")
    print("CPU: %s, %s cores; %s; %s, commit %s." % (
        info.get("cpu", "?"), info.get("cores", "?"), info.get("date", "?"),
        info.get("hashbatch", "?"), info.get("commit", "?")))
    print("OpenCL devices: %s. Load before: %s, after: %s." % (
        info.get("devices") or "none", info.get("load_before", "?"),
        info.get("load_after", "?")))
    print("%s round(s), routes alternating in each (A B C A B C ...); figures are "
          "medians over the rounds [min-max]%s." % (
              info.get("rounds", "?"),
              "; QUICK RUN: a smoke test, not figures" if info.get("quick") == "1" else ""))
    print("In memory: `hashbatch bench` (hb_sha1_batch end to end, digests checked "
          "against OpenSSL's), one timed run of at least %s s per route and round; "
          "latency: 1 / calls per second of back-to-back one-message batches." %
          info.get("min_time", "?"))
    print("Files: wall seconds of one run, warm page cache; tree: %s.\n" %
          info.get("tree", "?"))
    print("default: backend auto, default device (every backend under the scheduler); "
          "pinned: %s. default / best pinned is a ratio of speeds: at least 1.00 means "
          "the default is as fast as the best pinned route.\n" % ", ".join(pinned))

    head = ["workload", "unit", "default"] + pinned + ["best pinned", "default / best pinned"]
    head.append("jdupes -r")
    print("| " + " | ".join(head) + " |")
    print("| " + " | ".join(["---", "---"] + ["---:"] * (len(head) - 2)) + " |")
    for label, sweep, size, batch, unit in MEMORY:
        shown = label
        if batch is None and label in counts:  # the size sweep's own batch
            shown = "%s x %s" % ("{:,}".format(counts[label]), label.split(" x ", 1)[1])
        if label not in memory:
            continue  # not measured in this set
        print(row(shown, unit, memory.get(label, {}), pinned, ""))
    for key, label, unit in FILES:
        if key not in files:
            continue
        by_route = {k: v for k, v in files.get(key, {}).items() if k != "jdupes"}
        print(row(label, unit, by_route, pinned, cell(jdupes) if key == "dedup" else ""))
    if failed:
        print("\nFailed runs (left out of the figures; stderr.txt has their messages):")
        for f in failed:
            print("- " + f)


if __name__ == "__main__":
    main()
