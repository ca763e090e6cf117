"""test_dedup_counts.py - the numbers `hashbatch dedup` reports.

- SHA-1 collisions are pairs of distinct contents: the SHA-mbles pair
  (tests/vectors/collisions) with a copy of one of them, in the walk
  order that once counted the pair twice (the odd one first), is one
  collision: one warning, "1 SHA-1 collision", one entry in --json; the
  copy is grouped with its original and nothing else is.
- A file reached twice is scanned and counted once: DIR DIR, DIR ./DIR,
  DIR DIR/sub, DIR/sub DIR and a file argument inside DIR report what
  DIR alone reports ("N files scanned", the same groups, each path once,
  as jdupes does for repeated arguments); hard links are still listed as
  before (two names of one file), and so, with -L, are the paths through
  a symlink to a folder, but a repeated argument adds nothing there too.

Usage: test_dedup_counts.py PATH/TO/hashbatch
"""
import json
import os
import re
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402
import dedupcheck as dc  # noqa: E402

TIMEOUT = 120


def dedup(exe, args, cwd):
    return clitest.run([exe, "dedup", "--backend", "cpu"] + args, cwd=cwd, timeout=TIMEOUT)


def summary_numbers(stderr):
    """(scanned, collisions) from the summary line."""
    m = re.search(rb"; (\d+) files? scanned(?:, (\d+) SHA-1 collisions?)?", stderr)
    if m is None:
        return None, None
    return int(m.group(1)), int(m.group(2) or 0)


def check_collisions(chk, exe, tmp):
    src = [os.path.join(dc.COLLISIONS, n) for n in dc.SHAMBLES]
    for p in src:
        if not chk.check(os.path.isfile(p), "test data %s is there" % p):
            return
    d = os.path.join(tmp, "col")
    os.mkdir(d)
    # a: one content, b and c: the other (c a copy of b). Sorted by SHA-1
    # (one) and walk order, a comes first: b and c both differ from it.
    shutil.copyfile(src[1], os.path.join(d, "a"))
    shutil.copyfile(src[0], os.path.join(d, "b"))
    shutil.copyfile(src[0], os.path.join(d, "c"))
    p = dedup(exe, ["col"], tmp)
    chk.status(p, 0, "dedup of a colliding pair and a copy")
    warnings = p.stderr.count(b"warning: SHA-1 collision")
    chk.check(warnings == 1, "one collision warning, got %d" % warnings, clitest.show(p.stderr))
    scanned, collisions = summary_numbers(p.stderr)
    chk.check(collisions == 1, "summary: 1 SHA-1 collision, got %r" % collisions,
              clitest.show(p.stderr))
    chk.check(scanned == 3, "summary: 3 files scanned, got %r" % scanned)
    chk.same_bytes(p.stdout, b"col/b\ncol/c\n\n", "the copy is grouped with its original only")
    p = dedup(exe, ["--json", "-q", "col"], tmp)
    chk.status(p, 0, "dedup --json")
    doc = json.loads(p.stdout)
    chk.check(len(doc["collisions"]) == 1, "--json: one collision, got %d"
              % len(doc["collisions"]), clitest.show(p.stdout))
    chk.check(doc["summary"]["collisions"] == 1, "--json summary: one collision",
              clitest.show(p.stdout))
    # Two copies of each content: still one pair of distinct contents.
    shutil.copyfile(src[1], os.path.join(d, "d"))
    p = dedup(exe, ["col"], tmp)
    _, collisions = summary_numbers(p.stderr)
    chk.check(collisions == 1, "two copies of each: 1 collision, got %r" % collisions,
              clitest.show(p.stderr))


def make_tree(root):
    os.makedirs(os.path.join(root, "D", "sub"))
    for name, data in (("a", b"same\n"), ("b", b"same\n"), ("u", b"unique\n"),
                       ("sub/c", b"other\n"), ("sub/d", b"other\n"), ("sub/e", b"alone\n")):
        with open(os.path.join(root, "D", name), "wb") as f:
            f.write(data)
    os.link(os.path.join(root, "D", "a"), os.path.join(root, "D", "hardlink"))
    return 7  # regular-file names in D (a hard link is a name)


def check_repeated_arguments(chk, exe, tmp):
    root = os.path.join(tmp, "rep")
    os.mkdir(root)
    nfiles = make_tree(root)
    alone = dedup(exe, ["D"], root)
    chk.status(alone, 0, "dedup D")
    scanned, _ = summary_numbers(alone.stderr)
    chk.check(scanned == nfiles, "dedup D: %d files scanned, got %r" % (nfiles, scanned),
              clitest.show(alone.stderr))
    chk.same_bytes(alone.stdout, b"D/a\nD/b\nD/hardlink\n\nD/sub/c\nD/sub/d\n\n",
                   "dedup D: the groups (hard link listed)")
    for args in (["D", "D"], ["D", "./D"], ["D", "D/sub"], ["D", "D/./sub/"],
                 ["D/sub", "D"], ["D/a", "D"], ["D", "./D/a"], ["D/a", "./D/a", "D"]):
        what = "dedup " + " ".join(args)
        p = dedup(exe, args, root)
        chk.status(p, 0, what)
        scanned, _ = summary_numbers(p.stderr)
        chk.check(scanned == nfiles, "%s: %d files scanned, got %r" % (what, nfiles, scanned),
                  clitest.show(p.stderr))
        got = dc.parse_lines(p.stdout)
        want = dc.parse_lines(alone.stdout)
        # the same files, each reached once, whatever the path it was reached by
        norm = {frozenset(os.path.normpath(x) for x in g) for g in got}
        want = [[os.path.normpath(x) for x in g] for g in want]
        chk.check(norm == {frozenset(g) for g in want}, "%s: the groups of dedup D" % what,
                  clitest.show(p.stdout))
        npaths = sum(len(g) for g in got)
        chk.check(npaths == 5, "%s: 5 paths listed, got %d" % (what, npaths),
                  clitest.show(p.stdout))


def check_repeated_with_links(chk, exe, tmp):
    """-L: the paths through a symlink to a folder are other names of its
    files (listed, as before), but a repeated argument still adds none."""
    root = os.path.join(tmp, "links")
    os.mkdir(root)
    nfiles = make_tree(root)
    os.symlink("sub", os.path.join(root, "D", "link"))
    alone = dedup(exe, ["-L", "D"], root)
    chk.status(alone, 0, "dedup -L D")
    scanned, _ = summary_numbers(alone.stderr)
    chk.check(scanned == nfiles + 3, "dedup -L D: %d files scanned, got %r"
              % (nfiles + 3, scanned), clitest.show(alone.stderr))
    chk.check(b"D/link/c\n" in alone.stdout, "dedup -L D lists the path through the link",
              clitest.show(alone.stdout))
    for args in (["-L", "D", "D"], ["-L", "D", "D/sub"], ["-L", "D/link", "D"]):
        p = dedup(exe, args, root)
        what = "dedup " + " ".join(args)
        chk.status(p, 0, what)
        scanned, _ = summary_numbers(p.stderr)
        chk.check(scanned == nfiles + 3, "%s: %d files scanned, got %r"
                  % (what, nfiles + 3, scanned), clitest.show(p.stderr))
        paths = [x for g in dc.parse_lines(p.stdout) for x in g]
        chk.check(len(paths) == len(set(paths)), "%s: no path listed twice" % what,
                  clitest.show(p.stdout))
        want = {frozenset(g) for g in dc.parse_lines(alone.stdout)}
        chk.check({frozenset(g) for g in dc.parse_lines(p.stdout)} == want,
                  "%s: the groups of dedup -L D" % what, clitest.show(p.stdout))


def main():
    exe = clitest.binary()
    chk = clitest.Checker("dedup_counts")
    with tempfile.TemporaryDirectory() as tmp:
        check_collisions(chk, exe, tmp)
        check_repeated_arguments(chk, exe, tmp)
        check_repeated_with_links(chk, exe, tmp)
    chk.finish()


if __name__ == "__main__":
    main()
