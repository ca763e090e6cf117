#!/usr/bin/env bash
# check_library_quiet.sh - the library never prints, exits or aborts
# (README, "The library never prints, exits or aborts").
# Usage: tests/check_library_quiet.sh LIBRARY_ARCHIVE
# LIBRARY_ARCHIVE is the product library as a static archive
# (libhashbatch.a; libhashbatch_testing.a holds the same sources). Each
# object's undefined symbols (nm -u) are checked against the calls that
# print to standard streams, end the process or abort, and against the
# standard streams themselves; the first line of each finding names the
# object file. Owns: that list and that check. Must not: judge the
# libraries hashbatch links to (OpenSSL, the OpenCL ICD), whose own code
# is not in the archive.
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: $0 LIBRARY_ARCHIVE" >&2
  exit 2
fi
lib=$1
case "$lib" in
  *.a) ;;
  *) echo "check_library_quiet: $lib is not a static archive (.a)" >&2; exit 2 ;;
esac
[[ -r "$lib" ]] || { echo "check_library_quiet: cannot read $lib" >&2; exit 1; }

# Printing to standard streams (the _chk names are what _FORTIFY_SOURCE
# turns the calls into), ending the process, aborting (assert included:
# __assert_fail is what assert() calls when NDEBUG is not defined).
forbidden='printf|__printf_chk|vprintf|__vprintf_chk|fprintf|__fprintf_chk|vfprintf|__vfprintf_chk'
forbidden+='|dprintf|__dprintf_chk|vdprintf|__vdprintf_chk|puts|putchar|putchar_unlocked|putc|fputc'
forbidden+='|fputs|fputs_unlocked|fwrite|fwrite_unlocked|perror|psignal|psiginfo'
forbidden+='|err|errx|verr|verrx|warn|warnx|vwarn|vwarnx|error|error_at_line|syslog|vsyslog'
forbidden+='|exit|_exit|_Exit|quick_exit|abort|__assert_fail|__assert_perror_fail|__assert'
forbidden+='|stdout|stderr|_IO_2_1_stdout_|_IO_2_1_stderr_'

# nm -A: "archive:object: U symbol" (--format=posix-free wording differs
# between binutils versions, so only the last field is trusted).
if ! listing=$(nm -A -u "$lib" 2>&1); then
  echo "check_library_quiet: nm -u $lib failed:" >&2
  echo "$listing" >&2
  exit 1
fi
objects=$(ar t "$lib" | grep -c '\.o$' || true)
if [[ "$objects" -eq 0 ]]; then
  echo "check_library_quiet: $lib holds no object files: nothing was checked" >&2
  exit 1
fi

found=$(awk -v re="^(${forbidden})(@.*)?\$" '
  $(NF-1) == "U" && $NF ~ re {
    obj = $1; sub(/:$/, "", obj); sub(/^.*\.a:/, "", obj)
    print obj ": " $NF
  }' <<<"$listing" | sort -u)

if [[ -n "$found" ]]; then
  echo "check_library_quiet: objects of $lib reference calls that print, exit or abort" >&2
  echo "(or the standard streams); the library must report through hb_status only:" >&2
  echo "$found" >&2
  exit 1
fi
echo "check_library_quiet: $objects objects of $lib, none prints, exits or aborts"
