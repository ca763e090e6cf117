"""test_sum_errors.py - `hashbatch sum` with inputs that cannot be read
(missing, a directory, a path through a file, unreadable, a read that fails
mid-way) mixed with good files (the unreadable one as nobody through
setpriv when run as root: chmod 000 does not stop root): the good lines alone on stdout, in order,
each bad path named with its cause on stderr as sha1sum does, exit 1.
Usage errors (bad options and option values): exit 2 with a message.

Usage: test_sum_errors.py PATH/TO/hashbatch
"""
import hashlib
import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402


def sha1_line(root, name):
    with open(os.path.join(root, name), "rb") as f:
        return ("%s  %s\n" % (hashlib.sha1(f.read()).hexdigest(),
                              name)).encode()


def make_tree(root):
    files = {"good1": b"hello\n", "good 2": b"x" * 100000, "empty": b""}
    for name, data in files.items():
        with open(os.path.join(root, name), "wb") as f:
            f.write(data)
        os.chmod(os.path.join(root, name), 0o644)  # readable by nobody too
    os.mkdir(os.path.join(root, "adir"), 0o755)
    os.chmod(os.path.join(root, "adir"), 0o755)


def bad_inputs(root):
    """(name, expected strerror text) for inputs that cannot be read."""
    bad = [("missing", "No such file or directory"),
           ("no such dir/x", "No such file or directory"),
           ("adir", "Is a directory"),
           ("good1/x", "Not a directory")]
    # Opens fine, then read() fails (EIO): the "fails mid-way" case, and
    # it works for root too. Without /proc this fails (No such file): no
    # silent pass.
    bad.append(("/proc/self/mem", "Input/output error"))
    return bad


def check_mixed(chk, exe, root, backend, bad, prefix=()):
    good = ["good1", "good 2", "empty"]
    args = []
    for i, (name, _) in enumerate(bad):  # interleave good and bad
        args += [good[i % len(good)], name]
    args += good
    what = "mixed good and bad (%s%s)" % (backend, ", as %s" % clitest.UNPRIVILEGED[0]
                                          if prefix else "")
    env = clitest.clean_env(HOME=root)
    proc = clitest.run(list(prefix) + [exe, "sum", "--backend", backend] + args,
                       cwd=root, env=env)
    chk.status(proc, 1, what)
    want = b"".join(sha1_line(root, a) for a in args
                    if a in good)
    chk.same_bytes(proc.stdout, want, what + ": stdout")
    errs = proc.stderr.decode("utf-8", "replace").splitlines()
    want_errs = []
    for name, cause in bad:
        shown = "'%s'" % name if " " in name else name
        want_errs.append("hashbatch: %s: %s" % (shown, cause))
    chk.check(errs == want_errs, what + ": stderr",
              "expected:\n  %s\ngot:\n  %s" % ("\n  ".join(want_errs),
                                              "\n  ".join(errs)))
    if clitest.have_sha1sum():
        ref = clitest.run(list(prefix) + ["sha1sum"] + args, cwd=root, env=env)
        chk.same_bytes(proc.stdout, ref.stdout, what + ": vs sha1sum stdout")
        chk.same_bytes(proc.stderr,
                       ref.stderr.replace(b"sha1sum:", b"hashbatch:"),
                       what + ": vs sha1sum stderr")
        chk.check(ref.returncode == proc.returncode,
                  what + ": exit status differs from sha1sum's (%d)"
                  % ref.returncode)


def check_locked(chk, exe, root, bad):
    """A file its reader may not open (chmod 000) among the others, as
    nobody when this runs as root."""
    prefix = clitest.unprivileged_prefix()
    clitest.open_for_unprivileged(root)
    runner = clitest.unprivileged_binary(exe, root)
    locked = os.path.join(root, "locked")
    with open(locked, "wb") as f:
        f.write(b"secret")
    os.chmod(locked, 0)
    check_mixed(chk, runner, root, "cpu", bad + [("locked", "Permission denied")], prefix)


def check_only_bad(chk, exe, root):
    proc = clitest.run([exe, "sum", "--backend", "cpu", "missing"], cwd=root)
    chk.status(proc, 1, "only a missing file")
    chk.check(proc.stdout == b"", "only a missing file: stdout not empty",
              clitest.show(proc.stdout))
    chk.check(b"missing: No such file or directory" in proc.stderr,
              "only a missing file: stderr", clitest.show(proc.stderr))


def usage_case(chk, exe, root, args, needles, what, env=None):
    proc = clitest.run([exe] + args, cwd=root, env=env)
    chk.status(proc, 2, what)
    chk.check(proc.stdout == b"", what + ": stdout not empty",
              clitest.show(proc.stdout))
    for needle in needles:
        chk.check(needle.encode() in proc.stderr,
                  "%s: stderr does not mention %r" % (what, needle),
                  "stderr:\n" + clitest.show(proc.stderr))


def check_usage(chk, exe, root):
    usage_case(chk, exe, root, ["sum", "--bogus", "good1"], ["--bogus"],
               "unknown long option")
    usage_case(chk, exe, root, ["sum", "-Q", "good1"], ["Q"],
               "unknown short option")
    usage_case(chk, exe, root, ["sum", "good1", "--bogus"], ["--bogus"],
               "unknown option after a file")
    usage_case(chk, exe, root, ["sum", "--backend", "gpu", "good1"],
               ["gpu", "backend"], "bad --backend value")
    usage_case(chk, exe, root, ["sum", "--backend=fast", "good1"],
               ["fast", "backend"], "bad --backend=value")
    usage_case(chk, exe, root, ["sum", "--verify", "maybe", "good1"],
               ["maybe", "verify"], "bad --verify value")
    usage_case(chk, exe, root, ["sum", "good1", "--backend"], ["--backend"],
               "--backend without a value")
    usage_case(chk, exe, root, ["sum", "good1"], ["HASHBATCH_BACKEND", "nope"],
               "bad HASHBATCH_BACKEND", env=clitest.clean_env(
                   HASHBATCH_BACKEND="nope"))
    usage_case(chk, exe, root, ["devices", "--bogus"], ["--bogus"],
               "devices: unknown option")
    usage_case(chk, exe, root, ["frobnicate"], ["frobnicate"],
               "unknown command")
    usage_case(chk, exe, root, [], ["Usage"], "no command")
    # An option beats the environment.
    proc = clitest.run([exe, "sum", "--backend", "cpu", "good1"], cwd=root,
                       env=clitest.clean_env(HASHBATCH_BACKEND="nope"))
    chk.status(proc, 0, "--backend overrides a bad HASHBATCH_BACKEND")
    for args in (["--help"], ["sum", "--help"], ["devices", "--help"],
                 ["help", "sum"]):
        proc = clitest.run([exe] + args, cwd=root)
        chk.status(proc, 0, " ".join(args))
        chk.check(b"Usage" in proc.stdout, " ".join(args) + ": no Usage",
                  clitest.show(proc.stdout))
    proc = clitest.run([exe, "--version"], cwd=root)
    chk.status(proc, 0, "--version")
    chk.check(proc.stdout.startswith(b"hashbatch "), "--version text",
              clitest.show(proc.stdout))


def main():
    exe = clitest.binary()
    chk = clitest.Checker("test_sum_errors")
    root = tempfile.mkdtemp(prefix="hb-cli-err-")
    try:
        make_tree(root)
        bad = bad_inputs(root)
        check_mixed(chk, exe, root, "cpu", bad)
        check_mixed(chk, exe, root, "auto", bad)
        check_locked(chk, exe, root, bad)
        check_only_bad(chk, exe, root)
        check_usage(chk, exe, root)
    finally:
        locked = os.path.join(root, "locked")
        if os.path.exists(locked):
            os.chmod(locked, 0o600)
        shutil.rmtree(root, ignore_errors=True)
    chk.finish()


if __name__ == "__main__":
    main()
