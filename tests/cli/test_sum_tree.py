"""test_sum_tree.py - `hashbatch sum -r` and the output formats against
GNU sha1sum on a generated tree: nested folders, empty files, names with
newline, backslash, CR, tab, invalid UTF-8, a leading dash, the SHA-1
collision pairs, files of 0 B to 5 MiB.

 - sum -r TOP prints what `find TOP -type f | LC_ALL=C sort | sha1sum`
   prints (the promised order: per argument, byte order of full paths),
   for plain, --tag, -z and -b lines, on the cpu, opencl and auto
   backends, with streaming forced (--small-max 4K) and tight memory;
 - several arguments (dirs and files) keep their order; "TOP/" and "."
   name paths as find does;
 - the explicit file list prints exactly what sha1sum prints (all forms);
 - sha1sum -c accepts what sum writes (plain and --tag) and prints what
   it prints for its own file.

Usage: test_sum_tree.py PATH/TO/hashbatch [--part=opencl]
The main run checks the cpu and auto backends; --part=opencl (ctest's
cli_sum_tree_opencl) the opencl backend alone, a SKIP without a device.
"""
import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402
import sumtest_util as su  # noqa: E402

FORMS = [[], ["--tag"], ["-z"], ["-b"], ["--tag", "-z"]]


def check_tree(chk, exe, tmp, backends, extras=True):
    for backend in backends:
        for form in FORMS:
            what = "sum -r %s --backend %s" % (" ".join(form), backend)
            p = clitest.run([exe, "sum", "-r", "--backend", backend] + form +
                            ["tree"], cwd=tmp, timeout=120)
            chk.status(p, 0, what)
            chk.same_bytes(p.stdout, su.oracle_tree(["tree"], form, tmp),
                           what)
            chk.check(p.stderr == b"", what + ": stderr not empty",
                      clitest.show(p.stderr))
    if not extras:
        return
    for extra in (["--small-max", "4K"], ["--memory-max", "1M",
                                          "--io-threads", "1"],
                  ["--batch-bytes", "64K", "--io-threads", "7"]):
        what = "sum -r " + " ".join(extra)
        p = clitest.run([exe, "sum", "-r"] + extra + ["tree"], cwd=tmp,
                        timeout=120)
        chk.status(p, 0, what)
        chk.same_bytes(p.stdout, su.oracle_tree(["tree"], [], tmp), what)


def check_arguments(chk, exe, tmp):
    """Several arguments in order; trailing slash; '.'."""
    args = ["tree/a", "tree/sp ace", "tree/a-d", "tree/a/b/a.txt", "tree/a"]
    p = clitest.run([exe, "sum", "-r"] + args, cwd=tmp)
    want = b""
    for a in args:
        want += (su.oracle_tree([a], [], tmp) if os.path.isdir(
            os.path.join(tmp, a)) else su.sha1sum(["--", a], cwd=tmp)[0])
    chk.status(p, 0, "dirs and files mixed")
    chk.same_bytes(p.stdout, want, "dirs and files mixed, in order")
    p = clitest.run([exe, "sum", "-r", "tree/"], cwd=tmp)
    chk.same_bytes(p.stdout, su.oracle_tree(["tree/"], [], tmp),
                   "trailing slash")
    p = clitest.run([exe, "sum", "-r", "."], cwd=os.path.join(tmp, "tree"))
    chk.same_bytes(p.stdout, su.oracle_tree(["."], [],
                                            os.path.join(tmp, "tree")),
                   "sum -r .")


def check_file_list(chk, exe, tmp):
    files = su.find_files("tree", cwd=tmp)
    names = [f.decode("utf-8", "surrogateescape") for f in files]
    for form in FORMS:
        su.same_run(chk, exe, form + ["--"] + names, form + ["--"] + files,
                    "file list " + " ".join(form), tmp)


def check_sha1sum_reads_ours(chk, exe, tmp):
    for form in ([], ["--tag"]):
        what = "sha1sum -c of sum -r %s" % " ".join(form)
        ours = clitest.run([exe, "sum", "-r"] + form + ["tree"], cwd=tmp)
        theirs = su.sha1sum(form + ["--"] + su.find_files("tree", cwd=tmp),
                            cwd=tmp)[0]
        for data, label in ((ours.stdout, "ours"), (theirs, "theirs")):
            with open(os.path.join(tmp, "sums." + label), "wb") as f:
                f.write(data)
        a = clitest.run(["sha1sum", "-c", "sums.ours"], cwd=tmp)
        b = clitest.run(["sha1sum", "-c", "sums.theirs"], cwd=tmp)
        chk.status(a, 0, what)
        chk.same_bytes(a.stdout, b.stdout, what)
        chk.check(a.stdout.count(b": OK\n") >= 240, what + ": too few OKs")


def main():
    exe = clitest.binary()
    only = clitest.part()
    if only not in (None, "opencl"):
        sys.exit("unknown part %r" % only)
    if not clitest.have_sha1sum():
        clitest.skip("sha1sum not found (Debian: coreutils)")
    if only == "opencl" and not su.opencl_usable(exe):
        clitest.skip("no OpenCL device (`hashbatch devices --json` lists none): "
                     "the opencl backend is not checked")
    rng = su.new_rng()
    chk = clitest.Checker("test_sum_tree" + ("_opencl" if only else ""))
    tmp = tempfile.mkdtemp(prefix="hb-cli-tree-")
    try:
        total = su.make_tree(os.path.join(tmp, "tree"), rng)
        print("tree: %.1f MiB" % (total / su.MIB))
        if only == "opencl":
            check_tree(chk, exe, tmp, ["opencl"], extras=False)
        else:
            check_tree(chk, exe, tmp, ["cpu", "auto"])
            check_arguments(chk, exe, tmp)
            check_file_list(chk, exe, tmp)
            check_sha1sum_reads_ours(chk, exe, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    chk.finish()


if __name__ == "__main__":
    main()
