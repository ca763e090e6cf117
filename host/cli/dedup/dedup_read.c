/*
 * dedup_read.c - reading files for `hashbatch dedup`: the first bytes or
 * the whole of many files on a few threads, and streaming byte-for-byte
 * comparison of two files.
 *
 * Every open checks that the path still names the inode the walk saw,
 * with the same size and modification time, and every read checks the
 * byte count against that size (files in /proc or /sys may claim sizes
 * their contents do not have) and the stat again afterwards. Nothing is
 * memory-mapped, so a file truncated meanwhile is an error, not a SIGBUS.
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
#include <unistd.h>

#include "dedup.h"

#define COMPARE_CHUNK ((size_t)1 << 20)
#define MAX_THREADS 8

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
    int fd = open(dd_inode_name(r, k), flags);
    if (fd < 0) {
        int e = errno;
        *cause = e == ELOOP || e == ENOENT ? changed_cause : errno_cause(e, buf, cap);
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

/* read_full: reads up to n bytes (EINTR and short reads retried until the
 * end of the file). Returns the count, or -1 with errno set. */
static ssize_t read_full(int fd, unsigned char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        size_t ask = n - got > (size_t)SSIZE_MAX ? (size_t)SSIZE_MAX : n - got;
        ssize_t k = read(fd, buf + got, ask);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

/* read_one: performs one item. */
static void read_one(const dd_run *r, dd_read_item *it)
{
    it->cause = NULL;
    int fd = open_checked(r, it->inode, &it->cause, it->cause_buf, sizeof it->cause_buf);
    if (fd < 0)
        return;
    ssize_t got = read_full(fd, it->buf, it->want);
    unsigned char extra;
    struct stat st;
    ssize_t more = 0;
    if (got >= 0 && (size_t)got == it->want && it->whole)
        more = read_full(fd, &extra, 1);
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
    close(fd);
}

typedef struct {
    const dd_run *r;
    dd_read_item *items;
    size_t n;
    atomic_size_t next;
} read_pool;

/* reader: takes items until none is left. */
static void *reader(void *arg)
{
    read_pool *p = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n)
            break;
        read_one(p->r, &p->items[i]);
    }
    return NULL;
}

void dd_read_all(const dd_run *r, dd_read_item *items, size_t n, unsigned nthreads)
{
    read_pool p = {r, items, n, 0};
    pthread_t th[MAX_THREADS];
    unsigned started = 0;
    if (nthreads > MAX_THREADS)
        nthreads = MAX_THREADS;
    size_t bytes = 0;
    for (size_t i = 0; i < n && bytes < ((size_t)4 << 20); i++)
        bytes += items[i].want;
    if (n < 2 || (n < 64 && bytes < ((size_t)4 << 20)))
        nthreads = 1; /* not worth a thread */
    if (nthreads > n)
        nthreads = (unsigned)n;
    for (unsigned t = 1; t < nthreads; t++)
        if (pthread_create(&th[started], NULL, reader, &p) == 0)
            started++;
    reader(&p);
    for (unsigned t = 0; t < started; t++)
        pthread_join(th[t], NULL);
}

int dd_files_equal(const dd_run *r, uint32_t a, uint32_t b, uint32_t *bad, const char **cause,
                   char *buf, size_t cap)
{
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
    /* The two buffers live as long as the program: fresh ones for every
     * pair would cost a page fault per 4 KiB each time. Only the calling
     * thread of the stages compares files, one pair at a time. */
    static unsigned char *ba, *bb;
    if (ba == NULL)
        ba = malloc(COMPARE_CHUNK);
    if (bb == NULL)
        bb = malloc(COMPARE_CHUNK);
    int result = -1;
    *cause = "out of memory";
    for (uint64_t left = r->inodes[a].size; ba != NULL && bb != NULL;) {
        size_t want = left < COMPARE_CHUNK ? (size_t)left : COMPARE_CHUNK;
        ssize_t ga = read_full(fa, ba, want + (left < COMPARE_CHUNK));
        ssize_t gb = read_full(fb, bb, want + (left < COMPARE_CHUNK));
        if (ga < 0 || gb < 0) {
            *bad = ga < 0 ? a : b;
            *cause = errno_cause(errno, buf, cap);
            break;
        }
        if ((size_t)ga != want || (size_t)gb != want) {
            *bad = (size_t)ga != want ? a : b;
            *cause = changed_cause; /* shorter or longer than its size */
            break;
        }
        if (memcmp(ba, bb, want) != 0) {
            result = 0;
            break;
        }
        left -= want;
        if (left == 0) {
            result = 1;
            break;
        }
    }
    close(fa);
    close(fb);
    return result;
}
