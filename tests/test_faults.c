/*
 * test_faults.c - injected device faults never reach the caller as wrong
 * digests (uses hb_testing.h, the hashbatch_testing library).
 *
 * Covers: (a) one corrupted lane per launch under full verification: all
 * digests right, mismatches counted, the device quarantined, the engine
 * going on on the CPU; (b) every lane corrupted under sampled
 * verification: all digests right; (c) with verification off the
 * corruption really shows (at least one wrong digest, at most one per
 * faulted launch): proof that the injection works, so (a) and (b) mean
 * something; (d) a real OpenCL enqueue error: finished on the CPU with
 * cpu_fallback 1, HB_ERR_DEVICE naming the CL error with cpu_fallback 0;
 * (e) a real kernel build failure at open: HB_ERR_BUILD_FAILED with the
 * build log in the last error, and opening works again once it is off;
 * (f) the CPU pool's multi-buffer lanes corrupted (every digest of their
 * batches): with verification off the corruption shows, with full or
 * sampled verification every digest is right, mismatches are counted and
 * the pool stops using the lanes (no mismatch on the next batch).
 * (f) for an implementation this CPU cannot run does nothing; the suite then
 * ends with exit status 77, naming it on stderr, when every other case
 * passed (a failure is still exit 1): never a pass. ctest counts 77 as
 * skipped only with the may_skip label of tests/CMakeLists.txt, as a failure
 * otherwise. The cpu_impl reruns (HB_TEST_CPU_IMPL set) leave that to the
 * plain run: they test their own implementation.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_testing.h"
#include "test_util.h"

#define NMSG 10000
#define MAXLEN 2000
/* Small launches, so a 10,000-message batch takes several of them. */
#define STAGING (256u << 10)

static hb_engine *open_faulty(hb_verify_mode verify, int fallback,
                              hb_fault_kind kind, uint64_t nth)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_OPENCL);
    cfg.verify = verify;
    cfg.cpu_fallback = fallback;
    cfg.staging_bytes = STAGING;
    hb_engine *e = tu_open_cfg(&cfg);
    hb_fault_plan plan;
    memset(&plan, 0, sizeof plan); /* fields added later default to 0 */
    plan.kind = kind;
    plan.every_nth_launch = nth;
    ck_assert_int_eq(hb_testing_set_fault(e, &plan), HB_OK);
    return e;
}

static hb_stats stats_of(const hb_engine *e)
{
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    return st;
}

/* contains_ci: case-insensitive strstr. */
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

/* The multi-buffer implementations this CPU runs (sha-ni is OpenSSL). */
static const char *const lane_impls[] = {"avx512", "avx2", "portable"};

/* (f): loop index: the implementation. 4 KiB messages, many per lane. */
START_TEST(test_corrupt_cpu_lanes)
{
    const char *impl = lane_impls[_i];
    if (!hb_cpu_impl_runs(impl)) {
        fprintf(stderr, "cpu lanes fault: %s does not run on this CPU, not tested\n", impl);
        ck_assert_str_ne(impl, "portable"); /* always built, always runs */
        return;
    }
    enum { N = 2048, LEN = 4096 };
    size_t lens[N];
    for (size_t i = 0; i < N; i++)
        lens[i] = LEN - (i % 3); /* long enough that lanes beat OpenSSL */
    tu_msgset s;
    tu_msgset_from_lengths(&s, lens, N, 0xfa10 + (uint64_t)_i);
    hb_digest *got = tu_digests(N);
    /* lanes for every take (a sanitized build can measure OpenSSL cheaper
     * for the short takes its slow model gives, and send them there) */
    ck_assert_int_eq(hb_testing_set_lanes_forced(1), HB_OK);

    hb_engine *e = tu_open_cpu_lanes(impl, HB_VERIFY_OFF, 1);
    tu_batch(e, s.m, N, got);
    size_t bad = tu_count_mismatches(s.m, N, s.want, got, "cpu lanes corrupt, verify off");
    fprintf(stderr, "%s, verify off: %zu wrong digests of %d\n", impl, bad, N);
    ck_assert_msg(bad >= 1, "%s: lane fault injection had no visible effect", impl);
    hb_engine_close(e);

    for (int full = 0; full < 2; full++) {
        e = tu_open_cpu_lanes(impl, full ? HB_VERIFY_FULL : HB_VERIFY_SAMPLE, 1);
        memset(got, 0, N * sizeof *got);
        tu_batch(e, s.m, N, got);
        tu_assert_digests(s.m, N, s.want, got, full ? "lanes, verify full" : "lanes, sample");
        hb_stats st = stats_of(e);
        tu_print_stats(full ? "lanes, verify full" : "lanes, verify sample", &st);
        ck_assert_uint_gt(st.verify_mismatches, 0);
        ck_assert_uint_gt(st.fallbacks, 0);
        /* the lanes are out: the next batch is OpenSSL's, nothing to catch */
        memset(got, 0, N * sizeof *got);
        tu_batch(e, s.m, N, got);
        tu_assert_digests(s.m, N, s.want, got, "after the lanes are out");
        hb_stats st2 = stats_of(e);
        ck_assert_uint_eq(st2.verify_mismatches, st.verify_mismatches);
        hb_engine_close(e);
    }
    ck_assert_int_eq(hb_testing_set_lanes_forced(0), HB_OK);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

/* The lanes of a multi-buffer implementation, as hb_cpu_impls says. */
static unsigned lanes_of(const char *impl)
{
    return strcmp(impl, "avx512") == 0 ? 16 : strcmp(impl, "avx2") == 0 ? 8 : 4;
}

/* (f): loop index: implementation x fault. One batch through an engine
 * with the default (sampled) verification, its pool's kernel broken on
 * its last lane, in its padding of whole-block messages (tail kind 0),
 * or where it carries a state between calls: the first batch comes back
 * right, a mismatch is counted, and the batch was redone. Its clean twin
 * re-does at most the structure's few blocks per batch, and says how
 * much of the bytes that was. */
START_TEST(test_structure_faults_caught)
{
    const char *impl = lane_impls[_i / 3];
    hb_fault_kind kinds[] = {HB_FAULT_CPU_LANE, HB_FAULT_CPU_TAIL, HB_FAULT_CPU_CARRY};
    hb_fault_kind kind = kinds[_i % 3];
    if (!hb_cpu_impl_runs(impl)) {
        fprintf(stderr, "structure faults: %s does not run on this CPU, not tested\n", impl);
        ck_assert_str_ne(impl, "portable");
        return;
    }
    enum { N = 2048, LEN = 4096 };
    size_t lens[N];
    for (size_t i = 0; i < N; i++)
        lens[i] = LEN;
    tu_msgset s;
    tu_msgset_from_lengths(&s, lens, N, 0x57c0 + (uint64_t)_i);
    hb_digest *got = tu_digests(N);
    /* lanes for every take, even where a slow (sanitized) build measures
     * OpenSSL cheaper for the short takes its slow model gives */
    ck_assert_int_eq(hb_testing_set_lanes_forced(1), HB_OK);

    hb_engine *clean = tu_open_cpu_lanes(impl, HB_VERIFY_SAMPLE, 0);
    tu_batch(clean, s.m, N, got);
    tu_assert_digests(s.m, N, s.want, got, "structure checks, no fault");
    hb_stats st = stats_of(clean);
    ck_assert_uint_eq(st.verify_mismatches, 0);
    ck_assert_uint_gt(st.verified_bytes, 0);
    /* a cost per batch, not per byte: at most a run of two blocks per
     * lane and a tail per kind (under 64 bytes each) for every batch
     * (plus one, for a batch hashed on the caller's thread) */
    ck_assert_uint_le(st.verified_bytes, (st.batches + 1) * (lanes_of(impl) * 128 + 6 * 63));
    fprintf(stderr, "%s: sampled verification re-did %" PRIu64 " of %" PRIu64 " bytes (%.3f%%)\n",
            impl, st.verified_bytes, st.bytes, 100.0 * (double)st.verified_bytes / (double)st.bytes);
    hb_engine_close(clean);

    hb_engine *e = tu_open_cpu_lanes(impl, HB_VERIFY_SAMPLE, 0);
    hb_fault_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.kind = kind;
    plan.target = kind == HB_FAULT_CPU_LANE ? lanes_of(impl) - 1 : 0; /* the last lane */
    ck_assert_int_eq(hb_testing_set_fault(e, &plan), HB_OK);
    memset(got, 0, N * sizeof *got);
    tu_batch(e, s.m, N, got);
    tu_assert_digests(s.m, N, s.want, got, "structure fault, sampled");
    st = stats_of(e);
    ck_assert_msg(st.verify_mismatches > 0, "%s, fault kind %d: not caught", impl, (int)kind);
    ck_assert_uint_gt(st.fallbacks, 0);
    hb_engine_close(e);
    ck_assert_int_eq(hb_testing_set_lanes_forced(0), HB_OK);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

START_TEST(test_fault_api_null)
{
    hb_fault_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.kind = HB_FAULT_CORRUPT_ONE;
    plan.every_nth_launch = 1;
    ck_assert_int_eq(hb_testing_set_fault(NULL, &plan), HB_ERR_NULL_ARGUMENT);
}
END_TEST

/* (a) */
START_TEST(test_corrupt_one_full_verify)
{
    tu_msgset s;
    tu_msgset_random(&s, NMSG, MAXLEN, 0xfa01);
    hb_digest *got = tu_digests(NMSG);
    hb_engine *e = open_faulty(HB_VERIFY_FULL, 1, HB_FAULT_CORRUPT_ONE, 1);
    tu_batch(e, s.m, NMSG, got);
    tu_assert_digests(s.m, NMSG, s.want, got, "corrupt one, verify full");
    hb_stats st = stats_of(e);
    tu_print_stats("corrupt one, verify full", &st);
    ck_assert_uint_gt(st.verify_mismatches, 0);
    ck_assert_int_eq(st.quarantined, 1);
    ck_assert_uint_eq(st.messages, NMSG);
    /* Mismatches come from device results: launches did happen. */
    ck_assert_uint_gt(st.device_launches, 0);

    /* Quarantined: the next batch runs on the CPU, and is right. */
    memset(got, 0, NMSG * sizeof *got);
    tu_batch(e, s.m, NMSG, got);
    tu_assert_digests(s.m, NMSG, s.want, got, "after quarantine");
    hb_stats st2 = stats_of(e);
    tu_print_stats("after quarantine", &st2);
    ck_assert_uint_eq(st2.device_launches, st.device_launches);
    ck_assert_uint_eq(st2.messages, 2 * NMSG);
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

/* (b) */
START_TEST(test_corrupt_all_sample_verify)
{
    tu_msgset s;
    tu_msgset_random(&s, NMSG, MAXLEN, 0xfa02);
    hb_digest *got = tu_digests(NMSG);
    hb_engine *e = open_faulty(HB_VERIFY_SAMPLE, 1, HB_FAULT_CORRUPT_ALL, 1);
    tu_batch(e, s.m, NMSG, got);
    tu_assert_digests(s.m, NMSG, s.want, got, "corrupt all, verify sample");
    hb_stats st = stats_of(e);
    tu_print_stats("corrupt all, verify sample", &st);
    ck_assert_uint_gt(st.verify_mismatches, 0);
    ck_assert_int_eq(st.quarantined, 1);
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

/* (c): loop index 0: every launch, 1: every 3rd launch. */
START_TEST(test_corrupt_one_no_verify_shows)
{
    uint64_t nth = _i == 0 ? 1 : 3;
    tu_msgset s;
    tu_msgset_random(&s, NMSG, MAXLEN, 0xfa03);
    hb_digest *got = tu_digests(NMSG);
    hb_engine *e = open_faulty(HB_VERIFY_OFF, 1, HB_FAULT_CORRUPT_ONE, nth);
    tu_batch(e, s.m, NMSG, got);
    size_t bad = tu_count_mismatches(s.m, NMSG, s.want, got,
                                     "corrupt one, verify off (expected)");
    hb_stats st = stats_of(e);
    tu_print_stats("corrupt one, verify off", &st);
    fprintf(stderr, "every %llu launch(es): %zu wrong digests\n",
            (unsigned long long)nth, bad);
    ck_assert_msg(bad >= 1, "fault injection had no visible effect");
    ck_assert_uint_gt(st.device_launches, 1);
    ck_assert_msg(bad <= (st.device_launches + nth - 1) / nth,
                  "%zu wrong digests from %llu launches, every %llu faulted",
                  bad, (unsigned long long)st.device_launches,
                  (unsigned long long)nth);
    ck_assert_uint_eq(st.verify_mismatches, 0);
    ck_assert_int_eq(st.quarantined, 0);

    /* Fault off: right again. */
    ck_assert_int_eq(hb_testing_set_fault(e, NULL), HB_OK);
    tu_batch(e, s.m, NMSG, got);
    tu_assert_digests(s.m, NMSG, s.want, got, "fault cleared");
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

/* (d) with fallback */
START_TEST(test_enqueue_error_fallback)
{
    tu_msgset s;
    tu_msgset_random(&s, NMSG, MAXLEN, 0xfa04);
    hb_digest *got = tu_digests(NMSG);
    hb_engine *e = open_faulty(HB_VERIFY_OFF, 1, HB_FAULT_ENQUEUE_ERROR, 1);
    tu_batch(e, s.m, NMSG, got);
    tu_assert_digests(s.m, NMSG, s.want, got, "enqueue error, fallback");
    hb_stats st = stats_of(e);
    tu_print_stats("enqueue error, fallback", &st);
    ck_assert_uint_ge(st.fallbacks, 1);
    ck_assert_uint_ge(st.device_errors, 1);
    ck_assert_uint_eq(st.messages, NMSG);
    ck_assert_uint_eq(st.bytes, s.total_bytes);
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

/* (d) without fallback */
START_TEST(test_enqueue_error_no_fallback)
{
    tu_msgset s;
    tu_msgset_random(&s, NMSG, MAXLEN, 0xfa05);
    hb_digest *got = tu_digests(NMSG);
    hb_engine *e = open_faulty(HB_VERIFY_OFF, 0, HB_FAULT_ENQUEUE_ERROR, 1);
    hb_status st = hb_sha1_batch(e, s.m, NMSG, got);
    const char *err = hb_engine_last_error(e);
    fprintf(stderr, "enqueue error, no fallback: %s: %s\n",
            hb_status_name(st), err);
    ck_assert_int_eq(st, HB_ERR_DEVICE);
    ck_assert_msg(strstr(err, "CL_") != NULL,
                  "last error names no OpenCL error: \"%s\"", err);
    hb_stats stats = stats_of(e);
    ck_assert_uint_ge(stats.device_errors, 1);
    ck_assert_uint_eq(stats.fallbacks, 0);

    /* Fault off: the engine answers again, right or with an error. */
    ck_assert_int_eq(hb_testing_set_fault(e, NULL), HB_OK);
    memset(got, 0, NMSG * sizeof *got);
    st = hb_sha1_batch(e, s.m, NMSG, got);
    ck_assert_msg(st == HB_OK || st == HB_ERR_DEVICE, "after the fault: %s",
                  hb_status_name(st));
    if (st == HB_OK)
        tu_assert_digests(s.m, NMSG, s.want, got, "after the fault");
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

/* (e) */
START_TEST(test_build_failure)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_OPENCL);
    ck_assert_int_eq(hb_testing_set_build_fault(1), HB_OK);
    hb_engine *e = (hb_engine *)&cfg;
    hb_status st = hb_engine_open(&e, &cfg);
    char log[4096];
    snprintf(log, sizeof log, "%s", hb_engine_last_error(NULL));
    /* Restore first, so a failed assertion leaves no fault behind. */
    hb_status reset = hb_testing_set_build_fault(0);
    if (st == HB_OK && e)
        hb_engine_close(e);
    fprintf(stderr, "build fault: %s: %.600s\n", hb_status_name(st), log);
    ck_assert_int_eq(reset, HB_OK);
    ck_assert_int_eq(st, HB_ERR_BUILD_FAILED);
    ck_assert_ptr_null(e);
    ck_assert_msg(log[0] != '\0', "empty build log");
    ck_assert_msg(contains_ci(log, "error"),
                  "last error has no build log: \"%s\"", log);

    e = tu_open_cfg(&cfg);
    uint8_t byte = 0x61;
    hb_msg m = {&byte, 1};
    hb_digest got;
    uint8_t want[20];
    tu_sha1(&byte, 1, want);
    tu_batch(e, &m, 1, &got);
    ck_assert_mem_eq(got, want, 20);
    hb_engine_close(e);
}
END_TEST

static Suite *faults_suite(void)
{
    Suite *s = suite_create("faults");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_fault_api_null);
    tcase_add_test(tc, test_corrupt_one_full_verify);
    tcase_add_test(tc, test_corrupt_all_sample_verify);
    tcase_add_loop_test(tc, test_corrupt_one_no_verify_shows, 0, 2);
    tcase_add_test(tc, test_enqueue_error_fallback);
    tcase_add_test(tc, test_enqueue_error_no_fallback);
    tcase_add_test(tc, test_build_failure);
    tcase_add_loop_test(tc, test_corrupt_cpu_lanes, 0, 3);
    tcase_add_loop_test(tc, test_structure_faults_caught, 0, 9);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    int rc = tu_run_suite(faults_suite());
    if (rc != 0)
        return rc;
    /* Case (f) did nothing for the lanes this CPU cannot run: the plain run
     * says so and exits 77; the cpu_impl reruns (HB_TEST_CPU_IMPL set) test
     * their own implementation and leave the report to it. */
    char untested[64] = "";
    for (size_t k = 0; k < sizeof lane_impls / sizeof lane_impls[0]; k++)
        if (!hb_cpu_impl_runs(lane_impls[k])) {
            if (untested[0] != '\0')
                strcat(untested, ", ");
            strcat(untested, lane_impls[k]);
        }
    if (untested[0] == '\0')
        return 0;
    if (getenv("HB_TEST_CPU_IMPL") != NULL) {
        fprintf(stderr, "test_faults: case (f) did not run for the lanes of %s (the plain run "
                        "reports it)\n", untested);
        return 0;
    }
    fprintf(stderr, "SKIP: test_faults: every case passed, but case (f), corrupted CPU lanes, "
                    "did not run for %s: this CPU cannot run them\n", untested);
    return 77; /* skipped, or failed without SKIP_RETURN_CODE 77: never passed */
}
