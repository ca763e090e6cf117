/*
 * test_long_share.c - a few long messages shared among CPU threads, moved
 * between the lanes and SHA-NI mid-message (host/src/long_share.h).
 *
 * Covers, for every multi-buffer implementation this CPU runs: lists of
 * 2, 3, 15 and 16 (up to the lanes) messages of unequal, odd lengths,
 * hashed by an owner with 0, 1 and 3 helper threads that join through a
 * real queue, against OpenSSL; that a helper that joined did hash part of
 * the messages (so streams did move); each broken kernel (a lane, all
 * lanes, a carried state) caught by the rounds' checks; a stop asked
 * mid-list ends it, with the helpers gone back to their queue; and the
 * engine's default path (its pool shares a job of 16 long messages),
 * digests right and the moved bytes counted within the job's bytes.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_testing.h"
#include "long_share.h"
#include "mb/mb_costs.h"
#include "mb/mb_impl.h"
#include "queue.h"
#include "test_util.h"

static const hb_cpu_impl impls[] = {HB_CPU_IMPL_AVX512, HB_CPU_IMPL_AVX2, HB_CPU_IMPL_PORTABLE};
#define NIMPLS ((int)(sizeof impls / sizeof impls[0]))
#define MAX_HELPERS 3

/* Why test_engine_shares_a_job cannot run here (NULL: it runs). */
static const char *engine_not_run(void)
{
    if (tu_forced_cpu_impl() != NULL)
        return "an implementation is forced";
    return hb_cpu_impl_default() == HB_CPU_IMPL_SHA_NI ? "SHA-NI is the default here" : NULL;
}

/* Pool threads as the engine has them: each waits on the queue and helps
 * with what it is offered, until the queue closes. */
typedef struct {
    hb_queue queue;
    pthread_t thread[MAX_HELPERS];
    unsigned count;
    pthread_mutex_t lock;
    unsigned joins;              /* offers joined so far */
    unsigned unexpected_batches; /* batches taken: there should be none */
} helper_pool;

static void *helper_main(void *arg)
{
    helper_pool *p = arg;
    hb_take_limits limits;
    memset(&limits, 0, sizeof limits);
    limits.max_bytes = 1;
    limits.max_messages = 1;
    for (;;) {
        hb_help_offer *joined;
        hb_batch *b = hb_queue_take_or_help(&p->queue, &limits, &joined);
        pthread_mutex_lock(&p->lock);
        p->unexpected_batches += b != NULL; /* no job is ever queued here */
        p->joins += joined != NULL;
        pthread_mutex_unlock(&p->lock);
        if (joined == NULL)
            return NULL; /* closed (or a batch: counted, and the test fails) */
        joined->help(joined->ctx);
    }
}

static void pool_start(helper_pool *p, unsigned count)
{
    hb_queue_init(&p->queue, 1);
    pthread_mutex_init(&p->lock, NULL);
    p->count = count;
    p->joins = p->unexpected_batches = 0;
    for (unsigned k = 0; k < count; k++)
        ck_assert_int_eq(pthread_create(&p->thread[k], NULL, helper_main, p), 0);
}

static void pool_stop(helper_pool *p)
{
    hb_queue_close(&p->queue);
    hb_queue_fallbacks_final(&p->queue); /* no device here: pool threads may leave */
    for (unsigned k = 0; k < p->count; k++)
        pthread_join(p->thread[k], NULL);
    hb_queue_destroy(&p->queue);
    pthread_mutex_destroy(&p->lock);
}

/* n messages, each at least the shared minimum, unequal and not whole
 * blocks, so streams end in different rounds and every tail differs. */
static void long_messages_from(tu_msgset *s, hb_cpu_impl impl, size_t n, size_t shortest,
                               uint64_t seed)
{
    size_t lens[HB_MB_LANES_MAX];
    tu_rng r;
    tu_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        lens[i] = shortest + tu_rng_below(&r, shortest) + (i * 7 + 1) % 64;
    tu_msgset_from_lengths(s, lens, n, seed);
    ck_assert(hb_long_share_worth(impl, 1, s->m, n));
}

static void long_messages(tu_msgset *s, hb_cpu_impl impl, size_t n, uint64_t seed)
{
    long_messages_from(s, impl, n, (size_t)hb_long_share_min_bytes(impl), seed);
}

static int skip_if_absent(hb_cpu_impl impl)
{
    if (hb_cpu_impl_runnable(impl))
        return 0;
    fprintf(stderr, "long share: %s does not run on this CPU, not tested\n",
            hb_cpu_impl_describe(impl)->name);
    ck_assert_int_ne(impl, HB_CPU_IMPL_PORTABLE);
    return 1;
}

/* Shares s among an owner (this thread) and `helpers` threads, waiting
 * for them all to join first. Returns the result; *done what it said. */
static hb_long_share_result share_list(hb_cpu_impl impl, const tu_msgset *s, unsigned helpers,
                                       hb_mb_check *check, hb_cpu_watch *w, hb_digest *got,
                                       int *done)
{
    helper_pool pool;
    pool_start(&pool, helpers);
    /* no more helpers join than there are streams for, less the owner's */
    unsigned joining = helpers < s->n - 1 ? helpers : (unsigned)(s->n - 1);
    hb_long_share_setup setup = {&pool.queue, helpers, impl, check, joining};
    hb_long_share_result res;
    memset(&res, 0xa5, sizeof res);
    *done = hb_long_share_hash(&setup, s->m, s->n, got, w, &res);
    pool_stop(&pool);
    ck_assert_uint_ge(pool.joins, joining);
    ck_assert_uint_eq(pool.unexpected_batches, 0);
    return res;
}

START_TEST(test_lists_right)
{
    hb_cpu_impl impl = impls[_i];
    if (skip_if_absent(impl))
        return;
    unsigned lanes = hb_cpu_impl_describe(impl)->lanes;
    size_t counts[] = {2, 3, lanes - 1, lanes};
    unsigned helpers[] = {0, 1, 3};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        for (size_t h = 0; h < sizeof helpers / sizeof helpers[0]; h++) {
            tu_msgset s;
            long_messages(&s, impl, counts[c], 0x10a9 + c * 8 + h);
            hb_digest *got = tu_digests(s.n);
            hb_mb_check check = {0};
            int done;
            hb_long_share_result res = share_list(impl, &s, helpers[h], &check, NULL, got, &done);
            char what[96];
            snprintf(what, sizeof what, "%s, %zu messages, %u helpers",
                     hb_cpu_impl_describe(impl)->name, s.n, helpers[h]);
            ck_assert_msg(done, "%s: not done", what);
            tu_assert_digests(s.m, s.n, s.want, got, what);
            ck_assert_uint_eq(check.mismatches, 0);
            ck_assert_uint_le(res.helper_bytes, s.total_bytes);
            if (helpers[h] == 0)
                ck_assert_uint_eq(res.helper_bytes, 0);
            free(got);
            tu_msgset_free(&s);
        }
    }
}
END_TEST

/* With a helper in from the first round, part of the bytes are its: the
 * streams it held moved from the lanes to SHA-NI and back, mid-message,
 * and still hash right (test_lists_right). */
START_TEST(test_helper_hashes_part)
{
    hb_cpu_impl impl = impls[_i];
    if (skip_if_absent(impl))
        return;
    /* three streams of twenty rounds or more: the helper, woken at the
     * first, has many rounds in which to run (a helper never scheduled
     * would hash nothing, which is right but shows no move) */
    tu_msgset s;
    long_messages_from(&s, impl, 3, 10 * (size_t)hb_long_share_min_bytes(impl), 0x4e1f);
    hb_digest *got = tu_digests(s.n);
    int done;
    /* lanes for the owner's streams, even where OpenSSL is cheaper for so
     * few (the portable lanes, a sanitized build) */
    ck_assert_int_eq(hb_testing_set_lanes_forced(1), HB_OK);
    hb_long_share_result res = share_list(impl, &s, 1, NULL, NULL, got, &done);
    ck_assert_int_eq(hb_testing_set_lanes_forced(0), HB_OK);
    ck_assert(done);
    tu_assert_digests(s.m, s.n, s.want, got, "one helper");
    ck_assert_uint_gt(res.helper_bytes, 0);
    ck_assert_uint_lt(res.helper_bytes, s.total_bytes);
    ck_assert_uint_eq(res.from_lanes, s.n);
    fprintf(stderr, "%s: the helper hashed %.1f%% of %zu bytes\n", hb_cpu_impl_describe(impl)->name,
            100.0 * (double)res.helper_bytes / (double)s.total_bytes, s.total_bytes);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

/* Each broken kernel is caught by the rounds' checks, with helpers in. */
START_TEST(test_broken_kernels_caught)
{
    hb_cpu_impl impl = impls[_i];
    if (skip_if_absent(impl))
        return;
    unsigned lanes = hb_cpu_impl_describe(impl)->lanes;
    hb_mb_break_kind kinds[] = {HB_MB_BREAK_LANE, HB_MB_BREAK_ALL_LANES, HB_MB_BREAK_CARRY};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        tu_msgset s;
        long_messages(&s, impl, lanes, 0xb4e0 + k);
        hb_digest *got = tu_digests(s.n);
        hb_mb_check check = {0};
        check.brk = kinds[k];
        check.brk_which = 0; /* the first lane: the owner runs it every round */
        int done;
        ck_assert_int_eq(hb_testing_set_lanes_forced(1), HB_OK); /* as above */
        share_list(impl, &s, 1, &check, NULL, got, &done);
        ck_assert_int_eq(hb_testing_set_lanes_forced(0), HB_OK);
        ck_assert(done);
        ck_assert_msg(check.mismatches > 0, "%s: break kind %d not caught",
                      hb_cpu_impl_describe(impl)->name, (int)kinds[k]);
        ck_assert_uint_gt(check.runs, 0);
        free(got);
        tu_msgset_free(&s);
    }
}
END_TEST

static int stop_at_once(void *ctx, uint64_t bytes)
{
    (void)bytes;
    int *asked = ctx;
    (*asked)++;
    return 0;
}

/* A stop asked at the first report ends the list; the helpers leave and
 * go back to their queue (pool_stop joins them). */
START_TEST(test_stop_mid_list)
{
    hb_cpu_impl impl = impls[_i];
    if (skip_if_absent(impl))
        return;
    /* long enough that the watcher is asked (every HB_CPU_PIECE_BYTES) */
    size_t n = hb_cpu_impl_describe(impl)->lanes;
    size_t shortest = (size_t)hb_long_share_min_bytes(impl);
    if (shortest < 4 * HB_CPU_PIECE_BYTES / n)
        shortest = 4 * HB_CPU_PIECE_BYTES / n;
    tu_msgset s;
    long_messages_from(&s, impl, n, shortest, 0x5709);
    hb_digest *got = tu_digests(s.n);
    int asked = 0, done;
    hb_cpu_watch w = {stop_at_once, &asked, 0, 0};
    share_list(impl, &s, 2, NULL, &w, got, &done);
    ck_assert_int_eq(done, 0);
    ck_assert_int_gt(asked, 0);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

/* The engine's default path: a job of a lane group's long messages is one take,
 * shared by the pool's threads; digests right, the moved bytes counted. */
START_TEST(test_engine_shares_a_job)
{
    hb_config cfg;
    tu_config(&cfg, HB_BACKEND_CPU);
    cfg.cpu_threads = 2;
    hb_cpu_impl impl = hb_cpu_impl_default();
    if (engine_not_run() != NULL)
        return; /* main says why, and the suite is skipped */
    hb_engine *e = tu_open_cfg(&cfg);
    tu_msgset s;
    long_messages(&s, impl, hb_cpu_impl_describe(impl)->lanes, 0xe961);
    hb_digest *got = tu_digests(s.n);
    tu_batch(e, s.m, s.n, got);
    tu_assert_digests(s.m, s.n, s.want, got, "engine, 16 long messages");
    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    ck_assert_uint_le(st.cpu_moved_bytes, s.total_bytes);
    ck_assert_uint_eq(st.verify_mismatches, 0);
    fprintf(stderr, "engine: %" PRIu64 " of %zu bytes moved to SHA-NI mid-message\n",
            st.cpu_moved_bytes, s.total_bytes);
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

static Suite *share_suite(void)
{
    Suite *s = suite_create("long_share");
    TCase *tc = tcase_create("share");
    tcase_set_timeout(tc, 240);
    tcase_add_loop_test(tc, test_lists_right, 0, NIMPLS);
    tcase_add_loop_test(tc, test_helper_hashes_part, 0, NIMPLS);
    tcase_add_loop_test(tc, test_broken_kernels_caught, 0, NIMPLS);
    tcase_add_loop_test(tc, test_stop_mid_list, 0, NIMPLS);
    tcase_add_test(tc, test_engine_shares_a_job);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    int rc = tu_run_suite(share_suite());
    int not_run = 0;
    for (int k = 0; k < NIMPLS; k++)
        if (!hb_cpu_impl_runnable(impls[k]))
            fprintf(stderr, "%s %s",
                    not_run++ ? "," : "SKIP: test_long_share: not tested on this CPU:",
                    hb_cpu_impl_describe(impls[k])->name);
    if (engine_not_run() != NULL)
        fprintf(stderr, "%s the engine's own share (%s)",
                not_run++ ? "," : "SKIP: test_long_share:", engine_not_run());
    if (not_run > 0)
        fprintf(stderr, "\n");
    return rc == 0 && not_run > 0 ? 77 : rc;
}
