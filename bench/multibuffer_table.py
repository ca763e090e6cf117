#!/usr/bin/env python3
"""multibuffer_table.py - the summary of a bench/multibuffer.sh log: per
case and method the median over rounds of each run's median, and each
method's ratio to OpenSSL one message at a time (cpu-sha-ni) and to
isa-l_crypto (when measured), all from the same rounds; then what sampled
verification costs (the default and pocl against their verify-off runs),
and the long-message ratios of issue 31 (16 x 16 MiB against 256 x 1 MiB,
2 x 1 GiB against OpenSSL on every core). Ratios to isa-l_crypto are
given twice: of the medians, and the median of each round's own ratio
(the two runs minutes apart in one round see the same host far more
often than runs in different rounds); sampled verification's cost too,
from the separate runs and from hb_verify_cost's pairs in one process.
Usage: bench/multibuffer_table.py LOG"""
import re
import statistics
import sys
from collections import defaultdict

rate = defaultdict(list)  # (case, method) -> [GB/s or Mmsg/s]
by_round = {}  # (case, method, round) -> GB/s
paired = defaultdict(list)  # (case, backend) -> [median ratio of one run's pairs]
secs = defaultdict(list)  # sum case method -> [s]
for line in open(sys.argv[1]):
    m = re.match(r"round (\d+) paired-(\S+) +\S+ +(\d+) B x +(\d+) .*? ratio ([\d.]+)", line)
    if m:
        paired[(f"{m.group(3)} B x {m.group(4)}", m.group(2))].append(float(m.group(5)))
        continue
    m = re.match(r"round (\d+) (\S+) +(\S+) +(\d+) B x +(\d+) +median +([\d.]+) GB/s.*?([\d.]+) M msg/s", line)
    if m:
        method = m.group(2) if m.group(2) != "opencl" else "opencl (pocl)"
        case = f"{m.group(4)} B x {m.group(5)}"
        rate[(case, method)].append((float(m.group(6)), float(m.group(7))))
        by_round[(case, method, int(m.group(1)))] = float(m.group(6))
        continue
    m = re.match(r"round (\d+) isal isal_sha1_mb bytes=(\d+) count=(\d+) .*gbps=([\d.]+) msgs_per_s=([\d.]+)", line)
    if m:
        case = f"{m.group(2)} B x {m.group(3)}"
        rate[(case, "isa-l_crypto")].append((float(m.group(4)), float(m.group(5)) / 1e6))
        by_round[(case, "isa-l_crypto", int(m.group(1)))] = float(m.group(4))
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
            rounds = [by_round[(case, method, r)] / by_round[(case, "isa-l_crypto", r)]
                      for (c2, m2, r) in by_round if c2 == case and m2 == method
                      and (case, "isa-l_crypto", r) in by_round]
            if rounds and method != "isa-l_crypto":
                ratio += f" (by round {statistics.median(rounds):.2f}x)"
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


def median_gb(case, method):
    v = rate.get((case, method), [])
    return statistics.median(x[0] for x in v) if v else None


print("\nsampled verification against off (default verify = sample):")
for case in cases:
    if case.endswith(" x 1"):
        continue
    parts = []
    for on, off in (("cpu-default", "cpu-default-verify-off"), ("opencl (pocl)", "opencl-verify-off")):
        a, b = median_gb(case, on), median_gb(case, off)
        if a and b:
            parts.append(f"{on} {a:.2f} / off {b:.2f} GB/s = {a / b:.3f}")
    if parts:
        print(f"  {case:20s} " + "; ".join(parts))

if paired:
    print("\nsampled verification against off, in pairs in one process (hb_verify_cost;"
          " median over runs of each run's median ratio):")
    for case in cases:
        parts = [f"{b} {statistics.median(paired[(case, b)]):.3f} (runs {min(paired[(case, b)]):.3f}"
                 f"-{max(paired[(case, b)]):.3f}, n={len(paired[(case, b)])})"
                 for b in ("cpu", "opencl") if (case, b) in paired]
        if parts:
            print(f"  {case:20s} " + "; ".join(parts))

long16, mib = median_gb("16777216 B x 16", "cpu-default"), median_gb("1048576 B x 256", "cpu-default")
if long16 and mib:
    print(f"\n16 x 16 MiB against 256 x 1 MiB (cpu-default): {long16:.2f} / {mib:.2f} GB/s = {long16 / mib:.2f}x")
gib, shani = median_gb("1073741824 B x 2", "cpu-default"), median_gb("1073741824 B x 2", "cpu-sha-ni")
if gib and shani:
    print(f"2 x 1 GiB against OpenSSL on every core: {gib:.2f} / {shani:.2f} GB/s = {gib / shani:.2f}x")
