"""test_sum_check.py - `hashbatch sum -c` against GNU sha1sum -c: the same
stdout, stderr (program name aside) and exit status for checksum files
that sha1sum wrote (plain, --tag, -b, escaped names) and for damaged
ones (wrong digests, missing files, directories, garbage, comments, CRLF
ends, uppercase hex, BSD variants, "HEX NAME" lines, bad escapes), under
--quiet, --status, --strict, -w, --ignore-missing and their mixes; from
standard input; several files; a "-" entry reading standard input; no
valid line; a missing or unreadable checksum file. -z input: -c -z reads
NUL-terminated files (sha1sum refuses -c -z: compared with sha1sum -c of
the same sums written with newlines); plain -c of a -z file behaves as
sha1sum's. Usage errors are worded as sha1sum's (exit 2, not 1).

Usage: test_sum_check.py PATH/TO/hashbatch
"""
import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402
import sumtest_util as su  # noqa: E402

OPTION_SETS = [[], ["--quiet"], ["--status"], ["--strict"], ["-w"],
               ["--ignore-missing"], ["--ignore-missing", "--quiet"],
               ["-w", "--strict"], ["--status", "-w"], ["--quiet", "--status"]]


def write(tmp, name, data):
    with open(os.path.join(tmp, name), "wb") as f:
        f.write(data)


def damaged(lines):
    """Sums lines with every kind of trouble mixed in."""
    zero = b"0" * 40
    out = list(lines[:5])
    good = lines[0]
    hexd, name = good[:40], good[42:]
    out += [b"# a comment line\n",
            b"garbage\n",
            zero + b"  " + name,                     # mismatch
            hexd.upper() + b"  " + name,             # uppercase: OK
            zero + b"  missing-file\n",
            zero + b"  tree/a\n",                    # a directory
            b"\n",
            hexd + b"  " + name.rstrip(b"\n") + b"\r\n",  # CRLF
            b"SHA1 (" + name.rstrip(b"\n") + b") = " + hexd + b"\n",
            b"SHA1(" + name.rstrip(b"\n") + b")=" + hexd + b"\n",
            b"SHA1 (" + name.rstrip(b"\n") + b") = " + zero[:39] + b"\n",
            b"\\" + hexd + b"  bad\\escape\n",
            b"   " + good,                           # leading blanks
            hexd + b"x  " + name]
    out += lines[5:]
    return b"".join(out)


def check_files(chk, exe, tmp, sums_files):
    for fname in sums_files:
        for opts in OPTION_SETS:
            su.same_run(chk, exe, ["-c"] + opts + [fname],
                        ["-c"] + opts + [fname],
                        "-c %s %s" % (" ".join(opts), fname), tmp)


def check_stdin(chk, exe, tmp):
    with open(os.path.join(tmp, "sums.plain"), "rb") as f:
        data = f.read()
    su.same_run(chk, exe, ["-c"], ["-c"], "-c from stdin (no FILE)", tmp,
                input=data)
    su.same_run(chk, exe, ["-c", "-"], ["-c", "-"], "-c -", tmp, input=data)
    # a "-" entry in a checksum file reads standard input
    payload = b"from stdin\n" * 1000
    line = su.sha1sum(["-"], cwd=tmp, input=payload)[0]
    write(tmp, "sums.stdin", line + data[:300].rsplit(b"\n", 1)[0] + b"\n")
    su.same_run(chk, exe, ["-c", "sums.stdin"], ["-c", "sums.stdin"],
                "-c with a '-' entry", tmp, input=payload)
    # "-" inside a list read from stdin is a bad line
    su.same_run(chk, exe, ["-c", "-w"], ["-c", "-w"],
                "'-' entry in stdin list", tmp, input=line + data)


def check_odd_cases(chk, exe, tmp):
    write(tmp, "sums.junk", b"junk\nmore junk\n")
    write(tmp, "sums.empty", b"")
    write(tmp, "sums.onlymissing", b"0" * 40 + b"  nothing-here\n")
    cases = [["sums.junk"], ["sums.empty"], ["no-such-sums"], ["tree"],
             ["sums.plain", "sums.tag", "sums.junk"],
             ["--ignore-missing", "sums.onlymissing"],
             ["--strict", "sums.damaged"]]
    for args in cases:
        su.same_run(chk, exe, ["-c"] + args, ["-c"] + args,
                    "-c " + " ".join(args), tmp)


def check_zero(chk, exe, tmp, files):
    zsums = su.sha1sum(["-z", "--"] + files, cwd=tmp)[0]
    write(tmp, "sums.z", zsums)
    p = clitest.run([exe, "sum", "-c", "-z", "sums.z"], cwd=tmp)
    ref = clitest.run(["sha1sum", "-c", "sums.plain"], cwd=tmp)
    chk.status(p, 0, "-c -z of sha1sum -z output")
    chk.same_bytes(p.stdout, ref.stdout, "-c -z of sha1sum -z output")
    su.same_run(chk, exe, ["-c", "sums.z"], ["-c", "sums.z"],
                "plain -c of a -z file (as sha1sum: first record only)", tmp)
    ours = clitest.run([exe, "sum", "-z", "--tag", "--"] + [
        f.decode("utf-8", "surrogateescape") for f in files], cwd=tmp)
    write(tmp, "sums.ztag", ours.stdout)
    p = clitest.run([exe, "sum", "-c", "-z", "sums.ztag"], cwd=tmp)
    chk.status(p, 0, "-c -z of our -z --tag output")
    chk.same_bytes(p.stdout, ref.stdout, "-c -z of our -z --tag output")


def check_usage(chk, exe, tmp):
    for args, text in ((["-c", "--tag"], b"the --tag option is meaningless "
                        b"when verifying checksums"),
                       (["-c", "-b"], b"the --binary and --text options are "
                        b"meaningless when verifying checksums"),
                       (["--status"], b"the --status option is meaningful "
                        b"only when verifying checksums"),
                       (["--strict"], b"the --strict option is meaningful "
                        b"only when verifying checksums"),
                       (["-w"], b"the --warn option is meaningful only "
                        b"when verifying checksums"),
                       (["--ignore-missing"], b"the --ignore-missing option "
                        b"is meaningful only when verifying checksums"),
                       (["--tag", "-t"], b"--tag does not support --text "
                        b"mode")):
        p = clitest.run([exe, "sum"] + args + ["sums.plain"], cwd=tmp)
        ref = clitest.run(["sha1sum"] + args + ["sums.plain"], cwd=tmp)
        what = "usage: " + " ".join(args)
        chk.status(p, 2, what)
        chk.check(text in p.stderr and text in ref.stderr,
                  what + ": message differs from sha1sum's",
                  clitest.show(p.stderr) + "\nsha1sum:\n" +
                  clitest.show(ref.stderr))
        chk.check(p.stdout == b"", what + ": stdout not empty")


def main():
    exe = clitest.binary()
    if not clitest.have_sha1sum():
        print("SKIP: sha1sum not found")
        sys.exit(clitest.SKIP)
    rng = su.new_rng()
    chk = clitest.Checker("test_sum_check")
    tmp = tempfile.mkdtemp(prefix="hb-cli-check-")
    try:
        su.make_tree(os.path.join(tmp, "tree"), rng, nfiles=120, big=2)
        files = su.find_files("tree", cwd=tmp)
        plain = su.sha1sum(["--"] + files, cwd=tmp)[0]
        write(tmp, "sums.plain", plain)
        write(tmp, "sums.tag", su.sha1sum(["--tag", "--"] + files,
                                          cwd=tmp)[0])
        write(tmp, "sums.binary", su.sha1sum(["-b", "--"] + files,
                                             cwd=tmp)[0])
        write(tmp, "sums.damaged", damaged(plain.splitlines(True)))
        # a file changed after the sums were taken: FAILED
        victim = os.path.join(tmp, os.fsdecode(files[7]))
        with open(victim, "ab") as f:
            f.write(b"changed")
        check_files(chk, exe, tmp, ["sums.plain", "sums.tag", "sums.binary",
                                    "sums.damaged"])
        check_stdin(chk, exe, tmp)
        check_odd_cases(chk, exe, tmp)
        with open(victim, "rb+") as f:
            f.truncate(os.path.getsize(victim) - len(b"changed"))
        check_zero(chk, exe, tmp, files)
        check_usage(chk, exe, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    chk.finish()


if __name__ == "__main__":
    main()
