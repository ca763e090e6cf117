"""test_engine_report.py - what the CLI says about the scheduler's routes
and cost models (host/cli/engine_report.c):

- `sum -v` and `dedup -v` print where the cost models came from and one
  line per backend that took part, named as `hashbatch devices` names
  them ("opencl P:D NAME", "cpu pool ..."), with its share of messages
  and bytes (adding up to 100% over the backends), its model for one
  class of work (finite terms >= 0) and predicted against measured time;
  on the default route of `sum -r` every backend that the calibration
  says takes jobs has its line; `sum FILE...` of a few small files
  (known work, less than the devices' open is known to take) opens no
  device and says why; a pinned route (--backend cpu, --backend opencl
  --device P:D) shows its own backend doing all the work;
- `devices --calibrate` (text and --json) opens an engine with a fresh
  calibration: the JSON parses, says the models were calibrated (not
  from the cache), and every backend that takes jobs has, for each
  class, finite terms >= 0, not all zero, and GB/s given as 1 / per-byte
  term where that term is positive and as null where it is 0 (whether a
  class gets a per-byte term at all is a timing: at load 4 a lone pocl
  launch measured 30 ms, as long as 8 MiB of work, and the fit then puts
  everything on the fixed term);
  the text table has a row per backend and class; the calibration fills
  the model cache (HASHBATCH_MODEL_CACHE), from which the next engine
  takes its models (`sum -v` says so), and HASHBATCH_MODEL_CACHE=off
  makes every engine calibrate;
- engine options of `devices` without --calibrate, and a bad --cpu-impl,
  are usage errors.
Nothing here asserts a time or a speed.

Usage: test_engine_report.py PATH/TO/hashbatch
"""
import json
import math
import os
import random
import re
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402

CLASSES = ("short", "mid", "long")


def number(name):
    """A number as engine_report.c prints it ("0.312", "85.3", "1234", or
    "-"), as the named group name."""
    return rb"(?P<" + name.encode() + rb">\d+(?:\.\d+)?(?:e[-+]?\d+)?|-)"


BACKEND_LINE = re.compile(
    rb"^hashbatch:   (?P<name>.+?): (?P<m>\d+) messages \((?P<mp>[\d.]+)%\), "
    rb"(?P<b>\d+) bytes \((?P<bp>[\d.]+)%\), \d+ batches(?P<rest>[^;]*); "
    rb"(?P<cls>short|mid|long) model " + number("fixed") + rb" us \+ " + number("per_msg") +
    rb" ns/msg \+ " + number("per_byte") + rb" ns/B \(" + number("gbps") + rb" GB/s\); "
    rb"(?:predicted " + number("pred") + rb" ms, measured " + number("meas") +
    rb" ms(?: \([\d.]+x\))?|no predicted batches)$")
ORIGIN_LINE = re.compile(
    rb"^hashbatch: cost models: (from the model cache|calibrated at open in "
    rb"[\d.]+ ms|neither calibrated at open nor from the cache)$", re.M)


def make_files(root, rng, count=120):
    """count small files (batched through the engine), random sizes up to
    64 KiB; returns their names."""
    names = []
    for i in range(count):
        name = "f%03d.bin" % i
        with open(os.path.join(root, name), "wb") as f:
            f.write(rng.randbytes(rng.randrange(1, 64 << 10)))
        names.append(name)
    return names


def devices_doc(chk, exe, env, extra=()):
    proc = clitest.run([exe, "devices", "--json"] + list(extra), env=env)
    what = "devices --json " + " ".join(extra)
    if not chk.status(proc, 0, what):
        return None
    try:
        return json.loads(proc.stdout.decode("utf-8"))
    except ValueError as e:
        chk.fail(what + ": not valid JSON: %s" % e, clitest.show(proc.stdout))
        return None


def known_name(name, devices):
    """Is name a backend `hashbatch devices` lists?"""
    if name.startswith("cpu pool"):
        return True
    m = re.match(r"opencl (\d+:\d+) (.*)$", name)
    if m is None:
        return False
    dev = devices.get(m.group(1))
    return dev is not None and dev["name"].startswith(m.group(2))


def backend_lines(chk, stderr, devices, what):
    """The per-backend lines of a -v report: {name: match}, after checking
    each line's name, shares and model terms."""
    lines = [l for l in stderr.splitlines() if l.startswith(b"hashbatch:   ")]
    found = {}
    for line in lines:
        m = BACKEND_LINE.match(line)
        if not chk.check(m is not None, what + ": backend line not as expected",
                         clitest.show(line)):
            continue
        name = m.group("name").decode("utf-8", "replace")
        chk.check(known_name(name, devices),
                  "%s: backend %r is not one `hashbatch devices` lists" % (what, name),
                  clitest.show(stderr))
        chk.check(name not in found, "%s: %r has two lines" % (what, name))
        for k in ("fixed", "per_msg", "per_byte"):
            v = m.group(k)
            chk.check(v == b"-" or (math.isfinite(float(v)) and float(v) >= 0),
                      what + ": model term not a number >= 0", clitest.show(line))
        found[name] = m
    total = sum(int(m.group("m")) for m in found.values())
    if total > 0:
        for key in ("mp", "bp"):
            s = sum(float(m.group(key)) for m in found.values())
            chk.check(abs(s - 100) < 0.5, "%s: shares add up to %.1f%%" % (what, s),
                      clitest.show(stderr))
    return found


def check_origin(chk, stderr, what, want=None):
    m = ORIGIN_LINE.search(stderr)
    if not chk.check(m is not None, what + ": no 'cost models:' line", clitest.show(stderr)):
        return
    if want is not None:
        chk.check(m.group(1).startswith(want.encode()),
                  "%s: cost models %r, expected %r" % (what, m.group(1), want),
                  clitest.show(stderr))


def sum_v(chk, exe, env, root, names, args, what):
    proc = clitest.run([exe, "sum", "-v"] + args + ["--"] + names, cwd=root, env=env)
    chk.status(proc, 0, what)
    return proc


def check_calibration(chk, doc, devices, what):
    """The "calibration" member of devices --calibrate --json; returns the
    names of the backends that take jobs."""
    cal = doc.get("calibration")
    if not chk.check(isinstance(cal, dict), what + ": no calibration object", repr(doc)[:2000]):
        return []
    chk.check(isinstance(cal.get("engine"), str) and cal["engine"],
              what + ": no engine description", repr(cal))
    chk.check(cal.get("models_from_cache") is False and
              isinstance(cal.get("calibration_ms"), (int, float)) and cal["calibration_ms"] > 0,
              what + ": the models were not calibrated at open", repr(cal))
    backends = cal.get("backends") or []
    chk.check(len(backends) > 0, what + ": no backends", repr(cal))
    takers = []
    for b in backends:
        name = b.get("name", "")
        chk.check(known_name(name, devices),
                  "%s: backend %r is not one `hashbatch devices` lists" % (what, name))
        for key in ("is_cpu", "shares_host_cores", "takes_jobs"):
            chk.check(isinstance(b.get(key), bool), "%s: %s: %s not a bool" % (what, name, key))
        models = b.get("models") or []
        chk.check([m.get("class") for m in models] == list(CLASSES),
                  "%s: %s: classes %r" % (what, name, [m.get("class") for m in models]))
        if not b.get("takes_jobs"):
            continue
        takers.append(name)
        per_byte = False
        for m in models:
            terms = [m.get(k) for k in ("fixed_ns", "ns_per_message", "ns_per_byte")]
            ok = all(isinstance(t, (int, float)) and math.isfinite(t) and t >= 0 for t in terms)
            chk.check(ok and sum(terms) > 0,
                      "%s: %s: %s model terms not finite, >= 0 and positive in sum"
                      % (what, name, m.get("class")), repr(m))
            if ok and terms[2] > 0:
                per_byte = True
                chk.check(isinstance(m.get("gb_per_s"), (int, float)) and
                          abs(m["gb_per_s"] * terms[2] - 1) < 1e-3,
                          "%s: %s: gb_per_s is not 1 / ns_per_byte" % (what, name), repr(m))
            elif ok:
                chk.check(m.get("gb_per_s", "absent") is None,
                          "%s: %s: gb_per_s given for a class with no per-byte term"
                          % (what, name), repr(m))
        if not per_byte:
            print("note: %s: %s: the calibration put every class's time on its fixed term "
                  "(a loaded machine): %r" % (what, name, models))
    chk.check(len(takers) > 0, what + ": no backend takes jobs", repr(backends))
    return takers


def check_calibrate_text(chk, exe, env, takers):
    proc = clitest.run([exe, "devices", "--calibrate"], env=env)
    if not chk.status(proc, 0, "devices --calibrate"):
        return
    out = proc.stdout.decode("utf-8", "replace")
    chk.check(re.search(r"^cost models \(calibrated at open in [\d.]+ ms", out, re.M) is not None,
              "devices --calibrate: no 'cost models (calibrated at open in N ms' line", out)
    chk.check(re.search(r"^  backend +class +fixed \(us\) +per message \(ns\) +"
                        r"per byte \(ns\) +GB/s$", out, re.M) is not None,
              "devices --calibrate: no table header", out)
    for name in takers:
        rows = re.findall(r"^  " + re.escape(name) + r" +short +(\S+) +(\S+) +(\S+) +(\S+)$",
                          out, re.M)
        chk.check(len(rows) == 1, "devices --calibrate: no short row for %r" % name, out)
    for cls in CLASSES:
        n = len(re.findall(r"^  .* %s +[\d.]+ +[\d.]+ +[\d.]+ +\S+$" % cls, out, re.M))
        chk.check(n >= len(takers), "devices --calibrate: %d %s rows" % (n, cls), out)


def check_usage(chk, exe):
    for args, words in (
            (["--backend", "cpu"], b"'--backend' is meaningful only with --calibrate"),
            (["--device", "all"], b"'--device' is meaningful only with --calibrate"),
            (["--cpu-impl", "sha-ni"], b"'--cpu-impl' is meaningful only with --calibrate"),
            (["--calibrate", "--cpu-impl", "bogus"], b"'bogus' for '--cpu-impl'"),
            (["--calibrate", "--backend", "gpu"], b"'gpu'")):
        proc = clitest.run([exe, "devices"] + args)
        what = "devices " + " ".join(args)
        chk.status(proc, 2, what)
        chk.check(words in proc.stderr and proc.stdout == b"",
                  what + ": no usage error naming the option", clitest.show(proc.stderr))


def check_routes(chk, exe, env, devices, takers, tmp):
    root = os.path.join(tmp, "files")
    os.makedirs(root)
    names = make_files(root, random.Random(13))

    # -r: the work is not known before the walk, so every device opens
    proc = sum_v(chk, exe, env, root, ["."], ["-r"], "sum -v -r (default route)")
    check_origin(chk, proc.stderr, "sum -v after devices --calibrate", "from the model cache")
    lines = backend_lines(chk, proc.stderr, devices, "sum -v -r (default route)")
    for name in takers:
        chk.check(name in lines, "sum -v -r: backend %r, which takes jobs, has no line" % name,
                  clitest.show(proc.stderr))

    # FILE operands: the work is known (120 files, 4 MB), and the devices'
    # open, timed by the runs before, takes longer than the pool's model
    # says all of it needs: no device opens, the pool does everything
    proc = sum_v(chk, exe, env, root, names, [], "sum -v FILE... (default route)")
    opened_devices = [n for n in takers if not n.startswith("cpu pool")]
    if opened_devices:
        chk.check(b"(auto: OpenCL not opened: that took " in proc.stderr,
                  "sum -v FILE...: the engine line does not say why no device was opened",
                  clitest.show(proc.stderr))
    lines = backend_lines(chk, proc.stderr, devices, "sum -v FILE... (default route)")
    chk.check(list(lines) == [n for n in lines if n.startswith("cpu pool")] and
              all(m.group("mp") == b"100.0" for m in lines.values()),
              "sum -v FILE...: a device took part in a few small files",
              clitest.show(proc.stderr))

    proc = sum_v(chk, exe, env, root, names, ["--backend", "cpu"], "sum -v --backend cpu")
    lines = backend_lines(chk, proc.stderr, devices, "sum -v --backend cpu")
    busy = [n for n, m in lines.items() if int(m.group("m")) > 0]
    chk.check(len(busy) == 1 and busy[0].startswith("cpu pool") and
              lines[busy[0]].group("mp") == b"100.0",
              "sum -v --backend cpu: the pool did not do all the work", clitest.show(proc.stderr))

    for dev_id, dev in sorted(devices.items()):
        if not dev["available"]:
            continue
        args = ["--backend", "opencl", "--device", dev_id]
        what = "sum -v " + " ".join(args)
        proc = sum_v(chk, exe, env, root, names, args, what)
        lines = backend_lines(chk, proc.stderr, devices, what)
        mine = [n for n in lines if n.startswith("opencl %s " % dev_id)]
        chk.check(len(mine) == 1 and lines[mine[0]].group("mp") == b"100.0",
                  what + ": the device did not do all the work", clitest.show(proc.stderr))

    dups = os.path.join(tmp, "dups")
    os.makedirs(dups)
    for i, name in enumerate(names[:40]):  # copies: the engine hashes them
        with open(os.path.join(root, name), "rb") as f:
            data = f.read()
        for k in range(2):
            with open(os.path.join(dups, "%s.%d" % (name, k)), "wb") as f:
                f.write(data)
    proc = clitest.run([exe, "dedup", "-v", "-q", dups], env=env)
    chk.status(proc, 0, "dedup -v")
    check_origin(chk, proc.stderr, "dedup -v")
    lines = backend_lines(chk, proc.stderr, devices, "dedup -v")
    chk.check(len(lines) > 0, "dedup -v: no backend line", clitest.show(proc.stderr))

    off = dict(env, HASHBATCH_MODEL_CACHE="off")
    proc = sum_v(chk, exe, off, root, names, [], "sum -v, HASHBATCH_MODEL_CACHE=off")
    check_origin(chk, proc.stderr, "sum -v, HASHBATCH_MODEL_CACHE=off", "calibrated at open")


def main():
    exe = clitest.binary()
    chk = clitest.Checker("test_engine_report")
    with tempfile.TemporaryDirectory(prefix="hb-report-") as tmp:
        env = clitest.clean_env(HASHBATCH_MODEL_CACHE=os.path.join(tmp, "models.txt"),
                                XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        check_usage(chk, exe)
        doc = devices_doc(chk, exe, env, ["--calibrate"])
        if doc is None:
            chk.finish()
        devices = {d["id"]: d for d in doc.get("opencl_devices", [])}
        takers = check_calibration(chk, doc, devices, "devices --calibrate --json")
        chk.check(os.path.isfile(os.path.join(tmp, "models.txt")),
                  "devices --calibrate did not fill HASHBATCH_MODEL_CACHE")
        check_calibrate_text(chk, exe, env, takers)
        check_routes(chk, exe, env, devices, takers, tmp)
    chk.finish()


if __name__ == "__main__":
    main()
