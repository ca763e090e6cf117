"""test_bench.py - `hashbatch bench`: the --quick plan runs and its JSON
has every backend (cpu, each OpenCL device, and the default route:
"default", backend auto with the default device, measured with or
without OpenCL; `--backend all` is its former name), every size and batch
asked, medians inside their spreads, every run checked against OpenSSL,
and a crossover per OpenCL backend; the cpu backend is measured once per
CPU implementation asked for (--cpu-impl; by default every one this CPU
runs, as `hashbatch devices --json` lists them, or with --quick the
default and sha-ni), each row named for its implementation ("cpu" the
default, "cpu NAME" the others, "cpu_impl" in the JSON), its engine
describing that implementation, its digests checked (a wrong digest in
any of them stops the run); unknown or unrunnable names are usage
errors; the text report has its tables;
--plot writes a PNG; with no OpenCL platform (OCL_ICD_VENDORS pointing at
an empty directory) it says so and still measures cpu; a wrong digest
(the HASHBATCH_BENCH_CORRUPT testing hook) stops it with exit 1 and no
report; without the cpu backend the crossover is "not measured"; usage
errors exit 2 before measuring. Nothing here asserts a speed:
performance is measured by bench/, never by tests.
Parts, each its own ctest test: --part=plot (cli_bench_plot) the text
report again with --plot, a SKIP without gnuplot; --part=peer_isal
(cli_bench_peer_isal) a real isa-l_crypto install given in
HASHBATCH_PEER_ISAL, a SKIP without one (the main run checks the
--peer-isal errors).

Usage: test_bench.py PATH/TO/hashbatch [--part=plot|--part=peer_isal]
"""
import json
import os
import re
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SPREAD_KEYS = ("min", "q1", "median", "q3", "max")
# A small plan for the checks that are not about --quick itself.
SMALL = ["--sizes", "64,4K", "--batches", "1,16,256", "--runs", "3",
         "--min-time", "0.005"]
# The lanes hashbatch.h documents for each CPU implementation.
LANES = {"avx512": 16, "avx2": 8, "portable": 4, "sha-ni": 0}


class CpuImpls:
    """The CPU implementations as `hashbatch devices --json` lists them
    (widest first), and the rows of the cpu backend bench should make."""

    def __init__(self, cpu):
        self.impls = cpu.get("cpu_impls") or []
        self.default = cpu.get("cpu_impl_default")
        self.runnable = [i["name"] for i in self.impls if i["runs"]]
        self.unrunnable = [i["name"] for i in self.impls if not i["runs"]]

    def rows(self, names=None):
        """Backend names and their implementations for --cpu-impl names
        (None: all): "cpu" first (the default), then the others."""
        pick = self.runnable if names is None else \
            [n for n in self.runnable if n in names]
        return [("cpu", self.default)] + [("cpu " + n, n) for n in pick
                                          if n != self.default]

    def quick_rows(self):
        return self.rows(["sha-ni"])


def parse_json(chk, proc, what):
    try:
        return json.loads(proc.stdout.decode("utf-8"))
    except ValueError as e:
        chk.fail(what + ": not valid JSON: %s" % e, clitest.show(proc.stdout))
        return None


def devices_doc(exe, env=None):
    proc = clitest.run([exe, "devices", "--json"], env=env)
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout.decode("utf-8"))


def opencl_devices(exe, env=None):
    doc = devices_doc(exe, env)
    return None if doc is None else doc["opencl_devices"]


def check_spread(chk, res, key, what):
    s = res.get(key)
    if not chk.check(isinstance(s, dict) and
                     all(isinstance(s.get(k), (int, float)) for k in
                         SPREAD_KEYS), "%s: %s has no full spread" % (what, key),
                     repr(s)):
        return
    values = [s[k] for k in SPREAD_KEYS]
    chk.check(values == sorted(values) and values[0] > 0,
              "%s: %s not min <= q1 <= median <= q3 <= max, all > 0"
              % (what, key), repr(s))


def check_result(chk, res, runs, what):
    what = "%s: %s %d B x %d" % (what, res.get("backend"), res.get("size", -1),
                                 res.get("count", -1))
    chk.check(res.get("runs") == runs and res.get("checked_runs") == runs,
              what + ": not every run was checked against OpenSSL", repr(res))
    chk.check(isinstance(res.get("calls"), int) and res["calls"] >= runs,
              what + ": fewer batches than runs", repr(res))
    check_spread(chk, res, "gb_per_s", what)
    check_spread(chk, res, "messages_per_s", what)
    g, m = res.get("gb_per_s", {}), res.get("messages_per_s", {})
    if isinstance(g.get("median"), (int, float)) and \
            isinstance(m.get("median"), (int, float)) and m["median"] > 0:
        ratio = g["median"] * 1e9 / (m["median"] * res["size"])
        chk.check(abs(ratio - 1) < 1e-3,
                  what + ": GB/s and messages/s disagree", repr(res))


def check_cpu_rows(chk, doc, cpu_rows, what):
    """The cpu backends are cpu_rows [(name, implementation)], each engine
    describing its implementation, and every result names it too."""
    cpu = [(b.get("name"), b.get("cpu_impl")) for b in doc["backends"]
           if b.get("kind") == "cpu"]
    chk.check(cpu == cpu_rows, "%s: cpu backends %r, expected %r"
              % (what, cpu, cpu_rows))
    impl_of = {}
    for b in doc["backends"]:
        impl, name = b.get("cpu_impl"), b.get("name")
        impl_of[name] = impl
        if b.get("kind") == "opencl":
            chk.check(impl is None, what + ": OpenCL backend with a cpu_impl",
                      repr(b))
            continue
        chk.check(b.get("cpu_impl_default") is (name in ("cpu", "default")),
                  what + ": cpu_impl_default wrong", repr(b))
        if b.get("kind") == "default":
            chk.check(impl == cpu_rows[0][1] and b.get("device") is None,
                      what + ": 'default' does not use the default CPU "
                      "implementation and device spec", repr(b))
        engine = b.get("engine") or ""
        lanes = LANES.get(impl)
        if lanes:
            chk.check("%s multi-buffer (%d lanes)" % (impl, lanes) in engine,
                      "%s: %s's engine does not describe %s with %d lanes"
                      % (what, name, impl, lanes), repr(b))
        elif b.get("kind") == "cpu":
            chk.check(engine.startswith("cpu: OpenSSL,"),
                      "%s: %s's engine is not OpenSSL alone" % (what, name),
                      repr(b))
    for r in doc["sizes"] + doc["batches"] + doc["openssl_single_thread"]:
        want = impl_of.get(r.get("backend"))  # openssl: None
        chk.check(r.get("cpu_impl", "missing") == want,
                  "%s: result's cpu_impl %r, its backend's %r"
                  % (what, r.get("cpu_impl", "missing"), want), repr(r))


def check_doc(chk, doc, devices, sizes, batches, runs, what, cpu_rows):
    """The JSON of a run that asked for every backend; cpu_rows: the cpu
    backends expected, [(name, implementation)]."""
    for key in ("machine", "settings", "backends", "sizes",
                "openssl_single_thread", "batches", "crossover"):
        if not chk.check(key in doc, "%s: no %r key" % (what, key)):
            return
    mach = doc["machine"]
    chk.check(isinstance(mach.get("cores"), int) and mach["cores"] > 0 and
              isinstance(mach.get("sha_ni"), bool) and
              isinstance(mach.get("cpu_model"), str) and
              "OpenSSL" in mach.get("openssl", ""),
              what + ": machine fields", repr(mach))
    chk.check(len(mach.get("opencl_devices", [])) == len(devices),
              what + ": machine lists other OpenCL devices than `devices`",
              repr(mach.get("opencl_devices")))
    chk.check(doc["settings"].get("sizes") == sizes and
              doc["settings"].get("batches") == batches,
              what + ": settings do not echo the plan", repr(doc["settings"]))
    want = [n for n, _ in cpu_rows] + \
        ["opencl " + d["id"] for d in devices if d["available"]]
    want.append("default")  # the default route, with or without OpenCL
    names = [b.get("name") for b in doc["backends"]]
    chk.check(names == want, what + ": backends %r, expected %r"
              % (names, want))
    check_cpu_rows(chk, doc, cpu_rows, what)
    chk.check(doc.get("opencl") is bool(devices),
              what + ": 'opencl' flag wrong", repr(doc.get("opencl")))
    for b in doc["backends"]:
        chk.check(isinstance(b.get("engine"), str) and b["engine"],
                  what + ": backend without engine description", repr(b))

    for res in doc["sizes"] + doc["openssl_single_thread"] + doc["batches"]:
        check_result(chk, res, runs, what)
    got = {(r["backend"], r["size"]) for r in doc["sizes"]}
    for name in names:
        for size in sizes:
            chk.check((name, size) in got, "%s: size sweep lacks %s at %d B"
                      % (what, name, size))
    chk.check({r["size"] for r in doc["openssl_single_thread"]} == set(sizes),
              what + ": OpenSSL reference lacks a size",
              repr(doc["openssl_single_thread"]))
    got = {(r["backend"], r["size"], r["count"]) for r in doc["batches"]}
    for name in names:
        for size in (64, 4096):
            for n in batches:
                chk.check((name, size, n) in got,
                          "%s: batch sweep lacks %s, %d x %d B"
                          % (what, name, n, size))
    for r in doc["sizes"] + doc["batches"]:
        share = r.get("device_share")
        if r["backend"] == "cpu" or r["backend"].startswith("cpu "):
            chk.check(share is None, what + ": cpu has a device share",
                      repr(r))
        elif r["backend"] == "default":
            chk.check(isinstance(share, (int, float)) and 0 <= share <= 1 and
                      (devices or share == 0),
                      what + ": the default route's device share is not a "
                      "fraction (0 without OpenCL)", repr(r))
        elif r["backend"].startswith("opencl"):
            chk.check(isinstance(share, (int, float)) and share > 0.99 and
                      r["fallbacks"] == 0,
                      what + ": the OpenCL backend did not hash on its device",
                      repr(r))

    cross = {(c.get("backend"), c.get("size")): c for c in doc["crossover"]}
    others = [n for n in names if n != "cpu" and not n.startswith("cpu ")]
    for name in others:
        for size in (64, 4096):
            c = cross.get((name, size))
            if not chk.check(c is not None, "%s: no crossover for %s at %d B"
                             % (what, name, size), repr(doc["crossover"])):
                continue
            chk.check((c["batch"] is None and c["text"] == "never") or
                      (c["batch"] in batches and c["text"] == str(c["batch"])),
                      what + ": bad crossover entry", repr(c))
    if not others:
        chk.check(doc["crossover"] == [], what + ": crossover without OpenCL")


def check_quick(chk, exe, devices, impls):
    proc = clitest.run([exe, "bench", "--quick", "--json"], timeout=300)
    if not chk.status(proc, 0, "bench --quick --json"):
        return
    doc = parse_json(chk, proc, "bench --quick --json")
    if doc is not None:
        check_doc(chk, doc, devices, [64, 4096, 1 << 20], [1, 16, 256, 4096],
                  5, "--quick --json", impls.quick_rows())


def check_cpu_impl_option(chk, exe, impls):
    """--cpu-impl all, default and a list: the cpu rows asked for, each
    measured at every size and batch with every run checked; the text
    report names each implementation."""
    plan = ["--backend", "cpu", "--quick", "--sizes", "64,4K", "--batches",
            "1,16", "--runs", "2", "--min-time", "0.002"]
    two = [n for n in ("sha-ni", "portable") if n in impls.runnable]
    for arg, rows in (("all", impls.rows()), ("default", impls.rows([])),
                      (",".join(two), impls.rows(two))):
        what = "bench --cpu-impl %s --quick" % arg
        proc = clitest.run([exe, "bench", "--json", "--cpu-impl", arg] + plan,
                           timeout=300)
        if not chk.status(proc, 0, what):
            continue
        doc = parse_json(chk, proc, what)
        if doc is None:
            continue
        check_cpu_rows(chk, doc, rows, what)
        got = {(r["backend"], r["size"], r["count"]) for r in doc["sizes"]}
        got |= {(r["backend"], r["size"], r["count"]) for r in doc["batches"]}
        for name, _ in rows:
            for size, count in ((64, 16384), (4096, 1024), (64, 1), (64, 16),
                                (4096, 1), (4096, 16)):
                chk.check((name, size, count) in got, "%s: no row for %s, "
                          "%d x %d B" % (what, name, count, size))
        for r in doc["sizes"] + doc["batches"]:
            check_result(chk, r, 2, what)
    if len(impls.runnable) < 2:
        chk.fail("fewer than two CPU implementations run here: %r"
                 % impls.runnable)
    proc = clitest.run([exe, "bench", "--cpu-impl", "all"] + plan, timeout=300)
    if chk.status(proc, 0, "bench --cpu-impl all (text)"):
        out = proc.stdout.decode("utf-8", "replace")
        chk.check(re.search(r"^  cpu \(%s\) +cpu: " % re.escape(impls.default),
                            out, re.M) is not None,
                  "bench (text): the cpu row does not name the default "
                  "implementation", out)
        for name, _ in impls.rows()[1:]:
            chk.check(re.search(r"^ +(\S+ +\d+ +)?%s +\d" % re.escape(name),
                                out, re.M) is not None,
                      "bench (text): no table row for %s" % name, out)


def check_text_and_plot(chk, exe, devices, impls, tmp, plot=False):
    """The text report and --json-file; with plot (the caller has made sure
    gnuplot is there), --plot as well."""
    png = os.path.join(tmp, "bench plot.png")
    jfile = os.path.join(tmp, "bench.json")
    if not plot:
        args = [exe, "bench", "--json-file", jfile] + SMALL
    else:
        args = [exe, "bench", "--json-file", jfile, "--plot", png] + SMALL
    proc = clitest.run(args, timeout=300)
    if not chk.status(proc, 0, "bench (text)"):
        return
    out = proc.stdout.decode("utf-8", "replace")
    for text in ("Throughput by message size:",
                 "Throughput by batch size, 64 B messages:",
                 "Throughput by batch size, 4 KiB messages:",
                 "openssl 1 thread", "SHA-NI", "every run's digests matched"):
        chk.check(text in out, "bench (text): no %r" % text, out)
    usable = [d for d in devices if d["available"]]
    if usable:
        chk.check("Crossover:" in out and "opencl " + usable[0]["id"] in out,
                  "bench (text): no crossover line for the device", out)
    try:
        with open(jfile, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
        check_doc(chk, doc, devices, [64, 4096], [1, 16, 256], 3, "--json-file",
                  impls.rows())
    except (OSError, ValueError) as e:
        chk.fail("--json-file: %s not written or not JSON: %s" % (jfile, e))
    if plot:
        chk.check(os.path.isfile(png), "--plot: %s not written" % png)
        if os.path.isfile(png):
            with open(png, "rb") as f:
                chk.check(f.read(8) == PNG_SIGNATURE,
                          "--plot: not a PNG file")
        chk.check(("plot: " + png) in out, "--plot: report does not name it",
                  out)


def check_no_opencl(chk, exe, impls, tmp):
    empty = os.path.join(tmp, "no-vendors")
    os.mkdir(empty)
    env = clitest.clean_env(OCL_ICD_VENDORS=empty)
    if opencl_devices(exe, env) != []:
        chk.fail("OCL_ICD_VENDORS=<empty dir> still shows OpenCL devices")
        return
    proc = clitest.run([exe, "bench", "--json"] + SMALL, env=env)
    if chk.status(proc, 0, "bench without OpenCL"):
        chk.check(b"no OpenCL platform or device found" in proc.stderr,
                  "bench without OpenCL: stderr does not say so",
                  clitest.show(proc.stderr))
        doc = parse_json(chk, proc, "bench without OpenCL")
        if doc is not None:
            chk.check("no OpenCL" in (doc.get("note") or ""),
                      "bench without OpenCL: JSON note does not say so",
                      repr(doc.get("note")))
            check_doc(chk, doc, [], [64, 4096], [1, 16, 256], 3,
                      "without OpenCL", impls.rows())
    proc = clitest.run([exe, "bench", "--quick"], env=env)
    if chk.status(proc, 0, "bench --quick (text) without OpenCL"):
        chk.check(b"OpenCL devices: none" in proc.stdout,
                  "text report without OpenCL does not say so",
                  clitest.show(proc.stdout))
    proc = clitest.run([exe, "bench", "--backend", "opencl"] + SMALL,
                       env=env)
    chk.status(proc, 1, "bench --backend opencl without OpenCL")
    chk.check(b"no OpenCL platform or device found" in proc.stderr and
              proc.stdout == b"", "bench --backend opencl without OpenCL: "
              "no clear error", clitest.show(proc.stderr))


def check_mismatch(chk, exe, devices, impls):
    devices = [d for d in devices if d["available"]]
    names = ["openssl"] + [n for n, _ in impls.rows()] + \
        (["opencl " + devices[0]["id"]] if devices else []) + ["default"]
    for name in names:
        env = clitest.clean_env(HASHBATCH_BENCH_CORRUPT=name)
        proc = clitest.run([exe, "bench", "--json"] + SMALL, env=env)
        what = "wrong digest from %s" % name
        chk.status(proc, 1, what)
        chk.check(b"DIGEST MISMATCH" in proc.stderr and
                  ("backend %s," % name).encode() in proc.stderr,
                  what + ": no loud error naming the backend",
                  clitest.show(proc.stderr))
        chk.check(proc.stdout == b"", what + ": a report was printed anyway",
                  clitest.show(proc.stdout))


def check_without_cpu(chk, exe, devices):
    """--backend opencl,default (and opencl,all: the default row's former
    name): no cpu backend, so no crossover can be told."""
    if not [d for d in devices if d["available"]]:
        return
    for arg in ("opencl,default", "opencl,all"):
        what = "bench --backend " + arg
        proc = clitest.run([exe, "bench", "--json", "--backend", arg,
                            "--sizes", "none"] + SMALL[2:])
        if not chk.status(proc, 0, what):
            continue
        doc = parse_json(chk, proc, what)
        if doc is None:
            continue
        names = [b["name"] for b in doc["backends"]]
        chk.check("cpu" not in names and names.count("default") == 1 and
                  "all" not in names, "%s: backends %r" % (what, names))
        chk.check(doc["sizes"] == [] and doc["openssl_single_thread"] == [],
                  "--sizes none: the size sweep ran anyway")
        chk.check(doc["crossover"] and all(
            c["batch"] is None and c["text"] == "not measured"
            for c in doc["crossover"]),
            what + ": crossover without cpu not 'not measured'",
            repr(doc["crossover"]))


def check_usage(chk, exe, impls, tmp):
    cases = [
        (["--cpu-impl", "bogus"], b"invalid CPU implementation 'bogus'"),
        (["--cpu-impl", "sha-ni,"], b"invalid CPU implementation ''"),
        (["--cpu-impl", "AVX2"], b"'AVX2'"),
        (["--backend", "opencl", "--cpu-impl", "sha-ni"],
         b"'--backend' leaves out cpu"),
        (["--sizes", "64,x"], b"'x' is not a number"),
        (["--sizes", "0"], b"out of range"),
        (["--sizes", "2G"], b"out of range"),
        (["--sizes", ""], b"is not a number"),
        (["--batches", "1,,4"], b"is not a number"),
        (["--batches", "-1"], b"is not a number"),
        (["--backend", "gpu"], b"invalid backend 'gpu'"),
        (["--backend", "cpu,"], b"invalid backend ''"),
        (["--runs", "0"], b"'--runs'"),
        (["--runs", "x"], b"'--runs'"),
        (["--min-time", "0"], b"'--min-time'"),
        (["--verify", "maybe"], b"'maybe'"),
        (["--device", ""], b"empty argument"),
        (["--sizes", "none", "--batches", "none"], b"nothing to measure"),
        (["--plot", os.path.join(tmp, "no-such-dir", "p.png")],
         b"No such file or directory"),
        (["--plot", tmp], b"Is a directory"),
        (["--json-file", os.path.join(tmp, "no-such-dir", "b.json")],
         b"No such file or directory"),
        (["--frobnicate"], b"unrecognized option"),
        (["extra"], b"extra operand"),
    ]
    for name in impls.unrunnable:
        cases.append((["--cpu-impl", name],
                      ("'%s'" % name).encode() + b" in '--cpu-impl " +
                      name.encode() + b"' does not run on this CPU"))
    for args, why in cases:
        proc = clitest.run([exe, "bench"] + args, timeout=30)
        what = "bench " + " ".join(args)
        chk.status(proc, 2, what)
        chk.check(why in proc.stderr, what + ": error does not say %r" % why,
                  clitest.show(proc.stderr))
        chk.check(proc.stdout == b"", what + ": printed a report")
    env = clitest.clean_env(HASHBATCH_VERIFY="bogus")
    proc = clitest.run([exe, "bench"] + SMALL, env=env, timeout=30)
    chk.status(proc, 2, "HASHBATCH_VERIFY=bogus")
    chk.check(b"HASHBATCH_VERIFY" in proc.stderr,
              "HASHBATCH_VERIFY=bogus: not named", clitest.show(proc.stderr))
    # HASHBATCH_BACKEND is not bench's business: --backend chooses.
    env = clitest.clean_env(HASHBATCH_BACKEND="bogus")
    proc = clitest.run([exe, "bench", "--backend", "cpu"] + SMALL, env=env)
    chk.status(proc, 0, "HASHBATCH_BACKEND=bogus is ignored")
    # no gnuplot on PATH: a clear error before measuring, no file left.
    png = os.path.join(tmp, "never.png")
    empty_path = os.path.join(tmp, "empty-bin")
    os.mkdir(empty_path)
    env = clitest.clean_env(PATH=empty_path)
    proc = clitest.run([exe, "bench", "--plot", png] + SMALL, env=env)
    chk.status(proc, 1, "--plot without gnuplot")
    chk.check(b"gnuplot" in proc.stderr and proc.stdout == b"",
              "--plot without gnuplot: no clear error",
              clitest.show(proc.stderr))
    chk.check(not os.path.exists(png), "--plot without gnuplot left a file")
    proc = clitest.run([exe, "bench", "--help"])
    chk.status(proc, 0, "bench --help")
    chk.check(b"--quick" in proc.stdout and b"--plot" in proc.stdout and
              b"--cpu-impl LIST" in proc.stdout and
              b"--peer-isal DIR" in proc.stdout and
              b"HASHBATCH_PEER_ISAL" in proc.stdout and
              b"XDG_CACHE_HOME" in proc.stdout,
              "bench --help: options missing", clitest.show(proc.stdout))
    for name in LANES:
        chk.check(name.encode() in proc.stdout,
                  "bench --help: CPU implementation %s not named" % name)


def peer_layout(root, headers=(), libs=()):
    """A directory laid out like an isa-l_crypto install prefix with the
    given empty files (nothing in it is isa-l_crypto: bench must reject
    or fail on it before anything runs)."""
    for rel in list(headers) + list(libs):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "wb").close()
    os.makedirs(root, exist_ok=True)
    return root


PEER_HEADERS = ("include/isa-l_crypto.h", "include/isa-l_crypto/sha1_mb.h")
PEER_LIB = ("lib/libisal_crypto.a",)
# The smallest plan: the peer's checks come before any measurement.
TINY = ["--backend", "cpu", "--cpu-impl", "default", "--sizes", "64",
        "--batches", "none", "--runs", "1", "--min-time", "0.001"]


def peer_builds(cache):
    """The peer's builds (and any temporary directory of one) that bench
    left in its cache directory (hashbatch/ there; pocl and the library
    may keep their own caches beside them)."""
    d = os.path.join(cache, "hashbatch")
    return sorted(n for n in os.listdir(d) if n.startswith("isal_peer")) \
        if os.path.isdir(d) else []


def check_peer_usage(chk, exe, tmp):
    """--peer-isal DIR and HASHBATCH_PEER_ISAL=DIR: a DIR that is no
    isa-l_crypto install exits 2 naming the option (or the variable), the
    path and what is missing, before measuring or compiling anything."""
    cache = os.path.join(tmp, "peer-cache")
    missing = os.path.join(tmp, "no-such-isal")
    a_file = os.path.join(tmp, "isal-file")
    open(a_file, "wb").close()
    empty = peer_layout(os.path.join(tmp, "isal-empty"))
    one_header = peer_layout(os.path.join(tmp, "isal-one-header"),
                             PEER_HEADERS[:1])
    no_lib = peer_layout(os.path.join(tmp, "isal-no-lib"), PEER_HEADERS)
    no_dir = "No such file or directory"
    cases = [
        (["--peer-isal", missing], None,
         ["--peer-isal '%s'" % missing, no_dir]),
        (["--peer-isal", a_file], None,
         ["--peer-isal '%s'" % a_file, "is not a directory"]),
        (["--peer-isal", ""], None, ["empty argument for '--peer-isal'"]),
        (["--peer-isal", empty], None,
         ["--peer-isal '%s'" % empty, "has no include/isa-l_crypto.h"]),
        (["--peer-isal", one_header], None,
         ["'%s'" % one_header, "has no include/isa-l_crypto/sha1_mb.h"]),
        (["--peer-isal", no_lib], None,
         ["'%s'" % no_lib, "has no lib/libisal_crypto.a or "
          "lib/libisal_crypto.so"]),
        ([], missing, ["HASHBATCH_PEER_ISAL '%s'" % missing, no_dir]),
        ([], a_file, ["HASHBATCH_PEER_ISAL '%s'" % a_file,
                      "is not a directory"]),
        ([], empty, ["HASHBATCH_PEER_ISAL '%s'" % empty,
                     "has no include/isa-l_crypto.h"]),
        ([], no_lib, ["HASHBATCH_PEER_ISAL '%s'" % no_lib,
                      "lib/libisal_crypto.a"]),
        # the option wins over the variable
        (["--peer-isal", missing], empty, ["--peer-isal '%s'" % missing]),
    ]
    for args, var, wants in cases:
        env = clitest.clean_env(XDG_CACHE_HOME=cache)
        if var is not None:
            env["HASHBATCH_PEER_ISAL"] = var
        what = "bench %s%s" % ("HASHBATCH_PEER_ISAL=%s " % var if var else "",
                               " ".join(args))
        proc = clitest.run([exe, "bench"] + args + TINY, env=env, timeout=60)
        chk.status(proc, 2, what)
        err = proc.stderr.decode("utf-8", "replace")
        for want in wants:
            chk.check(want in err, "%s: error does not say %r" % (what, want),
                      err)
        chk.check(proc.stdout == b"", what + ": printed a report",
                  clitest.show(proc.stdout))
    chk.check(peer_builds(cache) == [],
              "a rejected --peer-isal DIR still built the peer: %r"
              % peer_builds(cache))


def check_peer_build_errors(chk, exe, tmp):
    """No C compiler, or one that fails on DIR's headers: exit 1 before
    measuring, naming the compiler (or showing its first lines), and
    nothing left in the cache."""
    cache = os.path.join(tmp, "peer-cache-build")
    # An install's layout with empty files: the embedded bench/isal_peer.c
    # must not compile against it (its headers define nothing).
    hollow = peer_layout(os.path.join(tmp, "isal-hollow"), PEER_HEADERS,
                         PEER_LIB)
    bare_path = os.path.join(tmp, "bin-without-cc")
    os.makedirs(bare_path, exist_ok=True)
    for what, extra, wants in (
            ("CC=/nonexistent/cc", {"CC": "/nonexistent/cc"},
             ["no C compiler", "CC='/nonexistent/cc'",
              "--peer-isal %s" % hollow]),
            ("no cc on PATH", {"PATH": bare_path},
             ["no C compiler", "'cc' is not on PATH"])):
        env = clitest.clean_env(XDG_CACHE_HOME=cache, **extra)
        if "CC" not in extra:
            env.pop("CC", None)
        proc = clitest.run([exe, "bench", "--peer-isal", hollow] + TINY,
                           env=env, timeout=60)
        chk.status(proc, 1, "bench --peer-isal, " + what)
        err = proc.stderr.decode("utf-8", "replace")
        for want in wants:
            chk.check(want in err, "bench --peer-isal, %s: error does not "
                      "say %r" % (what, want), err)
        chk.check(proc.stdout == b"", "bench --peer-isal, %s: printed a "
                  "report" % what)

    env = clitest.clean_env(XDG_CACHE_HOME=cache)
    cc = (env.get("CC") or "cc").split()[0]
    if not chk.check(shutil.which(cc, path=env.get("PATH")) is not None,
                     "no C compiler (%s) to check that a failed compile of "
                     "the isa-l_crypto peer is reported" % cc):
        return
    proc = clitest.run([exe, "bench", "--peer-isal", hollow] + TINY, env=env,
                       timeout=120)
    what = "bench --peer-isal DIR with empty headers"
    chk.status(proc, 1, what)
    err = proc.stderr.decode("utf-8", "replace")
    # the #error of bench/isal_peer.c: the embedded source was compiled and
    # the compiler's own words are shown
    for want in ("compiling the isa-l_crypto peer (bench/isal_peer.c) "
                 "against --peer-isal '%s' failed" % hollow,
                 "the compiler's first lines:",
                 "isal_peer.c", "isal_peer needs isa-l_crypto 2.25 or newer"):
        chk.check(want in err, "%s: error does not say %r" % (what, want),
                  err)
    chk.check(proc.stdout == b"", what + ": printed a report")
    chk.check(peer_builds(cache) == [],
              what + ": left files in the cache: %r" % peer_builds(cache))


def check_peer_absent(chk, exe, tmp):
    """Without --peer-isal (HASHBATCH_PEER_ISAL unset or empty) nothing
    changes and nothing is compiled."""
    cache = os.path.join(tmp, "peer-cache-absent")
    for var in (None, ""):
        env = clitest.clean_env(XDG_CACHE_HOME=cache)
        if var is not None:
            env["HASHBATCH_PEER_ISAL"] = var
        what = "bench without a peer (HASHBATCH_PEER_ISAL %s)" % (
            "unset" if var is None else "empty")
        proc = clitest.run([exe, "bench", "--json"] + TINY, env=env)
        if not chk.status(proc, 0, what):
            continue
        doc = parse_json(chk, proc, what)
        if doc is None:
            continue
        chk.check("peer_isal" in doc and doc["peer_isal"] is None,
                  what + ": 'peer_isal' is not null", repr(doc.get("peer_isal")))
        chk.check(all(r.get("backend") != "isa-l_crypto" and "peer" not in r
                      for r in doc["sizes"]),
                  what + ": a peer row", repr(doc["sizes"]))
    chk.check(peer_builds(cache) == [],
              "bench without --peer-isal built the peer: %r" % peer_builds(cache))


def check_peer_real(chk, exe, tmp):
    """With a real isa-l_crypto install in HASHBATCH_PEER_ISAL (never
    required; CI has none): its rows beside the cpu rows in every case,
    every run checked, and the build reused the second time."""
    isal = os.environ.get("HASHBATCH_PEER_ISAL")
    cache = os.path.join(tmp, "peer-cache-real")
    plan = ["--json", "--backend", "cpu", "--cpu-impl", "default", "--sizes",
            "64,4K", "--batches", "1,16", "--runs", "2", "--min-time", "0.002"]
    builds = []
    for run in ("first", "second"):
        env = clitest.clean_env(XDG_CACHE_HOME=cache)
        proc = clitest.run([exe, "bench", "--peer-isal", isal] + plan,
                           env=env, timeout=300)
        what = "bench --peer-isal %s (%s run)" % (isal, run)
        if not chk.status(proc, 0, what):
            return
        doc = parse_json(chk, proc, what)
        if doc is None:
            return
        peer = doc.get("peer_isal") or {}
        chk.check(peer.get("peer") is True and peer.get("dir") == isal and
                  peer.get("threads") == doc["machine"]["cpu_pool_threads"] and
                  peer.get("reused_build") is (run == "second") and
                  os.path.isfile(peer.get("binary", "")),
                  what + ": peer_isal wrong", repr(peer))
        builds.append(peer.get("binary"))
        rows = [r for r in doc["sizes"] + doc["batches"]
                if r.get("backend") == "isa-l_crypto"]
        got = {(r["size"], r["count"]) for r in rows}
        want = {(r["size"], r["count"]) for r in doc["sizes"] + doc["batches"]
                if r.get("backend") == "cpu"}
        chk.check(got == want and len(rows) == len(want),
                  what + ": isa-l_crypto rows %r, cases %r" % (got, want))
        for r in rows:
            chk.check(r.get("peer") is True and r.get("peer_dir") == isal and
                      r.get("cpu_impl") is None,
                      what + ": peer row without peer fields", repr(r))
            check_result(chk, r, 2, what)
    chk.check(len(builds) == 2 and builds[0] == builds[1] and
              peer_builds(cache) == [os.path.basename(builds[0])],
              "the second run did not reuse the first build: %r, cache %r"
              % (builds, peer_builds(cache)))


def main():
    exe = clitest.binary()
    only = clitest.part()
    if only not in (None, "plot", "peer_isal"):
        sys.exit("unknown part %r" % only)
    if only == "plot" and shutil.which("gnuplot") is None:
        clitest.skip("gnuplot not installed (Debian: gnuplot-nox): --plot not checked")
    if only == "peer_isal" and not os.environ.get("HASHBATCH_PEER_ISAL"):
        clitest.skip("HASHBATCH_PEER_ISAL not set: no isa-l_crypto install to run the "
                     "real peer against (cli_bench checks the --peer-isal errors)")
    chk = clitest.Checker("test_bench" + ("_" + only if only else ""))
    devices = opencl_devices(exe)
    if devices is None:
        print("`hashbatch devices --json` failed")
        sys.exit(1)
    impls = CpuImpls(devices_doc(exe)["cpu"])
    if impls.default not in impls.runnable:
        print("`hashbatch devices --json` names no runnable default CPU "
              "implementation: %r" % impls.impls)
        sys.exit(1)
    with tempfile.TemporaryDirectory(prefix="hb-bench-") as tmp:
        if only == "plot":
            check_text_and_plot(chk, exe, devices, impls, tmp, plot=True)
        elif only == "peer_isal":
            check_peer_real(chk, exe, tmp)
        else:
            check_usage(chk, exe, impls, tmp)
            check_cpu_impl_option(chk, exe, impls)
            check_quick(chk, exe, devices, impls)
            check_text_and_plot(chk, exe, devices, impls, tmp)
            check_no_opencl(chk, exe, impls, tmp)
            check_mismatch(chk, exe, devices, impls)
            check_without_cpu(chk, exe, devices)
            check_peer_usage(chk, exe, tmp)
            check_peer_build_errors(chk, exe, tmp)
            check_peer_absent(chk, exe, tmp)
    chk.finish()


if __name__ == "__main__":
    main()
