/*
 * files_read.c - opening, classifying and reading one input of a files
 * job, without ever blocking on a FIFO nobody writes to.
 *
 * Owns: open/fstat/read of inputs and what counts as "changed while read".
 * Must not: hash, allocate file buffers or know about jobs (files.c does).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include "files.h"

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

/* classify: decides whether f (just stat-ed) is read. */
static hb_status classify(hb_open_file *f, int by_path, int read_special, int *err)
{
    mode_t m = f->st0.st_mode;
    if (S_ISDIR(m)) {
        *err = EISDIR;
        return HB_ERR_IO;
    }
    f->regular = S_ISREG(m);
    if (!f->regular && by_path && !read_special)
        return HB_ERR_NOT_REGULAR;
    if (by_path && !f->regular && (*err = clear_nonblock(f->fd)) != 0)
        return HB_ERR_IO;
    return HB_OK;
}

/* open_failed: why a path did not open; a Unix socket (ENXIO) is a
 * special file like the others, skipped. */
static hb_status open_failed(const char *path, int *err)
{
    struct stat st;
    *err = errno;
    if (*err == ENXIO && stat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
        *err = 0;
        return HB_ERR_NOT_REGULAR;
    }
    return HB_ERR_IO;
}

hb_status hb_file_open(const hb_file_input *in, int read_special, hb_open_file *f, int *err)
{
    *err = 0;
    f->owned = in->path != NULL;
    f->regular = 0;
    if (f->owned) {
        f->fd = open(in->path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (f->fd < 0)
            return open_failed(in->path, err);
    } else {
        f->fd = in->fd;
    }
    hb_status st = HB_OK;
    if (fstat(f->fd, &f->st0) != 0) {
        *err = errno;
        st = HB_ERR_IO;
    } else {
        st = classify(f, f->owned, read_special, err);
    }
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

int hb_file_changed(const hb_open_file *f)
{
    struct stat st;
    if (!f->regular)
        return 0;
    if (fstat(f->fd, &st) != 0)
        return -errno;
    return st.st_size != f->st0.st_size || st.st_mtim.tv_sec != f->st0.st_mtim.tv_sec ||
           st.st_mtim.tv_nsec != f->st0.st_mtim.tv_nsec;
}
