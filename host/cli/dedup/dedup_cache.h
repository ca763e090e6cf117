/*
 * dedup_cache.h - dedup's use of the hash cache (dedup_cache.c): digests
 * of files whose key (filesystem, device, inode, size, times) is
 * unchanged are taken from the cache instead of being read and hashed;
 * new ones are stored.
 *
 * Owns: the interface between the dedup run and cache/. Must not: decide
 * equality (a cached digest never replaces the byte comparison).
 */
#ifndef HB_CLI_DEDUP_CACHE_H
#define HB_CLI_DEDUP_CACHE_H

#include <stdint.h>

#include "dedup.h"

/* dd_cache_begin: opens the cache r->o asks for into r->cache. A cache
 * that cannot be used is reported in one line on stderr and the run goes
 * on without it (r->cache stays NULL). */
void dd_cache_begin(dd_run *r);

/* dd_cache_end: stores what the run hashed and proved (one transaction),
 * prints its counts under --stats, and closes the cache. */
void dd_cache_end(dd_run *r);

/* dd_cache_lookup: the cache's rows for the candidates cand[0..n) (with
 * the keys the walk saw; one read transaction, one ordered pass).
 * Nothing without a cache. */
void dd_cache_lookup(dd_run *r, const uint32_t *cand, size_t n);

/* dd_cache_expected_work: the most the prefix and whole-file stages can
 * hash for the candidates cand[0..n) after dd_cache_lookup: a prefix and
 * a whole file for each, less what the cache holds (everything without a
 * cache), as messages and bytes. */
void dd_cache_expected_work(const dd_run *r, const uint32_t *cand, size_t n,
                            uint64_t *messages, uint64_t *bytes);

/* dd_cache_prefix: the cached prefix SHA-1 of inode k into out. 1 when
 * the cache had one for its current key, else 0. */
int dd_cache_prefix(dd_run *r, uint32_t k, uint8_t out[20]);

/* dd_cache_take_full: when the cache holds inode k's whole-file SHA-1 for
 * its current key, puts it in the inode (full, hashed) and marks it
 * cached (dd_cache_is_cached). 1 when it did, else 0. */
int dd_cache_take_full(dd_run *r, uint32_t k);

/* dd_cache_is_cached: was inode k's whole-file SHA-1 taken from the
 * cache (so its file is not read to hash it)? */
int dd_cache_is_cached(const dd_run *r, uint32_t k);

/* dd_cache_proof: the stored byte proof id of inode k (its key unchanged
 * and its digest taken from the cache), or 0. */
int64_t dd_cache_proof(const dd_run *r, uint32_t k);

/* dd_cache_count_proof_join: one inode joined its class by a stored
 * proof, without reading (for --stats). */
void dd_cache_count_proof_join(dd_run *r);

#endif /* HB_CLI_DEDUP_CACHE_H */
