"""test_dedup_groups.py - `hashbatch dedup` finds the same duplicate
groups as the real jdupes (-r -H: hard links count, as ours list them)
and as an independent oracle that groups files by their bytes, on a
generated tree with nested folders, copies, near-duplicates, hard links,
symlinks, empty files, names with newlines and invalid UTF-8, and the
SHA-1 collision pairs (warned about, never grouped). Every output layout
(text, --fdupes, -z, -S, -m, --json, --csv) says the same thing; --json
and --csv digests agree with hashlib; filters (--min-size, --empty, -L)
match the oracle; two runs print the same bytes; no file is changed.

Usage: test_dedup_groups.py PATH/TO/hashbatch
"""
import hashlib
import os
import re
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402
import dedupcheck as dc  # noqa: E402

TIMEOUT = 60


CHK = None  # the Checker, set by main()


def dedup(exe, args, cwd=None):
    proc = clitest.run([exe, "dedup"] + args, cwd=cwd, timeout=TIMEOUT)
    dc.no_sanitizer_report(CHK, proc, "dedup %s" % " ".join(map(str, args)))
    return proc


def describe(groups):
    return "\n".join("  " + " | ".join(sorted(p.decode("utf-8", "backslashreplace")
                                             for p in g))
                     for g in sorted(groups, key=sorted))


def same_groups(chk, got, want, what):
    chk.check(got == want, what,
              "only ours:\n%s\nonly expected:\n%s"
              % (describe(got - want), describe(want - got)))


def check_against_oracles(chk, exe, root, backend):
    what = "-z --backend %s" % backend
    proc = dedup(exe, ["-z", "-q", "--backend", backend, root])
    chk.status(proc, 0, what)
    got = dc.parse_zero(proc.stdout)
    same_groups(chk, got, dc.oracle(root), what + " vs the byte oracle")
    if dc.have_jdupes():
        jd = clitest.run(["jdupes", "-q", "-r", "-H", "-0", root], timeout=TIMEOUT)
        chk.status(jd, 0, "jdupes")
        same_groups(chk, got, dc.parse_zero(jd.stdout), what + " vs jdupes -r -H -0")
    return proc


def check_collisions(chk, exe, root, made, proc):
    """The collision pairs: warned about with both names and the digest,
    never grouped; the real copy of shattered-1 is grouped."""
    chk.check(len(made["collisions"]) == 4, "the tree holds both collision pairs",
              repr(made["collisions"]))
    groups = dc.parse_zero(proc.stdout)
    col = {os.path.basename(p): p for p in made["collisions"]}
    pairs = [(col[b"shattered-1.pdf"], col[b"shattered-2.pdf"]),
             (col[b"sha-mbles-1.bin"], col[b"sha-mbles-2.bin"])]
    err = proc.stderr.decode("utf-8", "replace")
    for a, b in pairs:
        chk.check(dc.sha1_of(a) == dc.sha1_of(b), "the test pair shares a SHA-1: %s" % a)
        with open(a, "rb") as fa, open(b, "rb") as fb:
            chk.check(fa.read() != fb.read(), "the test pair differs: %s" % a)
        chk.check(not any(a in g and b in g for g in groups),
                  "collision pair %s grouped" % os.path.basename(a))
        digest = dc.sha1_of(a)
        lines = [l for l in err.splitlines() if "SHA-1 collision" in l and digest in l]
        chk.check(len(lines) == 1 and os.path.basename(b).decode() in lines[0],
                  "one collision warning naming %s with digest %s"
                  % (os.path.basename(b).decode(), digest), err)
    again = os.path.join(os.path.dirname(pairs[0][0]), b"again", b"shattered-1.pdf")
    chk.check(frozenset([pairs[0][0], again]) in groups,
              "shattered-1.pdf and its copy are grouped")


def check_text_layouts(chk, exe, root, zero_out):
    """Default text, --fdupes and -S agree with -z."""
    zgroups = dc.parse_zero(zero_out)
    raw = dedup(exe, ["--fdupes", "-q", "--backend", "cpu", root])
    chk.same_bytes(raw.stdout, zero_out.replace(b"\0", b"\n"),
                   "--fdupes is -z with newlines")
    text = dedup(exe, ["-q", "--backend", "cpu", root])
    chk.status(text, 0, "text")
    groups = set()
    for g in dc.parse_lines(text.stdout):
        groups.add(frozenset(dc.unquote_shell(p) if p[:1] in (b"'", b'"') or b"$'" in p
                             else p for p in g))
    # a name with a newline is one quoted line; nothing else is quoted
    newline = [l for l in text.stdout.split(b"\n") if b"new" in l and b"line" in l]
    chk.check(len(newline) == 1 and b"$'\\n'" in newline[0],
              "the name with a newline is one shell-quoted line", repr(newline))
    tab = [l for l in text.stdout.split(b"\n") if b"tab" in l]
    chk.check(len(tab) == 1 and b"$'\\t'" in tab[0], "the name with a tab is quoted",
              repr(tab))
    plain = [l for l in text.stdout.split(b"\n") if l and b"new" not in l and b"tab" not in l]
    chk.check(all(l[:1] not in (b"'", b'"') and b"$'" not in l for l in plain),
              "names without control characters are written raw",
              repr([l for l in plain if b"'" in l]))
    same_groups(chk, groups, zgroups, "text layout (unquoted) vs -z")
    sized = dedup(exe, ["-S", "-z", "-q", "--backend", "cpu", root])
    sizes_ok = True
    for block in sized.stdout.split(b"\0\0"):
        parts = [p for p in block.split(b"\0") if p]
        if not parts:
            continue
        m = re.match(rb"^(\d+) bytes? each:$", parts[0])
        sizes_ok &= bool(m) and all(os.path.getsize(p) == int(m.group(1)) for p in parts[1:])
    chk.check(sizes_ok, "-S: each group starts with its files' size",
              clitest.show(sized.stdout))


def check_json_csv(chk, exe, root, zero_out):
    zgroups = dc.parse_zero(zero_out)
    proc = dedup(exe, ["--json", "-q", "--backend", "cpu", root])
    chk.status(proc, 0, "--json")
    try:
        doc, groups = dc.parse_json(proc.stdout)
    except ValueError as e:
        chk.fail("--json is not valid JSON: %s" % e, clitest.show(proc.stdout))
        return
    same_groups(chk, groups, zgroups, "--json vs -z")
    ok_sha = ok_reclaim = True
    dup = reclaim = hl_only = 0
    for g in doc["groups"]:
        paths = [bytes.fromhex(f["path_hex"]) if "path_hex" in f else f["path"].encode()
                 for f in g["files"]]
        inodes = {(f["device"], f["inode"]) for f in g["files"]}
        real = {(os.stat(p).st_dev, os.stat(p).st_ino) for p in paths}
        ok_reclaim &= inodes == real and g["distinct_files"] == len(real)
        ok_reclaim &= g["reclaimable_bytes"] == (len(real) - 1) * g["size"]
        ok_reclaim &= g["hard_links_only"] == (len(real) == 1)
        if g["sha1"] is not None:
            ok_sha &= all(dc.sha1_of(p) == g["sha1"] for p in paths)
        dup += len(paths) - 1
        reclaim += g["reclaimable_bytes"]
        hl_only += g["hard_links_only"]
    chk.check(ok_sha, "--json: every sha1 is hashlib's SHA-1 of each file")
    chk.check(ok_reclaim, "--json: inodes, distinct files and reclaimable bytes are right")
    chk.check(hl_only >= 1, "--json: the file with only a hard-link twin is a "
              "hard_links_only group")
    s = doc["summary"]
    chk.check(s["groups"] == len(doc["groups"]) and s["duplicate_files"] == dup and
              s["reclaimable_bytes"] == reclaim and s["errors"] == 0,
              "--json summary adds up", repr(s))
    bad = [f for g in doc["groups"] for f in g["files"] if "path_hex" in f]
    chk.check(len(bad) == 1 and b"\xff" in bytes.fromhex(bad[0]["path_hex"]),
              "--json: the invalid UTF-8 name carries path_hex")
    chk.check(len(doc["collisions"]) == 2, "--json lists both collisions",
              repr(doc["collisions"]))
    proc = dedup(exe, ["--csv", "-q", "--backend", "cpu", root])
    chk.status(proc, 0, "--csv")
    header, rows, cgroups = dc.parse_csv(proc.stdout)
    chk.check(header == ["group", "size", "sha1", "device", "inode", "path"], "--csv header",
              repr(header))
    same_groups(chk, cgroups, zgroups, "--csv vs -z")
    chk.check(all(r[2] == "" or dc.sha1_of(r[5].encode("latin-1")) == r[2] for r in rows),
              "--csv: every sha1 is hashlib's")
    summ = dedup(exe, ["-m", "--backend", "cpu", root])
    m = re.match(rb"^(\d+) duplicate files? in (\d+) groups?", summ.stdout)
    chk.check(m is not None and int(m.group(1)) == dup and int(m.group(2)) == len(zgroups),
              "-m prints the totals", clitest.show(summ.stdout))


def check_filters(chk, exe, root):
    for args, want in [(["--min-size", "5000"], dc.oracle(root, min_size=5000)),
                       (["-G", "100K"], dc.oracle(root, min_size=100 << 10)),
                       (["--empty"], dc.oracle(root, empty=True)),
                       (["-L"], dc.oracle(root, follow=True))]:
        proc = dedup(exe, args + ["-z", "-q", "--backend", "cpu", root])
        chk.status(proc, 0, " ".join(args))
        same_groups(chk, dc.parse_zero(proc.stdout), want, " ".join(args) + " vs the oracle")


def check_arguments(chk, exe, root):
    """Files and overlapping folders as arguments: a path reached twice is
    listed once; the order of the arguments gives the order of output."""
    a = os.path.join(root, b"a")
    proc = dedup(exe, ["-z", "-q", "--backend", "cpu", a, os.path.join(a, b"b"), a])
    chk.status(proc, 0, "overlapping arguments")
    same_groups(chk, dc.parse_zero(proc.stdout), dc.oracle(a), "overlapping arguments")
    one = dedup(exe, ["-q", "--backend", "cpu", root])
    two = dedup(exe, ["-q", "--backend", "cpu", root])
    chk.same_bytes(one.stdout, two.stdout, "two runs print the same bytes")


def main():
    exe = clitest.binary()
    global CHK
    chk = CHK = clitest.Checker("cli_dedup_groups")
    if not dc.have_jdupes():
        print("NOTE: jdupes is not installed: compared with the byte oracle only")
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(os.fsencode(tmp), b"tree")
        made = dc.make_tree(root)
        before = dc.snapshot(root)
        proc = None
        for backend in ("cpu", "auto"):
            proc = check_against_oracles(chk, exe, root, backend)
        cpu = dedup(exe, ["-z", "-q", "--backend", "cpu", root])
        chk.same_bytes(proc.stdout, cpu.stdout, "auto and cpu print the same groups")
        # sets bigger than a batch are compared and hashed streaming
        small = dedup(exe, ["-z", "-q", "--batch-bytes", "64K", "--backend", "cpu", root])
        chk.same_bytes(small.stdout, cpu.stdout, "--batch-bytes 64K (streamed sets): same groups")
        check_collisions(chk, exe, root, made, small)
        check_collisions(chk, exe, root, made, proc)
        check_text_layouts(chk, exe, root, cpu.stdout)
        check_json_csv(chk, exe, root, cpu.stdout)
        check_filters(chk, exe, root)
        check_arguments(chk, exe, root)
        chk.check(dc.snapshot(root) == before,
                  "no file changed (sizes, mtimes, inodes, SHA-1, links)")
    chk.finish()


if __name__ == "__main__":
    main()
