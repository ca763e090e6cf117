/*
 * test_calibrate.c - the calibration's budget (host/src/sched/calibrate.c):
 * opening an engine never waits on a slow device.
 *
 * Covers: (a) hb_calibrate on the real CPU backend (the portable lanes)
 * timed on a test clock that runs factor times faster than the machine's,
 * so the backend is, to the calibration, factor times slower: at 10^2,
 * 10^3 and 10^4 (a GPU simulator's slowness) no launch starts after the
 * budget, it stops
 * short (not complete), every term is finite and non-negative, and a class
 * it could not measure costs at least what every measured one does; at
 * 10^9 (one launch alone outlasts the budget) only the first launch, of
 * one message, runs (the one launch that may overrun the budget), and its time stands for every class; on a clock that
 * runs 100 times slower (a device 100 times faster) every workload runs in
 * full. (b) The engine under hb_testing_set_calibration_slowdown(10^4),
 * on the OpenCL device (pocl will do) and the pool: it opens, its
 * description says the device's model is conservative and why (the pool,
 * which has no budget, is measured in full), it
 * hashes a mixed batch right against OpenSSL, and what the test clock
 * measured is not kept in the model cache (the next open calibrates
 * again; the one after reads what that one stored).
 * Must not: assert how long anything took on the machine's own clock (the
 * budget is tested on the test clock, which the tests set).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "clock.h"
#include "error.h"
#include "hb_testing.h"
#include "mb/mb_impl.h"
#include "sched/calibrate.h"
#include "test_util.h"

/* A clock factor times faster than the machine's (or 1/divisor as fast),
 * counting from when the calibration began. */
typedef struct {
    uint64_t base;
    double rate;
} test_clock;

static uint64_t test_now(void *arg)
{
    const test_clock *c = arg;
    return c->base + (uint64_t)((double)(hb_now_ns() - c->base) * c->rate);
}

/* calibrate_at: the CPU backend's terms, its clock running rate times
 * the machine's; the report in *rep. */
static void calibrate_at(double rate, hb_cost_terms terms[HB_COST_CLASSES],
                         hb_calibration_report *rep)
{
    hb_calibration_data data;
    ck_assert_int_eq(hb_calibration_data_init(&data), HB_OK);
    hb_cpu_impl impl = HB_CPU_IMPL_PORTABLE;
    test_clock c = {hb_now_ns(), rate};
    hb_calibration_clock clock = {HB_CALIBRATION_BUDGET_NS, test_now, &c};
    hb_error_slot err;
    hb_error_slot_init(&err);
    hb_status st = hb_calibrate(&data, &hb_backend_cpu, &impl, &clock, terms, rep, &err);
    ck_assert_msg(st == HB_OK, "calibration failed: %s", hb_error_text(&err));
    hb_error_slot_destroy(&err);
    hb_calibration_data_free(&data);
    printf("clock x%g: %u launches, %u workloads (%u in full), last launch at %.3f ms, "
           "%.3f ms in all (test clock); classes measured %d %d %d\n",
           rate, rep->launches, rep->workloads, rep->full, (double)rep->last_start_ns * 1e-6,
           (double)rep->spent_ns * 1e-6, rep->measured[0], rep->measured[1], rep->measured[2]);
}

static void assert_terms_sane(const hb_cost_terms t[HB_COST_CLASSES])
{
    for (unsigned c = 0; c < HB_COST_CLASSES; c++) {
        ck_assert_msg(isfinite(t[c].fixed_ns) && t[c].fixed_ns > 0,
                      "class %u: fixed cost %g", c, t[c].fixed_ns);
        ck_assert_msg(isfinite(t[c].ns_per_message) && t[c].ns_per_message >= 0,
                      "class %u: per message %g", c, t[c].ns_per_message);
        ck_assert_msg(isfinite(t[c].ns_per_byte) && t[c].ns_per_byte >= 0,
                      "class %u: per byte %g", c, t[c].ns_per_byte);
    }
}

static const double SLOWER[] = {1e2, 1e3, 1e4};

START_TEST(test_slow_device_stops_at_budget)
{
    hb_cost_terms t[HB_COST_CLASSES];
    hb_calibration_report rep;
    calibrate_at(SLOWER[_i], t, &rep);
    /* every launch but the first (which always runs: under a sanitizer,
     * what comes before it can outlast the budget on this clock) */
    ck_assert_msg(rep.launches == 1 || rep.last_start_ns < HB_CALIBRATION_BUDGET_NS,
                  "launch %u started at %llu ns, after the %llu ns budget", rep.launches,
                  (unsigned long long)rep.last_start_ns,
                  (unsigned long long)HB_CALIBRATION_BUDGET_NS);
    ck_assert_msg(!rep.complete, "%g times slower, yet every workload ran in full", SLOWER[_i]);
    ck_assert_uint_ge(rep.launches, 1);
    assert_terms_sane(t);
    /* a class nothing measured is at least as dear as every measured one */
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        for (unsigned k = 0; k < HB_COST_CLASSES; k++)
            if (!rep.measured[c] && rep.measured[k]) {
                ck_assert_msg(t[c].ns_per_message >= t[k].ns_per_message,
                              "unmeasured class %u cheaper per message than class %u", c, k);
                ck_assert_msg(t[c].ns_per_byte >= t[k].ns_per_byte,
                              "unmeasured class %u cheaper per byte than class %u", c, k);
            }
}
END_TEST

START_TEST(test_hopeless_device_runs_one_launch)
{
    hb_cost_terms t[HB_COST_CLASSES];
    hb_calibration_report rep;
    calibrate_at(1e9, t, &rep);
    /* the first launch always runs (at 10^9, laying out its one message
     * already takes longer than the budget); nothing after it */
    ck_assert_uint_eq(rep.launches, 1);
    ck_assert_uint_eq(rep.workloads, 1);
    ck_assert(!rep.complete);
    assert_terms_sane(t);
    for (unsigned c = 0; c < HB_COST_CLASSES; c++) {
        ck_assert_int_eq(rep.measured[c], 0);
        /* the one message's whole time, per message and per byte of it */
        ck_assert_msg(t[c].ns_per_message == t[c].fixed_ns,
                      "class %u: per message %g, the lone message took %g", c,
                      t[c].ns_per_message, t[c].fixed_ns);
        ck_assert_msg(fabs(t[c].ns_per_byte * 64 - t[c].fixed_ns) <= 1e-9 * t[c].fixed_ns,
                      "class %u: per byte %g against a lone 64-byte message's %g ns", c,
                      t[c].ns_per_byte, t[c].fixed_ns);
    }
}
END_TEST

START_TEST(test_fast_device_runs_everything)
{
    hb_cost_terms t[HB_COST_CLASSES];
    hb_calibration_report rep;
    calibrate_at(0.01, t, &rep);
    ck_assert_msg(rep.complete, "a device 100 times faster fitted %u of %u workloads in full",
                  rep.full, HB_CALIBRATION_WORKLOADS);
    ck_assert_uint_eq(rep.workloads, HB_CALIBRATION_WORKLOADS);
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        ck_assert_int_eq(rep.measured[c], 1);
    assert_terms_sane(t);
}
END_TEST

/* ---- the engine ------------------------------------------------------ */

static char cache_dir[4096];

static hb_engine *open_opencl(hb_stats *st)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_OPENCL);
    cfg.verify = HB_VERIFY_FULL;
    hb_engine *e = tu_open_cfg(&cfg);
    ck_assert_int_eq(hb_engine_stats(e, st), HB_OK);
    return e;
}

static void hash_mixed(hb_engine *e, uint64_t seed)
{
    tu_msgset s;
    tu_msgset_random(&s, 300, 70000, seed);
    hb_digest *got = tu_digests(s.n);
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, "engine calibrated 10^4 times slower");
    free(got);
    tu_msgset_free(&s);
}

START_TEST(test_engine_opens_on_a_slow_device)
{
    char dir[4096], path[4200];
    tu_fresh_subdir(dir, cache_dir);
    snprintf(path, sizeof path, "%s/models.txt", dir);
    setenv("HASHBATCH_MODEL_CACHE", path, 1);

    ck_assert_int_eq(hb_testing_set_calibration_slowdown(10000), HB_OK);
    hb_stats st;
    hb_engine *e = open_opencl(&st);
    ck_assert_int_eq(hb_testing_set_calibration_slowdown(0), HB_OK);
    const char *why = hb_engine_describe(e);
    printf("slowed 10^4: %s\n", why);
    ck_assert_int_eq(st.models_from_cache, 0);
    ck_assert_msg(strstr(why, "(opencl ") != NULL &&
                      strstr(why, "calibration workloads fitted in full") != NULL &&
                      strstr(why, "a conservative model") != NULL,
                  "the description does not say the device's model is conservative: %s", why);
    ck_assert_msg(strstr(why, "(cpu pool: ") == NULL,
                  "the pool, which has no budget, was cut short: %s", why);
    hash_mixed(e, 1);
    hb_engine_close(e);

    /* what the test clock measured was not kept: the next open measures
     * again (in full or not: on a busy machine, or pocl in the GPU shape,
     * the real budget may cut it short too) */
    e = open_opencl(&st);
    printf("next open: %s\n", hb_engine_describe(e));
    ck_assert_int_eq(st.models_from_cache, 0);
    ck_assert_msg(st.calibration_ns > 0, "the next open did not calibrate");
    hash_mixed(e, 2);
    hb_engine_close(e);

    /* and what it measured was kept */
    e = open_opencl(&st);
    ck_assert_int_eq(st.models_from_cache, 1);
    ck_assert_uint_eq(st.calibration_ns, 0);
    hb_engine_close(e);
    unsetenv("HASHBATCH_MODEL_CACHE");
}
END_TEST

static void root_setup(void)
{
    tu_temp_dir(cache_dir, sizeof cache_dir, "hb-calibrate");
}

static void root_teardown(void)
{
    tu_remove_tree(cache_dir);
}

static Suite *calibrate_suite(void)
{
    Suite *s = suite_create("calibrate");
    TCase *budget = tcase_create("budget");
    tcase_set_timeout(budget, 120);
    tcase_add_loop_test(budget, test_slow_device_stops_at_budget, 0,
                        (int)(sizeof SLOWER / sizeof SLOWER[0]));
    tcase_add_test(budget, test_hopeless_device_runs_one_launch);
    tcase_add_test(budget, test_fast_device_runs_everything);
    suite_add_tcase(s, budget);
    TCase *engine = tcase_create("engine");
    tcase_set_timeout(engine, 300);
    tcase_add_unchecked_fixture(engine, root_setup, root_teardown);
    tcase_add_test(engine, test_engine_opens_on_a_slow_device);
    suite_add_tcase(s, engine);
    return s;
}

int main(void)
{
    return tu_run_suite(calibrate_suite());
}
