/*
 * test_sched_sim.c - the simulator of bench/sched_sim.c (issue 30: the
 * scheduler in virtual time on a modelled GPU machine), against sums done
 * by hand, so what it says of a machine nobody ran on rests on checked
 * arithmetic.
 *
 * Covers: (a) the best-split solver: equal affine backends split half and
 * half, one three times as fast gets 3/4, a job smaller than one
 * backend's fixed cost goes entirely to the other, a fixed cost moves the
 * crossing where the hand puts it, messages too big to share out evenly
 * over a pool's threads go where they finish first; (b) the true costs:
 * full lane sets, what is left over by one-at-a-time when cheaper; the
 * GPU's terms from hashcat's rate, the link and the launch latency, by
 * hand; the pool's; the take limits the engine's rules give; the queue's
 * take rule (the share's cut, long messages, the fair share); (c) runs
 * in virtual time through the real scheduler: the hand splits of (a)
 * reproduced within 5% (shares and makespan), with many workers and take
 * limits too; bad backends refused; (d) the scheduler's time source:
 * backlogs are counted in the simulation's time, not the machine's.
 * Must not: depend on the machine's clock or speed: every time here is
 * virtual.
 */
#define SCHED_SIM_NO_MAIN
#include "sched_sim.c" /* the simulator's core: this suite's subject */

#include <check.h>

#include "test_util.h"

/* ---- helpers --------------------------------------------------------- */

static hb_cost_terms terms_of(double fixed, double per_message, double per_byte)
{
    hb_cost_terms t = {fixed, per_message, per_byte};
    return t;
}

/* A server whose messages cost per_message each (affine truth). */
static sim_server server(double fixed, double per_message, unsigned parallel)
{
    sim_server s = {{terms_of(fixed, per_message, 0), 0, terms_of(0, 0, 0)}, 64, parallel};
    return s;
}

static void assert_near(double got, double want, double tolerance, const char *what)
{
    ck_assert_msg(fabs(got - want) <= tolerance * fabs(want), "%s: %.9g, want %.9g (+-%g%%)", what,
                  got, want, tolerance * 100);
}

/* Take limits that never cut a take. */
static sim_take unlimited(void)
{
    sim_take t = {UINT64_MAX, UINT64_MAX, UINT64_MAX, 16, 0, 0};
    return t;
}

/* An affine backend of `workers` workers, each holding `depth` batches,
 * seeded with its truth, taking without limits. */
static sim_backend backend(hb_cost_terms t, unsigned workers, unsigned depth)
{
    sim_backend b;
    memset(&b, 0, sizeof b);
    b.truth.terms = t;
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        b.seed[c] = t;
    b.workers = workers;
    b.depth = depth;
    b.take = unlimited();
    return b;
}

/* Runs job on a and b; checks a's share of the messages against want
 * (within 5% of it) and the makespan against the best split's (within
 * 5%); returns a's messages. */
static uint64_t run_against_hand(sim_backend a, sim_backend b, sim_job job, double want,
                                 const char *what)
{
    sim_backend both[2] = {a, b};
    sim_result r;
    ck_assert_int_eq(sim_run(both, 2, job, NULL, &r), 0);
    ck_assert_uint_eq(r.messages[0] + r.messages[1], job.messages);
    ck_assert_uint_eq(r.bytes[0] + r.bytes[1], job.messages * job.length);
    double share = (double)r.messages[0] / (double)job.messages;
    ck_assert_msg(fabs(share - want) <= 0.05 * (want > 0 ? want : 1), "%s: share %.4f, want %.4f",
                  what, share, want);
    sim_server sa = sim_server_of(&a, job.length), sb = sim_server_of(&b, job.length);
    double best;
    sim_best_split(&sa, &sb, job.messages, &best);
    ck_assert_msg(r.makespan_ns >= best * (1 - 1e-9), "%s: makespan %.1f beats the best %.1f", what,
                  r.makespan_ns, best);
    assert_near(r.makespan_ns, best, 0.05, what);
    return r.messages[0];
}

/* ---- (a) the best split ------------------------------------------------ */

START_TEST(test_best_equal_halves)
{
    sim_server a = server(0, 10, 1), b = server(0, 10, 1);
    double t;
    ck_assert_uint_eq(sim_best_split(&a, &b, 1000, &t), 500);
    ck_assert(t == 5000.0);
    uint64_t x = sim_best_split(&a, &b, 1001, &t); /* the odd one: either side */
    ck_assert(x == 500 || x == 501);
    ck_assert(t == 5010.0);
    ck_assert_uint_eq(sim_best_split(&a, &b, 0, &t), 0);
    ck_assert(t == 0.0);
}
END_TEST

START_TEST(test_best_three_times_faster)
{
    sim_server fast = server(0, 10, 1), slow = server(0, 30, 1);
    double t;
    ck_assert_uint_eq(sim_best_split(&fast, &slow, 1000, &t), 750);
    ck_assert(t == 7500.0);
    ck_assert_uint_eq(sim_best_split(&slow, &fast, 1000, &t), 250);
    ck_assert(t == 7500.0);
    /* three workers side by side of the slow one match the fast one */
    sim_server wide = server(0, 30, 3);
    ck_assert_uint_eq(sim_best_split(&wide, &fast, 1200, &t), 600);
    ck_assert(t == 6000.0);
}
END_TEST

START_TEST(test_best_fixed_above_job)
{
    /* 100 messages cost b 1000 ns; a's fixed cost alone is 1 ms */
    sim_server a = server(1e6, 1, 1), b = server(0, 10, 1);
    double t;
    ck_assert_uint_eq(sim_best_split(&a, &b, 100, &t), 0);
    ck_assert(t == 1000.0);
    ck_assert_uint_eq(sim_best_split(&b, &a, 100, &t), 100);
    ck_assert(t == 1000.0);
    /* one message, and a job big enough to outlast the fixed cost */
    ck_assert_uint_eq(sim_best_split(&a, &b, 1, &t), 0);
    ck_assert(t == 10.0);
    uint64_t x = sim_best_split(&a, &b, 1000000, &t);
    ck_assert_uint_gt(x, 0);
    ck_assert_uint_lt(x, 1000000);
}
END_TEST

START_TEST(test_best_fixed_moves_crossing)
{
    /* 100 + x = 1100 - x at x = 500: both done at 600 */
    sim_server a = server(100, 1, 1), b = server(0, 1, 1);
    double t;
    ck_assert_uint_eq(sim_best_split(&a, &b, 1100, &t), 500);
    ck_assert(t == 600.0);
}
END_TEST

START_TEST(test_best_whole_messages)
{
    /* 16 messages of 16 MiB: the pool's threads take one each (7.66 ms),
     * the GPU 0.322 ms each: any share on the pool costs 7.66 ms, all on
     * the GPU 5.16 */
    sim_server gpu = server(10000, 322000, 1), pool = server(1500, 7660000, 16);
    double t;
    ck_assert(sim_finish_ns(&pool, 16) == 1500.0 + 7660000.0);
    ck_assert(sim_finish_ns(&pool, 17) == 1500.0 + 2 * 7660000.0);
    ck_assert(sim_finish_ns(&pool, 0) == 0.0);
    ck_assert_uint_eq(sim_best_split(&gpu, &pool, 16, &t), 16);
    ck_assert(t == 10000.0 + 16 * 322000.0);
    /* a GPU twice as slow per message: the pool alone is as early as
     * any split (the GPU would need 9.6 ms for all 16) */
    sim_server slower = server(10000, 600000, 1);
    sim_best_split(&slower, &pool, 16, &t);
    ck_assert(t == 1500.0 + 7660000.0);
}
END_TEST

/* ---- (b) costs and takes ------------------------------------------------ */

START_TEST(test_truth_lanes)
{
    /* a lane set of 16 costs 160 (+100 once); one at a time 30 each */
    sim_truth t = {terms_of(100, 10, 0), 16, terms_of(0, 30, 0)};
    ck_assert(sim_truth_cost(&t, 16, 16 * 64) == 100.0 + 160.0);
    ck_assert(sim_truth_cost(&t, 32, 32 * 64) == 100.0 + 320.0);
    ck_assert(sim_truth_cost(&t, 20, 20 * 64) == 100.0 + 160.0 + 4 * 30.0); /* 4 alone: 120 */
    ck_assert(sim_truth_cost(&t, 8, 8 * 64) == 100.0 + 160.0); /* 8 alone would be 240 */
    ck_assert(sim_truth_cost(&t, 1, 64) == 100.0 + 30.0);
    /* per byte: 4 messages of 1000 bytes, lanes at 0.25 ns/B, alone 0.5 */
    sim_truth b = {terms_of(0, 0, 0.25), 16, terms_of(0, 0, 0.5)};
    ck_assert(sim_truth_cost(&b, 4, 4000) == 2000.0); /* a set: 16 * 250 = 4000 */
    ck_assert(sim_truth_cost(&b, 16, 16000) == 4000.0);
    /* no lanes: affine */
    sim_truth a = {terms_of(100, 10, 0.5), 0, terms_of(0, 0, 0)};
    ck_assert(sim_truth_cost(&a, 3, 30) == 100.0 + 30.0 + 15.0);
}
END_TEST

START_TEST(test_gpu_terms_by_hand)
{
    sim_machine m;
    sim_machine_defaults(&m);
    /* ns per padded byte: 1/55 over the link, 1/(64 * 37) to compress
     * (37e9 blocks/s of 64 bytes), a 10 us launch per 16 MiB */
    double k = 1.0 / 55 + 1.0 / (64 * 37.0) + 10000.0 / (16 * 1048576.0);
    hb_cost_terms t = sim_gpu_terms(&m, 4096);
    assert_near(t.ns_per_byte, k, 1e-12, "per byte");
    assert_near(t.fixed_ns, 10000.0, 1e-12, "launch");
    /* 4096 bytes pad to 65 blocks (4160 bytes); its 20-byte digest back */
    assert_near(t.ns_per_message, 64 * k + 20.0 / 55, 1e-12, "4 KiB per message");
    assert_near(sim_cost(&t, 1, 4096), 10000 + 4160 * k + 20.0 / 55, 1e-12, "one 4 KiB");
    /* 64 bytes need a second block for the padding; 55 do not */
    assert_near(sim_gpu_terms(&m, 64).ns_per_message, 64 * k + 20.0 / 55, 1e-12, "64 B");
    assert_near(sim_gpu_terms(&m, 55).ns_per_message, 9 * k + 20.0 / 55, 1e-12, "55 B");
    assert_near(sim_gpu_terms(&m, 56).ns_per_message, 72 * k + 20.0 / 55, 1e-12, "56 B");
    /* about 52 GB/s on long messages: the link dominates */
    ck_assert(1.0 / k > 51.5 && 1.0 / k < 52.5);
}
END_TEST

START_TEST(test_pool_terms_by_hand)
{
    sim_machine m;
    sim_machine_defaults(&m);
    sim_truth t = sim_pool_truth(&m, 4096);
    ck_assert_uint_eq(t.lanes, 16);
    assert_near(t.terms.ns_per_byte, 1 / 3.9, 1e-12, "lanes at 4 KiB");
    assert_near(t.one.ns_per_byte, 1 / 2.16, 1e-12, "SHA-NI");
    assert_near(t.terms.fixed_ns, 1500, 1e-12, "a take");
    sim_truth s = sim_pool_truth(&m, 64);
    assert_near(s.terms.ns_per_message, 1000 / 16.75, 1e-12, "lanes at 64 B");
    assert_near(s.one.ns_per_message, 1000 / 20.0, 1e-12, "SHA-NI at 64 B");
    assert_near(sim_pool_truth(&m, 16u << 20).terms.ns_per_byte, 1 / 3.8, 1e-12, "16 MiB");
    /* one 16 MiB message alone: SHA-NI, not a set of lanes */
    sim_truth big = sim_pool_truth(&m, 16u << 20);
    assert_near(sim_truth_cost(&big, 1, 16u << 20), 1500 + 16777216 / 2.16, 1e-12, "one 16 MiB");

    /* the take limits the engine's rules give */
    sim_backend b[2];
    sim_machine_backends(&m, 4096, b);
    ck_assert_uint_eq(b[0].take.max_messages, 262144); /* 16 MiB / 1 KiB groups x 16 lanes */
    ck_assert_uint_eq(b[0].take.max_bytes, (uint64_t)64 << 20);
    ck_assert_uint_eq(b[0].take.long_above, (uint64_t)4 << 20);
    /* 200 us at 3.9 GB/s, 780,000 bytes (in 16 lane shares of 48,750,
     * both rounded down) */
    assert_near((double)b[1].take.max_bytes, 780000, 1e-4, "pool take bytes");
    assert_near((double)b[1].take.long_above, 48750, 1e-4, "pool long_above");
    ck_assert_uint_eq(b[1].take.max_messages, 3350); /* 200 us at 59.7 ns */
    ck_assert_uint_eq(b[1].take.share_among, 16);
    /* a lane step (262.6 ns) is worth 8.86 blocks by SHA-NI (29.6 ns) */
    ck_assert_uint_eq(b[1].take.share_below, 142);
    ck_assert_uint_eq(b[1].workers, 16);
    ck_assert_uint_eq(b[1].learn_min, 16);
}
END_TEST

START_TEST(test_take_count)
{
    sim_take t = {100, 1000, 500, 16, 0, 0};
    /* by bytes: 15 messages of 64 fit 1000 */
    ck_assert_uint_eq(sim_take_count(&t, 1000, 64, 1000, 64000), 15);
    /* by messages */
    ck_assert_uint_eq(sim_take_count(&t, 1000, 8, 1000, 64000), 100);
    /* the share cuts */
    ck_assert_uint_eq(sim_take_count(&t, 1000, 64, 5, 320), 5);
    ck_assert_uint_eq(sim_take_count(&t, 1000, 8, 1000, 80), 10);
    /* long messages: up to long_max, cut by the share's messages only */
    ck_assert_uint_eq(sim_take_count(&t, 1000, 600, 1000, 600), 16);
    ck_assert_uint_eq(sim_take_count(&t, 1000, 600, 3, 1), 3);
    /* a message longer than the byte budget still fits alone */
    sim_take wide = {100, 1000, 5000, 16, 0, 0};
    ck_assert_uint_eq(sim_take_count(&wide, 1000, 2000, 1000, 2000000), 1);
    /* the fair share: under 142 left, a 16th each, rounded up */
    sim_take fair = {100000, 1000000, 1000000, 16, 16, 142};
    ck_assert_uint_eq(sim_take_count(&fair, 100, 64, 100, 6400), 7);
    ck_assert_uint_eq(sim_take_count(&fair, 16, 64, 16, 1024), 1);
    ck_assert_uint_eq(sim_take_count(&fair, 142, 64, 142, 142 * 64), 142);
    /* nothing left, nothing taken; never less than one otherwise */
    ck_assert_uint_eq(sim_take_count(&fair, 0, 64, 1, 1), 0);
    ck_assert_uint_eq(sim_take_count(&t, 1, 64, 1, 1), 1);
}
END_TEST

/* ---- (c) runs in virtual time -------------------------------------------- */

START_TEST(test_run_equal_halves)
{
    sim_job job = {1000000, 64};
    hb_cost_terms t = terms_of(1000, 10, 0);
    run_against_hand(backend(t, 1, 1), backend(t, 1, 1), job, 0.5, "equal backends");
}
END_TEST

START_TEST(test_run_three_times_faster)
{
    sim_job job = {1000000, 64};
    run_against_hand(backend(terms_of(1000, 10, 0), 1, 1), backend(terms_of(1000, 30, 0), 1, 1),
                     job, 0.75, "3x faster, asking first");
    run_against_hand(backend(terms_of(1000, 30, 0), 1, 1), backend(terms_of(1000, 10, 0), 1, 1),
                     job, 0.25, "3x slower, asking first");
}
END_TEST

START_TEST(test_run_fixed_above_job)
{
    /* 50 messages cost b 500 ns; a's fixed cost is 1 ms: all on b */
    sim_job job = {50, 64};
    sim_backend a = backend(terms_of(1e6, 1, 0), 1, 1), b = backend(terms_of(0, 10, 0), 1, 1);
    sim_backend both[2] = {a, b};
    sim_result r;
    ck_assert_int_eq(sim_run(both, 2, job, NULL, &r), 0);
    ck_assert_uint_eq(r.messages[0], 0);
    ck_assert_uint_eq(r.messages[1], 50);
    ck_assert(r.makespan_ns == 500.0);
    ck_assert_uint_eq(r.batches[1], 1);
}
END_TEST

START_TEST(test_run_workers_and_takes)
{
    /* a pool of 8 workers at 80 ns a message (10 ns together), takes of
     * at most 1000 messages, against a device at 10 ns a message with a
     * 10 us launch holding 2 batches of at most 100,000: by hand the
     * split is where 10000 + 10x = 1000 + 80 (n - x) / 8, x = 499,550
     * (a couple more, as the pool's share rounds up to whole rounds) */
    sim_job job = {1000000, 64};
    sim_backend dev = backend(terms_of(10000, 10, 0), 1, 2);
    dev.take.max_messages = 100000;
    sim_backend pool = backend(terms_of(1000, 80, 0), 8, 1);
    pool.take.max_messages = 1000;
    sim_server sd = sim_server_of(&dev, 64), sp = sim_server_of(&pool, 64);
    double t;
    uint64_t x = sim_best_split(&sd, &sp, job.messages, &t);
    ck_assert_uint_ge(x, 499545);
    ck_assert_uint_le(x, 499555);
    run_against_hand(dev, pool, job, 0.49955, "device and pool");
    run_against_hand(pool, dev, job, 0.50045, "pool asking first");
}
END_TEST

START_TEST(test_run_refuses_bad_backends)
{
    sim_job job = {10, 64};
    sim_backend b[2] = {backend(terms_of(0, 1, 0), 1, 1), backend(terms_of(0, 1, 0), 0, 1)};
    sim_result r;
    ck_assert_int_eq(sim_run(b, 2, job, NULL, &r), -1); /* no workers */
    b[1].workers = 1;
    b[1].depth = SIM_MAX_DEPTH + 1;
    ck_assert_int_eq(sim_run(b, 2, job, NULL, &r), -1);
    b[1].depth = 1;
    b[1].take.max_messages = 0;
    ck_assert_int_eq(sim_run(b, 2, job, NULL, &r), -1);
    ck_assert_int_eq(sim_run(b, 0, job, NULL, &r), -1);
    b[1].take.max_messages = 1;
    ck_assert_int_eq(sim_run(b, 2, job, NULL, &r), 0);
    ck_assert_uint_eq(r.messages[0] + r.messages[1], 10);
}
END_TEST

START_TEST(test_run_machine_rows)
{
    /* the rows on the default machine: every message hashed once,
     * no run slower than twice the first backend alone would be, none
     * faster than the best split */
    const sim_job rows_here[] = {{65536, 4096},   {4096, 65536},   {1000000, 64},
                                 {256, 1u << 20}, {16, 16u << 20}, {1024, 64}};
    sim_machine m;
    sim_machine_defaults(&m);
    for (size_t i = 0; i < sizeof rows_here / sizeof rows_here[0]; i++) {
        sim_backend b[2];
        sim_result r;
        sim_machine_backends(&m, rows_here[i].length, b);
        ck_assert_int_eq(sim_run(b, 2, rows_here[i], NULL, &r), 0);
        ck_assert_uint_eq(r.messages[0] + r.messages[1], rows_here[i].messages);
        sim_server gpu = sim_server_of(&b[0], rows_here[i].length);
        sim_server pool = sim_server_of(&b[1], rows_here[i].length);
        double best;
        sim_best_split(&gpu, &pool, rows_here[i].messages, &best);
        ck_assert_msg(r.makespan_ns >= best * (1 - 1e-9), "row %zu: %.1f beats %.1f", i,
                      r.makespan_ns, best);
    }
}
END_TEST

/* ---- (d) the scheduler's time source ------------------------------------ */

typedef struct {
    uint64_t now;
} fake_clock;

static uint64_t read_fake(void *ctx)
{
    return ((fake_clock *)ctx)->now;
}

START_TEST(test_time_source_counts_backlog)
{
    fake_clock clock = {1000};
    hb_sched s;
    hb_cost_terms t[HB_COST_CLASSES];
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        t[c] = terms_of(1000, 10, 0.25);
    hb_sched_init(&s);
    hb_sched_set_time_source(&s, read_fake, &clock);
    unsigned a = hb_sched_add(&s, t, 1, 1, 1, 0);
    unsigned b = hb_sched_add(&s, t, 2, 1, 1, 0);
    /* a takes a batch of about 1 s (virtual): b gets all of a small job */
    double predicted = hb_sched_taken(&s, a, 1000000, 4000000000ull);
    ck_assert(predicted > 1e9);
    uint64_t m = 0, bytes = 0;
    ck_assert_int_eq(hb_sched_share(&s, b, 1000, 1000 * 4096, 0, &m, &bytes), 1);
    ck_assert_uint_eq(m, 1000);
    /* 2 s later in the simulation's time (microseconds in the machine's),
     * a's backlog is over: the job is shared again */
    clock.now += 2000000000u;
    ck_assert_int_eq(hb_sched_share(&s, b, 1000, 1000 * 4096, 0, &m, &bytes), 1);
    ck_assert_msg(m >= 450 && m <= 550, "share after the backlog: %llu", (unsigned long long)m);
    /* done in virtual time: a's model learns the virtual duration */
    ck_assert_int_eq(hb_sched_done(&s, a, 1000000, 4000000000ull, predicted, predicted), 0);
    hb_sched_set_time_source(&s, NULL, NULL); /* hb_now_ns again */
    ck_assert_int_eq(hb_sched_share(&s, b, 1000, 1000 * 4096, 0, &m, &bytes), 1);
    ck_assert_msg(m >= 450 && m <= 550, "share on the real clock: %llu", (unsigned long long)m);
    hb_sched_destroy(&s);
}
END_TEST

static Suite *sched_sim_suite(void)
{
    Suite *s = suite_create("sched_sim");
    TCase *best = tcase_create("best_split");
    tcase_add_test(best, test_best_equal_halves);
    tcase_add_test(best, test_best_three_times_faster);
    tcase_add_test(best, test_best_fixed_above_job);
    tcase_add_test(best, test_best_fixed_moves_crossing);
    tcase_add_test(best, test_best_whole_messages);
    suite_add_tcase(s, best);
    TCase *costs = tcase_create("costs");
    tcase_add_test(costs, test_truth_lanes);
    tcase_add_test(costs, test_gpu_terms_by_hand);
    tcase_add_test(costs, test_pool_terms_by_hand);
    tcase_add_test(costs, test_take_count);
    suite_add_tcase(s, costs);
    TCase *runs = tcase_create("runs");
    tcase_add_test(runs, test_run_equal_halves);
    tcase_add_test(runs, test_run_three_times_faster);
    tcase_add_test(runs, test_run_fixed_above_job);
    tcase_add_test(runs, test_run_workers_and_takes);
    tcase_add_test(runs, test_run_refuses_bad_backends);
    tcase_add_test(runs, test_run_machine_rows);
    tcase_add_test(runs, test_time_source_counts_backlog);
    suite_add_tcase(s, runs);
    return s;
}

int main(void)
{
    /* nothing here opens an engine; should that change, the user's model
     * cache stays untouched */
    setenv("HASHBATCH_MODEL_CACHE", "off", 1);
    return tu_run_suite(sched_sim_suite());
}
