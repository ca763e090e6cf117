#!/usr/bin/env bash
# check_skips.sh - the tests the last scripts/test.sh run skipped, with the
# reason each gave, checked against the short list of skips expected by
# design (tests/expected_skips.txt).
# Usage: check_skips.sh [--list] [BUILD_DIR]   (BUILD_DIR: default build/)
# Reads BUILD_DIR/Testing/hb-ctest-junit.xml, which scripts/test.sh has
# ctest write (--output-junit). A skip is a test ctest did not count as run:
# exit 77 (SKIP_RETURN_CODE), a minitest run with skips (ruby/), a test not
# run or disabled. Its reason: the output's "SKIP:"/"skipped:" lines, else
# its last lines.
# Exit 0 when every skip matches a line of tests/expected_skips.txt (test
# name and reason both); 1 when one does not, or when the results are
# missing, empty or unreadable (a check that cannot look does not pass).
# With --list it prints the skips and their reasons and exits 0.
# Must not: run tests or change the build folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
list_only=0
if [[ "${1:-}" == "--list" ]]; then
  list_only=1
  shift
fi
build=${1:-"$root/build"}
junit="$build/Testing/hb-ctest-junit.xml"
expected="$root/tests/expected_skips.txt"

exec python3 - "$junit" "$expected" "$list_only" <<'EOF'
import re
import sys
import xml.etree.ElementTree as ET

junit, expected_path, list_only = sys.argv[1], sys.argv[2], sys.argv[3] == "1"


def die(msg):
    print("check_skips: %s" % msg, file=sys.stderr)
    sys.exit(1)


def load_expected(path):
    """(name regex, reason regex, why) per line 'NAME_RE | REASON_RE | why'."""
    rules = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = [p.strip() for p in line.split(" | ")]
            if len(parts) != 3 or not all(parts):
                die("%s:%d: expected 'TEST_NAME_REGEX | REASON_REGEX | why', got %r"
                    % (path, n, line))
            try:
                rules.append((re.compile(parts[0]), re.compile(parts[1]), parts[2], n))
            except re.error as e:
                die("%s:%d: bad regex: %s" % (path, n, e))
    return rules


def reason_of(case):
    """The SKIP: lines of the output, else its skipped: lines, else its
    last lines (at most 6 lines)."""
    lines = [l.strip() for l in (case.findtext("system-out") or "").splitlines() if l.strip()]
    said = [l for l in lines if re.match(r"(minitest )?SKIP:", l)]
    if not said:
        said = [l for l in lines if re.match(r"skipped\b", l, re.I)]
    if not said:
        node = case.find("skipped")
        msg = node.get("message", "") if node is not None else case.get("status", "")
        said = ["(no SKIP: line; %s) %s" % (msg, " / ".join(lines[-3:]))]
    return said[:6]


try:
    suite = ET.parse(junit).getroot()
except (OSError, ET.ParseError) as e:
    die("cannot read the test results %s (%s): run scripts/test.sh first" % (junit, e))
cases = suite.findall(".//testcase")
if not cases:
    die("%s lists no tests" % junit)
skipped = [c for c in cases if c.get("status") != "run" or c.find("skipped") is not None]
skipped = [c for c in skipped if c.find("failure") is None]

rules = [] if list_only else load_expected(expected_path)
print("== %d of %d tests skipped%s" % (len(skipped), len(cases), ":" if skipped else ""))
unexpected = []
for c in skipped:
    name = c.get("name")
    reasons = reason_of(c)
    text = "\n".join(reasons)
    match = next((r for r in rules
                  if r[0].fullmatch(name) and r[1].search(text)), None)
    tag = "" if list_only else ("  [expected: tests/expected_skips.txt:%d]" % match[3]
                                if match else "  [NOT EXPECTED]")
    print("  %s%s" % (name, tag))
    for r in reasons:
        print("      %s" % r)
    if match is None:
        unexpected.append(name)
if list_only:
    sys.exit(0)
if unexpected:
    print("check_skips: %d unexpected skip(s): %s\n(make them run, or add them to %s "
          "with the reason they cannot run)" % (len(unexpected), " ".join(unexpected),
                                                 expected_path), file=sys.stderr)
    sys.exit(1)
print("check_skips: every skip is expected")
EOF
