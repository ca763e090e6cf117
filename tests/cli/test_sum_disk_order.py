#!/usr/bin/env python3
"""test_sum_disk_order.py - `hashbatch sum` reads files that lie on a
rotational disk in the order of their places on it (the disk order dedup
reads in, issue 27), and prints them in list order all the same.

On an ext4 image on a loop device (made here, as root; skipped visibly
otherwise: test_disk_order.py's Image), 24 files are created in name
order and written in a shuffled order, each synced, so their first
extents lie in an order unlike their names'. With the loop device marked
rotational and the page cache dropped (skipped visibly where that cannot
be done) before each run, `sum -r` and `sum FILE...`
(HASHBATCH_DEBUG_READ_ORDER set: sum prints each job's read order on
stderr) read them in the order of their first extents as FIEMAP gives
them here, with --cache-file too (the files it does not hold); the
output is the same as sha1sum's, in name order. Warm (just read), no
order is made: list order, readers on every core. Marked solid-state,
cold, no order is printed (list order) and the output is the same. A tree with files on two devices (the image and the
ordinary file system, through a second argument) keeps list order within
each.

Usage: test_sum_disk_order.py PATH/TO/hashbatch
"""
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402
from test_disk_order import Image, drop_caches, first_extent, make_files, skip  # noqa: E402

HB = clitest.binary()
C = clitest.Checker("sum_disk_order")


def orders(stderr):
    """{job: [name, ...]} from the read-order trace."""
    out = {}
    for line in stderr.decode(errors="replace").splitlines():
        m = re.fullmatch(r"hashbatch: debug: read order (\d+) (\d+) (.*)", line)
        if m:
            out.setdefault(int(m.group(1)), []).append(m.group(3))
    return out


def sha1sum(names, cwd):
    return subprocess.run(["sha1sum"] + names, cwd=cwd, stdout=subprocess.PIPE).stdout


def traced(args, cwd):
    return clitest.run([HB] + args, cwd=cwd,
                       env=clitest.clean_env(HASHBATCH_DEBUG_READ_ORDER="1"))


def check_physical(what, args, cwd, names, phys):
    why = drop_caches()
    if why:
        skip(why)
    p = traced(args, cwd)
    C.status(p, 0, what)
    C.same_bytes(p.stdout, sha1sum(names, cwd), what + ": the output is sha1sum's, in list order")
    got = orders(p.stderr)
    C.check(len(got) == 1, "%s: one job, its read order traced (%d)" % (what, len(got)),
            clitest.show(p.stderr))
    if got:
        order = next(iter(got.values()))
        C.check(sorted(order) == sorted(names), "%s: every file read once" % what)
        want = sorted(names, key=lambda n: phys[os.path.basename(n)])
        C.check(order == want, "%s: read in the order of the first extents" % what,
                "read:  %s\nwant:  %s" % (order, want))


def main():
    if shutil.which("sha1sum") is None:
        skip("sha1sum not found")
    work = tempfile.mkdtemp(prefix="hb-sum-disk-order-")
    img = Image(work)
    try:
        why = img.setup()
        if why:
            skip(why)
        folder = os.path.join(img.mnt, "t")
        os.mkdir(folder)
        make_files(folder, random.Random(20261204), "f")
        base = sorted(os.listdir(folder))
        names = ["t/" + n for n in base]
        phys = {n: first_extent(os.path.join(folder, n)) for n in base}
        C.check(all(v is not None for v in phys.values()), "every file has a placed extent")
        C.check([phys[n] for n in base] != sorted(phys[n] for n in base),
                "the files' places are not in name order (else the test shows nothing)")
        if not img.set_rotational(1):
            skip("sysfs refuses to mark %s rotational" % img.loop)
        check_physical("rotational, sum -r", ["sum", "-r", "t"], img.mnt, names, phys)
        check_physical("rotational, sum FILE...", ["sum"] + names, img.mnt, names, phys)
        cache = os.path.join(work, "hashes.sqlite")
        check_physical("rotational, sum -r --cache-file (empty)",
                       ["sum", "-r", "--cache-file", cache, "t"], img.mnt, names, phys)
        # two devices: the image's files, then one on the ordinary file system
        other = os.path.join(work, "other")
        os.mkdir(other)
        with open(os.path.join(other, "z"), "wb") as f:
            f.write(b"on another device\n")
        drop_caches()
        p = traced(["sum", "-r", "t", other], img.mnt)
        C.status(p, 0, "two devices")
        C.same_bytes(p.stdout, sha1sum(names + [other + "/z"], img.mnt),
                     "two devices: the output is sha1sum's, in list order")
        got = orders(p.stderr)
        want = sorted(names, key=lambda n: phys[os.path.basename(n)])
        C.check(list(got.values())[:1] == [want],
                "two devices: the image's tree read in its disk's order", clitest.show(p.stderr))
        p = traced(["sum", "-r", "t"], img.mnt)  # the files were just read: warm
        C.status(p, 0, "rotational, warm")
        C.same_bytes(p.stdout, sha1sum(names, img.mnt), "rotational, warm: sha1sum's output")
        C.check(orders(p.stderr) == {}, "rotational, warm: list order (the page cache holds "
                "the files: no order, readers on every core)", clitest.show(p.stderr))
        C.check(img.set_rotational(0), "the loop device marked solid-state again")
        drop_caches()
        p = traced(["sum", "-r", "t"], img.mnt)
        C.status(p, 0, "solid-state")
        C.same_bytes(p.stdout, sha1sum(names, img.mnt), "solid-state: the output is sha1sum's")
        C.check(orders(p.stderr) == {}, "solid-state: list order (no read order made)",
                clitest.show(p.stderr))
    finally:
        img.close()
        shutil.rmtree(work, ignore_errors=True)
    C.finish()


if __name__ == "__main__":
    main()
