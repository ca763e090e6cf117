#!/usr/bin/env python3
"""multibuffer_table.py - the summary of a bench/multibuffer.sh log: per
case and method the median over rounds of each run's median, and each
method's ratio to OpenSSL one message at a time (cpu-sha-ni) and to
isa-l_crypto (when measured), all from the same rounds. Usage: bench/multibuffer_table.py LOG"""
import re
import statistics
import sys
from collections import defaultdict

rate = defaultdict(list)  # (case, method) -> [GB/s or Mmsg/s]
secs = defaultdict(list)  # sum case method -> [s]
for line in open(sys.argv[1]):
    m = re.match(r"round \d+ (\S+) +(\S+) +(\d+) B x +(\d+) +median +([\d.]+) GB/s.*?([\d.]+) M msg/s", line)
    if m:
        method = m.group(1) if m.group(1) != "opencl" else "opencl (pocl)"
        rate[(f"{m.group(3)} B x {m.group(4)}", method)].append((float(m.group(5)), float(m.group(6))))
        continue
    m = re.match(r"round \d+ isal isal_sha1_mb bytes=(\d+) count=(\d+) .*gbps=([\d.]+) msgs_per_s=([\d.]+)", line)
    if m:
        rate[(f"{m.group(1)} B x {m.group(2)}", "isa-l_crypto")].append((float(m.group(3)), float(m.group(4)) / 1e6))
        continue
    m = re.match(r"round \d+ isal .*median_ns=([\d.]+)", line)
    if m:
        ns = float(m.group(1))
        rate[("64 B x 1", "isa-l_crypto")].append((64 / ns, 1e3 / ns))
        continue
    m = re.match(r"round \d+ (sum-\S+|xargs-sha1sum) ([\d.]+) s", line)
    if m:
        secs[m.group(1)].append(float(m.group(2)))

cases = sorted({c for c, _ in rate}, key=lambda c: (int(c.split()[0]), -int(c.split()[3])))
for case in cases:
    one = case.endswith(" x 1")
    base = [r for r in rate.get((case, "cpu-sha-ni"), [])]
    base_med = statistics.median([x[1] if one or case.startswith("64 ") else x[0] for x in base]) if base else None
    peer = rate.get((case, "isa-l_crypto"), [])
    peer_med = statistics.median([x[1] if one or case.startswith("64 ") else x[0] for x in peer]) if peer else None
    print(f"\n{case}:" + (" (latency of one message)" if one else ""))
    for (c, method), v in sorted(rate.items()):
        if c != case:
            continue
        gb = statistics.median(x[0] for x in v)
        mm = statistics.median(x[1] for x in v)
        key = mm if one or case.startswith("64 ") else gb
        ratio = f"{key / base_med:.2f}x sha-ni" if base_med and key > 0 else ""
        if peer_med and key > 0 and not one:
            ratio += f", {key / peer_med:.2f}x isa-l"
        if one:
            extra = f"{1e3 / mm:.0f} ns" if mm > 0 else "over 100 us (< 0.01 M msg/s)"
        elif case.startswith("64 "):
            extra = f"{gb:.2f} GB/s, {mm:.2f} M msg/s"
        else:
            extra = f"{gb:.2f} GB/s"
        print(f"  {method:16s} {extra:28s} {ratio}  (n={len(v)})")
if secs:
    print("\nsum -r over the tree (seconds, median):")
    x = statistics.median(secs["xargs-sha1sum"]) if "xargs-sha1sum" in secs else None
    for k, v in sorted(secs.items()):
        med = statistics.median(v)
        print(f"  {k:22s} {med:.2f} s" + (f"  ({x / med:.2f}x faster than xargs)" if x and k != "xargs-sha1sum" else ""))
