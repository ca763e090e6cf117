/*
 * worker_cpu.c - a CPU worker: takes batches, hashes them with OpenSSL.
 *
 * Owns: the CPU worker loop, and hashing one batch on the CPU (which a
 * thread waiting on its own job also does, rather than wake a worker).
 * It takes batches a faulty device handed back first, then (when the pool
 * is a participant) queued jobs, in small pieces so every worker gets a
 * share; it exits when the engine closes and no device can hand it more.
 * A batch is hashed in pieces of a few MiB (backend_cpu.c); between two, a
 * batch whose jobs are all cancelled, or whose engine is closing, is
 * dropped: its jobs end at once.
 * Must not: touch OpenCL.
 */
#include "backend_cpu.h"
#include "engine_internal.h"

#define CPU_TAKE_BYTES ((uint64_t)256 << 10)
#define CPU_TAKE_MESSAGES 1024u

/* A long message is a take of its own: OpenSSL hashes one at a time. */
const hb_take_limits hb_cpu_take_limits = {
    .max_bytes = CPU_TAKE_BYTES,
    .max_messages = CPU_TAKE_MESSAGES,
    .long_above = CPU_TAKE_BYTES,
    .long_max = 1,
    .refuse_long = 0,
};

static hb_batch *next_batch(hb_engine *e)
{
    for (;;) {
        hb_batch *b = hb_queue_take(&e->queue, HB_TAKER_CPU, &e->pool_limits, 1);
        if (b != NULL || atomic_load(&e->devices_done))
            return b;
        /* closing, but a device may still hand work back: wait for it */
        pthread_mutex_lock(&e->queue.lock);
        if (e->queue.fallback_head == NULL && !atomic_load(&e->devices_done))
            pthread_cond_wait(&e->queue.cpu_work, &e->queue.lock);
        pthread_mutex_unlock(&e->queue.lock);
    }
}

int hb_batch_keep_going(void *batch, uint64_t bytes)
{
    hb_batch *b = batch;
    hb_batch_count_work(b, bytes);
    return hb_batch_stop_reason(b) == HB_OK;
}

void hb_cpu_run_batch(hb_engine *e, hb_batch *b)
{
    uint64_t start = hb_now_ns();
    hb_cpu_watch watch = {hb_batch_keep_going, b, 0, 0};
    int whole = hb_batch_stop_reason(b) == HB_OK &&
                hb_cpu_hash_watched(b->msgs, NULL, b->n, b->digests, &watch);
    hb_worker pool = {.engine = e, .stats_index = e->cpu_stats_index};
    hb_engine_count_batch(e, &pool, whole ? b : NULL, hb_now_ns() - start, 0);
    if (whole)
        hb_batch_deliver(b, HB_OK);
    else
        hb_batch_abandon(b, hb_batch_stop_reason(b)); /* cancelled or closing */
    hb_batch_free(b);
}

void *hb_cpu_worker_main(void *arg)
{
    hb_worker *w = arg;
    hb_batch *b;
    while ((b = next_batch(w->engine)) != NULL)
        hb_cpu_run_batch(w->engine, b);
    return NULL;
}
