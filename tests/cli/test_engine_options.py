"""test_engine_options.py - bad engine settings are usage errors (exit 2)
in every command, with a message that names the bad value and where it
came from: --device NONSENSE and HASHBATCH_DEVICE=GARBAGE (a spec that
matches no device: the library's HB_ERR_BAD_DEVICE_SPEC, which exited 1
before), also beside --backend cpu; bad --backend and --verify values,
from the command line or HASHBATCH_BACKEND / HASHBATCH_VERIFY, and a bad
HASHBATCH_CPU_IMPL (sum and dedup once ignored it), a bad
HASHBATCH_DEVICE_CORES (not a CPU list, or every core); for sum,
dedup, bench and devices (devices opens no engine: its environment
values are checked). A good spec still works (exit 0).

Usage: test_engine_options.py PATH/TO/hashbatch
"""
import os
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
import clitest  # noqa: E402

TIMEOUT = 300


def usage_error(chk, exe, args, env, words, what, cwd):
    """Runs hashbatch args with env added; wants exit 2, a stderr naming
    every one of words, the 'Try ... --help' line, and nothing on stdout."""
    p = clitest.run([exe] + args, cwd=cwd, env=clitest.clean_env(**env), timeout=TIMEOUT)
    chk.status(p, 2, what)
    for w in words:
        chk.check(w.encode() in p.stderr, "%s: the message names %r" % (what, w),
                  clitest.show(p.stderr))
    chk.check(b"Try 'hashbatch " in p.stderr, "%s: says how to get help" % what,
              clitest.show(p.stderr))
    chk.check(p.stdout == b"", "%s: nothing on stdout" % what, clitest.show(p.stdout))


def device_cases(cmd_args):
    """(args, env, words, what) for the two bad device specs and the
    backend and verify values."""
    cmd = cmd_args[0]
    return [
        (cmd_args[:1] + ["--device", "nonsense"] + cmd_args[1:], {},
         ["'nonsense'", "--device"], "%s --device nonsense" % cmd),
        (cmd_args, {"HASHBATCH_DEVICE": "garbage"},
         ["'garbage'", "HASHBATCH_DEVICE"], "HASHBATCH_DEVICE=garbage %s" % cmd),
        (cmd_args[:1] + ["--backend", "cpu", "--device", "garbage"] + cmd_args[1:], {},
         ["'garbage'", "--device"], "%s --backend cpu --device garbage" % cmd),
    ]


def value_cases(cmd_args, env_backend=True):
    cmd = cmd_args[0]
    cases = [
        (cmd_args[:1] + ["--backend", "bogus"] + cmd_args[1:], {},
         ["'bogus'", "--backend"], "%s --backend bogus" % cmd),
        (cmd_args[:1] + ["--verify", "bogus"] + cmd_args[1:], {},
         ["'bogus'", "--verify"], "%s --verify bogus" % cmd),
        (cmd_args, {"HASHBATCH_VERIFY": "bogus"},
         ["'bogus'", "HASHBATCH_VERIFY"], "HASHBATCH_VERIFY=bogus %s" % cmd),
    ]
    cores = sorted(os.sched_getaffinity(0))
    every_core = "%d-%d" % (cores[0], cores[-1])
    cases += [
        (cmd_args, {"HASHBATCH_DEVICE_CORES": "bogus"},
         ["'bogus'", "HASHBATCH_DEVICE_CORES", "not a CPU list"],
         "HASHBATCH_DEVICE_CORES=bogus %s" % cmd),
        (cmd_args, {"HASHBATCH_DEVICE_CORES": every_core},
         ["'%s'" % every_core, "HASHBATCH_DEVICE_CORES", "leaves the CPU pool no core"],
         "HASHBATCH_DEVICE_CORES=%s %s" % (every_core, cmd)),
    ]
    if env_backend:
        cases.append((cmd_args, {"HASHBATCH_CPU_IMPL": "bogus"},
                      ["'bogus'", "HASHBATCH_CPU_IMPL"], "HASHBATCH_CPU_IMPL=bogus %s" % cmd))
        cases.append((cmd_args, {"HASHBATCH_BACKEND": "bogus"},
                      ["'bogus'", "HASHBATCH_BACKEND"], "HASHBATCH_BACKEND=bogus %s" % cmd))
    return cases


def main():
    exe = clitest.binary()
    chk = clitest.Checker("engine_options")
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "f"), "wb") as f:
            f.write(b"data\n")
        os.mkdir(os.path.join(tmp, "d"))
        with open(os.path.join(tmp, "d", "g"), "wb") as f:
            f.write(b"data\n")
        cases = (device_cases(["sum", "f"]) + value_cases(["sum", "f"]) +
                 device_cases(["dedup", "d"]) + value_cases(["dedup", "d"]) +
                 # bench chooses its backends and ignores HASHBATCH_BACKEND and
                 # HASHBATCH_DEVICE (its help says so): --device is its spec.
                 device_cases(["bench", "--quick"])[0:1] + device_cases(["bench", "--quick"])[2:] +
                 value_cases(["bench", "--quick"], env_backend=False))
        # devices opens no engine: the environment's values are checked.
        cases += [(["devices"], {"HASHBATCH_BACKEND": "bogus"},
                   ["'bogus'", "HASHBATCH_BACKEND"], "HASHBATCH_BACKEND=bogus devices"),
                  (["devices"], {"HASHBATCH_VERIFY": "bogus"},
                   ["'bogus'", "HASHBATCH_VERIFY"], "HASHBATCH_VERIFY=bogus devices")]
        for args, env, words, what in cases:
            usage_error(chk, exe, args, env, words, what, tmp)

        # A spec that exists still works, from the option and the environment.
        p = clitest.run([exe, "sum", "--device", "all", "f"], cwd=tmp, timeout=TIMEOUT)
        chk.status(p, 0, "sum --device all")
        p = clitest.run([exe, "sum", "f"], cwd=tmp, timeout=TIMEOUT,
                        env=clitest.clean_env(HASHBATCH_DEVICE="all"))
        chk.status(p, 0, "HASHBATCH_DEVICE=all sum")
        # Cores of its own for OpenCL, where there are two to split.
        cores = sorted(os.sched_getaffinity(0))
        if len(cores) >= 2:
            p = clitest.run([exe, "sum", "f"], cwd=tmp, timeout=TIMEOUT,
                            env=clitest.clean_env(HASHBATCH_DEVICE_CORES=str(cores[-1])))
            chk.status(p, 0, "HASHBATCH_DEVICE_CORES=%d sum" % cores[-1])
        p = clitest.run([exe, "dedup", "--backend", "cpu", "d"], cwd=tmp, timeout=TIMEOUT)
        chk.status(p, 0, "dedup --backend cpu")
        # An implementation this CPU runs is taken (portable and sha-ni run anywhere).
        for impl in ("portable", "sha-ni"):
            p = clitest.run([exe, "sum", "--backend", "cpu", "f"], cwd=tmp, timeout=TIMEOUT,
                            env=clitest.clean_env(HASHBATCH_CPU_IMPL=impl))
            chk.status(p, 0, "HASHBATCH_CPU_IMPL=%s sum" % impl)
    chk.finish()


if __name__ == "__main__":
    main()
