#!/usr/bin/env python3
"""test_safe_sum.py - issue 27: `hashbatch sum -r` (and its hash cache)
reads each file beneath the folder the walk started from, so a folder of
the tree exchanged with a symlink between the walk and the read is never
followed: sum never prints the digest of a file outside the tree under a
tree file's name.

As root (else exit 77 saying why; also without `setpriv`, `cc` or the
users nobody/nogroup): a base directory owned by nobody holds tree/ with
FILES files of 64 bytes at tree/d/xN (parent) or tree/g/d/xN
(grandparent), all owned by nobody; beside it, owned by root and 0700,
rootonly/ holds files at the same relative names with other bytes. The
hash cache was given every rootonly file's digest beforehand (`sum -r
--cache-file` on rootonly, its files' mtimes an hour back and their
ctimes 2 s old, so that the rows are stored), so a cached run that keyed a tree name by the rootonly
file's identity would print the rootonly digest without reading.
safe_race.c's flip (compiled here with cc, run as nobody by setpriv)
exchanges tree/d (or tree/g) with tree/s -> rootonly as fast as it can
while `sum -r tree` runs again and again, in turn without and with
`--cache-file`.

Asserted, for each depth: at least 2,000 exchanges happened while sum
ran; no line of any run has a digest of a rootonly file, and every line
is "DIGEST  tree/.../xN" with xN's own digest in the tree (the walk may
list the swapped folder under its other name, s); every stderr
line names a tree file and says that a symbolic link is in its path now
or that it is gone (a walk that met the link skips it silently); exit
status 0 or 1, 1 exactly when something was reported; and the race was
met: in at least one run a file the walk listed was refused because a
symbolic link was in its path at the read (on the code before the
issue, those runs printed rootonly digests instead). At most 60 s a depth.

Usage: test_safe_sum.py PATH/TO/hashbatch
"""
import grp
import hashlib
import os
import pwd
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
C = clitest.Checker("safe_sum")
HERE = os.path.dirname(os.path.abspath(__file__))
FILES = 300
MIN_EXCHANGES = 2000
MIN_RUNS = 6
RUN_LIMIT = 60.0
SIZE = 64
DEPTHS = {"parent": ("d", "d"), "grandparent": ("g", "g/d")}  # swapped, files' folder
LINK_WORDS = b"a symbolic link is in its path now"
WALK_WORDS = {b"Not a directory", b"No such file or directory",
              b"Too many levels of symbolic links"}


def skip(why):
    print("skipped: %s" % why, file=sys.stderr)
    sys.exit(clitest.SKIP)


def write(path, data, owner=None):
    with open(path, "wb") as f:
        f.write(data)
    if owner is not None:
        os.chown(path, *owner)


def build(base, rootonly, depth, owner):
    """tree/<folder>/xN (owned by nobody) and rootonly/<below swap>/xN
    (root's, 0700); returns ({tree name: digest}, {rootonly digests})."""
    swap, folder = DEPTHS[depth]
    below = folder[len(swap):].lstrip("/")
    os.makedirs(os.path.join(base, "tree", folder))
    os.makedirs(os.path.join(rootonly, below), mode=0o700)
    tree, secret = {}, set()
    for i in range(FILES):
        data = (b"tree %06d " % i).ljust(SIZE, b"t")
        name = "tree/%s/x%d" % (folder, i)
        write(os.path.join(base, name), data, owner)
        tree[name] = hashlib.sha1(data).hexdigest()
        data = (b"ROOT %06d " % i).ljust(SIZE, b"r")
        path = os.path.join(rootonly, below, "x%d" % i)
        write(path, data)
        os.utime(path, (time.time() - 3600, time.time() - 3600))
        secret.add(hashlib.sha1(data).hexdigest())
    for dp, _, _ in os.walk(base):
        os.chown(dp, *owner)
    for dp, _, _ in os.walk(rootonly):
        os.chmod(dp, 0o700)
    s = os.path.join(base, "tree", "s")
    os.symlink(rootonly, s)
    os.lchown(s, *owner)
    return tree, secret


def fill_cache(cache, rootonly):
    time.sleep(2.1)  # a ctime within the cache's 2 s margin is not stored
    p = clitest.run([HB, "sum", "-r", "-v", "--cache-file", cache, rootonly])
    C.status(p, 0, "sum -r --cache-file on rootonly")
    m = re.search(rb"(\d+) entries stored", p.stderr)
    C.check(m is not None and int(m.group(1)) == FILES,
            "the cache holds every rootonly file's digest", clitest.show(p.stderr))


def tree_name(name, swap):
    """A name the walk may list: the swapped folder is a directory under
    either of its two names ("s" while exchanged), the same files."""
    return re.sub(r"^tree/s/", "tree/%s/" % swap, name)


def check_run(p, what, tree, secret, swap):
    """One sum run's output; returns how many reads met a link."""
    bad = []
    for line in p.stdout.splitlines():
        m = re.fullmatch(rb"([0-9a-f]{40})  (.*)", line)
        if m is None:
            bad.append("not a digest line: %r" % line)
            continue
        digest = m.group(1).decode()
        name = tree_name(m.group(2).decode("utf-8", "replace"), swap)
        if digest in secret:
            bad.append("a rootonly file's digest printed as %s" % name)
        elif tree.get(name) != digest:
            bad.append("%s: %s is not its digest" % (name, digest))
    met = 0
    folders = {"tree/s", "tree/" + swap, "tree/s/d", "tree/%s/d" % swap}
    for line in p.stderr.splitlines():
        m = re.fullmatch(rb"hashbatch: (tree/\S+): (.*)", line)
        if m is not None and m.group(1).decode() in folders:
            if m.group(2) not in WALK_WORDS:  # the walk met the exchange
                bad.append("stderr: %r" % line)
        elif m is None or tree_name(m.group(1).decode(), swap) not in tree:
            bad.append("stderr: %r" % line)
        elif LINK_WORDS in m.group(2):
            met += 1
        elif m.group(2) != b"No such file or directory":
            bad.append("stderr: %r" % line)
    want = 1 if p.stderr else 0
    C.check(p.returncode == want, "%s: exit status %d, expected %d" % (what, p.returncode, want),
            clitest.show(p.stderr))
    C.check(not bad, "%s: every line is a tree file's own digest or a refusal" % what,
            "\n".join(bad[:20]))
    return met


def race(work, helper, depth, owner):
    run_dir = tempfile.mkdtemp(prefix="run-", dir=work)
    os.chmod(run_dir, 0o755)
    base = os.path.join(run_dir, "base")
    os.mkdir(base)
    os.chown(base, *owner)
    rootonly = os.path.join(run_dir, "rootonly")
    tree, secret = build(base, rootonly, depth, owner)
    cache = os.path.join(run_dir, "hashes.sqlite")
    fill_cache(cache, rootonly)
    p = clitest.run([HB, "sum", "-r", "tree"], cwd=base)
    C.status(p, 0, "%s: sum -r tree, no race" % depth)
    swap = DEPTHS[depth][0]
    C.check(check_run(p, "%s: no race" % depth, tree, secret, swap) == 0 and
            len(p.stdout.splitlines()) == FILES, "%s: every file hashed with no race" % depth)
    counter, stop = os.path.join(base, "count"), os.path.join(base, "stop")
    fl = subprocess.Popen(["setpriv", "--reuid=%d" % owner[0], "--regid=%d" % owner[1],
                           "--clear-groups", helper, "flip", swap, "s", counter, stop,
                           "%d" % RUN_LIMIT],
                          cwd=os.path.join(base, "tree"), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    runs = met = 0
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < RUN_LIMIT - 5:
            cached = runs % 2 == 1
            args = [HB, "sum", "-r"] + (["--cache-file", cache] if cached else []) + ["tree"]
            p = clitest.run(args, cwd=base)
            runs += 1
            met += check_run(p, "%s: run %d%s" % (depth, runs, ", cached" if cached else ""),
                             tree, secret, swap)
            try:
                exchanges = int(open(counter).read().split()[0])
            except (OSError, ValueError, IndexError):
                exchanges = 0
            if runs >= MIN_RUNS and exchanges >= MIN_EXCHANGES and met > 0:
                break
    finally:
        write(stop, b"")
        out, err = fl.communicate(timeout=30)
    m = re.search(rb"exchanges (\d+)", out)
    exchanges = int(m.group(1)) if m else 0
    print("%s: %d runs of sum -r, %d exchanges, %d reads met a symbolic link"
          % (depth, runs, exchanges, met))
    C.check(fl.returncode == 0, "%s: the exchanging loop ran" % depth, clitest.show(err))
    C.check(exchanges >= MIN_EXCHANGES, "%s: at least %d exchanges (%d)"
            % (depth, MIN_EXCHANGES, exchanges))
    C.check(met > 0, "%s: the race was met: a listed file's folder was a link at its read"
            % depth)
    shutil.rmtree(run_dir, ignore_errors=True)


def main():
    if os.geteuid() != 0:
        skip("the race needs root (hashbatch as root, the swapping loop as nobody)")
    for tool in ("setpriv", "cc"):
        if shutil.which(tool) is None:
            skip("%s not found" % tool)
    try:
        uid = pwd.getpwnam("nobody").pw_uid
        gid = next(grp.getgrnam(g).gr_gid for g in ("nogroup", "nobody")
                   if g in {x.gr_name for x in grp.getgrall()})
    except (KeyError, StopIteration):
        skip("no user nobody or group nogroup")
    work = tempfile.mkdtemp(prefix="hb-safe-sum-")
    os.chmod(work, 0o755)
    try:
        helper = os.path.join(work, "safe_race")
        p = subprocess.run(["cc", "-O2", "-o", helper, os.path.join(HERE, "safe_race.c")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            C.fail("cc safe_race.c", clitest.show(p.stderr))
            C.finish()
        for depth in DEPTHS:
            race(work, helper, depth, (uid, gid))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    C.finish()


if __name__ == "__main__":
    main()
