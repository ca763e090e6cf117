/*
 * files_input.h - one input of a files job: opening it, reading it, and
 * telling whether it changed while it was read (files_input.c).
 *
 * Owns: the interface between the job's machinery and the system calls on
 * one input, and the snapshot two versions of a file are compared by.
 * Must not: be included outside host/src (tests may, for the snapshot
 * predicate).
 */
#ifndef HB_FILES_INPUT_H
#define HB_FILES_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hashbatch.h"

/* What statx says of a file that tells one version of it from another:
 * its size, mtime and ctime to the nanosecond, inode and device, and the
 * change cookie where the kernel gives one (none does to user space as of
 * Linux 6.18: see files_input.c). */
typedef struct {
    uint64_t size;
    int64_t mtime_sec, ctime_sec;
    uint32_t mtime_nsec, ctime_nsec;
    uint64_t ino;
    uint32_t dev_major, dev_minor;
    uint64_t change_cookie;
    int has_change_cookie; /* 1: change_cookie is the kernel's */
} hb_file_snapshot;

/* One input opened for reading. */
typedef struct {
    int fd;
    int owned;                /* 1: opened from a path, closed by hb_file_close */
    int regular;              /* 1: a regular file (checked for changes) */
    mode_t mode;              /* its type and permissions */
    hb_file_snapshot at_open; /* right after opening */
} hb_open_file;

/* hb_file_open: opens in (a path: O_NONBLOCK first, so a FIFO with no
 * writer cannot block the open; beneath dir_fd when it is >= 0, following
 * no symbolic link: hb_open_beneath) and takes its snapshot; for a regular
 * file, then waits for a write() to it already under way where the
 * filesystem allows (files_input.c says which). Directories give HB_ERR_IO
 * with EISDIR; FIFOs, sockets and devices named by a path give
 * HB_ERR_NOT_REGULAR unless read_special. On failure *err holds the errno
 * (or 0) and nothing stays open. */
hb_status hb_file_open(const hb_file_input *in, int dir_fd, int read_special, hb_open_file *f,
                       int *err);

/* hb_file_close: closes f's descriptor if it owns it. */
void hb_file_close(hb_open_file *f);

/* hb_file_read: one read() of up to n bytes, retrying EINTR; *got 0 at
 * the end. Returns 0 or an errno value. */
int hb_file_read(int fd, void *buf, size_t n, size_t *got);

/* hb_file_unchanged: a regular file's snapshot again, compared with the
 * one hb_file_open took. Returns HB_OK (the same, or not a regular file),
 * HB_ERR_FILE_CHANGED, or HB_ERR_IO with *err set when statx fails. */
hb_status hb_file_unchanged(const hb_open_file *f, int *err);

/* hb_file_snapshot_same: 1 when a and b agree in every field both have
 * (the change cookie only when both have one), else 0. */
int hb_file_snapshot_same(const hb_file_snapshot *a, const hb_file_snapshot *b);

#endif /* HB_FILES_INPUT_H */
