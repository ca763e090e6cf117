/*
 * sum_order.c - the order in which a files job of `sum` reads its names:
 * on a rotational disk, the order of the files' places on the disk
 * (disk_order.c, the module dedup's readers use), so that a cold sum of
 * many files seeks as little as dedup's reads do; elsewhere the list's
 * order (a solid-state disk does not care, and the library's readers
 * then share the names as they come).
 *
 * Only for a cold job: up to PROBES of its names on rotational disks,
 * spread over the job, are asked whether their first byte is in the page
 * cache (preadv2 RWF_NOWAIT); when all are, the job reads in list order
 * with its readers on every core (a warm rescan gains nothing from an
 * order and would lose its parallel reads). Else every name on a
 * rotational disk is opened once here (as the job will open it: beneath
 * its tree's folder, or as named) for its first extent (FIEMAP), then
 * closed; the others are placed in list order within their device.
 *
 * Owns: that order and its trace. Must not: read file contents, or
 * decide how many readers a job has (sum_run.c does).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "disk_order.h"
#include "sum.h"

/* any_rotational: does any of the n names lie on a rotational disk? */
static int any_rotational(const uint64_t *devs, size_t n)
{
    for (size_t i = 0; devs != NULL && i < n; i++)
        if (devs[i] != 0 && disk_is_rotational((dev_t)devs[i]))
            return 1;
    return 0;
}

/* open_as_read: name opened as the job will open it (tree >= 0:
 * beneath its tree's folder), or -1. */
static int open_as_read(const sum_runner *r, const char *name, int tree)
{
    const int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    if (tree < 0)
        return strcmp(name, "-") == 0 ? -1 : open(name, flags);
    const char *why;
    int folder = r->trees != NULL ? places_root_fd(r->trees, (size_t)tree, &why) : -1;
    long below = folder >= 0 ? places_below(r->trees, (size_t)tree, name) : -1;
    return below >= 0 ? hb_open_beneath(folder, name + below, flags, HB_RESOLVE_BENEATH) : -1;
}

/* place: key k of name i: its first extent's place when it lies on a
 * rotational disk and has one, else its inode (device and inode from the
 * descriptor, the list's device when it cannot be opened). */
static void place(const sum_runner *r, const char *name, int tree, uint64_t dev, disk_key *k)
{
    k->dev = dev;
    if (dev == 0 || !disk_is_rotational((dev_t)dev))
        return;
    int fd = open_as_read(r, name, tree);
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        k->dev = (uint64_t)st.st_dev;
        k->ino = (uint64_t)st.st_ino;
        k->located = disk_first_extent(fd, &k->pos) == 0;
    }
    close(fd);
}

#define PROBES 8

/* cached: is the first byte of name in the page cache (or has it none)?
 * A name that cannot be opened counts as cached (it orders nothing). */
static int cached(const sum_runner *r, const char *name, int tree)
{
    int fd = open_as_read(r, name, tree);
    if (fd < 0)
        return 1;
    char byte;
    struct iovec v = {&byte, 1};
    ssize_t got = preadv2(fd, &v, 1, 0, RWF_NOWAIT);
    int e = errno;
    close(fd);
    return got >= 0 || e != EAGAIN;
}

/* cold: is any of up to PROBES names on rotational disks, spread over
 * the n, out of the page cache? */
static int cold(const sum_runner *r, char *const *names, int tree,
                const uint64_t *devs, size_t n)
{
    size_t step = n > PROBES ? n / PROBES : 1;
    for (size_t i = 0; i < n; i += step)
        if (devs[i] != 0 && disk_is_rotational((dev_t)devs[i]) &&
            !cached(r, names[i], tree))
            return 1;
    return 0;
}

/* trace: the order, when HASHBATCH_DEBUG_READ_ORDER asks for it. */
static void trace(const sum_runner *r, char *const *names, const uint32_t *order, size_t n)
{
    const char *v = getenv("HASHBATCH_DEBUG_READ_ORDER");
    if (v == NULL || v[0] == '\0')
        return;
    for (size_t k = 0; k < n; k++)
        fprintf(stderr, "%s: debug: read order %" PRIu64 " %zu %s\n", CLI_PROGRAM, r->jobs, k,
                names[order[k]]);
}

int sum_read_order(const sum_runner *r, char *const *names, int tree,
                   const uint64_t *devs, size_t n, uint32_t *order)
{
    if (n < 2 || !any_rotational(devs, n) || !cold(r, names, tree, devs, n))
        return 0;
    disk_key *keys = calloc(n, sizeof *keys);
    if (keys == NULL)
        return -1;
    for (size_t i = 0; i < n; i++) {
        keys[i].slot = (uint32_t)i;
        keys[i].ino = i; /* not on a rotational disk: the list's order */
        place(r, names[i], tree, devs[i], &keys[i]);
    }
    disk_order_sort(keys, n);
    for (size_t k = 0; k < n; k++)
        order[k] = keys[k].slot;
    free(keys);
    trace(r, names, order, n);
    return 1;
}
