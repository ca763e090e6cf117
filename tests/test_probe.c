/*
 * test_probe.c - verification by structure of device launches (probe.h,
 * worker_device.c) on a real OpenCL device: pocl's CPU device in its own
 * shape (16 lanes per work-item, in-place and uniform launches), and
 * again in the discrete-GPU shape (one lane per work-item, packed blocks
 * copied: the ctest rerun test_probe_gpu_shape).
 *
 * Covers: (a) with nothing broken, sampled verification's checks find no
 * mismatch, every digest is OpenSSL's, and what it reports is what the
 * rules of probe.h recompute, worked out here from the batch's shape
 * (16 messages of 200 bytes in one launch: every lane gets a run of two
 * blocks and its tail from the third, 32 checks and 16 x (128 + 8)
 * bytes); (b) each kind of fault, built into the kernels or the host's
 * packing on purpose (hb_testing_set_device_break, hb_testing.h) or
 * injected into a carried state (HB_FAULT_DEVICE_CARRY), is caught within
 * one launch under the default sampled verification: one lane position
 * (0, 7 and 15), each kernel entry (where the shape launches it; where it
 * does not, nothing is wrong and nothing is caught), each of the six tail
 * kinds, the uniform kernel's own padding block, and a state carried
 * between two launches of a streamed message. Caught means: a mismatch
 * counted, the device quarantined, and no wrong digest delivered (the CPU
 * recomputes the batch); a batch caught partway gets no more launches.
 * Must not: pass without a device: it fails, naming what is missing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_testing.h"
#include "test_util.h"

static int gpu_shape(const hb_engine *e)
{
    return strstr(hb_engine_describe(e), "1 lane per work-item") != NULL;
}

static hb_stats stats_of(const hb_engine *e)
{
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    return st;
}

/* The device's cost model, fixed: launches are sized by it (a uniform
 * launch must hold enough messages, by the model, to be chosen), and a
 * model learnt on a slow or loaded machine (a sanitizer build, a CPU
 * hog) would turn a same-length batch into planned launches: the uniform
 * kernel's faults would go untested. These terms (a launch's fixed cost
 * far above a message's) make every batch here one launch of its kind. */
static void fix_device_costs(hb_engine *e)
{
    hb_stats st = stats_of(e);
    hb_cost_terms t[HB_COST_CLASSES];
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        t[c] = (hb_cost_terms){1e6, 10, 0.1};
    for (unsigned k = 0; k < st.ndevices; k++)
        if (!st.device[k].is_cpu)
            ck_assert_int_eq(hb_testing_force_costs(e, k, t), HB_OK);
}

/* An engine on the OpenCL device alone, sampled verification with no
 * whole messages beyond the probes, the CPU (OpenSSL) taking over. */
static hb_engine *open_device(size_t staging_bytes)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_OPENCL);
    cfg.verify = HB_VERIFY_SAMPLE;
    cfg.sample_per_mille = 0;
    cfg.cpu_fallback = 1;
    cfg.cpu_impl = "sha-ni";
    cfg.staging_bytes = staging_bytes;
    hb_engine *e = tu_open_cfg(&cfg);
    fix_device_costs(e);
    return e;
}

/* Hashes s once on e; returns the digests that differ from OpenSSL's. */
static size_t wrong_digests(hb_engine *e, const tu_msgset *s)
{
    hb_digest *got = tu_digests(s->n);
    tu_batch(e, s->m, s->n, got);
    size_t wrong = 0;
    for (size_t i = 0; i < s->n; i++)
        wrong += memcmp(got[i], s->want[i], sizeof got[i]) != 0;
    free(got);
    return wrong;
}

/* Every tail kind, several times, with and without whole blocks. */
static void every_kind_set(tu_msgset *s, uint64_t seed)
{
    static const size_t kinds[] = {0, 1, 30, 55, 56, 63, 64, 65, 119, 120, 127, 128, 200, 640};
    enum { N = 4 * sizeof kinds / sizeof kinds[0] };
    size_t lens[N];
    for (size_t i = 0; i < N; i++)
        lens[i] = kinds[i % (sizeof kinds / sizeof kinds[0])];
    tu_msgset_from_lengths(s, lens, N, seed);
}

/* Runs s on a fresh engine (opened after any break was set) and asserts
 * what a fault that strikes (expect_caught) or that the shape never runs
 * must give; returns the engine's stats. */
static hb_stats run_and_judge(const tu_msgset *s, size_t staging, int expect_caught,
                              const hb_fault_plan *plan, const char *what)
{
    hb_engine *e = open_device(staging);
    if (plan != NULL)
        ck_assert_int_eq(hb_testing_set_fault(e, plan), HB_OK);
    size_t wrong = wrong_digests(e, s);
    hb_stats st = stats_of(e);
    tu_print_stats(what, &st);
    ck_assert_msg(st.device_launches >= 1, "%s: no launch: %s", what, hb_engine_describe(e));
    ck_assert_msg(wrong == 0, "%s: %zu wrong digests delivered", what, wrong);
    if (expect_caught) {
        ck_assert_msg(st.verify_mismatches >= 1, "%s: not caught in %llu launches", what,
                      (unsigned long long)st.device_launches);
        ck_assert_int_eq(st.quarantined, 1);
    } else {
        ck_assert_msg(st.verify_mismatches == 0, "%s: a mismatch where nothing was broken", what);
        ck_assert_int_eq(st.quarantined, 0);
    }
    hb_engine_close(e);
    return st;
}

/* ---- (a) nothing broken --------------------------------------------------- */

START_TEST(test_clean_counts)
{
    tu_msgset s;
    tu_msgset_same_length(&s, 16, 200, 0x9e01); /* 3 whole blocks and 8 bytes each */
    hb_engine *e = open_device(0);
    hb_stats before = stats_of(e);
    ck_assert_uint_eq(wrong_digests(e, &s), 0);
    hb_stats st = stats_of(e);
    tu_print_stats("clean, 16 x 200 bytes", &st);
    ck_assert_uint_eq(st.device_launches - before.device_launches, 1);
    ck_assert_uint_eq(st.verify_mismatches, 0);
    ck_assert_uint_eq(st.verified - before.verified, 32);
    ck_assert_uint_eq(st.verified_bytes - before.verified_bytes, 16 * (128 + 8));
    hb_engine_close(e);
    tu_msgset_free(&s);
}
END_TEST

/* A bound on what the probes recompute per launch: 32 lanes, each a run
 * of 2 blocks and an end of at most 2 blocks or a tail under 64 bytes. */
#define PROBE_BYTES_MAX (32u * 4u * 64u)

START_TEST(test_clean_mixed)
{
    tu_msgset s;
    tu_msgset_random(&s, 3000, 5000, 0x9e02);
    hb_engine *e = open_device((size_t)64 << 10); /* many launches, some streamed */
    for (int round = 0; round < 3; round++)
        ck_assert_uint_eq(wrong_digests(e, &s), 0);
    hb_stats st = stats_of(e);
    tu_print_stats("clean, mixed", &st);
    ck_assert_uint_eq(st.verify_mismatches, 0);
    ck_assert_uint_ge(st.verified, st.device_launches);
    ck_assert_uint_le(st.verified_bytes, st.device_launches * PROBE_BYTES_MAX);
    hb_engine_close(e);
    tu_msgset_free(&s);
}
END_TEST

/* ---- (b) each kind of fault ---------------------------------------------- */

static void set_break(hb_device_break kind, unsigned which)
{
    ck_assert_int_eq(hb_testing_set_device_break(kind, which), HB_OK);
}

static const unsigned broken_lanes[] = {0, 7, 15};

/* 64 messages of 600-700 bytes: lengths close enough that every launch
 * fills its groups' 16 lanes, in either shape. */
static void close_lengths_set(tu_msgset *s, uint64_t seed)
{
    size_t lens[64];
    for (size_t i = 0; i < 64; i++)
        lens[i] = 600 + (i * 37) % 101;
    tu_msgset_from_lengths(s, lens, 64, seed);
}

START_TEST(test_broken_lane)
{
    unsigned lane = broken_lanes[_i];
    char what[64];
    tu_msgset mixed, same;
    close_lengths_set(&mixed, 0x9e10 + lane);               /* planned launches */
    tu_msgset_same_length(&same, 1024, 100, 0x9e20 + lane); /* uniform where the shape has it */
    set_break(HB_DEVICE_BREAK_LANE, lane);
    snprintf(what, sizeof what, "lane %u broken, mixed", lane);
    run_and_judge(&mixed, 0, 1, NULL, what);
    snprintf(what, sizeof what, "lane %u broken, one length", lane);
    run_and_judge(&same, 0, 1, NULL, what);
    set_break(HB_DEVICE_BREAK_NONE, 0);
    tu_msgset_free(&mixed);
    tu_msgset_free(&same);
}
END_TEST

/* Kernel entries: 0 hb_sha1_blocks (the GPU shape's, and pocl's with
 * HASHBATCH_LAYOUT=packed), 1 hb_sha1_in_place and 2 hb_sha1_uniform
 * (pocl's own shape only). */
START_TEST(test_broken_kernel)
{
    unsigned entry = (unsigned)_i;
    char what[64];
    tu_msgset mixed, same;
    close_lengths_set(&mixed, 0x9e30 + entry);
    tu_msgset_same_length(&same, 1024, 100, 0x9e40 + entry);
    hb_engine *probe_shape = open_device(0);
    int gpu = gpu_shape(probe_shape);
    hb_engine_close(probe_shape);
    set_break(HB_DEVICE_BREAK_KERNEL, entry);
    if (entry == 0 && !gpu)
        setenv("HASHBATCH_LAYOUT", "packed", 1);
    int runs = gpu ? entry == 0 : 1;
    snprintf(what, sizeof what, "kernel %u broken, %s shape", entry, gpu ? "GPU" : "CPU");
    run_and_judge(entry == 2 ? &same : &mixed, 0, runs, NULL, what);
    unsetenv("HASHBATCH_LAYOUT");
    set_break(HB_DEVICE_BREAK_NONE, 0);
    tu_msgset_free(&mixed);
    tu_msgset_free(&same);
}
END_TEST

START_TEST(test_broken_tail)
{
    unsigned kind = (unsigned)_i;
    char what[64];
    tu_msgset s;
    every_kind_set(&s, 0x9e50 + kind);
    set_break(HB_DEVICE_BREAK_TAIL, kind);
    snprintf(what, sizeof what, "tail kind %u broken", kind);
    run_and_judge(&s, 0, 1, NULL, what);
    set_break(HB_DEVICE_BREAK_NONE, 0);
    tu_msgset_free(&s);
}
END_TEST

/* Kind 0 in a uniform launch: the kernel builds that padding block itself
 * (the GPU shape has no uniform kernel: the host's packing is broken too,
 * and caught there). */
START_TEST(test_broken_uniform_padding)
{
    tu_msgset s;
    tu_msgset_same_length(&s, 1024, 128, 0x9e60);
    set_break(HB_DEVICE_BREAK_TAIL, 0);
    run_and_judge(&s, 0, 1, NULL, "padding block of 128 bytes broken");
    set_break(HB_DEVICE_BREAK_NONE, 0);
    tu_msgset_free(&s);
}
END_TEST

/* A message streamed through 64 KiB launches: the second launch starts
 * from a wrong carried state, and is caught there. */
START_TEST(test_broken_carry)
{
    tu_msgset s;
    size_t lens[3] = {(size_t)3 << 20, 1000, 70000};
    tu_msgset_from_lengths(&s, lens, 3, 0x9e70);
    hb_fault_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.kind = HB_FAULT_DEVICE_CARRY;
    hb_stats st = run_and_judge(&s, (size_t)64 << 10, 1, &plan, "carried state broken");
    /* the big message needs hundreds of launches; once a probe caught it,
     * its batch gets no more (the CPU hashes it) */
    ck_assert_uint_ge(st.device_launches, 2);
    ck_assert_uint_le(st.device_launches, 8);
    tu_msgset_free(&s);
}
END_TEST

static Suite *probe_suite(void)
{
    Suite *s = suite_create("probe");
    TCase *clean = tcase_create("clean");
    tcase_set_timeout(clean, 300);
    tcase_add_test(clean, test_clean_counts);
    tcase_add_test(clean, test_clean_mixed);
    suite_add_tcase(s, clean);
    TCase *broken = tcase_create("broken");
    tcase_set_timeout(broken, 600);
    tcase_add_loop_test(broken, test_broken_lane, 0, 3);
    tcase_add_loop_test(broken, test_broken_kernel, 0, 3);
    tcase_add_loop_test(broken, test_broken_tail, 0, 6);
    tcase_add_test(broken, test_broken_uniform_padding);
    tcase_add_test(broken, test_broken_carry);
    suite_add_tcase(s, broken);
    return s;
}

int main(void)
{
    return tu_run_suite(probe_suite());
}
