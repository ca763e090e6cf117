"""test_dedup_errors.py - `hashbatch dedup` with bad input: FIFOs and
sockets in the tree and a device named as an argument (skipped, never
opened: the run does not hang), missing paths, files in /proc and /sys
that lie about their size, a read that fails (/proc/self/mem), directory
loops and symlink cycles when following links, an unreadable folder and
file (as root, run as nobody through setpriv: chmod 000 does not stop
root), and an engine that cannot start. Each problem is one stderr
line naming the path and the cause; the duplicates that could be read are
still reported; the exit status is 1. Usage errors exit 2.

Usage: test_dedup_errors.py PATH/TO/hashbatch
"""
import os
import socket
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402
import dedupcheck as dc  # noqa: E402

TIMEOUT = 30  # a run that blocks on a FIFO fails here instead of hanging


CHK = None  # the Checker, set by main()


def dedup(exe, args, cwd=None):
    proc = clitest.run([exe, "dedup"] + args, cwd=cwd, timeout=TIMEOUT)
    dc.no_sanitizer_report(CHK, proc, "dedup %s" % " ".join(map(str, args)))
    return proc


def err_lines(proc):
    return proc.stderr.decode("utf-8", "replace").splitlines()


def one_line_about(chk, proc, path, cause, what):
    """Exactly one stderr line names path (as given) with cause."""
    lines = [l for l in err_lines(proc) if l.startswith("hashbatch: %s: " % path)]
    chk.check(len(lines) == 1 and cause in lines[0],
              "%s: one stderr line '%s: ...%s...'" % (what, path, cause),
              "stderr:\n" + clitest.show(proc.stderr))


def small_tree(root):
    for d in ("x", "y"):
        os.makedirs(os.path.join(root, d))
        dc.write(os.fsencode(os.path.join(root, d, "same")), b"twin\n" * 100)
    dc.write(os.fsencode(os.path.join(root, "x", "other")), b"other\n")


def check_specials(chk, exe, tmp):
    root = os.path.join(tmp, "specials")
    small_tree(root)
    os.mkfifo(os.path.join(root, "x", "fifo"))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(root, "y", "sock"))
    try:
        proc = dedup(exe, ["--backend", "cpu", "--empty", root])
    finally:
        s.close()
    chk.status(proc, 1, "FIFO and socket")
    one_line_about(chk, proc, os.path.join(root, "x", "fifo"), "is a FIFO (skipped)", "FIFO")
    one_line_about(chk, proc, os.path.join(root, "y", "sock"), "is a socket (skipped)",
                   "socket")
    want = "%s\n%s\n\n" % (os.path.join(root, "x", "same"), os.path.join(root, "y", "same"))
    chk.same_bytes(proc.stdout, want.encode(), "FIFO and socket: the twins still reported")
    proc = dedup(exe, ["--backend", "cpu", "--empty", "/dev/zero", root])
    chk.status(proc, 1, "a device argument")
    one_line_about(chk, proc, "/dev/zero", "is a character device (skipped)", "/dev/zero")
    proc = dedup(exe, ["--backend", "cpu", os.path.join(tmp, "missing"), root])
    chk.status(proc, 1, "a missing argument")
    one_line_about(chk, proc, os.path.join(tmp, "missing"), "No such file or directory",
                   "missing")
    chk.same_bytes(proc.stdout, want.encode(), "missing: the twins still reported")


def check_lying_files(chk, exe, tmp):
    """Files whose size is not their content's, and a failing read."""
    e1, e2 = os.path.join(tmp, "e1"), os.path.join(tmp, "e2")
    dc.write(os.fsencode(e1), b"")
    dc.write(os.fsencode(e2), b"")
    if chk.check(os.path.exists("/proc/self/status"), "/proc is mounted (/proc/self/status)"):
        proc = dedup(exe, ["--backend", "cpu", "--empty", "/proc/self/status", e1, e2])
        chk.status(proc, 1, "/proc/self/status (size 0, has content)")
        one_line_about(chk, proc, "/proc/self/status", "holds more bytes than its size",
                       "/proc/self/status")
        chk.same_bytes(proc.stdout, ("%s\n%s\n\n" % (e1, e2)).encode(),
                       "/proc: the real empty files still grouped")
    if chk.check(os.path.exists("/proc/self/mem"), "/proc is mounted (/proc/self/mem)"):
        proc = dedup(exe, ["--backend", "cpu", "--empty", "/proc/self/mem", e1, e2])
        chk.status(proc, 1, "/proc/self/mem (read fails)")
        one_line_about(chk, proc, "/proc/self/mem", "Input/output error", "/proc/self/mem")
    # sysfs attributes say 4096 bytes and hold a few; any two will do (the
    # first pair only where there is transparent hugepage support).
    sysfs = ["/sys/kernel/mm/transparent_hugepage/enabled",
             "/sys/kernel/mm/transparent_hugepage/defrag",
             "/sys/devices/system/cpu/online", "/sys/devices/system/cpu/possible",
             "/sys/kernel/uevent_seqnum", "/sys/power/state"]
    pair = [p for p in sysfs if os.path.isfile(p) and os.path.getsize(p) == 4096][:2]
    if chk.check(len(pair) == 2, "two /sys files of size 4096 among %r (is sysfs "
                 "mounted on /sys?)" % sysfs):
        proc = dedup(exe, ["--backend", "cpu"] + pair)
        chk.status(proc, 1, "/sys files (size 4096, shorter content)")
        for p in pair:
            one_line_about(chk, proc, p, "holds fewer bytes", p)
        chk.check(proc.stdout == b"", "/sys: nothing grouped")


def check_loops(chk, exe, tmp):
    root = os.path.join(tmp, "loops")
    small_tree(root)
    os.symlink("..", os.path.join(root, "x", "up"))
    os.symlink("c2", os.path.join(root, "c1"))
    os.symlink("c1", os.path.join(root, "c2"))
    plain = dedup(exe, ["--backend", "cpu", root])
    chk.status(plain, 0, "symlinks not followed: nothing to say")
    chk.check(plain.stderr.count(b"\n") == 1 and b"duplicate file" in plain.stderr,
              "symlinks not followed: only the totals on stderr", clitest.show(plain.stderr))
    proc = dedup(exe, ["-L", "--backend", "cpu", root])
    chk.status(proc, 1, "-L with a loop and a cycle")
    one_line_about(chk, proc, os.path.join(root, "x", "up"), "file system loop", "loop")
    one_line_about(chk, proc, os.path.join(root, "c1"), "Too many levels of symbolic links",
                   "cycle c1")
    one_line_about(chk, proc, os.path.join(root, "c2"), "Too many levels of symbolic links",
                   "cycle c2")
    chk.check(b"x/same\n" in proc.stdout and b"y/same\n" in proc.stdout,
              "-L: the twins still reported", clitest.show(proc.stdout))


def check_unreadable(chk, exe, tmp):
    """As root the run is made as nobody:nogroup (clitest.unprivileged_prefix),
    on a tree that user can walk but for the two locked paths."""
    prefix = clitest.unprivileged_prefix()
    clitest.open_for_unprivileged(tmp)
    runner = clitest.unprivileged_binary(exe, tmp)
    root = os.path.join(tmp, "locked")
    small_tree(root)
    os.makedirs(os.path.join(root, "shut"))
    dc.write(os.fsencode(os.path.join(root, "x", "secret")), b"twin\n" * 100)
    os.chmod(os.path.join(root, "shut"), 0)
    os.chmod(os.path.join(root, "x", "secret"), 0)
    try:
        args = ["dedup", "--backend", "cpu", root]
        proc = clitest.run(prefix + [runner] + args, timeout=TIMEOUT,
                           env=clitest.clean_env(HOME=tmp))
        dc.no_sanitizer_report(chk, proc, "dedup %s" % " ".join(args))
    finally:
        os.chmod(os.path.join(root, "shut"), 0o755)
        os.chmod(os.path.join(root, "x", "secret"), 0o644)
    who = "as %s" % clitest.UNPRIVILEGED[0] if prefix else "not root"
    chk.status(proc, 1, "unreadable folder and file (%s)" % who)
    one_line_about(chk, proc, os.path.join(root, "shut"), "Permission denied", "folder")
    one_line_about(chk, proc, os.path.join(root, "x", "secret"), "Permission denied", "file")
    chk.check(b"x/same\n" in proc.stdout and b"y/same\n" in proc.stdout
              and b"secret" not in proc.stdout,
              "unreadable: the readable twins still reported, the locked file not",
              clitest.show(proc.stdout))


def check_engine_failure(chk, exe, tmp):
    root = os.path.join(tmp, "engine")
    small_tree(root)
    # No OpenCL platform at all (the ICD loader finds no vendor file).
    proc = clitest.run([exe, "dedup", "--backend", "opencl", root], timeout=TIMEOUT,
                       env=clitest.clean_env(OCL_ICD_VENDORS=os.path.join(tmp, "no-icds")))
    dc.no_sanitizer_report(chk, proc, "dedup without OpenCL")
    chk.status(proc, 1, "an engine that cannot start")
    chk.check(proc.stdout == b"", "engine failure: nothing presented as a result",
              clitest.show(proc.stdout))
    chk.check(b"cannot start" in proc.stderr, "engine failure: says why",
              clitest.show(proc.stderr))
    # A device spec that matches nothing is the user's mistake: exit 2.
    proc = dedup(exe, ["--backend", "opencl", "--device", "no-such-device-anywhere", root])
    chk.status(proc, 2, "a device spec that matches no device")
    chk.check(proc.stdout == b"", "bad device spec: nothing presented as a result",
              clitest.show(proc.stdout))
    chk.check(b"'no-such-device-anywhere'" in proc.stderr, "bad device spec: names it",
              clitest.show(proc.stderr))


def check_usage(chk, exe, tmp):
    for args, text in [([], "missing directory operand"),
                       (["--bogus", tmp], "unrecognized option"),
                       (["--min-size", "lots", tmp], "invalid size"),
                       (["--json", "--csv", tmp], "choose one of"),
                       (["--backend", "gpu-please", tmp], "invalid argument"),
                       (["-G"], "requires an argument")]:
        proc = dedup(exe, args)
        chk.status(proc, 2, "usage: %r" % args)
        chk.check(text.encode() in proc.stderr and proc.stdout == b"",
                  "usage %r: says '%s'" % (args, text), clitest.show(proc.stderr))
    proc = dedup(exe, ["--help"])
    chk.status(proc, 0, "--help")
    chk.check(proc.stdout.startswith(b"Usage: hashbatch dedup"), "--help prints the usage")


def main():
    exe = clitest.binary()
    global CHK
    chk = CHK = clitest.Checker("cli_dedup_errors")
    with tempfile.TemporaryDirectory() as tmp:
        check_specials(chk, exe, tmp)
        check_lying_files(chk, exe, tmp)
        check_loops(chk, exe, tmp)
        check_unreadable(chk, exe, tmp)
        check_engine_failure(chk, exe, tmp)
        check_usage(chk, exe, tmp)
    chk.finish()


if __name__ == "__main__":
    main()
