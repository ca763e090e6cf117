/*
 * disk_order.c - physical placement of files (FIEMAP) and the kind of the
 * disks that hold them (sysfs), for reading many files in the order that
 * costs a rotational disk the fewest seeks.
 *
 * Owns: the FIEMAP ioctl, the sysfs look-ups and their per-device cache,
 * the read-order sort. Must not: read file contents, print, or know the
 * commands' data structures.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "disk_order.h"

#define KIND_CACHE 32 /* devices remembered; more are looked up each time */
#define MAX_DEPTH 4   /* device-mapper over md over partitions: enough */

static pthread_mutex_t kind_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    dev_t dev;
    int rotational;
} kinds[KIND_CACHE];
static size_t nkinds;

/* read_flag: the integer in file path, or -1 when it cannot be read. */
static int read_flag(const char *path)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -1;
    int v = -1;
    if (fscanf(f, "%d", &v) != 1)
        v = -1;
    fclose(f);
    return v;
}

static int sysdir_rotational(const char *dir, int depth);

/* slaves_rotational: 1 when one of the devices that dir's device sits on
 * (its slaves/ folder: device-mapper, md) is rotational, 0 otherwise. */
static int slaves_rotational(const char *dir, int depth)
{
    char path[PATH_MAX];
    int found = 0;
    struct stat st;
    if (depth >= MAX_DEPTH || snprintf(path, sizeof path, "%s/slaves", dir) >= (int)sizeof path ||
        stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    DIR *d = opendir(path); /* one link per underlying device */
    if (d == NULL)
        return 0;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char sub[PATH_MAX];
        if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub)
            continue;
        found = sysdir_rotational(sub, depth + 1) == 1;
    }
    closedir(d);
    return found;
}

/* sysdir_rotational: the kind of the block device whose sysfs folder is
 * dir (a link is fine): 1 rotational, 0 solid-state, -1 unknown. A
 * partition has no queue/ of its own: its disk's is read. */
static int sysdir_rotational(const char *dir, int depth)
{
    char real[PATH_MAX], path[PATH_MAX + 32];
    if (realpath(dir, real) == NULL)
        return -1;
    snprintf(path, sizeof path, "%s/queue/rotational", real);
    int v = read_flag(path);
    if (v < 0) { /* a partition: its disk is the parent folder */
        char *slash = strrchr(real, '/');
        if (slash == NULL || slash == real)
            return -1;
        *slash = '\0';
        snprintf(path, sizeof path, "%s/queue/rotational", real);
        v = read_flag(path);
    }
    if (v == 0 && slaves_rotational(real, depth))
        v = 1; /* stacked on a rotational disk somewhere */
    return v < 0 ? -1 : v != 0;
}

/* look_up: the kind of dev from sysfs (unknown counts as solid-state). */
static int look_up(dev_t dev)
{
    if (major(dev) == 0)
        return 0; /* anonymous: btrfs, overlay, tmpfs, NFS */
    char dir[64];
    snprintf(dir, sizeof dir, "/sys/dev/block/%u:%u", major(dev), minor(dev));
    return sysdir_rotational(dir, 0) == 1;
}

int disk_is_rotational(dev_t dev)
{
    pthread_mutex_lock(&kind_lock);
    for (size_t i = 0; i < nkinds; i++)
        if (kinds[i].dev == dev) {
            int v = kinds[i].rotational;
            pthread_mutex_unlock(&kind_lock);
            return v;
        }
    int v = look_up(dev);
    if (nkinds < KIND_CACHE) {
        kinds[nkinds].dev = dev;
        kinds[nkinds++].rotational = v;
    }
    pthread_mutex_unlock(&kind_lock);
    return v;
}

int disk_first_extent(int fd, uint64_t *pos)
{
    struct fiemap *q = calloc(1, sizeof *q + sizeof q->fm_extents[0]);
    if (q == NULL)
        return ENOMEM;
    q->fm_start = 0;
    q->fm_length = FIEMAP_MAX_OFFSET;
    q->fm_extent_count = 1; /* the first extent is all the order needs */
    int rc = ioctl(fd, FS_IOC_FIEMAP, q) == 0 ? 0 : errno;
    const uint32_t unplaced =
        FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_DATA_INLINE;
    if (rc == 0 && (q->fm_mapped_extents == 0 || (q->fm_extents[0].fe_flags & unplaced) != 0))
        rc = ENODATA;
    if (rc == 0)
        *pos = q->fm_extents[0].fe_physical;
    free(q);
    return rc;
}

int disk_no_fiemap(int e)
{
    return e == EOPNOTSUPP || e == ENOTTY || e == ENOSYS || e == EINVAL;
}

/* cmp_key: read order (see disk_order_sort). */
static int cmp_key(const void *pa, const void *pb)
{
    const disk_key *a = pa, *b = pb;
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    if (a->located != b->located)
        return a->located < b->located ? -1 : 1;
    if (a->located && a->pos != b->pos)
        return a->pos < b->pos ? -1 : 1;
    if (a->ino != b->ino)
        return a->ino < b->ino ? -1 : 1;
    return a->slot < b->slot ? -1 : a->slot > b->slot;
}

void disk_order_sort(disk_key *keys, size_t n)
{
    if (n > 1)
        qsort(keys, n, sizeof *keys, cmp_key);
}
