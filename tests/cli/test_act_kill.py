#!/usr/bin/env python3
"""test_act_kill.py - `hashbatch link` killed with SIGKILL mid-action:
over 300 pairs of files, `link --hard` and `link --symlink` are started
on a fresh tree and plan and killed after a short delay, round after
round. After every kill each path must hold its original bytes (SHA-1 by
hashlib) and be either the original file or a link to the kept one,
never missing; a second kill of the resumed run is checked the same way;
then a rerun must finish the job (exit 0, every duplicate a link, no
temporary .hashbatch-*.tmp left behind).

Where a kill landed is read from the files afterwards, not from timing:
before the first link (no pair linked), after the last (all linked, or
the run had exited), or mid-action (some but not all pairs linked). Each
kind needs MID_NEEDED mid-action kills; the delay range adapts to where
the kills land (up when they land before, down when after), for at most
MAX_ROUNDS rounds, after which the test fails: a test whose kills never
land mid-action proves nothing.

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
MID_NEEDED = 5  # mid-action kills needed per kind
MAX_ROUNDS = 30  # rounds per kind before the test gives up
MAX_DELAY = 1.0  # seconds: the longest delay tried


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
    p = clitest.run([HB, "dedup", "--json", "-q", "--backend", "cpu", "d"], cwd=root)
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
    """How many pairs are linked (a missing path, which verify reports,
    counts as not linked)."""
    n = 0
    for i in range(PAIRS):
        a = os.path.join(root, "d/x/%04d" % i)
        b = os.path.join(root, "d/y/%04d" % i)
        if not (os.path.exists(a) and os.path.exists(b)):
            continue
        if kind == "--hard":
            n += os.lstat(a).st_ino == os.lstat(b).st_ino
        else:
            n += os.path.islink(b) and os.path.samefile(a, b)
    return n


def temps(root):
    """What the runs leave at temporary names (act_temp.c: .hashbatch-RUN-SEQ.tmp)."""
    return [n for _, _, fs in os.walk(root) for n in fs
            if n.startswith(".hashbatch-") and n.endswith(".tmp")]


def start_and_kill(root, kind, log, delay):
    """Runs link, SIGKILLs it after delay seconds; its exit status
    (-SIGKILL when the kill came first)."""
    proc = subprocess.Popen([HB, "link", kind, "--log", log, "plan.json"], cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=clitest.clean_env())
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    return proc.wait()


def run_kind(base, kind, rng):
    landed = {"before": 0, "mid": 0, "after": 0}
    lo, hi = 0.0, 0.03  # the delay range, adapted to where kills land
    left_temps = 0
    for rnd in range(MAX_ROUNDS):
        if landed["mid"] >= MID_NEEDED:
            break
        root = os.path.join(base, "%s-%d" % (kind.strip("-"), rnd))
        want = make(root)
        log = os.path.join(root, "link.log")
        delay = rng.uniform(lo, hi)
        status = start_and_kill(root, kind, log, delay)
        what = "%s, round %d (kill after %.1f ms)" % (kind, rnd + 1, delay * 1e3)
        C.check(status in (-signal.SIGKILL, 0), "%s: link exited %d by itself" % (what, status))
        verify(root, want, kind, what)
        n = linked(root, kind)
        where = "after" if status == 0 or n == PAIRS else "before" if n == 0 else "mid"
        landed[where] += 1
        if where == "before":  # later: from about here, widening up near the top
            lo = min(delay, hi) * 0.8
            hi = min(MAX_DELAY, hi * 2 if delay > 0.8 * hi else hi)
        elif where == "after":  # sooner: up to about here, widening down near the bottom
            hi = max(delay * 1.2, lo * 1.1, 1e-4)
            lo = lo / 2 if delay < 1.2 * lo else lo
        if where == "mid":
            left_temps += bool(temps(root))
            # Killed again while it resumes: still nothing lost.
            status = start_and_kill(root, kind, log, delay / 2)
            C.check(status in (-signal.SIGKILL, 0),
                    "%s, resumed: link exited %d by itself" % (what, status))
            verify(root, want, kind, what + ", resumed and killed again")
            n = linked(root, kind)
        p = clitest.run([HB, "link", kind, "--log", log, "plan.json"], cwd=root)
        C.status(p, 0, "%s: the rerun after the kill" % what)
        verify(root, want, kind, "%s, after the rerun" % what)
        C.check(linked(root, kind) == PAIRS, "%s: the rerun linked every pair (%d were before it)"
                % (what, n))
        C.check(not temps(root), "%s: no temporary left after the rerun" % what,
                str(temps(root)[:10]))
        shutil.rmtree(root, ignore_errors=True)
    print("%s: %d rounds: kills landed %d before the first link, %d mid-action (%d of them "
          "leaving a temporary), %d after the last; final delay range %.1f-%.1f ms"
          % (kind, sum(landed.values()), landed["before"], landed["mid"], left_temps,
             landed["after"], lo * 1e3, hi * 1e3))
    C.check(landed["mid"] >= MID_NEEDED,
            "%s: only %d kills of %d rounds landed mid-action, %d needed"
            % (kind, landed["mid"], sum(landed.values()), MID_NEEDED))


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
