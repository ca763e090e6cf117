"""clitest.py - shared helpers of the `hashbatch` CLI tests (Python 3
standard library only).

Owns: locating the binary (argv[1]) and the part to run (--part=NAME,
argv[2]), running commands with a clean environment (or as an
unprivileged user), skipping (exit 77, the reason on stderr), collecting
failures and printing what differed.
Must not: hold any test's expectations.
"""
import difflib
import os
import shutil
import subprocess
import sys

SKIP = 77  # ctest SKIP_RETURN_CODE


def skip(reason):
    """Ends the test as a ctest SKIP, the reason on stderr (scripts/test.sh
    and scripts/check_skips.sh show it)."""
    sys.stdout.flush()
    print("SKIP: %s" % reason, file=sys.stderr)
    sys.exit(SKIP)


def part():
    """The part of a test this run is for: NAME of a --part=NAME argument
    (tests/cli/CMakeLists.txt registers each part as its own ctest test,
    cli_<script>_<part>, so a part that cannot run here is a SKIP of its
    own), or None for the script's main run."""
    for a in sys.argv[2:]:
        if a.startswith("--part="):
            return a[len("--part="):]
        sys.exit("unknown argument %r (expected --part=NAME)" % a)
    return None


def binary():
    if len(sys.argv) < 2:
        sys.exit("usage: %s PATH/TO/hashbatch [--part=NAME]" % sys.argv[0])
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


UNPRIVILEGED = ("nobody", "nogroup")


def unprivileged_prefix():
    """The argv prefix that runs a command as a user whom file permissions
    stop: [] when this process is not root; as root, setpriv (util-linux)
    to nobody:nogroup with no supplementary groups, which also drops the
    capabilities (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) that let root read
    a chmod 000 file. Exits 1 when root has no setpriv: a permission case
    must not quietly pass as root."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        sys.exit("running as root without setpriv (Debian: util-linux): the "
                 "permission cases cannot run as an unprivileged user")
    return [setpriv, "--reuid=%s" % UNPRIVILEGED[0], "--regid=%s" % UNPRIVILEGED[1],
            "--clear-groups", "--"]


def unprivileged_binary(exe, scratch):
    """A path to exe that the unprivileged_prefix() user can run. As root:
    exe itself when that user reaches it (every folder on its path
    searchable); otherwise a copy in a fresh world-readable folder under
    scratch (a build tree under /root is not reachable by nobody); the
    hashbatch binary links libhashbatch statically, and a copy that still
    cannot run fails the test with the loader's words. scratch is opened
    to everyone (open_for_unprivileged)."""
    prefix = unprivileged_prefix()
    if not prefix:
        return exe

    def runs(path):
        # Through sh: setpriv itself may still hold root's capabilities
        # when it execs, and reach what nobody cannot.
        return run(prefix + ["/bin/sh", "-c", 'exec "$0" --version', path], timeout=60)

    probe = runs(exe)
    if probe.returncode == 0:
        return exe
    open_for_unprivileged(scratch)
    where = os.path.join(scratch, "unprivileged-bin")
    os.makedirs(where, exist_ok=True)
    os.chmod(where, 0o755)
    copy = os.path.join(where, os.path.basename(exe))
    shutil.copy2(exe, copy)
    os.chmod(copy, 0o755)
    probe = runs(copy)
    if probe.returncode != 0:
        sys.exit("%s cannot run %s (nor a copy in %s), exit %d:\n%s"
                 % (UNPRIVILEGED[0], exe, where, probe.returncode, show(probe.stderr)))
    print("note: %s cannot reach %s; running a copy in %s" % (UNPRIVILEGED[0], exe, where))
    return copy


def open_for_unprivileged(path):
    """Makes path (a folder made by tempfile, mode 0700) searchable and
    readable by everyone, and sets the umask to 022 so what is made below
    it from now on is too, so the unprivileged user reaches it; exits 1
    when a folder above it is not searchable by others."""
    os.umask(0o022)
    os.chmod(path, 0o755)
    d = os.path.dirname(os.path.abspath(path))
    while True:
        if not os.stat(d).st_mode & 0o001:
            sys.exit("%s is not searchable by others: the unprivileged user "
                     "cannot reach %s (set TMPDIR to a folder it can)" % (d, path))
        if d == "/":
            return
        d = os.path.dirname(d)


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
