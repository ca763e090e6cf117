"""test_sum_matches_sha1sum.py - `hashbatch sum` prints exactly what GNU
sha1sum prints, byte for byte, for 1,000 files of random sizes (0 B to
8 MiB, mostly small, with the 55/56/64-byte padding boundaries and several
multi-MiB files), names with spaces, backslashes, newlines and carriage
returns, on the opencl and cpu backends, in big and small engine submissions, and
for standard input (a file and a pipe).

Usage: test_sum_matches_sha1sum.py PATH/TO/hashbatch [--part=opencl]
The main run checks the cpu backend and auto; --part=opencl (ctest's
cli_sum_matches_sha1sum_opencl) the opencl backend alone, a SKIP without
a device.
Environment: HB_TEST_SEED fixes the random seed (printed on every run).
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402

MIB = 1 << 20
N_FILES = 1000
BOUNDARY_SIZES = [0, 1, 2, 3, 54, 55, 56, 57, 63, 64, 65, 119, 120, 127,
                  128, 129, 183, 184, 191, 192, 447, 448, 511, 512, 513,
                  4095, 4096, 4097, 65535, 65536, 65537, MIB - 1, MIB,
                  MIB + 1]
BIG_SIZES = [8 * MIB, 8 * MIB - 1, 3 * MIB + 7]  # plus random ones
N_RANDOM_BIG = 20
ODD_NAMES = ["with space.txt", "two  spaces ", "back\\slash",
             "new\nline", "\\both\nkinds\\", "cr\rname", "tab\tname",
             "quote'name", "dq\"name", "-dash", "sub/dir/file",
             "caf\u00e9.txt", " leading space", "trailing\\"]


def random_size(rng):
    """Mostly small, log-uniform-ish; a few up to 1 MiB."""
    r = rng.random()
    if r < 0.70:
        return rng.randint(0, 300)
    if r < 0.92:
        return rng.randint(301, 64 * 1024)
    return rng.randint(64 * 1024, MIB)


def plan_sizes(rng):
    sizes = list(BOUNDARY_SIZES) + list(BIG_SIZES)
    sizes += [rng.randint(MIB, 8 * MIB) for _ in range(N_RANDOM_BIG)]
    while len(sizes) < N_FILES:
        sizes.append(random_size(rng))
    rng.shuffle(sizes)
    return sizes


def make_files(root, rng):
    """Writes the files; returns their names relative to root, in the
    argument order (shuffled)."""
    sizes = plan_sizes(rng)
    names = []
    for i, size in enumerate(sizes):
        name = ODD_NAMES[i] if i < len(ODD_NAMES) else "f%04d.bin" % i
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(rng.randbytes(size))
        names.append(name)
    # The same file twice, and an empty file again, must work too.
    names += [names[0], ODD_NAMES[3]]
    rng.shuffle(names)
    return names, sum(sizes)


def opencl_usable(exe):
    proc = clitest.run([exe, "devices", "--json"])
    if proc.returncode != 0:
        return False
    try:
        return len(json.loads(proc.stdout)["opencl_devices"]) > 0
    except (ValueError, KeyError):
        return False


def compare_run(chk, exe, opts, names, root, expected, what, verbose=False):
    """One run over all names; with verbose, -v's report must name the
    backend asked for (the run really used it) and be all of stderr."""
    t0 = time.monotonic()
    extra = ["-v"] if verbose else []
    proc = clitest.run([exe, "sum"] + extra + opts + ["--"] + names,
                       cwd=root)
    dt = time.monotonic() - t0
    print("  %-40s %.1f s" % (what, dt))
    chk.status(proc, 0, what)
    chk.same_bytes(proc.stdout, expected, what)
    if not verbose:
        chk.check(proc.stderr == b"", what + ": stderr not empty",
                  clitest.show(proc.stderr))
        return
    lines = proc.stderr.splitlines()
    backend = opts[opts.index("--backend") + 1].encode()
    chk.check(len(lines) >= 2 and
              all(line.startswith(b"hashbatch: ") for line in lines) and
              lines[0].startswith(b"hashbatch: engine: " + backend),
              what + ": -v does not report the %s engine (alone)"
              % backend.decode(), clitest.show(proc.stderr))
    # the counters say the backend asked for did all the hashing
    idle = b" 0 on the cpu pool;" if backend == b"opencl" else b" 0 bytes on devices,"
    chk.check(len(lines) >= 2 and idle in lines[1],
              what + ": -v shows work done elsewhere than on " +
              backend.decode(), clitest.show(proc.stderr))


def sha1sum(args, cwd, stdin=None, input=None):
    return subprocess.run(["sha1sum"] + args, cwd=cwd, stdin=stdin,
                          input=input, stdout=subprocess.PIPE,
                          check=True).stdout


def check_stdin(chk, exe, root, names, backends, rng):
    """stdin as a regular file, as a pipe, `-` among files, no argument."""
    big = max(names, key=lambda n: os.path.getsize(os.path.join(root, n)))
    big_path = os.path.join(root, big)
    piped = rng.randbytes(3 * MIB + 11)
    for backend in backends:
        opts = ["--backend", backend]
        with open(big_path, "rb") as f:
            proc = clitest.run([exe, "sum"] + opts, stdin=f, cwd=root)
        with open(big_path, "rb") as f:
            want = sha1sum([], root, stdin=f)
        chk.status(proc, 0, backend + ": stdin file")
        chk.same_bytes(proc.stdout, want, backend + ": stdin file")

        args = [names[0], "-", names[1], "-"]  # the second - reads nothing
        proc = clitest.run([exe, "sum"] + opts + args, input=piped, cwd=root)
        want = sha1sum(args, root, input=piped)
        chk.status(proc, 0, backend + ": stdin pipe among files")
        chk.same_bytes(proc.stdout, want, backend + ": stdin pipe")

        proc = clitest.run([exe, "sum"] + opts + ["--batch-bytes", "1M",
                                                  "-"], input=piped, cwd=root)
        want = sha1sum(["-"], root, input=piped)
        chk.same_bytes(proc.stdout, want, backend + ": big pipe, small batch")


def main():
    exe = clitest.binary()
    only = clitest.part()
    if only not in (None, "opencl"):
        sys.exit("unknown part %r" % only)
    if not clitest.have_sha1sum():
        clitest.skip("sha1sum not found (Debian: coreutils)")
    if only == "opencl" and not opencl_usable(exe):
        clitest.skip("no OpenCL device (`hashbatch devices --json` lists none): "
                     "the opencl backend is not checked")
    seed = int(os.environ.get("HB_TEST_SEED", random.randrange(1 << 32)))
    print("seed %d (set HB_TEST_SEED=%d to repeat)" % (seed, seed))
    rng = random.Random(seed)
    chk = clitest.Checker("test_sum_matches_sha1sum" + ("_opencl" if only else ""))
    backends = ["opencl"] if only == "opencl" else ["cpu"]

    root = tempfile.mkdtemp(prefix="hb-cli-sum-")
    try:
        names, total = make_files(root, rng)
        print("%d names, %.1f MiB" % (len(names), total / MIB))
        expected = sha1sum(["--"] + names, root)
        for backend in backends:
            compare_run(chk, exe, ["--backend", backend], names, root,
                        expected, backend)
            compare_run(chk, exe, ["--backend", backend, "--batch-bytes",
                                   "1M"], names, root, expected,
                        backend + ", --batch-bytes 1M", verbose=True)
        if only is None:
            compare_run(chk, exe, [], names, root, expected, "auto")
        check_stdin(chk, exe, root, names, backends, rng)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    chk.finish()


if __name__ == "__main__":
    main()
