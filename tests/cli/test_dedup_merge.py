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

One file listed under two hosts (a shared store, cloned machines, an index
with its host renamed) is one file: never its own duplicate, no bytes
reclaimable, counted once; one index given twice (or with a copy of
itself) counts its files once and changes no group; records of one file
that disagree on its SHA-1 leave it out, reported; and a real duplicate
between two hosts' indexes, both files reachable here, is still grouped,
proven by bytes. As root (else said skipped), an overlay mount and its
lower layer indexed apart are one file when merged: no bytes reclaimable.

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


def rewrite(src, dst, host=None, path=None, sha1=None, extra=None):
    """A copy of index src: its header's host set to host; each file's
    path passed through path(bytes) -> bytes, its sha1 through
    sha1(path, hex) -> hex (None: kept), and the members of extra set."""
    with open(src, "rb") as f:
        lines = [json.loads(line.decode()) for line in f.read().split(b"\n") if line]
    if host is not None:
        lines[0]["host"] = host
    for rec in lines[1:]:
        p = bytes.fromhex(rec["path_hex"]) if "path_hex" in rec else rec["path"].encode()
        if path is not None:
            p = path(p)
            rec["path"] = p.decode("utf-8", "replace")
            if "path_hex" in rec:
                rec["path_hex"] = p.hex()
        if sha1 is not None:
            rec["sha1"] = sha1(p, rec["sha1"])
        rec.update(extra or {})
    with open(dst, "wb") as f:
        f.write(b"".join(json.dumps(x).encode() + b"\n" for x in lines))


def merge_json(chk, exe, indexes, what, status=0):
    proc = dedup(exe, ["-q", "--json", "--merge"] + indexes)
    chk.status(proc, status, "--merge of %s" % what)
    if proc.returncode not in (0, 1) or not proc.stdout:
        return {"groups": [], "summary": {}}, set(), proc
    doc, groups = dc.parse_json(proc.stdout)
    return doc, groups, proc


def no_name_twice(chk, doc, what):
    names = [(f.get("host"), f.get("path_hex", f["path"])) for g in doc["groups"]
             for f in g["files"]]
    chk.check(len(names) == len(set(names)), "%s: no name is listed twice" % what,
              repr(sorted(names)))


def check_one_file_two_hosts(chk, exe, top):
    """One store, listed by this machine and by others (same device, inode,
    size and mtime): one file, not a group of duplicates."""
    tree = os.path.join(top, b"store")
    dc.write(os.path.join(tree, b"only"), os.urandom(4000))
    dc.write(os.path.join(tree, b"other"), os.urandom(5000))
    here = os.path.join(top, b"store-here.jsonl")
    proc = dedup(exe, ["-q", "--index-out", here, tree])
    chk.status(proc, 0, "--index-out of the store")
    node2 = os.path.join(top, b"store-node2.jsonl")  # the same index, renamed
    node3 = os.path.join(top, b"store-node3.jsonl")  # mounted elsewhere there
    rewrite(here, node2, host="node2")
    rewrite(here, node3, host="node3", path=lambda p: b"/mnt/node3" + p)
    for what, idx in (("this host and node2 (one store, same paths)", [here, node2]),
                      ("this host and node3 (mounted elsewhere)", [here, node3]),
                      ("node2 and node3 (neither is this host)", [node2, node3]),
                      ("three hosts", [node3, here, node2])):
        doc, groups, _ = merge_json(chk, exe, idx, what)
        chk.check(not groups, "%s: a file is not its own duplicate" % what,
                  json.dumps(doc["groups"], indent=1)[:2000])
        chk.check(doc["summary"].get("reclaimable_bytes") == 0,
                  "%s: nothing reclaimable" % what, repr(doc["summary"]))
        chk.check(doc["summary"].get("files_scanned") == 2,
                  "%s: two files scanned" % what, repr(doc["summary"]))
    # with filesystems named ("fs"): agreeing, or unknown on one side, they
    # join the records; disagreeing, they keep them apart, but both names
    # reach one file here, which is never compared with itself
    fs = {}
    for name, value in (("fs1", 1), ("fs2", 2)):
        fs[name] = os.path.join(top, b"store-node2-%s.jsonl" % name.encode())
        rewrite(here, fs[name], host="node2", extra={"fs": value})
    fs_here = os.path.join(top, b"store-here-fs1.jsonl")
    rewrite(here, fs_here, extra={"fs": 1})
    for what, idx in (("one filesystem named twice", [fs_here, fs["fs1"]]),
                      ("a filesystem named once", [here, fs["fs2"]]),
                      ("two filesystems, one file here", [fs_here, fs["fs2"]])):
        doc, groups, _ = merge_json(chk, exe, idx, what)
        chk.check(not groups and doc["summary"].get("reclaimable_bytes") == 0 and
                  doc["summary"].get("files_scanned") == 2,
                  "%s: one file, not its own duplicate" % what,
                  repr(doc["summary"]) + "\n" + describe(groups))
    text = dedup(exe, ["--merge", here, node2])
    chk.check(b"0 duplicate files in 0 groups" in text.stderr and b"2 files scanned" in text.stderr,
              "this host and node2: the totals", clitest.show(text.stderr))


def check_index_twice(chk, exe, top):
    """One index given twice, or with a copy of itself: its files once."""
    tree = os.path.join(top, b"twice")
    data = os.urandom(3000)
    dc.write(os.path.join(tree, b"x"), data)
    dc.write(os.path.join(tree, b"y"), data)
    dc.write(os.path.join(tree, b"z"), os.urandom(3000))
    os.link(os.path.join(tree, b"z"), os.path.join(tree, b"z-link"))
    idx = os.path.join(top, b"twice.jsonl")
    proc = dedup(exe, ["-q", "--index-out", idx, tree])
    chk.status(proc, 0, "--index-out of twice/")
    copy = os.path.join(top, b"twice-copy.jsonl")
    rewrite(idx, copy)
    once, want, _ = merge_json(chk, exe, [idx], "one index")
    chk.check(once["summary"].get("files_scanned") == 4, "one index: 4 files scanned",
              repr(once["summary"]))
    for what, args in (("one index twice", [idx, idx]), ("an index and its copy", [idx, copy]),
                       ("one index three times", [copy, idx, copy])):
        doc, got, _ = merge_json(chk, exe, args, what)
        chk.check(doc["summary"].get("files_scanned") == 4,
                  "%s: its files counted once" % what, repr(doc["summary"]))
        chk.check(got == want, "%s: the groups of one index" % what,
                  "got:\n%s\nwant:\n%s" % (describe(got), describe(want)))
        chk.check(doc["summary"] == once["summary"], "%s: the totals of one index" % what,
                  "%r\n%r" % (doc["summary"], once["summary"]))
        no_name_twice(chk, doc, what)
    # one file whose records disagree on its SHA-1 (it changed between
    # the scans): left out, reported, never grouped
    stale = os.path.join(top, b"twice-stale.jsonl")
    rewrite(idx, stale, sha1=lambda p, h: "0" * 40 if p.endswith(b"/x") else h)
    doc, got, proc = merge_json(chk, exe, [idx, stale], "an index and a stale copy", 1)
    links = {frozenset([os.path.join(tree, b"z"), os.path.join(tree, b"z-link")])}
    chk.check(got == links and b"changed between the scans" in proc.stderr,
              "a file listed with two SHA-1s is left out, reported (the others stay)",
              describe(got) + "\n" + clitest.show(proc.stderr))


def check_same_machine_two_hosts(chk, exe, top):
    """A real duplicate between the indexes of two hosts, both files
    reachable here (the hosts are this machine): grouped, by bytes."""
    data = os.urandom(4000)
    p, q = os.path.join(top, b"host-a"), os.path.join(top, b"host-b")
    dc.write(os.path.join(p, b"f"), data)
    dc.write(os.path.join(q, b"g"), data)
    dc.write(os.path.join(q, b"h"), os.urandom(4000))
    ia, ib = os.path.join(top, b"host-a.jsonl"), os.path.join(top, b"host-b.jsonl")
    for d, i in ((p, ia), (q, ib)):
        chk.status(dedup(exe, ["-q", "--index-out", i, d]), 0, "--index-out of %s" % d.decode())
    ib2 = os.path.join(top, b"host-b-node2.jsonl")
    rewrite(ib, ib2, host="node2")
    for what, idx in (("this host and node2", [ia, ib2]), ("node2 and this host", [ib2, ia])):
        doc, groups, _ = merge_json(chk, exe, idx, what)
        want = {frozenset([os.path.join(p, b"f"), os.path.join(q, b"g")])}
        chk.check(groups == want, "%s: the duplicate is grouped" % what, describe(groups))
        g = doc["groups"][0] if doc["groups"] else {}
        chk.check(g.get("proof") == "bytes" and g.get("distinct_files") == 2 and
                  g.get("reclaimable_bytes") == 4000,
                  "%s: two distinct files, proven by bytes, 4000 bytes reclaimable" % what,
                  repr({k: v for k, v in g.items() if k != "files"}))
        hosts = sorted(f["host"] for f in g.get("files", []))
        chk.check("node2" in hosts and len(set(hosts)) == 2, "%s: each file's host" % what,
                  repr(hosts))
        chk.check(doc["summary"].get("files_scanned") == 3, "%s: 3 files scanned" % what,
                  repr(doc["summary"]))


def check_overlay(chk, exe, top):
    """merged/x (overlayfs) and lower/x, indexed apart, merged: one file
    seen twice (same inode number, the overlay's own st_dev), never its
    own duplicate. Root only: skipped otherwise, or where no overlay can
    be mounted."""
    base = os.path.join(top, b"ovl")
    for d in (b"lower", b"upper", b"work", b"merged"):
        os.makedirs(os.path.join(base, d))
    dc.write(os.path.join(base, b"lower", b"x"), os.urandom(3000))
    opts = b"lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work" % (base, base, base)
    merged = os.path.join(base, b"merged")
    if os.geteuid() != 0 or clitest.run(["mount", "-t", "overlay", "overlay", "-o", opts,
                                         merged]).returncode != 0:
        print("test_dedup_merge: overlay case skipped (needs root and an overlay mount)")
        return
    try:
        idx = []
        for d in (merged, os.path.join(base, b"lower")):
            idx.append(d + b".jsonl")
            chk.status(dedup(exe, ["-q", "--index-out", idx[-1], d]), 0,
                       "--index-out of %s" % d.decode())
        doc, groups, _ = merge_json(chk, exe, idx, "an overlay and its lower layer")
        chk.check(all(g["distinct_files"] == 1 for g in doc["groups"]) and
                  doc["summary"].get("reclaimable_bytes") == 0,
                  "an overlay and its lower layer: one file, nothing reclaimable",
                  json.dumps(doc, indent=1)[:2000])
    finally:
        clitest.run(["umount", merged])


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
        check_one_file_two_hosts(chk, exe, top)
        check_index_twice(chk, exe, top)
        check_same_machine_two_hosts(chk, exe, top)
        check_overlay(chk, exe, top)
    chk.finish()


if __name__ == "__main__":
    main()
