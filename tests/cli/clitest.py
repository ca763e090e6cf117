"""clitest.py - shared helpers of the `hashbatch` CLI tests (Python 3
standard library only).

Owns: locating the binary (argv[1]), running commands with a clean
environment, collecting failures and printing what differed.
Must not: hold any test's expectations.
"""
import difflib
import os
import shutil
import subprocess
import sys

SKIP = 77  # ctest SKIP_RETURN_CODE


def binary():
    if len(sys.argv) < 2:
        sys.exit("usage: %s PATH/TO/hashbatch" % sys.argv[0])
    path = os.path.abspath(sys.argv[1])
    if not os.access(path, os.X_OK):
        sys.exit("not an executable: %s" % path)
    return path


def clean_env(**extra):
    """The environment without HASHBATCH_* (they change what sum does)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("HASHBATCH_")}
    env.update(extra)
    return env


def run(args, stdin=None, input=None, cwd=None, env=None, timeout=600):
    """Runs args; returns CompletedProcess with bytes stdout/stderr."""
    return subprocess.run(args, stdin=stdin, input=input, cwd=cwd,
                          env=env if env is not None else clean_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)


def unmount_and_remove(work, mnt, mounted):
    """Unmounts mnt (when mounted; lazily after 10 refusals) and removes
    the folder work, unless something below it is still mounted."""
    import time
    if mounted:
        for _ in range(10):
            p = subprocess.run(["umount", mnt], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if p.returncode == 0:
                break
            time.sleep(0.5)
        else:
            print("umount %s: %s; unmounting lazily" % (mnt, p.stderr.decode().strip()))
            subprocess.run(["umount", "-l", mnt])
    with open("/proc/self/mounts") as f:
        if any(line.split()[1].startswith(work + "/") for line in f):
            print("left %s: still mounted" % work)
            return
    shutil.rmtree(work, ignore_errors=True)


def have_sha1sum():
    return shutil.which("sha1sum") is not None


def show(data, limit=2000):
    text = data.decode("utf-8", "backslashreplace")
    return text if len(text) <= limit else text[:limit] + "...[cut]"


class Checker:
    """Collects failures; finish() prints them and exits 1 if any."""

    def __init__(self, name):
        self.name = name
        self.failures = 0
        self.checks = 0

    def fail(self, what, detail=""):
        self.failures += 1
        print("FAIL: %s" % what)
        if detail:
            print(detail.rstrip("\n"))

    def check(self, cond, what, detail=""):
        self.checks += 1
        if not cond:
            self.fail(what, detail)
        return cond

    def same_bytes(self, got, want, what, max_lines=40):
        """Byte-for-byte comparison; on a difference, a unified diff of the
        lines (invalid UTF-8 shown as \\x escapes)."""
        self.checks += 1
        if got == want:
            return True
        a = want.decode("utf-8", "backslashreplace").splitlines(True)
        b = got.decode("utf-8", "backslashreplace").splitlines(True)
        diff = list(difflib.unified_diff(a, b, "expected", "hashbatch", n=1))
        if not diff:  # differs only in bytes the decoding hid
            diff = ["expected %r\n" % want[:400], "got      %r\n" % got[:400]]
        lines = [line if line.endswith("\n") else line + "\n"
                 for line in diff[:max_lines]]
        if len(diff) > max_lines:
            lines.append("... %d more diff lines\n" % (len(diff) - max_lines))
        self.fail("%s: output differs (%d vs %d bytes)"
                  % (what, len(got), len(want)), "".join(lines))
        return False

    def status(self, proc, want, what):
        return self.check(proc.returncode == want,
                          "%s: exit status %d, expected %d"
                          % (what, proc.returncode, want),
                          "stderr:\n" + show(proc.stderr))

    def finish(self):
        if self.failures:
            print("%s: %d of %d checks failed"
                  % (self.name, self.failures, self.checks))
            sys.exit(1)
        print("%s: all %d checks passed" % (self.name, self.checks))
        sys.exit(0)
