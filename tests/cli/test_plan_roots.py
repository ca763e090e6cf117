#!/usr/bin/env python3
"""test_plan_roots.py - the plan's "roots" and "host" (issue 27): `dedup
--json` lists, before "groups", each DIR argument as given with the
device and inode the walk saw (a FILE argument: the directory holding it
as written, "." when it has no slash; a directory given through a
symbolic link: the directory it leads to; a name that is not UTF-8: its
bytes in "path_hex"; a repeated argument once; a merge: none). `link` and
`remove` read them: a malformed roots entry refuses the whole plan naming
its place, nothing done; "roots": null is no roots; files' "host" fields
load (this machine's name or another's), a malformed one is refused. A
plan bigger than the reader's window still has its errors placed by line
and column, read from a file and from stdin.

Usage: test_plan_roots.py PATH/TO/hashbatch
"""
import json
import os
import shutil
import socket
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402

HB = clitest.binary()
C = clitest.Checker("plan_roots")


def hb(*args, cwd=None, input=None):
    return clitest.run([HB] + list(args), cwd=cwd, input=input)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def make_tree(root):
    """tree/ with a duplicate pair, other/ with a copy, loose files."""
    write(os.path.join(root, "tree", "a", "k1"), b"alpha\n" * 100)
    write(os.path.join(root, "tree", "d", "x1"), b"alpha\n" * 100)
    write(os.path.join(root, "other", "k2"), b"alpha\n" * 100)
    write(os.path.join(root, "f1"), b"bravo\n" * 50)
    write(os.path.join(root, "sub", "f2"), b"bravo\n" * 50)
    os.symlink("tree", os.path.join(root, "via-link"))


def identity(path):
    st = os.stat(path)
    return (st.st_dev, st.st_ino)


def roots_of(root, *args, status=0):
    p = hb("dedup", "--json", "-q", *args, cwd=root)
    C.status(p, status, "dedup --json %s" % " ".join(args))
    text = p.stdout.decode("utf-8", "surrogateescape")
    doc = json.loads(text)
    C.check(list(doc)[:2] == ["roots", "groups"], "%s: roots come first, then groups" %
            " ".join(args), str(list(doc)))
    return doc, [(r.get("path"), r.get("path_hex"), r["device"], r["inode"])
                 for r in doc.get("roots", [])]


def test_dir_and_file_roots(root):
    doc, roots = roots_of(root, "tree", "other/", "f1", "sub/f2", "tree")
    want = [("tree", None) + identity(os.path.join(root, "tree")),
            ("other/", None) + identity(os.path.join(root, "other")),
            (".", None) + identity(root),
            ("sub", None) + identity(os.path.join(root, "sub"))]
    C.check(roots == want, "DIR as given, FILE by its folder as written, a repeat once",
            "got %s\nwant %s" % (roots, want))
    _, roots = roots_of(root, "via-link")
    C.check(roots == [("via-link", None) + identity(os.path.join(root, "tree"))],
            "a DIR through a symbolic link: as given, with the directory it leads to", str(roots))
    absolute = os.path.join(root, "sub", "f2")
    _, roots = roots_of(root, absolute, "f1")
    C.check(roots == [(os.path.join(root, "sub"), None) + identity(os.path.join(root, "sub")),
                      (".", None) + identity(root)],
            "an absolute FILE: its folder as written", str(roots))
    _, roots = roots_of(root, "missing-dir", "tree", status=1)
    C.check([r[0] for r in roots] == ["tree"], "an argument not reached has no root", str(roots))


def test_odd_root(root):
    odd = os.path.join(root.encode(), b"r\xff\n")
    write(odd + b"/c1", b"charlie" * 9)
    write(odd + b"/c2", b"charlie" * 9)
    p = hb("dedup", "--json", "-q", b"r\xff\n".decode("utf-8", "surrogateescape"), cwd=root)
    C.status(p, 0, "dedup --json of a folder whose name is not UTF-8")
    doc = json.loads(p.stdout.decode("utf-8", "surrogateescape"))
    r = doc["roots"][0] if doc.get("roots") else {}
    st = os.stat(odd)
    C.check(r.get("path_hex") == b"r\xff\n".hex() and r.get("device") == st.st_dev and
            r.get("inode") == st.st_ino,
            "a root that is not UTF-8 carries path_hex and its identity", str(r))
    p2 = hb("remove", "--dry-run", "-", cwd=root, input=p.stdout)
    C.status(p2, 0, "that plan loads and its pair would be removed")


def test_merge_has_no_roots(root):
    p = hb("dedup", "-q", "--index-out", "idx.jsonl", "tree", cwd=root)
    C.status(p, 0, "dedup --index-out")
    p = hb("dedup", "--merge", "--json", "-q", "idx.jsonl", cwd=root)
    C.status(p, 0, "dedup --merge --json")
    doc = json.loads(p.stdout)
    C.check(doc.get("roots") == [], "a merge plan lists no roots", str(doc.get("roots")))
    p = hb("remove", "--dry-run", "-", cwd=root, input=p.stdout)
    C.check(b"nothing was done" not in p.stderr, "a merge plan loads", clitest.show(p.stderr))


def good_plan(root):
    p = hb("dedup", "--json", "-q", "tree", cwd=root)
    C.status(p, 0, "dedup --json tree")
    return json.loads(p.stdout)


def refused(root, name, doc_or_text, want):
    text = doc_or_text if isinstance(doc_or_text, str) else json.dumps(doc_or_text)
    write(os.path.join(root, name), text.encode())
    before = {n: os.lstat(os.path.join(root, "tree", n)).st_ino for n in ("a/k1", "d/x1")}
    p = hb("remove", name, cwd=root)
    C.status(p, 1, "plan %s refused" % name)
    err = p.stderr.decode("utf-8", "replace")
    C.check(name in err and want in err and "nothing was done" in err,
            "%s: the message names the plan and the place (%s)" % (name, want), err)
    after = {n: os.lstat(os.path.join(root, "tree", n)).st_ino for n in ("a/k1", "d/x1")}
    C.check(before == after, "%s: nothing removed" % name)


def test_bad_roots(root):
    doc = good_plan(root)
    base = doc["roots"][0]
    bad = json.loads(json.dumps(doc))
    bad["roots"] = [base, dict(base), dict(base, device="x")]
    refused(root, "bad-device.json", bad, 'roots[2]: missing "device"')
    bad["roots"] = [base, 7]
    refused(root, "bad-entry.json", bad, "roots[1]: not an object")
    bad["roots"] = [{"device": 1, "inode": 2}]
    refused(root, "bad-path.json", bad, 'roots[0]: missing "path"')
    bad["roots"] = [dict(base, path_hex="7")]
    refused(root, "bad-hex.json", bad, 'roots[0]: "path_hex"')
    bad["roots"] = {"path": "tree"}
    refused(root, "bad-kind.json", bad, '"roots" is neither an array nor null')
    text = json.dumps(doc)
    refused(root, "twice.json", text[:-1] + ', "roots": []}', '"roots" given twice')
    ok = json.loads(json.dumps(doc))
    ok["roots"] = None
    p = hb("remove", "--dry-run", "-", cwd=root, input=json.dumps(ok).encode())
    C.status(p, 0, '"roots": null is a plan without roots')
    del ok["roots"]
    p = hb("remove", "--dry-run", "-", cwd=root, input=json.dumps(ok).encode())
    C.status(p, 0, "a plan without roots (made before them) loads")


def test_hosts(root):
    doc = good_plan(root)
    here = json.loads(json.dumps(doc))
    for f in here["groups"][0]["files"]:
        f["host"] = socket.gethostname()
    p = hb("remove", "--dry-run", "-", cwd=root, input=json.dumps(here).encode())
    C.status(p, 0, "files on this host (by name) load and would be removed")
    C.check(b"would remove" in p.stdout, "this host's files are acted on", clitest.show(p.stdout))
    other = json.loads(json.dumps(doc))
    other["groups"].append({"size": 1, "sha1": None, "files": [
        {"path": "x/%d" % i, "device": 1, "inode": 10 + i, "host": "h%d" % (i % 3)}
        for i in range(6)]})
    p = hb("remove", "--dry-run", "-", cwd=root, input=json.dumps(other).encode())
    C.check(b"nothing was done" not in p.stderr,
            "a plan naming other hosts loads", clitest.show(p.stderr))
    bad = json.loads(json.dumps(doc))
    bad["groups"][0]["files"][1]["host"] = 5
    refused(root, "bad-host.json", bad, 'groups[0].files[1]: "host"')


def test_big_plan_errors(root):
    """An error past the reader's first window, placed by line and column."""
    groups = [{"size": 4096, "sha1": "%040x" % g, "files": [
        {"path": "/srv/store/dir%04d/file-%06d.dat" % (g, i), "device": 1,
         "inode": 2 * g + i} for i in range(2)]} for g in range(8000)]
    text = json.dumps({"groups": groups}, indent=1)
    at = text.rindex('"inode": ') + len('"inode"')
    broken = text[:at] + text[at + 1:]  # '"inode" 15999': no colon
    pos = at + 1  # the digit where ':' was expected
    line = text[:pos].count("\n") + 1
    col = pos - text.rfind("\n", 0, pos)  # columns count bytes from 1
    want = "line %d, column %d: expected ':'" % (line, col)
    C.check(len(broken) > 1 << 20, "the plan is bigger than the first window (%d bytes)" %
            len(broken))
    refused(root, "big.json", broken, want)
    p = hb("remove", "-", cwd=root, input=broken.encode())
    C.status(p, 1, "the big plan on stdin refused")
    C.check(want.encode() in p.stderr, "stdin: the same place", clitest.show(p.stderr))
    p = hb("remove", "--dry-run", "-", cwd=root, input=text.encode())
    C.status(p, 1, "the whole big plan loads (its files do not exist: skipped)")
    C.check(b"nothing was done" not in p.stderr, "the big plan is accepted",
            clitest.show(p.stderr[-500:]))


def main():
    base = tempfile.mkdtemp(prefix="hb-roots-")
    try:
        make_tree(base)
        for t in (test_dir_and_file_roots, test_odd_root, test_merge_has_no_roots,
                  test_bad_roots, test_hosts, test_big_plan_errors):
            t(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    C.finish()


if __name__ == "__main__":
    main()
