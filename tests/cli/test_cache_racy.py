#!/usr/bin/env python3
"""test_cache_racy.py - the hash cache and racy timestamps: a file changed
within the same timestamp tick as it was hashed keeps its key (device,
inode, size, mtime, ctime), so the cache must not have stored it.

1. On the ordinary filesystem: a file just written is hashed but not
   stored ("too recent to store"); once its times are older than the
   margin (2 s), it is stored and the next run reads nothing.
2. On an ext4 image with 128-byte inodes (timestamps in whole seconds,
   loop-mounted; skipped visibly where that is not permitted): a file is
   hashed by `sum --cache` and `dedup --cache`, then rewritten in the same
   second with other bytes of the same size, so that its key is exactly
   the same; the next run must print the new digest and must not group
   it with its former twin.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402

EXE = clitest.binary()
CHK = clitest.Checker("cache_racy")


def run(args, cwd=None):
    return clitest.run([EXE] + args[:1] + ["--backend", "cpu"] + args[1:], cwd=cwd, timeout=120)


def sha1(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def stored_count(stderr):
    m = re.search(rb"(\d+) entries stored, (\d+) too recent to store", stderr)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def ordinary_fs(tmp):
    cache = os.path.join(tmp, "c.sqlite")
    f = os.path.join(tmp, "fresh")
    with open(f, "wb") as fh:
        fh.write(os.urandom(5000))
    p = run(["sum", "--cache-file", cache, "-v", f])
    CHK.status(p, 0, "sum --cache on a fresh file")
    CHK.check(p.stdout == ("%s  %s\n" % (sha1(f), f)).encode(), "fresh file: digest",
              clitest.show(p.stdout))
    CHK.check(stored_count(p.stderr) == (0, 1), "a file written just now is not stored",
              clitest.show(p.stderr))
    time.sleep(2.3)
    p = run(["sum", "--cache-file", cache, "-v", f])
    CHK.check(stored_count(p.stderr) == (1, 0), "older than the margin: stored",
              clitest.show(p.stderr))
    p = run(["sum", "--cache-file", cache, "-v", f])
    CHK.check(b"1 digests taken from it" in p.stderr and b"0 bytes read" in p.stderr,
              "then taken from the cache, nothing read", clitest.show(p.stderr))
    CHK.check(p.stdout == ("%s  %s\n" % (sha1(f), f)).encode(), "cached digest is right")


def can_mount():
    return (os.geteuid() == 0 and shutil.which("mkfs.ext4") is not None
            and shutil.which("mount") is not None)


def mount_coarse(tmp):
    """A 1-second-timestamp ext4 on a loop file; its mount point, or None."""
    img = os.path.join(tmp, "coarse.img")
    mnt = os.path.join(tmp, "mnt")
    os.mkdir(mnt)
    with open(img, "wb") as f:
        f.truncate(32 << 20)
    r = subprocess.run(["mkfs.ext4", "-q", "-F", "-I", "128", img],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        print("mkfs.ext4 failed: %s" % r.stdout.decode(errors="replace"), file=sys.stderr)
        return None
    r = subprocess.run(["mount", "-o", "loop", img, mnt],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        print("cannot mount a loop file: %s" % r.stdout.decode(errors="replace"),
              file=sys.stderr)
        return None
    return mnt


def wait_second_start():
    """Sleeps until just after a second begins (to do two things in it)."""
    now = time.time()
    time.sleep(1.0 - (now - int(now)) + 0.01)


def key(path):
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def rewrite(path, data):
    with open(path, "r+b") as f:
        f.write(data)


def coarse_fs(mnt, tmp):
    """True when the race was exercised (all within one second)."""
    cache = os.path.join(tmp, "coarse.sqlite")
    for attempt in range(6):
        d = os.path.join(mnt, "try%d" % attempt)
        os.mkdir(d)
        f, g = os.path.join(d, "f"), os.path.join(d, "g")
        a, b = os.urandom(9000), os.urandom(9000)
        wait_second_start()
        for p in (f, g):
            with open(p, "wb") as fh:
                fh.write(a)
        kf, kg = key(f), key(g)
        r1 = run(["sum", "--cache-file", cache, f])
        r2 = run(["dedup", "--cache-file", cache, "-q", d])
        rewrite(f, b)
        r3 = run(["sum", "--cache-file", cache, f])
        r4 = run(["dedup", "--cache-file", cache, "-q", d])
        raced = key(f) == kf and key(g) == kg
        CHK.status(r1, 0, "sum --cache (first)")
        CHK.check(r2.stdout == ("%s\n%s\n\n" % (f, g)).encode(), "twins grouped",
                  clitest.show(r2.stdout + r2.stderr))
        CHK.check(r3.stdout == ("%s  %s\n" % (hashlib.sha1(b).hexdigest(), f)).encode(),
                  "a file rewritten (%s) is hashed again by sum --cache"
                  % ("within the same second: same key" if raced else "a second later"),
                  clitest.show(r3.stdout))
        CHK.status(r4, 0, "dedup --cache after the rewrite")
        CHK.check(r4.stdout == b"", "files no longer equal (rewritten %s) are not grouped"
                  % ("within the same second" if raced else "a second later"),
                  clitest.show(r4.stdout))
        if raced:
            return True
    return False


def main():
    tmp = tempfile.mkdtemp(prefix="hb-cache-racy-")
    mnt = None
    try:
        ordinary_fs(tmp)
        if not can_mount():
            print("not root or no mkfs.ext4: the whole-second filesystem part is skipped",
                  file=sys.stderr)
            CHK.finish() if CHK.failures else sys.exit(clitest.SKIP)
        mnt = mount_coarse(tmp)
        if mnt is None:
            if CHK.failures:
                CHK.finish()
            sys.exit(clitest.SKIP)
        if not coarse_fs(mnt, tmp):
            print("could not rewrite a file within one second after hashing it (machine too "
                  "slow): the race itself was not exercised", file=sys.stderr)
            if CHK.failures:
                CHK.finish()
            sys.exit(clitest.SKIP)
    finally:
        if mnt is not None:
            subprocess.run(["umount", mnt])
        shutil.rmtree(tmp, ignore_errors=True)
    CHK.finish()


main()
