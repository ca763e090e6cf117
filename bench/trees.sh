#!/usr/bin/env bash
# trees.sh - generates a deterministic directory tree for `hashbatch dedup`
# benchmarks: nested folders, sizes from 0 B to 64 MiB spread evenly over
# their logarithm (skewed so the total comes out as asked), a third of the
# files copies of others (some as hard links), near-duplicates (same size,
# or same size and same first 4 KiB, with one byte changed), empty files,
# and the SHA-1 collision pairs made from the repository's vectors
# (tests/vectors/collisions: the SHAttered prefixes with one random suffix
# that makes them as long as the PDFs, SHA-mbles as published; missing
# vectors are an error). HASHBATCH_TESTDATA=DIR reads the vectors from DIR.
#
# Usage: bench/trees.sh DIR [FILES] [TOTAL_BYTES] [SEED]
#   defaults: 30000 files, 3 GiB (3221225472 bytes), seed 1.
# DIR must not exist yet (or be empty). The same arguments give the same
# tree, byte for byte. Prints a line of totals.
set -euo pipefail
dir=${1:?usage: trees.sh DIR [FILES] [TOTAL_BYTES] [SEED]}
files=${2:-30000}
total=${3:-3221225472}
seed=${4:-1}
testdata=${HASHBATCH_TESTDATA:-$(cd "$(dirname "$0")/.." && pwd)/tests/vectors}
mkdir -p "$dir"
if [ -n "$(ls -A "$dir")" ]; then
    echo "trees.sh: $dir is not empty" >&2
    exit 2
fi
exec python3 - "$dir" "$files" "$total" "$seed" "$testdata" <<'PY'
import hashlib, os, random, sys

root, nfiles, total, seed, testdata = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
MAXLOG = 26                      # 64 MiB
rng = random.Random(seed)
POOL = 1 << 27                   # 128 MiB of random bytes, sliced for contents
pool = memoryview(random.Random(seed + 1).randbytes(POOL + (1 << 26) + 1))

n_copy = nfiles // 3             # exact copies (some hard links)
n_near = max(nfiles // 50, 1)    # same size, one byte changed
n_orig = max(nfiles - n_copy - n_near, 1)
u = [rng.random() for _ in range(n_orig)]
tail = [rng.random() < 0.002 for _ in range(n_orig)]   # up to 64 MiB
empty = [rng.random() < 0.01 for _ in range(n_orig)]
offs = [rng.randrange(POOL) for _ in range(n_orig)]
copy_of = [rng.randrange(n_orig) for _ in range(n_copy)]
near_of = [rng.randrange(n_orig) for _ in range(n_near)]
mult = [1] * n_orig
for i in copy_of + near_of:
    mult[i] += 1

def sizes(top):
    """log-uniform below 2**top, the tail log-uniform from there to 64 MiB"""
    out = []
    for x, t, e in zip(u, tail, empty):
        lg = top + (MAXLOG - top) * x if t else top * x
        out.append(0 if e else min(int(2 ** lg), 1 << MAXLOG))
    return out

lo, hi = 0.0, float(MAXLOG)      # bigger top: bigger files
for _ in range(60):
    mid = (lo + hi) / 2
    if sum(s * m for s, m in zip(sizes(mid), mult)) > total:
        hi = mid
    else:
        lo = mid
size = sizes(lo)

# nested folders: 3 levels, 12 x 8 x 4, files spread over all levels
dirs = [""]
for a in range(12):
    dirs.append("d%02d" % a)
    for b in range(8):
        dirs.append("d%02d/s%d" % (a, b))
        for c in range(4):
            dirs.append("d%02d/s%d/t%d" % (a, b, c))
for d in dirs:
    os.makedirs(os.path.join(root, d), exist_ok=True)

def place(name):
    return os.path.join(root, dirs[rng.randrange(len(dirs))], name)

def content(i):
    return pool[offs[i]:offs[i] + size[i]]

paths = []
written = 0
for i in range(n_orig):
    p = place("f%06d.bin" % i)
    with open(p, "wb") as f:
        f.write(content(i))
    paths.append(p)
    written += size[i]
nlinks = 0
for k, i in enumerate(copy_of):
    p = place("c%06d.bin" % k)
    if k % 40 == 0:              # one copy in 40 is a hard link
        os.link(paths[i], p)
        nlinks += 1
        continue
    with open(p, "wb") as f:
        f.write(content(i))
    written += size[i]
for k, i in enumerate(near_of):
    data = bytearray(content(i))
    if data:
        at = len(data) - 1 if k % 2 else 0   # last byte: same 4 KiB prefix
        data[at] ^= 0x5a
    with open(place("n%06d.bin" % k), "wb") as f:
        f.write(data)
    written += len(data)
coll = os.path.join(testdata, "collisions")

def vector(name):
    path = os.path.join(coll, name)
    if not os.path.isfile(path):
        sys.exit("trees.sh: test data missing: %s (tests/vectors/ of the repository; "
                 "HASHBATCH_TESTDATA=DIR reads it from DIR)" % path)
    with open(path, "rb") as f:
        return f.read()

# The pairs collide and differ, or the tree is not what it says it is.
suffix = random.Random(seed + 2).randbytes(422435 - 320)
pairs = [(("shattered-1.pdf", "shattered-2.pdf"),
          [vector("shattered-%d.prefix.bin" % k) + suffix for k in (1, 2)]),
         (("sha-mbles-1.bin", "sha-mbles-2.bin"),
          [vector("sha-mbles-%d.bin" % k) for k in (1, 2)])]
os.makedirs(os.path.join(root, "collisions", "again"))
ncoll = 0
for names, (a, b) in pairs:
    if a == b or hashlib.sha1(a).digest() != hashlib.sha1(b).digest():
        sys.exit("trees.sh: %s and %s do not collide" % names)
    for name, data in zip(names, (a, b)):
        with open(os.path.join(root, "collisions", name), "wb") as f:
            f.write(data)
        ncoll += 1
with open(os.path.join(root, "collisions", "again", "shattered-1.pdf"), "wb") as f:
    f.write(pairs[0][1][0])
print("trees.sh: %s: %d files (%d copies, %d of them hard links, %d near-duplicates, "
      "%d collision files), %d bytes written, body up to 2^%.2f B, largest %d, empty %d"
      % (root, n_orig + n_copy + n_near + ncoll + (1 if ncoll else 0), n_copy, nlinks, n_near,
         ncoll, written, lo, max(size), size.count(0)))
PY
