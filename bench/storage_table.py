#!/usr/bin/env python3
"""storage_table.py - the markdown table of bench/storage.sh's raw results:
per tree, each tool's wall seconds for the first scan and the rescan after
1% of the files changed, warm and cold, as the median over the rounds
[min-max]; then the ratios issue 15 targets (speed-ups: the other time
divided by hashbatch's):
  - default first scan vs jdupes, warm (target >= 1.3)
  - rescan with --cache vs jdupes' scan, warm and cold (target >= 10)
  - cold first scan vs jdupes cold (target >= 1.0)
  - sum -r --cache rescan vs sum -r

A cell whose runs all failed says "failed (exit N)"; one with some failed
runs adds how many; cold cells are "skipped" where the page cache could not
be dropped; "-" where the tool does not take part.

Usage: bench/storage_table.py OUT_DIR   (storage.sh's OUT_DIR)
Standard library only; prints the table on stdout.
"""
import csv
import os
import statistics
import sys

TREES = [("big", "2.2 GB tree (bench/trees.sh)"), ("small", "small files")]
CELLS = [("first", "warm"), ("first", "cold"), ("rescan", "warm"), ("rescan", "cold")]
TOOLS = ["hashbatch", "jdupes", "rmlint", "rdfind", "hashbatch --cache", "rmlint --xattr",
         "sum -r", "sum -r --cache"]


def read_machine(out):
    info = {}
    path = os.path.join(out, "machine.txt")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                key, _, value = line.rstrip("\n").partition(": ")
                info[key] = value
    return info


def read_runs(out):
    """{(tree, workload, temp, tool): [(seconds or None, rc)]}"""
    runs = {}
    with open(os.path.join(out, "runs.tsv")) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            key = (row["tree"], row["workload"], row["temp"], row["tool"])
            secs = float(row["seconds"]) if row["seconds"] else None
            runs.setdefault(key, []).append((secs, row["rc"]))
    return runs


def ok_times(runs, key):
    return [s for s, rc in runs.get(key, []) if rc == "0" and s is not None]


def cell(runs, key):
    got = runs.get(key)
    if not got:
        return "-"
    if all(rc == "skip" for _, rc in got):
        return "skipped"
    times = ok_times(runs, key)
    bad = [rc for _, rc in got if rc not in ("0", "skip")]
    if not times:
        return "failed (exit %s)" % ",".join(sorted(set(bad)))
    text = "%.2f" % statistics.median(times)
    if len(times) > 1:
        text += " [%.2f-%.2f]" % (min(times), max(times))
    if bad:
        text += " (%d failed)" % len(bad)
    return text


def ratio(runs, slow, fast):
    a, b = ok_times(runs, slow), ok_times(runs, fast)
    if not a or not b:
        return "n/a"
    return "%.2fx" % (statistics.median(a) / statistics.median(b))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: storage_table.py OUT_DIR")
    out = sys.argv[1]
    info = read_machine(out)
    runs = read_runs(out)
    print("### Dedup and sum on real storage (issue 15)\n")
    for key in ("cpu", "cores", "memory", "date", "commit", "hashbatch", "storage", "reads",
                "load_before", "load_after", "rounds", "cold", "tree_big", "tree_small",
                "jdupes", "rmlint", "rdfind"):
        if key in info:
            print("- %s: %s" % (key.replace("_", " "), info[key]))
    if info.get("quick") == "1":
        print("- **--quick: a smoke test, not figures**")
    print("\nWall seconds, median of the rounds [min-max]; rescan: after 1% of the "
          "files changed.\n")
    for tree, label in TREES:
        print("#### %s\n" % label)
        print("| tool | first scan, warm | first scan, cold | rescan, warm | rescan, cold |")
        print("|---|---:|---:|---:|---:|")
        for tool in TOOLS:
            cells = [cell(runs, (tree, w, t, tool)) for w, t in CELLS]
            if all(c == "-" for c in cells):
                continue
            print("| %s | %s |" % (tool, " | ".join(cells)))
        print()
        rows = [
            ("first scan, warm: jdupes / hashbatch (target >= 1.3)",
             (tree, "first", "warm", "jdupes"), (tree, "first", "warm", "hashbatch")),
            ("rescan, warm: jdupes' scan / hashbatch --cache (target >= 10)",
             (tree, "rescan", "warm", "jdupes"), (tree, "rescan", "warm", "hashbatch --cache")),
            ("rescan, cold: jdupes' scan / hashbatch --cache (target >= 10)",
             (tree, "rescan", "cold", "jdupes"), (tree, "rescan", "cold", "hashbatch --cache")),
            ("first scan, cold: jdupes / hashbatch (target >= 1.0)",
             (tree, "first", "cold", "jdupes"), (tree, "first", "cold", "hashbatch")),
            ("rescan, warm: sum -r / sum -r --cache",
             (tree, "rescan", "warm", "sum -r"), (tree, "rescan", "warm", "sum -r --cache")),
            ("rescan, cold: sum -r / sum -r --cache",
             (tree, "rescan", "cold", "sum -r"), (tree, "rescan", "cold", "sum -r --cache")),
        ]
        print("| ratio (speed-up) | %s |" % tree)
        print("|---|---:|")
        for what, slow, fast in rows:
            print("| %s | %s |" % (what, ratio(runs, slow, fast)))
        print()


if __name__ == "__main__":
    main()
