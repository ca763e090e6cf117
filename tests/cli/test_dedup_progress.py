"""test_dedup_progress.py - the progress meter of `hashbatch dedup`: drawn
on stderr when stderr is a terminal (a pseudo-terminal here), erased
before the totals, never on stdout; silenced by --quiet; absent when
stderr is not a terminal.

Usage: test_dedup_progress.py PATH/TO/hashbatch
"""
import os
import pty
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402
import dedupcheck as dc  # noqa: E402


def run_on_pty(args, env):
    """Runs args with stderr on a pseudo-terminal; (rc, stdout, stderr)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    out = proc.stdout.read()
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO once the child side is closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    rc = proc.wait(timeout=60)
    # the terminal turns "\n" into "\r\n": undo that, so a "\r" left is
    # the meter's
    return rc, out, b"".join(chunks).replace(b"\r\n", b"\n")


def main():
    exe = clitest.binary()
    chk = clitest.Checker("cli_dedup_progress")
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(os.fsencode(tmp), b"tree")
        dc.make_tree(root, seed=3, nfiles=60)
        env = clitest.clean_env(HASHBATCH_PROGRESS_FIRST_MS="0")
        args = [exe, "dedup", "--backend", "cpu", root]
        rc, out, err = run_on_pty(args, env)
        chk.check(rc == 0, "on a terminal: exit 0", clitest.show(err))
        chk.check(b"\r" in err and b" files, " in err and b"/s" in err,
                  "on a terminal: the meter is drawn (files, bytes, rate)", repr(err[:300]))
        last = err.rsplit(b"\r\x1b[K", 1)
        chk.check(len(last) == 2 and last[1].startswith(b"hashbatch: ") and
                  b"\r" not in last[1] and b"duplicate file" in last[1],
                  "the meter is erased before the totals", repr(err[-300:]))
        chk.check(b"\r" not in out and b"\x1b" not in out, "nothing of it on stdout")
        plain = clitest.run(args, env=env)
        chk.same_bytes(out, plain.stdout, "the same groups with and without a terminal")
        chk.check(b"\r" not in plain.stderr and b"\x1b" not in plain.stderr,
                  "stderr not a terminal: no meter", repr(plain.stderr[:300]))
        rc, out, err = run_on_pty([exe, "dedup", "--quiet", "--backend", "cpu", root], env)
        chk.check(rc == 0 and b"\r" not in err and b"duplicate file" not in err,
                  "--quiet: no meter and no totals on stderr", repr(err[:300]))
        chk.check(err.count(b"SHA-1 collision") == err.count(b"\n"),
                  "--quiet: the collision warnings alone are left", repr(err[:300]))
    chk.finish()


if __name__ == "__main__":
    main()
