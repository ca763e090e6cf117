#!/usr/bin/env python3
"""test_safe_small.py - the smaller items of the safe-actions issue:

- `hashbatch sum FILE > /dev/full` names the cause, "No space left on
  device" (stdio keeps only that a write failed), and exits 1;
- empty files in a --reflink plan are already done (there are no extents
  to share), on the first run and every rerun, never "reflinked";
- a merged plan's file on another host is skipped, "not on this host",
  left untouched, and the run exits 1 (it used to say "already done
  (removed before)" and exit 0);
- a plan whose file to keep is on another host leaves the group alone;
- --keep oldest on a plan without times stats each file beneath its root,
  never through a symbolic link: a name whose folder is a link to the
  oldest copy is not chosen to keep (before, lstat followed the folder's
  link, chose it, and the group was then refused as a whole).

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


def keep_oldest_beneath(base):
    d = os.path.join(base, "keep")
    for sub in ("a", "c"):
        os.makedirs(os.path.join(d, sub))
    data = os.urandom(2000)
    new, old = os.path.join(d, "a", "x"), os.path.join(d, "c", "x")
    for path in (new, old):
        with open(path, "wb") as fh:
            fh.write(data)
    os.utime(old, (1000000000, 1000000000))
    os.symlink("c", os.path.join(d, "b"))
    linked = os.path.join(d, "b", "x")
    files = [entry(new), entry(linked)]
    for e in files:
        del e["mtime_ns"]
    write_plan(os.path.join(base, "keep.json"), len(data), files)
    p = hb("remove", "--keep", "oldest", "--dry-run", "keep.json", cwd=base)
    C.check(("the file to keep, %s" % linked).encode() not in p.stderr,
            "--keep oldest without times: a name through a folder's link is not kept",
            clitest.show(p.stderr))
    C.check(b"symbolic link" in p.stderr and linked.encode() in p.stderr,
            "--keep oldest without times: the linked name is skipped as a link",
            clitest.show(p.stderr))
    C.check(os.path.exists(new) and os.path.exists(old), "--keep oldest: nothing removed")


def main():
    base = tempfile.mkdtemp(prefix="hb-safe-small-")
    try:
        full_disk(base)
        empty_reflink(base)
        other_host(base)
        keep_oldest_beneath(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    C.finish()


if __name__ == "__main__":
    main()
