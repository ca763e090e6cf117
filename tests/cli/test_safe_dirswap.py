#!/usr/bin/env python3
"""test_safe_dirswap.py - issue 27, defect 1: a directory in a duplicate's
path exchanged with a symlink while `hashbatch remove` / `link` runs.

As root (else exit 77 saying why; also without `setpriv`, `cc` or the
users nobody/nogroup): a base directory owned by nobody holds the
scanned tree (2,000 duplicate pairs tree/a/kN, tree/.../xN, all owned by
nobody); beside it, owned by root and 0700, a directory "rootonly" holds
files at the same relative names with other bytes (root's only copies).
The plan is `hashbatch dedup --json tree`. Then safe_race.c (compiled
here with cc, run as nobody by `setpriv`) exchanges one directory of the
path with a symlink to rootonly by renameat2(RENAME_EXCHANGE) while the
action runs, counting the exchanges; action run by action run in turn
aimed (it watches the duplicates' directory with inotify and, after each
burst of events there, exchanges after a random 0-15/30/50 us and back
after as long, sharing the action's CPU, the action at nice 19) and in a
loop (as fast as it can, on any CPU). For each depth:

  parent       tree/d          <-> tree/s -> rootonly   (rootonly/xN)
  grandparent  tree/g (g/d/xN) <-> tree/s -> rootonly   (rootonly/d/xN)
  root         tree (the DIR given to dedup) <-> s -> rootonly
                                        (rootonly/a/kN, rootonly/d/xN)

and each action: remove, link --hard, link --symlink, link --reflink
(FIDEDUPERANGE, and FICLONE by HASHBATCH_REFLINK=clone) - the reflink
ones on a loop-mounted XFS image with reflink where one can be made,
else only the clone way on the plain filesystem (said in the output).

Asserted for every run: at least 2,000 exchanges happened while the
action ran (the action is run again until they did and it has acted for
4 s or 6 times; between two runs, the exchanges paused, the tree is made
as it was - every name its own regular file with its bytes - and planned
again, so that each run meets the race with all its pairs to do; at most
60 s a (depth, action), 800 s in all; once the runs have acted enough, the
exchanges go as fast as they can until they count 2,000); nothing under rootonly was
deleted, changed, replaced, linked (inode, st_nlink 1, bytes) or
renamed, and no new name (a temporary, a link) appeared there; every file of the tree still holds
its original bytes, is a link within the tree to identical bytes, or
(remove) is gone while its kept twin holds them; no line on stdout
claims a path that was not acted on (after each action run the
exchanges pause with the directory in place, and each "removed",
"hard-linked", "symlinked", "reflinked" and "already done" line of that
run is checked against the tree, and so is every tree file's bytes);
some pairs were done or skipped.

Usage: test_safe_dirswap.py PATH/TO/hashbatch
"""
import fcntl
import grp
import hashlib
import json
import os
import pwd
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clitest  # noqa: E402

HB = clitest.binary()
C = clitest.Checker("safe_dirswap")
HERE = os.path.dirname(os.path.abspath(__file__))
PAIRS = int(os.environ.get("HB_SAFE_PAIRS", "500"))
MIN_EXCHANGES = 2000
MAX_ACTION_RUNS = 6       # action runs, each (depth, action)
RUN_LIMIT = 60.0          # seconds, one (depth, action) run
TOTAL_LIMIT = 800.0       # seconds, the whole test (its ctest TIMEOUT is 900)
ACTION_BUDGET = 4.0       # seconds of actions under the race, each run
SIZE = 64                 # bytes of each file: tree and rootonly alike

FS_IOC_FIEMAP = 0xC020660B


def skip(why):
    print("skipped: %s" % why, file=sys.stderr)
    sys.exit(clitest.SKIP)


def sh(*args, **kw):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def extents(path):
    n = 64
    req = bytearray(struct.pack("=QQIIII", 0, 2**64 - 1, 1, 0, n, 0) + b"\0" * (56 * n))
    with open(path, "rb") as f:
        fcntl.ioctl(f.fileno(), FS_IOC_FIEMAP, req, True)
    mapped = struct.unpack_from("=I", req, 20)[0]
    return [struct.unpack_from("=QQQQQI", req, 32 + 56 * i)[:3] for i in range(mapped)]


def shares(a, b):
    try:
        ea, eb = extents(a), extents(b)
    except OSError:
        return False
    return bool(ea) and ea == eb


def tree_bytes(i):
    return (b"dup %06d " % i).ljust(SIZE, b"d")


def root_bytes(tag, i):
    return (b"ROOT %s %06d " % (tag.encode(), i)).ljust(SIZE, b"r")


# The layouts: the flip's working directory relative to base (cwd), the
# name it exchanges with "s" there (swap), the duplicates' directory
# under tree (xdir), the directory the aimed exchanges watch, relative to
# cwd (watch). rootonly mirrors what lies under the swapped directory.
DEPTHS = {
    "parent": {"cwd": "tree", "swap": "d", "xdir": "d", "watch": "d"},
    "grandparent": {"cwd": "tree", "swap": "g", "xdir": "g/d", "watch": "g/d"},
    "root": {"cwd": ".", "swap": "tree", "xdir": "d", "watch": "tree/d"},
}
# How the exchanges go, action run by action run: "aim US" (aimed at the
# moments after the action touched the duplicates' directory, sharing its
# CPU) and "loop" (as fast as possible, on any CPU), in turn.
MODES = ["aim 15", "loop", "aim 30", "loop", "aim 50", "loop"]


def write(path, data, uid=None, gid=None):
    with open(path, "wb") as f:
        f.write(data)
    if uid is not None:
        os.chown(path, uid, gid)


def build(base, rootonly, depth, uid, gid):
    """Makes base/tree and rootonly for depth; returns
    (pairs [(kept_rel, other_rel, bytes)], rootonly entries written)."""
    lay = DEPTHS[depth]
    tree = os.path.join(base, "tree")
    os.makedirs(os.path.join(tree, "a"))
    os.makedirs(os.path.join(tree, lay["xdir"]))
    pairs = []
    for i in range(PAIRS):
        k, x = "tree/a/k%d" % i, "tree/%s/x%d" % (lay["xdir"], i)
        data = tree_bytes(i)
        write(os.path.join(base, k), data, uid, gid)
        write(os.path.join(base, x), data, uid, gid)
        pairs.append((k, x, data))
    for dp, dns, fns in os.walk(base):
        os.chown(dp, uid, gid)
    # rootonly mirrors what lies under the swapped directory
    swap_rel = os.path.join("tree", lay["swap"]) if lay["swap"] != "tree" else "tree"
    os.makedirs(rootonly, mode=0o700)
    under = []
    for k, x, _ in pairs:
        for p in (k, x):
            if p.startswith(swap_rel + "/"):
                under.append(p[len(swap_rel) + 1:])
    for i, rel in enumerate(under):
        path = os.path.join(rootonly, rel)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        write(path, root_bytes(depth, i))
    os.chmod(rootonly, 0o700)
    # the symlink the attacker swaps in, owned by nobody
    link_dir = os.path.join(base, lay["cwd"])
    s = os.path.join(link_dir, "s")
    os.symlink(rootonly, s)
    os.lchown(s, uid, gid)
    return pairs


def snapshot(top):
    """Every entry under top: relpath -> (kind, ino, nlink, mode, uid, sha1|target)."""
    out = {}
    for dp, dns, fns in os.walk(top):
        for n in dns + fns:
            p = os.path.join(dp, n)
            st = os.lstat(p)
            if os.path.islink(p):
                what = ("link", os.readlink(p))
            elif os.path.isdir(p):
                what = ("dir", None)
            else:
                with open(p, "rb") as f:
                    what = ("file", hashlib.sha1(f.read()).hexdigest())
            out[os.path.relpath(p, top)] = (what[0], st.st_ino, st.st_nlink,
                                            st.st_mode, st.st_uid, what[1])
    return out


def compare_rootonly(before, after, what):
    deleted = sorted(set(before) - set(after))
    new = sorted(set(after) - set(before))
    changed, replaced, linked = [], [], []
    for rel in set(before) & set(after):
        b, a = before[rel], after[rel]
        if a[1] != b[1] or a[0] != b[0]:
            replaced.append(rel)
        elif a[0] == "file" and a[2] != 1:
            linked.append(rel)
        elif a[5] != b[5] or a[3] != b[3] or a[4] != b[4]:
            changed.append(rel)
    print("  rootonly: %d entries; deleted %d, replaced %d, linked %d, changed %d, new names %d"
          % (len(before), len(deleted), len(replaced), len(linked), len(changed), len(new)))
    C.check(not deleted, "%s: %d root-only files deleted or renamed away" % (what, len(deleted)),
            " ".join(deleted[:10]))
    C.check(not replaced, "%s: %d root-only files replaced (other inode)" % (what, len(replaced)),
            " ".join(replaced[:10]))
    C.check(not linked, "%s: %d root-only files hard-linked (st_nlink > 1)" % (what, len(linked)),
            " ".join(linked[:10]))
    C.check(not changed, "%s: %d root-only files changed (bytes, mode, owner)"
            % (what, len(changed)), " ".join(changed[:10]))
    C.check(not new, "%s: %d new names in the root-only directory (temporaries, links)"
            % (what, len(new)), " ".join(new[:10]))


def parse_claims(out):
    """[(verb, path)] from stdout."""
    claims = []
    for line in out.decode("utf-8", "replace").splitlines():
        m = re.match(r"^(removed|hard-linked|symlinked|reflinked): (.*?)"
                     r"(?: \(a copy of .*\)| -> .*)$", line)
        if m:
            claims.append((m.group(1), m.group(2)))
            continue
        m = re.match(r"^already done \((.*)\): (.*)$", line)
        if m:
            claims.append(("already", m.group(2)))
    return claims


def read(path):
    with open(path, "rb") as f:
        return f.read()


def check_tree(base, pairs, action, what, quiet=False):
    tree_real = os.path.realpath(os.path.join(base, "tree"))
    bad = []
    for k, x, data in pairs:
        alive = 0
        for p in (k, x):
            path = os.path.join(base, p)
            if not os.path.lexists(path):
                continue
            alive += 1
            if os.path.islink(path):
                real = os.path.realpath(path)
                if not real.startswith(tree_real + "/"):
                    bad.append("%s: a symlink leading out of the tree (%s)" % (p, real))
                    continue
            try:
                got = read(path)
            except OSError as e:
                bad.append("%s: %s" % (p, e))
                continue
            if got != data:
                bad.append("%s: other bytes %r" % (p, got[:24]))
        if action == "remove" and alive == 0:
            bad.append("%s and %s: both gone" % (k, x))
        if action != "remove" and alive != 2:
            bad.append("%s / %s: a name is missing" % (k, x))
    C.check(not bad, "%s: %d tree files lost their original bytes or a link leads elsewhere"
            % (what, len(bad)), "\n".join(bad[:10]))
    if quiet:
        return
    extra = []
    names = {os.path.join(base, p) for k, x, _ in pairs for p in (k, x)}
    for dp, dns, fns in os.walk(os.path.join(base, "tree")):
        extra += [os.path.join(dp, n) for n in fns if os.path.join(dp, n) not in names
                  and n != "s"]
    print("  tree: %d names not in the plan left in the tree (info)" % len(extra))


def kept_of_plan(plan_json):
    """{duplicate path: kept path} of a plan (--keep first: each group's
    first file is kept)."""
    out = {}
    for g in json.loads(plan_json)["groups"]:
        paths = [f["path"] for f in g["files"]]
        for p in paths[1:]:
            out[p] = paths[0]
    return out


def false_claims(base, kept_of, action, out):
    """The stdout lines of one run that claim what the tree (as it is
    now, the exchanges paused) does not show: ["VERB: PATH"]."""
    false = []
    for verb, p in parse_claims(out):
        path = os.path.join(base, p)
        if p not in kept_of:
            false.append("%s: %s (not a duplicate of the plan)" % (verb, p))
            continue
        kept = os.path.join(base, kept_of[p])
        try:
            exists = os.path.lexists(path)
            if action == "remove":
                if verb == "removed":
                    ok = not exists
                else:
                    ok = not exists or os.lstat(path).st_ino == os.lstat(kept).st_ino
            elif not exists:
                ok = False
            else:
                st, kst = os.lstat(path), os.lstat(kept)
                hard = st.st_ino == kst.st_ino and st.st_dev == kst.st_dev
                sym = os.path.islink(path) and \
                    os.path.realpath(path) == os.path.realpath(kept)
                ref = action.startswith("link --reflink") and not os.path.islink(path) \
                    and shares(path, kept)
                ok = {"hard-linked": hard, "symlinked": sym, "reflinked": ref,
                      "already": hard or sym or ref}[verb]
        except OSError as e:
            ok = False
            verb += " (%s)" % e
        if not ok:
            false.append("%s: %s" % (verb, p))
    return false


def restore(base, pairs, uid, gid, always):
    """Makes every name of the tree the regular file it was (its own
    inode, the original bytes, owned by nobody) again, for the next
    action run; with always, every duplicate is written anew (a reflink
    looks like any file). Returns how many were rewritten."""
    staging = os.path.join(base, "staging")
    n = 0
    # names the action left in the tree (temporaries) go to base/attic, out
    # of the next scan; moved, not deleted: a hard link of a root-only file
    # among them keeps that file's st_nlink > 1 for the final check
    names = {os.path.join(base, p) for k, x, _ in pairs for p in (k, x)}
    attic = os.path.join(base, "attic")
    os.makedirs(attic, exist_ok=True)
    for dp, dns, fns in os.walk(os.path.join(base, "tree")):
        for name in fns + [d for d in dns if os.path.islink(os.path.join(dp, d))]:
            path = os.path.join(dp, name)
            if path not in names and name != "s":
                os.rename(path, os.path.join(attic, "%d-%s" % (len(os.listdir(attic)), name)))
    for k, x, data in pairs:
        for p in (x, k):
            path = os.path.join(base, p)
            try:
                st = os.lstat(path)
                fine = (os.path.isfile(path) and not os.path.islink(path) and
                        st.st_nlink == 1 and st.st_uid == uid and read(path) == data and
                        not (always and p == x))
            except OSError:
                fine = False
            if not fine:
                write(staging, data, uid, gid)
                os.rename(staging, path)
                n += 1
    return n


def make_plan(base, plan):
    """`dedup --json tree` into plan; returns its text, or None (reported)."""
    p = clitest.run([HB, "dedup", "--json", "-q", "--backend", "cpu", "tree"], cwd=base,
                    timeout=120)
    if not C.status(p, 0, "dedup --json tree in %s" % base):
        return None
    with open(plan, "wb") as f:
        f.write(p.stdout)
    return p.stdout


def compile_helper(work):
    exe = os.path.join(work, "safe_race")
    p = sh("cc", "-O2", "-o", exe, os.path.join(HERE, "safe_race.c"))
    if p.returncode != 0:
        C.fail("cc safe_race.c", clitest.show(p.stderr))
        C.finish()
    os.chmod(exe, 0o755)
    return exe


def one_run(work, fsroot, depth, action, env, tag, helper, uid, gid, deadline, budget):
    """One (depth, action) run on the filesystem at fsroot: the action is
    run again on the same plan (each rerun gives the skipped pairs another
    chance to meet the race) until it has run budget seconds and seen
    MIN_EXCHANGES exchanges, within RUN_LIMIT."""
    what = "%s, %s" % (depth, tag)
    print("%s:" % what)
    t0 = time.monotonic()
    run_dir = tempfile.mkdtemp(prefix="run-", dir=fsroot)
    os.chmod(run_dir, 0o755)
    base = os.path.join(run_dir, "base")
    os.mkdir(base)
    os.chown(base, uid, gid)
    rootonly = os.path.join(run_dir, "rootonly")
    pairs = build(base, rootonly, depth, uid, gid)
    plan = os.path.join(work, "plan-%s-%s.json" % (depth, tag.replace(" ", "_")))
    plan_json = make_plan(base, plan)
    if plan_json is None:
        shutil.rmtree(run_dir, ignore_errors=True)
        return
    groups = json.loads(plan_json)["groups"]
    C.check(len(groups) == PAIRS, "%s: the plan has %d groups (%d)" % (what, PAIRS, len(groups)))
    before = snapshot(rootonly)
    lay = DEPTHS[depth]
    counter, stop = os.path.join(base, "count"), os.path.join(base, "stop")
    pause, control = os.path.join(base, "pause"), os.path.join(base, "control")
    cpu, all_cpus = min(os.sched_getaffinity(0)), os.sched_getaffinity(0)
    mode = MODES[0]
    write(control, mode.encode(), uid, gid)
    fl = subprocess.Popen(["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid, "--clear-groups",
                           helper, "flip", lay["swap"], "s", counter, stop, "%d" % RUN_LIMIT,
                           pause, control, lay["watch"]],
                          cwd=os.path.join(base, lay["cwd"]), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)

    def place(mode):
        """Aimed: the helper and the action share one CPU, the action at
        nice 19 (so the helper's wake-ups interrupt it); loop: any CPU."""
        try:
            os.sched_setaffinity(fl.pid, {cpu} if mode.startswith("aim") else all_cpus)
        except OSError:
            pass

    def action_side():
        if mode.startswith("aim"):
            os.sched_setaffinity(0, {cpu})
            os.nice(19)

    def state():
        try:
            n, st = read(counter).split()
            return int(n), st
        except (OSError, ValueError):
            return 0, b"?"

    def count():
        return state()[0]

    def paused():
        """Pauses the exchanges (the swapped name is the directory again);
        False when the helper did not pause in 10 s."""
        write(pause, b"")
        t = time.monotonic()
        while state()[1] != b"P" and fl.poll() is None and time.monotonic() - t < 10:
            time.sleep(0.0005)
        return state()[1] == b"P"

    def resume():
        """Lets the exchanges go on; waits until the helper says so, so
        that the next paused() sees a fresh pause."""
        os.unlink(pause)
        t = time.monotonic()
        while state()[1] == b"P" and fl.poll() is None and time.monotonic() - t < 10:
            time.sleep(0.0002)

    outs, errs, during, runs, false, unpaused, rewritten = [], [], 0, 0, [], 0, 0
    try:
        place(mode)
        start_wait = time.monotonic()
        while state()[1] == b"?" and fl.poll() is None and time.monotonic() - start_wait < 10:
            time.sleep(0.001)
        args = [HB] + action.split() + [plan]
        acting, by_mode = 0.0, {}
        while (during < MIN_EXCHANGES or (acting < budget and runs < MAX_ACTION_RUNS)) \
                and time.monotonic() - t0 < RUN_LIMIT - 5 \
                and time.monotonic() < deadline and fl.poll() is None:
            c0, a0 = count(), time.monotonic()
            r = subprocess.run(args, cwd=base, env=env or clitest.clean_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=action_side,
                               timeout=max(5, RUN_LIMIT - (time.monotonic() - t0)))
            during += count() - c0
            by_mode[mode] = by_mode.get(mode, 0) + count() - c0
            acting += time.monotonic() - a0
            runs += 1
            outs.append(r.stdout)
            errs.append(r.stderr)
            # this run's claims, against the tree as it is, exchanges paused;
            # then the tree as it was and a fresh plan for the next run, so
            # that every run meets the race with all its pairs to do
            if paused():
                false += ["run %d: %s" % (runs, f)
                          for f in false_claims(base, kept_of_plan(plan_json), action,
                                                r.stdout)]
                check_tree(base, pairs, action, "%s, run %d" % (what, runs), quiet=True)
                if runs < MAX_ACTION_RUNS and acting < budget:
                    rewritten += restore(base, pairs, uid, gid,
                                         action.startswith("link --reflink"))
                    plan_json = make_plan(base, plan)
                    if plan_json is None:
                        resume()
                        break
                    mode = MODES[runs % len(MODES)]
                    write(control, mode.encode())
                    place(mode)
                elif mode != "loop":
                    # the runs left are for the count alone (a loaded
                    # machine makes aimed exchanges few): as fast as it can
                    mode = "loop"
                    write(control, mode.encode())
                    place(mode)
            else:
                unpaused += 1
            resume()
    except subprocess.TimeoutExpired:
        C.fail("%s: the action ran past %d s" % (what, RUN_LIMIT))
    finally:
        write(stop, b"")
        try:
            fo, fe = fl.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            fl.kill()
            fo, fe = fl.communicate()
    total = int(re.search(rb"exchanges (\d+)", fo).group(1)) if b"exchanges" in fo else 0
    C.check(fl.returncode == 0, "%s: the exchanging helper ended well" % what,
            clitest.show(fe))
    C.check(not os.path.islink(os.path.join(base, lay["cwd"], lay["swap"])),
            "%s: the swapped name is the directory again" % what)
    out, err = b"".join(outs), b"".join(errs)
    done = len(re.findall(rb"^(?:removed|hard-linked|symlinked|reflinked): ", out, re.M))
    already = out.count(b"already done")
    skipped = len(re.findall(rb": skipped: ", err))
    failed = len(re.findall(rb": failed: ", err))
    print("  %d action run(s), %d exchanges while they ran (%s; %d in all); "
          "done %d, already %d, skipped %d, failed %d; %d names restored between runs"
          % (runs, during, ", ".join("%s: %d" % kv for kv in sorted(by_mode.items())),
             total, done, already, skipped, failed, rewritten))
    C.check(during >= MIN_EXCHANGES, "%s: at least %d exchanges while the action ran (%d)"
            % (what, MIN_EXCHANGES, during))
    C.check(done + skipped > 0, "%s: some pairs were done or skipped" % what,
            clitest.show(err[-2000:]))
    compare_rootonly(before, snapshot(rootonly), what)
    check_tree(base, pairs, action, what)
    C.check(unpaused == 0, "%s: the exchanges paused after each action run (%d did not)"
            % (what, unpaused))
    C.check(not false, "%s: %d stdout lines claim a path that was not acted on"
            % (what, len(false)), "\n".join(false[:10]))
    print("  %.1f s" % (time.monotonic() - t0))
    shutil.rmtree(run_dir, ignore_errors=True)


def main():
    if os.geteuid() != 0:
        skip("the race needs root (hashbatch as root, the swapping loop as nobody)")
    for tool in ("setpriv", "cc"):
        if shutil.which(tool) is None:
            skip("%s not found" % tool)
    try:
        uid = pwd.getpwnam("nobody").pw_uid
    except KeyError:
        skip("no user nobody")
    gid = None
    for g in ("nogroup", "nobody"):
        try:
            gid = grp.getgrnam(g).gr_gid
            break
        except KeyError:
            pass
    if gid is None:
        skip("no group nogroup or nobody")
    t_start = time.monotonic()
    deadline = t_start + TOTAL_LIMIT
    work = tempfile.mkdtemp(prefix="hb-safe-dirswap-")
    os.chmod(work, 0o755)
    img, mnt, mounted = os.path.join(work, "xfs.img"), os.path.join(work, "xfs"), False
    try:
        helper = compile_helper(work)
        plain = os.path.join(work, "plain")
        os.mkdir(plain)
        os.chmod(plain, 0o755)
        # an XFS image with reflink for the reflink runs, where one can be made
        why_not = None
        if shutil.which("mkfs.xfs") is None:
            why_not = "mkfs.xfs not found"
        else:
            os.mkdir(mnt)
            with open(img, "wb") as f:
                f.truncate(512 << 20)
            p = sh("mkfs.xfs", "-q", "-m", "reflink=1", img)
            if p.returncode != 0:
                why_not = "mkfs.xfs -m reflink=1 failed: %s" % p.stderr.decode().strip()
            else:
                p = sh("mount", "-o", "loop", img, mnt)
                if p.returncode != 0:
                    why_not = "mount -o loop refused: %s" % p.stderr.decode().strip()
                else:
                    mounted = True
                    os.chmod(mnt, 0o755)
        actions = [("remove", None, "remove", plain),
                   ("link --hard", None, "link --hard", plain),
                   ("link --symlink", None, "link --symlink", plain)]
        clone = clitest.clean_env(HASHBATCH_REFLINK="clone")
        if mounted:
            actions += [("link --reflink", None, "link --reflink (XFS)", mnt),
                        ("link --reflink", clone, "link --reflink clone (XFS)", mnt)]
        else:
            print("NOTE: no reflink XFS image (%s): link --reflink runs on the plain "
                  "filesystem with HASHBATCH_REFLINK=clone only" % why_not)
            actions += [("link --reflink", clone, "link --reflink clone (plain fs)", plain)]
        runs_left = len(DEPTHS) * len(actions)
        for depth in DEPTHS:
            for action, env, tag, fsroot in actions:
                left = deadline - time.monotonic()
                if left < 10:
                    C.fail("out of time before %s, %s (the test is bounded at %d s)"
                           % (depth, tag, TOTAL_LIMIT))
                    continue
                # time spent acting under the race: ACTION_BUDGET, less
                # when the machine is slow (setup takes a few seconds)
                budget = max(0.0, min(ACTION_BUDGET, left / runs_left - 8))
                one_run(work, fsroot, depth, action, env, tag, helper, uid, gid, deadline,
                        budget)
                runs_left -= 1
    finally:
        clitest.unmount_and_remove(work, mnt, mounted)
    print("whole test: %.1f s" % (time.monotonic() - t_start))
    C.finish()


if __name__ == "__main__":
    main()
