"""test_disk_order.py - `hashbatch dedup` reads files in the order of
their place on a rotational disk, with readers chosen per device kind,
unless the page cache holds them.

On an ext4 image mounted on a loop device (made and mounted here, as
root; skipped visibly where that is not permitted), files are written in
a shuffled order, each synced, so their blocks lie in an order unlike
their inode numbers'. With the loop device marked rotational (its
queue/rotational in sysfs), a warm run (the files just written and read
once) must serve every read from the page cache without waiting
(RWF_NOWAIT), `dedup -v` says so, and no read goes through the ordered
readers. After the caches are dropped (sync, then 3 into
/proc/sys/vm/drop_caches; skipped visibly where that is not writable), a
cold run must send its reads through the ordered readers: every batch of
them (the testing aid HASHBATCH_DEBUG_READ_ORDER prints the ordered part
of each dd_read_all call on stderr) must follow the physical offsets of
the files' first extents, as read here with FS_IOC_FIEMAP. Warm and
cold, the groups are those of --io-threads 1. Marked solid-state, the
order is the inode numbers'. Files on two devices at once (the image and a tmpfs) are read
device by device, each in its own order. `dedup -v` says which orders
and how many readers it used. On the ordinary file system, --io-threads 1
and 7 give the same groups as the default, and a bad --io-threads is a
usage error (exit 2).

Usage: test_disk_order.py PATH/TO/hashbatch
"""
import array
import fcntl
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402
import dedupcheck as dc  # noqa: E402

TIMEOUT = 60
FS_IOC_FIEMAP = 0xC020660B  # _IOWR('f', 11, struct fiemap)
FIEMAP_HEAD = "=QQIIII"     # fm_start, fm_length, fm_flags, mapped, count, reserved
FIEMAP_EXTENT = "=QQQQQIIII"  # logical, physical, length, 2 reserved, flags, 3 reserved
NFILES = 24
FILE_SIZE = 64 * 1024


def first_extent(path):
    """The physical offset of path's first extent (FIEMAP), or None."""
    head = struct.pack(FIEMAP_HEAD, 0, 0xFFFFFFFFFFFFFFFF, 0, 0, 1, 0)
    buf = array.array("B", head + bytes(struct.calcsize(FIEMAP_EXTENT)))
    with open(path, "rb") as f:
        fcntl.ioctl(f.fileno(), FS_IOC_FIEMAP, buf, True)
    mapped = struct.unpack_from(FIEMAP_HEAD, buf)[3]
    if mapped == 0:
        return None
    ext = struct.unpack_from(FIEMAP_EXTENT, buf, struct.calcsize(FIEMAP_HEAD))
    return ext[1]


def sh(*args):
    return subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=TIMEOUT)


def skip(why):
    print("SKIP: %s" % why, file=sys.stderr)
    sys.exit(clitest.SKIP)


class Image:
    """An ext4 file system on a loop device, mounted at self.mnt."""

    def __init__(self, work):
        self.img = os.path.join(work, "disk.img")
        self.mnt = os.path.join(work, "mnt")
        self.loop = None
        self.mounted = False
        os.mkdir(self.mnt)
        with open(self.img, "wb") as f:
            f.truncate(64 << 20)

    def setup(self):
        """Returns None, or why it cannot be done here."""
        if os.geteuid() != 0:
            return "not root: cannot attach a loop device"
        for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
            if shutil.which(tool) is None:
                return "%s is not installed" % tool
        p = sh("mkfs.ext4", "-q", "-F", "-O", "^has_journal", self.img)
        if p.returncode != 0:
            return "mkfs.ext4 failed: %s" % p.stderr.decode(errors="replace").strip()
        p = sh("losetup", "--find", "--show", self.img)
        if p.returncode != 0:
            return "losetup failed: %s" % p.stderr.decode(errors="replace").strip()
        self.loop = p.stdout.decode().strip()
        p = sh("mount", "-t", "ext4", self.loop, self.mnt)
        if p.returncode != 0:
            return "mount failed: %s" % p.stderr.decode(errors="replace").strip()
        self.mounted = True
        return None

    def rotational_flag(self):
        return "/sys/block/%s/queue/rotational" % os.path.basename(self.loop)

    def set_rotational(self, value):
        """Marks the loop device rotational (1) or not (0); False when sysfs
        refuses."""
        try:
            with open(self.rotational_flag(), "w") as f:
                f.write("%d\n" % value)
            with open(self.rotational_flag()) as f:
                return f.read().strip() == str(value)
        except OSError:
            return False

    def close(self):
        if self.mounted:
            sh("umount", self.mnt)
        if self.loop:
            sh("losetup", "-d", self.loop)


def make_files(folder, rng, tag):
    """NFILES files of FILE_SIZE bytes, one first 4 KiB for all (so every
    one is read whole too), in identical pairs; created in name order (so
    inode numbers follow the names) and then written in a shuffled order,
    each synced, so their blocks are allocated in that order."""
    head = rng.randbytes(4096)
    bodies = [rng.randbytes(FILE_SIZE - 4096) for _ in range(NFILES // 2)]
    names = [os.path.join(folder, "%s%02d" % (tag, i)) for i in range(NFILES)]
    for n in names:
        open(n, "wb").close()
    order = list(range(NFILES))
    rng.shuffle(order)
    for i in order:
        with open(names[i], "r+b") as f:
            f.write(head + bodies[i // 2])
            f.flush()
            os.fsync(f.fileno())
    return names


def read_orders(stderr):
    """{call: [path, ...]} from the read-order trace."""
    calls = {}
    for line in stderr.decode("utf-8", "replace").splitlines():
        m = re.match(r"hashbatch: debug: read order (\d+) (\d+) (.*)$", line)
        if m:
            calls.setdefault(int(m.group(1)), []).append(m.group(3))
    return calls


def traced_dedup(exe, args):
    env = clitest.clean_env(HASHBATCH_DEBUG_READ_ORDER="1")
    return clitest.run([exe, "dedup", "-v"] + args, env=env, timeout=TIMEOUT)


def check_order(chk, calls, key, what):
    """Every call's order is sorted by key; at least one call was traced."""
    chk.check(len(calls) > 0, "%s: no read order traced" % what)
    for call, paths in sorted(calls.items()):
        keys = [key(p) for p in paths]
        chk.check(keys == sorted(keys), "%s: call %d not in order" % (what, call),
                  "\n".join("  %s %s" % (k, p) for k, p in zip(keys, paths)))


def reads_line(stderr):
    m = re.search(rb"^hashbatch: reads: (.*)$", stderr, re.M)
    return m.group(1).decode() if m else None


def reads_count(line, what):
    """The number before `what` in the -v reads line, or None."""
    m = re.search(r"\b(\d+) %s" % re.escape(what), line or "")
    return int(m.group(1)) if m else None


def drop_caches():
    """Writes back and drops the page cache (and dentries and inodes);
    None, or why it cannot be done here."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as e:
        return "cannot drop the caches: /proc/sys/vm/drop_caches: %s" % e.strerror
    return None


def check_same_groups(chk, exe, root, proc, what):
    """proc's groups (dedup -z output) are those of --io-threads 1, and
    there are NFILES / 2 of them."""
    one = clitest.run([exe, "dedup", "-z", "-q", "--io-threads", "1", root], timeout=TIMEOUT)
    chk.status(one, proc.returncode, "%s: --io-threads 1" % what)
    got, want = dc.parse_zero(proc.stdout), dc.parse_zero(one.stdout)
    chk.check(len(got) == NFILES // 2, "%s: %d groups" % (what, NFILES // 2),
              clitest.show(proc.stdout))
    chk.check(got == want, "%s: the groups of --io-threads 1" % what,
              "%r\n%r" % (got, want))


def check_warm(chk, exe, img, names):
    """Just written and read once: every read from the page cache."""
    for n in names:
        with open(n, "rb") as f:
            f.read()
    proc = traced_dedup(exe, ["-z", img.mnt])
    chk.status(proc, 0, "warm dedup on the rotational image")
    calls = read_orders(proc.stderr)
    chk.check(sum(len(v) for v in calls.values()) == 0,
              "warm: no read through the ordered readers traced", repr(calls))
    line = reads_line(proc.stderr)
    chk.check(reads_count(line, "file reads from the page cache without waiting") == 2 * NFILES
              and reads_count(line, "through the ordered readers") == 0,
              "warm: -v says all %d reads came from the page cache" % (2 * NFILES), repr(line))
    check_same_groups(chk, exe, img.mnt, proc, "warm")


def check_cold(chk, exe, img, phys):
    """After the caches are dropped: reads through the ordered readers, in
    physical order. Returns None, or why it was skipped."""
    why = drop_caches()
    if why is not None:
        return why
    proc = traced_dedup(exe, ["-z", img.mnt])
    chk.status(proc, 0, "cold dedup on the rotational image")
    calls = read_orders(proc.stderr)
    check_order(chk, calls, lambda p: phys[p], "cold: physical order")
    traced = sum(len(v) for v in calls.values())
    chk.check(traced >= NFILES, "cold: at least the %d prefixes traced" % NFILES, repr(calls))
    line = reads_line(proc.stderr)
    cached = reads_count(line, "file reads from the page cache without waiting")
    ordered = reads_count(line, "through the ordered readers")
    chk.check(ordered is not None and ordered >= NFILES and ordered == traced
              and cached is not None and cached + ordered == 2 * NFILES
              and reads_count(line, "in physical order by FIEMAP") == ordered
              and "1 reader thread per rotational disk" in line,
              "cold: -v counts %d ordered reads (all in physical order, one reader)"
              % traced, repr(line))
    chk.check(drop_caches() is None, "cold: caches dropped again")  # --io-threads 1 cold too
    check_same_groups(chk, exe, img.mnt, proc, "cold")
    return None


def check_physical(chk, exe, img, names):
    """Returns None, or why the cold part was skipped."""
    phys = {n: first_extent(n) for n in names}
    ino = {n: os.stat(n).st_ino for n in names}
    if any(v is None for v in phys.values()):
        chk.fail("a synced file has no extent: %r" % phys)
        return None
    by_phys = sorted(names, key=lambda n: phys[n])
    by_ino = sorted(names, key=lambda n: ino[n])
    if by_phys == by_ino:
        skip("the allocator placed the files in inode order: the test cannot tell "
             "physical order from inode order on this kernel")
    if not img.set_rotational(1):
        skip("cannot mark %s rotational in sysfs" % img.loop)
    check_warm(chk, exe, img, names)
    skipped = check_cold(chk, exe, img, phys)

    if not img.set_rotational(0):
        chk.fail("cannot mark %s solid-state again" % img.loop)
        return skipped
    proc = traced_dedup(exe, [img.mnt])
    chk.status(proc, 0, "dedup on the solid-state image")
    check_order(chk, read_orders(proc.stderr), lambda p: ino[p], "solid-state: inode order")
    line = reads_line(proc.stderr)
    chk.check(line is not None and "FIEMAP skipped" in line
              and reads_count(line, "on solid-state or unknown disks") == 2 * NFILES
              and reads_count(line, "in physical order by FIEMAP") == 0
              and reads_count(line, "file reads from the page cache without waiting") == 0,
              "solid-state: -v says FIEMAP and the cache pass were skipped", repr(line))
    return skipped


def check_two_devices(chk, exe, img, names, work, rng):
    """Image (rotational) and tmpfs (anonymous device: solid-state) in one
    run: each device's files contiguous in each call, each in its order."""
    shm = os.path.join(work, "shm")
    os.mkdir(shm)
    p = sh("mount", "-t", "tmpfs", "tmpfs", shm)
    if p.returncode != 0:
        print("note: no tmpfs mount (%s): two-device check skipped"
              % p.stderr.decode(errors="replace").strip(), file=sys.stderr)
        return
    try:
        other = make_files(shm, rng, "t")
        img.set_rotational(1)
        phys = {n: first_extent(n) for n in names}
        ino = {n: os.stat(n).st_ino for n in other}
        proc = traced_dedup(exe, [img.mnt, shm])
        chk.status(proc, 0, "dedup on two devices")
        calls = read_orders(proc.stderr)
        chk.check(len(calls) > 0, "two devices: traced")
        for call, paths in calls.items():
            dev = [p.startswith(shm) for p in paths]
            changes = sum(1 for a, b in zip(dev, dev[1:]) if a != b)
            chk.check(changes <= 1, "two devices: call %d reads device by device" % call,
                      "\n".join(paths))
            mine = [p for p in paths if not p.startswith(shm)]
            theirs = [p for p in paths if p.startswith(shm)]
            chk.check([phys[p] for p in mine] == sorted(phys[p] for p in mine),
                      "two devices: call %d: the image's files in physical order" % call)
            chk.check([ino[p] for p in theirs] == sorted(ino[p] for p in theirs),
                      "two devices: call %d: tmpfs files in inode order" % call)
    finally:
        img.set_rotational(0)
        sh("umount", shm)


def check_io_threads(chk, exe, work):
    root = os.path.join(work, "tree").encode()
    dc.make_tree(root, seed=15, nfiles=200)
    base = clitest.run([exe, "dedup", "-z", "-q", root], timeout=TIMEOUT)
    want = dc.parse_zero(base.stdout)
    chk.check(len(want) > 0, "the tree has groups")
    for n in ("1", "7"):
        proc = clitest.run([exe, "dedup", "-z", "-q", "--io-threads", n, root],
                           timeout=TIMEOUT)
        chk.check(proc.returncode == base.returncode,
                  "--io-threads %s: exit status %d like the default's %d"
                  % (n, proc.returncode, base.returncode), clitest.show(proc.stderr))
        got = dc.parse_zero(proc.stdout)
        chk.check(got == want, "--io-threads %s: the default's groups" % n)
        proc = clitest.run([exe, "dedup", "-q", "-v", "--io-threads", n, root],
                           timeout=TIMEOUT)
        line = reads_line(proc.stderr)
        chk.check(line is not None and ("%s reader thread" % n) in line,
                  "--io-threads %s: -v says so" % n, repr(line))
    for bad in ("0", "-1", "abc", "257", ""):
        proc = clitest.run([exe, "dedup", "--io-threads", bad, root], timeout=TIMEOUT)
        chk.status(proc, 2, "--io-threads %r" % bad)
        chk.check(b"io-threads" in proc.stderr, "--io-threads %r: message names it" % bad,
                  clitest.show(proc.stderr))
        chk.check(proc.stdout == b"", "--io-threads %r: nothing on stdout" % bad)


def main():
    exe = clitest.binary()
    chk = clitest.Checker("disk_order")
    rng = random.Random(15)
    work = tempfile.mkdtemp(prefix="hb-disk-order-")
    img = None
    skipped = None
    try:
        check_io_threads(chk, exe, work)
        img = Image(work)
        why = img.setup()
        if why is not None:
            print("note: io-threads checks ran; physical-order checks skipped: %s" % why)
            if chk.failures:
                chk.finish()
            skip(why)
        names = make_files(img.mnt, rng, "f")
        skipped = check_physical(chk, exe, img, names)
        check_two_devices(chk, exe, img, names, work, rng)
    finally:
        if img is not None:
            img.close()
        shutil.rmtree(work, ignore_errors=True)
    if skipped is not None and not chk.failures:
        print("note: every other check passed; the cold-cache checks were skipped",
              file=sys.stderr)
        skip(skipped)
    chk.finish()


if __name__ == "__main__":
    main()
