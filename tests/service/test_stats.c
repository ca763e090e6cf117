/*
 * test_stats.c - hb_engine_stats and its per-device entries add up.
 *
 * Covers: after mixed work (jobs of many sizes, empty messages, n = 0
 * jobs, hb_sha1_batch calls, from several threads) on every backend:
 * ndevices, names, is_cpu on exactly one entry (the pool), and the sums:
 * per-entry messages, bytes, batches, launches and errors add up to the
 * engine's totals; device_bytes + cpu_bytes == bytes; device_bytes is what
 * the OpenCL entries hashed and cpu_bytes what the pool hashed; busy_ns >
 * 0 where an entry hashed; jobs counters. With device "all" and a large
 * workload (256 MiB of 4 KiB messages in many jobs from 4 threads) both
 * the OpenCL entry and the pool hashed something. Also with injected
 * enqueue errors: fallback work shows up under the pool entry, and the
 * sums still hold. Every digest is checked against OpenSSL.
 *
 * HB_TEST_SCALE (a divisor, default 1) shrinks the large workload.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hb_testing.h"
#include "service_util.h"

/* The invariants every snapshot of a quiet engine must satisfy. */
static void check_sums(const hb_stats *st, const char *what)
{
    ck_assert_msg(st->ndevices >= 1 && st->ndevices <= HB_STATS_MAX_DEVICES,
                  "%s: ndevices %u", what, st->ndevices);
    uint64_t msgs = 0, bytes = 0, batches = 0, launches = 0, errors = 0;
    uint64_t dev_bytes = 0, pool_bytes = 0;
    unsigned pools = 0;
    int quarantined = 0;
    for (unsigned k = 0; k < st->ndevices; k++) {
        const hb_device_stats *d = &st->device[k];
        ck_assert_msg(d->name[0] != '\0', "%s: entry %u has no name", what, k);
        ck_assert_msg(memchr(d->name, '\0', sizeof d->name) != NULL,
                      "%s: entry %u name not terminated", what, k);
        msgs += d->messages;
        bytes += d->bytes;
        batches += d->batches;
        launches += d->launches;
        errors += d->errors;
        quarantined += d->quarantined;
        if (d->is_cpu) {
            pools++;
            pool_bytes += d->bytes;
            ck_assert_msg(d->launches == 0, "%s: the pool launched kernels",
                          what);
        } else {
            dev_bytes += d->bytes;
        }
        if (d->bytes > 0)
            ck_assert_msg(d->busy_ns > 0, "%s: %s hashed %llu bytes in 0 ns",
                          what, d->name, (unsigned long long)d->bytes);
        ck_assert_msg(d->bytes == 0 || d->messages > 0,
                      "%s: %s: bytes without messages", what, d->name);
        ck_assert_msg(d->messages == 0 || d->batches > 0,
                      "%s: %s: messages without batches", what, d->name);
    }
    ck_assert_msg(pools == 1, "%s: %u entries with is_cpu", what, pools);
    ck_assert_msg(st->device[st->ndevices - 1].is_cpu || pools == 1,
                  "%s: pool entry", what);
    ck_assert_uint_eq(msgs, st->messages);
    ck_assert_uint_eq(bytes, st->bytes);
    ck_assert_uint_eq(batches, st->batches);
    ck_assert_uint_eq(launches, st->device_launches);
    ck_assert_uint_eq(errors, st->device_errors);
    ck_assert_int_eq(quarantined, st->quarantined);
    ck_assert_uint_eq(st->device_bytes + st->cpu_bytes, st->bytes);
    ck_assert_uint_eq(dev_bytes, st->device_bytes);
    ck_assert_uint_eq(pool_bytes, st->cpu_bytes);
    ck_assert_uint_eq(st->queue_messages, 0);
    ck_assert_uint_eq(st->queue_jobs, 0);
}

/* ---- mixed work ----------------------------------------------------- */

#define MIX_THREADS 4
#define MIX_ROUNDS 40

typedef struct {
    hb_engine *e;
    uint64_t seed;
    uint64_t jobs, ok, messages, bytes;
    unsigned failures;
} mixer;

static void *mixer_main(void *arg)
{
    mixer *x = arg;
    tu_rng r;
    tu_rng_seed(&r, x->seed);
    for (unsigned k = 0; k < MIX_ROUNDS; k++) {
        size_t n;
        size_t maxlen;
        switch (k % 5) {
        case 0: n = 0; maxlen = 0; break;                 /* empty job */
        case 1: n = 1; maxlen = 0; break;                 /* one "" */
        case 2: n = 1 + tu_rng_below(&r, 40); maxlen = 300000; break;
        default: n = 1 + tu_rng_below(&r, 3000); maxlen = 4000; break;
        }
        tu_msgset s;
        hb_digest *got = NULL;
        if (n > 0) {
            tu_msgset_random(&s, n, maxlen, x->seed * 1000 + k);
            got = tu_digests(n);
        } else {
            memset(&s, 0, sizeof s);
        }
        hb_status st;
        if (k % 2) {
            st = hb_sha1_batch(x->e, s.m, n, got);
        } else {
            hb_job *j = NULL;
            st = hb_submit(x->e, s.m, n, got, &j);
            if (st == HB_OK)
                st = hb_job_wait(j, -1);
            hb_job_free(j);
        }
        x->jobs++;
        x->messages += n;
        x->bytes += n ? s.total_bytes : 0;
        if (st == HB_OK &&
            (n == 0 || tu_count_mismatches(s.m, n, s.want, got, "mix") == 0))
            x->ok++;
        else
            x->failures++;
        free(got);
        if (n > 0)
            tu_msgset_free(&s);
    }
    return NULL;
}

START_TEST(mixed_work_sums)
{
    hb_engine *e = open_variant(_i);
    hb_stats st = stats_of(e);
    /* fresh engine: entries named, nothing counted */
    check_sums(&st, variants[_i].name);
    ck_assert_uint_eq(st.messages, 0);
    ck_assert_uint_eq(st.jobs_submitted, 0);
    if (variants[_i].kind == HB_BACKEND_CPU)
        ck_assert_uint_eq(st.ndevices, 1);
    else
        ck_assert_uint_ge(st.ndevices, 2);

    mixer x[MIX_THREADS];
    pthread_t th[MIX_THREADS];
    for (int k = 0; k < MIX_THREADS; k++) {
        memset(&x[k], 0, sizeof x[k]);
        x[k].e = e;
        x[k].seed = 0x5A7u + (uint64_t)(k * 10 + _i);
        ck_assert_int_eq(pthread_create(&th[k], NULL, mixer_main, &x[k]), 0);
    }
    for (int k = 0; k < MIX_THREADS; k++)
        ck_assert_int_eq(pthread_join(th[k], NULL), 0);
    uint64_t jobs = 0, ok = 0, msgs = 0, bytes = 0;
    unsigned failures = 0;
    for (int k = 0; k < MIX_THREADS; k++) {
        jobs += x[k].jobs;
        ok += x[k].ok;
        msgs += x[k].messages;
        bytes += x[k].bytes;
        failures += x[k].failures;
    }
    st = stats_of(e);
    tu_print_stats(variants[_i].name, &st);
    ck_assert_msg(failures == 0, "%u jobs failed or had wrong digests",
                  failures);
    check_sums(&st, variants[_i].name);
    ck_assert_uint_eq(st.jobs_submitted, jobs);
    ck_assert_uint_eq(st.jobs_completed, ok);
    ck_assert_uint_eq(st.jobs_cancelled, 0);
    ck_assert_uint_eq(st.messages, msgs);
    ck_assert_uint_eq(st.bytes, bytes);
    switch (variants[_i].kind) {
    case HB_BACKEND_CPU:
        ck_assert_uint_eq(st.cpu_bytes, bytes);
        ck_assert_uint_eq(st.device_launches, 0);
        break;
    case HB_BACKEND_OPENCL:
        /* no faults: everything on the device, the pool only verifies */
        ck_assert_uint_eq(st.device_bytes, bytes);
        ck_assert_uint_eq(st.device[st.ndevices - 1].messages, 0);
        ck_assert_uint_gt(st.device_launches, 0);
        break;
    default:
        break;
    }
    hb_engine_close(e);
}
END_TEST

/* ---- device "all": both sides hash ---------------------------------- */

#define BIG_THREADS 4
#define MSG_LEN 4096u
#define JOB_MSGS 256u /* 1 MiB jobs */

typedef struct {
    hb_engine *e;
    const uint8_t *data;
    size_t nmsgs; /* this thread's messages: data[first * MSG_LEN ...] */
    size_t first;
    const hb_digest *want; /* all messages' digests */
    uint64_t jobs;
    unsigned failures;
} big_feeder;

static void *big_feeder_main(void *arg)
{
    big_feeder *f = arg;
    hb_msg m[2][JOB_MSGS];
    hb_digest out[2][JOB_MSGS];
    hb_job *j[2] = {NULL, NULL};
    size_t first[2] = {0, 0}, cnt[2] = {0, 0};
    unsigned k = 0;
    for (size_t at = 0; at < f->nmsgs || j[0] || j[1]; k ^= 1) {
        if (j[k]) { /* wait the older job of this slot */
            hb_status st = hb_job_wait(j[k], -1);
            if (st != HB_OK ||
                memcmp(out[k], f->want[first[k]], cnt[k] * 20) != 0)
                f->failures++;
            hb_job_free(j[k]);
            j[k] = NULL;
        }
        if (at >= f->nmsgs)
            continue;
        size_t n = f->nmsgs - at < JOB_MSGS ? f->nmsgs - at : JOB_MSGS;
        first[k] = f->first + at;
        cnt[k] = n;
        for (size_t i = 0; i < n; i++)
            m[k][i] = (hb_msg){f->data + (first[k] + i) * MSG_LEN, MSG_LEN};
        memset(out[k], 0xEE, sizeof out[k]);
        if (hb_submit(f->e, m[k], n, out[k], &j[k]) != HB_OK) {
            f->failures++;
            j[k] = NULL;
        }
        f->jobs++;
        at += n;
    }
    return NULL;
}

/* Feeds total_bytes of 4 KiB messages from BIG_THREADS threads. */
static void feed_big(hb_engine *e, size_t total_bytes, uint64_t seed,
                     uint64_t *jobs_out)
{
    size_t nmsgs = total_bytes / MSG_LEN;
    uint8_t *data = malloc(nmsgs * MSG_LEN);
    ck_assert_ptr_nonnull(data);
    tu_rng r;
    tu_rng_seed(&r, seed);
    tu_rng_fill(&r, data, nmsgs * MSG_LEN);
    hb_digest *want = tu_digests(nmsgs);
    for (size_t i = 0; i < nmsgs; i++)
        tu_sha1(data + i * MSG_LEN, MSG_LEN, want[i]);
    big_feeder f[BIG_THREADS];
    pthread_t th[BIG_THREADS];
    size_t per = nmsgs / BIG_THREADS;
    for (int k = 0; k < BIG_THREADS; k++) {
        f[k] = (big_feeder){.e = e, .data = data, .first = (size_t)k * per,
                            .nmsgs = k == BIG_THREADS - 1 ? nmsgs - (size_t)k * per : per,
                            .want = (const hb_digest *)want, .jobs = 0,
                            .failures = 0};
        ck_assert_int_eq(pthread_create(&th[k], NULL, big_feeder_main, &f[k]),
                         0);
    }
    uint64_t jobs = 0;
    unsigned failures = 0;
    for (int k = 0; k < BIG_THREADS; k++) {
        ck_assert_int_eq(pthread_join(th[k], NULL), 0);
        jobs += f[k].jobs;
        failures += f[k].failures;
    }
    ck_assert_msg(failures == 0, "%u jobs failed or had wrong digests",
                  failures);
    *jobs_out = jobs;
    free(want);
    free(data);
}

START_TEST(device_all_every_backend_scheduled)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_AUTO);
    cfg.device = "all";
    hb_engine *e = tu_open_cfg(&cfg);
    ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_OPENCL);
    size_t total = ((size_t)256 << 20) / scale();
    if (total < ((size_t)16 << 20))
        total = (size_t)16 << 20;
    uint64_t jobs;
    double t0 = tu_now();
    feed_big(e, total, 0xA11u, &jobs);
    fprintf(stderr, "auto+all: %zu MiB in %llu jobs, %.2f s\n", total >> 20,
            (unsigned long long)jobs, tu_now() - t0);
    hb_stats st = stats_of(e);
    tu_print_stats("auto+all big", &st);
    check_sums(&st, "auto+all big");
    ck_assert_uint_eq(st.bytes, total / MSG_LEN * MSG_LEN);
    ck_assert_uint_eq(st.messages, total / MSG_LEN);
    ck_assert_uint_eq(st.jobs_completed, jobs);
    ck_assert_uint_ge(st.ndevices, 2);
    /* Every backend is in the scheduler and may take jobs; which ones do
     * is the cost models' call (test_sched tests the routing with forced
     * models). Here: whoever hashed also counted busy time and, for a
     * device, launches, and the two sides' bytes add up. */
    uint64_t bytes = 0;
    for (unsigned k = 0; k < st.ndevices; k++) {
        ck_assert_msg(st.device[k].takes_jobs, "with device \"all\" %s takes no jobs",
                      st.device[k].name);
        bytes += st.device[k].bytes;
        if (st.device[k].bytes == 0)
            continue;
        ck_assert_uint_gt(st.device[k].busy_ns, 0);
        if (!st.device[k].is_cpu)
            ck_assert_uint_gt(st.device[k].launches, 0);
    }
    ck_assert_uint_eq(bytes, st.bytes);
    ck_assert_uint_eq(st.device_bytes + st.cpu_bytes, st.bytes);
    ck_assert_msg(st.verify_mismatches == 0 && st.fallbacks == 0 &&
                      st.device_errors == 0 && st.quarantined == 0,
                  "auto+all: not clean");
    hb_engine_close(e);
}
END_TEST

/* The launches feed_big(total) takes on an engine opened with cfg, in all
 * and per batch, measured on an engine of its own with no fault (the
 * device's shape and models decide them: a uniform launch can hold a
 * whole batch). */
static void count_launches(const hb_config *cfg, size_t total, uint64_t *launches,
                           uint64_t *per_batch)
{
    hb_engine *e = tu_open_cfg(cfg);
    uint64_t jobs;
    feed_big(e, total, 0xFA10u, &jobs);
    hb_stats st = stats_of(e);
    hb_engine_close(e);
    ck_assert_uint_gt(st.device_launches, 0);
    *launches = st.device_launches;
    *per_batch = (st.device_launches + st.batches - 1) / st.batches;
}

/* Device errors: the redone work counts under the pool entry, once. */
START_TEST(fallback_counted_under_pool)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_OPENCL);
    cfg.cpu_fallback = 1;
    cfg.verify = HB_VERIFY_SAMPLE;
    cfg.staging_bytes = 256u << 10;
    size_t total = ((size_t)64 << 20) / scale();
    if (total < ((size_t)8 << 20))
        total = (size_t)8 << 20;
    cfg.ring_depth = 3;
    /* errors far enough apart that whole batches complete between them
     * (an error also sends back the batches of the launches in flight),
     * and enough launches for at least three errors */
    uint64_t launches, per_batch;
    count_launches(&cfg, total, &launches, &per_batch);
    uint64_t every = 2 * (per_batch + cfg.ring_depth) + 1;
    if (launches < 3 * every)
        total *= (size_t)((3 * every + launches - 1) / launches);
    hb_engine *e = NULL;
    hb_stats st;
    uint64_t jobs;
    /* The launches a batch takes were counted on another engine; on a
     * loaded machine more work waits, the device takes bigger batches
     * (up to several launches each), and errors every `every` launches
     * may leave no batch whole between them: three errors in a row, the
     * device quarantined before it delivered anything. Then the errors
     * are spread further apart (and the work grown to keep three of
     * them), at most three times; every other check is on the run that
     * had whole batches between its errors. The other way round, fewer
     * launches than counted (bigger batches than the counting engine
     * took: seen in a cpu_impl rerun at load 4, 16 launches where errors
     * came every 17th) leave no error at all: the work is then grown
     * until an error happens, by the launches seen, not by a clock. */
    for (int attempt = 0; attempt < 6; attempt++) {
        if (e != NULL)
            hb_engine_close(e);
        e = tu_open_cfg(&cfg);
        hb_fault_plan plan;
        memset(&plan, 0, sizeof plan);
        plan.kind = HB_FAULT_ENQUEUE_ERROR;
        plan.every_nth_launch = every;
        ck_assert_int_eq(hb_testing_set_fault(e, &plan), HB_OK);
        feed_big(e, total, 0xFA11u, &jobs);
        st = stats_of(e);
        fprintf(stderr, "every %llu-th launch fails\n", (unsigned long long)every);
        tu_print_stats("opencl, launches failing", &st);
        if (st.device_errors == 0 && st.device_launches < every) {
            /* not one launch reached the faulted one: grow the work */
            uint64_t seen = st.device_launches > 0 ? st.device_launches : 1;
            total *= (size_t)((3 * every + seen - 1) / seen);
            continue;
        }
        if (!(st.quarantined && st.device_bytes == 0))
            break;
        every = 2 * every + 1;
        total *= 2;
    }
    check_sums(&st, "fallback");
    ck_assert_uint_eq(st.bytes, total / MSG_LEN * MSG_LEN);
    ck_assert_uint_eq(st.jobs_completed, jobs);
    ck_assert_uint_gt(st.fallbacks, 0);
    ck_assert_uint_gt(st.device_errors, 0);
    ck_assert_uint_gt(st.cpu_bytes, 0);
    ck_assert_uint_gt(st.device_bytes, 0);
    hb_engine_close(e);
}
END_TEST

static Suite *stats_suite(void)
{
    Suite *s = suite_create("stats");
    TCase *tc = tcase_create("stats");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, mixed_work_sums, 0, NVARIANTS);
    tcase_add_test(tc, device_all_every_backend_scheduled);
    tcase_add_test(tc, fallback_counted_under_pool);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(stats_suite());
}
