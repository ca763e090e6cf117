#!/usr/bin/env python3
"""test_act_kill.py - `hashbatch link` killed with SIGKILL at random
points: over 300 pairs of files, `link --hard` and `link --symlink` are
started and killed after random short delays, several times each; after
every kill each path must hold its original bytes (SHA-1 by hashlib)
and be either the original file or a link to the kept one, never
missing. A final rerun must finish the job (exit 0, every duplicate a
link, no temporary left behind).

Usage: test_act_kill.py PATH/TO/hashbatch
"""
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402

HB = clitest.binary()
C = clitest.Checker("act_kill")
PAIRS = 300


def make(root):
    os.makedirs(os.path.join(root, "d", "x"))
    os.makedirs(os.path.join(root, "d", "y"))
    want = {}
    for i in range(PAIRS):
        data = ("pair %d " % i).encode() * (50 + i)
        for side in ("x", "y"):
            rel = "d/%s/%04d" % (side, i)
            with open(os.path.join(root, rel), "wb") as f:
                f.write(data)
            want[rel] = hashlib.sha1(data).hexdigest()
    p = clitest.run([HB, "dedup", "--json", "-q", "d"], cwd=root)
    C.status(p, 0, "dedup --json")
    with open(os.path.join(root, "plan.json"), "wb") as f:
        f.write(p.stdout)
    return want


def verify(root, want, kind, what):
    bad = []
    for rel, digest in want.items():
        path = os.path.join(root, rel)
        if not os.path.lexists(path):
            bad.append("%s missing" % rel)
            continue
        with open(path, "rb") as f:
            if hashlib.sha1(f.read()).hexdigest() != digest:
                bad.append("%s has other bytes" % rel)
        if rel.startswith("d/y/"):
            kept = os.path.join(root, "d/x", os.path.basename(rel))
            st = os.lstat(path)
            ok = (os.path.islink(path) and kind == "--symlink" and os.path.samefile(path, kept)) \
                or (not os.path.islink(path))
            if not ok:
                bad.append("%s is a link to something else" % rel)
    C.check(not bad, "%s: every path is the original or a link to identical bytes" % what,
            "\n".join(bad[:20]))


def linked(root, kind):
    n = 0
    for i in range(PAIRS):
        a = os.path.join(root, "d/x/%04d" % i)
        b = os.path.join(root, "d/y/%04d" % i)
        if kind == "--hard":
            n += os.lstat(a).st_ino == os.lstat(b).st_ino
        else:
            n += os.path.islink(b) and os.path.samefile(a, b)
    return n


def temps(root):
    return [n for _, _, fs in os.walk(root) for n in fs if n.endswith(".hashbatch-tmp")]


def run_kind(base, kind, rng):
    root = os.path.join(base, kind.strip("-"))
    want = make(root)
    log = os.path.join(base, kind.strip("-") + ".log")
    for attempt in range(8):
        proc = subprocess.Popen([HB, "link", kind, "--log", log, "plan.json"], cwd=root,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=clitest.clean_env())
        time.sleep(rng.uniform(0.0, 0.03))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        verify(root, want, kind, "%s, after kill %d" % (kind, attempt + 1))
    done_before = linked(root, kind)
    print("%s: %d of %d pairs linked when the kills were over" % (kind, done_before, PAIRS))
    p = clitest.run([HB, "link", kind, "--log", log, "plan.json"], cwd=root)
    C.status(p, 0, "%s: the rerun after the kills" % kind)
    verify(root, want, kind, "%s, after the rerun" % kind)
    C.check(linked(root, kind) == PAIRS, "%s: the rerun linked every pair (%d were before it)"
            % (kind, done_before))
    C.check(not temps(root), "%s: no temporary left" % kind, str(temps(root)[:10]))


def main():
    seed = int(os.environ.get("HB_TEST_SEED", str(int(time.time()))))
    print("seed %d (HB_TEST_SEED)" % seed)
    rng = random.Random(seed)
    base = tempfile.mkdtemp(prefix="hb-act-kill-")
    try:
        for kind in ("--hard", "--symlink"):
            run_kind(base, kind, rng)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    C.finish()


if __name__ == "__main__":
    main()
