#!/usr/bin/env python3
"""test_safe_editor_save.py - issue 27, defect 1 without any privilege:
an editor-style save racing `hashbatch remove`.

2,000 duplicate pairs a/kN, b/xN; the plan is `dedup --json a b`, run as
`remove --keep path=a`. While it runs, safe_race.c (compiled here with
cc, `save` mode) plays an editor saving the duplicates: it watches b/
with inotify and, when remove reads b/xN (half of the names), opens it
or renames it away (a quarter each), sleeps a random moment (0 to 15,
20, 30 or 50 us, one bound a round; HB_SAVE_MAX_US) and renames b/xN.new
- written beforehand with NEW bytes - onto b/xN, each name once. The
editor and remove share one CPU, remove at nice 19, so that the editor
interrupts remove when it wakes. 4 rounds, each on a fresh tree, at most
60 s in all.

Asserted: saves happened while remove ran (counted); every path that was
saved still holds its new bytes (no new version deleted or replaced);
every kept file a/kN holds its original bytes; every b/xN not saved is
gone or holds its original bytes; stdout claims "removed" only for names
that are gone.

Usage: test_safe_editor_save.py PATH/TO/hashbatch
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402

HB = clitest.binary()
C = clitest.Checker("safe_editor_save")
HERE = os.path.dirname(os.path.abspath(__file__))
PAIRS = 2000
ROUNDS = 4
MAX_US = [int(v) for v in os.environ.get("HB_SAVE_MAX_US", "15,20,30,50").split(",")]
TIME_LIMIT = 60.0


def read(path):
    with open(path, "rb") as f:
        return f.read()


def data_of(i):
    return (b"pair %06d\n" % i) * 100


def new_of(i):
    return b"NEW version of x%d\n" % i


def one_round(work, helper, n, deadline):
    d = os.path.join(work, "round%d" % n)
    for sub in ("a", "b"):
        os.makedirs(os.path.join(d, sub))
    for i in range(PAIRS):
        for p in ("a/k%d" % i, "b/x%d" % i):
            with open(os.path.join(d, p), "wb") as f:
                f.write(data_of(i))
    p = clitest.run([HB, "dedup", "--json", "-q", "--backend", "cpu", "a", "b"], cwd=d)
    C.status(p, 0, "round %d: dedup --json a b" % n)
    plan = os.path.join(work, "plan%d.json" % n)
    with open(plan, "wb") as f:
        f.write(p.stdout)
    stop = os.path.join(work, "stop%d" % n)
    cpu = min(os.sched_getaffinity(0))
    max_us = MAX_US[n % len(MAX_US)]

    def editor_side():
        os.sched_setaffinity(0, {cpu})

    def remove_side():
        os.sched_setaffinity(0, {cpu})
        os.nice(19)

    ed = subprocess.Popen([helper, "save", os.path.join(d, "b"), stop,
                           "%d" % max(5, deadline - time.monotonic()), "%d" % max_us]
                          + ["x%d" % i for i in range(PAIRS)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          preexec_fn=editor_side)
    try:
        line = ed.stdout.readline()
        if not C.check(line.strip() == b"ready", "round %d: the editor is ready" % n,
                       repr(line)):
            return 0, 0
        r = subprocess.run([HB, "remove", "--keep", "path=a", plan], cwd=d,
                           env=clitest.clean_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, preexec_fn=remove_side,
                           timeout=max(5, deadline - time.monotonic()))
    finally:
        with open(stop, "wb"):
            pass
        out, err = ed.communicate(timeout=30)
    saved = {int(m) for m in re.findall(rb"^saved x(\d+) on ", out, re.M)}
    lost, kept_bad, other_bad = [], [], []
    for i in range(PAIRS):
        k, x = os.path.join(d, "a/k%d" % i), os.path.join(d, "b/x%d" % i)
        if not os.path.exists(k) or read(k) != data_of(i):
            kept_bad.append("a/k%d" % i)
        if i in saved:
            if not os.path.lexists(x):
                lost.append("b/x%d (deleted)" % i)
            elif read(x) != new_of(i):
                lost.append("b/x%d (other bytes)" % i)
        elif os.path.lexists(x) and read(x) != data_of(i):
            other_bad.append("b/x%d" % i)
    done = len(re.findall(rb"^removed: ", r.stdout, re.M))
    skipped = len(re.findall(rb": skipped: ", r.stderr))
    kinds = {k: out.count(b" on " + k.encode() + b"\n") for k in ("read", "open", "rename")}
    print("round %d (delays up to %d us): %d saves during the run (on read %d, open %d, "
          "rename %d); remove: exit %d, %d removed, %d skipped; %d new versions lost"
          % (n, max_us, len(saved), kinds["read"], kinds["open"], kinds["rename"],
             r.returncode, done, skipped, len(lost)))
    C.check(not lost, "round %d: %d saved new versions were deleted or replaced"
            % (n, len(lost)), " ".join(lost[:10]))
    C.check(not kept_bad, "round %d: %d kept files lost their bytes" % (n, len(kept_bad)),
            " ".join(kept_bad[:10]))
    C.check(not other_bad, "round %d: %d unsaved duplicates hold other bytes"
            % (n, len(other_bad)), " ".join(other_bad[:10]))
    C.check(ed.returncode == 0, "round %d: the editor ended well" % n, clitest.show(err))
    shutil.rmtree(d, ignore_errors=True)
    return len(saved), done + skipped


def main():
    if shutil.which("cc") is None:
        print("skipped: cc not found (the editor is a C helper)", file=sys.stderr)
        sys.exit(clitest.SKIP)
    t0 = time.monotonic()
    deadline = t0 + TIME_LIMIT
    work = tempfile.mkdtemp(prefix="hb-safe-editor-")
    try:
        helper = os.path.join(work, "safe_race")
        p = subprocess.run(["cc", "-O2", "-o", helper, os.path.join(HERE, "safe_race.c")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            C.fail("cc safe_race.c", clitest.show(p.stderr))
            C.finish()
        saves = acted = rounds = 0
        for n in range(ROUNDS):
            if time.monotonic() > deadline - 10:
                break
            s, a = one_round(work, helper, n, deadline)
            saves, acted, rounds = saves + s, acted + a, rounds + 1
        C.check(saves > 0, "saves happened while remove ran (%d in %d rounds)" % (saves, rounds))
        C.check(acted > 0, "remove removed or skipped some pairs (%d)" % acted)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("whole test: %.1f s" % (time.monotonic() - t0))
    C.finish()


if __name__ == "__main__":
    main()
