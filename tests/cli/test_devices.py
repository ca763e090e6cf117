"""test_devices.py - `hashbatch devices [--json]`: lists the OpenCL
devices (the pocl one where pocl is installed), the CPU pool and what
`auto` picks; the JSON form parses and has every field. With no OpenCL
platform at all (OCL_ICD_VENDORS pointing at an empty directory) it still
exits 0 and says so, `sum --backend opencl` fails clearly (exit 1), and
`sum` (auto) still works on the CPU pool.

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
CPU_LINE = re.compile(rb"^cpu: OpenSSL, \d+ threads?, SHA-NI (yes|no)$",
                      re.M)


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


def check_with_opencl(chk, exe):
    text = clitest.run([exe, "devices"])
    chk.status(text, 0, "devices")
    chk.check(CPU_LINE.search(text.stdout) is not None,
              "devices: no 'cpu: OpenSSL, N threads, SHA-NI yes/no' line",
              clitest.show(text.stdout))
    chk.check(re.search(rb"^auto: ", text.stdout, re.M) is not None,
              "devices: no 'auto:' line", clitest.show(text.stdout))
    proc = clitest.run([exe, "devices", "--json"])
    chk.status(proc, 0, "devices --json")
    doc = parse_json(chk, proc, "devices --json")
    if doc is None:
        return
    check_json_doc(chk, doc, "devices --json")
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


def main():
    exe = clitest.binary()
    chk = clitest.Checker("test_devices")
    tmp = tempfile.mkdtemp(prefix="hb-cli-dev-")
    try:
        check_with_opencl(chk, exe)
        check_without_opencl(chk, exe, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    chk.finish()


if __name__ == "__main__":
    main()
