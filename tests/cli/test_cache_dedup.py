#!/usr/bin/env python3
"""test_cache_dedup.py - `dedup --cache` on real files with a real SQLite
cache: a rescan with no changes reads and hashes nothing (dedup -v's
counters: no prefix or whole file hashed, no byte compared: the classes
come from stored byte proofs), and each kind of change is detected, the
groups staying what the files' bytes say (Python's own grouping is the
oracle): touch (new mtime), append, a file replaced by another of the
same size and mtime with a new inode, a file rewritten in place with its
mtime put back (same size and mtime, new ctime), a new copy joining a
cached group (compared byte for byte with it), and a file that becomes
different from its cached twins. A SHA-1 collision pair, whose cached
digests are equal, is never grouped, on a rescan from the cache either.
On the default route (the engine opened only once a file needs hashing)
the groups are right on a rescan and after a copy changes in place.
"""
import hashlib
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402
import dedupcheck  # noqa: E402

EXE = clitest.binary()
CHK = clitest.Checker("cache_dedup")
OLD = 1500000000 * 10**9  # an mtime long past, in ns
MARGIN = 2.3  # seconds: past the cache's racy-timestamp margin (2 s)


def dedup(tree, cache, *extra):
    return clitest.run([EXE, "dedup", "--backend", "cpu", "--cache-file", cache, "-v"]
                       + list(extra) + [tree], timeout=120)


def write(path, data, mtime_ns=OLD):
    with open(path, "wb") as f:
        f.write(data)
    os.utime(path, ns=(mtime_ns, mtime_ns))


def expected_groups(tree):
    by = {}
    for dirpath, _, names in os.walk(tree):
        for n in names:
            p = os.path.join(dirpath, n)
            with open(p, "rb") as f:
                data = f.read()
            if data:
                by.setdefault(hashlib.sha1(data).hexdigest() + ":%d" % len(data), []).append(p)
    return sorted(sorted(v) for v in by.values() if len(v) > 1)


def groups_of(stdout):
    text = stdout.decode()
    return sorted(sorted(g.split("\n")) for g in text.strip("\n").split("\n\n") if g)


def counters(stderr):
    m = re.search(rb"(\d+) prefixes hashed, (\d+) files \((\d+) bytes\) hashed whole.*?"
                  rb"(\d+) bytes compared byte for byte", stderr)
    c = re.search(rb"cache: (\d+) files looked up, (\d+) found unchanged; (\d+) prefixes and "
                  rb"(\d+) whole-file digests taken from it, (\d+) files joined by stored byte "
                  rb"proofs; (\d+) entries stored", stderr)
    if not m or not c:
        return None
    keys = ["prefixes", "whole", "whole_bytes", "compared", "looked", "unchanged",
            "cached_prefixes", "cached_whole", "proof_joins", "stored"]
    return dict(zip(keys, [int(x) for x in m.groups() + c.groups()]))


def scan(tree, cache, what):
    p = dedup(tree, cache)
    CHK.status(p, 0, what)
    want = expected_groups(tree)
    got = groups_of(p.stdout)
    CHK.check(got == want, "%s: groups" % what, "got %r\nwant %r" % (got, want))
    c = counters(p.stderr)
    CHK.check(c is not None, "%s: -v counters" % what, clitest.show(p.stderr))
    return c or {}


def build(tree):
    os.makedirs(os.path.join(tree, "sub"))
    a = os.urandom(10000)
    small = os.urandom(3000)
    big = os.urandom(3 << 20)  # over 1 MiB: streamed (dedup's big sets)
    write(os.path.join(tree, "a1"), a)
    write(os.path.join(tree, "sub", "a2"), a)
    write(os.path.join(tree, "a3"), a)
    write(os.path.join(tree, "c1"), os.urandom(10000))  # a's size, other bytes
    write(os.path.join(tree, "s1"), small)
    write(os.path.join(tree, "sub", "s2"), small)
    write(os.path.join(tree, "s3"), os.urandom(3000))
    write(os.path.join(tree, "big1"), big)
    write(os.path.join(tree, "sub", "big2"), big)
    write(os.path.join(tree, "u"), os.urandom(777))
    return big


def unchanged_rescan(tree, cache, what, joins):
    c = scan(tree, cache, what)
    CHK.check(c.get("prefixes") == 0 and c.get("whole") == 0 and c.get("compared") == 0,
              "%s: nothing read, hashed or compared" % what, repr(c))
    CHK.check(c.get("proof_joins") == joins, "%s: %d files joined their class by a stored "
              "byte proof" % (what, joins), repr(c))


def collisions(tmp):
    """A SHA-1 collision pair (and a copy of one side): the cached digests
    are equal, yet the two are never grouped, on the first scan or on a
    rescan from the cache; the copy is grouped with its twin."""
    tree = os.path.join(tmp, "col")
    os.makedirs(tree)
    a, b = dedupcheck.colliding_pair(dedupcheck.SHATTERED, b"same suffix" * 500)
    write(os.path.join(tree, "a"), a)
    write(os.path.join(tree, "a-copy"), a)
    write(os.path.join(tree, "b"), b)
    time.sleep(MARGIN)
    cache = os.path.join(tmp, "col.sqlite")
    want = [sorted([os.path.join(tree, "a"), os.path.join(tree, "a-copy")])]
    for what in ("collision pair, first scan", "collision pair, rescan from the cache"):
        p = dedup(tree, cache)
        CHK.status(p, 0, what)
        CHK.check(groups_of(p.stdout) == want, "%s: only the true copy is grouped" % what,
                  clitest.show(p.stdout))
        CHK.check(b"SHA-1 collision" in p.stderr, "%s: the collision is warned about" % what,
                  clitest.show(p.stderr))
    c = counters(p.stderr) or {}
    CHK.check(c.get("whole") == 0 and c.get("compared", 0) >= len(a),
              "rescan: digests from the cache, the pair still compared byte for byte", repr(c))


def default_route(tmp):
    """The default route (no --backend: the engine opens only when a file
    needs hashing, told that work): a rescan with no change and one after
    a copy is changed in place give the groups the bytes say."""
    tree = os.path.join(tmp, "route")
    build(tree)
    time.sleep(MARGIN)
    cache = os.path.join(tmp, "route.sqlite")

    def run(what):
        p = clitest.run([EXE, "dedup", "--cache-file", cache, "-v", tree], timeout=120)
        CHK.status(p, 0, what)
        CHK.check(groups_of(p.stdout) == expected_groups(tree), "%s: groups" % what,
                  clitest.show(p.stdout))
        return p.stderr
    run("default route, first scan")
    err = run("default route, rescan")
    CHK.check(b"engine: not opened (nothing needed hashing)" in err,
              "default route, rescan: nothing hashed", clitest.show(err))
    s2 = os.path.join(tree, "sub", "s2")
    st = os.stat(s2)
    with open(s2, "r+b") as f:  # no longer s1's twin
        f.write(b"\xff\x00\xff")
    os.utime(s2, ns=(st.st_atime_ns, st.st_mtime_ns))
    err = run("default route, a copy changed")
    CHK.check(b"engine: not opened" not in err, "default route, a copy changed: hashed",
              clitest.show(err))


def main():
    tmp = tempfile.mkdtemp(prefix="hb-cache-dedup-")
    try:
        tree = os.path.join(tmp, "tree")
        cache = os.path.join(tmp, "cache.sqlite")
        big = build(tree)
        time.sleep(MARGIN)
        c = scan(tree, cache, "first scan")
        CHK.check(c.get("prefixes", 0) >= 9 and c.get("stored", 0) >= 9,
                  "first scan hashes and stores", repr(c))
        unchanged_rescan(tree, cache, "rescan, no change", 4)  # a: 2, s: 1, big: 1

        a1 = os.path.join(tree, "a1")
        os.utime(a1, ns=(OLD + 10**9, OLD + 10**9))  # touch: new mtime, same bytes
        c = scan(tree, cache, "after touch")
        CHK.check(c.get("prefixes") == 1 and c.get("compared", 0) >= 10000,
                  "touched file read again and compared", repr(c))

        s1 = os.path.join(tree, "s1")
        with open(s1, "ab") as f:
            f.write(b"x")
        os.utime(s1, ns=(OLD, OLD))
        c = scan(tree, cache, "after append")

        a2 = os.path.join(tree, "sub", "a2")
        st = os.stat(a2)
        repl = os.path.join(tree, "sub", ".repl")
        write(repl, os.urandom(10000), st.st_mtime_ns)
        os.rename(repl, a2)  # same size, same mtime, a new inode
        CHK.check(os.stat(a2).st_ino != st.st_ino and os.stat(a2).st_mtime_ns == st.st_mtime_ns,
                  "replacement has a new inode and the old mtime")
        scan(tree, cache, "after replace (same size and mtime, new inode)")

        big1 = os.path.join(tree, "big1")
        st = os.stat(big1)
        with open(big1, "r+b") as f:  # in place: same inode, same size
            f.seek(len(big) // 2)
            f.write(b"\0changed\0")
        os.utime(big1, ns=(st.st_atime_ns, st.st_mtime_ns))
        st2 = os.stat(big1)
        CHK.check(st2.st_mtime_ns == st.st_mtime_ns and st2.st_ino == st.st_ino
                  and st2.st_size == st.st_size, "rewrite kept inode, size and mtime")
        scan(tree, cache, "after in-place rewrite with the mtime put back")

        write(os.path.join(tree, "sub", "a4"), open(a1, "rb").read())  # a new copy
        c = scan(tree, cache, "after a new copy")
        CHK.check(c.get("compared", 0) >= 10000, "the new copy is compared byte for byte",
                  repr(c))

        time.sleep(MARGIN)
        scan(tree, cache, "settling")
        unchanged_rescan(tree, cache, "rescan after the changes", 2)  # a1 a3 a4
        collisions(tmp)
        default_route(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    CHK.finish()


main()
