"""test_dedup_race.py - files that change or vanish while `hashbatch
dedup` runs: a thread keeps setting new modification times on one set of
twins (content unchanged) and keeps deleting and re-creating another set
(a new inode each time). Every such file that no longer matches what the
walk saw is left out with one stderr line naming it ("changed" or
"vanished" during the scan), the exit status is 1, and whatever is still
reported is a group of files with equal bytes; calm files are reported as
usual.

Usage: test_dedup_race.py PATH/TO/hashbatch
"""
import os
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402
import dedupcheck as dc  # noqa: E402


def churn(paths, data, staging, stop, sweeps, pause, idle):
    """Touches and re-creates files until stop is set; appends to sweeps
    after each round; while pause is set it rests (idle set), so that the
    files can be read. Each new file is written in staging, beside the
    scanned tree on the same filesystem, and renamed into place: written
    inside the tree, the half-made file would itself be scanned (and,
    complete by then, rightly grouped), then be gone when the groups are
    read."""
    t = 1_000_000_000_000_000_000
    while not stop.is_set():
        if pause.is_set():
            idle.set()
            time.sleep(0.001)
            continue
        sweeps.append(1)
        for p in paths["touch"]:
            t += 1_000_000
            os.utime(p, ns=(t, t))
        for p in paths["recreate"]:
            tmp = os.path.join(staging, os.path.basename(p))
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, p)


def check_run(chk, proc, paths, calm_paths, what):
    """Checks one run; returns whether it reported a moving file."""
    dc.no_sanitizer_report(chk, proc, what)
    err = proc.stderr.decode("utf-8", "replace").splitlines()
    moving = [l for l in err if "during the scan" in l]
    chk.status(proc, 1 if moving else 0, what)
    named = all(any(("/%s/" % k) in l for k in ("touch", "recreate")) for l in moving)
    chk.check(named, what + ": only the restless files are reported", "\n".join(moving[:10]))
    groups = dc.parse_zero(proc.stdout)
    chk.check(frozenset(calm_paths) in groups, what + ": the calm twins are grouped")
    ok = True
    for g in groups:
        contents = set()
        for p in g:
            with open(p, "rb") as f:
                contents.add(f.read())
        ok &= len(contents) == 1
    chk.check(ok, what + ": every reported group has equal bytes")
    reported = {p for g in groups for p in g}
    named_paths = {l.split(": ")[1].encode() for l in moving}
    chk.check(not (named_paths & reported),
              what + ": no file reported as changed is in a group",
              repr(sorted(named_paths & reported)[:5]))
    return bool(moving)


def main():
    exe = clitest.binary()
    chk = clitest.Checker("cli_dedup_race")
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(os.fsencode(tmp), b"tree")
        staging = os.path.join(os.fsencode(tmp), b"staging")
        os.mkdir(staging)
        data = b"restless twin\n" * 1000
        calm = b"calm twin\n" * 1000
        paths = {"touch": [], "recreate": []}
        for kind in paths:
            for i in range(20):
                p = os.path.join(root, kind.encode(), b"f%02d" % i)
                dc.write(p, data if kind == "touch" else data + b"!")
                paths[kind].append(p)
        calm_paths = [os.path.join(root, b"calm", b"c%d" % i) for i in range(3)]
        for p in calm_paths:
            dc.write(p, calm)
        stop, pause, idle = threading.Event(), threading.Event(), threading.Event()
        sweeps = []
        th = threading.Thread(target=churn,
                              args=(paths, data + b"!", staging, stop, sweeps, pause, idle))
        th.start()
        try:
            while len(sweeps) < 3:  # the churn is under way before dedup starts
                time.sleep(0.001)
            # Whether a change falls between the walk and the last check is
            # a matter of scheduling on a loaded machine: up to 5 tries, every
            # one checked, until one of them sees a change.
            seen = False
            for attempt in range(5):
                proc = clitest.run([exe, "dedup", "-z", "--backend", "cpu", root], timeout=60)
                idle.clear()
                pause.set()  # the files stay put while the groups are read
                idle.wait()
                seen = check_run(chk, proc, paths, calm_paths, "try %d" % (attempt + 1))
                pause.clear()
                if seen:
                    break
        finally:
            stop.set()
            th.join()
        chk.check(seen, "at least one file reported as changed or vanished in 5 tries")
    chk.finish()


if __name__ == "__main__":
    main()
