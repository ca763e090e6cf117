/*
 * sum.h - internal interfaces of `hashbatch sum`: loading one file
 * (file_load.c), hashing files in groups (sum_batch.c) and printing
 * sha1sum's lines (sum_format.c).
 *
 * Owns: those three interfaces. Must not: hold policy; each .c file does.
 */
#ifndef HB_CLI_SUM_H
#define HB_CLI_SUM_H

#include <stddef.h>
#include <stdio.h>

#include "hashbatch.h"

/* ---- file_load.c ------------------------------------------------------ */

/* The whole content of one file: heap memory or a read-only mapping. */
typedef struct {
    void *ptr; /* never NULL after a successful load, even for 0 bytes */
    size_t len;
    int mapped; /* 1: munmap(ptr, len); 0: free(ptr) */
} file_data;

/* file_load: reads all of name ("-": standard input) into *out. Regular
 * files larger than map_over bytes are mapped instead; other inputs that
 * grow past map_over bytes are spilled to an unlinked temporary file and
 * mapped, so memory stays bounded. Returns 0, or an errno value (EISDIR
 * for a directory) with *out empty; never a partial file. */
int file_load(const char *name, size_t map_over, file_data *out);

/* file_data_release: frees or unmaps d's bytes; d may be empty. */
void file_data_release(file_data *d);

/* ---- sum_format.c ------------------------------------------------------ */

/* sum_format_line: writes sha1sum's line for digest d of file name to f:
 * "HEX  NAME\n", or "\HEX  ESCAPED\n" when the name holds a backslash,
 * newline or carriage return. */
void sum_format_line(FILE *f, const hb_digest d, const char *name);

/* ---- sum_batch.c ------------------------------------------------------- */

/* One named input waiting in a group. */
typedef struct {
    const char *name; /* borrowed from argv */
    file_data data;
    int err; /* errno of the failed load; 0: data is valid */
} sum_item;

/* Files read and waiting to be hashed together in one hb_sha1_batch. */
typedef struct {
    hb_engine *engine;
    size_t max_bytes; /* group budget; bigger files are hashed alone */
    size_t max_files;
    sum_item *items;
    hb_msg *msgs;
    hb_digest *digests;
    size_t count;   /* items waiting */
    size_t bytes;   /* bytes read into memory */
    size_t mapped;  /* files mapped rather than read */
    int unreadable; /* some file could not be read */
} sum_batch;

/* sum_batch_init: an empty group for engine e. Returns 0 or ENOMEM. */
int sum_batch_init(sum_batch *b, hb_engine *e, size_t max_bytes, size_t max_files);

/* sum_batch_add: loads name and queues it, hashing and printing the
 * waiting group first when it is full. Returns 0; on a hashing failure
 * (already reported) CLI_EXIT_FAILURE, after which b may only be freed. */
int sum_batch_add(sum_batch *b, const char *name);

/* sum_batch_flush: hashes the waiting files and prints their lines (or
 * errors) in order. Returns as sum_batch_add does. */
int sum_batch_flush(sum_batch *b);

/* sum_batch_free: releases everything b holds (waiting files included). */
void sum_batch_free(sum_batch *b);

#endif /* HB_CLI_SUM_H */
