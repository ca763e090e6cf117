/*
 * act_reflink.c - extent sharing, where the filesystem has it (XFS with
 * reflink, btrfs, bcachefs, OCFS2): FIDEDUPERANGE, which compares two
 * ranges in the kernel under its locks and shares their extents only
 * when the bytes are equal, and FIEMAP, to see whether two files already
 * share all their extents (a rerun of an interrupted --reflink).
 *
 * Owns: those ioctls. Must not: decide which file stays, print, or exit.
 */
#include <errno.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "act.h"

/* One call shares at most this much (the kernels cap it near 16 MiB). */
#define DEDUPE_CHUNK ((uint64_t)16 << 20)
#define FIEMAP_BATCH 256u

int act_dedupe_range(int src, int dst, uint64_t size)
{
    struct file_dedupe_range *r = calloc(1, sizeof *r + sizeof(struct file_dedupe_range_info));
    if (r == NULL) {
        errno = ENOMEM;
        return -1;
    }
    int rc = 1;
    for (uint64_t off = 0; off < size;) {
        uint64_t len = size - off < DEDUPE_CHUNK ? size - off : DEDUPE_CHUNK;
        memset(r, 0, sizeof *r + sizeof(struct file_dedupe_range_info));
        r->src_offset = off;
        r->src_length = len;
        r->dest_count = 1;
        r->info[0].dest_fd = dst;
        r->info[0].dest_offset = off;
        if (ioctl(src, FIDEDUPERANGE, r) != 0) {
            rc = -1;
            break;
        }
        if (r->info[0].status == FILE_DEDUPE_RANGE_DIFFERS) {
            rc = 0;
            break;
        }
        if (r->info[0].status < 0) {
            errno = -r->info[0].status;
            rc = -1;
            break;
        }
        if (r->info[0].bytes_deduped == 0) {
            errno = EINVAL; /* no progress: the kernel refused this range */
            rc = -1;
            break;
        }
        off += r->info[0].bytes_deduped;
    }
    int e = errno;
    free(r);
    errno = e;
    return rc;
}

/* map_extents: fd's extents over [0, size), synced first; NULL when
 * FIEMAP fails or there are more than FIEMAP_BATCH. */
static struct fiemap *map_extents(int fd, uint64_t size)
{
    struct fiemap *m = calloc(1, sizeof *m + FIEMAP_BATCH * sizeof(struct fiemap_extent));
    if (m == NULL)
        return NULL;
    m->fm_start = 0;
    m->fm_length = size;
    m->fm_flags = FIEMAP_FLAG_SYNC;
    m->fm_extent_count = FIEMAP_BATCH;
    if (ioctl(fd, FS_IOC_FIEMAP, m) != 0 || m->fm_mapped_extents == 0 ||
        m->fm_mapped_extents >= FIEMAP_BATCH) {
        free(m);
        return NULL;
    }
    return m;
}

int act_shares_extents(int a, int b, uint64_t size)
{
    if (size == 0)
        return 0;
    struct fiemap *ma = map_extents(a, size), *mb = map_extents(b, size);
    int same = ma != NULL && mb != NULL && ma->fm_mapped_extents == mb->fm_mapped_extents;
    for (uint32_t i = 0; same && i < ma->fm_mapped_extents; i++) {
        const struct fiemap_extent *ea = &ma->fm_extents[i], *eb = &mb->fm_extents[i];
        same = ea->fe_logical == eb->fe_logical && ea->fe_physical == eb->fe_physical &&
               ea->fe_length == eb->fe_length && (ea->fe_flags & FIEMAP_EXTENT_SHARED) &&
               (eb->fe_flags & FIEMAP_EXTENT_SHARED) &&
               !(ea->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC |
                                 FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_DATA_INLINE));
    }
    free(ma);
    free(mb);
    return same;
}

int act_reflink_unsupported(int e)
{
    return e == EOPNOTSUPP || e == ENOTTY || e == EXDEV || e == EINVAL || e == ENOSYS;
}
