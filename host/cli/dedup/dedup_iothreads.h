/*
 * dedup_iothreads.h - the plan of one dd_read_all call: which of its
 * files are first tried from the page cache without waiting (those on
 * rotational disks), and in which order the rest are read and by how
 * many reader threads, per device.
 *
 * Owns: the plan's types and the counters behind `dedup -v`'s "reads"
 * line. Must not: read file contents (dedup_read.c does).
 */
#ifndef HB_CLI_DEDUP_IOTHREADS_H
#define HB_CLI_DEDUP_IOTHREADS_H

#include <stddef.h>
#include <stdint.h>

#include "dedup.h"

/* Items read from one device (or all, under --io-threads N). */
typedef struct {
    size_t lo, hi;    /* positions order[lo .. hi) */
    unsigned readers; /* threads reading them */
    int rotational;
} dd_io_segment;

/* The read order of one call: order[] holds item indices, the items
 * themselves stay where they are (results go to their own slots). */
typedef struct {
    uint32_t *order;
    dd_io_segment *seg;
    size_t nseg;
} dd_io_plan;

/* dd_io_plan_make: the plan for the n items items[idx[0..n)] of
 * items[0..nitems) (idx NULL: the first n, n == nitems): per device,
 * files on a rotational disk in physical order (FIEMAP; inode order where
 * a file has no placed extent) read by one thread; files on a solid-state
 * or unknown one in inode order (no FIEMAP: order does not matter there)
 * read by ssd_readers threads. With r->o->io_threads set, one segment
 * over all files with that many readers. order[] holds item indices.
 * Returns 0, or ENOMEM (nothing held). */
int dd_io_plan_make(const dd_run *r, const dd_read_item *items, size_t nitems, const uint32_t *idx,
                    size_t n, unsigned ssd_readers, dd_io_plan *p);

/* dd_io_plan_free: releases what p holds. */
void dd_io_plan_free(dd_io_plan *p);

/* dd_io_plan_trace: a testing aid. When HASHBATCH_DEBUG_READ_ORDER is set
 * in the environment (to anything non-empty), prints the plan's order on
 * stderr, one line per file ("hashbatch: debug: read order CALL POS
 * PATH", CALL counting dd_read_all calls from 1) before it is read. */
void dd_io_plan_trace(const dd_run *r, const dd_read_item *items, const dd_io_plan *p);

/* dd_io_cache_try: should item it be tried from the page cache without
 * waiting before the plan is made? 1 when its file lies on a rotational
 * disk (elsewhere the planned readers are as many anyway), no
 * --io-threads was given, and the kernel was not found without
 * RWF_NOWAIT. */
int dd_io_cache_try(const dd_run *r, const dd_read_item *it);

/* dd_io_cache_readers: the threads of a cache pass over m items wanting
 * `bytes` bytes (counted up to a few MiB): ssd_readers, or 1 for a small
 * pass. Counted for the "reads" line. */
unsigned dd_io_cache_readers(size_t m, size_t bytes, unsigned ssd_readers);

/* dd_io_cache_count: counts a cache pass: items tried, items served whole
 * from the page cache. */
void dd_io_cache_count(uint64_t tried, uint64_t served);

/* dd_io_nowait_missing: the kernel has no RWF_NOWAIT (ENOSYS, EINVAL):
 * no more cache passes in this process. */
void dd_io_nowait_missing(void);

/* dd_read_describe: what the reads of this process did, in one line for
 * `dedup -v` (reads served from the page cache without waiting, reads
 * through the ordered readers and their orders, file counts, readers per
 * device kind), in buf (always NUL-terminated). */
void dd_read_describe(char *buf, size_t cap);

#endif /* HB_CLI_DEDUP_IOTHREADS_H */
