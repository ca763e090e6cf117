#!/usr/bin/env python3
"""test_safe_leftovers.py - what an interrupted `link` or `remove` leaves
behind, settled by the next run. Each state a SIGKILL can leave (the
windows are a few system calls wide, so random kills rarely hit them) is
made here by hand with the names such a run uses
(.hashbatch-RUN-N.tmp, RUN 16 hex digits), and the plan run again:

- remove killed after the duplicate was moved aside: the rerun deletes
  the moved duplicate (its bytes are the kept file's) and nothing else;
- remove killed after moving aside a file that then proved different:
  the rerun puts it back under its name;
- link --hard killed before the exchange (a hard link of the kept file
  at the temporary name): removed;
- link --hard killed after the exchange (the duplicate at the temporary
  name, its name a hard link already): the duplicate is removed;
- link --symlink killed before the exchange: the symbolic link removed;
- a file at such a name that holds other bytes and is no duplicate of the
  plan: reported, left as it is, exit 1;
- this run's own name is never one a leftover has (leftovers of another
  run id only).

After each rerun every original byte is where it was, or in the kept
file. Usage: test_safe_leftovers.py PATH/TO/hashbatch
"""
import hashlib
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402

HB = clitest.binary()
C = clitest.Checker("safe_leftovers")
TEMP = ".hashbatch-0123456789abcdef-%d.tmp"


def hb(*args, cwd):
    return clitest.run([HB] + list(args), cwd=cwd,
                       env=clitest.clean_env(HASHBATCH_BACKEND="cpu"))


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def fresh(base, name):
    """A tree of 3 duplicate pairs a/fN, b/fN and its plan."""
    root = os.path.join(base, name)
    os.makedirs(os.path.join(root, "t", "a"))
    os.makedirs(os.path.join(root, "t", "b"))
    for i in range(3):
        data = ("pair %d " % i).encode() * (40 + i)
        for side in "ab":
            with open(os.path.join(root, "t", side, "f%d" % i), "wb") as f:
                f.write(data)
    p = hb("dedup", "-q", "--json", "t", cwd=root)
    C.status(p, 0, name + ": dedup")
    with open(os.path.join(root, "plan.json"), "wb") as f:
        f.write(p.stdout)
    return root


def names_in(folder):
    return sorted(n for n in os.listdir(folder) if "hashbatch" in n)


def remove_after_hide(base):
    root = fresh(base, "remove_after_hide")
    b = os.path.join(root, "t", "b")
    want = sha(os.path.join(root, "t", "a", "f1"))
    os.rename(os.path.join(b, "f1"), os.path.join(b, TEMP % 0))
    p = hb("remove", "plan.json", cwd=root)
    C.status(p, 0, "remove after a killed remove")
    C.check(names_in(b) == [], "remove: the moved duplicate is deleted", str(names_in(b)))
    C.check(b"cleaned up a temporary of an interrupted run" in p.stdout,
            "remove: the clean-up is said", clitest.show(p.stdout))
    C.check(sha(os.path.join(root, "t", "a", "f1")) == want, "remove: the kept file's bytes")
    C.check(sorted(os.listdir(b)) == [], "remove: every duplicate of b/ removed",
            str(os.listdir(b)))


def remove_put_back(base):
    root = fresh(base, "remove_put_back")
    b = os.path.join(root, "t", "b")
    # The duplicate changed after the plan was made (same inode, other
    # bytes, its plan mtime kept), then a killed remove moved it aside.
    path = os.path.join(b, "f2")
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.write(b"X")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    changed = sha(path)
    os.rename(path, os.path.join(b, TEMP % 7))
    p = hb("remove", "plan.json", cwd=root)
    C.status(p, 1, "remove with a changed duplicate moved aside")
    C.check(os.path.exists(path) and sha(path) == changed,
            "remove: the changed duplicate is back under its name", str(os.listdir(b)))
    C.check(names_in(b) == [], "remove: no temporary left", str(names_in(b)))
    C.check(b"differ" in p.stderr, "remove: its bytes are said to differ",
            clitest.show(p.stderr))


def hard_before_swap(base):
    root = fresh(base, "hard_before_swap")
    a, b = os.path.join(root, "t", "a"), os.path.join(root, "t", "b")
    os.link(os.path.join(a, "f0"), os.path.join(b, TEMP % 3))
    p = hb("link", "--hard", "plan.json", cwd=root)
    C.status(p, 0, "link --hard after a kill before the exchange")
    C.check(names_in(b) == [], "hard: the prepared link is removed", str(names_in(b)))
    for i in range(3):
        C.check(os.stat(os.path.join(b, "f%d" % i)).st_ino ==
                os.stat(os.path.join(a, "f%d" % i)).st_ino, "hard: b/f%d linked" % i)


def hard_after_swap(base):
    root = fresh(base, "hard_after_swap")
    a, b = os.path.join(root, "t", "a"), os.path.join(root, "t", "b")
    # The exchange happened: b/f1 is the link, the duplicate at the temp.
    os.rename(os.path.join(b, "f1"), os.path.join(b, TEMP % 1))
    os.link(os.path.join(a, "f1"), os.path.join(b, "f1"))
    want = sha(os.path.join(a, "f1"))
    p = hb("link", "--hard", "plan.json", cwd=root)
    C.status(p, 0, "link --hard after a kill after the exchange")
    C.check(names_in(b) == [], "hard: the exchanged duplicate is removed", str(names_in(b)))
    C.check(sha(os.path.join(b, "f1")) == want, "hard: b/f1 holds its bytes")


def symlink_before_swap(base):
    root = fresh(base, "symlink_before_swap")
    b = os.path.join(root, "t", "b")
    os.symlink("../a/f2", os.path.join(b, TEMP % 2))
    p = hb("link", "--symlink", "plan.json", cwd=root)
    C.status(p, 0, "link --symlink after a kill before the exchange")
    C.check(names_in(b) == [], "symlink: the prepared link is removed", str(names_in(b)))
    C.check(os.readlink(os.path.join(b, "f2")) == "../a/f2", "symlink: b/f2 linked")


def unknown_leftover(base):
    root = fresh(base, "unknown_leftover")
    b = os.path.join(root, "t", "b")
    other = os.path.join(b, TEMP % 9)
    with open(other, "wb") as f:
        f.write(b"someone's notes, not a duplicate of anything\n")
    for kind in (["remove"], ["link", "--hard"]):
        p = hb(*(kind + ["plan.json"]), cwd=root)
        C.status(p, 1, "%s with a leftover it cannot account for" % kind[0])
        C.check(os.path.exists(other) and
                open(other, "rb").read().startswith(b"someone's notes"),
                "%s: the unknown file is left as it is" % kind[0])
        C.check(os.path.basename(other).encode() in p.stderr,
                "%s: the unknown file is reported" % kind[0], clitest.show(p.stderr))


def main():
    base = tempfile.mkdtemp(prefix="hb-leftovers-")
    try:
        remove_after_hide(base)
        remove_put_back(base)
        hard_before_swap(base)
        hard_after_swap(base)
        symlink_before_swap(base)
        unknown_leftover(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    C.finish()


if __name__ == "__main__":
    main()
