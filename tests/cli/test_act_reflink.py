#!/usr/bin/env python3
"""test_act_reflink.py - `hashbatch link --reflink` (and --hard,
--symlink) on an XFS image with reflink, made and loop-mounted here
(root needed: without it, or where mounting is refused, exit 77 saying
why). Asserts: after FIDEDUPERANGE (the default) and after FICLONE
(HASHBATCH_REFLINK=clone) the duplicates map the kept file's physical
extents (FIEMAP, read here with an ioctl), every path keeps its bytes,
the in-place dedupe keeps inode, mode and times, the clone gets the
replaced file's mode and times; a SHA-1 collision pair is not shared; a
file changed after the scan is left alone; a rerun finds the work done;
run as nobody (setpriv), root's duplicate is not turned into nobody's
by the FICLONE fallback.
The image is unmounted and removed at the end, also on failure.

Usage: test_act_reflink.py PATH/TO/hashbatch
"""
import fcntl
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402

HB = clitest.binary()
C = clitest.Checker("act_reflink")
VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors",
                       "collisions")
FS_IOC_FIEMAP = 0xC020660B
FIEMAP_FLAG_SYNC = 1
FIEMAP_EXTENT_SHARED = 0x2000


def extents(path):
    """[(logical, physical, length, flags)] of path, by FIEMAP."""
    n = 64
    req = struct.pack("=QQIIII", 0, 2**64 - 1, FIEMAP_FLAG_SYNC, 0, n, 0) + b"\0" * (56 * n)
    with open(path, "rb") as f:
        res = bytearray(req)
        fcntl.ioctl(f.fileno(), FS_IOC_FIEMAP, res, True)
    mapped = struct.unpack_from("=I", res, 20)[0]
    out = []
    for i in range(mapped):
        lo, ph, ln, _, _, fl = struct.unpack_from("=QQQQQI", res, 32 + 56 * i)
        out.append((lo, ph, ln, fl))
    return out


def shares(a, b):
    ea, eb = extents(a), extents(b)
    return bool(ea) and [e[:3] for e in ea] == [e[:3] for e in eb] and \
        all(e[3] & FIEMAP_EXTENT_SHARED for e in ea + eb)


def hb(*args, cwd=None, env=None):
    return clitest.run([HB] + list(args), cwd=cwd, env=env)


def digests(root):
    out = {}
    for dp, _, files in os.walk(root):
        for n in files:
            p = os.path.join(dp, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = hashlib.sha1(f.read()).hexdigest()
    return out


def make_tree(root, tag):
    d = os.path.join(root, tag)
    os.makedirs(d)
    data = os.urandom(300_000)
    for i in range(3):
        p = os.path.join(d, "f%d" % i)
        with open(p, "wb") as f:
            f.write(data)
        os.chmod(p, 0o600 + i)
        os.utime(p, ns=(1_500_000_000 * 10**9 + i, 1_600_000_000 * 10**9 + i))
    with open(os.path.join(d, "z_changed"), "wb") as f:
        f.write(data)
    return d


def scenario(mnt, tag, env):
    d = make_tree(mnt, tag)
    p = hb("dedup", "--json", "-q", tag, cwd=mnt)
    C.status(p, 0, "%s: dedup --json" % tag)
    with open(os.path.join(mnt, tag + ".json"), "wb") as f:
        f.write(p.stdout)
    plan = json.loads(p.stdout)
    kept = os.path.join(mnt, plan["groups"][0]["files"][0]["path"])
    with open(os.path.join(d, "z_changed"), "r+b") as f:  # after the scan
        f.write(b"X")
    before = digests(mnt)
    st_before = {n: os.lstat(os.path.join(d, n)) for n in os.listdir(d)}
    p = hb("link", "--reflink", tag + ".json", cwd=mnt, env=env)
    C.status(p, 1, "%s: link --reflink (one file changed since the scan)" % tag)
    C.check(b"z_changed" in p.stderr and b"changed since the scan" in p.stderr,
            "%s: the changed file is named" % tag, clitest.show(p.stderr))
    C.check(digests(mnt) == before, "%s: every path keeps its bytes" % tag)
    for g in plan["groups"]:
        for f in g["files"]:
            path = os.path.join(mnt, f["path"])
            name = os.path.basename(path)
            if path == kept:
                continue
            st, old = os.lstat(path), st_before[name]
            if name == "z_changed":
                C.check(not shares(kept, path), "%s: the changed file shares nothing" % tag)
                continue
            C.check(shares(kept, path), "%s: %s shares the kept file's extents" % (tag, name),
                    "%s\n%s" % (extents(kept), extents(path)))
            C.check(st.st_mode == old.st_mode and st.st_mtime_ns == old.st_mtime_ns and
                    st.st_uid == old.st_uid,
                    "%s: %s keeps its mode, owner and mtime" % (tag, name))
            if env is None:
                C.check(st.st_ino == old.st_ino, "%s: FIDEDUPERANGE keeps %s's inode" % (tag, name))
            else:
                C.check(st.st_ino != old.st_ino, "%s: FICLONE made %s anew" % (tag, name))
    p = hb("link", "--reflink", tag + ".json", cwd=mnt, env=env)
    C.check(p.stdout.count(b"already done") == 2, "%s: a rerun finds both done" % tag,
            clitest.show(p.stdout) + clitest.show(p.stderr))


def collision(mnt):
    d = os.path.join(mnt, "coll")
    os.makedirs(d)
    files = []
    for i in (1, 2):
        with open(os.path.join(VECTORS, "shattered-%d.prefix.bin" % i), "rb") as f:
            data = f.read() + b"\0" * 65536  # still colliding; bigger than a block
        p = os.path.join(d, "s%d" % i)
        with open(p, "wb") as f:
            f.write(data)
        st = os.stat(p)
        files.append({"path": "coll/s%d" % i, "device": st.st_dev, "inode": st.st_ino})
    doc = {"groups": [{"size": len(data), "sha1": hashlib.sha1(data).hexdigest(),
                       "files": files}]}
    with open(os.path.join(mnt, "coll.json"), "w") as f:
        json.dump(doc, f)
    before = digests(d)
    for env in (None, clitest.clean_env(HASHBATCH_REFLINK="clone")):
        p = hb("link", "--reflink", "coll.json", cwd=mnt, env=env)
        C.status(p, 1, "collision pair, --reflink%s" % (" (clone)" if env else ""))
        C.check(b"differ" in p.stderr, "collision: said", clitest.show(p.stderr))
        C.check(digests(d) == before, "collision: both keep their bytes")
        C.check(not shares(os.path.join(d, "s1"), os.path.join(d, "s2")),
                "collision: nothing shared")


def others(mnt):
    """--hard and --symlink on XFS too."""
    d = make_tree(mnt, "hs")
    os.unlink(os.path.join(d, "z_changed"))
    p = hb("dedup", "--json", "-q", "hs", cwd=mnt)
    with open(os.path.join(mnt, "hs.json"), "wb") as f:
        f.write(p.stdout)
    before = digests(mnt)
    p = hb("link", "--hard", "hs.json", cwd=mnt)
    C.status(p, 0, "xfs: link --hard")
    C.check(digests(mnt) == before, "xfs: --hard keeps the bytes")
    inos = {os.lstat(os.path.join(d, n)).st_ino for n in os.listdir(d)}
    C.check(len(inos) == 1, "xfs: --hard made one inode of three")


def not_root(mnt):
    """Without root, --reflink's FICLONE fallback cannot give a copy
    another user's ownership: root's duplicate in nobody's folder is left
    alone, owned by root, with a message; it used to become nobody's."""
    if shutil.which("setpriv") is None:
        C.fail("setpriv not found (util-linux): the non-root case cannot run")
        return
    import pwd
    nobody = pwd.getpwnam("nobody")
    d = os.path.join(mnt, "own")
    os.makedirs(d)
    data = os.urandom(200_000)
    for name in ("k", "r"):
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        os.chmod(os.path.join(d, name), 0o644)
    os.chown(d, nobody.pw_uid, nobody.pw_gid)
    os.chown(os.path.join(d, "k"), nobody.pw_uid, nobody.pw_gid)
    plan = {"groups": [{"size": len(data), "sha1": hashlib.sha1(data).hexdigest(), "files": [
        {"path": "own/" + n, "device": os.stat(os.path.join(d, n)).st_dev,
         "inode": os.stat(os.path.join(d, n)).st_ino} for n in ("k", "r")]}]}
    with open(os.path.join(mnt, "own.json"), "w") as f:
        json.dump(plan, f)
    os.chmod(os.path.join(mnt, "own.json"), 0o644)
    before = os.stat(os.path.join(d, "r"))
    p = clitest.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", HB,
                     "link", "--reflink", "own.json"], cwd=mnt)
    C.status(p, 1, "not root: link --reflink of root's duplicate")
    after = os.stat(os.path.join(d, "r"))
    C.check(after.st_uid == 0 and after.st_ino == before.st_ino,
            "not root: root's duplicate keeps its owner (left alone)",
            "uid %d, inode %d -> %d\n%s" % (after.st_uid, before.st_ino, after.st_ino,
                                             clitest.show(p.stderr)))
    C.check(b"owner" in p.stderr, "not root: the owner is said to be why",
            clitest.show(p.stderr))
    C.check(sorted(os.listdir(d)) == ["k", "r"], "not root: no temporary left",
            str(os.listdir(d)))


def sh(*args):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def main():
    if os.geteuid() != 0:
        print("skipped: mounting an XFS image needs root", file=sys.stderr)
        sys.exit(clitest.SKIP)
    for tool in ("mkfs.xfs", "mount", "umount"):
        if shutil.which(tool) is None:
            print("skipped: %s not found" % tool, file=sys.stderr)
            sys.exit(clitest.SKIP)
    base = tempfile.mkdtemp(prefix="hb-reflink-")
    img, mnt = os.path.join(base, "img"), os.path.join(base, "mnt")
    mounted = False
    try:
        os.mkdir(mnt)
        with open(img, "wb") as f:
            f.truncate(512 << 20)
        p = sh("mkfs.xfs", "-q", "-m", "reflink=1", img)
        if p.returncode != 0:
            print("skipped: mkfs.xfs -m reflink=1 failed: %s" % p.stderr.decode(),
                  file=sys.stderr)
            sys.exit(clitest.SKIP)
        p = sh("mount", "-o", "loop", img, mnt)
        if p.returncode != 0:
            print("skipped: mount -o loop refused: %s" % p.stderr.decode().strip(),
                  file=sys.stderr)
            sys.exit(clitest.SKIP)
        mounted = True
        scenario(mnt, "dedupe", None)
        scenario(mnt, "clone", clitest.clean_env(HASHBATCH_REFLINK="clone"))
        if os.path.exists(os.path.join(VECTORS, "shattered-1.prefix.bin")):
            collision(mnt)
        else:
            C.fail("tests/vectors/collisions/shattered-*.prefix.bin missing")
        others(mnt)
        not_root(mnt)
    finally:
        if mounted:
            sh("umount", mnt)
        shutil.rmtree(base, ignore_errors=True)
    C.finish()


if __name__ == "__main__":
    main()
