/*
 * dedup_cache.h - dedup's use of the hash cache (dedup_cache.c): digests
 * of files whose key (device, inode, size, times) is unchanged are taken
 * from the cache instead of being read and hashed; new ones are stored.
 *
 * Owns: the interface between the dedup run and cache/. Must not: decide
 * equality (a cached digest never replaces the byte comparison).
 */
#ifndef HB_CLI_DEDUP_CACHE_H
#define HB_CLI_DEDUP_CACHE_H

#include "dedup.h"

/* dd_cache_begin: opens the cache r->o asks for into r->cache. A cache
 * that cannot be used is reported in one line on stderr and the run goes
 * on without it (r->cache stays NULL). */
void dd_cache_begin(dd_run *r);

/* dd_cache_end: stores what the run hashed and closes the cache. */
void dd_cache_end(dd_run *r);

#endif /* HB_CLI_DEDUP_CACHE_H */
