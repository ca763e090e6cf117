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
 * our code's, not OpenSSL's, so they are verified: none; all (every
 * digest again by OpenSSL); or sampled, by structure (mb_batch.h: every
 * lane position, tail kind and kernel-call boundary of the batch on a few
 * blocks each, a cost per batch and not per byte); on a mismatch the
 * batch is recomputed by OpenSSL and the engine's pool stops using the
 * lanes. Each batch taken from the
 * jobs tells the scheduler what it took (the thread's time), so the pool's
 * model learns, and pokes the queue (a decision may have changed).
 * Must not: touch OpenCL, or the queue's fields.
 */
#include <time.h>

#include "backend_cpu.h"
#include "engine_internal.h"
#include "fault.h"
#include "long_share.h"
#include "mb/mb_costs.h"
#include "thread_priority.h"
#include "verify.h"

/* A take is sized by time, from the pool's model: about this much of one
 * thread's work. Long enough that a take's own cost (the queue's lock, a
 * batch's bookkeeping: a microsecond or two) stays near 1%; short enough
 * that the last takes of a job end close together on every thread and a
 * cancel or a close is answered at once. A design target, not a
 * measurement: the sizes it gives follow the machine's measured speed. */
#define TAKE_TARGET_NS 200000.0
#define TAKE_BYTES_MIN ((uint64_t)64 << 10)
#define TAKE_BYTES_MAX ((uint64_t)64 << 20)
#define TAKE_MESSAGES_MAX 65536u

static uint64_t clamp_u64(double x, uint64_t lo, uint64_t hi)
{
    return !(x > (double)lo) ? lo : x > (double)hi ? hi : (uint64_t)x;
}

hb_take_limits hb_cpu_take_limits_for(hb_cpu_impl impl, const hb_cost_terms model[HB_COST_CLASSES])
{
    unsigned lanes = hb_cpu_impl_describe(impl)->lanes;
    const hb_cost_terms *shorts = &model[0], *mids = &model[1];
    uint64_t bytes = clamp_u64(TAKE_TARGET_NS / mids->ns_per_byte, TAKE_BYTES_MIN, TAKE_BYTES_MAX);
    double per_short = shorts->ns_per_message + 64.0 * shorts->ns_per_byte;
    size_t messages =
        (size_t)clamp_u64(TAKE_TARGET_NS / per_short, lanes ? lanes : 1, TAKE_MESSAGES_MAX);
    if (lanes == 0) { /* OpenSSL hashes one at a time: a long message is a take of its own */
        hb_take_limits one_by_one = {
            .max_bytes = bytes, .max_messages = messages, .long_above = bytes, .long_max = 1};
        return one_by_one;
    }
    /* Lanes fill only from takes of at least `lanes` messages: messages
     * above a lane's share of the byte budget are long, and a take holds
     * as many long ones as there are lanes. */
    uint64_t lane_share = bytes / lanes;
    hb_take_limits in_lanes = {.max_bytes = lane_share * lanes,
                               .max_messages = messages,
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

int hb_batch_keep_going(void *batch, uint64_t bytes)
{
    hb_batch *b = batch;
    hb_batch_count_work(b, bytes);
    return hb_batch_stop_reason(b) == HB_OK;
}

/* A pool batch's watcher: hb_batch_keep_going, and a test build's
 * HB_FAULT_HOLD_LONG, which holds a batch of more than one piece here,
 * after a piece, until the test lifts it or the batch is not wanted. */
typedef struct {
    hb_engine *engine;
    hb_batch *batch;
} pool_watch;

static int pool_keep_going(void *ctx, uint64_t bytes)
{
    pool_watch *p = ctx;
    int go = hb_batch_keep_going(p->batch, bytes);
    while (go && p->batch->bytes > HB_CPU_PIECE_BYTES && hb_fault_holding(&p->engine->faults)) {
        hb_fault_wait_hold(&p->engine->faults, 10u * 1000 * 1000);
        go = hb_batch_stop_reason(p->batch) == HB_OK;
    }
    return go;
}

hb_cpu_impl hb_engine_cpu_impl_now(hb_engine *e)
{
    return atomic_load(&e->cpu_lanes_distrusted) ? HB_CPU_IMPL_SHA_NI : e->settings.cpu_impl;
}

void hb_engine_distrust_cpu_lanes(hb_engine *e)
{
    atomic_store(&e->cpu_lanes_distrusted, 1);
    hb_queue_end_whole_takes(&e->queue, &e->pool_limits); /* OpenSSL alone shares by takes */
}

/* Checks lane digests against OpenSSL, every one of them (full); returns
 * 1 when they stand, 0 when they do not (*wrong: some differed; else the
 * check could not run) or the watcher stopped the check (*stopped). */
static int verify_lanes_fully(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out,
                              hb_cpu_watch *w, int *stopped, int *wrong)
{
    uint64_t rng = hb_counters_next_random(&e->counters);
    hb_verify_result check = {0, 0, 0};
    hb_status st =
        hb_verify_batch(m, n, (const hb_digest *)out, HB_VERIFY_FULL, 0, &rng, w, &check);
    hb_counters_verify(&e->counters, check.checked, check.bytes, check.mismatches);
    *wrong = check.mismatches > 0;
    if (st == HB_ERR_CANCELLED) {
        *stopped = 1;
        return 0;
    }
    return st == HB_OK && check.mismatches == 0;
}

/* After a mismatch (or a check that could not run): the lanes are out of
 * this engine, and the batch is OpenSSL's. Returns 0 when w stopped it. */
static int recompute_without_lanes(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out,
                                   hb_cpu_watch *w, int lanes_wrong)
{
    if (lanes_wrong)
        hb_engine_distrust_cpu_lanes(e);
    hb_counters_fallback(&e->counters);
    return hb_cpu_hash_watched(HB_CPU_IMPL_SHA_NI, m, NULL, n, out, w, NULL);
}

/* The pool's other threads, who may help with a shared list. */
static unsigned pool_helpers(const hb_engine *e)
{
    return e->settings.cpu_threads > 1 ? e->settings.cpu_threads - 1 : 0;
}

uint64_t hb_cpu_take_whole_from(const hb_engine *e)
{
    hb_cpu_impl impl = e->settings.cpu_impl;
    if (pool_helpers(e) == 0 || e->settings.cpu_impl_given || impl == HB_CPU_IMPL_SHA_NI ||
        !hb_long_share_pays(impl, e->settings.cpu_threads))
        return 0;
    return hb_long_share_min_bytes(impl);
}

/* Hashes m[0..n) with impl (chosen by the engine's rules), a list of few
 * long messages shared with the pool's idle threads. */
static int hash_with_impl(hb_engine *e, hb_cpu_impl impl, const hb_msg *m, size_t n, hb_digest *out,
                          hb_cpu_watch *w, size_t *from_lanes, hb_mb_check *check,
                          uint64_t *helper_cpu_ns)
{
    int choose = !e->settings.cpu_impl_given && impl != HB_CPU_IMPL_SHA_NI;
    if (choose && hb_long_share_worth(impl, pool_helpers(e), m, n)) {
        unsigned helpers = pool_helpers(e) < n - 1 ? pool_helpers(e) : (unsigned)(n - 1);
        hb_long_share_setup shared = {&e->queue, helpers, impl, check, 0};
        hb_long_share_result got;
        int done = hb_long_share_hash(&shared, m, n, out, w, &got);
        hb_counters_moved(&e->counters, got.helper_bytes);
        *from_lanes = got.from_lanes;
        *helper_cpu_ns = got.helper_cpu_ns;
        return done;
    }
    if (choose)
        impl = hb_mb_impl_for_few(impl, n); /* long messages shared among cores, as a rule */
    return hb_cpu_hash_structured(impl, m, NULL, n, out, w, from_lanes, check);
}

int hb_cpu_hash_checked(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out, hb_cpu_watch *w,
                        uint64_t *helper_cpu_ns)
{
    hb_mb_check check = {0};
    check.brk = (hb_mb_break_kind)hb_fault_for_cpu_kernel(&e->faults, &check.brk_which);
    hb_verify_mode mode = e->settings.verify;
    int by_structure = mode == HB_VERIFY_SAMPLE || check.brk != HB_MB_BREAK_NONE;
    size_t from_lanes = 0;
    uint64_t helped_ns = 0;
    int done = hash_with_impl(e, hb_engine_cpu_impl_now(e), m, n, out, w, &from_lanes,
                              by_structure ? &check : NULL, &helped_ns);
    if (helper_cpu_ns != NULL)
        *helper_cpu_ns = helped_ns;
    if (!done)
        return 0;
    if (from_lanes == 0 || mode == HB_VERIFY_OFF)
        return 1;
    if (mode == HB_VERIFY_SAMPLE) {
        hb_counters_verify(&e->counters, check.runs + check.tails, check.bytes, check.mismatches);
        return check.mismatches == 0 || recompute_without_lanes(e, m, n, out, w, 1);
    }
    int stopped = 0, wrong = 0;
    if (verify_lanes_fully(e, m, n, out, w, &stopped, &wrong))
        return 1;
    return !stopped && recompute_without_lanes(e, m, n, out, w, wrong);
}

/* A test build's fault plan may hold a pool batch up, as a slow or busy
 * CPU would. */
static uint64_t inject_delay(hb_engine *e)
{
    uint64_t ns = hb_fault_delay(&e->faults, HB_FAULT_DELAY_CPU);
    struct timespec t = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (ns > 0 && nanosleep(&t, &t) != 0)
        ;
    return ns; /* counted as the batch's cost: a slow CPU, not a wait */
}

void hb_cpu_run_batch(hb_engine *e, hb_batch *b)
{
    double predicted_ns = b->predicted_ns;
    uint64_t start = hb_now_ns(), cpu_start = hb_thread_cpu_ns();
    pool_watch held = {e, b};
    hb_cpu_watch watch = {pool_keep_going, &held, 0, 0};
    uint64_t helped_ns = 0;
    int whole = hb_batch_stop_reason(b) == HB_OK &&
                hb_cpu_hash_checked(e, b->msgs, b->n, b->digests, &watch, &helped_ns);
    uint64_t cost = hb_thread_cpu_ns() - cpu_start + helped_ns + inject_delay(e);
    unsigned pool = e->counters.pool_index;
    hb_counters_batch(&e->counters, pool, whole ? b : NULL, hb_now_ns() - start, 0);
    if (predicted_ns >= 0) {
        /* the model learns the thread's CPU time: with more threads than
         * free cores (a caller helping, a device on the same cores) the
         * wall time would count the waits for a core as hashing */
        if (hb_sched_done(&e->sched, pool, b->n, b->bytes, predicted_ns, whole ? (double)cost : -1))
            hb_queue_poke(&e->queue);
    }
    if (whole)
        hb_batch_deliver(b, HB_OK);
    else
        hb_batch_abandon(b, hb_batch_stop_reason(b)); /* cancelled or closing */
    hb_batch_free(b);
}

void *hb_cpu_worker_main(void *arg)
{
    hb_worker *w = arg;
    if (w->engine->settings.idle_priority)
        hb_thread_priority_lowest();
    for (;;) {
        hb_help_offer *joined;
        hb_batch *b = hb_queue_take_or_help(&w->engine->queue, &w->engine->pool_limits, &joined);
        if (joined != NULL)
            joined->help(joined->ctx);
        else if (b != NULL)
            hb_cpu_run_batch(w->engine, b);
        else
            return NULL;
    }
}
