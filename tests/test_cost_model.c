/*
 * test_cost_model.c - the scheduler's arithmetic, without an engine: cost
 * models (host/src/sched/cost_model.c) and the share rule
 * (host/src/sched/scheduler.c), on hand-built models and schedulers.
 *
 * Covers: (a) the class bounds of hb_cost_class_of and the arithmetic of
 * hb_cost_predict, term validity; (b) learning: from models 8x too cheap
 * and 8x too dear, repeated batches of one true cost bring the prediction
 * within 5% in a bounded number of steps (batches where the per-byte part
 * dominates, and where the fixed part does); one outlier moves the
 * prediction for its batch by at most 8x; a frozen model does not move; NaN, infinite and negative
 * measurements teach nothing; (c) hb_sched_share: equal groups split
 * about half and half, a group three times as fast gets about 3/4, a
 * fixed cost above the whole job's cost elsewhere gets nothing, within a
 * group only the cheaper member gets a share, a retired backend gets
 * nothing while the rest take all, a backlog (taken, not done) moves the
 * share away from the busy backend, a non-zero share is at least one
 * message; backends of one group take turns (a busy mate holds the
 * other back, except for a caller's own small batch, and what one
 * measures beside a busy mate teaches nothing); (d) the scheduler's
 * bookkeeping: done with a bad prediction says so, batches under
 * learn_min teach nothing, force freezes and NULL thaws, bad forces are
 * refused.
 * Must not: open an engine or depend on timing: the backlog test only
 * relies on a backlog (seconds of predicted work) outlasting the test.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/cost_model.h"
#include "sched/scheduler.h"
#include "test_util.h"

/* ---- helpers --------------------------------------------------------- */

static hb_cost_terms terms_of(double fixed, double per_message, double per_byte)
{
    hb_cost_terms t = {fixed, per_message, per_byte};
    return t;
}

/* A model seeded with terms t in every class. */
static hb_cost_model model_of(hb_cost_terms t)
{
    hb_cost_model m;
    hb_cost_terms all[HB_COST_CLASSES];
    memset(&m, 0, sizeof m);
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        all[c] = t;
    hb_cost_seed(&m, all);
    return m;
}

static void fill_classes(hb_cost_terms out[HB_COST_CLASSES], hb_cost_terms t)
{
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        out[c] = t;
}

static double true_cost(hb_cost_terms t, uint64_t n, uint64_t bytes)
{
    return t.fixed_ns + (double)n * t.ns_per_message + (double)bytes * t.ns_per_byte;
}

/* The share backend k of s gets of the pending work; 0 when none. */
static uint64_t share_of(hb_sched *s, unsigned k, uint64_t n, uint64_t bytes, uint64_t *got_bytes)
{
    uint64_t messages = 0, b = 0;
    int yes = hb_sched_share(s, k, n, bytes, 0, &messages, &b);
    if (got_bytes != NULL)
        *got_bytes = yes ? b : 0;
    if (yes)
        ck_assert_msg(messages >= 1 && b >= 1, "a share of %llu messages, %llu bytes",
                      (unsigned long long)messages, (unsigned long long)b);
    return yes ? messages : 0;
}

/* ---- (a) classes and predictions --------------------------------------- */

START_TEST(test_class_bounds)
{
    ck_assert_uint_eq(hb_cost_class_of(0, 0), 0);
    ck_assert_uint_eq(hb_cost_class_of(0, 1u << 30), 0); /* no messages: mean 0 */
    ck_assert_uint_eq(hb_cost_class_of(1, 0), 0);
    ck_assert_uint_eq(hb_cost_class_of(1, HB_COST_SHORT_BELOW - 1), 0);
    ck_assert_uint_eq(hb_cost_class_of(1, HB_COST_SHORT_BELOW), 1);
    ck_assert_uint_eq(hb_cost_class_of(1, HB_COST_MID_BELOW - 1), 1);
    ck_assert_uint_eq(hb_cost_class_of(1, HB_COST_MID_BELOW), 2);
    ck_assert_uint_eq(hb_cost_class_of(1, UINT64_MAX), 2);
    /* the mean decides, not the total */
    ck_assert_uint_eq(hb_cost_class_of(2, 2 * HB_COST_SHORT_BELOW - 1), 0);
    ck_assert_uint_eq(hb_cost_class_of(2, 2 * HB_COST_SHORT_BELOW), 1);
    ck_assert_uint_eq(hb_cost_class_of(1000, 1000ull * HB_COST_MID_BELOW - 1), 1);
    ck_assert_uint_eq(hb_cost_class_of(1000, 1000ull * HB_COST_MID_BELOW), 2);
    ck_assert_uint_eq(hb_cost_class_of(1u << 20, (uint64_t)64 << 20), 0);
    ck_assert_str_eq(hb_cost_class_name(0), "short");
    ck_assert_str_eq(hb_cost_class_name(1), "mid");
    ck_assert_str_eq(hb_cost_class_name(2), "long");
    ck_assert_ptr_null(hb_cost_class_name(HB_COST_CLASSES));
}
END_TEST

START_TEST(test_predict_arithmetic)
{
    hb_cost_model m;
    hb_cost_terms t[HB_COST_CLASSES] = {terms_of(1000, 10, 0.5), terms_of(20000, 3, 0.25),
                                        terms_of(500000, 0, 0.125)};
    memset(&m, 0, sizeof m);
    hb_cost_seed(&m, t);
    ck_assert(memcmp(m.terms, t, sizeof t) == 0); /* seeded as given */
    /* exact in binary: the sums are exact too */
    ck_assert(hb_cost_predict(&m, 0, 0) == 1000.0);
    ck_assert(hb_cost_predict(&m, 4, 400) == 1000.0 + 40.0 + 200.0);
    ck_assert(hb_cost_predict(&m, 8, 8 * 4096) == 20000.0 + 24.0 + 8192.0);
    ck_assert(hb_cost_predict(&m, 2, 2u << 20) == 500000.0 + 262144.0);
    /* a class boundary switches the terms */
    ck_assert(hb_cost_predict(&m, 1, HB_COST_SHORT_BELOW - 1) == 1000.0 + 10.0 + 511.5);
    ck_assert(hb_cost_predict(&m, 1, HB_COST_SHORT_BELOW) == 20000.0 + 3.0 + 256.0);
}
END_TEST

START_TEST(test_terms_valid)
{
    hb_cost_terms ok = terms_of(0, 0, 0), good = terms_of(1e9, 1e3, 1e-3);
    ck_assert_int_eq(hb_cost_terms_valid(&ok), 1);
    ck_assert_int_eq(hb_cost_terms_valid(&good), 1);
    const double bad[] = {-1.0, -1e-300, NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        for (int which = 0; which < 3; which++) {
            hb_cost_terms t = good;
            double *field = which == 0   ? &t.fixed_ns
                            : which == 1 ? &t.ns_per_message
                                         : &t.ns_per_byte;
            *field = bad[i];
            ck_assert_msg(!hb_cost_terms_valid(&t), "term %d = %g accepted", which, bad[i]);
        }
}
END_TEST

/* ---- (b) learning --------------------------------------------------------- */

#define LEARN_STEPS_MAX 32

/* Learns batches of n messages and bytes whose true cost is truth, from
 * every term scaled by start_factor; returns the steps until the
 * prediction was within 5% (LEARN_STEPS_MAX + 1: never), and checks that
 * it stays there afterwards. */
static int steps_to_converge(hb_cost_terms truth, double start_factor, uint64_t n, uint64_t bytes,
                             double *last)
{
    hb_cost_model m =
        model_of(terms_of(truth.fixed_ns * start_factor, truth.ns_per_message * start_factor,
                          truth.ns_per_byte * start_factor));
    double want = true_cost(truth, n, bytes);
    unsigned c = hb_cost_class_of(n, bytes);
    int steps = 0;
    while (steps <= LEARN_STEPS_MAX && fabs(hb_cost_predict(&m, n, bytes) - want) > 0.05 * want) {
        hb_cost_learn(&m, n, bytes, want, 1.0);
        steps++;
        ck_assert_uint_eq(m.learnt[c], (uint64_t)steps);
        ck_assert(hb_cost_terms_valid(&m.terms[c]));
    }
    for (int more = 0; more < 20 && steps <= LEARN_STEPS_MAX; more++) {
        hb_cost_learn(&m, n, bytes, want, 1.0);
        double p = hb_cost_predict(&m, n, bytes);
        ck_assert_msg(fabs(p - want) <= 0.05 * want, "left the 5%% band: %g against %g", p, want);
    }
    *last = hb_cost_predict(&m, n, bytes) / want;
    return steps;
}

/* Loop index: 0 per-byte part dominates (a mid batch of 4 KiB messages),
 * 1 per-message part (short messages), 2 fixed part (one tiny message),
 * 3 a long batch and 4 a mid batch of big messages: few messages, but
 * their bytes dominate (the engine's takes of long messages hold at most
 * a lane group, 16). Each from 8x too cheap and 8x too dear. */
START_TEST(test_learning_converges)
{
    static const struct {
        hb_cost_terms truth;
        uint64_t n, bytes;
        const char *what;
    } cases[] = {
        {{50000, 100, 1.0}, 100, 100 * 4096, "mid, per byte"},
        {{2000, 300, 0.5}, 4096, 4096 * 64, "short, per message"},
        {{400000, 50, 0.2}, 1, 64, "short, fixed"},
        {{1e6, 0, 0.15}, 4, 4u << 20, "long, 4 x 1 MiB"},
        {{20000, 50, 0.15}, 12, 12u * (128u << 10), "mid, 12 x 128 KiB"},
    };
    const double starts[] = {1.0 / 8, 8.0};
    for (size_t s = 0; s < 2; s++) {
        double last;
        int steps =
            steps_to_converge(cases[_i].truth, starts[s], cases[_i].n, cases[_i].bytes, &last);
        if (steps <= LEARN_STEPS_MAX)
            fprintf(stderr, "learning %s from %gx: within 5%% after %d batches\n", cases[_i].what,
                    starts[s], steps);
        ck_assert_msg(steps <= LEARN_STEPS_MAX,
                      "%s from %gx: not within 5%% after %d batches (predicting %.3gx the truth)",
                      cases[_i].what, starts[s], LEARN_STEPS_MAX, last);
        ck_assert_msg(steps >= 1, "%s from %gx started within 5%%: the case tests nothing",
                      cases[_i].what, starts[s]);
    }
}
END_TEST

/* One stray measurement, however far off, moves the prediction for its
 * batch's shape by at most 8x, and leaves the model valid and the other
 * classes alone. */
START_TEST(test_outlier_bounded)
{
    const hb_cost_terms start = terms_of(50000, 100, 1.0);
    /* per-byte dominated, fixed dominated, and long batches */
    const uint64_t shapes[][2] = {{100, 100 * 4096}, {1, 64}, {4, 4u << 20}};
    const double outliers[] = {0.0, 1e-9, 1e15, 1e300, DBL_MAX};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t o = 0; o < sizeof outliers / sizeof outliers[0]; o++) {
            hb_cost_model m = model_of(start);
            uint64_t n = shapes[s][0], bytes = shapes[s][1];
            unsigned c = hb_cost_class_of(n, bytes);
            double before = hb_cost_predict(&m, n, bytes);
            hb_cost_learn(&m, n, bytes, outliers[o], 1.0);
            double after = hb_cost_predict(&m, n, bytes);
            ck_assert_uint_eq(m.learnt[c], 1);
            ck_assert(hb_cost_terms_valid(&m.terms[c]));
            ck_assert_msg(after <= 8 * before && after >= before / 8,
                          "shape %zu, outlier %g: prediction %g -> %g (terms %g + %g/msg + "
                          "%g/byte)",
                          s, outliers[o], before, after, m.terms[c].fixed_ns,
                          m.terms[c].ns_per_message, m.terms[c].ns_per_byte);
            for (unsigned k = 0; k < HB_COST_CLASSES; k++)
                if (k != c)
                    ck_assert(memcmp(&m.terms[k], &start, sizeof start) == 0);
        }
}
END_TEST

START_TEST(test_frozen_does_not_move)
{
    hb_cost_model m = model_of(terms_of(50000, 100, 1.0));
    m.frozen = 1;
    hb_cost_model before = m;
    for (int i = 0; i < 10; i++) {
        hb_cost_learn(&m, 100, 100 * 4096, 1e9, 1.0);
        hb_cost_learn(&m, 1, 64, 1.0, 1.0);
    }
    ck_assert(memcmp(&m, &before, sizeof m) == 0);
}
END_TEST

START_TEST(test_bad_measurements_ignored)
{
    hb_cost_model m = model_of(terms_of(50000, 100, 1.0));
    hb_cost_model before = m;
    const double bad[] = {NAN, -NAN, INFINITY, -INFINITY, -1.0, -1e-300, -1e300};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hb_cost_learn(&m, 100, 100 * 4096, bad[i], 1.0);
        hb_cost_learn(&m, 1, 64, bad[i], 1.0);
        hb_cost_learn(&m, 4, 4u << 20, bad[i], 1.0);
        ck_assert_msg(memcmp(&m, &before, sizeof m) == 0, "measurement %g moved the model", bad[i]);
    }
}
END_TEST

/* ---- (c) shares -------------------------------------------------------------- */

/* 1000 messages of 4 KiB pending: the "mid" class, a job worth a
 * millisecond or so to the backends below. */
#define PEND_N 1000u
#define PEND_BYTES (1000u * 4096u)

static unsigned add_backend(hb_sched *s, hb_cost_terms t, unsigned group, unsigned parallel)
{
    hb_cost_terms all[HB_COST_CLASSES];
    fill_classes(all, t);
    return hb_sched_add(s, all, group, parallel, 1, 0);
}

static void assert_between(uint64_t got, double lo, double hi, const char *what)
{
    ck_assert_msg((double)got >= lo && (double)got <= hi, "%s: %llu, not in [%g, %g]", what,
                  (unsigned long long)got, lo, hi);
}

START_TEST(test_share_equal_groups_halve)
{
    hb_sched s;
    hb_sched_init(&s);
    unsigned a = add_backend(&s, terms_of(10000, 10, 0.25), 1, 1);
    unsigned b = add_backend(&s, terms_of(10000, 10, 0.25), 2, 1);
    ck_assert_uint_eq(a, 0);
    ck_assert_uint_eq(b, 1);
    uint64_t bytes_a, bytes_b;
    uint64_t ma = share_of(&s, a, PEND_N, PEND_BYTES, &bytes_a);
    uint64_t mb = share_of(&s, b, PEND_N, PEND_BYTES, &bytes_b);
    assert_between(ma, 0.45 * PEND_N, 0.55 * PEND_N, "equal groups, first");
    assert_between(mb, 0.45 * PEND_N, 0.55 * PEND_N, "equal groups, second");
    assert_between(bytes_a, 0.45 * PEND_BYTES, 0.55 * PEND_BYTES, "equal groups, bytes");
    assert_between(bytes_b, 0.45 * PEND_BYTES, 0.55 * PEND_BYTES, "equal groups, bytes");
    ck_assert_uint_ge(ma + mb, PEND_N); /* shares cover the work (rounded up) */
    hb_sched_destroy(&s);
}
END_TEST

START_TEST(test_share_three_times_faster)
{
    hb_sched s;
    hb_sched_init(&s);
    unsigned slow = add_backend(&s, terms_of(1000, 30, 0.75), 1, 1);
    unsigned fast = add_backend(&s, terms_of(1000, 10, 0.25), 2, 1);
    uint64_t mf = share_of(&s, fast, PEND_N, PEND_BYTES, NULL);
    uint64_t ms = share_of(&s, slow, PEND_N, PEND_BYTES, NULL);
    assert_between(mf, 0.70 * PEND_N, 0.80 * PEND_N, "3x faster group");
    assert_between(ms, 0.20 * PEND_N, 0.30 * PEND_N, "3x slower group");

    /* parallel counts as rate: three side-by-side batches of the slow
     * terms match the fast backend */
    hb_sched p;
    hb_sched_init(&p);
    unsigned wide = add_backend(&p, terms_of(1000, 30, 0.75), 1, 3);
    unsigned one = add_backend(&p, terms_of(1000, 10, 0.25), 2, 1);
    assert_between(share_of(&p, wide, PEND_N, PEND_BYTES, NULL), 0.45 * PEND_N, 0.55 * PEND_N,
                   "3 threads of a 3x slower backend");
    assert_between(share_of(&p, one, PEND_N, PEND_BYTES, NULL), 0.45 * PEND_N, 0.55 * PEND_N,
                   "against one fast one");
    hb_sched_destroy(&p);
    hb_sched_destroy(&s);
}
END_TEST

START_TEST(test_share_fixed_cost_above_job)
{
    hb_sched s;
    hb_sched_init(&s);
    /* the whole job costs the cheap backend 100 + 1000*10 + 4 MB*0.25 ns,
     * about 1 ms; the other's fixed cost alone is 5 ms */
    hb_cost_terms cheap = terms_of(100, 10, 0.25);
    unsigned low = add_backend(&s, cheap, 1, 1);
    unsigned high = add_backend(&s, terms_of(5e6, 0, 0.001), 2, 1);
    ck_assert(true_cost(cheap, PEND_N, PEND_BYTES) < 5e6);
    ck_assert_uint_eq(share_of(&s, high, PEND_N, PEND_BYTES, NULL), 0);
    ck_assert_uint_eq(share_of(&s, low, PEND_N, PEND_BYTES, NULL), PEND_N);
    /* a small job too, and one message */
    ck_assert_uint_eq(share_of(&s, high, 1, 64, NULL), 0);
    ck_assert_uint_eq(share_of(&s, low, 1, 64, NULL), 1);
    /* a job big enough to outlast the fixed cost is shared */
    uint64_t big_n = 100000, big_bytes = 100000ull * 4096;
    ck_assert(true_cost(cheap, big_n, big_bytes) > 5e7);
    ck_assert_uint_gt(share_of(&s, high, big_n, big_bytes, NULL), 0);
    ck_assert_uint_gt(share_of(&s, low, big_n, big_bytes, NULL), 0);
    hb_sched_destroy(&s);
}
END_TEST

START_TEST(test_share_one_per_group)
{
    hb_sched s;
    hb_sched_init(&s);
    /* group 0: a pool (2 threads) and a CPU device, sharing cores */
    unsigned device = add_backend(&s, terms_of(2000, 5, 0.125), 0, 1);
    unsigned pool = add_backend(&s, terms_of(100, 10, 0.5), 0, 2);
    /* the device: 2000 + 5000 + 512000 ns; the pool: 100 + (10000 +
     * 2048000) / 2 ns: the device is cheaper */
    ck_assert_uint_eq(share_of(&s, pool, PEND_N, PEND_BYTES, NULL), 0);
    ck_assert_uint_eq(share_of(&s, device, PEND_N, PEND_BYTES, NULL), PEND_N);
    /* for one small message the pool's low fixed cost wins */
    ck_assert_uint_eq(share_of(&s, device, 1, 64, NULL), 0);
    ck_assert_uint_eq(share_of(&s, pool, 1, 64, NULL), 1);

    /* with a third backend in a group of its own, group 0 still offers
     * only one member, and the other group gets a share */
    unsigned other = add_backend(&s, terms_of(2000, 5, 0.125), 1, 1);
    uint64_t md = share_of(&s, device, PEND_N, PEND_BYTES, NULL);
    uint64_t mo = share_of(&s, other, PEND_N, PEND_BYTES, NULL);
    ck_assert_uint_eq(share_of(&s, pool, PEND_N, PEND_BYTES, NULL), 0);
    assert_between(md, 0.45 * PEND_N, 0.55 * PEND_N, "group 0's device beside group 1");
    assert_between(mo, 0.45 * PEND_N, 0.55 * PEND_N, "group 1");
    hb_sched_destroy(&s);
}
END_TEST

START_TEST(test_share_retired)
{
    hb_sched s;
    hb_sched_init(&s);
    unsigned a = add_backend(&s, terms_of(1000, 10, 0.125), 1, 1);
    unsigned b = add_backend(&s, terms_of(1000, 10, 0.25), 2, 1);
    unsigned c = add_backend(&s, terms_of(1000, 10, 0.25), 0, 2);
    ck_assert_uint_gt(share_of(&s, a, PEND_N, PEND_BYTES, NULL), 0);
    hb_sched_retire(&s, a);
    ck_assert_uint_eq(share_of(&s, a, PEND_N, PEND_BYTES, NULL), 0);
    uint64_t mb = share_of(&s, b, PEND_N, PEND_BYTES, NULL);
    uint64_t mc = share_of(&s, c, PEND_N, PEND_BYTES, NULL);
    ck_assert_uint_gt(mb, 0);
    ck_assert_uint_gt(mc, 0);
    ck_assert_uint_ge(mb + mc, PEND_N);
    hb_sched_retire(&s, b);
    ck_assert_uint_eq(share_of(&s, b, PEND_N, PEND_BYTES, NULL), 0);
    ck_assert_uint_eq(share_of(&s, c, PEND_N, PEND_BYTES, NULL), PEND_N);
    /* a retired pool taking jobs again (no device left) */
    hb_sched_retire(&s, c);
    ck_assert_uint_eq(share_of(&s, c, PEND_N, PEND_BYTES, NULL), 0);
    hb_sched_set_takes_jobs(&s, c);
    ck_assert_uint_eq(share_of(&s, c, PEND_N, PEND_BYTES, NULL), PEND_N);
    /* nothing pending: nothing to share */
    uint64_t m = 7, by = 7;
    ck_assert_int_eq(hb_sched_share(&s, c, 0, 0, 0, &m, &by), 0);
    hb_sched_destroy(&s);
}
END_TEST

START_TEST(test_share_backlog_moves_away)
{
    hb_sched s;
    hb_sched_init(&s);
    unsigned a = add_backend(&s, terms_of(1000, 10, 0.25), 1, 1);
    unsigned b = add_backend(&s, terms_of(1000, 10, 0.25), 2, 1);
    uint64_t before = share_of(&s, a, PEND_N, PEND_BYTES, NULL);
    /* a takes a batch predicted at 4e9 * 0.25 ns = 1 s: its backlog
     * outlasts this test by far, and half the pending work takes ~0.5 ms */
    uint64_t big_bytes = 4000000000ull;
    double predicted = hb_sched_taken(&s, a, 1000000, big_bytes);
    ck_assert(predicted > 1e9);
    uint64_t busy = share_of(&s, a, PEND_N, PEND_BYTES, NULL);
    uint64_t idle = share_of(&s, b, PEND_N, PEND_BYTES, NULL);
    ck_assert_msg(busy < before, "busy backend's share %llu, idle %llu", (unsigned long long)busy,
                  (unsigned long long)before);
    ck_assert_uint_eq(busy, 0); /* it could only start after b is done */
    ck_assert_uint_eq(idle, PEND_N);
    /* done: the backlog is gone, the split is even again */
    ck_assert_int_eq(hb_sched_done(&s, a, 1000000, big_bytes, predicted, predicted), 0);
    assert_between(share_of(&s, a, PEND_N, PEND_BYTES, NULL), 0.45 * PEND_N, 0.55 * PEND_N,
                   "after the backlog is done");

    /* a smaller backlog shifts part of the share: a holds 2 ms of work,
     * more than the whole job on both */
    hb_sched p;
    hb_sched_init(&p);
    unsigned x = add_backend(&p, terms_of(1000, 10, 0.25), 1, 1);
    unsigned y = add_backend(&p, terms_of(1000, 10, 0.25), 2, 1);
    uint64_t job_n = 100000, job_bytes = 100000ull * 4096; /* ~100 ms each */
    uint64_t even = share_of(&p, x, job_n, job_bytes, NULL);
    hb_sched_taken(&p, x, 1000, 1000ull * 4096 * 40); /* ~41 ms of backlog */
    uint64_t less = share_of(&p, x, job_n, job_bytes, NULL);
    uint64_t more = share_of(&p, y, job_n, job_bytes, NULL);
    ck_assert_msg(less < even && less > 0, "backlogged share %llu, even %llu",
                  (unsigned long long)less, (unsigned long long)even);
    ck_assert_uint_gt(more, even);
    hb_sched_destroy(&p);
    hb_sched_destroy(&s);
}
END_TEST

START_TEST(test_share_at_least_one)
{
    hb_sched s;
    hb_sched_init(&s);
    /* b is 10,000x slower, but starts at once: a part of 1e-4 of 10
     * messages rounds up to one */
    unsigned a = add_backend(&s, terms_of(0, 10, 0.25), 1, 1);
    unsigned b = add_backend(&s, terms_of(0, 1e5, 2500), 2, 1);
    uint64_t bytes = 0;
    uint64_t mb = share_of(&s, b, 10, 10 * 64, &bytes);
    ck_assert_uint_eq(mb, 1);
    ck_assert_uint_ge(bytes, 1);
    ck_assert_uint_le(bytes, 64);
    ck_assert_uint_eq(share_of(&s, a, 10, 10 * 64, NULL), 10);
    /* zero bytes pending (empty messages): still a message, and a byte */
    mb = share_of(&s, b, 10, 0, &bytes);
    ck_assert_uint_eq(mb, 1);
    ck_assert_uint_ge(bytes, 1);
    /* free work (all terms zero) divides by nothing */
    hb_sched z;
    hb_sched_init(&z);
    unsigned f = add_backend(&z, terms_of(0, 0, 0), 1, 1);
    unsigned g = add_backend(&z, terms_of(0, 0, 0), 2, 4);
    uint64_t mf = share_of(&z, f, PEND_N, PEND_BYTES, NULL);
    uint64_t mg = share_of(&z, g, PEND_N, PEND_BYTES, NULL);
    ck_assert_uint_ge(mf + mg, PEND_N);
    hb_sched_destroy(&z);
    hb_sched_destroy(&s);
}
END_TEST

START_TEST(test_share_group_mates_take_turns)
{
    hb_sched s;
    hb_sched_init(&s);
    /* group 0 as the engine has it: a CPU device and the pool */
    hb_cost_terms dev_terms[HB_COST_CLASSES], pool_terms[HB_COST_CLASSES];
    fill_classes(dev_terms, terms_of(2000, 5, 0.125));
    fill_classes(pool_terms, terms_of(100, 10, 0.5));
    unsigned device = hb_sched_add(&s, dev_terms, 0, 1, 1, 0);
    unsigned pool = hb_sched_add(&s, pool_terms, 0, 2, 1, 16);
    uint64_t m = 0, b = 0;
    /* idle: one small message is the pool's */
    ck_assert_uint_eq(share_of(&s, pool, 1, 64, NULL), 1);
    /* the device holds a batch: the pool waits its turn for queued work,
     * but a caller hashing a small batch on its own thread may go on */
    double p = hb_sched_taken(&s, device, 1000, 1000 * 4096);
    ck_assert_uint_eq(share_of(&s, pool, 1, 64, NULL), 0);
    ck_assert_int_eq(hb_sched_share(&s, pool, 1, 64, 1, &m, &b), 1);
    ck_assert_uint_eq(m, 1);
    /* a pool batch done while its mate is busy teaches nothing: the two
     * shared the cores */
    double q = hb_sched_taken(&s, pool, 100, 100 * 4096);
    hb_sched_done(&s, pool, 100, 100 * 4096, q, 50 * q);
    ck_assert_int_eq(hb_sched_learnt(&s, pool), 0);
    /* the device's batch done (alone by then): it learns, and says the
     * mate it held back may take now */
    ck_assert_int_eq(hb_sched_done(&s, device, 1000, 1000 * 4096, p, p), 1);
    ck_assert_int_eq(hb_sched_learnt(&s, device), 1);
    ck_assert_uint_eq(share_of(&s, pool, 1, 64, NULL), 1);
    /* alone now: the pool's batch teaches */
    q = hb_sched_taken(&s, pool, 100, 100 * 4096);
    hb_sched_done(&s, pool, 100, 100 * 4096, q, 2 * q);
    ck_assert_int_eq(hb_sched_learnt(&s, pool), 1);
    hb_sched_destroy(&s);
}
END_TEST

/* ---- (d) bookkeeping --------------------------------------------------------- */

START_TEST(test_done_learn_min_and_force)
{
    hb_sched s;
    hb_sched_init(&s);
    hb_cost_terms t[HB_COST_CLASSES];
    fill_classes(t, terms_of(1000, 10, 0.25));
    unsigned k = hb_sched_add(&s, t, 0, 2, 1, 16);
    ck_assert_int_eq(hb_sched_learnt(&s, k), 0);

    /* fewer than learn_min messages: nothing learnt, even when way off */
    double p = hb_sched_taken(&s, k, 4, 4 * 4096);
    ck_assert_int_eq(hb_sched_done(&s, k, 4, 4 * 4096, p, 100 * p), 1);
    ck_assert_int_eq(hb_sched_learnt(&s, k), 0);

    /* a prediction within half: not "moved" */
    p = hb_sched_taken(&s, k, 100, 100 * 4096);
    ck_assert_int_eq(hb_sched_done(&s, k, 100, 100 * 4096, p, 1.2 * p), 0);
    ck_assert_int_eq(hb_sched_learnt(&s, k), 1);
    /* dropped (measured < 0): nothing learnt, not moved */
    p = hb_sched_taken(&s, k, 100, 100 * 4096);
    ck_assert_int_eq(hb_sched_done(&s, k, 100, 100 * 4096, p, -1), 0);

    hb_cost_terms read[HB_COST_CLASSES];
    uint64_t predicted, measured;
    int takes;
    hb_sched_read(&s, k, read, &predicted, &measured, &takes);
    ck_assert_int_eq(takes, 1);
    ck_assert_uint_gt(predicted, 0);
    ck_assert_uint_gt(measured, predicted); /* the one batch learnt took 1.2x */

    /* forced terms are read back and frozen */
    hb_cost_terms forced[HB_COST_CLASSES];
    fill_classes(forced, terms_of(7, 3, 0.5));
    ck_assert_int_eq(hb_sched_force(&s, k, forced), 1);
    p = hb_sched_taken(&s, k, 100, 100 * 4096);
    hb_sched_done(&s, k, 100, 100 * 4096, p, 1000 * p);
    hb_sched_read(&s, k, read, &predicted, &measured, &takes);
    ck_assert(memcmp(read, forced, sizeof read) == 0);
    /* thawed: the next batch moves them */
    ck_assert_int_eq(hb_sched_force(&s, k, NULL), 1);
    p = hb_sched_taken(&s, k, 100, 100 * 4096);
    hb_sched_done(&s, k, 100, 100 * 4096, p, 1000 * p);
    hb_sched_read(&s, k, read, &predicted, &measured, &takes);
    ck_assert(read[1].ns_per_byte > forced[1].ns_per_byte);

    /* refused: a bad index, a bad term in any class */
    ck_assert_int_eq(hb_sched_force(&s, k + 1, forced), 0);
    ck_assert_int_eq(hb_sched_force(&s, HB_SCHED_MAX + 5, NULL), 0);
    forced[2].ns_per_byte = NAN;
    ck_assert_int_eq(hb_sched_force(&s, k, forced), 0);
    forced[2].ns_per_byte = -1;
    ck_assert_int_eq(hb_sched_force(&s, k, forced), 0);
    hb_sched_destroy(&s);
}
END_TEST

static Suite *cost_model_suite(void)
{
    Suite *s = suite_create("cost_model");
    TCase *model = tcase_create("model");
    tcase_add_test(model, test_class_bounds);
    tcase_add_test(model, test_predict_arithmetic);
    tcase_add_test(model, test_terms_valid);
    tcase_add_loop_test(model, test_learning_converges, 0, 5);
    tcase_add_test(model, test_outlier_bounded);
    tcase_add_test(model, test_frozen_does_not_move);
    tcase_add_test(model, test_bad_measurements_ignored);
    suite_add_tcase(s, model);
    TCase *share = tcase_create("share");
    tcase_add_test(share, test_share_equal_groups_halve);
    tcase_add_test(share, test_share_three_times_faster);
    tcase_add_test(share, test_share_fixed_cost_above_job);
    tcase_add_test(share, test_share_one_per_group);
    tcase_add_test(share, test_share_retired);
    tcase_add_test(share, test_share_backlog_moves_away);
    tcase_add_test(share, test_share_at_least_one);
    tcase_add_test(share, test_share_group_mates_take_turns);
    tcase_add_test(share, test_done_learn_min_and_force);
    suite_add_tcase(s, share);
    return s;
}

int main(void)
{
    /* nothing here opens an engine; should that change, the user's model
     * cache stays untouched */
    setenv("HASHBATCH_MODEL_CACHE", "off", 1);
    return tu_run_suite(cost_model_suite());
}
