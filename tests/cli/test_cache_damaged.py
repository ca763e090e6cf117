#!/usr/bin/env python3
"""test_cache_damaged.py - a hash cache that cannot be used is reported in
ONE line on stderr and the run goes on without it, its output right and
its exit status 0, and the file is left as it was: random bytes, a
truncated copy of a real cache, a database of our format but another
version (PRAGMA user_version), a database of something else, a folder,
a cache on a read-only filesystem (and one that cannot be created there:
the part `--part=readonly`, ctest's cli_cache_damaged_readonly, on a
tmpfs made read-only (mount -o remount,bind,ro): as root, or else as root of a user namespace
of its own (unshare -rm); a SKIP where neither can mount), and a cache
whose writer lock is held by another process past the busy
timeout (10 s). Each case runs both `dedup --cache` and `sum --cache`.
"""
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402

EXE = clitest.binary()
CHK = clitest.Checker("cache_damaged")
OLD = 1500000000 * 10**9


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    os.utime(path, ns=(OLD, OLD))


def file_digest(path):
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def make_tree(tree):
    os.makedirs(tree)
    for i in range(300):  # enough rows for a cache of many pages
        data = ("content %d\n" % (i // 2)).encode()
        write(os.path.join(tree, "f%03d" % i), data)


def expected(tree):
    dedup = b""
    for i in range(0, 300, 2):
        dedup += ("%s/f%03d\n%s/f%03d\n\n" % (tree, i, tree, i + 1)).encode()
    names = sorted(os.listdir(tree))
    sums = b""
    for n in names:
        with open(os.path.join(tree, n), "rb") as f:
            sums += ("%s  %s/%s\n" % (hashlib.sha1(f.read()).hexdigest(), tree, n)).encode()
    return dedup, sums


def runs(tree, cache):
    d = clitest.run([EXE, "dedup", "--backend", "cpu", "-q", "--cache-file", cache, tree],
                    timeout=120)
    s = clitest.run([EXE, "sum", "--backend", "cpu", "-r", "--cache-file", cache, tree],
                    timeout=120)
    return d, s


def survived(tree, cache, what, cause, unchanged=True):
    want_d, want_s = expected(tree)
    before = file_digest(cache)
    d, s = runs(tree, cache)
    for name, p, want in (("dedup", d, want_d), ("sum", s, want_s)):
        w = "%s, %s --cache" % (what, name)
        CHK.status(p, 0, w)
        CHK.same_bytes(p.stdout, want, w)
        lines = p.stderr.decode(errors="replace").splitlines()
        CHK.check(len(lines) == 1 and "hash cache not used" in lines[0] and cause in lines[0],
                  "%s: one line on stderr naming the cause (%r)" % (w, cause),
                  clitest.show(p.stderr))
    if unchanged:
        CHK.check(file_digest(cache) == before, "%s: the file is left as it was" % what)


def good_cache(tree, path):
    d, _ = runs(tree, path)
    CHK.status(d, 0, "building a cache")
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    n = con.execute("SELECT count(*) FROM files").fetchone()[0]
    con.close()
    CHK.check(n == 300, "the cache holds a row per file", repr(n))


def read_only_cases(tmp, tree):
    """Exits 77 (a SKIP) when no tmpfs can be mounted here."""
    mnt = os.path.join(tmp, "ro")
    os.mkdir(mnt)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", mnt],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        clitest.skip("cannot mount a tmpfs for the read-only cache cases (%s)"
                     % p.stdout.decode(errors="replace").strip())
    try:
        cache = os.path.join(mnt, "c.sqlite")
        good_cache(tree, cache)
        p = subprocess.run(["mount", "-o", "remount,bind,ro", mnt],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if not CHK.check(p.returncode == 0, "a tmpfs mounted here remounts read-only",
                         p.stdout.decode(errors="replace")):
            return
        CHK.check(not os.access(mnt, os.W_OK) and
                  subprocess.run(["touch", os.path.join(mnt, "probe")],
                                 stderr=subprocess.DEVNULL).returncode != 0,
                  "the remounted tmpfs refuses writes")
        survived(tree, cache, "cache on a read-only filesystem", "read-only")
        survived(tree, os.path.join(mnt, "new.sqlite"), "new cache on a read-only filesystem",
                 "cannot open")
        CHK.check(not os.path.exists(os.path.join(mnt, "new.sqlite")), "nothing created")
    finally:
        subprocess.run(["umount", mnt])


def in_own_namespace():
    """Not root: reruns this script as root of a new user and mount
    namespace (unshare -rm), where a tmpfs can be mounted; exits with its
    status. Returns only when unshare cannot make one (a SKIP then)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        clitest.skip("not root and no unshare (util-linux): no read-only mount for the "
                     "read-only cache cases")
    probe = subprocess.run([unshare, "-rm", "true"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    if probe.returncode != 0:
        clitest.skip("not root, and unshare -rm cannot make a user namespace (%s): "
                     "no read-only mount for the read-only cache cases"
                     % probe.stdout.decode(errors="replace").strip())
    sys.stdout.flush()
    os.execv(unshare, [unshare, "-rm", sys.executable] + sys.argv)


def locked_case(tmp, tree):
    cache = os.path.join(tmp, "locked.sqlite")
    good_cache(tree, cache)
    write(os.path.join(tree, "zz_new"), b"a new file to store\n")  # something to write
    os.utime(os.path.join(tree, "zz_new"), ns=(OLD, OLD))
    time.sleep(2.3)  # its ctime past the racy margin, so the run wants to store it
    con = sqlite3.connect(cache, isolation_level=None, timeout=1)
    con.execute("BEGIN IMMEDIATE")  # the writer lock, held
    try:
        p = clitest.run([EXE, "sum", "--backend", "cpu", "--cache-file", cache,
                         os.path.join(tree, "zz_new")], timeout=120)
    finally:
        con.execute("ROLLBACK")
        con.close()
    CHK.status(p, 0, "locked cache, sum --cache")
    CHK.check(p.stdout.startswith(hashlib.sha1(b"a new file to store\n").hexdigest().encode()),
              "locked cache: right digest", clitest.show(p.stdout))
    lines = p.stderr.decode(errors="replace").splitlines()
    CHK.check(len(lines) == 1 and "locked" in lines[0], "locked cache: one line",
              clitest.show(p.stderr))
    os.unlink(os.path.join(tree, "zz_new"))


def main():
    only = clitest.part()
    if only not in (None, "readonly"):
        sys.exit("unknown part %r" % only)
    if only == "readonly" and os.geteuid() != 0:
        in_own_namespace()
    tmp = tempfile.mkdtemp(prefix="hb-cache-damaged-")
    try:
        tree = os.path.join(tmp, "tree")
        make_tree(tree)
        time.sleep(2.3)  # past the racy margin: the cache stores these
        if only == "readonly":
            read_only_cases(tmp, tree)
        else:
            damaged_cases(tmp, tree)
            locked_case(tmp, tree)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    CHK.finish()


def damaged_cases(tmp, tree):
    rnd = os.path.join(tmp, "random.sqlite")
    with open(rnd, "wb") as f:
        f.write(os.urandom(8192))
    survived(tree, rnd, "random bytes", "not a database")

    real = os.path.join(tmp, "real.sqlite")
    good_cache(tree, real)
    size = os.path.getsize(real)
    CHK.check(size >= 5 * 4096, "the real cache has many pages", repr(size))
    trunc = os.path.join(tmp, "truncated.sqlite")
    with open(real, "rb") as f, open(trunc, "wb") as g:
        g.write(f.read(size // 2))
    survived(tree, trunc, "a truncated copy", "malformed")

    foreign = os.path.join(tmp, "foreign.sqlite")
    shutil.copy(real, foreign)
    con = sqlite3.connect(foreign)
    con.execute("PRAGMA user_version = 7")
    con.commit()
    con.close()
    survived(tree, foreign, "another format version", "format version (7")

    other = os.path.join(tmp, "other.sqlite")
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT)")
    con.commit()
    con.close()
    survived(tree, other, "a database of something else", "not a hash cache")

    folder = os.path.join(tmp, "folder.sqlite")
    os.mkdir(folder)
    survived(tree, folder, "a folder", "not a regular file", unchanged=False)


main()
