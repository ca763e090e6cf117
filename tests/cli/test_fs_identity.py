#!/usr/bin/env python3
"""test_fs_identity.py - a file's identity is (filesystem, device, inode)
(issue 27, defects 4 and 2), on images and mounts made here (root
needed: without it, or where a tool or mount is missing or refused, exit
77 saying why).

(a) One loop device, two filesystems: two ext4 images built alike
(mke2fs -d, then debugfs sets each file's ctime in the past) hold a/b
(equal) and a/b (b different), so that mounted in turn on the same loop
device their files have equal device, inode, size, mtime and ctime
(checked first). After the first image filled a cache
through `dedup --cache-file` and `sum --cache-file`, the second image's
files get their own digests from `sum` (with the cache dedup filled and
with the one sum filled), and `dedup --cache-file` does not group a and
b.

(b) overlayfs: with `merged` an overlay whose lower layer is `lower`,
`dedup --json merged lower` calls merged/x and lower/x (one file, seen
twice: same inode number, different st_dev) no duplicates and counts no
bytes reclaimable; a real duplicate written through the overlay next to
it (merged/y, an upper-layer file with x's bytes) still is grouped with
x, as one other file.

Everything is made on a tmpfs mounted here, and unmounted, detached and
removed at the end, also on failure.

Usage: test_fs_identity.py PATH/TO/hashbatch
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402

HB = clitest.binary()
C = clitest.Checker("fs_identity")
ENV = clitest.clean_env(HASHBATCH_BACKEND="cpu")
FAKE_TIME = "1577836800"  # 2020-01-01: every inode's ctime in both images
OLD_NS = 1577836800 * 10**9
SAME = b"same content AAAA\n"
OTHER = b"DIFFERENT BBBBBBB\n"  # as long as SAME


def sh(*args, env=None):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def skip(why):
    print("skipped: " + why, file=sys.stderr)
    sys.exit(clitest.SKIP)


def hb(*args, cwd=None):
    return clitest.run([HB] + list(args), cwd=cwd, env=ENV)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    os.utime(path, ns=(OLD_NS, OLD_NS))


def key(path):
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Mounts:
    """What was mounted and attached, undone in reverse order."""

    def __init__(self):
        self.undo = []

    def mount(self, *args):
        p = sh("mount", *args)
        if p.returncode == 0:
            self.undo.append(("umount", args[-1]))
        return p

    def umount(self, where):
        self.undo.remove(("umount", where))
        return sh("umount", where)

    def attach(self, loop, img):
        p = sh("losetup", loop, img)
        if p.returncode == 0:
            self.undo.append(("losetup", loop))
        return p

    def detach(self, loop):
        self.undo.remove(("losetup", loop))
        return sh("losetup", "-d", loop)

    def close(self):
        for what, arg in reversed(self.undo):
            sh("umount", arg) if what == "umount" else sh("losetup", "-d", arg)
        self.undo = []


def groups_of(proc):
    try:
        return json.loads(proc.stdout.decode())
    except ValueError:
        C.fail("dedup --json: not JSON", clitest.show(proc.stdout))
        return {"groups": [], "summary": {}}


def group_paths(g):
    return sorted(f["path"] for f in g["files"])


def sum_lines(cache, *names, cwd):
    p = hb("sum", "--backend", "cpu", "--cache-file", cache, *names, cwd=cwd)
    C.status(p, 0, "sum --cache-file %s" % os.path.basename(cache))
    return p.stdout.decode()


def want_lines(tree, names):
    return "".join("%s  %s\n" % (hashlib.sha1(open(os.path.join(tree, n), "rb").read())
                                 .hexdigest(), n) for n in names)


def make_image(base, tag, files):
    src = os.path.join(base, "src" + tag)
    os.mkdir(src)
    for name, data in files:  # the same order in both: the same inode numbers
        write(os.path.join(src, name), data)
    img = os.path.join(base, tag + ".img")
    env = dict(os.environ, E2FSPROGS_FAKE_TIME=FAKE_TIME)
    p = sh("mke2fs", "-q", "-F", "-t", "ext4", "-d", src, img, "8M", env=env)
    if p.returncode != 0:
        skip("mke2fs -d failed: %s" % p.stderr.decode().strip())
    for name, _ in files:  # mke2fs -d gives its own clock's ctime: set one, long past
        p = sh("debugfs", "-w", "-R", "sif /%s ctime 20200101000000" % name, img)
        if p.returncode != 0:
            skip("debugfs cannot set a ctime: %s" % p.stderr.decode().strip())
    return img


def free_loop():
    p = sh("losetup", "-f")
    if p.returncode != 0 or not p.stdout.strip():
        skip("no free loop device: %s" % p.stderr.decode().strip())
    return p.stdout.decode().strip()


def mount_on(m, loop, img, mnt):
    """img on the loop device loop (retried briefly: another test may hold
    it for a moment), mounted read-only at mnt."""
    for _ in range(50):
        if m.attach(loop, img).returncode == 0:
            break
        time.sleep(0.1)
    else:
        C.fail("cannot attach %s to %s again" % (img, loop))
        return False
    p = m.mount("-t", "ext4", "-o", "ro", loop, mnt)
    if p.returncode != 0:
        skip("mounting an ext4 image refused: %s" % p.stderr.decode().strip())
    return True


def loop_reuse(m, base):
    imgs = [make_image(base, "v1", [("a", SAME), ("b", SAME)]),
            make_image(base, "v2", [("a", SAME), ("b", OTHER)])]
    mnt = os.path.join(base, "mnt")
    os.mkdir(mnt)
    dcache, scache = os.path.join(base, "dedup.sqlite"), os.path.join(base, "sum.sqlite")
    loop = free_loop()
    if not mount_on(m, loop, imgs[0], mnt):
        return
    first = [key(os.path.join(mnt, n)) for n in ("a", "b")]
    if any(k[4] > (time.time() - 60) * 10**9 for k in first):
        skip("the image's ctimes could not be set in the past (%r): a cache would not "
             "store these files" % first)
    p = hb("dedup", "--json", "--cache-file", dcache, "mnt", cwd=base)
    C.status(p, 0, "image 1: dedup --cache-file")
    g = groups_of(p)["groups"]
    C.check([group_paths(x) for x in g] == [["mnt/a", "mnt/b"]], "image 1: a and b grouped",
            clitest.show(p.stdout))
    C.same_bytes(sum_lines(scache, "mnt/a", "mnt/b", cwd=base).encode(),
                 want_lines(base, ["mnt/a", "mnt/b"]).encode(), "image 1: sum")
    m.umount(mnt)
    m.detach(loop)

    if not mount_on(m, loop, imgs[1], mnt):
        return
    second = [key(os.path.join(mnt, n)) for n in ("a", "b")]
    if first != second:
        skip("the two images' files do not share device, inode, size and times here "
             "(%r against %r): the case cannot be made" % (first, second))
    want = want_lines(base, ["mnt/a", "mnt/b"]).encode()
    C.same_bytes(sum_lines(dcache, "mnt/b", cwd=base).encode(),
                 want_lines(base, ["mnt/b"]).encode(),
                 "image 2: sum --cache-file (filled by dedup) prints image 2's digest")
    C.same_bytes(sum_lines(scache, "mnt/a", "mnt/b", cwd=base).encode(), want,
                 "image 2: sum --cache-file (filled by sum) prints image 2's digests")
    p = hb("dedup", "--json", "--cache-file", dcache, "mnt", cwd=base)
    C.status(p, 0, "image 2: dedup --cache-file")
    out = groups_of(p)
    C.check(out["groups"] == [] and out["summary"].get("reclaimable_bytes") == 0,
            "image 2: a and b (different bytes) not grouped", clitest.show(p.stdout))
    C.same_bytes(sum_lines(scache, "mnt/a", "mnt/b", cwd=base).encode(), want,
                 "image 2: sum again (its own rows now)")
    m.umount(mnt)
    m.detach(loop)


def same_file_entries(g, a, b):
    """In group g, do names a and b show one device and inode?"""
    f = {x["path"]: (x.get("device"), x.get("inode")) for x in g["files"]}
    return f.get(a) is not None and f.get(a) == f.get(b)


def overlay(m, base):
    root = os.path.join(base, "ov")
    dirs = {d: os.path.join(root, d) for d in ("lower", "upper", "work", "merged")}
    for d in dirs.values():
        os.makedirs(d)
    write(os.path.join(dirs["lower"], "x"), b"precious, only copy\n")
    opts = "lowerdir=%(lower)s,upperdir=%(upper)s,workdir=%(work)s" % dirs
    p = m.mount("-t", "overlay", "overlay", "-o", opts, dirs["merged"])
    if p.returncode != 0:
        skip("overlayfs mount refused: %s" % p.stderr.decode().strip())
    sx, lx = os.stat(os.path.join(dirs["merged"], "x")), os.stat(os.path.join(dirs["lower"], "x"))
    if sx.st_ino != lx.st_ino or sx.st_dev == lx.st_dev:
        skip("this overlayfs does not show lower/x's inode number under its own device "
             "(%d:%d against %d:%d)" % (sx.st_dev, sx.st_ino, lx.st_dev, lx.st_ino))

    p = hb("dedup", "--json", "merged", "lower", cwd=root)
    out = groups_of(p)
    s = out["summary"]
    # Names of one file are listed as hard links are: one distinct file,
    # nothing reclaimable.
    C.check(s.get("reclaimable_bytes") == 0
            and all(x["distinct_files"] == 1 for x in out["groups"]),
            "overlay: merged/x and lower/x (one file) are not duplicates",
            clitest.show(p.stdout))
    C.check(all(same_file_entries(x, "merged/x", "lower/x") for x in out["groups"]
                if {"merged/x", "lower/x"} <= set(group_paths(x))),
            "overlay: merged/x and lower/x, when listed, as names of one file",
            clitest.show(p.stdout))

    write(os.path.join(dirs["merged"], "y"), b"precious, only copy\n")  # in the upper layer
    p = hb("dedup", "--json", "merged", "lower", cwd=root)
    out = groups_of(p)
    mine = [x for x in out["groups"] if "merged/y" in group_paths(x)]
    C.check(len(mine) == 1 and "merged/x" in group_paths(mine[0])
            and mine[0]["distinct_files"] == 2 and mine[0]["reclaimable_bytes"] == 20
            and out["summary"].get("reclaimable_bytes") == 20,
            "overlay: merged/y, a real copy of x, grouped with it as one other file "
            "(20 bytes reclaimable, not 40)", clitest.show(p.stdout))
    if mine and "lower/x" in group_paths(mine[0]):
        C.check(same_file_entries(mine[0], "merged/x", "lower/x"),
                "overlay: lower/x listed as a name of merged/x's file", clitest.show(p.stdout))
    m.umount(dirs["merged"])


def main():
    if os.geteuid() != 0:
        skip("loop images and overlay mounts need root")
    for tool in ("mke2fs", "debugfs", "losetup", "mount", "umount"):
        if shutil.which(tool) is None:
            skip("%s not found" % tool)
    base = tempfile.mkdtemp(prefix="hb-fsid-")
    m = Mounts()
    try:
        p = m.mount("-t", "tmpfs", "-o", "size=64m", "tmpfs", base)
        if p.returncode != 0:
            skip("mounting a tmpfs refused: %s" % p.stderr.decode().strip())
        loop_reuse(m, base)
        overlay(m, base)
    finally:
        m.close()
        shutil.rmtree(base, ignore_errors=True)
    C.finish()


if __name__ == "__main__":
    main()
