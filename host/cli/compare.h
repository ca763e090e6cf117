/*
 * compare.h - the one byte-for-byte comparison of two open files, and the
 * one read loop under it, for dedup's proof (dedup_read.c) and the
 * re-check before `link` and `remove` act (act_check.c).
 *
 * Owns: that interface. Must not: print, or exit.
 */
#ifndef HB_CLI_COMPARE_H
#define HB_CLI_COMPARE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* cmp_read_full: up to n bytes of fd into buf, at offset off (off < 0:
 * from the file's position), EINTR and short reads retried until the end
 * of the file. Returns the count, or -1 with errno. */
ssize_t cmp_read_full(int fd, void *buf, size_t n, off_t off);

/* cmp_read_full_flags: the same at offset off >= 0 with preadv2's flags
 * (RWF_NOWAIT: from the page cache only, -1 with EAGAIN for what is not
 * there; ENOSYS where preadv2 has no flags). */
ssize_t cmp_read_full_flags(int fd, void *buf, size_t n, off_t off, int rwf);

typedef enum {
    CMP_EQUAL,  /* the same size bytes, and neither is longer */
    CMP_DIFFER, /* a byte differs: at detail.first_diff */
    CMP_LENGTH, /* detail.side's file is not size bytes long (changed) */
    CMP_ERROR   /* reading detail.side's file failed: detail.err */
} cmp_result;

typedef struct {
    int side;            /* 0: a, 1: b (CMP_LENGTH, CMP_ERROR) */
    int err;             /* errno (CMP_ERROR) */
    uint64_t first_diff; /* the offset of the first byte that differs */
} cmp_detail;

/* cmp_files: compares open files a and b, both said to be size bytes,
 * from their starts (positional reads: their offsets do not matter).
 * Buffers are the calling thread's, kept for its next call. */
cmp_result cmp_files(int a, int b, uint64_t size, cmp_detail *detail);

#endif /* HB_CLI_COMPARE_H */
