#!/usr/bin/env bash
# run.sh - the main job on the default route: installs what is missing,
# builds, lists the devices, then hashes every file under a folder
# (default /usr/lib) with `hashbatch sum` (every backend, the scheduler
# choosing) and checks the result against sha1sum, line for line.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-/usr/lib}
bash "$root/scripts/setup.sh" >/dev/null
bash "$root/scripts/build.sh" "$root/build" >/dev/null
hb="$root/build/host/cli/hashbatch"

"$hb" devices
echo
list=$(mktemp)
ours=$(mktemp)
theirs=$(mktemp)
trap 'rm -f "$list" "$ours" "$theirs"' EXIT
find "$dir" -xdev -type f -readable -print0 2>/dev/null | head -z -n 20000 > "$list" || true  # head stops find early
files=$(tr -cd '\0' < "$list" | wc -c)
bytes=$(xargs -0 -r stat -c %s < "$list" | awk '{s+=$1} END {printf "%.0f", s}')
start=$(date +%s.%N)
xargs -0 -r "$hb" sum < "$list" > "$ours"
end=$(date +%s.%N)
xargs -0 -r sha1sum < "$list" > "$theirs"
seconds=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.2f", b - a}')
echo "hashbatch sum: $files files, $bytes bytes under $dir in $seconds s"
if cmp -s "$ours" "$theirs"; then
  echo "identical to sha1sum: yes ($(wc -l < "$ours") lines)"
else
  echo "identical to sha1sum: NO" >&2
  diff "$ours" "$theirs" | head >&2
  exit 1
fi
