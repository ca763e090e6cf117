/*
 * dedup_iothreads.c - the read order and the reader threads of each
 * dd_read_all call of `hashbatch dedup`.
 *
 * On a rotational disk a seek costs milliseconds, so what must come from
 * it is read by one thread, in the order of the files' first extents on
 * the disk (disk_order.c): one open and one FIEMAP ioctl per file, some
 * 3 us on top of the open's, repaid by a single seek saved per thousand
 * files. But a file already in the page cache costs no seek, and many
 * disks that say they rotate do not (virtio and other virtual disks
 * often report rotational=1): so files on a rotational disk are first
 * tried without waiting (dd_read_all's cache pass, RWF_NOWAIT), by as
 * many threads as a solid-state disk gets, and only those the cache does
 * not hold whole are planned here, FIEMAP asked for those alone. On a
 * solid-state disk (or one whose kind is unknown) the order does not
 * matter, and FIEMAP on every file would cost a warm scan of 30,000 files
 * a quarter of a second: it is skipped there, files go in inode order
 * (free: the walk has the numbers), read by the caller's number of
 * threads (dd_read_threads). `--io-threads N` overrides the number,
 * across all devices, and turns the cache pass off (N readers read all).
 *
 * Owns: the plan (order and segments), which items the cache pass tries
 * and on how many threads, the counters for `dedup -v`, and the
 * read-order trace (a testing aid). Must not: read contents, or print
 * anything but that trace.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "dedup_iothreads.h"
#include "disk_order.h"

#define SMALL_FILES 64                /* fewer files ... */
#define SMALL_BYTES ((size_t)4 << 20) /* ... and fewer bytes: one thread is enough */
#define NO_FIEMAP_DEVS 8              /* devices remembered without FIEMAP, per call */

/* What the reads of this process did (one dedup per process). */
static atomic_uint_fast64_t n_physical, n_rot_inode, n_ssd_inode, n_calls;
static atomic_uint_fast64_t n_cached, n_tried;
static atomic_uint max_rot_readers, max_ssd_readers, explicit_readers, max_cache_readers;
static atomic_int nowait_off; /* the kernel has no RWF_NOWAIT */

/* raise_max: *m = max(*m, v). */
static void raise_max(atomic_uint *m, unsigned v)
{
    unsigned cur = atomic_load(m);
    while (v > cur && !atomic_compare_exchange_weak(m, &cur, v))
        ;
}

/* locate: places key k (item of inode `inode`) by its first extent. *nofs
 * lists devices found without FIEMAP in this call. */
static void locate(const dd_run *r, uint32_t inode, disk_key *k, dev_t *nofs, size_t *nnofs)
{
    for (size_t i = 0; i < *nnofs; i++)
        if (nofs[i] == (dev_t)k->dev)
            return;
    int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    if (!r->o->follow_symlinks)
        flags |= O_NOFOLLOW;
    int fd = dd_open_inode(r, inode, flags);
    if (fd < 0)
        return; /* the reader reports it */
    int e = disk_first_extent(fd, &k->pos);
    close(fd);
    if (e == 0)
        k->located = 1;
    else if (disk_no_fiemap(e) && *nnofs < NO_FIEMAP_DEVS)
        nofs[(*nnofs)++] = (dev_t)k->dev;
}

/* item_at: the item index of plan position i (idx NULL: i itself). */
static uint32_t item_at(const uint32_t *idx, size_t i)
{
    return idx != NULL ? idx[i] : (uint32_t)i;
}

/* make_keys: one key per item (slot: the item's index), located when on
 * a rotational disk; rot[slot] its device's kind. */
static void make_keys(const dd_run *r, const dd_read_item *items, const uint32_t *idx, size_t n,
                      disk_key *keys, uint8_t *rot)
{
    dev_t nofs[NO_FIEMAP_DEVS];
    size_t nnofs = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t s = item_at(idx, i);
        const dd_inode *k = &r->inodes[items[s].inode];
        memset(&keys[i], 0, sizeof keys[i]);
        keys[i].dev = (uint64_t)k->dev;
        keys[i].ino = (uint64_t)k->ino;
        keys[i].slot = s;
        rot[s] = (uint8_t)disk_is_rotational(k->dev);
        if (rot[s])
            locate(r, items[s].inode, &keys[i], nofs, &nnofs);
        atomic_fetch_add(keys[i].located ? &n_physical : rot[s] ? &n_rot_inode : &n_ssd_inode, 1);
    }
}

/* readers_for: the threads of a segment of m items (bytes: their wants,
 * counted up to SMALL_BYTES). */
static unsigned readers_for(int rotational, size_t m, size_t bytes, unsigned ssd_readers)
{
    unsigned t = rotational ? 1u : ssd_readers;
    if (m < SMALL_FILES && bytes < SMALL_BYTES)
        t = 1; /* not worth a thread */
    return t == 0 ? 1 : t;
}

/* make_segments: p->seg from the sorted keys: one per device, or one in
 * all under --io-threads. Returns 0 or ENOMEM. */
static int make_segments(const dd_run *r, const dd_read_item *items, const disk_key *keys,
                         const uint8_t *rot, size_t n, unsigned ssd_readers, dd_io_plan *p)
{
    size_t nseg = 1;
    for (size_t i = 1; i < n && r->o->io_threads == 0; i++)
        nseg += keys[i].dev != keys[i - 1].dev;
    p->seg = calloc(nseg, sizeof *p->seg);
    if (p->seg == NULL)
        return ENOMEM;
    if (r->o->io_threads != 0) {
        p->seg[0] = (dd_io_segment){0, n, r->o->io_threads, rot[keys[0].slot]};
        p->nseg = 1;
        atomic_store(&explicit_readers, r->o->io_threads);
        return 0;
    }
    for (size_t i = 0; i < n;) {
        size_t j = i + 1, bytes = items[keys[i].slot].want;
        while (j < n && keys[j].dev == keys[i].dev) {
            if (bytes < SMALL_BYTES)
                bytes += items[keys[j].slot].want;
            j++;
        }
        int rotational = rot[keys[i].slot];
        unsigned t = readers_for(rotational, j - i, bytes, ssd_readers);
        raise_max(rotational ? &max_rot_readers : &max_ssd_readers, t);
        p->seg[p->nseg++] = (dd_io_segment){i, j, t, rotational};
        i = j;
    }
    return 0;
}

int dd_io_plan_make(const dd_run *r, const dd_read_item *items, size_t nitems, const uint32_t *idx,
                    size_t n, unsigned ssd_readers, dd_io_plan *p)
{
    memset(p, 0, sizeof *p);
    atomic_fetch_add(&n_calls, 1);
    if (n == 0)
        return 0;
    disk_key *keys = malloc(n * sizeof *keys);
    uint8_t *rot = malloc(nitems ? nitems : 1);
    p->order = malloc(n * sizeof *p->order);
    int rc = ENOMEM;
    if (keys != NULL && rot != NULL && p->order != NULL) {
        make_keys(r, items, idx, n, keys, rot);
        disk_order_sort(keys, n);
        for (size_t i = 0; i < n; i++)
            p->order[i] = keys[i].slot;
        rc = make_segments(r, items, keys, rot, n, ssd_readers, p);
    }
    free(keys);
    free(rot);
    if (rc != 0)
        dd_io_plan_free(p);
    return rc;
}

void dd_io_plan_free(dd_io_plan *p)
{
    free(p->order);
    free(p->seg);
    memset(p, 0, sizeof *p);
}

void dd_io_plan_trace(const dd_run *r, const dd_read_item *items, const dd_io_plan *p)
{
    const char *v = getenv("HASHBATCH_DEBUG_READ_ORDER");
    if (v == NULL || v[0] == '\0' || p->order == NULL)
        return;
    uint64_t call = atomic_load(&n_calls);
    size_t n = p->nseg ? p->seg[p->nseg - 1].hi : 0;
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%s: debug: read order %" PRIu64 " %zu %s\n", CLI_PROGRAM, call, i,
                dd_inode_name(r, items[p->order[i]].inode));
}

int dd_io_cache_try(const dd_run *r, const dd_read_item *it)
{
    return r->o->io_threads == 0 && !atomic_load(&nowait_off) &&
           disk_is_rotational(r->inodes[it->inode].dev);
}

unsigned dd_io_cache_readers(size_t m, size_t bytes, unsigned ssd_readers)
{
    unsigned t = readers_for(0, m, bytes, ssd_readers);
    raise_max(&max_cache_readers, t);
    return t;
}

void dd_io_cache_count(uint64_t tried, uint64_t served)
{
    atomic_fetch_add(&n_tried, tried);
    atomic_fetch_add(&n_cached, served);
}

void dd_io_nowait_missing(void)
{
    atomic_store(&nowait_off, 1);
}

/* describe_readers: the reader threads used, in buf. */
static void describe_readers(char *buf, size_t cap)
{
    unsigned ex = atomic_load(&explicit_readers), rot = atomic_load(&max_rot_readers);
    if (ex != 0)
        snprintf(buf, cap, "%u reader thread%s (--io-threads)", ex, ex == 1 ? "" : "s");
    else
        snprintf(buf, cap,
                 "up to %u reader thread%s per rotational disk, up to %u on solid-state, "
                 "up to %u for the page cache",
                 rot ? rot : 1u, rot > 1 ? "s" : "", atomic_load(&max_ssd_readers),
                 atomic_load(&max_cache_readers));
}

void dd_read_describe(char *buf, size_t cap)
{
    uint64_t ph = atomic_load(&n_physical), ri = atomic_load(&n_rot_inode),
             si = atomic_load(&n_ssd_inode), ca = atomic_load(&n_cached),
             tr = atomic_load(&n_tried);
    char readers[160], cache[96];
    describe_readers(readers, sizeof readers);
    if (atomic_load(&nowait_off))
        snprintf(cache, sizeof cache, "not supported: none tried");
    else
        snprintf(cache, sizeof cache, "%" PRIu64 " tried on rotational disks", tr);
    snprintf(buf, cap,
             "%" PRIu64 " file reads from the page cache without waiting (RWF_NOWAIT; %s), %" PRIu64
             " through the ordered readers (%" PRIu64 " in physical order by FIEMAP, %" PRIu64
             " in inode order, no placed extent), %" PRIu64
             " on solid-state or unknown disks (inode order, FIEMAP skipped); %s",
             ca, cache, ph + ri, ph, ri, si, readers);
}
