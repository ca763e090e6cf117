"""test_devices.py - `hashbatch devices [--json]`: lists the OpenCL
devices (the pocl one where pocl is installed), the CPU pool and what
`auto` picks; the JSON form parses and has every field. The cpu line
names the implementation the pool hashes with: the library's default
(one of the implementations this CPU runs, as /proc/cpuinfo's flags say
for avx2 and avx512), or the one HASHBATCH_CPU_IMPL names, each of them
in turn; a "cpu implementations:" line lists the runnable ones with the
default marked; an unknown HASHBATCH_CPU_IMPL (or one this CPU does not
run) is a usage error naming it. With no OpenCL platform at all
(OCL_ICD_VENDORS pointing at an empty directory) it still exits 0 and
says so, `sum --backend opencl` fails clearly (exit 1), and `sum` (auto)
still works on the CPU pool.

Usage: test_devices.py PATH/TO/hashbatch
"""
import glob
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402

DEVICE_FIELDS = {
    "id": str, "platform_index": int, "device_index": int, "name": str,
    "platform": str, "vendor": str, "type": str, "pocl": bool,
    "compute_units": int, "max_clock_mhz": int, "global_mem_bytes": int,
    "max_alloc_bytes": int, "opencl_version": str, "driver_version": str,
    "available": bool, "auto_pick": bool}
CPU_LINE = re.compile(rb"^cpu: (?:(\S+) multi-buffer \((\d+) lanes\) \+ )?"
                      rb"OpenSSL, \d+ threads?, SHA-NI (yes|no)"
                      rb"( \(HASHBATCH_CPU_IMPL\))?$", re.M)
IMPL_FIELDS = {"name": str, "lanes": int, "runs": bool, "default": bool}
# The lanes hashbatch.h documents for each multi-buffer implementation.
LANES = {"avx512": 16, "avx2": 8, "portable": 4, "sha-ni": 0}


def cpu_flags():
    """/proc/cpuinfo's flags of the first CPU, or None off Linux x86."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def cpu_line(chk, out, what):
    """The cpu line's match, or None after a failure."""
    m = CPU_LINE.search(out)
    chk.check(m is not None, what + ": no 'cpu: [IMPL multi-buffer (N lanes) "
              "+ ]OpenSSL, N threads, SHA-NI yes/no' line", clitest.show(out))
    return m


def pocl_installed():
    vendors = os.environ.get("OCL_ICD_VENDORS", "/etc/OpenCL/vendors")
    return bool(glob.glob(os.path.join(vendors, "*pocl*")))


def parse_json(chk, proc, what):
    try:
        return json.loads(proc.stdout.decode("utf-8"))
    except ValueError as e:
        chk.fail(what + ": not valid JSON: %s" % e, clitest.show(proc.stdout))
        return None


def check_json_doc(chk, doc, what):
    for key in ("opencl_devices", "cpu", "auto"):
        if not chk.check(key in doc, "%s: no %r key" % (what, key)):
            return
    for dev in doc["opencl_devices"]:
        for field, kind in DEVICE_FIELDS.items():
            chk.check(isinstance(dev.get(field), kind),
                      "%s: device field %r missing or not %s"
                      % (what, field, kind.__name__), repr(dev))
        chk.check(dev.get("type") in ("gpu", "cpu", "accelerator", "other"),
                  what + ": bad device type", repr(dev))
    cpu = doc["cpu"]
    chk.check(isinstance(cpu.get("threads"), int) and cpu["threads"] > 0 and
              isinstance(cpu.get("sha_ni"), bool), what + ": cpu fields",
              repr(cpu))
    check_json_impls(chk, cpu, what)
    picks = [d for d in doc["opencl_devices"] if d.get("auto_pick")]
    chk.check(len(picks) <= 1, what + ": more than one auto_pick device")
    auto = doc["auto"]
    if picks:
        chk.check(auto.get("backend") == "opencl" and
                  auto.get("device") == picks[0]["id"],
                  what + ": auto does not name the auto_pick device",
                  repr(auto))
    else:
        chk.check(auto.get("backend") == "cpu", what + ": auto is not cpu",
                  repr(auto))


def check_json_impls(chk, cpu, what):
    """The CPU implementations: every field, one default that runs, the
    portable and sha-ni ones everywhere, avx2/avx512 as the CPU has them."""
    impls = cpu.get("cpu_impls")
    if not chk.check(isinstance(impls, list) and impls,
                     what + ": no cpu_impls list", repr(cpu)):
        return
    for impl in impls:
        for field, kind in IMPL_FIELDS.items():
            chk.check(isinstance(impl.get(field), kind),
                      "%s: cpu_impls field %r missing or not %s"
                      % (what, field, kind.__name__), repr(impl))
    runs = {i.get("name"): i.get("runs") for i in impls}
    chk.check(set(runs) == set(LANES), what + ": implementations %r, "
              "expected %r" % (sorted(runs), sorted(LANES)))
    for impl in impls:
        chk.check(impl.get("lanes") == LANES.get(impl.get("name")),
                  what + ": lanes differ from hashbatch.h's", repr(impl))
    chk.check(runs.get("portable") is True and runs.get("sha-ni") is True,
              what + ": portable and sha-ni must run everywhere", repr(runs))
    defaults = [i["name"] for i in impls if i.get("default")]
    chk.check(len(defaults) == 1 and runs.get(defaults[0]) is True and
              cpu.get("cpu_impl_default") == defaults[0],
              what + ": not exactly one default, or it does not run",
              repr(cpu))
    chk.check(runs.get(cpu.get("cpu_impl")) is True and
              cpu.get("lanes") == LANES.get(cpu.get("cpu_impl")),
              what + ": the pool's implementation does not run here",
              repr(cpu))
    flags = cpu_flags()
    if flags is not None and "sse2" in flags:  # x86, where the flags tell
        chk.check(runs.get("avx2") is ("avx2" in flags),
                  what + ": avx2 runs %r, /proc/cpuinfo avx2 %r"
                  % (runs.get("avx2"), "avx2" in flags))
        has512 = {"avx512f", "avx512bw"} <= flags
        chk.check(runs.get("avx512") is has512,
                  what + ": avx512 runs %r, /proc/cpuinfo avx512f+bw %r"
                  % (runs.get("avx512"), has512))
        chk.check(cpu["sha_ni"] is ("sha_ni" in flags),
                  what + ": sha_ni %r, /proc/cpuinfo sha_ni %r"
                  % (cpu["sha_ni"], "sha_ni" in flags))


def check_cpu_text(chk, out, impl, forced, impls, default, what):
    """The cpu line names impl (forced: by HASHBATCH_CPU_IMPL) and the
    implementations line lists the runnable ones, default marked."""
    m = cpu_line(chk, out, what)
    if m is not None:
        if LANES.get(impl):
            chk.check(m.group(1) == impl.encode() and
                      m.group(2) == str(LANES[impl]).encode(),
                      "%s: cpu line does not name %s with %d lanes"
                      % (what, impl, LANES[impl]), clitest.show(out))
        else:
            chk.check(m.group(1) is None, what + ": cpu line for sha-ni "
                      "names a multi-buffer implementation", clitest.show(out))
        chk.check((m.group(4) is not None) == forced, what + ": cpu line "
                  "says HASHBATCH_CPU_IMPL iff it chose", clitest.show(out))
    # The default is measured in each process (hb_cpu_impl_default_name):
    # where two implementations cost about the same (avx2 and sha-ni on a
    # Zen 3), another process may measure the other one. So the line must
    # list the runnable implementations with exactly one of them marked,
    # the one `default` names when this process measured alike.
    runnable = [i["name"] for i in impls if i["runs"]]
    choices = [default] + [n for n in runnable if n != default]
    lines = ["cpu implementations: " +
             ", ".join(n + (" (default)" if n == d else "") for n in runnable)
             for d in choices]
    found = [l for l in lines if re.search(rb"^" + re.escape(l.encode()) + rb"(;|$)",
                                           out, re.M) is not None]
    chk.check(len(found) == 1, "%s: no line %r (or another default marked)" % (what, lines[0]),
              clitest.show(out))


def check_cpu_impl_env(chk, exe, doc):
    """HASHBATCH_CPU_IMPL=each runnable implementation changes the cpu
    line and the JSON; bogus and unrunnable ones are usage errors."""
    cpu = doc.get("cpu", {})
    impls = cpu.get("cpu_impls") or []
    default = cpu.get("cpu_impl_default")
    for impl in impls:
        name = impl["name"]
        env = clitest.clean_env(HASHBATCH_CPU_IMPL=name)
        what = "HASHBATCH_CPU_IMPL=%s devices" % name
        text = clitest.run([exe, "devices"], env=env)
        if not impl["runs"]:
            chk.status(text, 2, what + " (does not run here)")
            chk.check(name.encode() in text.stderr and
                      b"does not run" in text.stderr,
                      what + ": error does not name it",
                      clitest.show(text.stderr))
            continue
        if not chk.status(text, 0, what):
            continue
        check_cpu_text(chk, text.stdout, name, True, impls, default, what)
        proc = clitest.run([exe, "devices", "--json"], env=env)
        if chk.status(proc, 0, what + " --json"):
            got = parse_json(chk, proc, what + " --json") or {}
            marked = [i["name"] for i in got.get("cpu", {}).get("cpu_impls", [])
                      if i.get("default")]
            chk.check(got.get("cpu", {}).get("cpu_impl") == name and
                      got["cpu"].get("cpu_impl_from") == "HASHBATCH_CPU_IMPL" and
                      marked == [got["cpu"].get("cpu_impl_default")] and
                      {i["name"]: i["runs"] for i in impls}.get(marked[0]) is True,
                      what + " --json: cpu_impl not the forced one, or the default "
                      "not one runnable implementation",
                      repr(got.get("cpu")))
    for bad in ("bogus", ""):
        env = clitest.clean_env(HASHBATCH_CPU_IMPL=bad)
        proc = clitest.run([exe, "devices"], env=env)
        if bad == "":  # empty is unset: the default
            chk.status(proc, 0, "HASHBATCH_CPU_IMPL= (empty) devices")
            check_cpu_text(chk, proc.stdout, default, False, impls, default,
                           "HASHBATCH_CPU_IMPL= (empty) devices")
            continue
        chk.status(proc, 2, "HASHBATCH_CPU_IMPL=bogus devices")
        chk.check(b"'bogus'" in proc.stderr and
                  b"HASHBATCH_CPU_IMPL" in proc.stderr and proc.stdout == b"",
                  "HASHBATCH_CPU_IMPL=bogus: no usage error naming it",
                  clitest.show(proc.stderr))


def check_with_opencl(chk, exe):
    text = clitest.run([exe, "devices"])
    chk.status(text, 0, "devices")
    chk.check(re.search(rb"^auto: ", text.stdout, re.M) is not None,
              "devices: no 'auto:' line", clitest.show(text.stdout))
    proc = clitest.run([exe, "devices", "--json"])
    chk.status(proc, 0, "devices --json")
    doc = parse_json(chk, proc, "devices --json")
    if doc is None:
        return
    check_json_doc(chk, doc, "devices --json")
    cpu = doc.get("cpu", {})
    if cpu.get("cpu_impls"):
        chk.check(cpu.get("cpu_impl") == cpu.get("cpu_impl_default") and
                  cpu.get("cpu_impl_from") is None,
                  "devices --json: without HASHBATCH_CPU_IMPL the pool does "
                  "not use the default", repr(cpu))
        check_cpu_text(chk, text.stdout, cpu.get("cpu_impl_default"), False,
                       cpu["cpu_impls"], cpu.get("cpu_impl_default"),
                       "devices")
        check_cpu_impl_env(chk, exe, doc)
    for dev in doc.get("opencl_devices", []):
        chk.check(("%s  %s" % (dev["id"], dev["name"])).encode() in
                  text.stdout, "devices: text lacks device %s" % dev["id"],
                  clitest.show(text.stdout))
    if pocl_installed():
        pocl = [d for d in doc.get("opencl_devices", []) if d.get("pocl")]
        chk.check(len(pocl) > 0, "pocl is installed but no pocl device is "
                  "listed", clitest.show(proc.stdout))
        chk.check(b"Portable Computing Language" in text.stdout,
                  "devices: the pocl platform is not mentioned",
                  clitest.show(text.stdout))
    else:
        print("NOTE: pocl is not installed; not looking for its device")


def check_without_opencl(chk, exe, tmp):
    empty = os.path.join(tmp, "no-vendors")
    os.mkdir(empty)
    env = clitest.clean_env(OCL_ICD_VENDORS=empty)
    what = "no OpenCL: devices"
    proc = clitest.run([exe, "devices"], env=env)
    chk.status(proc, 0, what)
    chk.check(b"no OpenCL" in proc.stdout, what + ": does not say so",
              clitest.show(proc.stdout))
    chk.check(re.search(rb"^auto: cpu", proc.stdout, re.M) is not None,
              what + ": auto is not the cpu pool", clitest.show(proc.stdout))
    proc = clitest.run([exe, "devices", "--json"], env=env)
    chk.status(proc, 0, what + " --json")
    doc = parse_json(chk, proc, what + " --json")
    if doc is not None:
        check_json_doc(chk, doc, what + " --json")
        chk.check(doc.get("opencl_devices") == [],
                  what + " --json: devices listed", clitest.show(proc.stdout))

    data = os.path.join(tmp, "data")
    with open(data, "wb") as f:
        f.write(b"abc" * 1000)
    want = ("%s  %s\n" % (hashlib.sha1(b"abc" * 1000).hexdigest(),
                          data)).encode()
    proc = clitest.run([exe, "sum", "--backend", "opencl", data], env=env)
    chk.status(proc, 1, "no OpenCL: sum --backend opencl")
    chk.check(proc.stdout == b"", "no OpenCL: sum --backend opencl printed",
              clitest.show(proc.stdout))
    chk.check(b"OpenCL" in proc.stderr, "no OpenCL: sum --backend opencl: "
              "the error does not say OpenCL", clitest.show(proc.stderr))
    for opts in ([], ["--backend", "auto"], ["--backend", "cpu"]):
        what = "no OpenCL: sum " + " ".join(opts)
        proc = clitest.run([exe, "sum"] + opts + [data], env=env)
        chk.status(proc, 0, what)
        chk.same_bytes(proc.stdout, want, what)


def devices_json(chk, exe, env, what):
    proc = clitest.run([exe, "devices", "--json"], env=env)
    if not chk.status(proc, 0, what):
        return {}
    return (parse_json(chk, proc, what) or {}).get("cpu", {})


def check_default_kept(chk, exe, tmp):
    """The default CPU implementation is measured once per machine and
    kept in $XDG_CACHE_HOME/hashbatch/cpu_impl.txt: later processes read
    it; a damaged file, another machine's key, or a name this CPU does not
    run is measured again and the file rewritten."""
    xdg = os.path.join(tmp, "xdg")
    env = clitest.clean_env(XDG_CACHE_HOME=xdg)
    path = os.path.join(xdg, "hashbatch", "cpu_impl.txt")
    cpu = devices_json(chk, exe, env, "devices --json (fresh cache)")
    measured = cpu.get("cpu_impl_default")
    if not chk.check(os.path.isfile(path), "cpu_impl.txt not written"):
        return
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    chk.check(len(lines) == 3 and lines[0] == b"hashbatch-cpu-impl 1" and lines[2] == b"" and
              lines[1].endswith(b"\t" + str(measured).encode()),
              "cpu_impl.txt does not hold the measured default", repr(lines))
    key = lines[1].rsplit(b"\t", 1)[0] if len(lines) > 1 else b""
    for i in range(3):  # every process agrees
        got = devices_json(chk, exe, env, "devices --json (kept) %d" % i).get("cpu_impl_default")
        chk.check(got == measured, "run %d: default %r, the kept one %r" % (i, got, measured))
    other = "portable" if measured != "portable" else "sha-ni"  # both run everywhere
    with open(path, "wb") as f:
        f.write(b"hashbatch-cpu-impl 1\n" + key + b"\t" + other.encode() + b"\n")
    got = devices_json(chk, exe, env, "devices --json (kept %s)" % other)
    chk.check(got.get("cpu_impl_default") == other and got.get("cpu_impl") == other,
              "the kept default %r was not used" % other, repr(got))
    runs = {i["name"]: i["runs"] for i in got.get("cpu_impls", [])}
    bad_names = [b"bogus"] + [n.encode() for n, r in runs.items() if not r]
    for damage in ([b"garbage\n"], [b"hashbatch-cpu-impl 1\n", b"another machine\tportable\n"],
                   [b"hashbatch-cpu-impl 2\n", key, b"\tportable\n"],
                   [b"hashbatch-cpu-impl 1\n", key, b"\tportable"]) + tuple(
                       [b"hashbatch-cpu-impl 1\n", key, b"\t", n, b"\n"] for n in bad_names):
        with open(path, "wb") as f:
            f.write(b"".join(damage))
        got = devices_json(chk, exe, env, "devices --json (damaged: %r)" % damage)
        chk.check(runs.get(got.get("cpu_impl_default")) is True,
                  "damaged file %r: default %r does not run" % (damage, got.get("cpu_impl_default")))
        with open(path, "rb") as f:
            now = f.read()
        chk.check(now.startswith(b"hashbatch-cpu-impl 1\n" + key + b"\t") and
                  now.endswith(b"\n") and now != b"".join(damage),
                  "damaged file %r was not measured again and rewritten" % damage, repr(now))


def main():
    exe = clitest.binary()
    chk = clitest.Checker("test_devices")
    tmp = tempfile.mkdtemp(prefix="hb-cli-dev-")
    try:
        check_with_opencl(chk, exe)
        check_without_opencl(chk, exe, tmp)
        check_default_kept(chk, exe, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    chk.finish()


if __name__ == "__main__":
    main()
