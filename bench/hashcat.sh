#!/usr/bin/env bash
# hashcat.sh - the SHA-1 kernel against a peer: hashcat's SHA-1 benchmark
# (`hashcat -b -m 100`) on the pocl CPU device beside hashbatch's kernel
# alone (bench/kernel_only.c) on the same device, their ratio, and the
# evidence that pocl compiles the kernel 16 lanes wide with AVX-512 (counts
# of vprold, vpternlogd and zmm registers in the code pocl generated).
#
# Usage: bench/hashcat.sh [BUILD_DIR]      (default: build)
# Env:   HASHCAT_ARGS  hashcat's device choice (default "-D 1": OpenCL CPU
#                      devices, which is pocl here)
#        ROUNDS        rounds of hashcat and the kernel, alternating (3)
# Prints a Markdown section on stdout; exits 1 if a step fails.
#
# hashcat's figure is candidate passwords per second: one 64-byte block
# each, with hashcat's own shortcuts for mode 100 (its optimized kernel,
# -O, which benchmark mode uses). The kernel-only figure is whole blocks
# per second from memory. Neither includes packing or transfers.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$root/build"}
kernel_only="$build/bench/hb_kernel_only"
hashbatch="$build/host/cli/hashbatch"
rounds=${ROUNDS:-3}
read -r -a hashcat_args <<<"${HASHCAT_ARGS:--D 1}"

die() { echo "hashcat.sh: $*" >&2; exit 1; }
[ -x "$kernel_only" ] || die "$kernel_only not built (scripts/build.sh $build)"
[ -x "$hashbatch" ] || die "$hashbatch not built"
command -v hashcat >/dev/null || die "hashcat not installed (Debian: apt-get install hashcat)"
command -v objdump >/dev/null || die "objdump not installed (binutils)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) exit 1; print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

# hashcat_rate: H/s of one `hashcat -b -m 100` (machine-readable line
# DEVICE:MODE:...:MS:HASHES_PER_SECOND). Its session files go to $work.
hashcat_rate() {
  local out
  out=$(cd "$work" && timeout 300 hashcat -b -m 100 --machine-readable "${hashcat_args[@]}" \
        --session hb-bench 2>&1) || { echo "$out" >&2; die "hashcat -b -m 100 failed"; }
  echo "$out" | awk -F: '$2 == "100" && NF >= 6 {print $NF; found=1} END {exit !found}' ||
    { echo "$out" >&2; die "no mode-100 line in hashcat's output"; }
}

# kernel_rate BLOCKS MESSAGES: M blocks/s of hb_kernel_only.
kernel_rate() {
  local out
  out=$(timeout 300 "$kernel_only" "$root/kernels/sha1.cl" "$1" "$2" 7) ||
    { echo "$out" >&2; die "hb_kernel_only $1 $2 failed"; }
  echo "$out" | sed -n 's/.* \([0-9.]*\) M blocks\/s.*/\1/p'
}

echo "### hashcat and the kernel alone, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs);" \
     "hashcat $(hashcat --version); load before: $(cut -d' ' -f1-3 /proc/loadavg)."
echo "Device (hashcat -I): $(cd "$work" && hashcat -I "${hashcat_args[@]}" 2>/dev/null |
  awk -F'\\.: ' '/Backend Device ID/ {dev = 1} dev && /^ +Name\.+: / {n = $2} dev && /Driver\.Version/ {print n ", driver " $2; exit}')"
echo
hc=() k1=() k64=()
for ((i = 1; i <= rounds; i++)); do
  hc+=("$(hashcat_rate)")
  k1+=("$(kernel_rate 1 1048576)")
  k64+=("$(kernel_rate 64 65536)")
done
hc_m=$(printf '%s\n' "${hc[@]}" | median)
k1_m=$(printf '%s\n' "${k1[@]}" | median)
k64_m=$(printf '%s\n' "${k64[@]}" | median)
echo "Medians of $rounds rounds, alternating (hashcat, kernel 1 block, kernel 64 blocks):"
echo
echo "| what | command | rate (rounds) |"
echo "| --- | --- | --- |"
awk -v v="$hc_m" -v all="${hc[*]}" -v a="${hashcat_args[*]}" 'BEGIN {
  n = split(all, x, " "); s = ""; for (i = 1; i <= n; i++) s = s sprintf("%s%.1f", i > 1 ? ", " : "", x[i] / 1e6)
  printf "| hashcat SHA-1 (mode 100) | `hashcat -b -m 100 --machine-readable %s` | **%.1f MH/s** (%s) |\n", a, v / 1e6, s }'
echo "| hashbatch kernel, 1-block messages | \`hb_kernel_only kernels/sha1.cl 1 1048576\` | **${k1_m} M blocks/s** (${k1[*]}) |"
echo "| hashbatch kernel, 4 KiB messages | \`hb_kernel_only kernels/sha1.cl 64 65536\` | **${k64_m} M blocks/s** (${k64[*]}) |"
echo
awk -v h="$hc_m" -v a="$k1_m" -v b="$k64_m" 'BEGIN {
  printf "Kernel / hashcat: **%.2f** (one-block messages), **%.2f** (4 KiB messages: 64 blocks each).\n", a * 1e6 / h, b * 1e6 / h }'
echo "Load after: $(cut -d' ' -f1-3 /proc/loadavg)."
echo

# Vectorisation: pocl keeps one shared object per kernel build in its cache.
cache="$work/pocl-cache"
mkdir -p "$cache"
POCL_CACHE_DIR="$cache" "$kernel_only" "$root/kernels/sha1.cl" 1 65536 1 >/dev/null ||
  die "hb_kernel_only (for the pocl cache) failed"
POCL_CACHE_DIR="$cache" "$hashbatch" bench --backend opencl --sizes 4K,64 --batches none \
  --runs 1 --min-time 0.01 >/dev/null || die "hashbatch bench (for the pocl cache) failed"
echo "Code pocl generated (\`POCL_CACHE_DIR=DIR\`, then \`objdump -d\` of each kernel's .so;"
echo "counts per function: the kernel and its work-group wrappers):"
echo
echo "| kernel .so (pocl build) | function | instructions | vprold | vpternlogd | using zmm |"
echo "| --- | --- | --- | --- | --- | --- |"
found=0
while IFS= read -r so; do
  found=1
  what="$(basename "$so") ($(basename "$(dirname "$so")"), program $(basename "$(dirname "$(dirname "$(dirname "$so")")")" | cut -c1-8))"
  objdump -d --no-show-raw-insn "$so" | awk -v what="$what" '
    /^[0-9a-f]+ <.*>:$/ { fn = $2; gsub(/[<>:]/, "", fn); next }
    /^ *[0-9a-f]+:\t/ && fn ~ /^_pocl_kernel_/ {
      n[fn]++; if (/vprold/) r[fn]++; if (/vpternlogd/) t[fn]++; if (/zmm/) z[fn]++
    }
    END { for (f in n) printf "| %s | `%s` | %d | %d | %d | %d |\n", what, f, n[f], r[f], t[f], z[f] }' | sort
done < <(find "$cache" -name '*.so' | sort)
[ "$found" = 1 ] || die "no .so in pocl's cache $cache: POCL_CACHE_DIR not honoured?"
echo
echo "vprold is AVX-512's rotate (ROTL of 16 lanes at once), vpternlogd its"
echo "three-input logic (the Ch, Parity and Maj functions in one instruction),"
echo "and zmm the 512-bit registers: 16 uint lanes per instruction. SHA-1 has"
echo "80 rounds x 2 rotates (ROTL 5 and ROTL 30) + 64 schedule rotates (ROTL 1)"
echo "= 224 rotates per block: a count of 224 vprold means every rotate of the"
echo "algorithm is one 16-lane instruction."
