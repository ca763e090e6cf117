/*
 * test_fault_matrix.c - injected device faults under concurrent load
 * (hb_testing.h, the hashbatch_testing library).
 *
 * Covers: for backend opencl and for auto with device "all", each fault
 * kind (one lane corrupted under full verification, every lane corrupted
 * under sampled verification, a real OpenCL enqueue error, a device lost
 * for good) striking launches at random (chance_per_mille, fixed seeds)
 * while 8 threads submit random jobs (short messages, and long ones that
 * stream through several launches): every job finishes HB_OK exactly once
 * with every digest equal to OpenSSL's, the stats count the events, and
 * the device ends quarantined where it must. A kernel build failure at
 * open: auto falls back to the CPU pool and says why; opencl fails with
 * HB_ERR_BUILD_FAILED. cpu_fallback 0: HB_ERR_DEVICE naming the CL error,
 * and the engine goes on on the CPU once the device is quarantined.
 *
 * HB_TEST_SCALE (a divisor, default 1) shrinks the jobs per thread.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hb_testing.h"
#include "service_util.h"

#define NTHREADS 8
#define JOBS_PER_THREAD 300u
#define IN_FLIGHT 4
#define MAX_MSGS 64
#define SHORT_MSGS 56      /* messages 0..6000 bytes */
#define LONG_MSGS 8        /* messages 64 KiB..600 KiB: several launches */
#define POOL_MSGS (SHORT_MSGS + LONG_MSGS)
#define SHORT_MAX 6000u
#define LONG_MAX (600u << 10)
#define STAGING (256u << 10)

_Static_assert(MAX_MSGS <= FEED_MAX_MSGS, "a job's messages fit a feeder");
_Static_assert(POOL_MSGS <= FEED_MAX_SET, "the messages fit a feeder");

/* The variants with a device: opencl, auto with device "all". */
static const int device_variants[] = {VARIANT_OPENCL, VARIANT_AUTO_ALL};
#define NDEVICE_VARIANTS 2

typedef struct {
    const char *name;
    hb_fault_kind kind;
    hb_verify_mode verify;
    uint64_t seed;
} fault_case;

static const fault_case faults[] = {
    {"corrupt-one/verify-full", HB_FAULT_CORRUPT_ONE, HB_VERIFY_FULL, 11},
    {"corrupt-all/verify-sample", HB_FAULT_CORRUPT_ALL, HB_VERIFY_SAMPLE, 22},
    {"enqueue-error", HB_FAULT_ENQUEUE_ERROR, HB_VERIFY_SAMPLE, 33},
    {"device-lost", HB_FAULT_DEVICE_LOST, HB_VERIFY_SAMPLE, 44},
};
#define NFAULTS 4

static int contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               tolower((unsigned char)hay[i]) ==
                   tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

/* ---- feeders: threads submitting random jobs ------------------------ */

/* One message in 16 is a long one. */
static unsigned pick_short_or_long(tu_rng *r)
{
    return tu_rng_below(r, 16) == 0
               ? SHORT_MSGS + (unsigned)tu_rng_below(r, LONG_MSGS)
               : (unsigned)tu_rng_below(r, SHORT_MSGS);
}

/* The thread's messages (short ones, then long ones) and their OpenSSL
 * digests. */
static void fill_set(feeder *f)
{
    tu_rng r;
    tu_rng_seed(&r, f->seed * 31 + 5);
    size_t total = (size_t)SHORT_MSGS * SHORT_MAX + (size_t)LONG_MSGS * LONG_MAX;
    f->data = malloc(total);
    ck_assert_ptr_nonnull(f->data);
    tu_rng_fill(&r, f->data, total);
    size_t at = 0;
    for (unsigned i = 0; i < POOL_MSGS; i++) {
        size_t len = i < SHORT_MSGS
                         ? tu_rng_below(&r, SHORT_MAX + 1)
                         : (64u << 10) + tu_rng_below(&r, LONG_MAX - (64u << 10));
        f->set[i] = (hb_msg){f->data + at, len};
        at += i < SHORT_MSGS ? SHORT_MAX : LONG_MAX;
        tu_sha1(f->set[i].data, len, f->want[i]);
    }
}

/* Runs NTHREADS feeders on e; returns what they saw. allow_device_error:
 * cpu_fallback 0, HB_ERR_DEVICE is an allowed outcome. */
static feed_totals run_feeders(hb_engine *e, uint64_t seed, unsigned jobs,
                               int allow_device_error)
{
    const feed_plan plan = {IN_FLIGHT, MAX_MSGS, pick_short_or_long,
                            allow_device_error};
    feeder *f = feeders_new(NTHREADS);
    for (int k = 0; k < NTHREADS; k++) {
        feeder_init(&f[k], e, &plan, seed * 100 + (uint64_t)k, jobs);
        fill_set(&f[k]);
    }
    alarm(400); /* watchdog: a job that never finishes kills the test */
    feeders_run(f, NTHREADS);
    alarm(0);
    feed_totals t = feeders_total(f, NTHREADS);
    feeders_free(f, NTHREADS);
    return t;
}

static const hb_device_stats *opencl_entry(const hb_stats *st)
{
    for (unsigned k = 0; k < st->ndevices; k++)
        if (!st->device[k].is_cpu)
            return &st->device[k];
    return NULL;
}

/* With auto, which backend takes a batch is the scheduler's call; the
 * matrix is about faults on the device, so the device's model is fixed
 * far cheaper than the pool's: it takes every batch until it is
 * quarantined, and the pool then takes over. */
static void make_device_cheapest(hb_engine *e)
{
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    hb_cost_terms cheap[HB_COST_CLASSES];
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        cheap[c] = (hb_cost_terms){0.0, 0.0, 1e-6};
    for (unsigned k = 0; k < st.ndevices; k++)
        if (!st.device[k].is_cpu)
            ck_assert_int_eq(hb_testing_force_costs(e, k, cheap), HB_OK);
}

/* ---- the matrix ----------------------------------------------------- */

START_TEST(fault_under_load)
{
    const int vi = device_variants[_i / NFAULTS];
    const variant *v = &variants[vi];
    const fault_case *fc = &faults[_i % NFAULTS];
    char what[128];
    snprintf(what, sizeof what, "%s, %s", v->name, fc->name);

    hb_config cfg;
    variant_config(&cfg, vi);
    cfg.verify = fc->verify;
    cfg.cpu_fallback = 1;
    cfg.staging_bytes = STAGING;
    hb_engine *e = tu_open_cfg(&cfg);
    ck_assert_msg(hb_engine_backend(e) == HB_BACKEND_OPENCL,
                  "%s: no device: %s", what, hb_engine_describe(e));
    make_device_cheapest(e);
    hb_fault_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.kind = fc->kind;
    plan.chance_per_mille = 200;
    plan.seed = fc->seed;
    ck_assert_int_eq(hb_testing_set_fault(e, &plan), HB_OK);

    unsigned jobs = JOBS_PER_THREAD / scale();
    if (jobs < 8)
        jobs = 8;
    double t0 = tu_now();
    feed_totals t = run_feeders(e, fc->seed + (uint64_t)_i, jobs, 0);
    double took = tu_now() - t0;
    hb_stats st = stats_of(e);
    fprintf(stderr, "%s: %llu jobs in %.2f s (scale %u)\n", what,
            (unsigned long long)t.submitted, took, scale());
    tu_print_stats(what, &st);

    ck_assert_msg(t.failed_submit == 0, "%s: %u submits failed", what,
                  t.failed_submit);
    ck_assert_msg(t.bad_status == 0, "%s: %u jobs did not end HB_OK", what,
                  t.bad_status);
    /* With sampled verification this fails when a corrupted launch is one
     * of several in a batch and none of its lanes is in the sample: the
     * sample is spread over the batch, not over its launches. */
    ck_assert_msg(t.bad_digest == 0,
                  "%s: %u jobs with a wrong digest reached the caller "
                  "(verification %s missed corrupted launches)", what,
                  t.bad_digest, hb_verify_name(fc->verify));
    /* exactly once: counted messages and bytes equal what was submitted */
    ck_assert_uint_eq(st.jobs_submitted, t.submitted);
    ck_assert_uint_eq(st.jobs_completed, t.submitted);
    ck_assert_uint_eq(st.messages, t.messages);
    ck_assert_uint_eq(st.bytes, t.bytes);
    ck_assert_uint_eq(st.device_bytes + st.cpu_bytes, t.bytes);
    ck_assert_uint_eq(st.queue_messages, 0);
    ck_assert_uint_eq(st.queue_jobs, 0);
    ck_assert_msg(st.fallbacks >= 1, "%s: no fallback counted", what);
    ck_assert_msg(st.cpu_bytes > 0, "%s: the CPU redid nothing", what);

    const hb_device_stats *dev = opencl_entry(&st);
    ck_assert_ptr_nonnull(dev);
    switch (fc->kind) {
    case HB_FAULT_CORRUPT_ONE:
    case HB_FAULT_CORRUPT_ALL:
        ck_assert_msg(st.verify_mismatches >= 1, "%s: no mismatch", what);
        ck_assert_int_eq(st.quarantined, 1);
        ck_assert_int_eq(dev->quarantined, 1);
        break;
    case HB_FAULT_ENQUEUE_ERROR:
        ck_assert_msg(st.device_errors >= 1, "%s: no device error", what);
        ck_assert_msg(dev->errors >= 1, "%s: device entry counts no error",
                      what);
        ck_assert_uint_eq(st.verify_mismatches, 0);
        break;
    case HB_FAULT_DEVICE_LOST:
        ck_assert_msg(st.device_errors >= 3, "%s: %llu device errors", what,
                      (unsigned long long)st.device_errors);
        ck_assert_int_eq(st.quarantined, 1);
        ck_assert_int_eq(dev->quarantined, 1);
        ck_assert_uint_eq(st.verify_mismatches, 0);
        break;
    default:
        break;
    }
    uint64_t errors = 0;
    for (unsigned k = 0; k < st.ndevices; k++)
        errors += st.device[k].errors;
    ck_assert_uint_eq(errors, st.device_errors);

    /* and it goes on hashing right (on the CPU if quarantined) */
    tu_msgset s;
    tu_msgset_random(&s, 2000, 5000, 99);
    hb_digest *got = tu_digests(s.n);
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, "after faults");
    free(got);
    tu_msgset_free(&s);
    alarm(60);
    hb_engine_close(e);
    alarm(0);
}
END_TEST

/* cpu_fallback 0 under load, faults at random: every job ends HB_OK with
 * right digests, or HB_ERR_DEVICE; nothing hangs; stats add up. */
START_TEST(no_fallback_under_load)
{
    const int vi = device_variants[_i];
    const variant *v = &variants[vi];
    hb_config cfg;
    variant_config(&cfg, vi);
    cfg.verify = HB_VERIFY_SAMPLE;
    cfg.cpu_fallback = 0;
    cfg.staging_bytes = STAGING;
    hb_engine *e = tu_open_cfg(&cfg);
    make_device_cheapest(e);
    hb_fault_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.kind = HB_FAULT_ENQUEUE_ERROR;
    plan.chance_per_mille = 100;
    plan.seed = 55;
    ck_assert_int_eq(hb_testing_set_fault(e, &plan), HB_OK);
    unsigned jobs = JOBS_PER_THREAD / 2 / scale();
    feed_totals t = run_feeders(e, 55, jobs < 8 ? 8 : jobs, 1);
    hb_stats st = stats_of(e);
    tu_print_stats(v->name, &st);
    fprintf(stderr, "%s: %llu jobs OK, %llu HB_ERR_DEVICE\n", v->name,
            (unsigned long long)t.ok_jobs, (unsigned long long)t.device_errors);
    ck_assert_uint_eq(t.failed_submit, 0);
    ck_assert_msg(t.bad_status == 0, "%u jobs ended neither OK nor DEVICE",
                  t.bad_status);
    ck_assert_msg(t.bad_digest == 0, "%u OK jobs with a wrong digest",
                  t.bad_digest);
    ck_assert_uint_eq(st.jobs_submitted, t.submitted);
    ck_assert_uint_eq(st.jobs_completed, t.ok_jobs);
    ck_assert_uint_eq(st.fallbacks, 0);
    ck_assert_uint_eq(st.queue_messages, 0);
    alarm(60);
    hb_engine_close(e);
    alarm(0);
}
END_TEST

/* ---- cpu_fallback 0, every launch fails ----------------------------- */

START_TEST(no_fallback_device_error_named)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_OPENCL);
    cfg.cpu_fallback = 0;
    cfg.verify = HB_VERIFY_SAMPLE;
    hb_engine *e = tu_open_cfg(&cfg);
    hb_fault_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.kind = HB_FAULT_ENQUEUE_ERROR;
    plan.every_nth_launch = 1;
    ck_assert_int_eq(hb_testing_set_fault(e, &plan), HB_OK);
    tu_msgset s;
    tu_msgset_random(&s, 300, 2000, 0xDE7u);
    hb_digest *got = tu_digests(s.n);
    hb_job *j;
    ck_assert_int_eq(hb_submit(e, s.m, s.n, got, &j), HB_OK);
    hb_status st = hb_job_wait(j, -1);
    ck_assert_msg(st == HB_ERR_DEVICE, "wait = %s", hb_status_name(st));
    const char *err = hb_engine_last_error(e);
    ck_assert_msg(strstr(err, "CL_") != NULL,
                  "last error does not name the OpenCL error: \"%s\"", err);
    fprintf(stderr, "cpu_fallback 0: %s\n", err);
    hb_job_free(j);

    /* each failed single-batch job is one device error; after the third
     * in a row the device is quarantined and the CPU pool takes jobs */
    hb_stats sts;
    unsigned rounds = 0;
    for (;;) {
        sts = stats_of(e);
        if (sts.quarantined)
            break;
        ck_assert_msg(++rounds < 10, "device never quarantined");
        ck_assert_int_eq(hb_submit(e, s.m, 1, got, &j), HB_OK);
        hb_status single = hb_job_wait(j, -1);
        hb_job_free(j);
        /* the worker delivers a failed batch before it counts the error
         * that quarantines the device: a job sent in between goes to the
         * CPU pool and succeeds, and only then may it succeed */
        if (single == HB_OK) {
            sts = stats_of(e);
            ck_assert_msg(sts.quarantined, "a job succeeded on a failing device");
            break;
        }
        ck_assert_int_eq(single, HB_ERR_DEVICE);
    }
    ck_assert_uint_eq(sts.fallbacks, 0);
    ck_assert_msg(sts.device_errors >= 3, "%llu device errors",
                  (unsigned long long)sts.device_errors);
    const hb_device_stats *dev = opencl_entry(&sts);
    ck_assert_ptr_nonnull(dev);
    ck_assert_int_eq(dev->quarantined, 1);
    memset(got, 0, s.n * sizeof *got);
    ck_assert_int_eq(hb_submit(e, s.m, s.n, got, &j), HB_OK);
    ck_assert_int_eq(hb_job_wait(j, -1), HB_OK);
    tu_assert_digests(s.m, s.n, s.want, got, "after quarantine");
    hb_job_free(j);
    free(got);
    tu_msgset_free(&s);
    hb_engine_close(e);
}
END_TEST

/* ---- kernel build failure at open ------------------------------------ */

START_TEST(build_failure_auto_falls_back)
{
    ck_assert_int_eq(hb_testing_set_build_fault(1), HB_OK);
    for (int k = 0; k < 2; k++) {
        hb_config cfg;
        tu_config(&cfg, HB_BACKEND_AUTO);
        cfg.device = k == 0 ? NULL : "all";
        hb_engine *e = NULL;
        hb_status st = hb_engine_open(&e, &cfg);
        ck_assert_msg(st == HB_OK, "auto with a build failure: %s: %s",
                      hb_status_name(st), hb_engine_last_error(NULL));
        ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_CPU);
        const char *d = hb_engine_describe(e);
        fprintf(stderr, "auto (device %s), build failing: %s\n",
                cfg.device ? cfg.device : "default", d);
        ck_assert_msg(contains_ci(d, "opencl") &&
                          (contains_ci(d, "build") || contains_ci(d, "unusable")),
                      "describe does not say why OpenCL is not used: %s", d);
        tu_msgset s;
        tu_msgset_random(&s, 3000, 3000, 0xB01u + (uint64_t)k);
        hb_digest *got = tu_digests(s.n);
        hb_job *j;
        ck_assert_int_eq(hb_submit(e, s.m, s.n, got, &j), HB_OK);
        ck_assert_int_eq(hb_job_wait(j, -1), HB_OK);
        tu_assert_digests(s.m, s.n, s.want, got, "auto, build failed");
        hb_stats sts = stats_of(e);
        ck_assert_uint_eq(sts.cpu_bytes, s.total_bytes);
        ck_assert_uint_eq(sts.device_launches, 0);
        hb_job_free(j);
        free(got);
        tu_msgset_free(&s);
        hb_engine_close(e);
    }
    ck_assert_int_eq(hb_testing_set_build_fault(0), HB_OK);
}
END_TEST

START_TEST(build_failure_opencl_fails)
{
    ck_assert_int_eq(hb_testing_set_build_fault(1), HB_OK);
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_OPENCL);
    hb_engine *e = (hb_engine *)(uintptr_t)1;
    hb_status st = hb_engine_open(&e, &cfg);
    ck_assert_msg(st == HB_ERR_BUILD_FAILED, "opencl, build failing: %s",
                  hb_status_name(st));
    ck_assert_ptr_null(e);
    const char *err = hb_engine_last_error(NULL);
    ck_assert_msg(err[0] != '\0', "no build log in the last error");
    ck_assert_int_eq(hb_testing_set_build_fault(0), HB_OK);
    /* and with the switch reset it opens and hashes on the device */
    e = tu_open_cfg(&cfg);
    ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_OPENCL);
    tu_msgset s;
    tu_msgset_random(&s, 1000, 3000, 0xB02u);
    hb_digest *got = tu_digests(s.n);
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, "after reset");
    tu_assert_clean(e);
    free(got);
    tu_msgset_free(&s);
    hb_engine_close(e);
}
END_TEST

static Suite *fault_matrix_suite(void)
{
    Suite *s = suite_create("fault_matrix");
    TCase *tc = tcase_create("matrix");
    tcase_set_timeout(tc, 450);
    tcase_add_loop_test(tc, fault_under_load, 0,
                         NDEVICE_VARIANTS * NFAULTS);
    tcase_add_loop_test(tc, no_fallback_under_load, 0, NDEVICE_VARIANTS);
    suite_add_tcase(s, tc);
    tc = tcase_create("single");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, no_fallback_device_error_named);
    tcase_add_test(tc, build_failure_auto_falls_back);
    tcase_add_test(tc, build_failure_opencl_fails);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(fault_matrix_suite());
}
