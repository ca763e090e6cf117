/*
 * fileid_set.h - a set of files named by (device, inode), for walks that
 * must visit each directory once however often it is reached.
 *
 * Owns: the set's memory and lookups. Must not: stat or open anything
 * (callers give it the ids).
 */
#ifndef HB_CLI_FILEID_SET_H
#define HB_CLI_FILEID_SET_H

#include <stddef.h>
#include <sys/types.h>

/* A file's identity. */
typedef struct {
    dev_t dev;
    ino_t ino;
} fileid;

/* An open-addressing hash set; all zero is an empty set. */
typedef struct {
    fileid *slot;
    unsigned char *used;
    size_t n, cap; /* cap: 0 or a power of two */
} fileid_set;

/* fileid_set_has: is id in s? */
int fileid_set_has(const fileid_set *s, fileid id);

/* fileid_set_add: puts id in s (no effect when it is there). Returns 0, or
 * ENOMEM (s unchanged). */
int fileid_set_add(fileid_set *s, fileid id);

/* fileid_set_free: releases s; it is empty again. */
void fileid_set_free(fileid_set *s);

#endif /* HB_CLI_FILEID_SET_H */
