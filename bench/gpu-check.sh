#!/usr/bin/env bash
# gpu-check.sh - one prepared run on a lent GPU machine: find its OpenCL
# driver, get hashbatch running there, check digests on the GPU against
# NIST and OpenSSL, then measure (host<->device bandwidth, the kernel
# alone, `hashbatch bench`). Everything lands under $OUT as JSON and logs,
# with a short table printed last. See /work/shared/device/README.md for
# the machine, the README's section on gpu-check.sh for how to run it.
#
# Two halves:
#   bench/gpu-check.sh --prepare [BUILD_DIR]
#       HERE, before asking for the GPU: fills device-carry/gpu-kit/ (an
#       ignored folder; name it in the run tool's `carry`) with a release
#       build whose binaries find their libraries through an RPATH into the
#       kit ($ORIGIN/..), the ocl-icd loader and OpenCL headers, OpenSSL's
#       headers and libcrypto (for a build there), and a copy of the NIST
#       vectors and collision files of tests/vectors/ (for the carried
#       suites, which read them from the kit). BUILD_DIR defaults to
#       build-gpu-kit.
#   OUT=DIR bench/gpu-check.sh [--pocl] [--prebuilt | --build]
#       THERE (or here with --pocl, to test it): probes, sets up OpenCL,
#       uses the carried binaries (or, if they cannot run, builds with
#       cmake against the kit), checks, measures. --pocl: use the pocl CPU
#       device instead of NVIDIA's; --prebuilt / --build: only that way.
# Env: GPU_CHECK_BUDGET  seconds the whole run may take (default 420);
#      each step also has its own timeout, and steps that would not fit
#      in what is left are skipped (and say so).
#      GPU_CHECK_BENCH_ARGS  extra `hashbatch bench` options (e.g. --quick
#      for a dry run; default: the full plan)
#      GPU_CHECK_SYSTEM_LIBS=1  --build links the system's libcrypto and
#      OpenCL loader, as it does by itself where glibc is older than 2.34
# Exit status: 0 when the GPU was found, every digest was right and the
# benchmark ran; 1 otherwise (the summary says which step failed).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kit="$root/device-carry/gpu-kit"
WARNINGS=(-Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
          -Wconversion -Wno-sign-conversion -Wundef -Wcast-align -Wvla)

die() { echo "gpu-check.sh: $*" >&2; exit 1; }

# ---------------------------------------------------------------- prepare
# copy_lib NAME DEST: the file behind the shared library NAME that ldconfig
# knows, copied (not linked) to DEST under the soname.
copy_lib() {
  local path
  path=$(ldconfig -p | awk -v n="$1" '$1 == n && /x86-64/ {print $NF; exit}')
  [ -n "$path" ] || die "library $1 not found here"
  mkdir -p "$2"
  cp -L "$path" "$2/$1"
}

prepare() {
  local build=${1:-"$root/build-gpu-kit"}
  local rpath='$ORIGIN/../openssl/lib:$ORIGIN/../ocl-icd/lib:$ORIGIN/../lib'
  rm -rf "$kit"
  mkdir -p "$kit"/{bin,lib,ocl-icd/lib,ocl-icd/include,openssl/lib,openssl/include,testdata}
  echo "== release build in $build (RPATH $rpath)"
  # CMake's own build RPATH is skipped (it would add an empty entry: the
  # current directory); ours goes to the linker as it is.
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHB_WERROR=ON \
    -DCMAKE_SKIP_BUILD_RPATH=ON "-DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags -Wl,-rpath,$rpath" \
    >/dev/null || die "cmake configure failed"
  cmake --build "$build" -j "$(nproc)" --target hashbatch_cli hb_kernel_only hb_throughput \
    test_cavp test_random test_lengths test_collisions >/dev/null || die "build failed"
  cp "$build"/host/cli/hashbatch "$build"/bench/hb_kernel_only "$build"/bench/hb_throughput \
     "$build"/tests/test_cavp "$build"/tests/test_random "$build"/tests/test_lengths \
     "$build"/tests/test_collisions "$kit/bin/"
  for prog in device_check device_bandwidth; do
    cc -std=c11 -O2 "${WARNINGS[@]}" -Werror -D_POSIX_C_SOURCE=200809L -I"$root/host/include" \
      "$root/bench/$prog.c" "$build/host/libhashbatch.a" -lOpenCL -lcrypto -lpthread -lm \
      -Wl,--disable-new-dtags "-Wl,-rpath,$rpath" -o "$kit/bin/hb_$prog" || die "cc $prog failed"
  done
  strip "$kit"/bin/*
  echo "== libraries, headers, test data"
  copy_lib libOpenCL.so.1 "$kit/ocl-icd/lib"
  cp "$kit/ocl-icd/lib/libOpenCL.so.1" "$kit/ocl-icd/lib/libOpenCL.so"
  cp -r /usr/include/CL "$kit/ocl-icd/include/"
  copy_lib libcrypto.so.3 "$kit/openssl/lib"
  cp "$kit/openssl/lib/libcrypto.so.3" "$kit/openssl/lib/libcrypto.so"
  cp -r /usr/include/openssl "$kit/openssl/include/"
  cp /usr/include/x86_64-linux-gnu/openssl/*.h "$kit/openssl/include/openssl/"
  copy_lib libsubunit.so.0 "$kit/lib" # the Check suites' one other library
  cp -r "$root/tests/vectors/cavp" "$root/tests/vectors/collisions" "$kit/testdata/" ||
    die "cannot copy the test vectors from $root/tests/vectors"
  chmod -R u+w "$kit"
  {
    echo "gpu-kit prepared $(date -u +%Y-%m-%dT%H:%MZ) from commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- host kernels bench || echo ' (with uncommitted changes)')"
    echo "host: $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
    echo "binaries need at most: $(objdump -T "$kit"/bin/* "$kit"/*/lib/*.so* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
    echo "OpenSSL: $(openssl version); ocl-icd: $(dpkg-query -W -f '${Version}' ocl-icd-libopencl1)"
    (cd "$kit" && du -k bin/* lib/* ocl-icd/lib/* openssl/lib/* && du -sk ocl-icd/include openssl/include testdata/*) |
      awk '{printf "  %6d KiB %s\n", $1, $2}'
    echo "RPATH of the binaries: $(readelf -d "$kit/bin/hashbatch" | sed -n 's/.*Library rpath: //p')"
  } >"$kit/MANIFEST.txt"
  cat "$kit/MANIFEST.txt"
  echo "== kit: $(du -sh "$kit" | cut -f1) in $kit (carry: [\"device-carry\"])"
}

if [ "${1:-}" = "--prepare" ]; then
  shift
  prepare "$@"
  exit 0
fi

# probe: what the machine has, for the record and for the next steps.
probe() {
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "uname: $(uname -srm); cores: $(nproc); $(ldd --version 2>&1 | head -1)"
  grep -m1 'model name' /proc/cpuinfo
  grep -E '^(PRETTY_NAME)=' /etc/os-release 2>/dev/null
  echo "--- nvidia-smi"
  nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max \
    --format=csv 2>&1 || echo "(no nvidia-smi)"
  echo "--- tools"
  for t in cmake cc gcc nvcc openssl gnuplot python3 sha1sum objdump; do
    printf '%-8s %s\n' "$t" "$(command -v "$t" || echo '-')"
  done
  cmake --version 2>/dev/null | head -1
  echo "--- OpenCL files (find /, 60 s at most)"
  timeout 60 find / \( -path /proc -o -path /sys -o -path /dev -o -path "$root" \) -prune -o \
    \( -name 'libnvidia-opencl.so*' -o -name 'libOpenCL.so*' -o -name '*.icd' \
       -o -name 'libpocl.so*' \) -print 2>/dev/null
  echo "--- /etc/OpenCL/vendors"
  for f in /etc/OpenCL/vendors/*; do [ -f "$f" ] && echo "$f: $(cat "$f")"; done
  echo "--- headers and libcrypto"
  ls /usr/include/CL/cl.h /usr/local/cuda/include/CL/cl.h /usr/include/openssl/sha.h 2>&1
  ldconfig -p 2>/dev/null | grep -E 'libcrypto\.so|libOpenCL\.so|libnvidia-opencl' || true
}

# vendor_library: the OpenCL driver library to name in the .icd file:
# the usual places first, then what the probe found (debug copies, 32-bit
# and CUDA's forward-compatibility copies last or not at all).
vendor_library() {
  local base=libnvidia-opencl.so found
  [ "$mode" = pocl ] && base=libpocl.so
  for f in /usr/local/nvidia/lib64/$base.1 /usr/local/nvidia/lib/$base.1 \
           /usr/lib/x86_64-linux-gnu/$base.1 /usr/lib/x86_64-linux-gnu/$base.2 /usr/lib64/$base.1; do
    [ -e "$f" ] && { echo "$f"; return 0; }
  done
  found=$(grep -E "/$base(\.[0-9.]+)?$" "$OUT/probe.log" 2>/dev/null |
          grep -v -e '/\.debug/' -e '/lib32/' -e '/i386' | sort -t/ -k1,1 | awk '/compat/ {c = c $0 "\n"; next} {print} END {printf "%s", c}' | head -1)
  [ -n "$found" ] && { echo "$found"; return 0; }
  return 1
}

# pick_device: the P:D of the first GPU (--pocl: CPU device) in devices.json.
pick_device() {
  local want=gpu
  [ "$mode" = pocl ] && want=cpu
  awk -v want="$want" -F'"' '/"id":/ {id = $4} /"type":/ && $4 == want {print id; exit}' \
    "$OUT/devices.json"
}

# system_lib SONAME: the path of a shared library the system has, or "".
system_lib() {
  ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n && /x86-64/ {print $NF; exit}'
}

# build_there: cmake against the kit's loader, headers and libcrypto; where
# glibc is older than the kit's libraries need (2.34), against the
# system's libcrypto.so.3 and OpenCL loader instead (the kit's headers
# still serve; the system loader then reads /etc/OpenCL/vendors, so the
# .icd is put there too if none is).
build_there() {
  local build="$root/build-gpu" ocl="$kit/ocl-icd/lib/libOpenCL.so" crypto="$kit/openssl/lib/libcrypto.so" glibc
  command -v cmake >/dev/null || { echo "no cmake"; return 1; }
  glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  if [ "${GPU_CHECK_SYSTEM_LIBS:-0}" = 1 ] ||
     [ "$(printf '%s\n2.34\n' "${glibc:-0}" | sort -V | head -1)" != 2.34 ]; then
    echo "glibc ${glibc:-unknown} (kit needs 2.34), GPU_CHECK_SYSTEM_LIBS=${GPU_CHECK_SYSTEM_LIBS:-0}: using the system's libcrypto and OpenCL loader"
    crypto=$(system_lib libcrypto.so.3)
    ocl=$(system_lib libOpenCL.so.1)
    for f in /usr/local/cuda/lib64/libOpenCL.so.1 /usr/local/cuda/targets/x86_64-linux/lib/libOpenCL.so.1; do
      [ -z "$ocl" ] && [ -e "$f" ] && ocl=$f
    done
    [ -n "$crypto" ] && [ -n "$ocl" ] || { echo "no system libcrypto.so.3 or libOpenCL.so.1"; return 1; }
    if [ ! -e "/etc/OpenCL/vendors/$mode.icd" ] && [ -n "${OCL_ICD_VENDORS:-}" ]; then
      mkdir -p /etc/OpenCL/vendors && cp "$OCL_ICD_VENDORS/$mode.icd" /etc/OpenCL/vendors/
    fi
  fi
  echo "OpenCL loader: $ocl; libcrypto: $crypto"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHB_BUILD_TESTS=OFF \
    -DOpenCL_INCLUDE_DIR="$kit/ocl-icd/include" -DOpenCL_LIBRARY="$ocl" \
    -DOPENSSL_INCLUDE_DIR="$kit/openssl/include" -DOPENSSL_CRYPTO_LIBRARY="$crypto" || return 1
  cmake --build "$build" -j "$(nproc)" --target hashbatch_cli hb_kernel_only hb_throughput || return 1
  mkdir -p "$build/gpu-check-bin"
  for prog in device_check device_bandwidth; do
    cc -std=c11 -O2 "${WARNINGS[@]}" -D_POSIX_C_SOURCE=200809L -I"$root/host/include" \
      -I"$kit/ocl-icd/include" -I"$kit/openssl/include" "$root/bench/$prog.c" \
      "$build/host/libhashbatch.a" "$ocl" "$crypto" -lpthread -lm \
      "-Wl,-rpath,$(dirname "$ocl"):$(dirname "$crypto")" -o "$build/gpu-check-bin/hb_$prog" || return 1
  done
  cp "$build/host/cli/hashbatch" "$build/bench/hb_kernel_only" "$build/bench/hb_throughput" \
     "$build/gpu-check-bin/"
}

# sum_check: `hashbatch sum` on the device against sha1sum, on files of
# many sizes.
sum_check() {
  local dir="$work/sum" i
  mkdir -p "$dir"
  for i in 0 1 55 56 63 64 65 1000 4096 100000 1048577; do
    head -c "$i" /dev/urandom >"$dir/f$i"
  done
  for i in $(seq 1 300); do head -c $((RANDOM * 3)) /dev/urandom >"$dir/r$i"; done
  head -c $((40 << 20)) /dev/urandom >"$dir/big"
  (cd "$dir" && "$bin/hashbatch" sum --backend opencl --device "$spec" --verify off ./*) >"$work/hb.sum" || return 1
  (cd "$dir" && sha1sum ./*) >"$work/ref.sum"
  if cmp -s "$work/hb.sum" "$work/ref.sum"; then
    echo "hashbatch sum == sha1sum on $(wc -l <"$work/ref.sum") files"
  else
    diff "$work/ref.sum" "$work/hb.sum" | head -20
    return 1
  fi
}

# suites: the project's Check suites, on the default device (the GPU
# there: tu_config opens the OpenCL backend with the default spec).
suites() {
  local s rc=0
  for s in test_cavp test_lengths test_collisions test_random; do
    echo "--- $s"
    HASHBATCH_TESTDATA="$kit/testdata" HASHBATCH_MONTE_QUICK=1 CK_TIMEOUT_MULTIPLIER=3 \
      "$bin/$s" 2>&1 | tail -n 5
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
  done
  return $rc
}

# ---------------------------------------------------------------- run
# Steps that are shell functions run through this script again, so that
# `timeout` can bound them: gpu-check.sh --internal FUNCTION (the state
# they need travels in the environment).
if [ "${1:-}" = "--internal" ]; then
  shift
  "$@"
  exit $?
fi
self=(bash "$root/bench/gpu-check.sh" --internal)
mode=nvidia
only=""
for arg in "$@"; do
  case "$arg" in
    --pocl) mode=pocl ;;
    --prebuilt) only=prebuilt ;;
    --build) only=build ;;
    *) die "unknown argument '$arg' (usage: OUT=DIR $0 [--pocl] [--prebuilt|--build], or $0 --prepare)" ;;
  esac
done
[ -n "${OUT:-}" ] || die "set OUT to the folder for results"
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
budget=${GPU_CHECK_BUDGET:-420}
t_start=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export mode OUT work
exec > >(tee -a "$OUT/gpu-check.log") 2>&1

steps_json=""
summary=""
failed_required=0
elapsed() { echo $(($(date +%s) - t_start)); }
left() { echo $((budget - $(elapsed))); }

# record NAME STATUS SECONDS NOTE
record() {
  local note=${4//\"/\'}
  steps_json+="${steps_json:+,}
    {\"name\": \"$1\", \"status\": \"$2\", \"seconds\": $3, \"note\": \"$note\"}"
  summary+=$(printf '%-14s %-8s %5ss  %s' "$1" "$2" "$3" "$4")$'\n'
}

# step NAME TIMEOUT REQUIRED CMD...: runs CMD with a timeout (shortened to
# what is left of the budget) into $OUT/NAME.log; a step that would get
# under 10 s is skipped.
step() {
  local name=$1 limit=$2 required=$3 t0 rc status
  shift 3
  local remaining
  remaining=$(left)
  if [ "$remaining" -lt 10 ]; then
    record "$name" skipped 0 "no time left in the ${budget}s budget"
    [ "$required" = 1 ] && failed_required=1
    return 1
  fi
  [ "$limit" -gt "$remaining" ] && limit=$remaining
  echo "== $name (timeout ${limit}s)"
  t0=$(date +%s)
  timeout --kill-after=5 "$limit" "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  case $rc in
    0) status=ok ;;
    124 | 137) status=timeout ;;
    *) status=failed ;;
  esac
  tail -n 25 "$OUT/$name.log"
  record "$name" "$status" $(($(date +%s) - t0)) "exit $rc; log $name.log"
  [ "$status" = ok ] && return 0
  [ "$required" = 1 ] && failed_required=1
  return 1
}

echo "gpu-check.sh: mode $mode, budget ${budget}s, results in $OUT"
step probe 90 0 "${self[@]}" probe

# OpenCL: a vendors folder of our own with one .icd naming the driver.
bin=""
binaries=none
spec=""
if vendor=$(vendor_library); then
  mkdir -p "$work/vendors"
  echo "$vendor" >"$work/vendors/$mode.icd"
  export OCL_ICD_VENDORS="$work/vendors"
  # the driver's own helpers (compiler libraries) sit beside it
  export LD_LIBRARY_PATH="$(dirname "$vendor")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  record opencl-setup ok 0 "OCL_ICD_VENDORS has $mode.icd -> $vendor"
else
  record opencl-setup failed 0 "no $mode OpenCL library found (see probe.log)"
  failed_required=1
fi

# Binaries: the carried release build first, else a build here.
if [ "$only" != build ] && [ -x "$kit/bin/hashbatch" ] && "$kit/bin/hashbatch" --version >/dev/null 2>&1; then
  bin="$kit/bin"
  export bin
  binaries=prebuilt
  record binaries ok 0 "prebuilt kit: $("$bin/hashbatch" --version)"
elif [ "$only" = prebuilt ]; then
  record binaries failed 0 "prebuilt kit missing or cannot run: $("$kit/bin/hashbatch" --version 2>&1 | head -1)"
  failed_required=1
elif step build 240 1 "${self[@]}" build_there; then
  bin="$root/build-gpu/gpu-check-bin"
  export bin
  binaries=cmake
fi

if [ -n "$bin" ] && [ "$failed_required" = 0 ]; then
  step devices 30 1 "$bin/hashbatch" devices --json
  cp "$OUT/devices.log" "$OUT/devices.json"
  spec=$(pick_device)
  export spec
  if [ -z "$spec" ]; then
    record device failed 0 "hashbatch devices lists no $mode device"
    failed_required=1
  else
    record device ok 0 "$spec"
  fi
fi

if [ -n "$spec" ]; then
  step device_check 120 1 "$bin/hb_device_check" "$spec" "$kit/testdata/cavp" 100000 &&
    grep -v '^hb_device_check' "$OUT/device_check.log" >"$OUT/device_check.json"
  step bandwidth 60 0 "$bin/hb_device_bandwidth" "$spec" 256 7 &&
    cp "$OUT/bandwidth.log" "$OUT/bandwidth.json"
  plot=()
  command -v gnuplot >/dev/null && plot=(--plot "$OUT/bench.png")
  read -r -a bench_args <<<"${GPU_CHECK_BENCH_ARGS:-}"
  step bench 300 1 "$bin/hashbatch" bench --device "$spec" --json-file "$OUT/bench.json" \
    "${plot[@]}" "${bench_args[@]}"
  step kernel_only 60 0 bash -c "'$bin/hb_kernel_only' '$root/kernels/sha1.cl' 64 65536 &&
                                  '$bin/hb_kernel_only' '$root/kernels/sha1.cl' 1 1048576"
  step sum 90 1 "${self[@]}" sum_check
  [ "$binaries" = prebuilt ] && step suites 200 1 "${self[@]}" suites
  if command -v openssl >/dev/null; then
    step openssl_speed 40 0 openssl speed -evp sha1 -multi "$(nproc)" -bytes 4096 -seconds 3
  fi
fi

# Summary: JSON, then the table.
json_or_null() { if [ -s "$1" ]; then cat "$1"; else echo null; fi; }
gpu_line=$(awk '/^--- nvidia-smi/ {getline; getline; print; exit}' "$OUT/probe.log" 2>/dev/null)
{
  echo "{"
  echo "  \"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\", \"mode\": \"$mode\", \"binaries\": \"$binaries\","
  echo "  \"device_spec\": \"$spec\", \"nvidia_smi\": \"${gpu_line//\"/\'}\","
  echo "  \"opencl_icd\": \"${vendor:-}\", \"budget_s\": $budget, \"elapsed_s\": $(elapsed),"
  echo "  \"ok\": $([ "$failed_required" = 0 ] && echo true || echo false),"
  echo "  \"steps\": [$steps_json"
  echo "  ],"
  echo "  \"device_check\": $(json_or_null "$OUT/device_check.json"),"
  echo "  \"bandwidth\": $(json_or_null "$OUT/bandwidth.json"),"
  echo "  \"bench_file\": $([ -s "$OUT/bench.json" ] && echo '"bench.json"' || echo null)"
  echo "}"
} >"$OUT/gpu-check.json"

echo
echo "================ gpu-check summary ($(elapsed)s of ${budget}s; results in $OUT)"
echo "device: ${spec:-none} ${gpu_line}"
printf '%s' "$summary"
if [ -s "$OUT/bench.log" ]; then
  sed -n '/^Throughput by message size:/,/^$/p' "$OUT/bench.log"
  sed -n '/^Crossover:/,$p' "$OUT/bench.log"
fi
[ -s "$OUT/bandwidth.json" ] && cat "$OUT/bandwidth.json"
[ -s "$OUT/kernel_only.log" ] && grep '^kernel only' "$OUT/kernel_only.log"
echo "overall: $([ "$failed_required" = 0 ] && echo OK || echo FAILED)"
[ "$failed_required" = 0 ]
