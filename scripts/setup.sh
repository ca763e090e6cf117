#!/usr/bin/env bash
# setup.sh - installs what hashbatch needs on Debian 12, only what is missing.
# Idempotent: a second run installs nothing and does not touch the network.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git python3
  pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo
  libssl-dev openssl check
  coreutils util-linux
  ruby ruby-dev ruby-minitest rake ruby-bundler ruby-async
  jdupes gnuplot-nox
  libsqlite3-dev sqlite3 xfsprogs
  clang-14 llvm-14 libclc-14 oclgrind
)
# util-linux: setpriv (the permission cases run as nobody when CI is root),
# mount and unshare (read-only and tmpfs mounts); gnuplot-nox: bench --plot
# (cli_bench_plot); xfsprogs: reflink-capable loop images; clang-14,
# llvm-14, libclc-14: the kernels compiled for NVIDIA GPUs
# (tests/check_nvptx.sh, which also needs CUDA's ptxas, not in Debian);
# oclgrind: the GPU shape on a simulated GPU (tests/check_oclgrind.sh).
# Peers the benchmarks compare against; tests need only jdupes.
if [[ "${HB_SETUP_BENCH:-0}" == 1 ]]; then
  packages+=(rdfind rmlint fdupes hashdeep hashcat hyperfine ruby-benchmark-ips)
fi
if [[ "${HB_SETUP_SANITIZERS:-0}" == 1 ]]; then
  packages+=(clang libclang-rt-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all packages present"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "setup: missing packages: ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
