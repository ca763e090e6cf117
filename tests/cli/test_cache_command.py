#!/usr/bin/env python3
"""test_cache_command.py - `hashbatch cache stats|prune|clear` on a real
cache (checked against the SQLite file itself), their usage errors (exit
2) and help, and two runs at once on one cache (WAL): both succeed, both
print the right groups, and the cache ends up with every file.
"""
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
CHK = clitest.Checker("cache_command")
OLD = 1500000000 * 10**9


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    os.utime(path, ns=(OLD, OLD))


def cache_cmd(*args, env=None):
    return clitest.run([EXE, "cache"] + list(args), env=env)


def rows(cache):
    con = sqlite3.connect(cache)
    n = con.execute("SELECT count(*), coalesce(sum(size), 0) FROM files").fetchone()
    con.close()
    return n


def stat_fields(stdout):
    return dict(line.split(": ", 1) for line in stdout.decode().splitlines() if ": " in line)


def commands(tmp):
    tree = os.path.join(tmp, "tree")
    os.makedirs(tree)
    for i in range(20):
        write(os.path.join(tree, "f%02d" % i), os.urandom(100 + i) * 2)
    time.sleep(2.3)
    cache = os.path.join(tmp, "c.sqlite")
    p = clitest.run([EXE, "sum", "--backend", "cpu", "-r", "--cache-file", cache, tree])
    CHK.status(p, 0, "filling the cache")
    n, size = rows(cache)
    CHK.check(n == 20, "20 rows", repr(n))

    p = cache_cmd("stats", "--cache-file", cache)
    CHK.status(p, 0, "cache stats")
    f = stat_fields(p.stdout)
    CHK.check(f.get("file") == cache and f.get("entries") == "20"
              and f.get("bytes covered") == str(size)
              and f.get("format") == "hashbatch-hash-cache version 2"
              and int(f.get("size on disk", "0")) > 0, "stats' fields", clitest.show(p.stdout))

    os.unlink(os.path.join(tree, "f00"))  # gone
    with open(os.path.join(tree, "f01"), "ab") as fh:  # another version
        fh.write(b"x")
    p = cache_cmd("prune", "--cache-file", cache)
    CHK.status(p, 0, "cache prune")
    CHK.check(p.stdout == b"18 entries kept, 2 dropped\n", "prune's counts",
              clitest.show(p.stdout))
    CHK.check(rows(cache)[0] == 18, "prune dropped the two rows")

    p = cache_cmd("clear", "--cache-file", cache)
    CHK.status(p, 0, "cache clear")
    CHK.check(p.stdout == b"18 entries dropped\n" and rows(cache)[0] == 0, "clear empties it",
              clitest.show(p.stdout))
    p = cache_cmd("stats", "--cache-file", cache)
    CHK.check(stat_fields(p.stdout).get("entries") == "0", "stats after clear")

    xdg = os.path.join(tmp, "xdg")
    env = clitest.clean_env(XDG_CACHE_HOME=xdg)
    p = clitest.run([EXE, "sum", "--backend", "cpu", "--cache", os.path.join(tree, "f02")],
                    env=env)
    p = cache_cmd("stats", env=env)
    CHK.check(stat_fields(p.stdout).get("file") == os.path.join(xdg, "hashbatch",
                                                               "hashes.sqlite")
              and stat_fields(p.stdout).get("entries") == "1", "the default file",
              clitest.show(p.stdout + p.stderr))

    p = cache_cmd("stats", "--cache-file", os.path.join(tmp, "missing.sqlite"))
    CHK.status(p, 1, "stats of a missing cache")
    CHK.check(not os.path.exists(os.path.join(tmp, "missing.sqlite")), "not created by stats")
    for args in ([], ["bogus"], ["stats", "extra"], ["--nope", "stats"], ["stats", "--cache-file"]):
        p = cache_cmd(*args)
        CHK.status(p, 2, "usage error: cache %s" % " ".join(args))
        CHK.check(b"Try 'hashbatch cache --help'" in p.stderr, "usage hint: %r" % args,
                  clitest.show(p.stderr))
    for args in (["--help"], ["stats", "--help"], ["prune", "--help"], ["clear", "--help"]):
        p = cache_cmd(*args)
        CHK.status(p, 0, "cache %s" % " ".join(args))
        CHK.check(p.stdout.startswith(b"Usage: hashbatch cache"), "help: %r" % args)


def concurrent(tmp):
    tree = os.path.join(tmp, "many")
    os.makedirs(tree)
    want = b""
    for i in range(0, 2000, 2):
        data = os.urandom(64)
        write(os.path.join(tree, "a%04d" % i), data)
        write(os.path.join(tree, "a%04d" % (i + 1)), data)
        want += ("%s/a%04d\n%s/a%04d\n\n" % (tree, i, tree, i + 1)).encode()
    time.sleep(2.3)
    cache = os.path.join(tmp, "shared.sqlite")
    for round_ in ("first", "second"):
        cmd = [EXE, "dedup", "--backend", "cpu", "-q", "--cache-file", cache, tree]
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=clitest.clean_env()) for _ in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
        for k, (p, (out, err)) in enumerate(zip(procs, outs)):
            CHK.check(p.returncode == 0 and err == b"",
                      "%s round: concurrent run %d succeeds quietly" % (round_, k),
                      clitest.show(err))
            CHK.same_bytes(out, want, "%s round: concurrent run %d's groups" % (round_, k))
    CHK.check(rows(cache)[0] == 2000, "the shared cache holds every file")


def main():
    tmp = tempfile.mkdtemp(prefix="hb-cache-cmd-")
    try:
        commands(tmp)
        concurrent(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    CHK.finish()


main()
