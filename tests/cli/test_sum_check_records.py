"""test_sum_check_records.py - what one record of a checksum file is for
`hashbatch sum -c`, and that reading one never takes unbounded memory.

- With -z a name is every byte up to the NUL: a trailing CR is part of
  the name (a file "c\\r" is checked, not "c", so a tampered "c\\r" says
  FAILED even when "c" still matches), and "names/\\r" is that file, not
  the directory "names/". Without -z one CR before the newline goes, as
  GNU sha1sum -c does for CRLF files (compared with sha1sum itself).
- A line longer than SUM_LINE_MAX (a 1 MiB line in a regular file) is an
  error naming the checksum file and the line number; the lines after it
  are still checked, and the check fails (exit 1).
- A checksum file that is a character device (/dev/zero) or a FIFO is
  skipped with the words `sum` uses for such listed files, exit 1, at
  once (a FIFO nobody writes to must not block).
- An endless line on standard input (256 MiB without a newline through a
  pipe) is read in bounded memory: the peak RSS stays far below it.

Usage: test_sum_check_records.py PATH/TO/hashbatch
"""
import os
import resource
import subprocess
import sys
import tempfile
import threading

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402

TIMEOUT = 120
MIB = 1 << 20


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


# AddressSanitizer reserves terabytes of address space for its shadow
# memory, so under it (scripts/sanitize.sh sets ASAN_OPTIONS) the address
# space is not limited; the peak-RSS check below still bounds the memory.
UNDER_ASAN = "ASAN_OPTIONS" in os.environ


def limit_memory():
    """A hashbatch that reads an endless line (the defect) runs out of
    address space here, not the machine out of memory."""
    if not UNDER_ASAN:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def sum_c(exe, args, cwd, stdin=None, timeout=TIMEOUT):
    """Runs sum (cpu backend, address space limited); a run past timeout
    comes back as exit status -1 (a failure every caller checks), not as
    an exception."""
    try:
        return subprocess.run([exe, "sum", "--backend", "cpu"] + args, cwd=cwd,
                              stdin=stdin, env=clitest.clean_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout, preexec_fn=limit_memory)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(e.cmd, -1, e.stdout or b"",
                                           (e.stderr or b"") + b"[timed out]")


def check_zero_keeps_cr(chk, exe, tmp):
    d = os.path.join(tmp, "z")
    os.mkdir(d)
    write(os.path.join(d, "c"), b"SAME")
    write(os.path.join(d, "c\r"), b"SAME")
    p = clitest.run([exe, "sum", "-z", "c\r"], cwd=d, timeout=TIMEOUT)
    chk.status(p, 0, "sum -z c\\r")
    write(os.path.join(d, "s"), p.stdout)
    write(os.path.join(d, "c\r"), b"TAMPERED\n")
    p = sum_c(exe, ["-c", "-z", "s"], d)
    chk.status(p, 1, "sum -c -z of a tampered c\\r")
    chk.same_bytes(p.stdout, b"c\r: FAILED\n", "sum -c -z names the file c\\r")

    os.mkdir(os.path.join(d, "names"))
    write(os.path.join(d, "names", "\r"), b"inside")
    p = clitest.run([exe, "sum", "-z", "names/\r"], cwd=d, timeout=TIMEOUT)
    chk.status(p, 0, "sum -z names/\\r")
    write(os.path.join(d, "s2"), p.stdout)
    p = sum_c(exe, ["-c", "-z", "s2"], d)
    chk.status(p, 0, "sum -c -z names/\\r")
    chk.same_bytes(p.stdout, b"names/\r: OK\n", "names/\\r is the file in names/")
    chk.check(b"Is a directory" not in p.stderr, "names/\\r is not the directory",
              clitest.show(p.stderr))


def check_crlf_like_sha1sum(chk, exe, tmp):
    """Without -z, CRLF lines lose the CR, as in sha1sum -c."""
    d = os.path.join(tmp, "crlf")
    os.mkdir(d)
    write(os.path.join(d, "c"), b"SAME")
    write(os.path.join(d, "c\r"), b"OTHER")
    hexd = clitest.run([exe, "sum", "c"], cwd=d).stdout[:40]
    write(os.path.join(d, "s"), hexd + b"  c\r\n")
    p = sum_c(exe, ["-c", "s"], d)
    chk.status(p, 0, "sum -c of a CRLF line")
    chk.same_bytes(p.stdout, b"c: OK\n", "a CRLF line names c")
    if clitest.have_sha1sum():
        q = clitest.run(["sha1sum", "-c", "s"], cwd=d)
        chk.same_bytes(p.stdout, q.stdout, "CRLF line vs sha1sum -c")
        chk.check(p.returncode == q.returncode, "CRLF status vs sha1sum -c")


def check_long_line(chk, exe, tmp):
    d = os.path.join(tmp, "long")
    os.mkdir(d)
    write(os.path.join(d, "c"), b"SAME")
    good = clitest.run([exe, "sum", "c"], cwd=d).stdout
    write(os.path.join(d, "big"), good + b"a" * MIB + b"\n" + good)
    p = sum_c(exe, ["-c", "big"], d)
    chk.status(p, 1, "a 1 MiB checksum line")
    chk.same_bytes(p.stdout, b"c: OK\nc: OK\n", "the lines around it are checked")
    chk.check(b"hashbatch: big: 2: checksum line too long" in p.stderr,
              "the error names the file and line 2", clitest.show(p.stderr))
    # A comment line is skipped whatever its length (as sha1sum does).
    write(os.path.join(d, "comment"), b"#" + b"x" * MIB + b"\n" + good)
    p = sum_c(exe, ["-c", "comment"], d)
    chk.status(p, 0, "a 1 MiB comment line")
    chk.same_bytes(p.stdout, b"c: OK\n", "after a long comment")


def check_special_checksum_files(chk, exe, tmp):
    # Before the fix these read /dev/zero until memory (or, with -z, time)
    # ran out: a device is never read, so a short limit is plenty.
    p = sum_c(exe, ["-c", "/dev/zero"], tmp, timeout=30)
    chk.status(p, 1, "sum -c /dev/zero")
    chk.same_bytes(p.stderr, b"hashbatch: /dev/zero: is a character device (skipped)\n",
                   "sum -c /dev/zero: the words of sum /dev/zero")
    ref = sum_c(exe, ["/dev/zero"], tmp)
    chk.same_bytes(p.stderr, ref.stderr, "same message as sum /dev/zero")
    p = sum_c(exe, ["-c", "-z", "/dev/zero"], tmp, timeout=30)
    chk.status(p, 1, "sum -c -z /dev/zero")
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    p = sum_c(exe, ["-c", "fifo"], tmp, timeout=30)
    chk.status(p, 1, "sum -c FIFO")
    chk.same_bytes(p.stderr, b"hashbatch: fifo: is a FIFO (skipped)\n", "sum -c FIFO message")


def feed(pipe, total):
    chunk = b"a" * MIB
    try:
        for _ in range(total // MIB):
            pipe.write(chunk)
    except BrokenPipeError:
        pass
    finally:
        try:
            pipe.close()
        except BrokenPipeError:
            pass


def check_endless_stdin(chk, exe, tmp):
    total = 256 * MIB
    proc = subprocess.Popen([exe, "sum", "--backend", "cpu", "-c", "-"], cwd=tmp,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clitest.clean_env(),
                            preexec_fn=limit_memory)
    t = threading.Thread(target=feed, args=(proc.stdin, total))
    t.start()
    out_err = [None, None]

    def drain(i, f):
        out_err[i] = f.read()
    readers = [threading.Thread(target=drain, args=(0, proc.stdout)),
               threading.Thread(target=drain, args=(1, proc.stderr))]
    for r in readers:
        r.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    t.join()
    for r in readers:
        r.join()
    peak = usage.ru_maxrss * 1024  # kilobytes on Linux
    chk.check(peak < 64 * MIB, "256 MiB line on stdin: peak RSS %.1f MiB (want < 64)"
              % (peak / MIB))
    chk.check(proc.returncode == 1, "endless line on stdin: exit %d, expected 1"
              % proc.returncode, clitest.show(out_err[1] or b""))
    chk.check(b"'standard input': 1: checksum line too long" in (out_err[1] or b""),
              "the error names standard input and line 1", clitest.show(out_err[1] or b""))


def main():
    exe = clitest.binary()
    chk = clitest.Checker("sum_check_records")
    with tempfile.TemporaryDirectory() as tmp:
        check_endless_stdin(chk, exe, tmp)
        check_zero_keeps_cr(chk, exe, tmp)
        check_crlf_like_sha1sum(chk, exe, tmp)
        check_long_line(chk, exe, tmp)
        check_special_checksum_files(chk, exe, tmp)
    chk.finish()


if __name__ == "__main__":
    main()
