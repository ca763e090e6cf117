#!/usr/bin/env python3
"""test_memory_peak.py - `hashbatch sum -r TREE` and `hashbatch dedup
TREE` keep memory bounded whatever the files (README: "--memory-max (64
MiB by default: memory stays bounded whatever the files)"; dedup --help:
"memory stays near 2 x N" for --batch-bytes N), measured from outside:
the kernel's peak RSS of the process (ru_maxrss from wait4).

The tree: 3 files of 160 MiB (two identical, the third differing in its
last MiB only: one size, one prefix, so dedup compares them streaming)
and 4,000 files of 32-64 KiB (half in identical pairs), 667 MiB in all,
real bytes (no holes), deleted at the end.

The bound is derived from the documented caps, read from the binary's
own --help (default --memory-max, --batch-bytes) and hashbatch.h (small
files up to small_max read whole per I/O thread):
  sum:   memory_max + io_threads * small_max
  dedup: 2 * batch_bytes + memory_max (dedup hashes streamed sets
         through files jobs, which have the files job's cap)
each times 1.25 plus 16 MiB for allocator and thread overhead, over the
peak of the same command on a one-file tree (the process's fixed cost:
code, libraries, threads). On --backend cpu (no OpenCL runtime in the
peak) the growth must stay under that allowance; on the default backend
the peak must stay under a third of the tree.

Why the measure would catch a bug: one 160 MiB file held whole exceeds
either allowance (98.5 / 118.5 MiB), and the tree is over 5 times the
sum bound. A control proves the measuring path sees such memory: a
child that reads one big file whole, measured the same way, must grow
by more than the allowance.

ru_maxrss is measured through a small helper process that forks and
execs the command: a child forked straight from this (larger) Python
would start with this process's peak (Linux carries the pre-exec peak
over exec).

Usage: test_memory_peak.py PATH/TO/hashbatch
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402

HB = clitest.binary()
C = clitest.Checker("memory_peak")
MIB = 1 << 20
BIG_FILES = 3
BIG_SIZE = 160 * MIB
SMALL_FILES = 4000
IO_THREADS = 2
HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "host", "include", "hashbatch.h")

# Forks, execs argv[1:] with stdout to /dev/null (stderr kept), prints
# the child's peak RSS in KiB and its exit status.
HELPER = r'''
import os, sys
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, ru = os.wait4(pid, 0)
print(ru.ru_maxrss, os.waitstatus_to_exitcode(status))
'''


def peak(args, cwd=None):
    """(peak RSS in bytes, exit status, stderr) of args run alone."""
    p = subprocess.run([sys.executable, "-c", HELPER] + args, cwd=cwd,
                       env=clitest.clean_env(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300)
    fields = p.stdout.split()
    if p.returncode != 0 or len(fields) != 2:
        C.fail("measuring %s: helper exit %d" % (" ".join(args), p.returncode),
               clitest.show(p.stderr))
        return 0, -1, p.stderr
    return int(fields[0]) * 1024, int(fields[1]), p.stderr


def size_arg(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def documented_caps():
    """memory_max and batch_bytes (the CLI's defaults, from --help) and
    small_max (hb_files_options in hashbatch.h)."""
    s = clitest.run([HB, "sum", "--help"]).stdout.decode()
    d = clitest.run([HB, "dedup", "--help"]).stdout.decode()
    mem = re.search(r"--memory-max N\s+most file bytes held in memory at once "
                    r"\(default (\d+[KMG]?)\)", s)
    batch = re.search(r"--batch-bytes N\s+read and hash files in batches of N bytes "
                      r"\(default (\d+[KMG]?)\)", d)
    near = re.search(r"memory stays near 2 x N", d)
    with open(HEADER) as f:
        small = re.search(r"size_t small_max;[^*]*\*[^/]*?0: (\d+) MiB \*/", f.read())
    if not (mem and batch and near and small):
        C.fail("the documented caps were not found (sum --help --memory-max, dedup --help "
               "--batch-bytes and 'near 2 x N', small_max in hashbatch.h): %s"
               % [bool(mem), bool(batch), bool(near), bool(small)])
        C.finish()
    return size_arg(mem.group(1)), size_arg(batch.group(1)), int(small.group(1)) * MIB


def make_tree(root):
    """The tree; returns {relative path: sha1 hex} and its size."""
    want, total = {}, 0
    os.makedirs(os.path.join(root, "big"))
    os.makedirs(os.path.join(root, "small"))
    block = bytearray(os.urandom(MIB))
    for k in range(BIG_FILES):
        rel = "big/%d" % k
        h = hashlib.sha1()
        with open(os.path.join(root, rel), "wb") as f:
            for i in range(BIG_SIZE // MIB):
                # every MiB distinct; file 2 differs from 0 and 1 in its last MiB
                tag = 1 if (k == 2 and i == BIG_SIZE // MIB - 1) else 0
                block[0:16] = i.to_bytes(8, "little") + tag.to_bytes(8, "little")
                f.write(block)
                h.update(block)
        want[rel] = h.hexdigest()
        total += BIG_SIZE
    for i in range(SMALL_FILES):
        size = 32 * 1024 + (i // 2 % 500) * 64
        ident = i // 2 if i % 4 < 2 else SMALL_FILES + i  # pairs 4k, 4k+1 identical
        data = ident.to_bytes(8, "little") + bytes(block[8:size])
        rel = "small/%04d" % i
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)
        want[rel] = hashlib.sha1(data).hexdigest()
        total += size
    return want, total


def check_sum_output(out, want, what):
    got = {}
    for line in out.decode("utf-8", "replace").splitlines():
        digest, _, name = line.partition("  ")
        got[os.path.relpath(name, "tree")] = digest
    C.check(got == want, "%s: every file's digest (%d lines)" % (what, len(got)),
            "differs for %s" % sorted(k for k in set(got) | set(want)
                                      if got.get(k) != want.get(k))[:10])


def main():
    base = tempfile.mkdtemp(prefix="hb-memory-peak-")
    try:
        if shutil.disk_usage(base).free < 2 * 700 * MIB:
            print("skipped: under 1.4 GiB free in %s" % base, file=sys.stderr)
            sys.exit(clitest.SKIP)
        memory_max, batch_bytes, small_max = documented_caps()
        slack = 16 * MIB
        caps = {"sum": memory_max + IO_THREADS * small_max,
                "dedup": 2 * batch_bytes + memory_max}
        allowance = {k: int(v * 1.25) + slack for k, v in caps.items()}

        tree = os.path.join(base, "tree")
        want, total = make_tree(tree)
        os.makedirs(os.path.join(base, "one"))
        with open(os.path.join(base, "one", "f"), "wb") as f:
            f.write(b"x" * 100)
        print("tree: %d files, %.0f MiB; caps from the docs: memory_max %d MiB, batch_bytes "
              "%d MiB, small_max %d MiB" % (len(want), total / MIB, memory_max >> 20,
                                             batch_bytes >> 20, small_max >> 20))
        C.check(total > 5 * max(allowance.values()),
                "the tree (%d MiB) is over 5 times the biggest allowance (%d MiB)"
                % (total >> 20, max(allowance.values()) >> 20))

        # Control: the same measure sees a child holding one big file whole.
        py = [sys.executable, "-c", "import sys; d = open(sys.argv[1], 'rb').read(); "
              "assert len(d) == %d" % BIG_SIZE, os.path.join(tree, "big", "0")]
        ctl_base, st0, _ = peak([sys.executable, "-c", "pass"])
        ctl, st1, err = peak(py)
        print("control: python reading one big file whole: %.1f MiB over %.1f MiB"
              % ((ctl - ctl_base) / MIB, ctl_base / MIB))
        C.check(st0 == 0 and st1 == 0, "control: the reader ran", clitest.show(err))
        C.check(ctl - ctl_base > max(allowance.values()),
                "control: the measure sees one big file held whole (%.1f MiB growth, more "
                "than the %d MiB allowance)" % ((ctl - ctl_base) / MIB,
                                                max(allowance.values()) >> 20))

        runs = {
            "sum": ["sum", "-r", "--quiet", "--io-threads", str(IO_THREADS)],
            "dedup": ["dedup", "-q", "--io-threads", str(IO_THREADS)],
        }
        for name, args in runs.items():
            for backend in ("cpu", None):
                be = ["--backend", backend] if backend else []
                what = "%s%s" % (" ".join(args[:2]), " --backend " + backend if backend
                                 else " (default backend)")
                fixed, st, err = peak([HB] + args + be + ["one"], cwd=base)
                C.status(subprocess.CompletedProcess(args, st, b"", err), 0,
                         what + " on one file")
                got, st, err = peak([HB] + args + be + ["tree"], cwd=base)
                C.status(subprocess.CompletedProcess(args, st, b"", err), 0, what + " on the tree")
                print("%s: peak RSS %.1f MiB on the tree, %.1f MiB on one file: growth "
                      "%.1f MiB (allowance %.1f MiB, tree %d MiB)"
                      % (what, got / MIB, fixed / MIB, (got - fixed) / MIB,
                         allowance[name] / MIB, total >> 20))
                if backend == "cpu":
                    C.check(got - fixed < allowance[name],
                            "%s: peak RSS grew by %.1f MiB on the tree, over the %.1f MiB "
                            "its documented caps allow" % (what, (got - fixed) / MIB,
                                                           allowance[name] / MIB))
                else:
                    C.check(got < total / 3, "%s: peak RSS %.1f MiB is not well below the "
                            "tree's %d MiB" % (what, got / MIB, total >> 20))

        # The runs did the work: right digests, the right group.
        p = clitest.run([HB, "sum", "-r", "--quiet", "--backend", "cpu", "tree"], cwd=base)
        C.status(p, 0, "sum -r tree")
        check_sum_output(p.stdout, want, "sum -r tree")
        p = clitest.run([HB, "dedup", "-q", "--backend", "cpu", "tree"], cwd=base)
        C.status(p, 0, "dedup tree")
        groups = [g.split("\n") for g in p.stdout.decode().strip().split("\n\n")]
        C.check(["tree/big/0", "tree/big/1"] in groups and
                not any("tree/big/2" in g for g in groups),
                "dedup: big/0 and big/1 grouped, big/2 (last MiB differs) alone",
                clitest.show(p.stdout))
        C.check(len(groups) == 1 + SMALL_FILES // 4,
                "dedup: %d groups, expected %d" % (len(groups), 1 + SMALL_FILES // 4))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    C.finish()


if __name__ == "__main__":
    main()
