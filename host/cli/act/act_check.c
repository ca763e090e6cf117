/*
 * act_check.c - the re-check before an action: the file the plan names
 * is opened by its last name in the folder act_place.c resolved (never
 * through a symbolic link), shown to be the very file the scan saw
 * (device, inode, size, and mtime when the plan has it), and compared
 * byte for byte with the kept one. Every check is made on descriptors:
 * the file's own, and its folder's with the file's last name.
 *
 * Owns: those checks. Must not: change anything, print, or exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "act.h"

#define CMP_CHUNK ((size_t)1 << 20)

/* stat_mtime_ns: st's modification time in nanoseconds. */
static int64_t stat_mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* plan_mismatch: how st differs from what the plan says of f, or NULL. */
static const char *plan_mismatch(const act_file *f, uint64_t size, const struct stat *st)
{
    if (!S_ISREG(st->st_mode))
        return "not a regular file any more";
    if ((uint64_t)st->st_dev != f->dev || (uint64_t)st->st_ino != f->ino)
        return "changed since the scan: another file (device or inode) has the name now";
    if ((uint64_t)st->st_size != size)
        return "changed since the scan: size";
    if (f->has_mtime && stat_mtime_ns(st) != f->mtime_ns)
        return "changed since the scan: modification time";
    return NULL;
}

int act_open_checked(const act_file *f, uint64_t size, act_open_file *o, const char **why,
                     int *err_no)
{
    *why = NULL;
    *err_no = 0;
    o->fd = openat(o->dir, o->leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (o->fd < 0) {
        *err_no = errno;
        if (errno == ELOOP)
            *why = "a symbolic link now, not the file of the scan";
        return -1;
    }
    if (fstat(o->fd, &o->st) != 0) {
        *err_no = errno;
        act_close(o);
        return -1;
    }
    if ((*why = plan_mismatch(f, size, &o->st)) != NULL) {
        act_close(o);
        return -1;
    }
    return 0;
}

/* read_full: n bytes at offset off of fd into buf; returns the count
 * read (short only at the end of the file) or -1. */
static ssize_t read_full(int fd, unsigned char *buf, size_t n, off_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, buf + got, n - got, off + (off_t)got);
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

int act_same_bytes(int a, int b, uint64_t size)
{
    unsigned char *ba = malloc(2 * CMP_CHUNK);
    if (ba == NULL) {
        errno = ENOMEM;
        return -1;
    }
    unsigned char *bb = ba + CMP_CHUNK;
    int rc = 1;
    uint64_t off = 0;
    for (;;) {
        ssize_t ka = read_full(a, ba, CMP_CHUNK, (off_t)off);
        ssize_t kb = read_full(b, bb, CMP_CHUNK, (off_t)off);
        if (ka < 0 || kb < 0) {
            rc = -1;
            break;
        }
        if (ka != kb || memcmp(ba, bb, (size_t)ka) != 0) {
            rc = 0;
            break;
        }
        off += (uint64_t)ka;
        if ((size_t)ka < CMP_CHUNK)
            break;
    }
    if (rc == 1 && off != size)
        rc = 0; /* both grew or shrank alike: not the files of the plan */
    int e = errno;
    free(ba);
    errno = e;
    return rc;
}

int act_same_content(const act_open_file *o)
{
    struct stat now;
    return fstat(o->fd, &now) == 0 && now.st_size == o->st.st_size &&
           now.st_mtim.tv_sec == o->st.st_mtim.tv_sec &&
           now.st_mtim.tv_nsec == o->st.st_mtim.tv_nsec;
}

int act_name_is(const act_open_file *o)
{
    struct stat st;
    return fstatat(o->dir, o->leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == o->st.st_dev &&
           st.st_ino == o->st.st_ino;
}

void act_close(act_open_file *o)
{
    if (o->fd >= 0)
        close(o->fd);
    if (o->dir >= 0)
        close(o->dir);
    o->fd = -1;
    o->dir = -1;
}
