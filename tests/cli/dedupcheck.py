"""dedupcheck.py - helpers of the `hashbatch dedup` CLI tests (Python 3
standard library only): building trees with duplicates, hard links,
symlinks, empty files, odd names and the SHA-1 collision pairs (made from
the repository's vectors, tests/vectors/collisions, with equal suffixes
appended); reading the outputs (-z, text, JSON, CSV) as sets of groups; an
independent oracle that groups files by their bytes; snapshots that prove
nothing changed.

Owns: those helpers. Must not: hold a test's expectations, or go on
without its test data (a missing vector raises, naming the path).
"""
import csv
import hashlib
import io
import json
import os
import random
import shutil

TESTDATA = os.environ.get(
    "HASHBATCH_TESTDATA",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors"))
COLLISIONS = os.path.join(TESTDATA, "collisions")

# The two collision pairs as tests/vectors keeps them: the SHAttered PDFs
# as their first 320 bytes (the collision is complete there), SHA-mbles
# whole. Equal suffixes appended keep each pair colliding.
SHATTERED = ("shattered-1.prefix.bin", "shattered-2.prefix.bin")
SHAMBLES = ("sha-mbles-1.bin", "sha-mbles-2.bin")
COLLISION_PAIRS = (SHATTERED, SHAMBLES)


def read_vector(name):
    """The bytes of tests/vectors/collisions/NAME; a missing file raises
    FileNotFoundError naming it (a test without its data fails)."""
    path = os.path.join(COLLISIONS, name)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            "test data missing: %s (the vectors are in tests/vectors/ of the "
            "repository; HASHBATCH_TESTDATA=DIR reads them from DIR)" % path)
    with open(path, "rb") as f:
        return f.read()


def colliding_pair(names, suffix=b""):
    """(a, b): the two files of the pair NAMES, each followed by suffix.
    Raises AssertionError unless the two differ and hashlib gives them one
    SHA-1, so no test builds on a pair that does not collide."""
    a = read_vector(names[0]) + suffix
    b = read_vector(names[1]) + suffix
    if a == b:
        raise AssertionError("%s + %d bytes: the two files are identical"
                             % (names[0], len(suffix)))
    if hashlib.sha1(a).digest() != hashlib.sha1(b).digest():
        raise AssertionError("%s + %d bytes: the pair does not collide"
                             % (names[0], len(suffix)))
    return a, b

# Names that break naive tools: a newline, invalid UTF-8, a leading quote,
# spaces, a backslash, a tab, a comma and a double quote (CSV).
ODD_NAMES = [b"new\nline", b"bad\xff\xfeutf8", b"'quoted", b"with space",
             b"back\\slash", b"tab\there", b'comma,"quote"', b"\xc3\xa9t\xc3\xa9"]


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def make_tree(root, seed=7, nfiles=120):
    """A tree under root (bytes path): nested folders, random files with
    copies, near-duplicates (one byte changed, first or last), hard links,
    symlinks to files and folders, empty files, odd names, and the two
    collision pairs in col/ (see make_collisions). Returns a dict with what
    was made (lists of bytes paths)."""
    rng = random.Random(seed)
    made = {"files": [], "hardlinks": [], "symlinks": [], "empty": [],
            "odd": [], "collisions": []}
    dirs = [b"", b"a", b"a/b", b"a/b/c", b"d", b"d/e", b"f g"]
    originals = []
    for i in range(nfiles):
        d = dirs[rng.randrange(len(dirs))]
        size = rng.choice([1, 2, 100, 4095, 4096, 4097, 10000, 70000,
                           300000, rng.randrange(1, 200000)])
        data = rng.randbytes(size)
        p = os.path.join(root, d, b"o%03d" % i)
        write(p, data)
        originals.append((p, data))
        made["files"].append(p)
    for i in range(nfiles // 2):  # copies
        src, data = originals[rng.randrange(len(originals))]
        p = os.path.join(root, dirs[rng.randrange(len(dirs))], b"c%03d" % i)
        write(p, data)
        made["files"].append(p)
    for i in range(nfiles // 8):  # near-duplicates: same size
        src, data = originals[rng.randrange(len(originals))]
        data = bytearray(data)
        at = 0 if i % 2 else len(data) - 1
        data[at] ^= 0x01
        p = os.path.join(root, dirs[rng.randrange(len(dirs))], b"n%03d" % i)
        write(p, bytes(data))
        made["files"].append(p)
    # one size, one first 4 KiB, 12 different tails (more distinct contents
    # than dedup compares directly), some with copies
    head = rng.randbytes(4096)
    for i in range(12):
        tail = rng.randbytes(904)
        for c in range(1 + (i % 3 == 0)):
            p = os.path.join(root, b"fam", b"t%02d-%d" % (i, c))
            write(p, head + tail)
            made["files"].append(p)
    for i in range(6):  # hard links, some to files with copies
        src = originals[i * 3][0]
        p = os.path.join(root, b"d", b"h%d" % i)
        os.link(src, p)
        made["hardlinks"].append(p)
    # a file whose only twin is a hard link: a group that reclaims nothing
    lone = os.path.join(root, b"lonely")
    write(lone, b"only me, twice, by a hard link\n" * 7)
    os.link(lone, os.path.join(root, b"d", b"lonely-link"))
    made["hardlinks"].append(os.path.join(root, b"d", b"lonely-link"))
    for i in range(4):
        p = os.path.join(root, b"e%d" % i)
        write(p, b"")
        made["empty"].append(p)
    os.symlink(os.path.basename(originals[0][0]),
               os.path.join(os.path.dirname(originals[0][0]), b"sym-to-file"))
    os.symlink(b"a", os.path.join(root, b"sym-to-dir"))
    made["symlinks"] += [b"sym-to-file", b"sym-to-dir"]
    odd = rng.randbytes(5000)
    for name in ODD_NAMES:
        p = os.path.join(root, b"odd", name)
        write(p, odd)
        made["odd"].append(p)
    made["collisions"] = make_collisions(os.path.join(root, b"col"), rng)
    return made


def make_collisions(folder, rng):
    """Two colliding pairs in folder: shattered-1.pdf and shattered-2.pdf,
    the SHAttered prefixes with one random suffix that makes them as long
    as the PDFs (422,435 bytes, ending mid-block), and sha-mbles-1.bin and
    sha-mbles-2.bin as published; plus again/shattered-1.pdf, a real copy
    of shattered-1.pdf. Returns the four pair paths (bytes)."""
    suffix = rng.randbytes(422435 - 320)
    files = list(zip((b"shattered-1.pdf", b"shattered-2.pdf"),
                     colliding_pair(SHATTERED, suffix)))
    files += list(zip((b"sha-mbles-1.bin", b"sha-mbles-2.bin"),
                      colliding_pair(SHAMBLES)))
    paths = []
    for name, data in files:
        write(os.path.join(folder, name), data)
        paths.append(os.path.join(folder, name))
    write(os.path.join(folder, b"again", b"shattered-1.pdf"), files[0][1])
    return paths


def parse_zero(out):
    """-z / jdupes -0 output: paths ending in NUL, groups in one more."""
    groups = set()
    for block in out.split(b"\0\0"):
        paths = [p for p in block.split(b"\0") if p]
        if paths:
            groups.add(frozenset(paths))
    return groups


def parse_lines(out):
    """The text layout (no name holding a newline): list of lists."""
    groups = []
    for block in out.split(b"\n\n"):
        paths = [p for p in block.split(b"\n") if p]
        if paths:
            groups.append(paths)
    return groups


def parse_json(out):
    """--json: (document, set of groups as frozensets of bytes paths)."""
    doc = json.loads(out.decode("utf-8"))
    groups = set()
    for g in doc["groups"]:
        paths = []
        for f in g["files"]:
            if "path_hex" in f:
                paths.append(bytes.fromhex(f["path_hex"]))
            else:
                paths.append(f["path"].encode("utf-8"))
        groups.add(frozenset(paths))
    return doc, groups


def parse_csv(out):
    """--csv: (header, rows, set of groups). Paths are bytes (the CSV is
    read as Latin-1, which maps every byte to one character)."""
    text = out.decode("latin-1")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header, body = rows[0], rows[1:]
    by_group = {}
    for row in body:
        by_group.setdefault(row[0], []).append(row[5].encode("latin-1"))
    return header, body, {frozenset(v) for v in by_group.values()}


def oracle(root, min_size=0, empty=False, follow=False):
    """Groups of paths with equal bytes, hard links included, found by
    reading every regular file (no hashing shortcuts): the independent
    reference. Symlinks below root are skipped unless follow."""
    by_content = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=follow):
        for name in filenames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p) and not follow:
                continue
            try:
                st = os.stat(p)
            except OSError:
                continue
            import stat as stmod
            if not stmod.S_ISREG(st.st_mode):
                continue
            if st.st_size < min_size or (st.st_size == 0 and not empty):
                continue
            with open(p, "rb") as f:
                by_content.setdefault(f.read(), []).append(p)
    return {frozenset(v) for v in by_content.values() if len(v) > 1}


def snapshot(root):
    """(path, size, mtime_ns, sha1) for every file: to prove nothing
    changed."""
    snap = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(filenames):
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if os.path.islink(p):
                snap.append((p, "link", os.readlink(p)))
                continue
            import stat as stmod
            if not stmod.S_ISREG(st.st_mode):
                snap.append((p, "special", st.st_mode))
                continue
            with open(p, "rb") as f:
                digest = hashlib.sha1(f.read()).hexdigest()
            snap.append((p, st.st_size, st.st_mtime_ns, st.st_ino, digest))
    return sorted(snap)


def have_jdupes():
    return shutil.which("jdupes") is not None


def unquote_shell(line):
    """The bytes of a path written as cli_quote_name writes it: '...'
    segments, "..." (no specials inside) and $'...' with \\a \\b \\f \\n \\r
    \\t \\v and \\ooo escapes; plain text stays as it is."""
    out = bytearray()
    i = 0
    esc = {ord("a"): 7, ord("b"): 8, ord("f"): 12, ord("n"): 10, ord("r"): 13,
           ord("t"): 9, ord("v"): 11}
    while i < len(line):
        c = line[i]
        if c == ord("'"):
            j = line.index(b"'", i + 1)
            out += line[i + 1:j]
            i = j + 1
        elif c == ord('"'):
            j = line.index(b'"', i + 1)
            out += line[i + 1:j]
            i = j + 1
        elif line.startswith(b"$'", i):
            i += 2
            while line[i] != ord("'"):
                if line[i] == ord("\\"):
                    n = line[i + 1]
                    if n in esc:
                        out.append(esc[n])
                        i += 2
                    elif n == ord("'") or n == ord("\\"):
                        out.append(n)
                        i += 2
                    else:
                        out.append(int(line[i + 1:i + 4], 8))
                        i += 4
                else:
                    out.append(line[i])
                    i += 1
            i += 1
        elif c == ord("\\"):
            out.append(line[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    return bytes(out)


def sha1_of(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


SANITIZER_MARKS = (b"ERROR: AddressSanitizer", b"ERROR: LeakSanitizer", b"runtime error:",
                   b"AddressSanitizer: CHECK failed", b"ThreadSanitizer")


def no_sanitizer_report(chk, proc, what):
    """Under the sanitizer builds, a report on stderr is a failure even
    when the exit status happens to be the one expected."""
    bad = [m for m in SANITIZER_MARKS if m in proc.stderr]
    return chk.check(not bad, "%s: no sanitizer report" % what,
                     proc.stderr.decode("utf-8", "replace")[:3000] if bad else "")
