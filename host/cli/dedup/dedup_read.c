/*
 * dedup_read.c - reading files for `hashbatch dedup`: the first bytes or
 * the whole of many files on a few threads, and streaming byte-for-byte
 * comparison of two files.
 *
 * Every open is made beneath the root the walk started from, with no
 * symbolic link followed on the way (places.c; as written with -L), and
 * checks that the path still names the inode the walk saw,
 * with the same size and modification time, and every read checks the
 * byte count against that size (files in /proc or /sys may claim sizes
 * their contents do not have) and the stat again afterwards. Nothing is
 * memory-mapped, so a file truncated meanwhile is an error, not a SIGBUS.
 *
 * The files of one dd_read_all call that lie on rotational disks are
 * first tried without waiting for I/O (preadv2 with RWF_NOWAIT, Linux >=
 * 4.14 for buffered reads; from 5.8 it starts no I/O either): a file the
 * page cache holds whole is done there and then, by any of several
 * threads, so a warm rescan is not held to one reader per disk (and many
 * virtual disks claim to rotate). What the cache does not hold whole, and
 * every file on a solid-state disk, is then read in the plan's order
 * (dedup_iothreads.c: physical order and one reader per rotational disk,
 * several readers on solid-state); a kernel without RWF_NOWAIT gets that
 * plan for everything. Each result goes in its item's own slot; files
 * read whole through the plan get readahead hints (sequential, and the
 * whole file asked for at once; never in the cache pass, where WILLNEED
 * would start the very I/O it avoids); never DONTNEED, which would throw
 * away pages another stage or the next run may want.
 *
 * Owns: open/read/fstat of regular files and the causes of their
 * failures. Must not: print, or change any file (opened read-only).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "compare.h"
#include "dedup.h"
#include "dedup_iothreads.h"

static const char changed_cause[] = "changed during the scan (size, modification time or file "
                                    "differ from what the walk saw): left out";

/* same_as_walk: does st still describe inode k as the walk saw it? */
static int same_as_walk(const dd_inode *k, const struct stat *st)
{
    return S_ISREG(st->st_mode) && st->st_dev == k->dev && st->st_ino == k->ino &&
           (uint64_t)st->st_size == k->size && (int64_t)st->st_mtim.tv_sec == k->mtime_sec &&
           st->st_mtim.tv_nsec == k->mtime_nsec;
}

/* errno_cause: strerror(e), copied into buf. */
static const char *errno_cause(int e, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", strerror(e));
    return buf;
}

/* open_checked: opens inode k by its first path, read-only and without
 * blocking, and checks it is still the walk's file. Returns the
 * descriptor, or -1 with *cause set. */
static int open_checked(const dd_run *r, uint32_t k, const char **cause, char *buf, size_t cap)
{
    int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    if (!r->o->follow_symlinks)
        flags |= O_NOFOLLOW;
    int fd = dd_open_inode(r, k, flags);
    if (fd < 0) {
        int e = errno;
        *cause = e == ELOOP || e == ENOENT || e == EXDEV || e == ESTALE
                     ? changed_cause
                     : errno_cause(e, buf, cap);
        if (e == ENOENT)
            *cause = "vanished during the scan: left out";
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !same_as_walk(&r->inodes[k], &st)) {
        close(fd);
        *cause = changed_cause;
        return -1;
    }
    return fd;
}

/* hint_whole: tells the kernel that fd's first n bytes are read now, in
 * one go: read ahead the whole of them at once (deep requests a disk can
 * merge), not window by window. Hints only: failures change nothing. */
static void hint_whole(int fd, size_t n)
{
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    (void)posix_fadvise(fd, 0, (off_t)n, POSIX_FADV_WILLNEED);
}

/* judge: sets it->cause from a read of inode it->inode on fd: got bytes
 * of want (-1: failed, errno set), more the bytes found past them when
 * read whole; then, read whole, the fstat against the walk's. */
static void judge(const dd_run *r, dd_read_item *it, int fd, ssize_t got, ssize_t more)
{
    struct stat st;
    if (more < 0)
        got = -1;
    if (got < 0) {
        it->cause = errno_cause(errno, it->cause_buf, sizeof it->cause_buf);
    } else if ((size_t)got < it->want) {
        snprintf(it->cause_buf, sizeof it->cause_buf,
                 "holds fewer bytes (%zd) than its size (%llu): it changed during the scan, "
                 "or its file system reports a wrong size; left out",
                 got, (unsigned long long)r->inodes[it->inode].size);
        it->cause = it->cause_buf;
    } else if (more > 0) {
        snprintf(it->cause_buf, sizeof it->cause_buf,
                 "holds more bytes than its size (%llu): it changed during the scan, or its "
                 "file system reports a wrong size; left out",
                 (unsigned long long)r->inodes[it->inode].size);
        it->cause = it->cause_buf;
    } else if (it->whole && (fstat(fd, &st) != 0 || !same_as_walk(&r->inodes[it->inode], &st))) {
        /* (a prefix alone decides nothing: a file changed meanwhile is
         * caught when it is read whole, or re-checked before it is
         * reported) */
        it->cause = changed_cause;
    }
}

/* read_one: performs one item, waiting for the disk as needed. */
static void read_one(const dd_run *r, dd_read_item *it)
{
    it->cause = NULL;
    int fd = open_checked(r, it->inode, &it->cause, it->cause_buf, sizeof it->cause_buf);
    if (fd < 0)
        return;
    if (it->whole && it->want > DD_PREFIX_BYTES)
        hint_whole(fd, it->want); /* a prefix read needs no hint */
    ssize_t got = cmp_read_full(fd, it->buf, it->want, -1);
    unsigned char extra;
    ssize_t more = 0;
    if (got >= 0 && (size_t)got == it->want && it->whole)
        more = cmp_read_full(fd, &extra, 1, -1);
    judge(r, it, fd, got, more);
    close(fd);
}

/* Outcomes of an item tried from the page cache. */
enum { TRY_DONE = 1, TRY_UNCACHED, TRY_NO_NOWAIT };

/* read_nowait: reads up to n bytes at offset off from the page cache
 * only (EINTR retried; a short count read on until the end of the file).
 * Returns the count, or -1 with errno set: EAGAIN when some of them are
 * not in the cache. */
static ssize_t read_nowait(int fd, unsigned char *buf, size_t n, off_t off)
{
#ifdef RWF_NOWAIT
    return cmp_read_full_flags(fd, buf, n, off, RWF_NOWAIT);
#else
    return cmp_read_full_flags(fd, buf, n, off, 0); /* ENOSYS */
#endif
}

/* nowait_missing: does error e of read_nowait say that RWF_NOWAIT cannot
 * be used here (the kernel lacks it: ENOSYS, EINVAL; this file system:
 * EOPNOTSUPP)? Kernel-wide ones turn the cache pass off. */
static int nowait_missing(int e)
{
    if (e == ENOSYS || e == EINVAL)
        dd_io_nowait_missing();
    return e == ENOSYS || e == EINVAL || e == EOPNOTSUPP;
}

/* try_cached: performs item it when the page cache holds all it reads
 * (TRY_DONE, also when it failed for a reason of its own: vanished,
 * changed, a wrong size); else TRY_UNCACHED or TRY_NO_NOWAIT, it->cause
 * left NULL, for the ordered readers. */
static int try_cached(const dd_run *r, dd_read_item *it)
{
    it->cause = NULL;
    int fd = open_checked(r, it->inode, &it->cause, it->cause_buf, sizeof it->cause_buf);
    if (fd < 0)
        return TRY_DONE;
    ssize_t got = read_nowait(fd, it->buf, it->want, 0);
    unsigned char extra;
    ssize_t more = 0;
    if (got >= 0 && (size_t)got == it->want && it->whole)
        more = read_nowait(fd, &extra, 1, (off_t)it->want);
    int e = errno;
    if (got < 0 || more < 0) {
        if (e == EAGAIN || nowait_missing(e)) {
            close(fd);
            return e == EAGAIN ? TRY_UNCACHED : TRY_NO_NOWAIT;
        }
    }
    errno = e;
    judge(r, it, fd, got, more);
    close(fd);
    return TRY_DONE;
}

/* One share of a call: one device's items in read order, or the items
 * of the cache pass. */
typedef struct {
    const dd_run *r;
    dd_read_item *items;
    const uint32_t *order; /* item indices, order[lo .. hi) */
    size_t lo, hi;
    uint8_t *tried; /* the cache pass: try_cached's outcomes, by position; else NULL */
    atomic_size_t next;
    unsigned started; /* threads started on it */
} read_pool;

/* reader: takes the pool's items, in order, until none is left. */
static void *reader(void *arg)
{
    read_pool *p = arg;
    for (;;) {
        size_t i = p->lo + atomic_fetch_add(&p->next, 1);
        if (i >= p->hi)
            break;
        if (p->tried != NULL)
            p->tried[i] = (uint8_t)try_cached(p->r, &p->items[p->order[i]]);
        else
            read_one(p->r, &p->items[p->order[i]]);
    }
    return NULL;
}

/* read_plain: reads the n items items[idx[..]] in that order on this
 * thread (the plan could not be made: no memory). */
static void read_plain(const dd_run *r, dd_read_item *items, const uint32_t *idx, size_t n)
{
    for (size_t i = 0; i < n; i++)
        read_one(r, &items[idx != NULL ? idx[i] : i]);
}

/* run_pools: reads every pool s of npools, each on readers[s] threads
 * (started here; this thread reads the first pool, then any pool no
 * thread could be started for, so every item is read once whatever
 * pthread_create does). */
static void run_pools(read_pool *pools, size_t npools, const unsigned *readers, pthread_t *th,
                      size_t cap)
{
    size_t started = 0;
    for (size_t s = 0; s < npools; s++)
        for (unsigned t = s == 0; t < readers[s] && started < cap; t++)
            if (pthread_create(&th[started], NULL, reader, &pools[s]) == 0) {
                started++;
                pools[s].started++;
            }
    for (size_t s = 0; s < npools; s++)
        if (s == 0 || pools[s].started == 0)
            reader(&pools[s]);
    for (size_t t = 0; t < started; t++)
        pthread_join(th[t], NULL);
}

/* read_planned: reads items[idx[0..n)] (idx NULL: the first n) as the
 * plan says, on nthreads readers per solid-state device. */
static void read_planned(const dd_run *r, dd_read_item *items, size_t nitems, const uint32_t *idx,
                         size_t n, unsigned nthreads)
{
    dd_io_plan plan;
    if (dd_io_plan_make(r, items, nitems, idx, n, nthreads, &plan) != 0) {
        read_plain(r, items, idx, n);
        return;
    }
    if (n == 0)
        return;
    dd_io_plan_trace(r, items, &plan);
    size_t nthr = 0;
    for (size_t s = 0; s < plan.nseg; s++)
        nthr += plan.seg[s].readers;
    read_pool *pools = calloc(plan.nseg, sizeof *pools);
    unsigned *readers = calloc(plan.nseg, sizeof *readers);
    pthread_t *th = malloc((nthr ? nthr : 1) * sizeof *th);
    if (pools == NULL || readers == NULL || th == NULL) {
        read_plain(r, items, plan.order, n);
    } else {
        for (size_t s = 0; s < plan.nseg; s++) {
            const dd_io_segment *g = &plan.seg[s];
            pools[s] = (read_pool){r, items, plan.order, g->lo, g->hi, NULL, 0, 0};
            readers[s] = g->readers > g->hi - g->lo ? (unsigned)(g->hi - g->lo) : g->readers;
        }
        run_pools(pools, plan.nseg, readers, th, nthr);
    }
    free(pools);
    free(readers);
    free(th);
    dd_io_plan_free(&plan);
}

/* cache_pass: tries items[cand[0..m)] from the page cache on up to
 * nthreads threads; tried[i] gets each one's outcome. */
static void cache_pass(const dd_run *r, dd_read_item *items, const uint32_t *cand, size_t m,
                       uint8_t *tried, unsigned nthreads)
{
    size_t bytes = 0;
    for (size_t i = 0; i < m && bytes < ((size_t)4 << 20); i++)
        bytes += items[cand[i]].want;
    unsigned t = dd_io_cache_readers(m, bytes, nthreads);
    if (t > m)
        t = (unsigned)m;
    pthread_t *th = t > 1 ? malloc((t - 1) * sizeof *th) : NULL;
    read_pool pool = {r, items, cand, 0, m, tried, 0, 0};
    run_pools(&pool, 1, &t, th, th != NULL ? t - 1 : 0);
    free(th);
}

/* split_candidates: fills cand with the items to try from the cache
 * first and rest with the others; returns how many candidates. */
static size_t split_candidates(const dd_run *r, const dd_read_item *items, size_t n, uint32_t *cand,
                               uint32_t *rest, size_t *nrest)
{
    size_t m = 0;
    *nrest = 0;
    for (size_t i = 0; i < n; i++) {
        if (dd_io_cache_try(r, &items[i]))
            cand[m++] = (uint32_t)i;
        else
            rest[(*nrest)++] = (uint32_t)i;
    }
    return m;
}

void dd_read_all(const dd_run *r, dd_read_item *items, size_t n, unsigned nthreads)
{
    if (n == 0)
        return;
    uint32_t *cand = malloc(n * sizeof *cand), *rest = malloc(n * sizeof *rest);
    uint8_t *tried = malloc(n);
    size_t m = 0, nrest = 0;
    if (cand != NULL && rest != NULL && tried != NULL)
        m = split_candidates(r, items, n, cand, rest, &nrest);
    if (m == 0) { /* nothing to try from the cache (or no memory to) */
        free(cand);
        free(rest);
        free(tried);
        read_planned(r, items, n, NULL, n, nthreads);
        return;
    }
    cache_pass(r, items, cand, m, tried, nthreads);
    uint64_t served = 0;
    for (size_t i = 0; i < m; i++) {
        if (tried[i] != TRY_DONE)
            rest[nrest++] = cand[i];
        else
            served += items[cand[i]].cause == NULL;
    }
    dd_io_cache_count(m, served);
    read_planned(r, items, n, rest, nrest, nthreads);
    free(cand);
    free(rest);
    free(tried);
}

int dd_files_equal(const dd_run *r, uint32_t a, uint32_t b, uint32_t *bad, const char **cause,
                   char *buf, size_t cap, int *prefix_differs)
{
    if (prefix_differs != NULL)
        *prefix_differs = 0;
    *bad = a;
    int fa = open_checked(r, a, cause, buf, cap);
    if (fa < 0)
        return -1;
    *bad = b;
    int fb = open_checked(r, b, cause, buf, cap);
    if (fb < 0) {
        close(fa);
        return -1;
    }
    (void)posix_fadvise(fa, 0, 0, POSIX_FADV_SEQUENTIAL); /* hints only */
    (void)posix_fadvise(fb, 0, 0, POSIX_FADV_SEQUENTIAL);
    cmp_detail d;
    int result = -1;
    switch (cmp_files(fa, fb, r->inodes[a].size, &d)) {
    case CMP_EQUAL:
        result = 1;
        break;
    case CMP_DIFFER:
        if (prefix_differs != NULL)
            *prefix_differs = d.first_diff < DD_PREFIX_BYTES;
        result = 0;
        break;
    case CMP_LENGTH:
        *bad = d.side ? b : a;
        *cause = changed_cause; /* shorter or longer than its size */
        break;
    case CMP_ERROR:
        *bad = d.side ? b : a;
        *cause = errno_cause(d.err, buf, cap);
        break;
    }
    close(fa);
    close(fb);
    return result;
}
