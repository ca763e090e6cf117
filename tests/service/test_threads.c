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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

#define NTHREADS 64
#define JOBS_PER_THREAD 10000u
#define IN_FLIGHT 4
#define MAX_MSGS 8
#define MAX_LEN 2000
#define POOL_MSGS 48 /* distinct messages per thread */

typedef struct {
    const char *name;
    hb_backend_kind kind;
    const char *device;
} variant;

static const variant variants[] = {
    {"cpu", HB_BACKEND_CPU, NULL},
    {"opencl", HB_BACKEND_OPENCL, NULL},
    {"auto+all", HB_BACKEND_AUTO, "all"},
};
#define NVARIANTS ((int)(sizeof variants / sizeof variants[0]))

static unsigned scale(void)
{
    const char *s = getenv("HB_TEST_SCALE");
    long v = s ? strtol(s, NULL, 10) : 1;
    return v >= 1 ? (unsigned)v : 1u;
}

typedef struct {
    hb_msg m[MAX_MSGS];
    unsigned pick[MAX_MSGS]; /* index into the thread's message set */
    hb_digest out[MAX_MSGS];
    size_t n;
    hb_job *job;
} slot;

typedef struct {
    hb_engine *e;
    uint64_t seed;
    unsigned jobs;
    /* the thread's messages and their OpenSSL digests */
    uint8_t *data;
    hb_msg set[POOL_MSGS];
    hb_digest want[POOL_MSGS];
    /* what it did */
    uint64_t submitted, messages, bytes;
    unsigned bad_status, bad_digest, failed_submit;
    char first_error[200];
} feeder;

static void note(feeder *f, const char *what, hb_status st, unsigned job)
{
    if (f->first_error[0] == '\0')
        snprintf(f->first_error, sizeof f->first_error, "%s %s (job %u)",
                 what, hb_status_name(st), job);
}

/* Waits the job in s and checks every digest; no Check calls here (not
 * the test's main thread). */
static void finish(feeder *f, slot *s, unsigned job)
{
    hb_status st = hb_job_wait(s->job, -1);
    if (st != HB_OK) {
        f->bad_status++;
        note(f, "wait =", st, job);
    } else {
        for (size_t i = 0; i < s->n; i++)
            if (memcmp(s->out[i], f->want[s->pick[i]], 20) != 0) {
                f->bad_digest++;
                note(f, "wrong digest, outcome", st, job);
                break;
            }
    }
    hb_job_free(s->job);
    s->job = NULL;
}

static void *feeder_main(void *arg)
{
    feeder *f = arg;
    tu_rng r;
    tu_rng_seed(&r, f->seed);
    slot slots[IN_FLIGHT];
    memset(slots, 0, sizeof slots);
    unsigned head = 0; /* oldest in-flight slot */
    unsigned in_flight = 0;
    for (unsigned k = 0; k < f->jobs; k++) {
        if (in_flight == IN_FLIGHT) {
            finish(f, &slots[head], k - IN_FLIGHT);
            head = (head + 1) % IN_FLIGHT;
            in_flight--;
        }
        slot *s = &slots[(head + in_flight) % IN_FLIGHT];
        s->n = 1 + tu_rng_below(&r, MAX_MSGS);
        for (size_t i = 0; i < s->n; i++) {
            s->pick[i] = (unsigned)tu_rng_below(&r, POOL_MSGS);
            s->m[i] = f->set[s->pick[i]];
            f->bytes += s->m[i].len;
        }
        memset(s->out, 0xEE, sizeof s->out);
        hb_status st = hb_submit(f->e, s->m, s->n, s->out, &s->job);
        f->submitted++;
        f->messages += s->n;
        if (st != HB_OK) {
            f->failed_submit++;
            note(f, "submit =", st, k);
            break;
        }
        in_flight++;
    }
    while (in_flight > 0) {
        finish(f, &slots[head], f->jobs - in_flight);
        head = (head + 1) % IN_FLIGHT;
        in_flight--;
    }
    return NULL;
}

static void feeder_init(feeder *f, hb_engine *e, uint64_t seed, unsigned jobs)
{
    memset(f, 0, sizeof *f);
    f->e = e;
    f->seed = seed;
    f->jobs = jobs;
    tu_rng r;
    tu_rng_seed(&r, seed ^ 0xABCDEFu);
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
    hb_config cfg;
    tu_config(&cfg, variants[_i].kind);
    cfg.device = variants[_i].device;
    hb_engine *e = tu_open_cfg(&cfg);
    unsigned jobs = JOBS_PER_THREAD / scale();
    if (jobs == 0)
        jobs = 1;
    fprintf(stderr, "%s: %s; %d threads x %u jobs (HB_TEST_SCALE %u)\n",
            variants[_i].name, hb_engine_describe(e), NTHREADS, jobs,
            scale());
    feeder *f = calloc(NTHREADS, sizeof *f);
    ck_assert_ptr_nonnull(f);
    for (int k = 0; k < NTHREADS; k++)
        feeder_init(&f[k], e, 0x7000u + (uint64_t)(k * 1000 + _i), jobs);
    pthread_t th[NTHREADS];
    double t0 = tu_now();
    for (int k = 0; k < NTHREADS; k++)
        ck_assert_int_eq(pthread_create(&th[k], NULL, feeder_main, &f[k]), 0);
    for (int k = 0; k < NTHREADS; k++)
        ck_assert_int_eq(pthread_join(th[k], NULL), 0);
    double took = tu_now() - t0;

    uint64_t submitted = 0, messages = 0, bytes = 0;
    unsigned bad_status = 0, bad_digest = 0, failed_submit = 0;
    for (int k = 0; k < NTHREADS; k++) {
        submitted += f[k].submitted;
        messages += f[k].messages;
        bytes += f[k].bytes;
        bad_status += f[k].bad_status;
        bad_digest += f[k].bad_digest;
        failed_submit += f[k].failed_submit;
        if (f[k].first_error[0])
            fprintf(stderr, "thread %d: %s\n", k, f[k].first_error);
    }
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    fprintf(stderr,
            "%s: %llu jobs, %llu messages, %.1f MiB in %.2f s (%.0f jobs/s); "
            "batches %llu, launches %llu, device bytes %llu, cpu bytes %llu\n",
            variants[_i].name, (unsigned long long)submitted,
            (unsigned long long)messages, (double)bytes / (1 << 20), took,
            (double)submitted / took, (unsigned long long)st.batches,
            (unsigned long long)st.device_launches,
            (unsigned long long)st.device_bytes,
            (unsigned long long)st.cpu_bytes);
    ck_assert_msg(failed_submit == 0, "%u submits failed", failed_submit);
    ck_assert_msg(bad_status == 0, "%u jobs did not finish HB_OK",
                  bad_status);
    ck_assert_msg(bad_digest == 0, "%u jobs with a wrong digest", bad_digest);
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
    for (int k = 0; k < NTHREADS; k++)
        free(f[k].data);
    free(f);
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
