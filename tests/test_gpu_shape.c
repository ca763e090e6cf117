/*
 * test_gpu_shape.c - the test switch HASHBATCH_TEST_GPU_SHAPE=1, which runs
 * any OpenCL device (here: pocl's CPU device) exactly as a discrete GPU.
 *
 * Covers: with the switch, every device opens in the GPU shape (one lane
 * per work-item, blocks packed into pinned staging and copied to the
 * device, no in-place reads, no uniform kernel) and says so; it hashes
 * short and streamed messages right through a ring of launches in flight
 * (state carried between launches through the copies); an engine opened
 * with the switch describes the GPU shape and hashes every byte on the
 * device; a corrupted read-back is caught by verification. Without the
 * switch a CPU device keeps its own shape (zero copy). The *_gpu_shape
 * reruns (gpu_shape_tests.cmake) rely on this suite's first case: it shows
 * that the variable they set reaches the backend.
 * Must not: assert timings. OpenSSL is the oracle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_opencl.h"
#include "devices.h"
#include "error.h"
#include "hb_testing.h"
#include "test_util.h"

#define SWITCH "HASHBATCH_TEST_GPU_SHAPE"
#define SMALL_STAGING ((size_t)64 << 10) /* long messages stream across launches */
#define RING 3u

static void set_switch(int on)
{
    if (on)
        ck_assert_int_eq(setenv(SWITCH, "1", 1), 0);
    else
        ck_assert_int_eq(unsetenv(SWITCH), 0);
}

/* Short messages of every length class, and some long enough to stream
 * through several 64 KiB launches. */
static void mixed_set(tu_msgset *s, uint64_t seed)
{
    size_t lens[300];
    size_t n = 0;
    for (size_t len = 0; len < 260; len++)
        lens[n++] = len;
    static const size_t longer[] = {1000,       4096,       65535,      65536, 65537,
                                    100 * 1024, 200 * 1024, 300 * 1024, 333333};
    for (size_t i = 0; i < sizeof longer / sizeof longer[0]; i++)
        lens[n++] = longer[i];
    tu_msgset_from_lengths(s, lens, n, seed);
}

/* Opens every OpenCL device with the switch as asked, checks each one's
 * shape with check(), and hashes a mixed set through it. */
static void each_device(int on, void (*check)(hb_opencl *cl))
{
    set_switch(on);
    hb_cl_device *devices = NULL;
    size_t count = 0;
    ck_assert_int_eq(hb_cl_enumerate(&devices, &count), HB_OK);
    ck_assert_msg(count > 0, "no OpenCL device: the GPU shape needs one to run on");
    tu_msgset s;
    mixed_set(&s, 9100 + (uint64_t)on);
    for (size_t d = 0; d < count; d++) {
        hb_error_slot err;
        hb_error_slot_init(&err);
        hb_opencl *cl = NULL;
        hb_status st = hb_opencl_open(&cl, &devices[d], SMALL_STAGING, RING, &err);
        ck_assert_msg(st == HB_OK, "hb_opencl_open(%s) = %s: %s", devices[d].info.name,
                      hb_status_name(st), hb_error_text(&err));
        check(cl);
        hb_digest *got = tu_digests(s.n);
        uint64_t launches = 0;
        st = hb_opencl_hash(cl, s.m, s.n, got, NULL, &launches, &err);
        ck_assert_msg(st == HB_OK, "hb_opencl_hash on %s = %s: %s", hb_opencl_describe(cl),
                      hb_status_name(st), hb_error_text(&err));
        ck_assert_uint_gt(launches, RING); /* the ring filled and was collected */
        tu_assert_digests(s.m, s.n, s.want, got, hb_opencl_describe(cl));
        free(got);
        hb_opencl_close(cl);
        hb_error_slot_destroy(&err);
    }
    tu_msgset_free(&s);
    free(devices);
}

static void check_gpu_shape(hb_opencl *cl)
{
    const char *d = hb_opencl_describe(cl);
    ck_assert_msg(strstr(d, "GPU shape (test switch)") != NULL, "not in the GPU shape: %s", d);
    ck_assert_msg(strstr(d, ", 1 lane per work-item") != NULL, "not one lane per item: %s", d);
    ck_assert_int_eq(hb_opencl_copies_bytes(cl), 1);
    ck_assert_uint_eq(hb_opencl_uniform_lanes(cl), 0);
    static const uint8_t bytes[256];
    hb_msg m = {bytes, sizeof bytes};
    ck_assert_int_eq(hb_opencl_reads_in_place(cl, &m, 1), 0);
}

static void check_own_shape(hb_opencl *cl)
{
    const char *d = hb_opencl_describe(cl);
    ck_assert_msg(strstr(d, "GPU shape") == NULL, "GPU shape without the switch: %s", d);
    if (hb_opencl_info(cl)->type == HB_DEVICE_CPU) {
        ck_assert_int_eq(hb_opencl_copies_bytes(cl), 0);
        ck_assert_msg(strstr(d, ", 16 lanes per work-item") != NULL, "a CPU device: %s", d);
    }
}

START_TEST(test_switch_gives_gpu_shape)
{
    each_device(1, check_gpu_shape);
}
END_TEST

START_TEST(test_no_switch_keeps_own_shape)
{
    each_device(0, check_own_shape);
}
END_TEST

START_TEST(test_engine_in_gpu_shape)
{
    set_switch(1);
    hb_engine *e = tu_open(HB_BACKEND_OPENCL);
    const char *d = hb_engine_describe(e);
    ck_assert_msg(strstr(d, "GPU shape (test switch)") != NULL, "engine: %s", d);
    tu_msgset s;
    tu_msgset_random(&s, 20000, 3000, 9200);
    hb_digest *got = tu_digests(s.n);
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, "20,000 random messages in the GPU shape");
    tu_assert_clean(e); /* every byte hashed on the device */
    free(got);
    tu_msgset_free(&s);
    hb_engine_close(e);
}
END_TEST

START_TEST(test_corrupted_read_back_caught)
{
    set_switch(1);
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_OPENCL);
    cfg.verify = HB_VERIFY_SAMPLE;
    cfg.cpu_fallback = 1;
    hb_engine *e = tu_open_cfg(&cfg);
    /* every lane of every launch wrong, in the states copied back */
    tu_assert_corruption_caught(e, 3000, 500, 9300,
                                "corrupted GPU-shape launches, redone on the CPU");
    hb_engine_close(e);
}
END_TEST

static Suite *gpu_shape_suite(void)
{
    Suite *s = suite_create("gpu_shape");
    TCase *tc = tcase_create("gpu_shape");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_switch_gives_gpu_shape);
    tcase_add_test(tc, test_no_switch_keeps_own_shape);
    tcase_add_test(tc, test_engine_in_gpu_shape);
    tcase_add_test(tc, test_corrupted_read_back_caught);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(gpu_shape_suite());
}
