/*
 * test_mb_streams.c - messages hashed in pieces side by side through the
 * CPU implementations' lanes (mb/mb_streams.h), against OpenSSL.
 *
 * Covers, for every implementation this CPU runs (sha-ni included: it is
 * the one-by-one path): many messages of random lengths fed in rounds of
 * pieces (whole blocks, then the rest at the end), as files are read, so
 * messages end at different rounds and lanes fall idle while others go
 * on; more messages than lanes in one update (groups); messages that end
 * on a block boundary, at 0 bytes, or with a last piece of many blocks;
 * one message alone; pieces at odd offsets in memory. The oracle is
 * OpenSSL's SHA1() on the whole message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb/mb_impl.h"
#include "mb/mb_streams.h"
#include "test_util.h"

#define MAX_STREAMS 40

typedef struct {
    size_t n, piece;
    uint8_t *msg[MAX_STREAMS];
    size_t len[MAX_STREAMS], done[MAX_STREAMS];
    int finished[MAX_STREAMS];
    hb_mb_stream s[MAX_STREAMS];
    hb_digest got[MAX_STREAMS];
} stream_set;

/* One round: every unfinished message's next piece; those whose piece is
 * short (their end) get their rest and digest. */
static void round_of(hb_cpu_impl impl, stream_set *t)
{
    hb_mb_stream *sp[MAX_STREAMS];
    const uint8_t *dp[MAX_STREAMS];
    size_t lp[MAX_STREAMS], m = 0;
    for (size_t k = 0; k < t->n; k++) {
        if (t->finished[k])
            continue;
        size_t left = t->len[k] - t->done[k];
        size_t take = left < t->piece ? left : t->piece;
        size_t whole = take & ~(size_t)63;
        if (whole > 0)
            sp[m] = &t->s[k], dp[m] = t->msg[k] + t->done[k], lp[m] = whole, m++;
    }
    hb_mb_streams_update(impl, sp, dp, lp, m);
    for (size_t k = 0; k < t->n; k++) {
        if (t->finished[k])
            continue;
        size_t left = t->len[k] - t->done[k];
        size_t take = left < t->piece ? left : t->piece;
        t->done[k] += take & ~(size_t)63;
        if (take < t->piece) {
            hb_mb_stream_final(&t->s[k], t->msg[k] + t->done[k], t->len[k] - t->done[k], t->got[k]);
            t->finished[k] = 1;
        }
    }
}

static int all_finished(const stream_set *t)
{
    for (size_t k = 0; k < t->n; k++)
        if (!t->finished[k])
            return 0;
    return 1;
}

/* Hashes n messages of the given lengths in pieces of `piece` bytes (a
 * multiple of 64) and checks each digest against OpenSSL. */
static void check_streams(hb_cpu_impl impl, const size_t *lens, size_t n, size_t piece,
                          uint64_t seed, const char *what)
{
    stream_set *t = calloc(1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    tu_rng r;
    tu_rng_seed(&r, seed);
    t->n = n, t->piece = piece;
    uint8_t *alloc[MAX_STREAMS];
    for (size_t k = 0; k < n; k++) {
        size_t offset = k % 7; /* pieces at odd addresses */
        alloc[k] = malloc(lens[k] + offset + 1);
        ck_assert_ptr_nonnull(alloc[k]);
        t->msg[k] = alloc[k] + offset;
        t->len[k] = lens[k];
        tu_rng_fill(&r, t->msg[k], lens[k]);
        hb_mb_stream_init(&t->s[k]);
    }
    while (!all_finished(t))
        round_of(impl, t);
    for (size_t k = 0; k < n; k++) {
        hb_digest want;
        tu_sha1(t->msg[k], lens[k], want);
        ck_assert_msg(memcmp(want, t->got[k], 20) == 0,
                      "%s, %s: message %zu of %zu (%zu bytes, pieces of %zu): wrong digest",
                      hb_cpu_impl_describe(impl)->name, what, k, n, lens[k], piece);
        free(alloc[k]);
    }
    free(t);
}

START_TEST(test_random_rounds)
{
    hb_cpu_impl impl = (hb_cpu_impl)_i;
    if (!hb_cpu_impl_runnable(impl)) {
        fprintf(stderr, "%s does not run on this CPU: not tested\n",
                hb_cpu_impl_describe(impl)->name);
        ck_assert_int_ne(impl, HB_CPU_IMPL_PORTABLE); /* always built, always runs */
        return;
    }
    tu_rng r;
    tu_rng_seed(&r, 0x5eed + (uint64_t)_i);
    for (int trial = 0; trial < 60; trial++) {
        size_t n = 1 + tu_rng_below(&r, MAX_STREAMS), lens[MAX_STREAMS];
        size_t piece = 64 * (1 + tu_rng_below(&r, 64));
        for (size_t k = 0; k < n; k++)
            lens[k] = tu_rng_below(&r, 6 * piece + 200);
        check_streams(impl, lens, n, piece, tu_rng_next(&r), "random lengths");
    }
}
END_TEST

START_TEST(test_edges)
{
    hb_cpu_impl impl = (hb_cpu_impl)_i;
    if (!hb_cpu_impl_runnable(impl))
        return; /* test_random_rounds says so */
    const size_t boundaries[] = {0, 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 4096, 4097};
    size_t n = sizeof boundaries / sizeof boundaries[0];
    check_streams(impl, boundaries, n, 64, 1, "block boundaries, one block per round");
    check_streams(impl, boundaries, n, 4096, 2, "block boundaries, one round");
    size_t alone = 1 << 20;
    check_streams(impl, &alone, 1, 64 * 1024, 3, "one message alone");
    size_t equal[MAX_STREAMS];
    for (size_t k = 0; k < MAX_STREAMS; k++)
        equal[k] = 100000;
    check_streams(impl, equal, MAX_STREAMS, 8192, 4, "more messages than lanes, equal lengths");
    size_t mixed[17];
    for (size_t k = 0; k < 17; k++)
        mixed[k] = k == 0 ? 3000000 : 64 * k; /* one long beside short ones */
    check_streams(impl, mixed, 17, 1 << 20, 5, "one long beside short ones");
}
END_TEST

static Suite *streams_suite(void)
{
    Suite *s = suite_create("mb_streams");
    TCase *tc = tcase_create("streams");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_random_rounds, 0, HB_CPU_IMPL_COUNT);
    tcase_add_loop_test(tc, test_edges, 0, HB_CPU_IMPL_COUNT);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(streams_suite());
}
