/*
 * test_random.c - many random messages per backend, against OpenSSL.
 *
 * Covers: 100,000 messages of random length 0..20,000 bytes (about 1 GB)
 * in one batch and the same set split into uneven batches; every verify
 * mode (off, sample, full) giving correct digests and plausible
 * verification counters; input order kept when lengths come ascending,
 * descending, alternating long/short and shuffled (the engine buckets by
 * length internally); several threads hashing on one engine at once.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#define BIG_N 100000
#define BIG_MAXLEN 20000

static void big_set(tu_msgset *s)
{
    double t0 = tu_now();
    tu_msgset_random(s, BIG_N, BIG_MAXLEN, 20000);
    fprintf(stderr, "random set: %zu messages, %zu bytes, oracle %.2f s\n",
            s->n, s->total_bytes, tu_now() - t0);
}

START_TEST(test_big_one_batch)
{
    hb_backend_kind kind = tu_backends[_i];
    tu_msgset s;
    big_set(&s);
    hb_digest *got = tu_digests(s.n);
    hb_engine *e = tu_open(kind);
    double t0 = tu_now();
    tu_batch(e, s.m, s.n, got);
    double dt = tu_now() - t0;
    fprintf(stderr, "%s: one batch of %zu messages in %.2f s (%.0f MB/s)\n",
            hb_backend_name(kind), s.n, dt, (double)s.total_bytes / dt / 1e6);
    tu_assert_digests(s.m, s.n, s.want, got, "100k random, one batch");

    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    ck_assert_uint_eq(st.messages, s.n);
    ck_assert_uint_eq(st.bytes, s.total_bytes);
    /* One hb_sha1_batch call is one job; batches are the engine's own. */
    ck_assert_uint_eq(st.jobs_completed, 1);
    ck_assert_uint_ge(st.batches, 1);
    tu_assert_clean(e);
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

START_TEST(test_big_split)
{
    hb_backend_kind kind = tu_backends[_i];
    /* Uneven cut points: a single message, a small batch, big ones. */
    static const size_t cuts[] = {0, 1, 1000, 40000, 99999, BIG_N};
    const size_t ncuts = sizeof cuts / sizeof cuts[0];
    tu_msgset s;
    big_set(&s);
    hb_digest *got = tu_digests(s.n);
    hb_engine *e = tu_open(kind);
    for (size_t c = 0; c + 1 < ncuts; c++)
        tu_batch(e, s.m + cuts[c], cuts[c + 1] - cuts[c], got + cuts[c]);
    tu_assert_digests(s.m, s.n, s.want, got, "100k random, split");

    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    ck_assert_uint_eq(st.messages, s.n);
    ck_assert_uint_eq(st.bytes, s.total_bytes);
    ck_assert_uint_eq(st.jobs_completed, ncuts - 1);
    ck_assert_uint_ge(st.batches, 1);
    tu_assert_clean(e);
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

static const hb_verify_mode verify_modes[] = {HB_VERIFY_OFF, HB_VERIFY_SAMPLE,
                                              HB_VERIFY_FULL};

/* Loop index: backend * 3 + verify mode. */
START_TEST(test_verify_modes)
{
    hb_backend_kind kind = tu_backends[_i / 3];
    hb_verify_mode mode = verify_modes[_i % 3];
    const size_t n = 10000;
    tu_msgset s;
    tu_msgset_random(&s, n, BIG_MAXLEN, 3000 + (uint64_t)_i);
    hb_config cfg;
    tu_config(&cfg, kind);
    cfg.verify = mode;
    hb_engine *e = tu_open_cfg(&cfg);
    hb_digest *got = tu_digests(n);
    tu_batch(e, s.m, n, got);
    char what[96];
    snprintf(what, sizeof what, "verify %s via %s", hb_verify_name(mode),
             hb_backend_name(kind));
    tu_assert_digests(s.m, n, s.want, got, what);

    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    ck_assert_uint_eq(st.messages, n);
    ck_assert_uint_eq(st.verify_mismatches, 0);
    ck_assert_uint_le(st.verified, n);
    if (kind == HB_BACKEND_OPENCL) {
        if (mode == HB_VERIFY_OFF)
            ck_assert_uint_eq(st.verified, 0);
        else if (mode == HB_VERIFY_FULL)
            ck_assert_uint_eq(st.verified, n);
        else
            ck_assert_msg(st.verified >= 1 && st.verified < n,
                          "verify sample checked %llu of %zu messages",
                          (unsigned long long)st.verified, n);
    }
    tu_assert_clean(e);
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

enum { ORDER_ASCENDING, ORDER_DESCENDING, ORDER_ALTERNATING, ORDER_SHUFFLED,
       ORDER_COUNT };
static const char *const order_names[] = {"ascending", "descending",
                                          "alternating", "shuffled"};

/* order_lengths: n lengths spread over 0..BIG_MAXLEN in the given order. */
static void order_lengths(size_t *lens, size_t n, int order, tu_rng *r)
{
    for (size_t i = 0; i < n; i++)
        lens[i] = i * BIG_MAXLEN / (n - 1);
    if (order == ORDER_DESCENDING) {
        for (size_t i = 0; i < n / 2; i++) {
            size_t t = lens[i];
            lens[i] = lens[n - 1 - i];
            lens[n - 1 - i] = t;
        }
    } else if (order == ORDER_ALTERNATING) {
        for (size_t i = 0; i < n; i++)
            lens[i] = (i % 2) ? (i / 2) * BIG_MAXLEN / (n - 1)
                              : BIG_MAXLEN - (i / 2) * BIG_MAXLEN / (n - 1);
    } else if (order == ORDER_SHUFFLED) {
        tu_shuffle_sizes(r, lens, n);
    }
}

/* Loop index: backend * ORDER_COUNT + order. */
START_TEST(test_input_order_kept)
{
    hb_backend_kind kind = tu_backends[_i / ORDER_COUNT];
    int order = _i % ORDER_COUNT;
    const size_t n = 5001;
    size_t *lens = malloc(n * sizeof *lens);
    ck_assert_ptr_nonnull(lens);
    tu_rng r;
    tu_rng_seed(&r, 77 + (uint64_t)order);
    order_lengths(lens, n, order, &r);
    tu_msgset s;
    tu_msgset_from_lengths(&s, lens, n, 4000 + (uint64_t)order);
    hb_digest *got = tu_digests(n);
    hb_engine *e = tu_open(kind);
    tu_batch(e, s.m, n, got);
    char what[96];
    snprintf(what, sizeof what, "%s lengths via %s", order_names[order],
             hb_backend_name(kind));
    tu_assert_digests(s.m, n, s.want, got, what);
    tu_assert_clean(e);
    hb_engine_close(e);
    free(got);
    free(lens);
    tu_msgset_free(&s);
}
END_TEST

#define NTHREADS 4
#define ROUNDS 5

typedef struct {
    hb_engine *e;
    tu_msgset set;
    hb_digest *got;
    hb_status first_error;
    size_t wrong;
} worker;

/* worker_main: hashes its set ROUNDS times; no Check calls off the main
 * thread, results are checked after the join. */
static void *worker_main(void *arg)
{
    worker *w = arg;
    w->first_error = HB_OK;
    for (int round = 0; round < ROUNDS; round++) {
        hb_status st = hb_sha1_batch(w->e, w->set.m, w->set.n, w->got);
        if (st != HB_OK) {
            w->first_error = st;
            return NULL;
        }
        w->wrong += tu_count_mismatches(w->set.m, w->set.n, w->set.want,
                                        w->got, "threaded");
    }
    return NULL;
}

START_TEST(test_threads_share_engine)
{
    hb_backend_kind kind = tu_backends[_i];
    hb_engine *e = tu_open(kind);
    worker w[NTHREADS];
    pthread_t t[NTHREADS];
    uint64_t total_msgs = 0, total_bytes = 0;
    for (int i = 0; i < NTHREADS; i++) {
        w[i].e = e;
        w[i].wrong = 0;
        /* Different sizes per thread, so batches differ in shape. */
        tu_msgset_random(&w[i].set, 500 + 700 * (size_t)i,
                         100 + 2000 * (size_t)i, 5000 + (uint64_t)i);
        w[i].got = tu_digests(w[i].set.n);
        total_msgs += ROUNDS * w[i].set.n;
        total_bytes += ROUNDS * w[i].set.total_bytes;
    }
    for (int i = 0; i < NTHREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < NTHREADS; i++) {
        ck_assert_msg(w[i].first_error == HB_OK, "thread %d: %s (%s)", i,
                      hb_status_name(w[i].first_error),
                      hb_engine_last_error(e));
        ck_assert_msg(w[i].wrong == 0, "thread %d: %zu wrong digests", i,
                      w[i].wrong);
    }
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    ck_assert_uint_eq(st.messages, total_msgs);
    ck_assert_uint_eq(st.bytes, total_bytes);
    ck_assert_uint_eq(st.jobs_completed, NTHREADS * ROUNDS);
    ck_assert_uint_eq(st.jobs_submitted, NTHREADS * ROUNDS);
    tu_assert_clean(e);
    hb_engine_close(e);
    for (int i = 0; i < NTHREADS; i++) {
        free(w[i].got);
        tu_msgset_free(&w[i].set);
    }
}
END_TEST

static Suite *random_suite(void)
{
    Suite *s = suite_create("random");
    int nb = (int)tu_backend_count;

    TCase *tc = tcase_create("big");
    tcase_set_timeout(tc, 400);
    tcase_add_loop_test(tc, test_big_one_batch, 0, nb);
    tcase_add_loop_test(tc, test_big_split, 0, nb);
    suite_add_tcase(s, tc);

    tc = tcase_create("verify");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_verify_modes, 0, nb * 3);
    suite_add_tcase(s, tc);

    tc = tcase_create("order");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_input_order_kept, 0, nb * ORDER_COUNT);
    suite_add_tcase(s, tc);

    tc = tcase_create("threads");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_threads_share_engine, 0, nb);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(random_suite());
}
