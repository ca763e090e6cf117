/*
 * worker_cpu.c - a CPU worker: takes batches, hashes them on the CPU.
 *
 * Owns: the CPU worker loop, and hashing one batch on the CPU (which a
 * thread waiting on its own job also does, rather than wake a worker).
 * It takes batches a faulty device handed back first, then (when the pool
 * is a participant) queued jobs, in small pieces so every worker gets a
 * share; it exits when the engine closes and no device can hand it more.
 * A batch is hashed in pieces of a few MiB (backend_cpu.c); between two, a
 * batch whose jobs are all cancelled, or whose engine is closing, is
 * dropped: its jobs end at once. Digests from the multi-buffer lanes are
 * our code's, not OpenSSL's, so they are verified as a device's are
 * (none, a sample, all); on a mismatch the batch is recomputed by OpenSSL
 * and the engine's pool stops using the lanes.
 * Must not: touch OpenCL.
 */
#include "backend_cpu.h"
#include "engine_internal.h"
#include "fault.h"
#include "mb/mb_costs.h"
#include "verify.h"

#define CPU_TAKE_BYTES ((uint64_t)256 << 10)
#define CPU_TAKE_MESSAGES 1024u

hb_take_limits hb_cpu_take_limits_for(hb_cpu_impl impl)
{
    unsigned lanes = hb_cpu_impl_describe(impl)->lanes;
    if (lanes == 0) { /* OpenSSL hashes one at a time: a long message is a take of its own */
        hb_take_limits one_by_one = {.max_bytes = CPU_TAKE_BYTES,
                                     .max_messages = CPU_TAKE_MESSAGES,
                                     .long_above = CPU_TAKE_BYTES,
                                     .long_max = 1};
        return one_by_one;
    }
    /* Lanes fill only from takes of at least `lanes` messages: messages
     * above a lane's share of the byte budget are long, and a take holds
     * as many long ones as there are lanes. */
    uint64_t lane_share = CPU_TAKE_BYTES / 4;
    hb_take_limits in_lanes = {.max_bytes = lane_share * lanes,
                               .max_messages = CPU_TAKE_MESSAGES,
                               .long_above = lane_share,
                               .long_max = lanes};
    return in_lanes;
}

size_t hb_cpu_take_share_below(hb_cpu_impl impl, unsigned threads)
{
    if (hb_cpu_impl_describe(impl)->lanes == 0)
        return 0; /* one message per long take already: nothing to share */
    hb_mb_costs c = hb_mb_costs_of(impl);
    double by_openssl = c.lanes_ns / c.one_ns; /* messages a step is worth */
    return (size_t)(by_openssl * threads) + 1;
}

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

hb_cpu_impl hb_engine_cpu_impl_now(hb_engine *e)
{
    return atomic_load(&e->cpu_lanes_distrusted) ? HB_CPU_IMPL_SHA_NI : e->settings.cpu_impl;
}

void hb_engine_distrust_cpu_lanes(hb_engine *e)
{
    atomic_store(&e->cpu_lanes_distrusted, 1);
}

/* A test build's fault plan may corrupt what the lanes computed: every
 * digest of the batch, as a broken kernel would. */
static void inject_lane_fault(hb_engine *e, hb_digest *out, size_t n)
{
    if (hb_fault_for_cpu_lanes(&e->faults))
        for (size_t i = 0; i < n; i++)
            out[i][0] ^= 1u;
}

/* The index of the shortest of m[0..n) (0 when n is 0). */
static size_t shortest_message(const hb_msg *m, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (m[i].len < m[best].len)
            best = i;
    return best;
}

/* Checks lane digests against OpenSSL as the engine's verify mode says;
 * returns 1 when they stand, 0 when they were recomputed (or the watcher
 * stopped the check: *stopped). */
static int verify_lanes(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out, hb_cpu_watch *w,
                        int *stopped)
{
    uint64_t rng = hb_engine_next_random(e);
    size_t must = shortest_message(m, n); /* the batch's one sure check, at least cost */
    hb_verify_result check = {0, 0};
    hb_status st = hb_verify_batch(m, n, (const hb_digest *)out, e->settings.verify,
                                   e->settings.sample_per_mille, &must, n > 0, &rng, w, &check);
    hb_engine_count_verify(e, check.checked, check.mismatches);
    if (st == HB_ERR_CANCELLED) {
        *stopped = 1;
        return 0;
    }
    if (st == HB_OK && check.mismatches == 0)
        return 1;
    if (check.mismatches > 0)
        hb_engine_distrust_cpu_lanes(e);
    hb_engine_count_fallback(e);
    *stopped = !hb_cpu_hash_watched(HB_CPU_IMPL_SHA_NI, m, NULL, n, out, w, NULL);
    return 0;
}

int hb_cpu_hash_checked(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out, hb_cpu_watch *w)
{
    size_t from_lanes = 0;
    if (!hb_cpu_hash_watched(hb_engine_cpu_impl_now(e), m, NULL, n, out, w, &from_lanes))
        return 0;
    if (from_lanes == 0)
        return 1;
    inject_lane_fault(e, out, n);
    if (e->settings.verify == HB_VERIFY_OFF)
        return 1;
    int stopped = 0;
    verify_lanes(e, m, n, out, w, &stopped);
    return !stopped;
}

void hb_cpu_run_batch(hb_engine *e, hb_batch *b)
{
    uint64_t start = hb_now_ns();
    hb_cpu_watch watch = {hb_batch_keep_going, b, 0, 0};
    int whole = hb_batch_stop_reason(b) == HB_OK &&
                hb_cpu_hash_checked(e, b->msgs, b->n, b->digests, &watch);
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
