#!/usr/bin/env python3
"""test_cache_sum.py - `sum --cache` and `sum -r --cache` with a real
SQLite cache: the output is byte for byte what sha1sum prints (sha1sum
itself is the oracle, hashlib where it is missing), on the first run and
on a rescan that reads nothing (sum -v: "0 bytes read", every digest
taken from the cache); changed files are hashed again: touched, appended,
replaced by another file of the same size and mtime (new inode), and
rewritten in place with the mtime put back (new ctime). Standard input
between cached names keeps its place; a name given twice and a hard link
(one key) are both taken from the cache. On the default route the engine
opens only when a file needs hashing: a rescan that reads nothing says
it was not opened, one with a changed file opens it, and both print what
sha1sum prints. `sum -c --cache` is a usage error (checking always
reads).
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
CHK = clitest.Checker("cache_sum")
OLD = 1500000000 * 10**9
MARGIN = 2.3


def hsum(args, cache, input=None, cwd=None):
    return clitest.run([EXE, "sum", "--backend", "cpu", "--cache-file", cache, "-v"] + args,
                       input=input, cwd=cwd, timeout=120)


def oracle(names, cwd, input=b""):
    if clitest.have_sha1sum():
        return subprocess.run(["sha1sum"] + names, cwd=cwd, input=input,
                              stdout=subprocess.PIPE).stdout
    out = b""
    for n in names:
        data = input if n == "-" else open(os.path.join(cwd, n), "rb").read()
        out += ("%s  %s\n" % (hashlib.sha1(data).hexdigest(), n)).encode()
    return out


def tree_names(cwd, top):
    names = []
    for dirpath, _, files in os.walk(os.path.join(cwd, top)):
        for f in files:
            names.append(os.path.relpath(os.path.join(dirpath, f), cwd))
    return sorted(names, key=lambda s: s.encode())


def write(path, data, mtime_ns=OLD):
    with open(path, "wb") as f:
        f.write(data)
    os.utime(path, ns=(mtime_ns, mtime_ns))


def taken(stderr):
    m = re.search(rb"cache: (\d+) files looked up, (\d+) digests taken from it", stderr)
    r = re.search(rb"files: \d+ \(\d+ failed\), (\d+) bytes read", stderr)
    return (int(m.group(2)) if m else None, int(r.group(1)) if r else None)


def check_tree(cwd, cache, what):
    p = hsum(["-r", "t"], cache, cwd=cwd)
    CHK.status(p, 0, what)
    CHK.same_bytes(p.stdout, oracle(tree_names(cwd, "t"), cwd), what)
    return taken(p.stderr)


def main():
    tmp = tempfile.mkdtemp(prefix="hb-cache-sum-")
    try:
        cache = os.path.join(tmp, "c.sqlite")
        t = os.path.join(tmp, "t")
        os.makedirs(os.path.join(t, "d"))
        for i in range(30):
            write(os.path.join(t, "f%02d" % i), os.urandom(i * 517))
        write(os.path.join(t, "d", "big"), os.urandom(3 << 20))
        write(os.path.join(t, "d", "back\\slash"), b"escaped name\n")
        write(os.path.join(t, "d", "dup"), os.urandom(100))
        time.sleep(MARGIN)
        n = len(tree_names(tmp, "t"))
        hits, _ = check_tree(tmp, cache, "first sum -r --cache")
        CHK.check(hits == 0, "first run: nothing from the cache", repr(hits))
        hits, read = check_tree(tmp, cache, "rescan")
        CHK.check(hits == n and read == 0, "rescan: every digest from the cache, 0 bytes read",
                  "%r of %d, %r bytes read" % (hits, n, read))

        f1, f2, f3 = (os.path.join(t, "f%02d" % i) for i in (1, 2, 3))
        os.utime(f1, ns=(OLD + 10**9, OLD + 10**9))  # touch
        with open(f2, "ab") as f:  # append
            f.write(b"more")
        st = os.stat(f3)  # replace: same size and mtime, new inode
        write(os.path.join(t, ".new"), os.urandom(st.st_size), st.st_mtime_ns)
        os.rename(os.path.join(t, ".new"), f3)
        big = os.path.join(t, "d", "big")
        st = os.stat(big)  # in place, mtime put back: only the ctime tells
        with open(big, "r+b") as f:
            f.seek(1 << 20)
            f.write(b"\1\2\3")
        os.utime(big, ns=(st.st_atime_ns, st.st_mtime_ns))
        hits, read = check_tree(tmp, cache, "after four changes")
        CHK.check(hits == n - 4, "the four changed files are hashed again", "%r" % hits)

        # standard input between cached names keeps its place
        args = ["t/f05", "-", "t/f06", "t/d/dup"]
        p = hsum(args, cache, input=b"from stdin\n", cwd=tmp)
        CHK.status(p, 0, "sum --cache FILE - FILE")
        CHK.same_bytes(p.stdout, oracle(args, tmp, b"from stdin\n"), "sum --cache with stdin")

        # one file under two names, and one name twice: one key, both cached
        os.link(os.path.join(t, "d", "dup"), os.path.join(t, "d", "dup-link"))
        time.sleep(MARGIN)  # the link changed the file's ctime
        args = ["t/d/dup", "t/d/dup-link", "t/d/dup", "t/f07"]
        p = hsum(args, cache, cwd=tmp)
        CHK.status(p, 0, "sum --cache of one file under two names")
        p = hsum(args, cache, cwd=tmp)
        CHK.same_bytes(p.stdout, oracle(args, tmp), "names of one file, rescan")
        hits, read = taken(p.stderr)
        CHK.check(hits == 4 and read == 0, "names of one file: all four from the cache",
                  "%r taken, %r bytes read" % (hits, read))

        # the default route opens the engine only when something needs hashing
        def default_route(what):
            q = clitest.run([EXE, "sum", "--cache-file", cache, "-v", "-r", "t"], cwd=tmp,
                            timeout=120)
            CHK.status(q, 0, what)
            CHK.same_bytes(q.stdout, oracle(tree_names(tmp, "t"), tmp), what)
            return q.stderr
        default_route("default route, warming the cache")
        err = default_route("default route, rescan")
        CHK.check(b"engine: not opened (nothing needed hashing)" in err,
                  "default route rescan: engine not opened", clitest.show(err))
        os.utime(f1, ns=(OLD + 2 * 10**9, OLD + 2 * 10**9))
        err = default_route("default route, one file touched")
        CHK.check(b"engine: not opened" not in err and b"engine: " in err,
                  "default route, one file touched: the engine opened", clitest.show(err))

        # --cache (default file under XDG_CACHE_HOME) also works
        xdg = os.path.join(tmp, "xdg")
        env = clitest.clean_env(XDG_CACHE_HOME=xdg)
        for what in ("default cache, first", "default cache, rescan"):
            p = clitest.run([EXE, "sum", "--backend", "cpu", "--cache", "t/d/dup"], cwd=tmp,
                            env=env)
            CHK.same_bytes(p.stdout, oracle(["t/d/dup"], tmp), what)
        CHK.check(os.path.isfile(os.path.join(xdg, "hashbatch", "hashes.sqlite")),
                  "--cache creates $XDG_CACHE_HOME/hashbatch/hashes.sqlite")

        p = clitest.run([EXE, "sum", "-c", "--cache", "x"], cwd=tmp)
        CHK.status(p, 2, "sum -c --cache")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    CHK.finish()


main()
