/*
 * test_sampler.c - sampled verification against one wrong digest, with
 * the exact counts the sampler promises (host/src/verify.c, through its
 * internal header verify.h, and the engine's stats).
 *
 * The rule under test (verify.h, verify.c, hashbatch.h): with
 * HB_VERIFY_SAMPLE a batch of n messages checks a sample of
 * n * per_mille / 1000 (rounded down) messages drawn at random, never an
 * empty one; each message is checked at most once. The sample is drawn
 * afresh for each batch, so that no position escapes checking for long.
 *
 * Covers: (a) exact counts: `checked` is max(1, n * per_mille / 1000),
 * n under HB_VERIFY_FULL, 0 under HB_VERIFY_OFF; (b) one wrong digest at
 * one position p:
 * each batch checks exactly the promised count and reports 0 or 1
 * mismatch (never 2: p is not checked twice), and every position tried
 * (slice starts, slice ends, the middles, a stride over the whole batch)
 * is caught within a bound of batches that misses it with probability
 * under 1e-12; (c) the engine: one OpenCL lane corrupted per launch
 * (HB_FAULT_CORRUPT_ONE) under sampled verification with a sample of
 * whole messages (sample_per_mille) beside the probes of every launch
 * (probe.h; tests/test_probe.c covers them): the counts are the sample's
 * plus the probes', and the wrong lane never reaches the caller.
 * Must not: assert on time; (c) needs an OpenCL device (pocl's CPU device
 * will do) and fails, saying so, where there is none.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_testing.h"
#include "test_util.h"
#include "verify.h"

/* ---- helpers ---------------------------------------------------------- */

/* What the rule says a sample of n at per_mille holds. */
static size_t promised(size_t n, unsigned per_mille)
{
    size_t k = (size_t)((uint64_t)n * per_mille / 1000u);
    return k == 0 ? 1 : k;
}

/* n messages of 1 to maxlen bytes and their OpenSSL digests. */
typedef struct {
    tu_msgset set;
    hb_digest *got; /* what the "device" returned: want, but for the faults */
} sample_case;

static void case_make(sample_case *c, size_t n, size_t maxlen, uint64_t seed)
{
    size_t *lens = malloc(n * sizeof *lens);
    ck_assert_ptr_nonnull(lens);
    tu_rng r;
    tu_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        lens[i] = 1 + tu_rng_below(&r, maxlen);
    tu_msgset_from_lengths(&c->set, lens, n, seed);
    free(lens);
    c->got = tu_digests(n);
    memcpy(c->got, c->set.want, n * sizeof *c->got);
}

static void case_free(sample_case *c)
{
    free(c->got);
    tu_msgset_free(&c->set);
}

static void flip(sample_case *c, size_t p)
{
    c->got[p][7] ^= 0x10u;
}

static hb_verify_result verify(const sample_case *c, hb_verify_mode mode, unsigned per_mille,
                               uint64_t seed)
{
    hb_verify_result r = {99, 99, 99};
    uint64_t rng = seed;
    ck_assert_int_eq(hb_verify_batch(c->set.m, c->set.n, (const hb_digest *)c->got, mode, per_mille,
                                     &rng, NULL, &r),
                     HB_OK);
    return r;
}

/* ---- (a) exact counts -------------------------------------------------- */

static const struct {
    size_t n;
    unsigned per_mille;
} sizes[] = {
    {1, 16},     /* rounds to 0: never empty, 1 */
    {10, 16},    /* rounds to 0: 1 */
    {62, 16},    /* 0.992: 1 */
    {63, 16},    /* 1 exactly */
    {1000, 16},  /* one run of 16 */
    {1000, 17},  /* a run and one more */
    {1000, 50},  /* 4 runs, the last of 2 */
    {4096, 16},  /* 65: 5 runs of ~819 */
    {100, 1000}, /* all of it */
    {17, 999},   /* 16 of 17 */
    {33, 500},   /* runs longer than half a slice */
};
#define NSIZES (sizeof sizes / sizeof sizes[0])

START_TEST(test_exact_counts)
{
    size_t n = sizes[_i].n;
    unsigned pm = sizes[_i].per_mille;
    sample_case c;
    case_make(&c, n, 120, 0x5a01 + _i);
    for (uint64_t seed = 0; seed < 200; seed++) {
        hb_verify_result r = verify(&c, HB_VERIFY_SAMPLE, pm, seed * 0x9e3779b97f4a7c15u);
        ck_assert_msg(r.checked == promised(n, pm) && r.mismatches == 0,
                      "n %zu, per mille %u, seed %llu: checked %zu (promised %zu), mismatches %zu",
                      n, pm, (unsigned long long)seed, r.checked, promised(n, pm), r.mismatches);
    }
    /* every digest wrong: each message checked is one mismatch */
    for (size_t i = 0; i < n; i++)
        flip(&c, i);
    for (uint64_t seed = 0; seed < 50; seed++) {
        hb_verify_result r = verify(&c, HB_VERIFY_SAMPLE, pm, seed + 1);
        ck_assert_uint_eq(r.checked, promised(n, pm));
        ck_assert_uint_eq(r.mismatches, promised(n, pm));
    }
    hb_verify_result full = verify(&c, HB_VERIFY_FULL, pm, 1);
    ck_assert_uint_eq(full.checked, n);
    ck_assert_uint_eq(full.mismatches, n);
    hb_verify_result off = verify(&c, HB_VERIFY_OFF, pm, 1);
    ck_assert_uint_eq(off.checked, 0);
    ck_assert_uint_eq(off.mismatches, 0);
    case_free(&c);
}
END_TEST

/* ---- (b) one wrong digest, caught wherever it is ------------------------- */

/* The bound. The sample is drawn as runs of up to 16 messages, one run at
 * a random place in each of runs = ceil(count / 16) equal slices of the
 * batch (verify.c), so a slice is at most ceil(n / runs) long and every
 * position of it lies in the run with probability at least 1 / ceil(n /
 * runs) per batch (the run's start is uniform over the places that keep
 * it inside the slice, and at least one of them covers the position).
 * Missed by B fresh batches: at most (1 - 1/L)^B for L = ceil(n / runs);
 * B = ceil(ln(1e-12) / ln(1 - 1/L)) makes that under 1e-12. For the
 * cases below: n 1000 at 50 per mille: 4 runs, L 250, B 6,894; n 4096 at
 * 16: 5 runs, L 820, B 22,644; n 300 at 16 (a sample of 4, one run): L
 * 300, B 8,276. Expected batches per position are far fewer (~L/16 for a
 * position a 16-run can cover from 16 places). */
static uint64_t batches_bound(size_t n, unsigned per_mille)
{
    size_t count = promised(n, per_mille);
    size_t runs = (count + 15) / 16;
    double longest = ceil((double)n / (double)runs);
    return (uint64_t)ceil(log(1e-12) / log1p(-1.0 / longest));
}

/* Positions to try: the slice starts and ends (the places a sampler that
 * always starts its run at the slice start, or never reaches the end,
 * would show), their neighbours, and a stride over the whole batch. */
static size_t positions(size_t n, unsigned per_mille, size_t *out, size_t max)
{
    size_t count = promised(n, per_mille), runs = (count + 15) / 16, k = 0;
    for (size_t r = 0; r < runs && k + 6 <= max; r++) {
        size_t start = r * n / runs, end = (r + 1) * n / runs;
        out[k++] = start;
        out[k++] = start + 1;
        out[k++] = start + 16 < end ? start + 16 : end - 1; /* past a run from the start */
        out[k++] = (start + end) / 2;
        out[k++] = end - 2;
        out[k++] = end - 1;
    }
    for (size_t p = 37; p < n && k < max; p += n / 7 + 1)
        out[k++] = p;
    return k;
}

START_TEST(test_one_position_caught)
{
    static const struct {
        size_t n;
        unsigned per_mille;
    } cases[] = {{1000, 50}, {4096, 16}, {300, 16}};
    size_t n = cases[_i].n;
    unsigned pm = cases[_i].per_mille;
    uint64_t bound = batches_bound(n, pm);
    sample_case c;
    case_make(&c, n, 120, 0x5a30 + _i);
    size_t where[64];
    size_t npos = positions(n, pm, where, 64);
    tu_rng seeds;
    tu_rng_seed(&seeds, 0x5a31 + _i);
    for (size_t k = 0; k < npos; k++) {
        size_t p = where[k];
        ck_assert_uint_lt(p, n);
        flip(&c, p);
        uint64_t b = 0, caught = 0;
        for (; b < bound && !caught; b++) {
            hb_verify_result r = verify(&c, HB_VERIFY_SAMPLE, pm, tu_rng_next(&seeds)); /* fresh */
            ck_assert_msg(r.checked == promised(n, pm),
                          "n %zu, per mille %u, wrong at %zu, batch %llu: checked %zu, not %zu", n,
                          pm, p, (unsigned long long)b, r.checked, promised(n, pm));
            ck_assert_msg(r.mismatches <= 1, "position %zu counted %zu times", p, r.mismatches);
            caught = r.mismatches;
        }
        ck_assert_msg(caught,
                      "n %zu, per mille %u: the wrong digest at position %zu was missed by %llu "
                      "fresh samples (chance of that under a uniform draw: < 1e-12)",
                      n, pm, p, (unsigned long long)bound);
        fprintf(stderr, "n %zu per mille %u: position %zu caught in batch %llu (bound %llu)\n", n,
                pm, p, (unsigned long long)b, (unsigned long long)bound);
        flip(&c, p);
    }
    case_free(&c);
}
END_TEST

/* ---- (c) the engine, one lane wrong per launch --------------------------- */

/* One-block messages: each lies in one lane of one launch. */
#define ENGINE_LEN 55u

static hb_engine *open_corrupt_one(unsigned per_mille)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_OPENCL);
    cfg.verify = HB_VERIFY_SAMPLE;
    cfg.sample_per_mille = per_mille;
    cfg.cpu_fallback = 1;
    /* the fallback hashes with OpenSSL: none of it is verified again, so
     * verified counts what the device's batches checked */
    cfg.cpu_impl = "sha-ni";
    hb_engine *e = tu_open_cfg(&cfg);
    hb_fault_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.kind = HB_FAULT_CORRUPT_ONE; /* one lane of every launch */
    plan.every_nth_launch = 1;
    ck_assert_int_eq(hb_testing_set_fault(e, &plan), HB_OK);
    return e;
}

static hb_stats stats_of(const hb_engine *e)
{
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    return st;
}

/* Hashes c on e; returns how many digests the caller got wrong. */
static size_t engine_batch(hb_engine *e, const sample_case *c)
{
    hb_digest *got = tu_digests(c->set.n);
    tu_batch(e, c->set.m, c->set.n, got);
    size_t wrong = 0;
    for (size_t i = 0; i < c->set.n; i++)
        wrong += memcmp(got[i], c->set.want[i], sizeof(hb_digest)) != 0;
    free(got);
    return wrong;
}

/* Batches of 16 one-block messages at 16 per mille: every launch is
 * probed (probe.h), which for one group of 16 messages with no whole
 * block is one check of each lane's tail from SHA-1's initial state, so
 * the wrong lane (lane 0 of group 0, HB_FAULT_CORRUPT_ONE) is caught in
 * the first batch: counted, the batch recomputed (no wrong digest
 * delivered), the device quarantined; verified grows by exactly 16 per
 * launch (the sample of whole messages, one here, is not drawn for a
 * batch the probes already condemned). */
#define SMALL_N 16u

START_TEST(test_engine_small_sample)
{
    sample_case c;
    case_make(&c, SMALL_N, ENGINE_LEN, 0x5a40);
    hb_engine *e = open_corrupt_one(16);
    hb_stats before = stats_of(e);
    size_t wrong = engine_batch(e, &c);
    hb_stats st = stats_of(e);
    tu_print_stats("corrupt one, small sample", &st);
    uint64_t launches = st.device_launches - before.device_launches;
    ck_assert_msg(launches >= 1, "no device launch: %s", hb_engine_describe(e));
    ck_assert_uint_eq(st.verified - before.verified, launches * SMALL_N);
    ck_assert_uint_ge(st.verify_mismatches - before.verify_mismatches, launches);
    ck_assert_uint_eq(wrong, 0);
    ck_assert_int_eq(st.quarantined, 1);
    hb_engine_close(e);
    case_free(&c);
}
END_TEST

/* Per mille 1000: the sample is the whole batch, each message once, and
 * the probes check up to 16 more lanes per launch (a random group; the
 * last may hold fewer): every launch's wrong lane is a mismatch at least
 * once; the batch is recomputed and no wrong digest reaches the caller. */
#define WHOLE_N 999u

START_TEST(test_engine_whole_sample)
{
    sample_case c;
    case_make(&c, WHOLE_N, ENGINE_LEN, 0x5a50);
    hb_engine *e = open_corrupt_one(1000);
    size_t wrong = engine_batch(e, &c);
    hb_stats st = stats_of(e);
    tu_print_stats("corrupt one, sample of all", &st);
    ck_assert_msg(st.device_launches >= 1, "no device launch: %s", hb_engine_describe(e));
    ck_assert_uint_eq(wrong, 0);
    ck_assert_uint_eq(st.messages, WHOLE_N);
    ck_assert_uint_ge(st.verified, WHOLE_N + st.device_launches);
    ck_assert_uint_le(st.verified, WHOLE_N + st.device_launches * 16);
    ck_assert_uint_ge(st.verify_mismatches, st.device_launches);
    ck_assert_int_eq(st.quarantined, 1);
    hb_engine_close(e);
    case_free(&c);
}
END_TEST

static Suite *sampler_suite(void)
{
    Suite *s = suite_create("sampler");
    TCase *counts = tcase_create("counts");
    tcase_set_timeout(counts, 60);
    tcase_add_loop_test(counts, test_exact_counts, 0, (int)NSIZES);
    suite_add_tcase(s, counts);
    TCase *caught = tcase_create("caught");
    tcase_set_timeout(caught, 240);
    tcase_add_loop_test(caught, test_one_position_caught, 0, 3);
    suite_add_tcase(s, caught);
    TCase *engine = tcase_create("engine");
    tcase_set_timeout(engine, 120);
    tcase_add_test(engine, test_engine_small_sample);
    tcase_add_test(engine, test_engine_whole_sample);
    suite_add_tcase(s, engine);
    return s;
}

int main(void)
{
    return tu_run_suite(sampler_suite());
}
