"""test_sum_bad_input.py - `hashbatch sum` with inputs that must not stop
or hang it: a FIFO nobody writes to (explicit and under -r; run under a
timeout), a Unix socket, a character device, dangling symlinks, a
symlink loop (explicit: ELOOP as sha1sum says it; under -r -L: a
directory loop, reported, not entered), names with newlines and invalid
UTF-8, /proc files that report size 0, /proc/self/mem (EIO). Each bad
entry gets one stderr line naming the path and the cause, the good files
are still hashed (stdout as sha1sum's, in order), exit 1. Where sha1sum
itself can run (everything but FIFOs, which block it), stdout, stderr
and status equal sha1sum's. Also: the progress meter appears on a
terminal stderr (and not with --quiet), and bad option mixes exit 2.

Usage: test_sum_bad_input.py PATH/TO/hashbatch
"""
import os
import pty
import shutil
import socket
import stat
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402
import sumtest_util as su  # noqa: E402

TIMEOUT = 60  # a hang fails the test instead of blocking ctest


def make_specials(root):
    """FIFO, socket, char device (where mknod works), symlinks; returns
    the names of the specials that -r must report and the socket."""
    os.mkfifo(os.path.join(root, "fifo"))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(os.path.join(root, "sock"))
    specials = ["fifo", "sock"]
    try:
        os.mknod(os.path.join(root, "chardev"), 0o600 | stat.S_IFCHR,
                 os.makedev(1, 3))
        specials.append("chardev")
    except OSError as e:
        print("NOTE: mknod failed (%s): no character device case" % e)
    os.symlink("good1", os.path.join(root, "link-to-file"))
    os.symlink("nowhere", os.path.join(root, "dangling"))
    os.symlink("self-loop", os.path.join(root, "self-loop"))
    os.makedirs(os.path.join(root, "sub", "deeper"))
    os.symlink("../..", os.path.join(root, "sub", "deeper", "up"))
    for name, data in (("good1", b"one\n"), ("sub/good2", b"two" * 5000),
                       ("sub/deeper/empty", b"")):
        with open(os.path.join(root, name), "wb") as f:
            f.write(data)
    return specials, sock


def check_explicit(chk, exe, tmp, specials):
    args = ["t/good1", "t/fifo", "t/sub/good2", "t/sock", "t/good1"] + [
        "t/" + s for s in specials[2:]]
    p = clitest.run([exe, "sum"] + args, cwd=tmp, timeout=TIMEOUT)
    chk.status(p, 1, "explicit specials")
    want = su.sha1sum(["t/good1", "t/sub/good2", "t/good1"], cwd=tmp)[0]
    chk.same_bytes(p.stdout, want, "explicit specials: stdout")
    kinds = {"fifo": "is a FIFO", "sock": "is a socket",
             "chardev": "is a character device"}
    want_err = "".join("hashbatch: t/%s: %s (skipped)\n" % (s, kinds[s])
                       for s in specials).encode()
    chk.same_bytes(p.stderr, want_err, "explicit specials: stderr")
    # without the FIFO sha1sum itself can be run: same everything
    others = ["t/dangling", "t/self-loop", "t/good1", "t/missing\nname",
              "t/bad\xff\xfename".encode("latin-1"), "t/sub", "t/link-to-file",
              "/proc/self/mem", "t/sub/good2"]
    names = [a if isinstance(a, str) else a.decode("utf-8",
                                                   "surrogateescape")
             for a in others]
    su.same_run(chk, exe, names, others, "explicit bad paths vs sha1sum", tmp)


def check_tree(chk, exe, tmp, specials):
    p = clitest.run([exe, "sum", "-r", "t"], cwd=tmp, timeout=TIMEOUT)
    chk.status(p, 1, "-r with specials")
    chk.same_bytes(p.stdout, su.oracle_tree(["t"], [], tmp),
                   "-r with specials: stdout (find -type f)")
    errs = p.stderr.decode("utf-8", "replace").splitlines()
    chk.check(len(errs) == len(specials), "-r: one line per special",
              clitest.show(p.stderr))
    for s in specials:
        chk.check(any(e.startswith("hashbatch: t/%s: is a " % s)
                      for e in errs), "-r: %s not reported" % s,
                  clitest.show(p.stderr))
    p = clitest.run([exe, "sum", "-r", "-L", "t"], cwd=tmp, timeout=TIMEOUT)
    chk.status(p, 1, "-r -L with a loop")
    files = su.find_files("t", follow=True, cwd=tmp)
    want = su.sha1sum(["--"] + files, cwd=tmp)[0]
    chk.same_bytes(p.stdout, want, "-r -L: stdout (find -L -type f)")
    chk.check(b"hashbatch: t/sub/deeper/up: " in p.stderr and
              b"loop" in p.stderr, "-r -L: the loop is not reported",
              clitest.show(p.stderr))


def check_proc(chk, exe, tmp):
    paths = [p for p in ("/proc/version", "/proc/sys/kernel/ostype",
                         "/proc/self/mem") if os.path.exists(p)]
    if not paths:
        print("NOTE: no /proc: skipped")
        return
    for backend in ("cpu", "auto"):
        su.same_run(chk, exe, ["--backend", backend] + paths, paths,
                    "/proc files (%s)" % backend, tmp)


def check_progress(chk, exe, tmp):
    """The meter on a terminal stderr; stdout stays clean."""
    env = clitest.clean_env(HASHBATCH_PROGRESS_FIRST_MS="0")
    for quiet in (False, True):
        master, slave = pty.openpty()
        p = clitest.subprocess.run(
            [exe, "sum", "-r"] + (["--quiet"] if quiet else []) +
            ["tree"], cwd=tmp, env=env, stdout=clitest.subprocess.PIPE,
            stderr=slave, timeout=TIMEOUT)
        os.close(slave)
        seen = b""
        try:
            while True:
                chunk = os.read(master, 65536)
                if not chunk:
                    break
                seen += chunk
        except OSError:
            pass
        os.close(master)
        what = "progress%s" % (" --quiet" if quiet else "")
        chk.check(p.returncode == 0, what + ": exit status %d"
                  % p.returncode)
        chk.same_bytes(p.stdout, su.oracle_tree(["tree"], [], tmp),
                       what + ": stdout")
        drawn = b" files, " in seen and b"/s" in seen
        if drawn:  # and erased at the end, before the exit
            chk.check(seen.endswith(b"\r\x1b[K"), what + ": not erased",
                      repr(seen[-100:]))
        chk.check(drawn != quiet, what + ": meter %s"
                  % ("drawn" if drawn else "not drawn"), repr(seen[:300]))


def check_usage(chk, exe, tmp):
    for args in (["-L", "t"], ["--io-threads", "0", "t"],
                 ["--small-max", "x", "t"], ["-c", "-r", "t"]):
        p = clitest.run([exe, "sum"] + args, cwd=tmp)
        chk.status(p, 2, "usage: " + " ".join(args))


def main():
    exe = clitest.binary()
    if not clitest.have_sha1sum():
        print("SKIP: sha1sum not found")
        sys.exit(clitest.SKIP)
    chk = clitest.Checker("test_sum_bad_input")
    tmp = tempfile.mkdtemp(prefix="hb-cli-bad-")
    sock = None
    try:
        specials, sock = make_specials(os.path.join(tmp, "t") if os.mkdir(
            os.path.join(tmp, "t")) is None else None)
        check_explicit(chk, exe, tmp, specials)
        check_tree(chk, exe, tmp, specials)
        check_proc(chk, exe, tmp)
        su.make_tree(os.path.join(tmp, "tree"), su.new_rng(), nfiles=60,
                     big=1)
        check_progress(chk, exe, tmp)
        check_usage(chk, exe, tmp)
    finally:
        if sock is not None:
            sock.close()
        shutil.rmtree(tmp, ignore_errors=True)
    chk.finish()


if __name__ == "__main__":
    main()
