/*
 * files.h - reading one input file for a files job (files_read.c), shared
 * with the job's machinery (files.c).
 *
 * Owns: the interface between the two. Must not: be included outside
 * host/src.
 */
#ifndef HB_FILES_H
#define HB_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "hashbatch.h"

/* One input opened for reading. */
typedef struct {
    int fd;
    int owned;       /* 1: opened from a path, closed by hb_file_close */
    int regular;     /* 1: a regular file (size and mtime are checked) */
    struct stat st0; /* fstat right after opening */
} hb_open_file;

/* hb_file_open: opens in (a path: O_NONBLOCK first, so a FIFO with no
 * writer cannot block the open) and stats it. Directories give HB_ERR_IO
 * with EISDIR; FIFOs, sockets and devices named by a path give
 * HB_ERR_NOT_REGULAR unless read_special. On failure *err holds the errno
 * (or 0) and nothing stays open. */
hb_status hb_file_open(const hb_file_input *in, int read_special, hb_open_file *f, int *err);

/* hb_file_close: closes f's descriptor if it owns it. */
void hb_file_close(hb_open_file *f);

/* hb_file_read: one read() of up to n bytes, retrying EINTR; *got 0 at
 * the end. Returns 0 or an errno value. */
int hb_file_read(int fd, void *buf, size_t n, size_t *got);

/* hb_file_changed: fstat again; 1 when a regular file's size or
 * modification time differs from what hb_file_open saw, else 0; an errno
 * value's negation when fstat fails. */
int hb_file_changed(const hb_open_file *f);

#endif /* HB_FILES_H */
