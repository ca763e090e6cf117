/*
 * thread_pool.h - a fixed pool of threads running parallel-for loops.
 *
 * Owns: worker threads and the hand-out of task indices. The calling thread
 * works too, so a pool of N threads starts N - 1 workers.
 * Must not: know about hashing; tasks are opaque callbacks.
 */
#ifndef HB_THREAD_POOL_H
#define HB_THREAD_POOL_H

#include <stddef.h>

#include "hashbatch.h"

typedef struct hb_pool hb_pool;
typedef void (*hb_pool_task)(void *context, size_t index);

hb_status hb_pool_create(hb_pool **out, unsigned threads);
void hb_pool_destroy(hb_pool *pool);

/* hb_pool_run: task(context, i) for every i in [0, count), spread over the
 * pool; returns when all have finished. Concurrent callers take turns. */
void hb_pool_run(hb_pool *pool, hb_pool_task task, void *context, size_t count);

unsigned hb_pool_threads(const hb_pool *pool);

#endif /* HB_THREAD_POOL_H */
