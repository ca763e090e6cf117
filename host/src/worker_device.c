/*
 * worker_device.c - a device worker: keeps one OpenCL device busy.
 *
 * Owns: the device loop. It takes a batch (up to a staging buffer's worth)
 * whenever a staging slot is free, plans it, and enqueues its launches;
 * it collects the oldest launch when the ring is full or the queue is
 * empty. Under sampled verification each launch is probed (probe.h) and
 * its checks recomputed as it is collected. A batch whose launches are
 * all collected is turned into digests, verified (whole messages: all of
 * them, or a sample when one is asked for), and delivered.
 * Between the launches of a long message it takes short work too, so a
 * huge message does not hold small jobs up.
 * On a device error everything in flight goes back, whole, to the CPU
 * pool (or fails, without fallback); a mismatch or repeated errors
 * quarantine the device.
 * Before each launch it asks whether the batch is still wanted (its jobs
 * cancelled, or the engine closing): if not, it enqueues no more,
 * collects what is in flight (the device reads the caller's bytes and
 * writes its states) and drops the batch, whose jobs then end at once;
 * verification stops the same way between pieces.
 * Each batch it took tells the scheduler what it added to the pipeline's
 * time (from when it was taken, or the previous batch was done,
 * whichever is later, to when it is done), so the device's model learns.
 * Must not: call OpenCL except through backend_opencl.c, or let any batch
 * it took go undelivered.
 */
#include <stdlib.h>
#include <time.h>

#include "engine_internal.h"
#include "pack.h"
#include "plan.h"
#include "prng.h"
#include "probe.h"
#include "thread_priority.h"
#include "verify.h"

#define TAKE_STAGINGS 4u

typedef struct device_batch {
    hb_batch *batch;
    hb_plan plan;
    size_t uniform_per_launch; /* 0: planned launches; else uniform ones */
    hb_span uniform_span;      /* the bytes every uniform launch reads */
    size_t launches;           /* launches enqueued (or to be) */
    size_t collected;
    hb_status stopped;       /* not HB_OK: no more launches; dropped once
                                those enqueued are collected */
    uint64_t taken_ns;       /* when the worker took it */
    hb_probe *probes;        /* one per launch under sampled verification, else NULL */
    uint64_t rng;            /* prng.h state: where the probes look */
    hb_verify_result probed; /* what the probes' checks found so far */
    struct device_batch *next;
} device_batch;

typedef struct {
    hb_worker *worker;
    hb_engine *engine;
    hb_opencl *cl;
    device_batch *in_flight; /* batches with launches not yet collected */
    hb_take_limits limits;
    hb_take_limits short_limits;
    int broken; /* an error handed everything back: stop the current batch */
    int quarantined;
    uint64_t last_done_ns; /* when the previous batch was done */
} device_loop;

static void unlink_batch(device_loop *loop, device_batch *db)
{
    device_batch **at = &loop->in_flight;
    while (*at != db)
        at = &(*at)->next;
    *at = db->next;
}

/* The scheduler learns what db cost the device (ok), or only that it is
 * no longer the device's (dropped, handed back). */
static void tell_scheduler(device_loop *loop, device_batch *db, int ok)
{
    hb_batch *b = db->batch;
    if (b->predicted_ns < 0)
        return;
    uint64_t now = hb_now_ns();
    uint64_t from = db->taken_ns > loop->last_done_ns ? db->taken_ns : loop->last_done_ns;
    loop->last_done_ns = now;
    int moved = hb_sched_done(&loop->engine->sched, loop->worker->stats_index, b->n, b->bytes,
                              b->predicted_ns, ok ? (double)(now - from) : -1);
    b->predicted_ns = -1; /* told once */
    if (moved)
        hb_queue_poke(&loop->engine->queue);
}

static void free_device_batch(device_batch *db)
{
    hb_plan_free(&db->plan);
    free(db->probes);
    free(db);
}

/* Under sampled verification: a probe for each of db's launches (db's
 * batch recomputed on the CPU when there is no memory for them). */
static int prepare_probes(device_loop *loop, device_batch *db)
{
    hb_engine *e = loop->engine;
    if (e->settings.verify != HB_VERIFY_SAMPLE)
        return 1;
    db->rng = hb_counters_next_random(&e->counters);
    db->probes = malloc((db->launches ? db->launches : 1) * sizeof *db->probes);
    return db->probes != NULL;
}

/* The first message of uniform launch k of db, and how many it hashes. */
static size_t uniform_launch(const device_batch *db, size_t k, size_t *n)
{
    size_t first = k * db->uniform_per_launch;
    *n = db->batch->n - first < db->uniform_per_launch ? db->batch->n - first
                                                       : db->uniform_per_launch;
    return first;
}

/* Launch k of db is collected: its probe's checks, recomputed now (a
 * later launch of a long message overwrites the states they compare). */
static void check_probe(device_batch *db, size_t k)
{
    if (db->probes == NULL)
        return;
    hb_batch *b = db->batch;
    hb_probe_result r;
    if (db->uniform_per_launch > 0) {
        size_t n, first = uniform_launch(db, k, &n);
        r = hb_probe_check(&db->probes[k], b->msgs + first, (const hb_digest *)b->digests + first,
                           1);
    } else {
        r = hb_probe_check(&db->probes[k], b->msgs, (const hb_digest *)b->digests, 0);
    }
    db->probed.checked += r.checks;
    db->probed.bytes += r.bytes;
    db->probed.mismatches += r.mismatches;
}

/* Whole messages recomputed: all with full verification, a random share
 * where sampled verification asks for one (sample_per_mille); the probes
 * did the rest. */
static hb_status verify_messages(hb_engine *e, device_batch *db, hb_verify_result *check)
{
    hb_batch *b = db->batch;
    *check = (hb_verify_result){0, 0, 0};
    hb_verify_mode mode = e->settings.verify;
    if (mode == HB_VERIFY_OFF || (mode == HB_VERIFY_SAMPLE && e->settings.sample_per_mille == 0) ||
        db->probed.mismatches > 0) /* recomputed on the CPU anyway */
        return HB_OK;
    uint64_t rng = hb_counters_next_random(&e->counters);
    hb_cpu_watch watch = {hb_batch_keep_going, b, 0, 0};
    return hb_verify_batch(b->msgs, b->n, (const hb_digest *)b->digests, mode,
                           e->settings.sample_per_mille, &rng, &watch, check);
}

/* A batch nobody wants any more, its launches all collected: dropped. */
static void drop_batch(device_loop *loop, device_batch *db, hb_status reason)
{
    unlink_batch(loop, db);
    tell_scheduler(loop, db, 0);
    hb_counters_batch(&loop->engine->counters, loop->worker->stats_index, NULL, 0, db->collected);
    hb_batch_abandon(db->batch, reason);
    hb_batch_free(db->batch);
    free_device_batch(db);
}

/* The batch's results are in: verify them and deliver, or hand back. */
static void complete_batch(device_loop *loop, device_batch *db)
{
    hb_engine *e = loop->engine;
    hb_batch *b = db->batch;
    hb_status stop = db->stopped != HB_OK ? db->stopped : hb_batch_stop_reason(b);
    if (stop != HB_OK) {
        drop_batch(loop, db, stop);
        return;
    }
    if (db->uniform_per_launch == 0)
        hb_states_to_digests(b->digests, b->n);
    hb_verify_result check;
    hb_status st = verify_messages(e, db, &check);
    check.checked += db->probed.checked;
    check.bytes += db->probed.bytes;
    check.mismatches += db->probed.mismatches;
    hb_counters_verify(&e->counters, check.checked, check.bytes, check.mismatches);
    if (st == HB_ERR_CANCELLED) {
        drop_batch(loop, db, hb_batch_stop_reason(b));
        return;
    }
    unlink_batch(loop, db);
    unsigned me = loop->worker->stats_index;
    hb_counters_batch(&e->counters, me, NULL, 0, db->launches);
    int good = st == HB_OK && check.mismatches == 0;
    tell_scheduler(loop, db, good);
    if (!good) {
        /* never deliver a doubtful batch: the CPU recomputes all of it.
         * The device is quarantined first, so that whoever gets the
         * recomputed batch already sees it in the stats. */
        hb_counters_fallback(&e->counters);
        if (check.mismatches > 0) {
            loop->quarantined = 1;
            hb_counters_quarantine(&e->counters, me, &e->sched, &e->queue);
        }
        hb_queue_push_fallback(&e->queue, b);
    } else {
        loop->worker->consecutive_errors = 0;
        hb_counters_batch(&e->counters, me, b, 0, 0);
        hb_batch_deliver(b, HB_OK);
        hb_batch_free(b);
    }
    free_device_batch(db);
}

/* After a device error: everything in flight goes back or fails. */
static void fail_all(device_loop *loop)
{
    hb_engine *e = loop->engine;
    hb_opencl_reset(loop->cl);
    size_t handed_back = 0;
    while (loop->in_flight != NULL) {
        device_batch *db = loop->in_flight;
        loop->in_flight = db->next;
        tell_scheduler(loop, db, 0);
        if (e->settings.cpu_fallback) {
            hb_queue_push_fallback(&e->queue, db->batch);
        } else {
            hb_batch_deliver(db->batch, HB_ERR_DEVICE);
            hb_batch_free(db->batch);
        }
        handed_back++;
        free_device_batch(db);
    }
    loop->broken = 1;
    unsigned me = loop->worker->stats_index;
    hb_counters_device_error(&e->counters, me, e->settings.cpu_fallback ? handed_back : 0);
    if (++loop->worker->consecutive_errors >= HB_QUARANTINE_AFTER_ERRORS) {
        loop->quarantined = 1;
        hb_counters_quarantine(&e->counters, me, &e->sched, &e->queue);
    }
}

/* The message bytes launch k of db hashes (its lanes' blocks). */
static uint64_t launch_bytes(const device_batch *db, size_t k)
{
    if (db->uniform_per_launch > 0) {
        size_t n;
        uniform_launch(db, k, &n);
        return (uint64_t)n * db->batch->msgs[0].len;
    }
    const hb_launch *launch = &db->plan.launches[k];
    uint64_t blocks = 0;
    for (size_t l = 0; l < launch->nsteps; l++)
        blocks += db->plan.steps[launch->first_step + l].nblocks;
    return blocks * HB_BLOCK_BYTES;
}

/* A test build's fault plan may hold a launch up, as a slow device would. */
static void inject_delay(device_loop *loop)
{
    uint64_t ns = hb_fault_delay(&loop->engine->faults, HB_FAULT_DELAY_DEVICE);
    struct timespec t = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (ns > 0 && nanosleep(&t, &t) != 0)
        ;
}

static void collect_one(device_loop *loop)
{
    void *tag = NULL;
    inject_delay(loop);
    if (hb_opencl_collect(loop->cl, &tag, &loop->engine->error) != HB_OK) {
        fail_all(loop);
        return;
    }
    device_batch *db = tag;
    hb_batch_count_work(db->batch, launch_bytes(db, db->collected));
    check_probe(db, db->collected);
    if (++db->collected == db->launches)
        complete_batch(loop, db);
}

/* Before launch k of db: if the batch is not wanted any more, it gets no
 * more launches (those in flight are collected as usual, then it is
 * dropped). Returns 1 if it stopped. */
static int stop_if_unwanted(device_loop *loop, device_batch *db, size_t k)
{
    hb_status reason = hb_batch_stop_reason(db->batch);
    if (reason == HB_OK)
        return 0;
    db->stopped = reason;
    db->launches = k;
    if (db->collected == db->launches)
        complete_batch(loop, db); /* nothing in flight: dropped now */
    return 1;
}

/* Before launch k of db: if a probe of an earlier launch found a
 * mismatch, the batch gets no more launches: once those in flight are
 * collected, it goes to the CPU whole (complete_batch). Returns 1 if it
 * stopped. */
static int stop_if_doubtful(device_loop *loop, device_batch *db, size_t k)
{
    if (db->probed.mismatches == 0)
        return 0;
    db->launches = k;
    if (db->collected == db->launches)
        complete_batch(loop, db);
    return 1;
}

/* Enqueues launch k of db; returns 0 when it did not (an error, or the
 * batch stopped). */
static int enqueue_launch(device_loop *loop, device_batch *db, size_t k)
{
    while (!loop->broken && hb_opencl_free_slots(loop->cl) == 0)
        collect_one(loop);
    while (!loop->broken && db->plan.launches[k].continues && hb_opencl_in_flight(loop->cl) > 0)
        collect_one(loop);
    if (loop->broken || stop_if_unwanted(loop, db, k) || stop_if_doubtful(loop, db, k))
        return 0;
    hb_probe *probe = NULL;
    if (db->probes != NULL) {
        const hb_launch *launch = &db->plan.launches[k];
        probe = &db->probes[k];
        hb_probe_plan_launch(probe, db->plan.steps + launch->first_step, launch->nsteps,
                             db->batch->msgs, (const hb_digest *)db->batch->digests, &db->rng);
    }
    if (hb_opencl_enqueue(loop->cl, &db->plan, k, db->batch->msgs, db->batch->digests, probe,
                          &loop->engine->faults, db, &loop->engine->error) != HB_OK) {
        fail_all(loop);
        return 0;
    }
    return 1;
}

static void run_batch(device_loop *loop, hb_batch *b, int may_interleave);

/* Between launches of a long batch: one batch of short work, if any. */
static void interleave_short_work(device_loop *loop)
{
    hb_batch *b = hb_queue_take(&loop->engine->queue, HB_TAKER_DEVICE, &loop->short_limits, 0);
    if (b != NULL)
        run_batch(loop, b, 0);
}

/* A test build's HB_FAULT_HOLD_LONG, before a launch of db that continues
 * a message: returns 0 when db may go on; else collects a launch in
 * flight (or waits a little) and returns 1: the caller does what it does
 * between two launches again, and asks again. */
static int hold_long_batch(device_loop *loop, device_batch *db)
{
    hb_fault_state *f = &loop->engine->faults;
    if (loop->broken || !hb_fault_holding(f) || hb_batch_stop_reason(db->batch) != HB_OK)
        return 0;
    if (hb_opencl_in_flight(loop->cl) > 0)
        collect_one(loop);
    else
        hb_fault_wait_hold(f, 1000u * 1000);
    return 1;
}

static int enqueue_uniform(device_loop *loop, device_batch *db, size_t k)
{
    while (!loop->broken && hb_opencl_free_slots(loop->cl) == 0)
        collect_one(loop);
    if (loop->broken || stop_if_unwanted(loop, db, k) || stop_if_doubtful(loop, db, k))
        return 0;
    hb_batch *b = db->batch;
    size_t n, first = uniform_launch(db, k, &n);
    hb_probe *probe = NULL;
    if (db->probes != NULL) {
        probe = &db->probes[k];
        hb_probe_plan_uniform(probe, b->msgs + first, n, &db->rng);
    }
    if (hb_opencl_enqueue_uniform(loop->cl, b->msgs + first, n, &db->uniform_span,
                                  b->digests + first, probe, &loop->engine->faults, db,
                                  &loop->engine->error) != HB_OK) {
        fail_all(loop);
        return 0;
    }
    return 1;
}

/* A batch of short messages of one length: uniform launches. */
static void run_uniform_batch(device_loop *loop, device_batch *db)
{
    size_t launches = db->launches;
    for (size_t k = 0; k < launches && enqueue_uniform(loop, db, k); k++)
        ;
}

/* The device's cost terms now, for the class of b's messages: they size
 * its launches. */
static hb_cost_terms model_for(const device_loop *loop, const hb_batch *b)
{
    hb_cost_terms terms[HB_COST_CLASSES];
    uint64_t predicted, measured;
    int takes;
    hb_sched_read(&loop->engine->sched, loop->worker->stats_index, terms, &predicted, &measured,
                  &takes);
    return terms[hb_cost_class_of(b->n, b->bytes)];
}

/* A batch the device cannot plan or probe (out of memory): the CPU
 * hashes it, which needs neither. */
static void give_to_cpu(device_loop *loop, device_batch *db, hb_batch *b)
{
    if (db != NULL)
        free_device_batch(db);
    if (b->predicted_ns >= 0)
        hb_sched_done(&loop->engine->sched, loop->worker->stats_index, b->n, b->bytes,
                      b->predicted_ns, -1);
    hb_queue_push_fallback(&loop->engine->queue, b);
}

static void run_batch(device_loop *loop, hb_batch *b, int may_interleave)
{
    device_batch *db = calloc(1, sizeof *db);
    hb_span span = {NULL, 0};
    hb_cost_terms model = model_for(loop, b);
    if (db != NULL)
        db->taken_ns = hb_now_ns();
    size_t uniform =
        db != NULL ? hb_opencl_uniform_launch_size(loop->cl, b->msgs, b->n, &span, &model) : 0;
    if (uniform > 0) {
        db->batch = b;
        db->uniform_per_launch = uniform;
        db->uniform_span = span;
        db->launches = (b->n + uniform - 1) / uniform;
        if (!prepare_probes(loop, db)) {
            give_to_cpu(loop, db, b);
            return;
        }
        db->next = loop->in_flight;
        loop->in_flight = db;
        loop->broken = 0;
        run_uniform_batch(loop, db);
        return;
    }
    size_t mixed = hb_opencl_reads_in_place(loop->cl, b->msgs, b->n)
                       ? hb_opencl_in_place_launch_bytes(loop->cl, &model)
                       : 0;
    if (db == NULL || hb_plan_build(&db->plan, b->msgs, b->n, hb_opencl_staging_bytes(loop->cl),
                                    mixed) != HB_OK) {
        give_to_cpu(loop, db, b);
        return;
    }
    db->batch = b;
    db->launches = db->plan.nlaunches;
    if (!prepare_probes(loop, db)) {
        give_to_cpu(loop, db, b);
        return;
    }
    db->next = loop->in_flight;
    loop->in_flight = db;
    loop->broken = 0;
    /* an error frees db along with everything in flight, and a stop may
     * free it: after either, db is not touched again */
    size_t launches = db->plan.nlaunches;
    for (size_t k = 0; k < launches; k++) {
        if (may_interleave && db->plan.launches[k].continues)
            do
                interleave_short_work(loop);
            while (hold_long_batch(loop, db));
        if (loop->broken || !enqueue_launch(loop, db, k))
            break;
    }
}

hb_take_limits hb_device_take_limits(hb_opencl *cl)
{
    size_t staging = hb_opencl_staging_bytes(cl);
    /* several staging buffers per take: more messages of each length, so
     * the plan fills its launches; long messages a lane group at a time */
    return (hb_take_limits){
        .max_bytes = staging * TAKE_STAGINGS,
        /* a staging buffer's lanes: with a million short messages, batches
         * of a quarter million keep the device busy while the previous
         * batch is verified and delivered */
        .max_messages = hb_plan_lanes_max(staging),
        .long_above = staging / 4,
        .long_max = HB_LANES,
        .refuse_long = 0,
    };
}

static void init_loop(device_loop *loop, hb_worker *w)
{
    *loop = (device_loop){.worker = w, .engine = w->engine, .cl = w->device};
    loop->limits = hb_device_take_limits(w->device);
    loop->limits.share = hb_sched_share_for;
    loop->limits.taken = hb_sched_taken_for;
    loop->limits.share_ctx = &w->taker;
    loop->short_limits = loop->limits;
    loop->short_limits.refuse_long = 1;
}

void *hb_device_worker_main(void *arg)
{
    hb_worker *w = arg;
    device_loop loop;
    if (w->engine->settings.idle_priority)
        hb_thread_priority_lowest();
    init_loop(&loop, w);
    uint64_t busy_since = 0;
    while (!loop.quarantined) {
        int idle = hb_opencl_in_flight(loop.cl) == 0;
        if (idle && busy_since != 0) {
            hb_counters_batch(&w->engine->counters, w->stats_index, NULL, hb_now_ns() - busy_since,
                              0);
            busy_since = 0;
        }
        if (hb_opencl_free_slots(loop.cl) > 0) {
            hb_batch *b = hb_queue_take(&w->engine->queue, HB_TAKER_DEVICE, &loop.limits, idle);
            if (b != NULL) {
                if (busy_since == 0)
                    busy_since = hb_now_ns();
                run_batch(&loop, b, 1);
                continue;
            }
            if (idle && hb_queue_is_closing(&w->engine->queue))
                break;
            if (idle)
                continue;
        }
        collect_one(&loop);
    }
    while (hb_opencl_in_flight(loop.cl) > 0 && loop.in_flight != NULL)
        collect_one(&loop);
    if (busy_since != 0)
        hb_counters_batch(&w->engine->counters, w->stats_index, NULL, hb_now_ns() - busy_since, 0);
    return NULL;
}
