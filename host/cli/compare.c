/*
 * compare.c - two open files compared byte for byte, a chunk at a time,
 * with positional reads; the last chunk asks for one byte more, so a file
 * that grew is told from one that is equal. Each thread keeps its two
 * chunk buffers for its next comparison: fresh ones for every pair would
 * cost a page fault per 4 KiB each time (tens of thousands of small
 * pairs in a dedup or an action).
 *
 * Owns: the comparison and the read loop. Must not: open files, decide
 * what a difference means, print, or exit.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "compare.h"

#define CHUNK ((size_t)1 << 20)

/* read_loop: n bytes by one call at a time (read, pread, or preadv2
 * with rwf when rwf is not 0). */
static ssize_t read_loop(int fd, void *buf, size_t n, off_t off, int rwf)
{
    unsigned char *p = buf;
    size_t got = 0;
    while (got < n) {
        size_t ask = n - got > (size_t)SSIZE_MAX ? (size_t)SSIZE_MAX : n - got;
        struct iovec v = {p + got, ask};
        ssize_t k = rwf       ? preadv2(fd, &v, 1, off + (off_t)got, rwf)
                    : off < 0 ? read(fd, p + got, ask)
                              : pread(fd, p + got, ask, off + (off_t)got);
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

ssize_t cmp_read_full(int fd, void *buf, size_t n, off_t off)
{
    return read_loop(fd, buf, n, off, 0);
}

ssize_t cmp_read_full_flags(int fd, void *buf, size_t n, off_t off, int rwf)
{
#ifdef RWF_NOWAIT
    return read_loop(fd, buf, n, off, rwf);
#else
    (void)fd, (void)buf, (void)n, (void)off, (void)rwf;
    errno = ENOSYS;
    return -1;
#endif
}

/* buffers: this thread's two chunks (CHUNK + 1 bytes each), or NULL. */
static unsigned char *buffers(unsigned char **b)
{
    static _Thread_local unsigned char *mine;
    if (mine == NULL)
        mine = malloc(2 * (CHUNK + 1));
    *b = mine ? mine + CHUNK + 1 : NULL;
    return mine;
}

/* first_difference: the index of the first byte where x and y differ. */
static size_t first_difference(const unsigned char *x, const unsigned char *y, size_t n)
{
    size_t i = 0;
    while (i < n && x[i] == y[i])
        i++;
    return i;
}

cmp_result cmp_files(int a, int b, uint64_t size, cmp_detail *d)
{
    memset(d, 0, sizeof *d);
    unsigned char *bb, *ba = buffers(&bb);
    if (ba == NULL) {
        d->err = ENOMEM;
        return CMP_ERROR;
    }
    for (uint64_t off = 0;;) {
        uint64_t left = size - off;
        size_t want = left < CHUNK ? (size_t)left : CHUNK;
        size_t ask = want + (left <= CHUNK); /* the last chunk: one byte past the end */
        ssize_t ga = cmp_read_full(a, ba, ask, (off_t)off);
        ssize_t gb = ga < 0 ? 0 : cmp_read_full(b, bb, ask, (off_t)off);
        if (ga < 0 || gb < 0) {
            d->side = ga < 0 ? 0 : 1;
            d->err = errno;
            return CMP_ERROR;
        }
        if ((size_t)ga != want || (size_t)gb != want) {
            d->side = (size_t)ga != want ? 0 : 1;
            return CMP_LENGTH;
        }
        if (memcmp(ba, bb, want) != 0) {
            d->first_diff = off + first_difference(ba, bb, want);
            return CMP_DIFFER;
        }
        off += want;
        if (off == size)
            return CMP_EQUAL;
    }
}
