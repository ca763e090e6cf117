"""test_dedup_merge.py - `hashbatch dedup --merge INDEX...`: three scans
of three subtrees (each with --index-out) merged give the same groups as
one scan of the whole tree (--json, compared order-insensitively; the
trees share copies, hard links, odd names and the SHA-1 collision pairs,
which stay ungrouped across shards); every group is proven by bytes when
all files are reachable. A shard whose paths are edited to ones that do
not exist yields groups marked as proven by SHA-1 only, in --json, text,
--csv and the totals. A colliding pair split across two shards is never
grouped. Bad indexes (not an index, a truncated line, a missing field, a
count that does not match, no file) are rejected naming the file and line.

Usage: test_dedup_merge.py PATH/TO/hashbatch
"""
import csv
import io
import json
import os
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402
import dedupcheck as dc  # noqa: E402

TIMEOUT = 60
CHK = None


def dedup(exe, args, cwd=None):
    proc = clitest.run([exe, "dedup"] + args, cwd=cwd, timeout=TIMEOUT)
    dc.no_sanitizer_report(CHK, proc, "dedup %s" % " ".join(map(str, args)))
    return proc


def describe(groups):
    return "\n".join("  " + " | ".join(sorted(p.decode("utf-8", "backslashreplace")
                                             for p in g))
                     for g in sorted(groups, key=sorted))


def make_shards(root):
    """s1, s2, s3 under root, with copies across them."""
    for i, seed in enumerate((3, 4, 5)):
        dc.make_tree(os.path.join(root, b"s%d" % (i + 1)), seed=seed, nfiles=40)
    shared = b"shared across shards\n" * 300
    for s in (b"s1", b"s2", b"s3"):
        dc.write(os.path.join(root, s, b"x", b"shared"), shared)
    dc.write(os.path.join(root, b"s3", b"x", b"shared-again"), shared)


def index_shards(chk, exe, root, out):
    paths = []
    for s in (b"s1", b"s2", b"s3"):
        idx = os.path.join(out, s + b".jsonl")
        proc = dedup(exe, ["-q", "--index-out", idx, os.path.join(root, s)])
        chk.status(proc, 0, "--index-out of %s" % s.decode())
        paths.append(idx)
    return paths


def check_same_groups(chk, exe, root, indexes):
    whole = dedup(exe, ["-q", "--json", root])
    chk.status(whole, 0, "one scan of the whole")
    wdoc, want = dc.parse_json(whole.stdout)
    merged = dedup(exe, ["-q", "--json", "--merge"] + indexes)
    chk.status(merged, 0, "--merge of three shards")
    mdoc, got = dc.parse_json(merged.stdout)
    chk.check(got == want, "three shards merged give the groups of one scan",
              "only merged:\n%s\nonly whole:\n%s" % (describe(got - want), describe(want - got)))
    chk.check(all(g.get("proof") == "bytes" for g in mdoc["groups"]),
              "every group is proven by bytes (all files reachable)")
    chk.check(mdoc["summary"].get("sha1_only_groups") == 0, "no group by SHA-1 only")
    chk.check(len(mdoc["collisions"]) == len(wdoc["collisions"]) > 0,
              "the collisions found by the scan are found by the merge",
              "merge %r\nscan %r" % (mdoc["collisions"], wdoc["collisions"]))
    return want


def unreachable(src, dst, keep_collisions):
    """A copy of index src whose paths name nothing that exists (without
    the collision pairs of col/ unless keep_collisions)."""
    with open(src, "rb") as f:
        lines = f.read().split(b"\n")
    out = []
    for line in lines[1:]:
        if not line:
            continue
        rec = json.loads(line.decode())
        p = bytes.fromhex(rec["path_hex"]) if "path_hex" in rec else rec["path"].encode()
        if b"/col/" in p and not keep_collisions:
            continue
        p = b"/nonexistent-hb" + p
        rec["path"] = p.decode("utf-8", "replace")
        if "path_hex" in rec:
            rec["path_hex"] = p.hex()
        out.append(json.dumps(rec).encode())
    head = json.loads(lines[0].decode())
    head["files"] = len(out)
    with open(dst, "wb") as f:
        f.write(b"\n".join([json.dumps(head).encode()] + out) + b"\n")


def check_sha1_only(chk, exe, out, indexes, want):
    far = os.path.join(out, b"s3-far.jsonl")
    unreachable(indexes[2], far, False)
    args = ["-q", "--merge", indexes[0], indexes[1], far]
    proc = dedup(exe, ["--json"] + args)
    chk.status(proc, 0, "--merge with an unreachable shard")
    doc, got = dc.parse_json(proc.stdout)
    moved = set()
    for g in want:
        g = frozenset(p if b"/s3/" not in p else b"/nonexistent-hb" + p for p in g
                      if b"/s3/col/" not in p)
        if len(g) > 1:
            moved.add(g)
    chk.check(got == moved, "an unreachable shard: the same groups",
              "only merged:\n%s\nonly expected:\n%s" % (describe(got - moved),
                                                       describe(moved - got)))
    for g in doc["groups"]:
        far_files = any(f["path"].startswith("/nonexistent-hb") for f in g["files"])
        chk.check(g.get("proof") == ("sha1" if far_files else "bytes"),
                  "proof of the group of %s" % g["files"][0]["path"], repr(g.get("proof")))
    nsha1 = sum(g.get("proof") == "sha1" for g in doc["groups"])
    chk.check(nsha1 > 0 and doc["summary"].get("sha1_only_groups") == nsha1,
              "the summary counts the groups by SHA-1 only", repr(doc["summary"]))
    text = dedup(exe, args)
    marks = text.stdout.count(b"# proven by SHA-1 only")
    chk.check(marks == nsha1, "text: a marker line before each SHA-1-only group",
              "%d markers, %d groups" % (marks, nsha1))
    csvp = dedup(exe, ["--csv"] + args)
    rows = list(csv.reader(io.StringIO(csvp.stdout.decode("latin-1"), newline="")))
    chk.check(rows[0] == ["group", "proof", "size", "sha1", "host", "device", "inode", "path"],
              "--csv --merge: header", repr(rows[0]))
    chk.check(len({r[0] for r in rows[1:] if r[1] == "sha1"}) == nsha1,
              "--csv: the proof column")
    summ = dedup(exe, ["--merge", indexes[0], indexes[1], far])
    chk.check(b"proven by SHA-1 only" in summ.stderr, "the totals say SHA-1 only",
              clitest.show(summ.stderr))
    # the collision pairs unreachable: their SHA-1s prove nothing (the
    # scan of s3 found two contents for each, and so do s1 and s2): never
    # grouped, each left out with a message, the run partial
    unreachable(indexes[2], far, True)
    proc = dedup(exe, ["--json"] + args)
    chk.status(proc, 1, "--merge with unreachable collision pairs")
    doc, got = dc.parse_json(proc.stdout)
    bad = [g for g in got if any(b"/nonexistent-hb" in p and b"/col/" in p for p in g)]
    chk.check(not bad, "unreachable colliding files are never grouped", describe(bad))
    with open(indexes[2], "rb") as f:
        ncol = sum(b"/col/" in line for line in f.read().split(b"\n")[1:])
    chk.check(ncol > 0 and proc.stderr.count(b"cannot be grouped") == ncol,
              "each unreachable colliding file is left out, with a message",
              clitest.show(proc.stderr))
    chk.check(got == moved, "the other groups stay", describe(got ^ moved))


def check_split_collision(chk, exe, top):
    a, b = dc.colliding_pair(dc.SHATTERED, b"tail" * 10)
    for s, data in ((b"c1", a), (b"c2", b)):
        dc.write(os.path.join(top, s, b"pdf"), data)
        dc.write(os.path.join(top, s, b"other"), b"other file " + s)
        proc = dedup(exe, ["-q", "--index-out", os.path.join(top, s + b".jsonl"),
                           os.path.join(top, s)])
        chk.status(proc, 0, "--index-out of %s" % s.decode())
    proc = dedup(exe, ["-q", "--json", "--merge", os.path.join(top, b"c1.jsonl"),
                       os.path.join(top, b"c2.jsonl")])
    chk.status(proc, 0, "--merge of a collision pair split across shards")
    doc, groups = dc.parse_json(proc.stdout)
    chk.check(not groups, "the colliding pair is not grouped", describe(groups))
    chk.check(len(doc["collisions"]) == 1, "the collision is reported", repr(doc["collisions"]))
    chk.check(b"SHA-1 collision" in proc.stderr, "and warned about", clitest.show(proc.stderr))


def check_bad(chk, exe, top, good):
    with open(good, "rb") as f:
        lines = f.read().split(b"\n")[:-1]
    cases = [
        ("not an index", b'{"hello": 1}\n', b"line 1"),
        ("not JSON", b"size,sha1\n", b"line 1"),
        ("a truncated line", b"\n".join(lines[:3]) + b"\n" + lines[3][:25], b"line 4"),
        ("a missing field", b"\n".join(lines[:2] + [lines[2].replace(b'"sha1"', b'"sha9"')]
                                       + lines[3:]) + b"\n", b"line 3"),
        ("lines missing", b"\n".join(lines[:-1]) + b"\n", b"truncated"),
        ("an empty file", b"", b"empty"),
    ]
    for what, data, mark in cases:
        p = os.path.join(top, b"bad.jsonl")
        dc.write(p, data)
        proc = dedup(exe, ["-q", "--json", "--merge", good, p])
        chk.status(proc, 1, "--merge of %s" % what)
        chk.check(b"bad.jsonl" in proc.stderr and mark in proc.stderr,
                  "%s: the error names the file and %s" % (what, mark.decode()),
                  clitest.show(proc.stderr))
        chk.check(proc.stdout == b"", "%s: no report" % what, clitest.show(proc.stdout))
    proc = dedup(exe, ["-q", "--merge", os.path.join(top, b"missing.jsonl")])
    chk.status(proc, 1, "--merge of a missing file")
    chk.check(b"missing.jsonl" in proc.stderr, "a missing index is named")


def main():
    global CHK
    exe = clitest.binary()
    chk = CHK = clitest.Checker("test_dedup_merge")
    with tempfile.TemporaryDirectory(prefix="hb-merge-") as top:
        top = top.encode()
        root = os.path.join(top, b"tree")
        out = os.path.join(top, b"idx")
        os.makedirs(out)
        make_shards(root)
        indexes = index_shards(chk, exe, root, out)
        want = check_same_groups(chk, exe, root, indexes)
        check_sha1_only(chk, exe, out, indexes, want)
        check_split_collision(chk, exe, top)
        check_bad(chk, exe, top, indexes[0])
    chk.finish()


if __name__ == "__main__":
    main()
