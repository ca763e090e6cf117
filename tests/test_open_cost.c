/*
 * test_open_cost.c - hb_config.expected_messages and expected_bytes: with
 * backend auto and the default devices, the engine opens no OpenCL device
 * when finding and opening them took longer, at their last open, than the
 * CPU pool's cached model predicts for all the expected work.
 *
 * Covers, each test with its own model cache file (HASHBATCH_MODEL_CACHE
 * in a mkdtemp folder): a first open with tiny expected work opens the
 * devices (their cost is not known yet) and records the cost; the next
 * such open uses the pool alone, says why in hb_engine_describe, and
 * hashes right (OpenSSL's digests); expected work far beyond the open's
 * cost, no expectation, backend opencl, and a device named by spec all
 * open the device; a bad spec still fails as one; without a model cache
 * nothing is known, so the device is opened. Devices on the pool's cores
 * (pocl) are also weighed by their cheapest cached terms: a close records
 * them, and where they (opening included) would finish the expected work
 * after the pool alone, they are not opened; cheaper ones are. The
 * margins are of orders of magnitude (64 bytes against a terabyte, terms
 * of a femtosecond against a microsecond a byte), so load cannot turn them.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/models.h"
#include "test_util.h"

static char dir[64];

/* Each test (forked) gets its own cache file. */
static void fresh_cache(void)
{
    tu_temp_dir(dir, sizeof dir, "hb-open-cost");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/models.txt", dir);
    setenv("HASHBATCH_MODEL_CACHE", path, 1);
}

static void drop_cache(void)
{
    tu_remove_tree(dir);
}

static hb_engine *open_expecting(hb_backend_kind kind, const char *device, uint64_t messages,
                                 uint64_t bytes)
{
    hb_config cfg;
    tu_config(&cfg, kind);
    cfg.device = device;
    cfg.expected_messages = messages;
    cfg.expected_bytes = bytes;
    return tu_open_cfg(&cfg);
}

/* Hashes a few messages on e and checks them against OpenSSL's. */
static void hashes_right(hb_engine *e)
{
    static const char text[] = "abc, and more bytes than one block holds: 0123456789abcdef0123";
    hb_msg m[3] = {{text, 3}, {text, sizeof text - 1}, {"", 0}};
    hb_digest got[3];
    tu_batch(e, m, 3, got);
    hb_digest *want = tu_oracle(m, 3);
    tu_assert_digests(m, 3, want, got, "open cost");
    free(want);
}

static const uint64_t TERABYTE = 1ull << 40;

/* pool_alone: e opened no device, says why (the words because), hashes
 * right on the pool with no byte on a device; closes e. */
static void pool_alone(hb_engine *e, const char *because)
{
    ck_assert_msg(hb_engine_backend(e) == HB_BACKEND_CPU, "opened: %s", hb_engine_describe(e));
    ck_assert_msg(strstr(hb_engine_describe(e), because) != NULL, "'%s' does not say '%s'",
                  hb_engine_describe(e), because);
    hashes_right(e);
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    ck_assert_uint_eq(st.device_bytes, 0);
    hb_engine_close(e);
}

START_TEST(test_small_work_skips_measured_devices)
{
    hb_engine *e = open_expecting(HB_BACKEND_AUTO, NULL, 1, 64);
    ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_OPENCL); /* cost not known yet */
    hashes_right(e);
    hb_engine_close(e);
    pool_alone(open_expecting(HB_BACKEND_AUTO, NULL, 1, 64), "OpenCL not opened");
}
END_TEST

/* Records, as a close would, devices on the pool's cores whose every
 * class costs ns_per_byte a byte (and 1 ns a launch). */
static void shared_devices_cost(double ns_per_byte)
{
    hb_cost_terms t[HB_COST_CLASSES];
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        t[c] = (hb_cost_terms){1, 0, ns_per_byte};
    hb_models_store_shared_devices("all", t);
}

START_TEST(test_big_or_unknown_work_opens)
{
    hb_engine *e = open_expecting(HB_BACKEND_AUTO, NULL, 1, 64); /* records the cost */
    hb_engine_close(e);
    shared_devices_cost(1e-6); /* devices far cheaper than the pool */
    e = open_expecting(HB_BACKEND_AUTO, NULL, 1u << 20, TERABYTE);
    ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_OPENCL);
    hashes_right(e);
    hb_engine_close(e);
    e = open_expecting(HB_BACKEND_AUTO, NULL, 0, 0);
    ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_OPENCL);
    hb_engine_close(e);
}
END_TEST

START_TEST(test_slower_devices_on_pool_cores_skipped)
{
    hb_engine *e = open_expecting(HB_BACKEND_AUTO, NULL, 1, 64);
    ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_OPENCL); /* nothing known yet */
    hashes_right(e);
    hb_engine_close(e);
    ck_assert_msg(hb_models_shared_devices_time("all", 1, 64) > 0,
                  "the close recorded no terms for pocl, a device on the pool's cores");
    shared_devices_cost(1e3); /* a microsecond a byte: far slower than the pool */
    pool_alone(open_expecting(HB_BACKEND_AUTO, NULL, 1u << 20, TERABYTE), "share the pool's cores");
    shared_devices_cost(1e-6);
    e = open_expecting(HB_BACKEND_AUTO, NULL, 1u << 20, TERABYTE);
    ck_assert_msg(hb_engine_backend(e) == HB_BACKEND_OPENCL, "not opened: %s",
                  hb_engine_describe(e));
    hb_engine_close(e);
}
END_TEST

START_TEST(test_pinned_or_named_opens)
{
    hb_engine *e = open_expecting(HB_BACKEND_AUTO, NULL, 1, 64);
    hb_engine_close(e);
    e = open_expecting(HB_BACKEND_OPENCL, NULL, 1, 64);
    ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_OPENCL);
    hashes_right(e);
    hb_engine_close(e);
    e = open_expecting(HB_BACKEND_AUTO, "cpu", 1, 64); /* pocl: the OpenCL CPU device */
    ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_OPENCL);
    hb_engine_close(e);
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_AUTO);
    cfg.device = "no-such-device-anywhere";
    cfg.expected_messages = 1;
    cfg.expected_bytes = 64;
    hb_engine *bad = NULL;
    ck_assert_int_eq(hb_engine_open(&bad, &cfg), HB_ERR_BAD_DEVICE_SPEC);
    ck_assert_ptr_null(bad);
}
END_TEST

START_TEST(test_no_cache_opens)
{
    setenv("HASHBATCH_MODEL_CACHE", "off", 1);
    for (int i = 0; i < 2; i++) {
        hb_engine *e = open_expecting(HB_BACKEND_AUTO, NULL, 1, 64);
        ck_assert_int_eq(hb_engine_backend(e), HB_BACKEND_OPENCL);
        hb_engine_close(e);
    }
}
END_TEST

static Suite *open_cost_suite(void)
{
    Suite *s = suite_create("open_cost");
    TCase *tc = tcase_create("open_cost");
    tcase_add_checked_fixture(tc, fresh_cache, drop_cache);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_small_work_skips_measured_devices);
    tcase_add_test(tc, test_big_or_unknown_work_opens);
    tcase_add_test(tc, test_slower_devices_on_pool_cores_skipped);
    tcase_add_test(tc, test_pinned_or_named_opens);
    tcase_add_test(tc, test_no_cache_opens);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(open_cost_suite());
}
