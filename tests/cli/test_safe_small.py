#!/usr/bin/env python3
"""test_safe_small.py - the smaller items of the safe-actions issue:

- `hashbatch sum FILE > /dev/full` names the cause, "No space left on
  device" (stdio keeps only that a write failed), and exits 1;
- empty files in a --reflink plan are already done (there are no extents
  to share), on the first run and every rerun, never "reflinked";
- a merged plan's file on another host is skipped, "not on this host",
  left untouched, and the run exits 1 (it used to say "already done
  (removed before)" and exit 0);
- a plan whose file to keep is on another host leaves the group alone.

Usage: test_safe_small.py PATH/TO/hashbatch
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402

HB = clitest.binary()
C = clitest.Checker("safe_small")


def hb(*args, cwd=None, stdout=None):
    env = clitest.clean_env(HASHBATCH_BACKEND="cpu")
    if stdout is None:
        return clitest.run([HB] + list(args), cwd=cwd, env=env)
    import subprocess
    return subprocess.run([HB] + list(args), cwd=cwd, env=env, stdout=stdout,
                          stderr=subprocess.PIPE)


def full_disk(base):
    if not os.path.exists("/dev/full"):
        C.fail("/dev/full is missing: the write-error case cannot run")
        return
    f = os.path.join(base, "f")
    with open(f, "wb") as fh:
        fh.write(b"x" * 100)
    with open("/dev/full", "wb") as full:
        p = hb("sum", f, stdout=full)
    C.status(p, 1, "sum > /dev/full")
    C.check(b"No space left on device" in p.stderr, "sum > /dev/full: the cause is named",
            clitest.show(p.stderr))


def entry(path, host=None):
    st = os.stat(path)
    e = {"path": path, "device": st.st_dev, "inode": st.st_ino, "mtime_ns": st.st_mtime_ns}
    if host:
        e["host"] = host
    return e


def write_plan(path, size, files):
    with open(path, "w") as fh:
        json.dump({"groups": [{"size": size, "sha1": None, "files": files}]}, fh)


def empty_reflink(base):
    d = os.path.join(base, "empty")
    os.makedirs(d)
    for n in ("a", "b"):
        open(os.path.join(d, n), "wb").close()
    write_plan(os.path.join(base, "empty.json"), 0,
               [entry(os.path.join(d, "a")), entry(os.path.join(d, "b"))])
    for attempt in ("first run", "rerun"):
        p = hb("link", "--reflink", "empty.json", cwd=base)
        C.status(p, 0, "empty files, --reflink, %s" % attempt)
        C.check(b"reflinked" not in p.stdout and b"already done" in p.stdout,
                "empty files, %s: already done, not reflinked" % attempt,
                clitest.show(p.stdout))


def other_host(base):
    d = os.path.join(base, "hosts")
    os.makedirs(d)
    data = os.urandom(3000)
    for n in ("here", "mine"):
        with open(os.path.join(d, n), "wb") as fh:
            fh.write(data)
    here, mine = os.path.join(d, "here"), os.path.join(d, "mine")
    # A file of the same path on another machine: never this one's to act on.
    far = entry(mine, host="not-this-machine-hb-test")
    write_plan(os.path.join(base, "hosts.json"), len(data), [entry(here), far])
    p = hb("remove", "hosts.json", cwd=base)
    C.status(p, 1, "remove, a file on another host")
    C.check(b"not on this host" in p.stderr, "another host's file: said",
            clitest.show(p.stderr))
    C.check(b"already done" not in p.stdout, "another host's file: not 'already done'",
            clitest.show(p.stdout))
    C.check(os.path.exists(mine) and os.path.exists(here), "another host's file: untouched")
    # The file to keep on another host: the group is left alone.
    write_plan(os.path.join(base, "hosts2.json"), len(data), [far, entry(here)])
    p = hb("remove", "hosts2.json", cwd=base)
    C.status(p, 1, "remove, the file to keep on another host")
    C.check(os.path.exists(here) and os.path.exists(mine),
            "the kept file on another host: nothing removed")
    C.check(b"not on this host" in p.stderr, "the kept file on another host: said",
            clitest.show(p.stderr))


def main():
    base = tempfile.mkdtemp(prefix="hb-safe-small-")
    try:
        full_disk(base)
        empty_reflink(base)
        other_host(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    C.finish()


if __name__ == "__main__":
    main()
