#!/usr/bin/env python3
"""test_safe_tmpname.py - issue 27, defect 3 and its smaller items: the
temporary names of `hashbatch link`.

1. An unrelated file at the old temporary name `.f.hashbatch-tmp` beside
   a duplicate `f` - smaller than f with other bytes, the same size as f
   with other bytes, a hard link of a file the plan never names, a
   symbolic link - must survive `link --reflink` (HASHBATCH_REFLINK=clone),
   `link --hard` and `link --symlink` as it was (inode, type, bytes or
   target, link count), and must not stop the link: the temporaries are
   fresh names, so f is linked to its kept twin all the same (for
   --reflink only where the filesystem shares extents: an XFS image with
   reflink when root can loop-mount one, else the plain filesystem, where
   only the survival is asserted). Every path keeps its bytes.
2. Names of 240, 241 and 255 bytes (the old temporary name, 15 bytes
   longer, fits only up to 240) are
   linked by each of the three, or the message names the cause ("File
   name too long"), never "temporary name is taken".
3. A temporary left by an interrupted run: `link --hard` is stopped
   (SIGSTOP) at random moments until a name the tree did not have is
   seen, then SIGKILLed; a rerun - `link --hard` on one tree, `remove` on
   another - leaves no name the tree did not have (none containing
   "hashbatch") and every content in place (what it claims done, done).
   Whatever the new temporaries are called, they are names the tree did
   not have.

Usage: test_safe_tmpname.py PATH/TO/hashbatch
"""
import fcntl
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402

HB = clitest.binary()
C = clitest.Checker("safe_tmpname")
CLONE = clitest.clean_env(HASHBATCH_REFLINK="clone")
ACTIONS = [("link --reflink", CLONE, "link --reflink (clone)"),
           ("link --hard", None, "link --hard"),
           ("link --symlink", None, "link --symlink")]
FS_IOC_FIEMAP = 0xC020660B


def sh(*args):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def extents(path):
    n = 64
    req = bytearray(struct.pack("=QQIIII", 0, 2**64 - 1, 1, 0, n, 0) + b"\0" * (56 * n))
    with open(path, "rb") as f:
        fcntl.ioctl(f.fileno(), FS_IOC_FIEMAP, req, True)
    mapped = struct.unpack_from("=I", req, 20)[0]
    return [struct.unpack_from("=QQQQQI", req, 32 + 56 * i)[:3] for i in range(mapped)]


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def linked(kind, kept, other):
    """Is other linked to kept the way kind makes links?"""
    try:
        if kind == "link --hard":
            return os.lstat(other).st_ino == os.lstat(kept).st_ino
        if kind == "link --symlink":
            return os.path.islink(other) and os.path.samefile(other, kept)
        ea, eb = extents(kept), extents(other)
        return not os.path.islink(other) and bool(ea) and ea == eb
    except OSError:
        return False


def plan(d, *dirs):
    p = clitest.run([HB, "dedup", "--json", "-q", "--backend", "cpu"] + list(dirs), cwd=d)
    C.status(p, 0, "dedup --json in %s" % d)
    path = os.path.join(d, "plan.json")
    with open(path, "wb") as f:
        f.write(p.stdout)
    return path


# 1. A file squatting on the old temporary name ---------------------------

def squatter(d, variant, size):
    """Puts the variant at d/b/.f.hashbatch-tmp; returns a description
    (what to compare afterwards)."""
    sq = os.path.join(d, "b", ".f.hashbatch-tmp")
    if variant == "smaller, other bytes":
        write(sq, b"my only copy of my notes\n")
    elif variant == "same size, other bytes":
        write(sq, b"N" * size)
    elif variant == "hard link of a file outside the plan":
        other = os.path.join(d, "elsewhere", "notes")
        write(other, b"notes kept elsewhere too\n")
        os.link(other, sq)
    elif variant == "symbolic link":
        write(os.path.join(d, "elsewhere", "target"), b"a symlink's target\n")
        os.symlink("../elsewhere/target", sq)
    return state(sq)


def state(path):
    st = os.lstat(path)
    if os.path.islink(path):
        return ("link", st.st_ino, st.st_nlink, os.readlink(path))
    return ("file", st.st_ino, st.st_nlink, read(path))


def squat_case(base, n, variant, action, env, tag, shares_extents):
    what = "%s, squatter %s" % (tag, variant)
    d = os.path.join(base, "sq%d" % n)
    data = os.urandom(5000)
    write(os.path.join(d, "a", "f"), data)
    write(os.path.join(d, "b", "f"), data)
    pl = plan(d, "a", "b")
    before = squatter(d, variant, len(data))
    p = clitest.run([HB] + action.split() + [pl], cwd=d, env=env)
    sq = os.path.join(d, "b", ".f.hashbatch-tmp")
    alive = os.path.lexists(sq)
    C.check(alive, "%s: the file at .f.hashbatch-tmp was deleted" % what,
            "stdout: %sstderr: %s" % (clitest.show(p.stdout), clitest.show(p.stderr)))
    if alive:
        now = state(sq)
        C.check(now == before, "%s: the file at .f.hashbatch-tmp is as it was" % what,
                "before %r\nafter  %r" % (before[:3], now[:3]))
    ok = all(os.path.exists(os.path.join(d, s, "f")) and read(os.path.join(d, s, "f")) == data
             for s in ("a", "b"))
    C.check(ok, "%s: a/f and b/f keep their bytes" % what)
    if action != "link --reflink" or shares_extents:
        C.check(linked(action, os.path.join(d, "a", "f"), os.path.join(d, "b", "f")),
                "%s: b/f is linked to a/f all the same (fresh temporary names)" % what,
                "exit %d\nstdout: %sstderr: %s"
                % (p.returncode, clitest.show(p.stdout), clitest.show(p.stderr)))
    print("%s: exit %d, squatter %s" % (what, p.returncode, "kept" if alive else "DELETED"))


# 2. Long names -----------------------------------------------------------

def long_names(base, fsroot_shares):
    for length in (240, 241, 255):
        for action, env, tag in ACTIONS:
            what = "%s, a name of %d bytes" % (tag, length)
            d = tempfile.mkdtemp(prefix="long-", dir=base)
            name = ("n%d-" % length + "x" * 300)[:length]
            data = os.urandom(3000)
            write(os.path.join(d, "a", name), data)
            write(os.path.join(d, "b", name), data)
            pl = plan(d, "a", "b")
            p = clitest.run([HB] + action.split() + [pl], cwd=d, env=env)
            kept, other = os.path.join(d, "a", name), os.path.join(d, "b", name)
            done = linked(action, kept, other)
            err = p.stderr.decode("utf-8", "replace").replace(name, "NAME")
            can_share = action != "link --reflink" or fsroot_shares
            if done:
                print("%s: linked" % what)
            else:
                print("%s: not linked, exit %d: %s" % (what, p.returncode, err.strip()))
            C.check(done or not can_share or "File name too long" in err,
                    "%s: linked, or the message names the cause (File name too long)" % what,
                    err)
            C.check("temporary name is taken" not in err,
                    "%s: not \"temporary name is taken\"" % what, err)
            C.check(read(kept) == data and read(other) == data,
                    "%s: both names keep their bytes" % what)
            C.check(sorted(os.listdir(os.path.join(d, "b"))) == [name],
                    "%s: nothing else left beside the duplicate" % what,
                    repr(os.listdir(os.path.join(d, "b"))))


# 3. Leftovers of an interrupted run -------------------------------------

PAIRS = 300


def make_pairs(d):
    want = {}
    for i in range(PAIRS):
        data = (b"pair %d " % i) * (20 + i % 50)
        for side in ("x", "y"):
            rel = "%s/%04d" % (side, i)
            write(os.path.join(d, rel), data)
            want[rel] = data
    return want


def names(d):
    return {os.path.relpath(os.path.join(dp, n), d)
            for dp, dns, fns in os.walk(d) for n in fns + dns}


def stopped(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("T", "t", "Z", "X")
    except OSError:
        return True


def interrupt(d, rng, limit):
    """Runs link --hard on d's plan, stopping it at random moments until a
    name d did not have appears, then kills it. Returns the new names
    seen, or [] when the run ended first."""
    tree = os.path.join(d, "t")
    original = names(tree)
    proc = subprocess.Popen([HB, "link", "--hard", "plan.json"], cwd=d, env=clitest.clean_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    extra = []
    try:
        while proc.poll() is None and time.monotonic() < limit:
            time.sleep(rng.uniform(0, 0.002))
            try:
                os.kill(proc.pid, signal.SIGSTOP)
            except ProcessLookupError:
                break
            t = time.monotonic()
            while not stopped(proc.pid) and time.monotonic() - t < 1:
                pass
            extra = sorted(names(tree) - original)
            if extra:
                proc.kill()
                break
            os.kill(proc.pid, signal.SIGCONT)
    finally:
        if proc.poll() is None and not extra:
            os.kill(proc.pid, signal.SIGCONT)
        if extra:
            proc.kill()
        proc.wait()
    return extra


def leftovers(base, rerun, rng, limit):
    what = "interrupted link --hard, then %s" % rerun
    extra, tries, d = [], 0, None
    while not extra and time.monotonic() < limit:
        tries += 1
        d = os.path.join(base, "kill-%s-%d" % (rerun.split()[-1].strip("-"), tries))
        want = {os.path.join("t", k): v for k, v in make_pairs(os.path.join(d, "t")).items()}
        plan(d, "t")
        extra = interrupt(d, rng, limit)
    C.check(bool(extra), "%s: a temporary was caught in the tree after a SIGKILL "
            "(%d tries)" % (what, tries))
    if not extra:
        return
    print("%s: after %d tries, SIGKILL left %s" % (what, tries, " ".join(extra)))
    lost = [p for p, v in want.items()
            if not os.path.exists(os.path.join(d, p)) or read(os.path.join(d, p)) != v]
    C.check(not lost, "%s: no content lost by the kill" % what, " ".join(lost[:10]))
    p = clitest.run([HB] + rerun.split() + ["plan.json"], cwd=d)
    C.status(p, 0, "%s: the rerun" % what)
    tree = os.path.join(d, "t")
    now = names(tree)
    original = {os.path.relpath(p, "t") for p in want} | {"x", "y"}
    left = sorted(now - original)
    print("%s: the rerun left %d new names: %s" % (what, len(left), " ".join(left[:5])))
    C.check(not left, "%s: the rerun leaves no name the tree did not have" % what,
            " ".join(left[:10]))
    C.check(not [n for n in now if "hashbatch" in n],
            "%s: no name containing \"hashbatch\" is left" % what)
    bad = []
    for rel, v in want.items():
        path = os.path.join(d, rel)
        if rerun == "remove" and rel.startswith("t/y/") and not os.path.lexists(path):
            continue
        if not os.path.exists(path) or read(path) != v:
            bad.append(rel)
    C.check(not bad, "%s: every content in place after the rerun" % what, " ".join(bad[:10]))
    if rerun == "remove":
        gone = sum(not os.path.lexists(os.path.join(d, "t/y/%04d" % i)) for i in range(PAIRS))
        C.check(gone + sum(os.path.exists(os.path.join(d, "t/y/%04d" % i)) and
                           os.lstat(os.path.join(d, "t/y/%04d" % i)).st_ino ==
                           os.lstat(os.path.join(d, "t/x/%04d" % i)).st_ino
                           for i in range(PAIRS)) == PAIRS,
                "%s: every duplicate removed or a hard link of its twin" % what)


def main():
    seed = int(os.environ.get("HB_TEST_SEED", str(int(time.time()))))
    print("seed %d (HB_TEST_SEED)" % seed)
    rng = random.Random(seed)
    t0 = time.monotonic()
    work = tempfile.mkdtemp(prefix="hb-safe-tmpname-")
    mnt, mounted, why = os.path.join(work, "xfs"), False, None
    try:
        # the reflink cases on an XFS image with reflink where root can mount one
        if os.geteuid() != 0:
            why = "not root"
        elif shutil.which("mkfs.xfs") is None:
            why = "mkfs.xfs not found"
        else:
            img = os.path.join(work, "xfs.img")
            os.mkdir(mnt)
            with open(img, "wb") as f:
                f.truncate(300 << 20)
            p = sh("mkfs.xfs", "-q", "-m", "reflink=1", img)
            if p.returncode != 0:
                why = "mkfs.xfs -m reflink=1 failed"
            elif sh("mount", "-o", "loop", img, mnt).returncode != 0:
                why = "mount -o loop refused"
            else:
                mounted = True
        plain = os.path.join(work, "plain")
        os.mkdir(plain)
        if not mounted:
            print("NOTE: no reflink XFS image (%s): --reflink runs on the plain filesystem, "
                  "where only the squatter's survival and the bytes are asserted" % why)
        n = 0
        for variant in ("smaller, other bytes", "same size, other bytes",
                        "hard link of a file outside the plan", "symbolic link"):
            for action, env, tag in ACTIONS:
                n += 1
                on = mnt if mounted and action == "link --reflink" else plain
                squat_case(on, n, variant, action, env, tag,
                           mounted and action == "link --reflink")
        long_names(mnt if mounted else plain, mounted)
        limit = time.monotonic() + 60
        leftovers(plain, "link --hard", rng, limit)
        leftovers(plain, "remove", rng, time.monotonic() + 60)
    finally:
        clitest.unmount_and_remove(work, mnt, mounted)
    print("whole test: %.1f s" % (time.monotonic() - t0))
    C.finish()


if __name__ == "__main__":
    main()
