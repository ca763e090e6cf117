"""test_dedup_compare_first.py - the whole-file stage of `hashbatch dedup`
hashes only what its comparison cannot settle, and says nothing different.

Files of one size and one prefix SHA-1 form a set; each is compared byte
for byte with the distinct contents met so far (up to 8). In a report
that prints no digest (text, -z), those distinct contents are not hashed
whole; the rest of a set beyond 8 distinct contents is. The tree holds:

- set A: 5 distinct contents of 64 KiB with one first 4 KiB, 2 copies;
- set B: 12 distinct contents of 48 KiB with one first 4 KiB, each twice:
  the 4 contents beyond the first 8 met (8 files) must be hashed whatever
  the order, and their copies grouped by SHA-1 and bytes;
- set C: 3 files of 2 MiB (streamed, not read into memory), two equal;
- the SHAttered pair with a 64 KiB and, apart, a 2 MiB common suffix: each
  pair differs within the first 4 KiB yet has one prefix SHA-1 and one
  SHA-1, a collision that must still be announced in every layout.

Checked, for the text layout and for --json: the groups are those of an
oracle that groups by bytes; --stats counts 8 files hashed whole and 15
proven distinct by comparison in text (the collision pairs aside: they are
hashed), and in --json every file that is no copy of a compared content
hashed, with each group's digest equal to hashlib's; the two collisions
are announced in both.

Usage: test_dedup_compare_first.py PATH/TO/hashbatch
"""
import hashlib
import os
import random
import re
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402
import dedupcheck as dc  # noqa: E402

TIMEOUT = 120


def content(rng, head, size):
    """head followed by random bytes up to size."""
    return head + bytes(rng.getrandbits(8) for _ in range(size - len(head)))


def make_sets(root, rng):
    """Sets A, B and C under root."""
    head = bytes(rng.getrandbits(8) for _ in range(4096))
    a = [content(rng, head, 64 << 10) for _ in range(5)]
    for i, data in enumerate(a + a[:2]):
        dc.write(os.path.join(root, b"a", b"%d" % i), data)
    b = [content(rng, head, 48 << 10) for _ in range(12)]
    order = list(range(24))
    rng.shuffle(order)  # copies in no particular walk order
    for k, i in enumerate(order):
        dc.write(os.path.join(root, b"b", b"%02d" % k), b[i % 12])
    big = os.urandom(2 << 20)
    other = big[:-1] + bytes([big[-1] ^ 1])
    for name, data in ((b"c0", big), (b"c1", other), (b"c2", big)):
        dc.write(os.path.join(root, b"c", name), data)


def make_collisions(root):
    """The SHAttered pair with a 64 KiB suffix and with a 2 MiB one."""
    pairs = []
    for tag, size in ((b"mem", 64 << 10), (b"streamed", 2 << 20)):
        x, y = dc.colliding_pair(dc.SHATTERED, suffix=b"s" * size)
        px = os.path.join(root, b"col-" + tag, b"x.pdf")
        py = os.path.join(root, b"col-" + tag, b"y.pdf")
        dc.write(px, x)
        dc.write(py, y)
        pairs.append((px, py, hashlib.sha1(x).hexdigest()))
    return pairs


def stage_counts(stderr):
    """(files hashed whole, proven distinct by comparison) from --stats."""
    m = re.search(rb"(\d+) files \(\d+ bytes\) hashed whole, \d+ found identical to another by "
                  rb"comparison, (\d+) proven distinct by comparison alone", stderr)
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_collisions(chk, stderr, pairs, what):
    for px, py, digest in pairs:
        lines = [l for l in stderr.splitlines()
                 if b"SHA-1 collision" in l and digest.encode() in l
                 and os.path.basename(os.path.dirname(px)) in l]
        chk.check(len(lines) == 1, "%s: the collision of %s announced once with digest %s"
                  % (what, os.path.dirname(px), digest), clitest.show(stderr))


def main():
    exe = clitest.binary()
    chk = clitest.Checker("dedup_compare_first")
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp.encode(), b"tree")
        make_sets(root, rng)
        pairs = make_collisions(root)
        want = dc.oracle(root)
        chk.check(len(want) == 12 + 2 + 1, "the oracle finds the 15 groups made",
                  repr(len(want)))

        p = clitest.run([exe, "dedup", "-z", "--stats", root], timeout=TIMEOUT)
        dc.no_sanitizer_report(chk, p, "dedup -z --stats")
        chk.status(p, 0, "dedup -z --stats")
        got = dc.parse_zero(p.stdout)
        chk.check(got == want, "text: the groups are the oracle's",
                  "got %d groups, want %d" % (len(got), len(want)))
        counts = stage_counts(p.stderr)
        # 8 of set B's files beyond 8 contents, and the 2 x 2 colliding
        # files (hashed whole once the prefixes were found to collide).
        chk.check(counts == (8 + 4, 5 + 8 + 2),
                  "text: 12 files hashed whole, 15 proven distinct by comparison, got %r"
                  % (counts,), clitest.show(p.stderr))
        check_collisions(chk, p.stderr, pairs, "text")

        p = clitest.run([exe, "dedup", "--json", "--stats", root], timeout=TIMEOUT)
        dc.no_sanitizer_report(chk, p, "dedup --json --stats")
        chk.status(p, 0, "dedup --json --stats")
        doc, got = dc.parse_json(p.stdout)
        chk.check(got == want, "--json: the groups are the oracle's")
        for g in doc["groups"]:
            f = g["files"][0]
            path = bytes.fromhex(f["path_hex"]) if "path_hex" in f else f["path"].encode()
            chk.check(g["sha1"] == dc.sha1_of(path),
                      "--json: group of %r has hashlib's SHA-1" % path, repr(g["sha1"]))
        counts = stage_counts(p.stderr)
        # Set B's 8 distinct contents met first and the 8 files beyond them
        # (copies among those are found by their SHA-1, so each is hashed).
        chk.check(counts == (5 + 16 + 2 + 4, 0),
                  "--json: every file not a copy of a compared one hashed whole (27), none "
                  "left unhashed, got %r" % (counts,), clitest.show(p.stderr))
        check_collisions(chk, p.stderr, pairs, "--json")
        chk.check(len(doc["collisions"]) == 2, "--json lists the two collisions",
                  repr(doc["collisions"]))
    chk.finish()


if __name__ == "__main__":
    main()
