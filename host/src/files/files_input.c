/*
 * files_input.c - opening, classifying and reading one input of a files
 * job, without ever blocking on a FIFO nobody writes to, and telling
 * whether it changed while it was read.
 *
 * Changed while read: statx right after opening and again after the last
 * read; any difference in size, mtime or ctime (nanoseconds), inode,
 * device, or the change cookie is HB_ERR_FILE_CHANGED. ctime matters
 * because no one can set it (`touch -r` and `cp -p` put an mtime back).
 * On kernels with multigrain timestamps (6.13+: ext4, xfs, btrfs, tmpfs)
 * the first change after a statx that asked for ctime gets a fine-grained
 * ctime, so any write() that starts between the two statx calls shows;
 * elsewhere a write within the same timestamp tick (about 4 ms) as the
 * one before does not. A write() that had begun before the first statx
 * (its timestamps already set) may still be copying its bytes while the
 * file is read: so after the first statx an lseek(SEEK_DATA), which ext4,
 * btrfs and tmpfs serve under the inode lock that a write() holds, waits
 * for it to end. STATX_CHANGE_COOKIE (the i_version counter) is
 * kernel-internal: cp_statx clears it from every reply, and no released
 * uapi header defines it (Linux 6.18, checked); the code asks for it
 * where a header does.
 *
 * Owns: open/statx/read of inputs and what counts as "changed while read".
 * Must not: hash, allocate file buffers or know about jobs (files/ does).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "files/files_input.h"

#define SNAPSHOT_MASK (STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME | STATX_CTIME | STATX_INO)

/* snapshot_from_stat: the fields fstat has (where statx is refused). */
static void snapshot_from_stat(const struct stat *st, hb_file_snapshot *s)
{
    s->size = (uint64_t)st->st_size;
    s->mtime_sec = st->st_mtim.tv_sec;
    s->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
    s->ctime_sec = st->st_ctim.tv_sec;
    s->ctime_nsec = (uint32_t)st->st_ctim.tv_nsec;
    s->ino = (uint64_t)st->st_ino;
    s->dev_major = major(st->st_dev);
    s->dev_minor = minor(st->st_dev);
}

/* snapshot_from_statx: the fields of a statx reply. */
static void snapshot_from_statx(const struct statx *sx, hb_file_snapshot *s)
{
    s->size = sx->stx_size;
    s->mtime_sec = sx->stx_mtime.tv_sec;
    s->mtime_nsec = sx->stx_mtime.tv_nsec;
    s->ctime_sec = sx->stx_ctime.tv_sec;
    s->ctime_nsec = sx->stx_ctime.tv_nsec;
    s->ino = sx->stx_ino;
    s->dev_major = sx->stx_dev_major;
    s->dev_minor = sx->stx_dev_minor;
#ifdef STATX_CHANGE_COOKIE
    if (sx->stx_mask & STATX_CHANGE_COOKIE) {
        s->change_cookie = sx->stx_change_cookie;
        s->has_change_cookie = 1;
    }
#endif
}

/* take_snapshot: fd's snapshot and mode, by statx (by fstat where statx
 * is missing or refused by a seccomp filter). Returns 0 or an errno. */
static int take_snapshot(int fd, hb_file_snapshot *s, mode_t *mode)
{
    unsigned mask = SNAPSHOT_MASK;
#ifdef STATX_CHANGE_COOKIE
    mask |= STATX_CHANGE_COOKIE;
#endif
    struct statx sx;
    memset(s, 0, sizeof *s);
    if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, mask, &sx) == 0) {
        snapshot_from_statx(&sx, s);
        *mode = sx.stx_mode;
        return 0;
    }
    if (errno != ENOSYS && errno != EPERM)
        return errno;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return errno;
    snapshot_from_stat(&st, s);
    *mode = st.st_mode;
    return 0;
}

int hb_file_snapshot_same(const hb_file_snapshot *a, const hb_file_snapshot *b)
{
    if (a->size != b->size || a->ino != b->ino || a->dev_major != b->dev_major ||
        a->dev_minor != b->dev_minor)
        return 0;
    if (a->mtime_sec != b->mtime_sec || a->mtime_nsec != b->mtime_nsec ||
        a->ctime_sec != b->ctime_sec || a->ctime_nsec != b->ctime_nsec)
        return 0;
    if (a->has_change_cookie && b->has_change_cookie && a->change_cookie != b->change_cookie)
        return 0;
    return 1;
}

/* let_writes_finish: waits for a write() to f already under way, where
 * the filesystem serves lseek(SEEK_DATA) under the inode lock (see the top
 * of the file); elsewhere it returns at once. Leaves the offset where it
 * was (SEEK_DATA moves it past a leading hole). Returns 0 or an errno. */
static int let_writes_finish(const hb_open_file *f)
{
    off_t pos = f->owned ? 0 : lseek(f->fd, 0, SEEK_CUR);
    if (pos < 0)
        return 0;
    off_t data = lseek(f->fd, pos, SEEK_DATA); /* ENXIO at the end, EINVAL: no support */
    if (data < 0 || data == pos)
        return 0;
    return lseek(f->fd, pos, SEEK_SET) == pos ? 0 : errno;
}

/* clear_nonblock: back to blocking reads on fd (regular files ignore the
 * flag, so they are left alone: two system calls fewer per file). Returns
 * 0 or errno. */
static int clear_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return errno;
    if ((fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
        return errno;
    return 0;
}

/* classify: decides whether f (just snapshotted) is read. */
static hb_status classify(hb_open_file *f, int by_path, int read_special, int *err)
{
    if (S_ISDIR(f->mode)) {
        *err = EISDIR;
        return HB_ERR_IO;
    }
    f->regular = S_ISREG(f->mode);
    if (!f->regular && by_path && !read_special)
        return HB_ERR_NOT_REGULAR;
    if (by_path && !f->regular && (*err = clear_nonblock(f->fd)) != 0)
        return HB_ERR_IO;
    if (f->regular && (*err = let_writes_finish(f)) != 0)
        return HB_ERR_IO;
    return HB_OK;
}

/* open_failed: why a path did not open; a Unix socket (ENXIO) is a
 * special file like the others, skipped. */
static hb_status open_failed(int dir_fd, const char *path, int *err)
{
    struct stat st;
    *err = errno;
    int at = dir_fd >= 0 ? dir_fd : AT_FDCWD, nofollow = dir_fd >= 0 ? AT_SYMLINK_NOFOLLOW : 0;
    if (*err == ENXIO && fstatat(at, path, &st, nofollow) == 0 && S_ISSOCK(st.st_mode)) {
        *err = 0;
        return HB_ERR_NOT_REGULAR;
    }
    return HB_ERR_IO;
}

hb_status hb_file_open(const hb_file_input *in, int dir_fd, int read_special, hb_open_file *f,
                       int *err)
{
    *err = 0;
    f->owned = in->path != NULL;
    f->regular = 0;
    if (f->owned) {
        int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
        f->fd = dir_fd >= 0 ? hb_open_beneath(dir_fd, in->path, flags, HB_RESOLVE_BENEATH)
                            : open(in->path, flags);
        if (f->fd < 0)
            return open_failed(dir_fd, in->path, err);
    } else {
        f->fd = in->fd;
    }
    hb_status st = HB_OK;
    if ((*err = take_snapshot(f->fd, &f->at_open, &f->mode)) != 0)
        st = HB_ERR_IO;
    else
        st = classify(f, f->owned, read_special, err);
    if (st != HB_OK)
        hb_file_close(f);
    return st;
}

void hb_file_close(hb_open_file *f)
{
    if (f->owned && f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    f->owned = 0;
}

int hb_file_read(int fd, void *buf, size_t n, size_t *got)
{
    if (n > SSIZE_MAX)
        n = SSIZE_MAX;
    for (;;) {
        ssize_t r = read(fd, buf, n);
        if (r >= 0) {
            *got = (size_t)r;
            return 0;
        }
        if (errno != EINTR)
            return errno;
    }
}

hb_status hb_file_unchanged(const hb_open_file *f, int *err)
{
    hb_file_snapshot now;
    mode_t mode;
    if (!f->regular)
        return HB_OK;
    if ((*err = take_snapshot(f->fd, &now, &mode)) != 0)
        return HB_ERR_IO;
    return hb_file_snapshot_same(&f->at_open, &now) ? HB_OK : HB_ERR_FILE_CHANGED;
}
