/*
 * act_check.c - the re-check before an action: the file the plan names
 * is opened by its last name in the folder places.c resolved (never
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
#include "compare.h"
#include "places.h"

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

int act_open_checked(const places *pl, const act_file *f, uint64_t size, act_open_file *o,
                     const char **why, int *err_no)
{
    const int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    *why = NULL;
    *err_no = 0;
    o->fd = o->dir >= 0 ? openat(o->dir, o->leaf, flags) : places_open(pl, f->path, flags, why);
    if (o->fd < 0) {
        *err_no = errno;
        if (errno == ELOOP && *why == NULL)
            *why = o->dir >= 0 ? "a symbolic link now, not the file of the scan"
                               : "it, or a folder in its path, is a symbolic link now (changed "
                                 "since the scan): left alone, not followed";
        else if (errno == EXDEV && *why == NULL)
            *why = "its path leads outside the folder the scan started from: left alone";
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

int act_same_bytes(int a, int b, uint64_t size)
{
    cmp_detail d;
    cmp_result r = cmp_files(a, b, size, &d);
    if (r == CMP_ERROR)
        errno = d.err;
    return r == CMP_EQUAL ? 1 : r == CMP_ERROR ? -1 : 0; /* a length off: changed */
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
