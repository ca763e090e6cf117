/*
 * worker_cpu.c - a CPU worker: takes batches, hashes them with OpenSSL.
 *
 * Owns: the CPU worker loop. It takes batches a faulty device handed back
 * first, then (when the pool is a participant) queued jobs, in small
 * pieces so every worker gets a share; it exits when the engine closes
 * and no device can hand it more.
 * Must not: touch OpenCL.
 */
#include "backend_cpu.h"
#include "engine_internal.h"

#define CPU_TAKE_BYTES ((uint64_t)256 << 10)
#define CPU_TAKE_MESSAGES 1024u

static hb_batch *next_batch(hb_engine *e)
{
    static const hb_take_limits limits = {CPU_TAKE_BYTES, CPU_TAKE_MESSAGES, CPU_TAKE_BYTES, 0};
    for (;;) {
        hb_batch *b = hb_queue_take(&e->queue, HB_TAKER_CPU, &limits, 1);
        if (b != NULL || atomic_load(&e->devices_done))
            return b;
        /* closing, but a device may still hand work back: wait for it */
        pthread_mutex_lock(&e->queue.lock);
        if (e->queue.fallback_head == NULL && !atomic_load(&e->devices_done))
            pthread_cond_wait(&e->queue.cpu_work, &e->queue.lock);
        pthread_mutex_unlock(&e->queue.lock);
    }
}

void *hb_cpu_worker_main(void *arg)
{
    hb_worker *w = arg;
    hb_engine *e = w->engine;
    hb_batch *b;
    while ((b = next_batch(e)) != NULL) {
        uint64_t start = hb_now_ns();
        hb_cpu_hash(b->msgs, NULL, b->n, b->digests);
        hb_engine_count_batch(e, w, b, hb_now_ns() - start, 0);
        hb_batch_deliver(b, HB_OK);
        hb_batch_free(b);
    }
    return NULL;
}
