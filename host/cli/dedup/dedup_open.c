/*
 * dedup_open.c - how dedup opens a file of its scan again: by the inode's
 * first path, beneath the root the walk started from, with no symbolic
 * link followed on the way (places.c), so that a folder swapped for a
 * link after the walk leads nowhere; with -L, and in a merge (whose paths
 * come from indexes, not from a walk here), as the path is written. The
 * readers (dedup_read.c) and the disk-order probe (dedup_iothreads.c)
 * both call down to it.
 *
 * Owns: that open. Must not: read, check what it opened, or print.
 */
#include <errno.h>
#include <fcntl.h>

#include "dedup.h"
#include "places.h"

int dd_open_inode(const dd_run *r, uint32_t k, int flags)
{
    const char *why;
    if (r->places == NULL)
        return open(dd_inode_name(r, k), flags);
    int fd = places_open(r->places, dd_inode_name(r, k), flags, &why);
    if (fd < 0 && why != NULL)
        errno = ESTALE; /* its root is not the scan's any more */
    return fd;
}
