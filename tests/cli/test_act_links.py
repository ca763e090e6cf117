#!/usr/bin/env python3
"""test_act_links.py - `hashbatch link` and `hashbatch remove` (and
`dedup --action`) on the ordinary file system of the test's temporary
directory: hard links, symbolic links and removal made, the bytes of
every path unchanged (SHA-1 of each, by hashlib, before and after),
times and owners kept where promised; keep rules; a file changed between
the scan and the action left alone; the SHAttered pair (one SHA-1,
different bytes) in one hand-written group never linked; --dry-run
changing nothing; a rerun finding its work done; bad plans and bad
options refused with nothing done. --part=noreflink (ctest's
cli_act_links_noreflink): reflinks refused clearly where the file system
has none, on a tmpfs (/dev/shm, or one mounted as root; a SKIP where
there is neither), whatever the temporary directory's file system is.

Usage: test_act_links.py PATH/TO/hashbatch [--part=noreflink]
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402

HB = clitest.binary()
C = clitest.Checker("act_links")
VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors",
                       "collisions")


def hb(*args, cwd=None, input=None, env=None):
    return clitest.run([HB] + list(args), cwd=cwd, input=input, env=env)


def snapshot(root):
    """{relative path: (sha1 of the bytes through the path, lstat)}"""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            with open(p, "rb") as f:
                out[rel] = (hashlib.sha1(f.read()).hexdigest(), st)
    return out


def same_bytes_everywhere(before, after, what):
    C.check(sorted(before) == sorted(after), "%s: the same paths exist" % what,
            "before %s\nafter %s" % (sorted(before), sorted(after)))
    for p in before:
        if p in after:
            C.check(before[p][0] == after[p][0], "%s: %s keeps its bytes" % (what, p))


def make_tree(root):
    """Two groups (three copies of A, two of B) and a unique file."""
    os.makedirs(os.path.join(root, "d", "sub"))
    a = b"alpha " * 1000
    bb = b"bravo\n" * 3000
    files = {"d/a1": a, "d/a2": a, "d/sub/a3": a, "d/b1": bb, "d/sub/b2": bb, "d/u": b"unique"}
    t = 1_600_000_000
    for i, (rel, data) in enumerate(sorted(files.items())):
        p = os.path.join(root, rel)
        with open(p, "wb") as f:
            f.write(data)
        os.chmod(p, 0o640 if i % 2 else 0o604)
        os.utime(p, ns=((t + i) * 10**9 + 123, (t + 100 + i) * 10**9 + 456))
    return files


def plan(root, name="plan.json"):
    p = hb("dedup", "--json", "-q", "d", cwd=root)
    C.status(p, 0, "dedup --json")
    with open(os.path.join(root, name), "wb") as f:
        f.write(p.stdout)
    return json.loads(p.stdout)


def fresh(base, tag):
    root = os.path.join(base, tag)
    make_tree(root)
    return root


def test_hard(base):
    root = fresh(base, "hard")
    doc = plan(root)
    before = snapshot(root)
    log = os.path.join(root, "..", root + ".log.jsonl")
    p = hb("link", "--hard", "--log", log, "plan.json", cwd=root)
    C.status(p, 0, "link --hard")
    after = snapshot(root)
    same_bytes_everywhere(before, after, "link --hard")
    for g in doc["groups"]:
        kept = os.lstat(os.path.join(root, g["files"][0]["path"]))
        for f in g["files"][1:]:
            st = os.lstat(os.path.join(root, f["path"]))
            C.check(st.st_ino == kept.st_ino, "hard: %s is the kept inode" % f["path"])
    C.check(after["d/u"][1].st_ino == before["d/u"][1].st_ino, "hard: a unique file is untouched")
    lines = [json.loads(x) for x in open(log, encoding="utf-8")]
    done = [x for x in lines if x["status"] == "done"]
    C.check(len(done) == 3 and all(x["action"] == "hard" for x in done),
            "hard: the log has a done line per duplicate", show_lines(lines))
    C.check(any(x["path"] == "d/a2" and x["kept"] == "d/a1" for x in done),
            "hard: the log says what was replaced by what", show_lines(lines))
    C.check(not any(n.endswith(".hashbatch-tmp") for n in after), "hard: no temporary left")
    p = hb("link", "--hard", "plan.json", cwd=root)
    C.status(p, 0, "link --hard again")
    C.check(p.stdout.count(b"already done") == 3, "hard: a rerun finds all 3 done",
            clitest.show(p.stdout))


def show_lines(lines):
    return "\n".join(json.dumps(x) for x in lines)


def test_symlink(base):
    root = fresh(base, "symlink")
    doc = plan(root)
    before = snapshot(root)
    p = hb("link", "--symlink", "plan.json", cwd=root)
    C.status(p, 0, "link --symlink")
    # The links' own times, before anything follows them (that sets atime).
    link_st = {f["path"]: os.lstat(os.path.join(root, f["path"]))
               for g in doc["groups"] for f in g["files"]}
    same_bytes_everywhere(before, snapshot(root), "link --symlink")
    for g in doc["groups"]:
        kept = os.path.join(root, g["files"][0]["path"])
        for f in g["files"][1:]:
            path = os.path.join(root, f["path"])
            st, old = link_st[f["path"]], before[f["path"]][1]
            if not C.check(os.path.islink(path), "symlink: %s is a symbolic link" % f["path"]):
                continue
            target = os.readlink(path)
            C.check(not target.startswith("/"), "symlink: %s has a relative target" % f["path"],
                    target)
            C.check(os.path.samefile(path, kept), "symlink: %s leads to the kept file" % f["path"])
            C.check(st.st_mtime_ns == old.st_mtime_ns and st.st_atime_ns == old.st_atime_ns,
                    "symlink: %s keeps the replaced file's times" % f["path"],
                    "%d %d vs %d %d" % (st.st_atime_ns, st.st_mtime_ns, old.st_atime_ns,
                                        old.st_mtime_ns))
    p = hb("link", "--symlink", "plan.json", cwd=root)
    C.status(p, 0, "link --symlink again")
    C.check(p.stdout.count(b"already done") == 3, "symlink: a rerun finds all 3 done",
            clitest.show(p.stdout))


def test_remove(base):
    root = fresh(base, "remove")
    doc = plan(root)
    before = snapshot(root)
    p = hb("remove", "plan.json", cwd=root)
    C.status(p, 0, "remove")
    after = snapshot(root)
    for g in doc["groups"]:
        kept = g["files"][0]["path"]
        C.check(kept in after and after[kept][0] == before[kept][0],
                "remove: the kept %s stays, unchanged" % kept)
        for f in g["files"][1:]:
            C.check(not os.path.lexists(os.path.join(root, f["path"])),
                    "remove: %s is gone" % f["path"])
    C.check("d/u" in after, "remove: a unique file stays")
    p = hb("remove", "plan.json", cwd=root)
    C.status(p, 0, "remove again")
    C.check(p.stdout.count(b"already done") == 3, "remove: a rerun finds all 3 done",
            clitest.show(p.stdout))


def test_keep(base):
    root = fresh(base, "keep")
    # a3 oldest, a2 newest (mtime), before the scan.
    os.utime(os.path.join(root, "d/sub/a3"), ns=(10**18, 1_000_000_000 * 10**9))
    os.utime(os.path.join(root, "d/a2"), ns=(10**18, 1_900_000_000 * 10**9))
    plan(root)
    cases = [("oldest", "d/sub/a3"), ("newest", "d/a2"), ("first", "d/a1"),
             ("path=d/sub", "d/sub/a3")]
    for rule, want in cases:
        p = hb("link", "--hard", "--dry-run", "--keep", rule, "plan.json", cwd=root)
        C.status(p, 0, "--keep %s --dry-run" % rule)
        out = p.stdout.decode()
        C.check(("-> %s\n" % want) in out and ("would hard-link: %s ->" % want) not in out,
                "--keep %s keeps %s" % (rule, want), out)
    p = hb("link", "--hard", "--keep", "path=nowhere", "plan.json", cwd=root)
    C.status(p, 0, "--keep path= with no file under it")
    C.check(b"no file under 'nowhere'" in p.stderr, "--keep path=: the skip is said",
            clitest.show(p.stderr))
    p = hb("link", "--hard", "--keep", "path=d/sub", "plan.json", cwd=root)
    C.status(p, 0, "link --keep path=d/sub")
    a3 = os.lstat(os.path.join(root, "d/sub/a3"))
    C.check(os.lstat(os.path.join(root, "d/a1")).st_ino == a3.st_ino,
            "--keep path=d/sub: d/a1 now links to d/sub/a3")


def test_changed(base):
    root = fresh(base, "changed")
    plan(root)
    a2 = os.path.join(root, "d/a2")
    with open(a2, "r+b") as f:  # same size, other bytes, other mtime
        f.write(b"ALPHA")
    b2 = os.path.join(root, "d/sub/b2")  # same bytes, but a new inode
    shutil.copy2(b2, b2 + ".new")
    os.rename(b2 + ".new", b2)
    before = snapshot(root)
    p = hb("link", "--hard", "plan.json", cwd=root)
    C.status(p, 1, "link with files changed since the scan")
    after = snapshot(root)
    same_bytes_everywhere(before, after, "changed")
    C.check(after["d/a2"][1].st_ino == before["d/a2"][1].st_ino, "changed: d/a2 left alone")
    C.check(after["d/sub/b2"][1].st_ino == before["d/sub/b2"][1].st_ino,
            "changed: d/sub/b2 left alone")
    C.check(after["d/sub/a3"][1].st_ino == after["d/a1"][1].st_ino,
            "changed: the unchanged d/sub/a3 is still linked")
    err = p.stderr.decode()
    C.check("d/a2" in err and "changed since the scan" in err and "d/sub/b2" in err,
            "changed: the skips are named with their reason", err)


def collision_plan(root, rel_a, rel_b):
    with open(os.path.join(VECTORS, "shattered-1.prefix.bin"), "rb") as f:
        x = f.read()
    with open(os.path.join(VECTORS, "shattered-2.prefix.bin"), "rb") as f:
        y = f.read()
    assert x != y and hashlib.sha1(x).digest() == hashlib.sha1(y).digest()
    files = []
    for rel, data in ((rel_a, x), (rel_b, y)):
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        st = os.stat(p)
        files.append({"path": rel, "device": st.st_dev, "inode": st.st_ino,
                      "mtime_ns": st.st_mtime_ns})
    doc = {"groups": [{"size": len(x), "sha1": hashlib.sha1(x).hexdigest(), "files": files}]}
    with open(os.path.join(root, "plan.json"), "w") as f:
        json.dump(doc, f)


def test_collision(base):
    if not os.path.exists(os.path.join(VECTORS, "shattered-1.prefix.bin")):
        C.fail("tests/vectors/collisions/shattered-*.prefix.bin missing")
        return
    root = os.path.join(base, "collision")
    os.makedirs(root)
    collision_plan(root, "c/one.pdf", "c/two.pdf")
    for args in (["link", "--hard"], ["link", "--symlink"], ["remove"],
                 ["link", "--hard", "--dry-run"]):
        before = snapshot(root)
        p = hb(*(args + ["plan.json"]), cwd=root)
        C.status(p, 1, "%s on a SHA-1 collision pair" % " ".join(args))
        after = snapshot(root)
        same_bytes_everywhere(before, after, " ".join(args) + " (collision)")
        C.check(after["c/two.pdf"][1].st_ino == before["c/two.pdf"][1].st_ino,
                "%s: the colliding file is left alone" % " ".join(args))
        C.check(b"bytes differ" in p.stderr, "%s: the collision is said" % " ".join(args),
                clitest.show(p.stderr))


def test_dry_run(base):
    root = fresh(base, "dry")
    plan(root)
    before = snapshot(root)
    for args in (["link", "--hard"], ["link", "--symlink"], ["link", "--reflink"], ["remove"]):
        p = hb(*(args + ["--dry-run", "plan.json"]), cwd=root)
        C.status(p, 0, "%s --dry-run" % " ".join(args))
        C.check(p.stdout.count(b"would ") == 3, "%s --dry-run says what it would do"
                % " ".join(args), clitest.show(p.stdout))
        after = snapshot(root)
        C.check({k: (v[0], v[1].st_ino, v[1].st_mtime_ns, v[1].st_ctime_ns)
                 for k, v in after.items()} ==
                {k: (v[0], v[1].st_ino, v[1].st_mtime_ns, v[1].st_ctime_ns)
                 for k, v in before.items()},
                "%s --dry-run changes nothing" % " ".join(args))


def test_bad_plans(base):
    root = fresh(base, "bad")
    doc = plan(root)
    good = json.dumps(doc)
    no_inode = json.loads(good)
    del no_inode["groups"][0]["files"][1]["inode"]
    wrong = json.loads(good)
    wrong["groups"][1]["files"][0]["device"] = "x"
    cases = [("notjson", "{\"groups\": [", "line 1"),
             ("empty", "", "line 1, column 1"),
             ("noinode", json.dumps(no_inode), "groups[0].files[1]: missing \"inode\""),
             ("wrongtype", json.dumps(wrong), "groups[1].files[0]: missing \"device\""),
             ("nogroups", "{\"summary\": {}}", "no \"groups\""),
             ("trailing", good + " x", "after the value")]
    before = snapshot(root)
    for name, text, want in cases:
        path = os.path.join(root, name + ".json")
        with open(path, "w") as f:
            f.write(text)
        p = hb("link", "--hard", name + ".json", cwd=root)
        C.status(p, 1, "bad plan %s" % name)
        err = p.stderr.decode()
        C.check(name + ".json" in err and want in err and "nothing was done" in err,
                "bad plan %s: the message names the plan and the place" % name, err)
    p = hb("remove", "-", cwd=root, input=b"[1, 2")
    C.status(p, 1, "bad plan on stdin")
    C.check(b"(stdin)" in p.stderr and b"line 1" in p.stderr, "stdin: named", clitest.show(p.stderr))
    p = hb("link", "--hard", "missing.json", cwd=root)
    C.status(p, 1, "a plan that does not exist")
    after = snapshot(root)
    for k in before:
        C.check(k in after and after[k][1].st_ino == before[k][1].st_ino and
                after[k][1].st_ctime_ns == before[k][1].st_ctime_ns,
                "bad plans: %s untouched" % k)
    # The plan from stdin works.
    p = hb("link", "--hard", "--dry-run", "-", cwd=root, input=good.encode())
    C.status(p, 0, "a plan on stdin")
    for args, what in ((["link", "plan.json"], "no kind"),
                       (["link", "--hard", "--symlink", "plan.json"], "two kinds"),
                       (["link", "--hard", "--keep", "biggest", "plan.json"], "a bad rule"),
                       (["link", "--hard"], "no plan"),
                       (["link", "--hard", "a", "b"], "two plans"),
                       (["remove", "--hard", "plan.json"], "remove --hard"),
                       (["dedup", "--action", "move", "d"], "dedup --action move"),
                       (["dedup", "--action", "hard", "--keep", "x", "d"], "dedup --keep x")):
        p = hb(*args, cwd=root)
        C.status(p, 2, "usage error: %s" % what)
    for cmd in ("link", "remove"):
        p = hb(cmd, "--help")
        C.status(p, 0, "%s --help" % cmd)
        C.check(b"--keep" in p.stdout and b"--dry-run" in p.stdout and b"--log" in p.stdout,
                "%s --help lists the options" % cmd)
    p = hb("link", "--help")
    C.check(b"relative" in p.stdout, "link --help says symbolic links are relative")


def test_dedup_action(base):
    root = fresh(base, "dedup_action")
    before = snapshot(root)
    p = hb("dedup", "-q", "--action", "hard", "--dry-run", "d", cwd=root)
    C.status(p, 0, "dedup --action hard --dry-run")
    C.check(p.stdout.count(b"would hard-link") == 3, "dedup --action --dry-run says what",
            clitest.show(p.stdout))
    log = os.path.join(root, "..", root + ".log.jsonl")
    p = hb("dedup", "-q", "--action", "hard", "--keep", "newest", "--log", log, "d", cwd=root)
    C.status(p, 0, "dedup --action hard")
    after = snapshot(root)
    same_bytes_everywhere(before, after, "dedup --action hard")
    # newest mtime: make_tree gave later files later times: a3 of A, b2 of B.
    C.check(after["d/a1"][1].st_ino == before["d/sub/a3"][1].st_ino and
            after["d/a2"][1].st_ino == before["d/sub/a3"][1].st_ino,
            "dedup --action --keep newest: A's copies link to d/sub/a3")
    C.check(after["d/b1"][1].st_ino == before["d/sub/b2"][1].st_ino,
            "dedup --action --keep newest: d/b1 links to d/sub/b2")
    C.check(sum(1 for x in open(log) if json.loads(x)["status"] == "done") == 3,
            "dedup --action --log: three done")
    root = fresh(base, "dedup_remove")
    p = hb("dedup", "-q", "--action", "remove", "d", cwd=root)
    C.status(p, 0, "dedup --action remove")
    left = sorted(snapshot(root))
    C.check(left == ["d/a1", "d/b1", "d/u"], "dedup --action remove keeps one of each", str(left))


def test_odd_name(base):
    root = os.path.join(base, "odd")
    os.makedirs(os.path.join(root, "d"))
    for n in (b"d/\xff\xfe", b"d/plain"):
        with open(os.path.join(root.encode(), n), "wb") as f:
            f.write(b"same bytes\n" * 10)
    plan(root)
    p = hb("link", "--hard", "plan.json", cwd=root)
    C.status(p, 0, "link --hard with a name that is not UTF-8")
    a = os.lstat(os.path.join(root.encode(), b"d/\xff\xfe"))
    b = os.lstat(os.path.join(root.encode(), b"d/plain"))
    C.check(a.st_ino == b.st_ino, "the non-UTF-8 name (path_hex) is linked")


def test_no_reflink(base):
    root = fresh(base, "noreflink")
    plan(root)
    before = snapshot(root)
    p = hb("link", "--reflink", "plan.json", cwd=root)
    C.status(p, 1, "link --reflink where the file system has no reflinks")
    C.check(b"EOPNOTSUPP" in p.stderr or b"EXDEV" in p.stderr or b"EINVAL" in p.stderr,
            "--reflink: the cause is named", clitest.show(p.stderr))
    after = snapshot(root)
    for k in before:
        C.check(after[k][1].st_ino == before[k][1].st_ino and after[k][0] == before[k][0],
                "--reflink refused: %s untouched" % k)


def fs_type(path):
    """The file system type of the mount holding path (/proc/self/mounts)."""
    path = os.path.realpath(path)
    best, kind = "", None
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            mnt = fields[1].replace("\\040", " ")
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                best, kind = mnt, fields[2]
    return kind


def no_reflink_part():
    """test_no_reflink on a tmpfs, which has no reflinks (FICLONE fails)."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK) \
            and fs_type("/dev/shm") == "tmpfs":
        base = tempfile.mkdtemp(prefix="hb-act-", dir="/dev/shm")
        try:
            test_no_reflink(base)
        finally:
            shutil.rmtree(base, ignore_errors=True)
        return
    if os.geteuid() != 0:
        clitest.skip("no tmpfs at /dev/shm and not root to mount one: the --reflink "
                     "refusal is not checked")
    base = tempfile.mkdtemp(prefix="hb-act-")
    mnt = os.path.join(base, "tmpfs")
    os.mkdir(mnt)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", mnt],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        clitest.skip("no tmpfs at /dev/shm and mount -t tmpfs fails (%s): the --reflink "
                     "refusal is not checked" % p.stdout.decode(errors="replace").strip())
    try:
        test_no_reflink(mnt)
    finally:
        clitest.unmount_and_remove(base, mnt, True)


def main():
    only = clitest.part()
    if only == "noreflink":
        no_reflink_part()
        C.finish()
    if only is not None:
        sys.exit("unknown part %r" % only)
    base = tempfile.mkdtemp(prefix="hb-act-")
    try:
        for t in (test_hard, test_symlink, test_remove, test_keep, test_changed, test_collision,
                  test_dry_run, test_bad_plans, test_dedup_action, test_odd_name):
            t(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    C.finish()


if __name__ == "__main__":
    main()
