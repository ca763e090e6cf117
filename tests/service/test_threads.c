/*
 * test_threads.c - many threads feeding one engine.
 *
 * 64 threads each submit 10,000 jobs (1..8 messages of 0..2000 bytes,
 * drawn from the thread's own set of messages whose OpenSSL digests the
 * test computed), keeping up to 4 jobs in flight and waiting the oldest;
 * every digest of every job must equal OpenSSL's, and afterwards the
 * engine's stats must add up exactly: jobs_submitted and jobs_completed
 * equal the jobs, messages and bytes equal what was submitted, the queue
 * is empty. Backends: cpu, opencl, auto with device "all".
 *
 * HB_TEST_SCALE (a divisor, default 1) divides the jobs per thread, for
 * sanitizer builds (TSan is ~10x slower).
 */
#include <stdio.h>
#include <stdlib.h>

#include "service_util.h"

#define NTHREADS 64
#define JOBS_PER_THREAD 10000u
#define IN_FLIGHT 4
#define MAX_MSGS 8
#define MAX_LEN 2000
#define POOL_MSGS 48 /* distinct messages per thread */

_Static_assert(MAX_MSGS <= FEED_MAX_MSGS, "a job's messages fit a feeder");
_Static_assert(POOL_MSGS <= FEED_MAX_SET, "the messages fit a feeder");

/* Any message of the thread's set, uniformly. */
static unsigned pick_any(tu_rng *r)
{
    return (unsigned)tu_rng_below(r, POOL_MSGS);
}

static const feed_plan plan = {IN_FLIGHT, MAX_MSGS, pick_any, 0};

/* The thread's messages and their OpenSSL digests. */
static void fill_set(feeder *f)
{
    tu_rng r;
    tu_rng_seed(&r, f->seed ^ 0xABCDEFu);
    f->data = malloc((size_t)POOL_MSGS * MAX_LEN);
    ck_assert_ptr_nonnull(f->data);
    tu_rng_fill(&r, f->data, (size_t)POOL_MSGS * MAX_LEN);
    for (unsigned i = 0; i < POOL_MSGS; i++) {
        /* lengths 0..MAX_LEN, with the block edges well represented */
        size_t len = i < 8 ? (size_t[]){0, 1, 55, 56, 63, 64, 65, MAX_LEN}[i]
                           : tu_rng_below(&r, MAX_LEN + 1);
        f->set[i] = (hb_msg){f->data + (size_t)i * MAX_LEN, len};
        tu_sha1(f->set[i].data, len, f->want[i]);
    }
}

START_TEST(many_threads_one_engine)
{
    hb_engine *e = open_variant(_i);
    unsigned jobs = JOBS_PER_THREAD / scale();
    if (jobs == 0)
        jobs = 1;
    fprintf(stderr, "%s: %s; %d threads x %u jobs (HB_TEST_SCALE %u)\n",
            variants[_i].name, hb_engine_describe(e), NTHREADS, jobs,
            scale());
    feeder *f = feeders_new(NTHREADS);
    for (int k = 0; k < NTHREADS; k++) {
        feeder_init(&f[k], e, &plan, 0x7000u + (uint64_t)(k * 1000 + _i),
                    jobs);
        fill_set(&f[k]);
    }
    double t0 = tu_now();
    feeders_run(f, NTHREADS);
    double took = tu_now() - t0;

    feed_totals t = feeders_total(f, NTHREADS);
    uint64_t submitted = t.submitted, messages = t.messages, bytes = t.bytes;
    hb_stats st = stats_of(e);
    fprintf(stderr,
            "%s: %llu jobs, %llu messages, %.1f MiB in %.2f s (%.0f jobs/s); "
            "batches %llu, launches %llu, device bytes %llu, cpu bytes %llu\n",
            variants[_i].name, (unsigned long long)submitted,
            (unsigned long long)messages, (double)bytes / (1 << 20), took,
            (double)submitted / took, (unsigned long long)st.batches,
            (unsigned long long)st.device_launches,
            (unsigned long long)st.device_bytes,
            (unsigned long long)st.cpu_bytes);
    ck_assert_msg(t.failed_submit == 0, "%u submits failed", t.failed_submit);
    ck_assert_msg(t.bad_status == 0, "%u jobs did not finish HB_OK",
                  t.bad_status);
    ck_assert_msg(t.bad_digest == 0, "%u jobs with a wrong digest",
                  t.bad_digest);
    ck_assert_uint_eq(st.jobs_submitted, submitted);
    ck_assert_uint_eq(st.jobs_completed, submitted);
    ck_assert_uint_eq(st.messages, messages);
    ck_assert_uint_eq(st.bytes, bytes);
    ck_assert_uint_eq(st.queue_messages, 0);
    ck_assert_uint_eq(st.queue_jobs, 0);
    ck_assert_uint_eq(st.device_bytes + st.cpu_bytes, bytes);
    if (variants[_i].kind == HB_BACKEND_AUTO) /* pool and device share */
        ck_assert_msg(st.verify_mismatches == 0 && st.fallbacks == 0 &&
                          st.device_errors == 0 && st.quarantined == 0,
                      "auto+all: not clean");
    else
        tu_assert_clean(e);
    if (variants[_i].kind == HB_BACKEND_CPU)
        ck_assert_uint_eq(st.cpu_bytes, bytes);
    feeders_free(f, NTHREADS);
    hb_engine_close(e);
}
END_TEST

static Suite *threads_suite(void)
{
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 280);
    tcase_add_loop_test(tc, many_threads_one_engine, 0, NVARIANTS);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(threads_suite());
}
