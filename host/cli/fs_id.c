/*
 * fs_id.c - which filesystem a file is on, beyond st_dev (fs_id.h).
 *
 * A filesystem is named by statfs's f_fsid and f_type and, where the
 * kernel tells it (FS_IOC_GETFSUUID, Linux 6.5+), its UUID, folded into
 * one nonzero 64-bit number: f_fsid alone is derived from the device
 * number on some filesystems (XFS), so it repeats when another XFS is
 * mounted on the same device; the UUID does not. A filesystem is stacked
 * when its statfs magic (or, for a device known only by number, its type
 * in /proc/self/mountinfo) is overlayfs's or aufs's.
 *
 * What is learnt is remembered per st_dev for the life of the process,
 * in a small hash table behind one mutex: a scan of a million files on
 * one device asks the kernel once. The queries themselves run outside
 * the lock; when two threads ask for one new device at once, the first
 * answer stored is the one every caller gets.
 *
 * Owns: the statfs, ioctl and mountinfo queries and the per-device
 * table. Must not: print, exit, or keep a descriptor open.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/fs.h>

#include "fs_id.h"

#ifndef FS_IOC_GETFSUUID
/* Linux 6.5's <linux/fs.h>, for older headers. */
struct fsuuid2 {
    unsigned char len;
    unsigned char uuid[16];
};
#define FS_IOC_GETFSUUID _IOR(0x15, 0, struct fsuuid2)
#endif

#define OVERLAYFS_MAGIC 0x794c7630L
#define AUFS_MAGIC 0x61756673L
#define NBUCKETS 64

enum { HAVE_FS = 1, HAVE_TYPE = 2 };

/* What is known of one st_dev. */
typedef struct dev_ent {
    struct dev_ent *next;
    dev_t dev;
    unsigned have; /* HAVE_* */
    fs_id id;
} dev_ent;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static dev_ent *table[NBUCKETS];

/* mix64: splitmix64's finalizer. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* fnv: FNV-1a of n bytes p, continuing from h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* bucket_of: the table's bucket for dev. */
static dev_ent **bucket_of(dev_t dev)
{
    return &table[mix64((uint64_t)dev) % NBUCKETS];
}

/* find_locked: dev's entry, or NULL. Under table_lock. */
static dev_ent *find_locked(dev_t dev)
{
    for (dev_ent *e = *bucket_of(dev); e != NULL; e = e->next)
        if (e->dev == dev)
            return e;
    return NULL;
}

/* entry_locked: dev's entry, added (knowing nothing) when missing; NULL
 * when out of memory. Under table_lock. */
static dev_ent *entry_locked(dev_t dev)
{
    dev_ent *e = find_locked(dev);
    if (e != NULL)
        return e;
    e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    dev_ent **b = bucket_of(dev);
    e->dev = dev;
    e->next = *b;
    *b = e;
    return e;
}

/* known: *out = what the table knows of dev when it has what (HAVE_*).
 * 1 when it had it. */
static int known(dev_t dev, unsigned what, fs_id *out)
{
    pthread_mutex_lock(&table_lock);
    const dev_ent *e = find_locked(dev);
    int have = e != NULL && (e->have & what) == what;
    if (have)
        *out = e->id;
    pthread_mutex_unlock(&table_lock);
    return have;
}

/* remember: stores what (HAVE_*) of id for dev, unless another thread
 * stored it first, and sets *out to what the table holds. Without
 * memory the answer is still given, not remembered. */
static void remember(dev_t dev, unsigned what, const fs_id *id, fs_id *out)
{
    pthread_mutex_lock(&table_lock);
    dev_ent *e = entry_locked(dev);
    if (e == NULL) {
        *out = *id;
    } else {
        if ((what & HAVE_FS) && !(e->have & HAVE_FS))
            e->id.fs = id->fs;
        if ((what & HAVE_TYPE) && !(e->have & HAVE_TYPE))
            e->id.stacked = id->stacked;
        e->have |= what;
        *out = e->id;
    }
    pthread_mutex_unlock(&table_lock);
}

/* uuid_of: the UUID of the filesystem of fd (whose mode is mode) into u;
 * u->len = 0 where it has none or the kernel cannot tell. An O_PATH
 * descriptor (EBADF) is reopened for reading through /proc when it names
 * a regular file or a folder (never a device or a FIFO). */
static void uuid_of(int fd, mode_t mode, struct fsuuid2 *u)
{
    memset(u, 0, sizeof *u);
    if (ioctl(fd, FS_IOC_GETFSUUID, u) == 0 && u->len <= sizeof u->uuid)
        return;
    int again = errno == EBADF && (S_ISREG(mode) || S_ISDIR(mode));
    memset(u, 0, sizeof *u);
    if (!again)
        return; /* ENOTTY, EINVAL, EOPNOTSUPP...: no UUID */
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    int rfd = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (rfd < 0)
        return;
    struct stat st;
    if (fstat(rfd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) &&
        (ioctl(rfd, FS_IOC_GETFSUUID, u) != 0 || u->len > sizeof u->uuid))
        memset(u, 0, sizeof *u);
    close(rfd);
}

/* is_stacked_magic: a statfs magic of a filesystem that shows other
 * filesystems' inodes under its own device. */
static int is_stacked_magic(long type)
{
    return type == OVERLAYFS_MAGIC || type == AUFS_MAGIC;
}

/* fold: f_type, f_fsid and the UUID into one nonzero number. */
static uint64_t fold(const struct statfs *sf, const struct fsuuid2 *u)
{
    uint64_t type = (uint64_t)sf->f_type;
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv(h, &type, sizeof type);
    h = fnv(h, &sf->f_fsid, sizeof sf->f_fsid);
    h = fnv(h, &u->len, 1);
    h = fnv(h, u->uuid, u->len);
    h = mix64(h);
    return h != 0 ? h : 1;
}

int fs_id_of_fd(int fd, dev_t dev, fs_id *out)
{
    if (known(dev, HAVE_FS | HAVE_TYPE, out))
        return 0;
    struct stat st;
    struct statfs sf;
    memset(out, 0, sizeof *out);
    if (fstat(fd, &st) != 0 || fstatfs(fd, &sf) != 0)
        return -1;
    if (st.st_dev != dev) {
        errno = EXDEV; /* not the device the caller asked about */
        return -1;
    }
    struct fsuuid2 u;
    uuid_of(fd, st.st_mode, &u);
    fs_id id = {fold(&sf, &u), is_stacked_magic((long)sf.f_type)};
    remember(dev, HAVE_FS | HAVE_TYPE, &id, out);
    return 0;
}

int fs_id_at(int dirfd, const char *name, dev_t dev, fs_id *out)
{
    if (known(dev, HAVE_FS | HAVE_TYPE, out))
        return 0;
    memset(out, 0, sizeof *out);
    int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
        /* a caller that followed the link saw its target's device */
        close(fd);
        fd = openat(dirfd, name, O_PATH | O_CLOEXEC);
    }
    if (fd < 0)
        return -1;
    int rc = fs_id_of_fd(fd, dev, out);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* mountinfo_stacked: is a filesystem whose type stacks mounted with
 * device dev (/proc/self/mountinfo: field 3 is major:minor, the field
 * after " - " the type)? 1 or 0; -1 when the file cannot be read. */
static int mountinfo_stacked(dev_t dev)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (f == NULL)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int stacked = 0;
    unsigned ma, mi;
    while (!stacked && getline(&line, &cap, f) > 0) {
        const char *sep = strstr(line, " - ");
        char type[64];
        if (sep == NULL || sscanf(line, "%*s %*s %u:%u", &ma, &mi) != 2 || makedev(ma, mi) != dev ||
            sscanf(sep + 3, "%63s", type) != 1)
            continue;
        stacked = strcmp(type, "overlay") == 0 || strcmp(type, "aufs") == 0;
    }
    free(line);
    fclose(f);
    return stacked;
}

int fs_id_stacked(dev_t dev)
{
    fs_id id;
    if (known(dev, HAVE_TYPE, &id))
        return id.stacked;
    int s = mountinfo_stacked(dev);
    id.fs = 0;
    id.stacked = s == 1;
    remember(dev, HAVE_TYPE, &id, &id); /* unreadable: taken as not stacked, once */
    return id.stacked;
}

int fs_id_one_file(dev_t dev_a, ino_t ino_a, dev_t dev_b, ino_t ino_b)
{
    if (ino_a != ino_b)
        return 0;
    if (dev_a == dev_b)
        return 1;
    return fs_id_stacked(dev_a) || fs_id_stacked(dev_b);
}
