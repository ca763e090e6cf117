"""test_dedup_dirs.py - `hashbatch dedup --dirs`: directories whose whole
contents are identical are one group (only the topmost: the copies' own
subdirectories and files are not listed again), on a tree with nested
identical directories, empty files, files under --min-size, symbolic
links, and near copies that must not match (one byte changed deep
inside, an extra file, a renamed file, a different small file). Every
reported group is checked against an independent Python comparison;
every layout (text, -S, -z, --json, --csv) carries the groups; the JSON
file entries carry mtime_ns; without --dirs nothing changes.

Usage: test_dedup_dirs.py PATH/TO/hashbatch
"""
import csv
import io
import json
import os
import shutil
import stat
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402
import dedupcheck as dc  # noqa: E402

TIMEOUT = 60


def make_a(root):
    """The model directory a/: nested folders, empty files, small files,
    a symlink, a file of 0 bytes and one of 70000."""
    dc.write(os.path.join(root, b"x"), b"x content\n" * 50)
    dc.write(os.path.join(root, b"empty"), b"")
    dc.write(os.path.join(root, b"tiny"), b"ab")
    dc.write(os.path.join(root, b"sub", b"big"), bytes(range(256)) * 300)
    dc.write(os.path.join(root, b"sub", b"deep", b"leaf"), b"leaf bytes " * 500)
    dc.write(os.path.join(root, b"sub", b"deep", b"empty2"), b"")
    os.makedirs(os.path.join(root, b"sub", b"hollow"))  # an empty folder
    os.symlink(b"x", os.path.join(root, b"link"))


def build(top):
    t = os.path.join(top, b"t")
    a = os.path.join(t, b"a")
    make_a(a)
    for name in (b"b", b"f", b"h"):  # exact copies
        shutil.copytree(a, os.path.join(t, name), symlinks=True)
    # c: one byte changed deep inside
    shutil.copytree(a, os.path.join(t, b"c"), symlinks=True)
    leaf = os.path.join(t, b"c", b"sub", b"deep", b"leaf")
    data = bytearray(open(leaf, "rb").read())
    data[-1] ^= 1
    dc.write(leaf, bytes(data))
    # d: an extra (empty) file
    shutil.copytree(a, os.path.join(t, b"d"), symlinks=True)
    dc.write(os.path.join(t, b"d", b"sub", b"extra"), b"")
    # e: a file renamed
    shutil.copytree(a, os.path.join(t, b"e"), symlinks=True)
    os.rename(os.path.join(t, b"e", b"x"), os.path.join(t, b"e", b"y"))
    # g: a small file (under --min-size 100) of the same size, other bytes
    shutil.copytree(a, os.path.join(t, b"g"), symlinks=True)
    dc.write(os.path.join(t, b"g", b"tiny"), b"aX")
    # k: the symlink points elsewhere
    shutil.copytree(a, os.path.join(t, b"k"), symlinks=True)
    os.unlink(os.path.join(t, b"k", b"link"))
    os.symlink(b"tiny", os.path.join(t, b"k", b"link"))
    # n1/inner and n2/inner identical, n1 and n2 not
    make_a(os.path.join(t, b"n1", b"inner"))
    shutil.copytree(os.path.join(t, b"n1", b"inner"), os.path.join(t, b"n2", b"inner"),
                    symlinks=True)
    dc.write(os.path.join(t, b"n1", b"inner", b"own"), b"own" * 100)
    dc.write(os.path.join(t, b"n2", b"inner", b"own"), b"own" * 100)
    dc.write(os.path.join(t, b"n1", b"only1"), b"one" * 100)
    dc.write(os.path.join(t, b"n2", b"only2"), b"two" * 100)
    # a copy of a/x outside every duplicate folder
    dc.write(os.path.join(t, b"z", b"x"), b"x content\n" * 50)
    return t


def tree_value(path):
    """The contents of a folder as a comparable value (names, types, bytes,
    link targets), read independently of hashbatch."""
    out = []
    for name in sorted(os.listdir(path)):
        p = os.path.join(path, name)
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            out.append((name, "l", os.readlink(p)))
        elif stat.S_ISDIR(st.st_mode):
            out.append((name, "d", tree_value(p)))
        elif stat.S_ISREG(st.st_mode):
            with open(p, "rb") as f:
                out.append((name, "f", f.read()))
        else:
            out.append((name, "?", st.st_mode))
    return tuple(out)


def tree_counts(path):
    files = size = 0
    for dirpath, _, names in os.walk(path):
        for n in names:
            st = os.lstat(os.path.join(dirpath, n))
            if stat.S_ISREG(st.st_mode):
                files += 1
                size += st.st_size
    return files, size


def dedup(exe, args, cwd):
    proc = clitest.run([exe, "dedup"] + args, cwd=cwd, timeout=TIMEOUT)
    dc.no_sanitizer_report(CHK, proc, "dedup %s" % " ".join(map(str, args)))
    return proc


def text_groups(out):
    """(dir groups, file groups) of the text layout, as sets of frozensets."""
    dirs, files = set(), set()
    for block in dc.parse_lines(out):
        if all(p.endswith(b"/") for p in block):
            dirs.add(frozenset(p[:-1] for p in block))
        else:
            files.add(frozenset(block))
    return dirs, files


CHK = None


def check_more(chk, exe, top):
    """Hard links across copies, FIFOs, odd names."""
    t2 = os.path.join(top, b"t2")
    make_a(os.path.join(t2, b"p"))
    dc.write(os.path.join(t2, b"p", b"pq-only"), b"pq" * 99)
    shutil.copytree(os.path.join(t2, b"p"), os.path.join(t2, b"q"), symlinks=True)
    os.unlink(os.path.join(t2, b"q", b"x"))
    os.link(os.path.join(t2, b"p", b"x"), os.path.join(t2, b"q", b"x"))
    for name in (b"r", b"s"):  # a FIFO each: never called identical
        make_a(os.path.join(t2, name))
        os.mkfifo(os.path.join(t2, name, b"fifo"))
    for name in (b"new\nline", b"bad\xff\xfe"):
        make_a(os.path.join(t2, b"odd", name))
        dc.write(os.path.join(t2, b"odd", name, b"odd-only"), b"odd" * 99)
    proc = dedup(exe, ["--dirs", "-q", "--json", "t2"], top)
    chk.status(proc, 1, "--dirs on a tree with FIFOs (skipped: status 1)")
    doc = json.loads(proc.stdout.decode())
    got = {}
    for g in doc["directory_groups"]:
        paths = frozenset(bytes.fromhex(d["path_hex"]) if "path_hex" in d
                          else d["path"].encode() for d in g["directories"])
        got[paths] = g
    pq = frozenset([b"t2/p", b"t2/q"])
    chk.check(pq in got, "hard links across copies: still identical", repr(list(got)))
    if pq in got:
        f, b = tree_counts(os.path.join(t2, b"p"))
        xsize = os.path.getsize(os.path.join(t2, b"p", b"x"))
        chk.check(got[pq]["reclaimable_bytes"] == b - xsize,
                  "a hard link across copies reclaims nothing",
                  "got %d, want %d" % (got[pq]["reclaimable_bytes"], b - xsize))
    chk.check(not any(b"t2/r" in g for g in got), "folders holding a FIFO: not identical",
              repr(list(got)))
    odd = frozenset([b"t2/odd/new\nline", b"t2/odd/bad\xff\xfe"])
    chk.check(odd in got, "odd names: identical folders, path_hex for non-UTF-8",
              repr(list(got)))
    proc = dedup(exe, ["--dirs", "-q", "-z", "t2"], top)
    chk.check(frozenset(p + b"/" for p in odd) in dc.parse_zero(proc.stdout),
              "-z: odd folder names raw, with a trailing '/'")


def main():
    global CHK
    exe = clitest.binary()
    chk = CHK = clitest.Checker("test_dedup_dirs")
    with tempfile.TemporaryDirectory(prefix="hb-dirs-") as top:
        top = top.encode()
        build(top)
        snap = dc.snapshot(os.path.join(top, b"t"))
        for min_size in ("0", "100"):
            what = "--dirs --min-size %s" % min_size
            proc = dedup(exe, ["--dirs", "-q", "--min-size", min_size, "t"], top)
            chk.status(proc, 0, what)
            dirs, files = text_groups(proc.stdout)
            # sub-folders of near copies are identical to a/sub: listed
            # with it (the copies' own, b/sub ..., are not)
            want = {frozenset([b"t/a", b"t/b", b"t/f", b"t/h"]),
                    frozenset([b"t/n1/inner", b"t/n2/inner"]),
                    frozenset([b"t/a/sub", b"t/e/sub", b"t/g/sub", b"t/k/sub",
                               b"t/n1/inner/sub"]),
                    frozenset([b"t/a/sub/deep", b"t/d/sub/deep"])}
            chk.check(dirs == want, what + ": the directory groups",
                      "got %r\nwant %r" % (dirs, want))
            for g in dirs:  # the independent proof of every reported group
                vals = {tree_value(os.path.join(top, p)) for p in g}
                chk.check(len(vals) == 1, what + ": %r are not identical" % sorted(g))
            listed = [p for g in dirs | files for p in g]
            for bad in (b"t/c", b"t/d", b"t/e", b"t/g", b"t/k", b"t/n1", b"t/c/sub",
                        b"t/d/sub", b"t/c/sub/deep"):
                chk.check(bad not in listed, what + ": %s listed as a duplicate folder" % bad)
            for p in listed:  # nothing inside a copy is listed again
                chk.check(not p.startswith((b"t/b/", b"t/f/", b"t/h/", b"t/n2/inner/")),
                          what + ": %s (inside a copy) listed" % p)
            chk.check(any(g >= {b"t/a/x", b"t/z/x", b"t/c/x"} for g in files),
                      what + ": a/x, c/x and z/x (outside duplicate folders) in one group",
                      "file groups: %r" % files)
            chk.check(not any(b"t/a/sub/deep/leaf" in g for g in files),
                      what + ": a leaf whose copies are all in reported folders is no group",
                      "file groups: %r" % files)
            chk.check(any(g == {b"t/a/sub/big", b"t/c/sub/big", b"t/d/sub/big"}
                          for g in files),
                      what + ": sub/big: the copies outside reported folders (c/, d/)",
                      "file groups: %r" % files)

        # -S, -z, --json, --csv
        proc = dedup(exe, ["--dirs", "-q", "-S", "t"], top)
        nfiles, nbytes = tree_counts(os.path.join(top, b"t", b"a"))
        chk.check(("%d files, %d bytes each:\n" % (nfiles, nbytes)).encode() in proc.stdout,
                  "-S: the size line of a directory group", clitest.show(proc.stdout))
        proc = dedup(exe, ["--dirs", "-q", "-z", "t"], top)
        zgroups = dc.parse_zero(proc.stdout)
        chk.check(frozenset([b"t/a/", b"t/b/", b"t/f/", b"t/h/"]) in zgroups,
                  "-z: the directory group", repr(zgroups))
        proc = dedup(exe, ["--dirs", "-q", "--json", "t"], top)
        chk.status(proc, 0, "--dirs --json")
        doc = json.loads(proc.stdout.decode())
        dg = doc.get("directory_groups")
        chk.check(isinstance(dg, list) and len(dg) == 4, "--json: four directory_groups",
                  clitest.show(proc.stdout))
        for g in dg or []:
            paths = sorted(d["path"] for d in g["directories"])
            f, b = tree_counts(os.path.join(top, paths[0].encode()))
            chk.check(g["files"] == f and g["bytes"] == b,
                      "--json: files and bytes of %s" % paths,
                      "got %d, %d; want %d, %d" % (g["files"], g["bytes"], f, b))
            for d in g["directories"]:
                st = os.stat(os.path.join(top, d["path"].encode()))
                chk.check((d["device"], d["inode"]) == (st.st_dev, st.st_ino),
                          "--json: device and inode of %s" % d["path"])
        chk.check(doc["summary"].get("directory_groups") == 4 and
                  doc["summary"].get("duplicate_directories") == 9,
                  "--json: summary counts directories", repr(doc["summary"]))
        for g in doc["groups"]:
            for f in g["files"]:
                st = os.lstat(os.path.join(top, f["path"].encode()))
                chk.check(f.get("mtime_ns") == st.st_mtime_ns,
                          "--json: mtime_ns of %s" % f["path"],
                          "got %r, want %d" % (f.get("mtime_ns"), st.st_mtime_ns))
        proc = dedup(exe, ["--dirs", "-q", "--csv", "t"], top)
        rows = list(csv.reader(io.StringIO(proc.stdout.decode(), newline="")))
        chk.check(rows[0] == ["group", "kind", "size", "sha1", "device", "inode", "path"],
                  "--csv --dirs: header", repr(rows[0]))
        drows = {}
        for row in rows[1:]:
            if row[1] == "dir":
                drows.setdefault(row[0], set()).add(row[6])
        chk.check({"t/a/", "t/b/", "t/f/", "t/h/"} in list(drows.values()),
                  "--csv: dir rows", repr(drows))
        # without --dirs: no directory groups, every file group as before
        proc = dedup(exe, ["-q", "--json", "t"], top)
        doc = json.loads(proc.stdout.decode())
        chk.check("directory_groups" not in doc, "without --dirs: no directory_groups")
        _, groups = dc.parse_json(proc.stdout)
        chk.check(groups == {frozenset(b"t/" + p[len(os.path.join(top, b"t/")):]
                                       for p in g)
                             for g in dc.oracle(os.path.join(top, b"t"))},
                  "without --dirs: the groups are the byte oracle's")
        chk.check(dc.snapshot(os.path.join(top, b"t")) == snap, "nothing was changed")
        check_more(chk, exe, top)
    chk.finish()


if __name__ == "__main__":
    main()
