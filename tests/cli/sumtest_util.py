"""sumtest_util.py - shared pieces of the `hashbatch sum` CLI tests
(test_sum_*.py): a generated tree with odd names and SHA-1 collision pairs
(from tests/vectors, with equal suffixes of many lengths), the
find|sort|sha1sum oracle for -r, and running hashbatch and sha1sum side by
side.

Owns: the test tree's shape and the oracle commands. Must not: hold a
test's expectations (each test says what it compares), or go on without
its test data (a missing vector raises, naming the path).
"""
import os
import random
import subprocess

import clitest
import dedupcheck

MIB = 1 << 20

# Suffixes appended to both files of each collision pair (320 and 640
# bytes, whole blocks): none, inside the first padded block, into a second
# one (56), on a block boundary (64), across one (65, 4099), as long as the
# SHAttered PDFs (422,115) and past a MiB.
COLLISION_SUFFIXES = (0, 1, 55, 56, 64, 65, 4099, 422115, MIB + 7)

# Names as bytes: newline, backslash, CR, tab, spaces, a leading dash,
# invalid UTF-8, and names that sort differently per level than as full
# paths ("a" vs "a-x" vs "a.txt").
ODD_NAMES = [b"new\nline", b"back\\slash", b"cr\rname", b"tab\tname",
             b" lead space", b"trail space ", b"-dash", b"bad\xff\xfeutf8",
             b"caf\xc3\xa9", b"\\both\nkinds\\", b"quote'name", b"a.txt",
             b"a-x", b"star*name"]


def make_collisions(folder, rng):
    """Both collision pairs with each of COLLISION_SUFFIXES appended (one
    random suffix per length, the same for both files): files
    NAME-LEN-1.bin and NAME-LEN-2.bin in folder. Each pair is checked to
    differ and to collide (dedupcheck.colliding_pair). Returns the bytes
    written."""
    folder = os.fsencode(folder)
    os.makedirs(folder, exist_ok=True)
    total = 0
    for names in dedupcheck.COLLISION_PAIRS:
        stem = names[0].split("-1", 1)[0]
        for n in COLLISION_SUFFIXES:
            pair = dedupcheck.colliding_pair(names, rng.randbytes(n))
            for k, data in enumerate(pair, 1):
                name = "%s-%d-%d.bin" % (stem, n, k)
                with open(os.path.join(folder, os.fsencode(name)), "wb") as f:
                    f.write(data)
                total += len(data)
    return total


def make_tree(root, rng, nfiles=240, big=3):
    """Nested folders with random files (mostly small, a few of several
    MiB), empty files and odd names; the collision pairs in collisions/
    (make_collisions). Returns the number of bytes written."""
    root = os.fsencode(root)
    dirs = [root]
    for path in (b"a", b"a/b", b"a/b/c", b"a-d", b"a.d", b"sp ace",
                 b"new\ndir", b"bad\xffdir", b"a/b/c/deep", b"empty-dir"):
        os.makedirs(os.path.join(root, path), exist_ok=True)
        if path != b"empty-dir":
            dirs.append(os.path.join(root, path))
    total = 0
    for i in range(nfiles):
        d = dirs[i % len(dirs)]
        name = ODD_NAMES[i // len(dirs)] if i // len(dirs) < len(ODD_NAMES) \
            else b"f%04d" % i
        r = rng.random()
        size = (0 if r < 0.05 else rng.randint(1, 200) if r < 0.6 else
                rng.randint(200, 200000) if r < 0.95 else
                rng.randint(200000, 2 * MIB))
        if i < big:
            size = rng.randint(2 * MIB, 5 * MIB)
        with open(os.path.join(d, name), "wb") as f:
            f.write(rng.randbytes(size))
        total += size
    total += make_collisions(os.path.join(root, b"collisions"), rng)
    return total


def find_files(top, follow=False, cwd=None):
    """The oracle's file list: find [-L] TOP -type f, sorted by bytes."""
    args = ["find"] + (["-L"] if follow else []) + [top, "-type", "f",
                                                    "-print0"]
    out = subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL).stdout
    return sorted(p for p in out.split(b"\0") if p)


def sha1sum(args, cwd=None, input=None):
    """sha1sum ARGS: (stdout, stderr with hashbatch's name, status)."""
    p = clitest.run(["sha1sum"] + args, cwd=cwd, input=input)
    return p.stdout, p.stderr.replace(b"sha1sum:", b"hashbatch:"), \
        p.returncode


def oracle_tree(tops, opts, cwd):
    """What `sum -r OPTS TOPS` must print: sha1sum OPTS over
    find TOP -type f | LC_ALL=C sort, TOP by TOP."""
    out = b""
    for top in tops:
        files = find_files(top, cwd=cwd)
        if files:
            out += sha1sum(opts + ["--"] + files, cwd=cwd)[0]
    return out


def same_run(chk, exe, args, ref_args, what, cwd, input=None, env=None):
    """Runs `hashbatch sum ARGS` and `sha1sum REF_ARGS`; stdout, stderr
    (program name replaced) and status must all be equal."""
    p = clitest.run([exe, "sum"] + args, cwd=cwd, input=input, env=env,
                    timeout=120)
    out, err, rc = sha1sum(ref_args, cwd=cwd, input=input)
    chk.same_bytes(p.stdout, out, what + ": stdout")
    chk.same_bytes(p.stderr, err, what + ": stderr")
    chk.check(p.returncode == rc, "%s: exit status %d, sha1sum's %d"
              % (what, p.returncode, rc), clitest.show(p.stderr))
    return p


def new_rng():
    seed = int(os.environ.get("HB_TEST_SEED", random.randrange(1 << 32)))
    print("seed %d (set HB_TEST_SEED=%d to repeat)" % (seed, seed))
    return random.Random(seed)


def opencl_usable(exe):
    import json
    p = clitest.run([exe, "devices", "--json"])
    try:
        return p.returncode == 0 and \
            len(json.loads(p.stdout)["opencl_devices"]) > 0
    except (ValueError, KeyError):
        return False
