/*
 * test_uniform.c - batches of one length on an OpenCL CPU device, where
 * whole blocks are read in place and same-length batches run as uniform
 * launches (the kernel writes the digests itself).
 *
 * Covers: every length class around the block and padding boundaries,
 * long messages (KiB to MiB: uniform launches where a launch holds enough
 * of them to give every compute unit work, the planned path where not),
 * counts that leave the last group of 16 lanes part-empty, several
 * launches per batch, messages scattered over separate allocations,
 * messages too far apart for one buffer (the packed path takes over), an
 * output array at an odd address, and a corrupted uniform launch caught by
 * sampled verification. OpenSSL is the oracle; each case also runs with
 * the packed layout forced (HASHBATCH_LAYOUT=packed) by a second ctest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hb_testing.h"
#include "test_util.h"

static const size_t uniform_lengths[] = {0,   1,   55,  56,  63,   64,   65,   119,
                                         120, 127, 128, 129, 1000, 1023, 1024, 1025};
#define NLENGTHS (sizeof uniform_lengths / sizeof uniform_lengths[0])

static void check_batch(hb_engine *e, const hb_msg *m, size_t n, hb_digest *want, hb_digest *got,
                        const char *what)
{
    tu_batch(e, m, n, got);
    tu_assert_digests(m, n, want, got, what);
    tu_assert_clean(e);
}

/* Batches of len-byte messages, one per count, through engine e. */
static void check_counts(hb_engine *e, size_t len, const size_t *counts, size_t ncounts,
                         uint64_t seed)
{
    for (size_t c = 0; c < ncounts; c++) {
        tu_msgset s;
        char what[96];
        tu_msgset_same_length(&s, counts[c], len, seed + len * 10 + c);
        hb_digest *got = tu_digests(s.n);
        snprintf(what, sizeof what, "%zu messages of %zu bytes", s.n, len);
        check_batch(e, s.m, s.n, s.want, got, what);
        free(got);
        tu_msgset_free(&s);
    }
}

START_TEST(test_each_length_class)
{
    size_t len = uniform_lengths[_i];
    static const size_t counts[] = {64, 65, 1000, 4099};
    hb_engine *e = tu_open(HB_BACKEND_OPENCL);
    check_counts(e, len, counts, sizeof counts / sizeof counts[0], 7000);
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    ck_assert_uint_gt(st.device_launches, 0);
    ck_assert_uint_eq(st.fallbacks, 0);
    hb_engine_close(e);
}
END_TEST

static const size_t long_lengths[] = {4095, 4096, 4097, 16385, 65536, 65537};
#define NLONG (sizeof long_lengths / sizeof long_lengths[0])

START_TEST(test_long_lengths)
{
    size_t len = long_lengths[_i];
    static const size_t counts[] = {64, 257, 1000};
    hb_engine *e = tu_open(HB_BACKEND_OPENCL);
    check_counts(e, len, counts, sizeof counts / sizeof counts[0], 7700);
    hb_engine_close(e);
}
END_TEST

/* Too few messages per launch to fill the device: planned launches. */
START_TEST(test_few_long_messages)
{
    tu_msgset s;
    tu_msgset_same_length(&s, 70, (1u << 20) + 3, 7800);
    hb_digest *got = tu_digests(s.n);
    hb_engine *e = tu_open(HB_BACKEND_OPENCL);
    check_batch(e, s.m, s.n, s.want, got, "70 messages of 1 MiB + 3 bytes");
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

START_TEST(test_many_launches)
{
    tu_msgset s;
    tu_msgset_same_length(&s, 300001, 64, 7100); /* several launches, a part-empty last group */
    hb_digest *got = tu_digests(s.n);
    hb_engine *e = tu_open(HB_BACKEND_OPENCL);
    check_batch(e, s.m, s.n, s.want, got, "300,001 messages of 64 bytes");
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

START_TEST(test_scattered_allocations)
{
    enum { N = 5000, LEN = 200 };
    hb_msg *m = malloc(N * sizeof *m);
    hb_digest *want = tu_digests(N), *got = tu_digests(N);
    tu_rng rng;
    tu_rng_seed(&rng, 7200);
    for (size_t i = 0; i < N; i++) {
        uint8_t *bytes = malloc(LEN);
        ck_assert_ptr_nonnull(bytes);
        tu_rng_fill(&rng, bytes, LEN);
        m[i] = (hb_msg){bytes, LEN};
        tu_sha1(bytes, LEN, want[i]);
    }
    hb_engine *e = tu_open(HB_BACKEND_OPENCL);
    check_batch(e, m, N, want, got, "5,000 separately allocated messages");
    hb_engine_close(e);
    for (size_t i = 0; i < N; i++)
        free((void *)m[i].data);
    free(m);
    free(want);
    free(got);
}
END_TEST

/* Two regions more than 4 GiB apart: no one buffer reaches both. */
START_TEST(test_too_far_apart)
{
    const size_t region = 1u << 20, apart = (size_t)8 << 30;
    uint8_t *a = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(a, MAP_FAILED);
    uint8_t *b = mmap(a + apart, region, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (b == MAP_FAILED) {
        munmap(a, region);
        return; /* the address space is taken there: nothing to test */
    }
    enum { N = 2048, LEN = 256 };
    hb_msg m[N];
    hb_digest *want = tu_digests(N), *got = tu_digests(N);
    tu_rng rng;
    tu_rng_seed(&rng, 7300);
    tu_rng_fill(&rng, a, region);
    tu_rng_fill(&rng, b, region);
    for (size_t i = 0; i < N; i++) {
        const uint8_t *base = (i % 2 ? b : a) + (i / 2) * LEN;
        m[i] = (hb_msg){base, LEN};
        tu_sha1(base, LEN, want[i]);
    }
    hb_engine *e = tu_open(HB_BACKEND_OPENCL);
    check_batch(e, m, N, want, got, "messages 8 GiB apart");
    hb_engine_close(e);
    munmap(a, region);
    munmap(b, region);
    free(want);
    free(got);
}
END_TEST

START_TEST(test_odd_output_address)
{
    tu_msgset s;
    tu_msgset_same_length(&s, 777, 64, 7400);
    uint8_t *raw = calloc(1, s.n * sizeof(hb_digest) + 1);
    ck_assert_ptr_nonnull(raw);
    hb_digest *got = (hb_digest *)(raw + 1);
    hb_engine *e = tu_open(HB_BACKEND_OPENCL);
    check_batch(e, s.m, s.n, s.want, got, "digests written at an odd address");
    hb_engine_close(e);
    free(raw);
    tu_msgset_free(&s);
}
END_TEST

START_TEST(test_corrupted_uniform_launch)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_OPENCL);
    cfg.verify = HB_VERIFY_SAMPLE;
    cfg.cpu_fallback = 1;
    hb_engine *e = tu_open_cfg(&cfg);
    /* every lane wrong: sampling checks one message of each launch */
    hb_fault_plan plan = {.kind = HB_FAULT_CORRUPT_ALL, .every_nth_launch = 1};
    ck_assert_int_eq(hb_testing_set_fault(e, &plan), HB_OK);
    tu_msgset s;
    tu_msgset_same_length(&s, 5000, (size_t)_i == 0 ? 64 : 4096, 7500);
    hb_digest *got = tu_digests(s.n);
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, "a corrupted uniform launch, redone on the CPU");
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    ck_assert_uint_gt(st.verify_mismatches, 0);
    ck_assert_uint_gt(st.fallbacks, 0);
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

static Suite *uniform_suite(void)
{
    Suite *s = suite_create("uniform");
    TCase *tc = tcase_create("uniform");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_each_length_class, 0, NLENGTHS);
    tcase_add_loop_test(tc, test_long_lengths, 0, NLONG);
    tcase_add_test(tc, test_few_long_messages);
    tcase_add_test(tc, test_many_launches);
    tcase_add_test(tc, test_scattered_allocations);
    tcase_add_test(tc, test_too_far_apart);
    tcase_add_test(tc, test_odd_output_address);
    tcase_add_loop_test(tc, test_corrupted_uniform_launch, 0, 2); /* 64 B and 4 KiB */
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(uniform_suite());
}
