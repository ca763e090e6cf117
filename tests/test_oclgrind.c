/*
 * test_oclgrind.c - the GPU shape on a simulated GPU: run only under
 * Oclgrind (tests/check_oclgrind.sh), whose device reports itself as a
 * GPU and checks every work-item's memory accesses, data races,
 * uninitialised values and the API calls.
 *
 * Covers, in TCase "backend" (one thread, so it runs under every Oclgrind
 * check, --uninitialized included: see check_oclgrind.sh): the device is
 * Oclgrind's and opens in the discrete-GPU shape of its own accord (one
 * lane per work-item, packed blocks copied to the device, no in-place
 * reads, no uniform kernel); NIST's short messages give NIST's digests;
 * every length 0-300 and 4,090-4,100 in one packed batch; long messages
 * streamed through 64 KiB launches with their state carried from launch to
 * launch while the ring of launches in flight fills. These use the one
 * kernel entry the GPU shape launches (hb_sha1_blocks: no uniform or
 * in-place launches in this shape, which the first case asserts). In
 * TCase "engine"
 * (the engine's threads): an engine opened on the simulator within its
 * calibration budget hashes a mixed batch with every byte on the device,
 * and a read-back corrupted in every launch is caught by verification and
 * redone on the CPU. OpenSSL is the oracle beside NIST's answers.
 * Must not: run on any other device (it fails, naming the device, rather
 * than pass on pocl), or assert timings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_opencl.h"
#include "devices.h"
#include "error.h"
#include "hb_testing.h"
#include "test_util.h"

#define STAGING ((size_t)64 << 10) /* the least: messages over 64 KiB stream */
#define RING 3u

/* open_simulator: the one OpenCL device, which must be Oclgrind's. */
static hb_opencl *open_simulator(hb_error_slot *err)
{
    hb_cl_device *devices = NULL;
    size_t count = 0;
    ck_assert_int_eq(hb_cl_enumerate(&devices, &count), HB_OK);
    ck_assert_msg(count == 1 && strstr(devices[0].info.name, "Oclgrind") != NULL,
                  "not under oclgrind: %zu devices, the first %s (run tests/check_oclgrind.sh)",
                  count, count ? devices[0].info.name : "none");
    ck_assert_int_eq(devices[0].info.type, HB_DEVICE_GPU);
    hb_opencl *cl = NULL;
    hb_status st = hb_opencl_open(&cl, &devices[0], STAGING, RING, err);
    ck_assert_msg(st == HB_OK, "hb_opencl_open = %s: %s", hb_status_name(st), hb_error_text(err));
    free(devices);
    return cl;
}

/* hash_on: m[0..n) through cl, checked against want; the launches made. */
static uint64_t hash_on(hb_opencl *cl, const hb_msg *m, size_t n, hb_digest *want,
                        const char *what)
{
    hb_error_slot err;
    hb_error_slot_init(&err);
    hb_digest *got = tu_digests(n);
    uint64_t launches = 0;
    hb_status st = hb_opencl_hash(cl, m, n, got, NULL, &launches, &err);
    ck_assert_msg(st == HB_OK, "%s: hb_opencl_hash = %s: %s", what, hb_status_name(st),
                  hb_error_text(&err));
    tu_assert_digests(m, n, want, got, what);
    printf("%s: %zu messages in %llu launches, right\n", what, n, (unsigned long long)launches);
    free(got);
    hb_error_slot_destroy(&err);
    return launches;
}

START_TEST(test_opens_in_gpu_shape)
{
    hb_error_slot err;
    hb_error_slot_init(&err);
    hb_opencl *cl = open_simulator(&err);
    const char *d = hb_opencl_describe(cl);
    printf("%s\n", d);
    ck_assert_msg(strstr(d, ", 1 lane per work-item") != NULL, "not one lane per item: %s", d);
    ck_assert_msg(strstr(d, "GPU shape (test switch)") == NULL, "the test switch is on: %s", d);
    ck_assert_int_eq(hb_opencl_copies_bytes(cl), 1);
    ck_assert_uint_eq(hb_opencl_uniform_lanes(cl), 0);
    static const uint8_t bytes[256];
    hb_msg m = {bytes, sizeof bytes};
    ck_assert_int_eq(hb_opencl_reads_in_place(cl, &m, 1), 0);
    hb_opencl_close(cl);
    hb_error_slot_destroy(&err);
}
END_TEST

START_TEST(test_nist_short_messages)
{
    static const char *const files[] = {"cavp/SHA1ShortMsg.rsp"};
    ck_assert(tu_require_testdata(files, 1));
    tu_rsp rsp;
    ck_assert_int_eq(tu_rsp_load(tu_testdata_path(files[0]), &rsp), 0);
    size_t n = rsp.nvectors;
    ck_assert_uint_gt(n, 60);
    hb_msg *m = calloc(n, sizeof *m);
    hb_digest *want = tu_digests(n);
    ck_assert(m != NULL);
    for (size_t i = 0; i < n; i++) {
        m[i] = (hb_msg){rsp.vectors[i].msg, rsp.vectors[i].len};
        memcpy(want[i], rsp.vectors[i].md, sizeof want[i]); /* NIST's answer */
    }
    hb_error_slot err;
    hb_error_slot_init(&err);
    hb_opencl *cl = open_simulator(&err);
    hash_on(cl, m, n, want, "NIST SHA1ShortMsg on the simulator");
    hb_digest *oracle = tu_oracle(m, n); /* and OpenSSL agrees with NIST */
    ck_assert_int_eq(memcmp(oracle, want, n * sizeof *want), 0);
    hb_opencl_close(cl);
    hb_error_slot_destroy(&err);
    free(oracle);
    free(want);
    free(m);
    tu_rsp_free(&rsp);
}
END_TEST

START_TEST(test_every_length_packed)
{
    size_t lens[301 + 11];
    size_t n = 0;
    for (size_t len = 0; len <= 300; len++)
        lens[n++] = len;
    for (size_t len = 4090; len <= 4100; len++)
        lens[n++] = len;
    tu_msgset s;
    tu_msgset_from_lengths(&s, lens, n, 0x0c19);
    hb_error_slot err;
    hb_error_slot_init(&err);
    hb_opencl *cl = open_simulator(&err);
    hash_on(cl, s.m, s.n, s.want, "lengths 0-300 and 4,090-4,100 packed");
    hb_opencl_close(cl);
    hb_error_slot_destroy(&err);
    tu_msgset_free(&s);
}
END_TEST

START_TEST(test_long_messages_stream)
{
    static const size_t lens[] = {65537, 131073, 70000, 100};
    size_t n = sizeof lens / sizeof lens[0];
    tu_msgset s;
    tu_msgset_from_lengths(&s, lens, n, 0x0c1a);
    hb_error_slot err;
    hb_error_slot_init(&err);
    hb_opencl *cl = open_simulator(&err);
    uint64_t launches = hash_on(cl, s.m, s.n, s.want, "long messages through 64 KiB launches");
    /* 260 KiB through 64 KiB of staging: the ring filled and states were
     * carried across launches */
    ck_assert_uint_gt(launches, RING);
    hb_opencl_close(cl);
    hb_error_slot_destroy(&err);
    tu_msgset_free(&s);
}
END_TEST

/* ---- the engine ------------------------------------------------------ */

static hb_engine *open_engine(hb_verify_mode verify, int fallback)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_OPENCL);
    cfg.verify = verify;
    cfg.cpu_fallback = fallback;
    cfg.staging_bytes = STAGING;
    hb_engine *e = tu_open_cfg(&cfg);
    const char *d = hb_engine_describe(e);
    printf("engine: %s\n", d);
    ck_assert_msg(strstr(d, "Oclgrind") != NULL, "the engine is not on the simulator: %s", d);
    return e;
}

START_TEST(test_engine_on_simulator)
{
    hb_engine *e = open_engine(HB_VERIFY_OFF, 0);
    tu_msgset s;
    tu_msgset_random(&s, 120, 5000, 0x0c1b);
    hb_digest *got = tu_digests(s.n);
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, "120 random messages on the simulator");
    tu_assert_clean(e);
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    uint64_t bytes = 0;
    for (size_t i = 0; i < s.n; i++)
        bytes += s.m[i].len;
    ck_assert_msg(st.device_bytes == bytes && st.cpu_bytes == 0,
                  "%llu of %llu bytes on the device, %llu on the pool",
                  (unsigned long long)st.device_bytes, (unsigned long long)bytes,
                  (unsigned long long)st.cpu_bytes);
    free(got);
    tu_msgset_free(&s);
    hb_engine_close(e);
}
END_TEST

START_TEST(test_corrupted_read_back_caught)
{
    hb_engine *e = open_engine(HB_VERIFY_SAMPLE, 1);
    tu_assert_corruption_caught(e, 60, 300, 0x0c1c, "corrupted read-backs, redone on the CPU");
    hb_engine_close(e);
}
END_TEST

static Suite *oclgrind_suite(void)
{
    Suite *s = suite_create("oclgrind");
    TCase *backend = tcase_create("backend");
    tcase_set_timeout(backend, 600);
    tcase_add_test(backend, test_opens_in_gpu_shape);
    tcase_add_test(backend, test_nist_short_messages);
    tcase_add_test(backend, test_every_length_packed);
    tcase_add_test(backend, test_long_messages_stream);
    suite_add_tcase(s, backend);
    TCase *engine = tcase_create("engine");
    tcase_set_timeout(engine, 600);
    tcase_add_test(engine, test_engine_on_simulator);
    tcase_add_test(engine, test_corrupted_read_back_caught);
    suite_add_tcase(s, engine);
    return s;
}

int main(void)
{
    return tu_run_suite(oclgrind_suite());
}
