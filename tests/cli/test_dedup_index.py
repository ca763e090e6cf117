"""test_dedup_index.py - `hashbatch dedup --index-out FILE`: the scan's
index as JSON lines: a header (format, version, host, roots,
time, min_size, the count of lines that follow), then one line per path of
every regular file at or above --min-size (files of a unique size too),
each with size, prefix SHA-1 (first 4 KiB), SHA-1, device, inode and
mtime_ns checked against hashlib and os.stat, names that are not UTF-8 in
path_hex. The index is written atomically (no temporary left beside it,
an old index replaced whole); `--index-out -` writes it to stdout without
the groups; an index that cannot be written is an error naming it.

Usage: test_dedup_index.py PATH/TO/hashbatch
"""
import hashlib
import json
import os
import socket
import stat
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


def expected(root, min_size):
    """{path: line fields} for every regular file the index must list."""
    want = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            if not stat.S_ISREG(st.st_mode) or st.st_size == 0 or st.st_size < min_size:
                continue
            with open(p, "rb") as f:
                data = f.read()
            want[p] = {"size": st.st_size, "sha1": hashlib.sha1(data).hexdigest(),
                       "prefix_sha1": hashlib.sha1(data[:4096]).hexdigest(),
                       "device": st.st_dev, "inode": st.st_ino, "mtime_ns": st.st_mtime_ns}
    return want


def line_path(rec):
    if "path_hex" in rec:
        return bytes.fromhex(rec["path_hex"])
    return rec["path"].encode("utf-8")


def check_index(chk, text, root, min_size, what):
    lines = text.split(b"\n")
    chk.check(lines[-1] == b"", what + ": ends with a newline")
    try:
        recs = [json.loads(x.decode("utf-8")) for x in lines[:-1]]
    except ValueError as e:
        chk.fail(what + ": not JSON lines: %s" % e, clitest.show(text))
        return
    head, body = recs[0], recs[1:]
    chk.check(head.get("format") == "hashbatch-index" and head.get("version") == 1,
              what + ": header format and version", repr(head))
    chk.check(head.get("host") == socket.gethostname(), what + ": header host", repr(head))
    chk.check(head.get("files") == len(body), what + ": header counts the lines", repr(head))
    chk.check(head.get("min_size") == min_size, what + ": header min_size", repr(head))
    chk.check(head.get("roots") == [root.decode()], what + ": header roots",
              repr(head))
    chk.check(isinstance(head.get("time"), str) and head["time"].endswith("Z"),
              what + ": header time", repr(head))
    want = expected(root, min_size)
    got = {}
    for rec in body:
        got[line_path(rec)] = {k: rec.get(k) for k in
                               ("size", "sha1", "prefix_sha1", "device", "inode", "mtime_ns")}
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    chk.check(not missing and not extra, what + ": the files listed",
              "missing %r\nextra %r" % (missing[:10], extra[:10]))
    wrong = [p for p in want if p in got and got[p] != want[p]]
    chk.check(not wrong, what + ": fields against hashlib and os.stat",
              "\n".join("%r: got %r want %r" % (p, got[p], want[p]) for p in wrong[:5]))
    odd = [rec for rec in body if b"\xff" in line_path(rec)]
    chk.check(odd and all("path_hex" in r for r in odd), what + ": non-UTF-8 names in path_hex")


def main():
    global CHK
    exe = clitest.binary()
    chk = CHK = clitest.Checker("test_dedup_index")
    with tempfile.TemporaryDirectory(prefix="hb-index-") as top:
        top = top.encode()
        root = os.path.join(top, b"tree")
        dc.make_tree(root, seed=11, nfiles=80)
        out = os.path.join(top, b"out")
        os.makedirs(out)
        idx = os.path.join(out, b"index.jsonl")
        dc.write(idx, b"an older index\n")
        for min_size in (0, 5000):
            what = "--index-out --min-size %d" % min_size
            proc = dedup(exe, ["-q", "--json", "--min-size", str(min_size),
                               "--index-out", idx, root])
            chk.status(proc, 0, what)
            doc = json.loads(proc.stdout.decode())
            chk.check("groups" in doc, what + ": the report still on stdout")
            with open(idx, "rb") as f:
                check_index(chk, f.read(), root, min_size, what)
            chk.check(os.listdir(out) == [b"index.jsonl"],
                      what + ": nothing left beside the index", repr(os.listdir(out)))
        proc = dedup(exe, ["-q", "--index-out", "-", root])
        chk.status(proc, 0, "--index-out -")
        check_index(chk, proc.stdout, root, 0, "--index-out -")
        proc = dedup(exe, ["-q", "--index-out", os.path.join(top, b"nope", b"i.jsonl"), root])
        chk.status(proc, 1, "--index-out in a missing folder")
        chk.check(b"nope/i.jsonl" in proc.stderr, "the error names the index",
                  clitest.show(proc.stderr))
    chk.finish()


if __name__ == "__main__":
    main()
