/*
 * test_sched.c - the engine under the scheduler: backend auto with the
 * default device spec (every OpenCL device and the CPU pool), real worker
 * threads, real OpenCL (pocl's CPU device will do), OpenSSL the oracle.
 *
 * Covers: (a) forced models route: the pool forced cheap and every device
 * dear, a 20,000-message job is hashed by the pool alone; a device forced
 * cheap and the rest dear, by that device alone (20,000 messages of 4 KiB
 * are more than the pool hashes in one take, so hashing on the caller's
 * thread cannot explain it); (b) with the models as calibrated, 200 jobs
 * of one 64-byte message (by hb_sha1_batch and by hb_submit, all queued
 * at once) stay off the devices, whose fixed cost outweighs them; (c) a
 * backend that turns slow after being forced cheap and left to learn
 * loses its share within a few jobs, the other's model held at fixed
 * terms; not slowed (the control) it keeps the work. The learner's
 * batches are timed by a clock the test sets (hb_testing_set_cost_clock:
 * each batch costs what the clock's terms predict), so what it learns,
 * and the routing, follow the scheduler's rule and not the machine's
 * load: slow is a clock far dearer than the held terms, not slowed one
 * far cheaper; (d) exactly once under churn: 8 threads submit jobs of random
 * sizes and lengths while another thread forces random models (and
 * thaws them) and switches delay faults on and off: every job ends
 * HB_OK, every digest is OpenSSL's, and each message is counted once
 * across backends (inline work included); (e) quarantine under the
 * scheduler: every device lane corrupted with full verification: the
 * digests are right, the device is quarantined and no longer takes jobs,
 * and the pool finishes the work.
 * Assertions are on counts (messages, batches, launches), never on time.
 * Every test needs an OpenCL device except (b), which then checks the
 * pool alone; where there is none they fail, saying so (never a silent
 * skip). The model cache is a file in a private mkdtemp folder and every
 * engine calibrates at open, so no test reads what another (or the
 * user's cache) learnt. HB_TEST_SCALE (a divisor) scales (d) down.
 * Must not: assert on timing, or read the user's model cache.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hb_testing.h"
#include "test_util.h"

#define KIB 1024u

/* ---- engines and backends ------------------------------------------- */

static double scale_divisor = 1.0;

/* scaled: n / HB_TEST_SCALE, at least lo. */
static size_t scaled(size_t n, size_t lo)
{
    double v = (double)n / scale_divisor;
    return v < (double)lo ? lo : (size_t)v;
}

/* auto with the default spec: every device and the pool, models
 * calibrated now (not read from a cache another test wrote). */
static hb_engine *open_auto(hb_verify_mode verify, size_t staging, int fallback)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_AUTO);
    cfg.verify = verify;
    cfg.staging_bytes = staging;
    cfg.cpu_fallback = fallback;
    cfg.calibrate = 1;
    return tu_open_cfg(&cfg);
}

static hb_stats stats_of(const hb_engine *e)
{
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    return st;
}

/* The pool's index in stats.device[]. */
static unsigned pool_index(const hb_engine *e)
{
    hb_stats st = stats_of(e);
    for (unsigned k = 0; k < st.ndevices; k++)
        if (st.device[k].is_cpu) {
            ck_assert_str_eq(st.device[k].name, "cpu pool");
            return k;
        }
    ck_abort_msg("engine %s lists no CPU pool", hb_engine_describe(e));
    return 0;
}

/* The first OpenCL device's index; fails the test where there is none. */
static unsigned device_index(const hb_engine *e)
{
    hb_stats st = stats_of(e);
    for (unsigned k = 0; k < st.ndevices; k++)
        if (!st.device[k].is_cpu) {
            ck_assert_msg(strncmp(st.device[k].name, "opencl ", 7) == 0, "device %u is named %s", k,
                          st.device[k].name);
            return k;
        }
    ck_abort_msg("this test needs an OpenCL device (pocl's CPU device will do), and backend "
                 "auto found none: %s",
                 hb_engine_describe(e));
    return 0;
}

/* Fixes backend k's model: the same terms for every class. */
static void force(hb_engine *e, unsigned k, double fixed, double per_message, double per_byte)
{
    hb_cost_terms t[HB_COST_CLASSES];
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        t[c] = (hb_cost_terms){fixed, per_message, per_byte};
    ck_assert_msg(hb_testing_force_costs(e, k, t) == HB_OK, "force_costs(%u): %s", k,
                  hb_engine_last_error(e));
}

#define force_cheap(e, k) force((e), (k), 0.0, 0.001, 0.00001)
#define force_dear(e, k) force((e), (k), 1e9, 1e6, 1e3)

/* (c): the terms the other backend is held at while one learns, and the
 * learner's clocks (ns; the pool's are a thread's: it has SLOW_THREADS
 * of them, which a forced model counts as all running side by side, and
 * a learning one as at least one). Fast is where the learner starts, at
 * least 5 times cheaper a byte than the held one (device 0.1 against the
 * pool's 1 / 2 threads; pool 0.1 a thread against the device's 3); slow
 * is hundreds of times dearer. The clocks decide: nothing here hangs on
 * real hashing speed. */
#define SLOW_THREADS 2u
#define hold_pool(e, k) force((e), (k), 100, 10, 1.0)
#define hold_device(e, k) force((e), (k), 100000, 10, 3.0)
static const hb_cost_terms device_fast = {1000, 0.01, 0.1}, device_slow = {1000, 0.01, 1000};
static const hb_cost_terms pool_fast = {100, 1, 0.1}, pool_slow = {100, 1, 1000};

static uint64_t messages_of(const hb_stats *st, unsigned k)
{
    return st->device[k].messages;
}

static void print_backends(const char *what, const hb_stats *st)
{
    tu_print_stats(what, st);
    for (unsigned k = 0; k < st->ndevices; k++) {
        const hb_device_stats *d = &st->device[k];
        fprintf(stderr,
                "  %u %s: %llu msgs, %llu batches, %llu launches, takes jobs %d, mid %g + "
                "%g/msg + %g/byte\n",
                k, d->name, (unsigned long long)d->messages, (unsigned long long)d->batches,
                (unsigned long long)d->launches, d->takes_jobs, d->model[1].fixed_ns,
                d->model[1].ns_per_message, d->model[1].ns_per_byte);
    }
}

/* Every message counted once: the backends' counts add up to the total. */
static void assert_counted_once(const hb_stats *st, uint64_t messages, uint64_t bytes)
{
    uint64_t sum_messages = 0, sum_bytes = 0;
    for (unsigned k = 0; k < st->ndevices; k++) {
        sum_messages += st->device[k].messages;
        sum_bytes += st->device[k].bytes;
    }
    ck_assert_uint_eq(st->messages, messages);
    ck_assert_uint_eq(st->bytes, bytes);
    ck_assert_uint_eq(sum_messages, messages);
    ck_assert_uint_eq(sum_bytes, bytes);
}

/* ---- (a) forced models route --------------------------------------------- */

#define ROUTE_N 20000u
#define ROUTE_LEN (4u * KIB)

static void hash_route_job(hb_engine *e, const tu_msgset *s, const char *what)
{
    hb_digest *got = tu_digests(s->n);
    tu_batch(e, s->m, s->n, got);
    tu_assert_digests(s->m, s->n, s->want, got, what);
    free(got);
}

START_TEST(test_forced_pool_does_all)
{
    size_t lens[ROUTE_N];
    for (size_t i = 0; i < ROUTE_N; i++)
        lens[i] = ROUTE_LEN;
    tu_msgset s;
    tu_msgset_from_lengths(&s, lens, ROUTE_N, 0x5c01);
    hb_engine *e = open_auto(HB_VERIFY_OFF, 0, 0);
    unsigned pool = pool_index(e);
    hb_stats st = stats_of(e);
    for (unsigned k = 0; k < st.ndevices; k++)
        if (k != pool)
            force_dear(e, k);
    force_cheap(e, pool);
    hash_route_job(e, &s, "pool forced cheap");
    st = stats_of(e);
    print_backends("pool forced cheap", &st);
    assert_counted_once(&st, ROUTE_N, s.total_bytes);
    ck_assert_uint_eq(messages_of(&st, pool), ROUTE_N);
    ck_assert_uint_eq(st.device_launches, 0);
    ck_assert_uint_eq(st.device_bytes, 0);
    hb_engine_close(e);
    tu_msgset_free(&s);
}
END_TEST

START_TEST(test_forced_device_does_all)
{
    size_t lens[ROUTE_N];
    for (size_t i = 0; i < ROUTE_N; i++)
        lens[i] = ROUTE_LEN;
    tu_msgset s;
    tu_msgset_from_lengths(&s, lens, ROUTE_N, 0x5c02);
    hb_engine *e = open_auto(HB_VERIFY_OFF, 0, 0);
    unsigned pool = pool_index(e), dev = device_index(e);
    hb_stats st = stats_of(e);
    for (unsigned k = 0; k < st.ndevices; k++)
        if (k != dev)
            force_dear(e, k);
    force_cheap(e, dev);
    hash_route_job(e, &s, "device forced cheap");
    /* and once more through hb_submit, from a thread that only waits */
    hb_digest *got = tu_digests(ROUTE_N);
    hb_job *job = NULL;
    ck_assert_int_eq(hb_submit(e, s.m, ROUTE_N, got, &job), HB_OK);
    ck_assert_int_eq(hb_job_wait(job, -1), HB_OK);
    hb_job_free(job);
    tu_assert_digests(s.m, ROUTE_N, s.want, got, "device forced cheap, submitted");
    free(got);
    st = stats_of(e);
    print_backends("device forced cheap", &st);
    assert_counted_once(&st, 2 * ROUTE_N, 2 * s.total_bytes);
    ck_assert_uint_eq(messages_of(&st, dev), 2 * ROUTE_N);
    ck_assert_uint_eq(messages_of(&st, pool), 0);
    ck_assert_uint_gt(st.device[dev].launches, 0);
    ck_assert_uint_eq(st.device_bytes, 2 * s.total_bytes);
    hb_engine_close(e);
    tu_msgset_free(&s);
}
END_TEST

/* ---- (b) small jobs stay on the low fixed cost ----------------------------- */

#define SMALL_JOBS 200u
#define SMALL_LEN 64u

START_TEST(test_small_jobs_stay_on_pool)
{
    size_t lens[SMALL_JOBS];
    for (size_t i = 0; i < SMALL_JOBS; i++)
        lens[i] = SMALL_LEN;
    tu_msgset s;
    tu_msgset_from_lengths(&s, lens, SMALL_JOBS, 0x5c03);
    hb_engine *e = open_auto(HB_VERIFY_SAMPLE, 0, 1);
    unsigned pool = pool_index(e);
    hb_stats st = stats_of(e);
    print_backends("calibrated", &st);
    /* The test means something only if the models say it: a device's
     * fixed cost above what all 200 messages cost the pool together. */
    const hb_cost_terms *p = &st.device[pool].model[0];
    double pool_all = p->fixed_ns + SMALL_JOBS * (p->ns_per_message + SMALL_LEN * p->ns_per_byte);
    for (unsigned k = 0; k < st.ndevices; k++)
        if (k != pool)
            ck_assert_msg(st.device[k].model[0].fixed_ns > pool_all,
                          "%s: calibrated fixed cost %g ns, under the pool's %g ns for all "
                          "%u messages: small jobs may rightly go there",
                          st.device[k].name, st.device[k].model[0].fixed_ns, pool_all, SMALL_JOBS);

    hb_digest *got = tu_digests(SMALL_JOBS);
    for (size_t i = 0; i < SMALL_JOBS; i++)
        tu_batch(e, &s.m[i], 1, &got[i]);
    tu_assert_digests(s.m, SMALL_JOBS, s.want, got, "small jobs, hb_sha1_batch");

    /* all queued at once: the queue holds up to 200 messages */
    memset(got, 0, SMALL_JOBS * sizeof *got);
    hb_job *jobs[SMALL_JOBS];
    for (size_t i = 0; i < SMALL_JOBS; i++)
        ck_assert_int_eq(hb_submit(e, &s.m[i], 1, &got[i], &jobs[i]), HB_OK);
    for (size_t i = 0; i < SMALL_JOBS; i++) {
        ck_assert_int_eq(hb_job_wait(jobs[i], -1), HB_OK);
        hb_job_free(jobs[i]);
    }
    tu_assert_digests(s.m, SMALL_JOBS, s.want, got, "small jobs, hb_submit");
    st = stats_of(e);
    print_backends("small jobs", &st);
    assert_counted_once(&st, 2 * SMALL_JOBS, 2 * s.total_bytes);
    ck_assert_uint_eq(messages_of(&st, pool), 2 * SMALL_JOBS);
    ck_assert_uint_eq(st.device_launches, 0);
    ck_assert_uint_eq(st.jobs_completed, 2 * SMALL_JOBS);
    free(got);
    hb_engine_close(e);
    tu_msgset_free(&s);
}
END_TEST

/* ---- (c) a backend that turns slow -------------------------------------------- */

#define SLOW_JOBS 10u
#define SLOW_N 16384u
#define SLOW_LEN (4u * KIB)
#define SLOW_LAST 3u /* the last jobs, where the slow one must be out */

/* Hashes SLOW_JOBS jobs; share[j] is the part of job j (messages) that
 * backend `slow` hashed. */
static void hash_slow_jobs(hb_engine *e, unsigned slow, const tu_msgset *s, double *share)
{
    hb_digest *got = tu_digests(s->n);
    for (unsigned j = 0; j < SLOW_JOBS; j++) {
        hb_stats before = stats_of(e);
        memset(got, 0, s->n * sizeof *got);
        tu_batch(e, s->m, s->n, got);
        tu_assert_digests(s->m, s->n, s->want, got, "slow backend");
        hb_stats after = stats_of(e);
        ck_assert_uint_eq(after.messages - before.messages, s->n);
        share[j] = (double)(messages_of(&after, slow) - messages_of(&before, slow)) / (double)s->n;
        fprintf(stderr, "job %u: %.1f%% on the slowed backend (its mid model %g + %g/byte)\n", j,
                100 * share[j], after.device[slow].model[1].fixed_ns,
                after.device[slow].model[1].ns_per_byte);
    }
    free(got);
}

/* The slowed backend `slow` (started cheap) must have lost its share:
 * some of the first job, little of the last ones (at most a tenth). A
 * batch moves its model a quarter of the way to at most 8 times the
 * terms (cost_model.h: 2.75 times here): the device from 0.1 a byte past
 * the pool's 0.5 in two batches that learn, one a job; the pool past the
 * device's 3 in five, within its first job. A batch that ran beside a
 * group mate teaches nothing, so the last SLOW_LAST jobs leave room for a
 * few such (the device may miss five). Not
 * nothing of the last: once out it learns no more, so if the held one
 * looks as dear at a tail (the pool's threads counted as fewer side by
 * side) it may take a few messages again. */
static void assert_share_lost(const double *share, double first_at_least)
{
    ck_assert_msg(share[0] >= first_at_least, "the backend forced cheap did %.1f%% of job 0",
                  100 * share[0]);
    for (unsigned j = SLOW_JOBS - SLOW_LAST; j < SLOW_JOBS; j++)
        ck_assert_msg(share[j] <= 0.1, "job %u: %.2f%% still on the slowed backend", j,
                      100 * share[j]);
}

/* The control: not slowed, it keeps (nearly) all of every job. */
static void assert_share_kept(const double *share)
{
    for (unsigned j = 0; j < SLOW_JOBS; j++)
        ck_assert_msg(share[j] >= 0.9, "job %u: only %.1f%% on the backend never slowed", j,
                      100 * share[j]);
}

static void all_classes(const hb_cost_terms *t, hb_cost_terms out[HB_COST_CLASSES])
{
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        out[c] = *t;
}

/* One backend (`learner`: the device or the pool) forced cheaper than the
 * other, then left to learn from a clock that turns slow (loop index 0)
 * or stays as it started (1, the control: what makes it lose its share is
 * what its batches cost, nothing else). */
static void slow_case(int pool_learns, int slowed)
{
    size_t lens[SLOW_N];
    for (size_t i = 0; i < SLOW_N; i++)
        lens[i] = SLOW_LEN;
    tu_msgset s;
    tu_msgset_from_lengths(&s, lens, SLOW_N, 0x5c04 + (uint64_t)pool_learns);
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_AUTO);
    cfg.calibrate = 1;
    cfg.cpu_threads = SLOW_THREADS; /* the held pool's terms are a thread's */
    hb_engine *e = tu_open_cfg(&cfg);
    unsigned pool = pool_index(e), dev = device_index(e);
    unsigned learner = pool_learns ? pool : dev;
    hb_stats st = stats_of(e);
    for (unsigned k = 0; k < st.ndevices; k++)
        if (k != dev && k != pool)
            force_dear(e, k); /* other devices out of the way */
    const hb_cost_terms *fast = pool_learns ? &pool_fast : &device_fast;
    const hb_cost_terms *slow = pool_learns ? &pool_slow : &device_slow;
    if (pool_learns)
        hold_device(e, dev);
    else
        hold_pool(e, pool);
    force(e, learner, fast->fixed_ns, fast->ns_per_message, fast->ns_per_byte);
    hb_cost_terms clock[HB_COST_CLASSES];
    all_classes(slowed ? slow : fast, clock);
    ck_assert_int_eq(hb_testing_set_cost_clock(e, learner, clock), HB_OK);
    ck_assert_int_eq(hb_testing_force_costs(e, learner, NULL), HB_OK);
    double share[SLOW_JOBS];
    hash_slow_jobs(e, learner, &s, share);
    st = stats_of(e);
    print_backends(slowed ? "after the slow jobs" : "after the jobs, not slowed", &st);
    if (!slowed)
        assert_share_kept(share);
    else if (pool_learns) /* it learns within its first batches: of job
                             0 it may keep only those few */
        assert_share_lost(share, 1.0 / SLOW_N);
    else
        assert_share_lost(share, 0.5);
    ck_assert_int_eq(st.quarantined, 0); /* slow is not faulty */
    ck_assert_int_eq(st.device[dev].takes_jobs, 1);
    if (!pool_learns || slowed) /* the device had work */
        ck_assert_uint_gt(st.device[dev].launches, 0);
    assert_counted_once(&st, (uint64_t)SLOW_JOBS * SLOW_N, (uint64_t)SLOW_JOBS * s.total_bytes);
    hb_engine_close(e);
    tu_msgset_free(&s);
}

/* Loop index 0: its clock turns slow; 1: the control. */
START_TEST(test_slow_device_loses_share)
{
    slow_case(0, _i == 0);
}
END_TEST

START_TEST(test_slow_pool_loses_share)
{
    slow_case(1, _i == 0);
}
END_TEST

/* ---- (d) exactly once under churn --------------------------------------------- */

#define CHURN_THREADS 8
#define CHURN_MAX_N 5000u
#define CHURN_MAX_LEN 9000u
#define CHURN_DATA (16u << 20)

typedef struct {
    hb_engine *e;
    const uint8_t *data; /* CHURN_DATA + CHURN_MAX_LEN random bytes */
    uint64_t seed;
    size_t jobs;
    /* results, read after the join */
    uint64_t messages, bytes;
    size_t jobs_done, bad_status, bad_digests;
    hb_status first_bad;
} churn_submitter;

/* One job: n messages of random lengths at random places in data. */
static size_t make_job(tu_rng *r, const uint8_t *data, hb_msg *m)
{
    size_t n = tu_rng_below(r, 4) == 0 ? 1 + tu_rng_below(r, 8) : 1 + tu_rng_below(r, CHURN_MAX_N);
    size_t maxlen = tu_rng_below(r, 4) == 0 ? 200 : CHURN_MAX_LEN;
    for (size_t i = 0; i < n; i++) {
        size_t len = tu_rng_below(r, maxlen + 1);
        m[i].data = data + tu_rng_below(r, CHURN_DATA);
        m[i].len = len;
    }
    return n;
}

static void *churn_submit_main(void *arg)
{
    churn_submitter *c = arg;
    tu_rng r;
    tu_rng_seed(&r, c->seed);
    hb_msg *m = malloc(CHURN_MAX_N * sizeof *m);
    hb_digest *got = malloc(CHURN_MAX_N * sizeof *got);
    hb_digest want;
    for (size_t j = 0; m != NULL && got != NULL && j < c->jobs; j++) {
        size_t n = make_job(&r, c->data, m);
        memset(got, 0, n * sizeof *got);
        hb_status st;
        if (j % 2 == 0) {
            st = hb_sha1_batch(c->e, m, n, got);
        } else {
            hb_job *job = NULL;
            st = hb_submit(c->e, m, n, got, &job);
            if (st == HB_OK)
                st = hb_job_wait(job, -1);
            hb_job_free(job);
        }
        c->jobs_done++;
        c->messages += n;
        for (size_t i = 0; i < n; i++)
            c->bytes += m[i].len;
        if (st != HB_OK) {
            if (c->bad_status++ == 0)
                c->first_bad = st;
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            tu_sha1(m[i].data, m[i].len, want);
            c->bad_digests += memcmp(want, got[i], sizeof want) != 0;
        }
    }
    free(m);
    free(got);
    return NULL;
}

typedef struct {
    hb_engine *e;
    unsigned nbackends;
    atomic_int stop;
    size_t forces, thaws, faults, failures;
} churn_changer;

static void sleep_us(long us)
{
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

/* 10^x for x uniform in [lo, hi]. */
static double log_uniform(tu_rng *r, double lo, double hi)
{
    double x = lo + (hi - lo) * (double)tu_rng_below(r, 1u << 20) / (double)(1u << 20);
    return pow(10.0, x);
}

static void *churn_change_main(void *arg)
{
    churn_changer *c = arg;
    tu_rng r;
    tu_rng_seed(&r, 0xc4a9);
    static const hb_fault_kind kinds[] = {HB_FAULT_NONE, HB_FAULT_DELAY_DEVICE, HB_FAULT_NONE,
                                          HB_FAULT_DELAY_CPU};
    for (unsigned round = 0; !atomic_load(&c->stop); round++) {
        unsigned k = (unsigned)tu_rng_below(&r, c->nbackends);
        hb_status st;
        if (tu_rng_below(&r, 4) == 0) {
            st = hb_testing_force_costs(c->e, k, NULL);
            c->thaws++;
        } else {
            hb_cost_terms t[HB_COST_CLASSES];
            for (unsigned cl = 0; cl < HB_COST_CLASSES; cl++)
                t[cl] = (hb_cost_terms){log_uniform(&r, 0, 7), log_uniform(&r, -2, 3),
                                        log_uniform(&r, -4, 1)};
            st = hb_testing_force_costs(c->e, k, t);
            c->forces++;
        }
        c->failures += st != HB_OK;
        if (round % 8 == 0) {
            hb_fault_plan plan;
            memset(&plan, 0, sizeof plan);
            plan.kind = kinds[(round / 8) % 4];
            plan.every_nth_launch = 1;
            plan.delay_ns = plan.kind == HB_FAULT_DELAY_DEVICE ? 2000000u : 500000u;
            c->failures += hb_testing_set_fault(c->e, &plan) != HB_OK;
            c->faults++;
        }
        hb_stats st_now;
        c->failures += hb_engine_stats(c->e, &st_now) != HB_OK;
        sleep_us(1000 + (long)tu_rng_below(&r, 3000));
    }
    return NULL;
}

START_TEST(test_exactly_once_under_churn)
{
    uint8_t *data = malloc(CHURN_DATA + CHURN_MAX_LEN);
    ck_assert_ptr_nonnull(data);
    tu_rng r;
    tu_rng_seed(&r, 0xc401);
    tu_rng_fill(&r, data, CHURN_DATA + CHURN_MAX_LEN);
    hb_engine *e = open_auto(HB_VERIFY_SAMPLE, 2u << 20, 1);
    (void)device_index(e); /* churn between backends needs more than one */
    hb_stats st = stats_of(e);

    churn_changer changer = {.e = e, .nbackends = st.ndevices};
    atomic_init(&changer.stop, 0);
    pthread_t change_thread, threads[CHURN_THREADS];
    churn_submitter subs[CHURN_THREADS];
    ck_assert_int_eq(pthread_create(&change_thread, NULL, churn_change_main, &changer), 0);
    for (int t = 0; t < CHURN_THREADS; t++) {
        subs[t] = (churn_submitter){
            .e = e, .data = data, .seed = 0xc500 + (uint64_t)t, .jobs = scaled(8, 2)};
        ck_assert_int_eq(pthread_create(&threads[t], NULL, churn_submit_main, &subs[t]), 0);
    }
    uint64_t messages = 0, bytes = 0;
    size_t jobs = 0, bad_status = 0, bad_digests = 0;
    hb_status first_bad = HB_OK;
    for (int t = 0; t < CHURN_THREADS; t++) {
        pthread_join(threads[t], NULL);
        messages += subs[t].messages;
        bytes += subs[t].bytes;
        jobs += subs[t].jobs_done;
        if (subs[t].bad_status > 0 && first_bad == HB_OK)
            first_bad = subs[t].first_bad;
        bad_status += subs[t].bad_status;
        bad_digests += subs[t].bad_digests;
    }
    atomic_store(&changer.stop, 1);
    pthread_join(change_thread, NULL);
    st = stats_of(e);
    print_backends("churn", &st);
    fprintf(stderr, "churn: %zu jobs, %llu messages; %zu forces, %zu thaws, %zu fault switches\n",
            jobs, (unsigned long long)messages, changer.forces, changer.thaws, changer.faults);
    ck_assert_uint_eq(jobs, CHURN_THREADS * scaled(8, 2));
    ck_assert_msg(bad_status == 0, "%zu jobs failed, the first with %s: %s", bad_status,
                  hb_status_name(first_bad), hb_engine_last_error(e));
    ck_assert_msg(bad_digests == 0, "%zu digests differ from OpenSSL's", bad_digests);
    ck_assert_uint_eq(changer.failures, 0);
    ck_assert_uint_gt(changer.forces, 0);
    assert_counted_once(&st, messages, bytes);
    ck_assert_uint_eq(st.jobs_completed, jobs);
    ck_assert_uint_eq(st.jobs_submitted, jobs);
    ck_assert_uint_eq(st.verify_mismatches, 0);
    ck_assert_uint_eq(st.fallbacks, 0);
    ck_assert_uint_eq(st.device_errors, 0);
    ck_assert_int_eq(st.quarantined, 0);
    ck_assert_uint_eq(st.queue_messages, 0);
    ck_assert_uint_eq(st.queue_jobs, 0);
    hb_engine_close(e);
    free(data);
}
END_TEST

/* ---- (e) quarantine under the scheduler ------------------------------------------ */

#define QUAR_N 10000u
#define QUAR_MAXLEN 2000u

START_TEST(test_quarantine_under_scheduler)
{
    tu_msgset s;
    tu_msgset_random(&s, QUAR_N, QUAR_MAXLEN, 0x5c06);
    /* small launches: the first batch is a few of them */
    hb_engine *e = open_auto(HB_VERIFY_FULL, 256u * KIB, 1);
    unsigned pool = pool_index(e), dev = device_index(e);
    hb_stats st = stats_of(e);
    for (unsigned k = 0; k < st.ndevices; k++)
        if (k != dev && k != pool)
            force_dear(e, k);
    force_cheap(e, dev); /* so the device takes the work (and corrupts it) */
    hb_fault_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.kind = HB_FAULT_CORRUPT_ALL;
    plan.every_nth_launch = 1;
    ck_assert_int_eq(hb_testing_set_fault(e, &plan), HB_OK);

    hb_digest *got = tu_digests(QUAR_N);
    tu_batch(e, s.m, QUAR_N, got);
    tu_assert_digests(s.m, QUAR_N, s.want, got, "corrupt all, auto, verify full");
    st = stats_of(e);
    print_backends("corrupt all, auto", &st);
    ck_assert_uint_gt(st.device[dev].launches, 0); /* the device did take work */
    ck_assert_uint_gt(st.verify_mismatches, 0);
    ck_assert_int_eq(st.device[dev].quarantined, 1);
    ck_assert_int_eq(st.quarantined, 1);
    ck_assert_int_eq(st.device[dev].takes_jobs, 0);
    ck_assert_int_eq(st.device[pool].takes_jobs, 1);
    /* every device lane was wrong and every message checked: no digest of
     * the device's reached the caller, the pool hashed them all */
    ck_assert_uint_eq(st.device_bytes, 0);
    assert_counted_once(&st, QUAR_N, s.total_bytes);
    ck_assert_uint_eq(messages_of(&st, pool), QUAR_N);

    /* quarantined: the next job is the pool's, and right */
    memset(got, 0, QUAR_N * sizeof *got);
    tu_batch(e, s.m, QUAR_N, got);
    tu_assert_digests(s.m, QUAR_N, s.want, got, "after quarantine");
    hb_stats st2 = stats_of(e);
    print_backends("after quarantine", &st2);
    ck_assert_uint_eq(st2.device[dev].launches, st.device[dev].launches);
    ck_assert_uint_eq(messages_of(&st2, pool), 2 * QUAR_N);
    assert_counted_once(&st2, 2 * QUAR_N, 2 * s.total_bytes);
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

/* ---- the suite ---------------------------------------------------------------- */

static Suite *sched_suite(void)
{
    Suite *s = suite_create("sched");
    TCase *route = tcase_create("route");
    tcase_set_timeout(route, 120);
    tcase_add_test(route, test_forced_pool_does_all);
    tcase_add_test(route, test_forced_device_does_all);
    tcase_add_test(route, test_small_jobs_stay_on_pool);
    suite_add_tcase(s, route);
    TCase *learn = tcase_create("learn");
    tcase_set_timeout(learn, 120);
    tcase_add_loop_test(learn, test_slow_device_loses_share, 0, 2);
    tcase_add_loop_test(learn, test_slow_pool_loses_share, 0, 2);
    suite_add_tcase(s, learn);
    TCase *churn = tcase_create("churn");
    tcase_set_timeout(churn, 240);
    tcase_add_test(churn, test_exactly_once_under_churn);
    tcase_add_test(churn, test_quarantine_under_scheduler);
    suite_add_tcase(s, churn);
    return s;
}

/* HB_TEST_SCALE: a divisor of the churn test's size (>= 1). */
static int read_scale(void)
{
    const char *sc = getenv("HB_TEST_SCALE");
    if (sc == NULL || *sc == '\0')
        return 1;
    char *end = NULL;
    double d = strtod(sc, &end);
    if (*end != '\0' || !(d >= 1.0)) {
        fprintf(stderr, "test_sched: HB_TEST_SCALE=%s is not a divisor of at least 1\n", sc);
        return 0;
    }
    scale_divisor = d;
    return 1;
}

int main(void)
{
    if (!read_scale())
        return 1;
    /* the model cache in a folder of our own: no test reads or writes the
     * user's, and each engine calibrates anyway (cfg.calibrate) */
    char dir[] = "/tmp/hb_test_sched.XXXXXX", path[sizeof dir + 16];
    if (mkdtemp(dir) == NULL) {
        perror("test_sched: mkdtemp");
        return 1;
    }
    snprintf(path, sizeof path, "%s/models.txt", dir);
    setenv("HASHBATCH_MODEL_CACHE", path, 1);
    int rc = tu_run_suite(sched_suite());
    unlink(path);
    if (rmdir(dir) != 0)
        perror("test_sched: rmdir");
    return rc;
}
