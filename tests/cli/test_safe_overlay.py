#!/usr/bin/env python3
"""test_safe_overlay.py - issue 27, defect 2: overlayfs shows a file of
its lower layer under another st_dev with the same st_ino; the merged
name and the lower name are one file, never duplicates.

As root (else exit 77 saying why; also when an overlay cannot be
mounted): lower/x is the only copy of its bytes; merged is an overlay of
lower (with upper, work).

1. `dedup --json merged lower` lists no group holding both merged/x and
   lower/x (nor any group at all: there is one file).
2. A hand-written plan that does list merged/x and lower/x as one group
   (device and inode as os.stat reports them, in dedup's JSON layout) is
   given to `remove --keep path=merged`, `remove --keep path=lower`,
   `link --symlink` and `link --hard`, each on a fresh overlay: the
   action exits 1 with a message on stderr (not 0), and after an unmount
   and a remount lower/x and merged/x are regular files holding the
   bytes (not gone, not a symbolic link loop).

The overlay is unmounted and every folder removed at the end, also on
failure.

Usage: test_safe_overlay.py PATH/TO/hashbatch
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402

HB = clitest.binary()
C = clitest.Checker("safe_overlay")
DATA = b"precious, the only copy of these bytes\n" * 100


def sh(*args):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


class Overlay:
    def __init__(self, base):
        self.base = base
        for d in ("lower", "upper", "work", "merged"):
            os.makedirs(os.path.join(base, d))
        with open(os.path.join(base, "lower", "x"), "wb") as f:
            f.write(DATA)
        self.mounted = False

    def mount(self):
        b = self.base
        p = sh("mount", "-t", "overlay", "overlay", "-o",
               "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work" % (b, b, b),
               os.path.join(b, "merged"))
        self.mounted = p.returncode == 0
        return p

    def umount(self):
        if not self.mounted:
            return True
        for _ in range(10):
            if sh("umount", os.path.join(self.base, "merged")).returncode == 0:
                self.mounted = False
                return True
            time.sleep(0.3)
        return False


def hb(args, cwd):
    return clitest.run([HB] + args, cwd=cwd, timeout=120)


def dedup_case(base):
    ov = Overlay(os.path.join(base, "dedup"))
    try:
        p = ov.mount()
        if p.returncode != 0:
            return p
        st_m = os.stat(os.path.join(ov.base, "merged", "x"))
        st_l = os.stat(os.path.join(ov.base, "lower", "x"))
        print("merged/x: device %d inode %d; lower/x: device %d inode %d"
              % (st_m.st_dev, st_m.st_ino, st_l.st_dev, st_l.st_ino))
        p = hb(["dedup", "--json", "-q", "--backend", "cpu", "merged", "lower"], ov.base)
        C.check(p.returncode in (0, 1), "dedup --json merged lower: exit %d" % p.returncode,
                clitest.show(p.stderr))
        try:
            groups = json.loads(p.stdout)["groups"]
        except (ValueError, KeyError) as e:
            C.fail("dedup --json merged lower: not a plan (%s)" % e, clitest.show(p.stdout))
            return None
        both = [g for g in groups
                if {"merged/x", "lower/x"} <= {f["path"] for f in g["files"]}]
        print("dedup --json merged lower: %d groups, %d with merged/x and lower/x"
              % (len(groups), len(both)))
        C.check(not both, "dedup --json merged lower: merged/x and lower/x, one file, "
                "are listed as duplicates", clitest.show(p.stdout))
        C.check(not groups, "dedup --json merged lower: no group at all (one file), %d"
                % len(groups))
    finally:
        C.check(ov.umount(), "dedup: the overlay unmounts")
    return None


def plan_of(ov):
    files = []
    for rel in ("merged/x", "lower/x"):
        st = os.stat(os.path.join(ov.base, rel))
        files.append({"path": rel, "device": st.st_dev, "inode": st.st_ino,
                      "mtime_ns": st.st_mtime_ns})
    doc = {"groups": [{"size": len(DATA), "sha1": hashlib.sha1(DATA).hexdigest(),
                       "distinct_files": 2, "hard_links_only": False,
                       "reclaimable_bytes": len(DATA), "files": files}],
           "collisions": [], "errors": [],
           "summary": {"files_scanned": 2, "groups": 1, "hard_link_groups": 0,
                       "duplicate_files": 1, "reclaimable_bytes": len(DATA),
                       "collisions": 0, "errors": 0}}
    path = os.path.join(os.path.dirname(ov.base), os.path.basename(ov.base) + ".json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def readable(path):
    try:
        if os.path.islink(path):
            return "a symbolic link to %r" % os.readlink(path)
        with open(path, "rb") as f:
            return "its bytes" if f.read() == DATA else "other bytes"
    except OSError as e:
        return e.strerror


def action_case(base, n, args):
    what = " ".join(args)
    ov = Overlay(os.path.join(base, "act%d" % n))
    try:
        p = ov.mount()
        if not C.check(p.returncode == 0, "%s: the overlay mounts" % what,
                       clitest.show(p.stderr)):
            return
        plan = plan_of(ov)
        p = hb(args + [plan], ov.base)
        print("%s: exit %d\n  stdout: %s\n  stderr: %s"
              % (what, p.returncode, p.stdout.decode("utf-8", "replace").strip(),
                 p.stderr.decode("utf-8", "replace").strip()))
        C.check(p.returncode == 1, "%s: exit status %d, expected 1" % (what, p.returncode))
        C.check(p.stderr.strip() != b"", "%s: a message on stderr" % what)
        C.check(not any(v in p.stdout for v in (b"removed:", b"symlinked:", b"hard-linked:")),
                "%s: nothing claimed done" % what, clitest.show(p.stdout))
        if not C.check(ov.umount(), "%s: the overlay unmounts" % what):
            return
        p = ov.mount()
        if not C.check(p.returncode == 0, "%s: the overlay mounts again" % what,
                       clitest.show(p.stderr)):
            return
        for rel in ("lower/x", "merged/x"):
            got = readable(os.path.join(ov.base, rel))
            C.check(got == "its bytes", "%s: after a remount %s holds the bytes (it is: %s)"
                    % (what, rel, got))
    finally:
        ov.umount()


def main():
    if os.geteuid() != 0:
        print("skipped: mounting an overlay needs root", file=sys.stderr)
        sys.exit(clitest.SKIP)
    for tool in ("mount", "umount"):
        if shutil.which(tool) is None:
            print("skipped: %s not found" % tool, file=sys.stderr)
            sys.exit(clitest.SKIP)
    t0 = time.monotonic()
    base = tempfile.mkdtemp(prefix="hb-safe-overlay-")
    try:
        p = dedup_case(base)
        if p is not None:
            print("skipped: mount -t overlay refused: %s" % p.stderr.decode().strip(),
                  file=sys.stderr)
            sys.exit(clitest.SKIP)
        for n, args in enumerate((["remove", "--keep", "path=merged"],
                                  ["remove", "--keep", "path=lower"],
                                  ["link", "--symlink"],
                                  ["link", "--hard"])):
            action_case(base, n, args)
    finally:
        # never remove a folder an overlay may still be mounted on
        mounted = [line.split()[1] for line in open("/proc/self/mounts")
                   if line.split()[1].startswith(base + "/")]
        for m in mounted:
            sh("umount", m)
        if not [line for line in open("/proc/self/mounts")
                if line.split()[1].startswith(base + "/")]:
            shutil.rmtree(base, ignore_errors=True)
        else:
            print("left %s: an overlay is still mounted there" % base)
    print("whole test: %.1f s" % (time.monotonic() - t0))
    C.finish()


if __name__ == "__main__":
    main()
