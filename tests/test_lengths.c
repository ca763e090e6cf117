/*
 * test_lengths.c - every message length from 0 to 1100 bytes, per backend.
 *
 * Covers: padding at every offset within a block and across the 55/56/64
 * byte boundaries and their multiples, as one batch of all 1101 lengths,
 * as 1101 batches of one message, and as one batch of prefixes of one
 * buffer (so a digest swapped between neighbouring lengths shows). And
 * batches of few long messages (1, 2, 15, 16, 17, 31 and 33 of about
 * 300 KiB, or of the length from which the pool moves streams between
 * lanes and SHA-NI mid-message (long_share.h), one length and mixed): the
 * pool shares them among its cores and hashes each take in whichever
 * lanes or OpenSSL cost least (or in the implementation a cpu_impl rerun
 * forces). Random content; OpenSSL
 * is the oracle.
 */
#include <stdio.h>
#include <stdlib.h>

#include "long_share.h"
#include "mb/mb_costs.h"
#include "test_util.h"

#define MAX_LEN 1100
#define NLENS (MAX_LEN + 1)

static void lengths_set(tu_msgset *s, uint64_t seed)
{
    size_t *lens = malloc(NLENS * sizeof *lens);
    ck_assert_ptr_nonnull(lens);
    for (size_t i = 0; i < NLENS; i++)
        lens[i] = i;
    tu_msgset_from_lengths(s, lens, NLENS, seed);
    free(lens);
}

static void label(char *buf, size_t cap, const char *what, hb_backend_kind k)
{
    snprintf(buf, cap, "lengths 0..%d %s via %s", MAX_LEN, what,
             hb_backend_name(k));
}

START_TEST(test_all_lengths_one_batch)
{
    hb_backend_kind kind = tu_backends[_i];
    tu_msgset s;
    char what[96];
    lengths_set(&s, 1001);
    hb_digest *got = tu_digests(s.n);
    hb_engine *e = tu_open(kind);
    tu_batch(e, s.m, s.n, got);
    label(what, sizeof what, "in one batch", kind);
    tu_assert_digests(s.m, s.n, s.want, got, what);
    tu_assert_clean(e);
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

START_TEST(test_each_length_alone)
{
    hb_backend_kind kind = tu_backends[_i];
    tu_msgset s;
    char what[96];
    lengths_set(&s, 1002);
    hb_digest *got = tu_digests(s.n);
    hb_engine *e = tu_open(kind);
    for (size_t i = 0; i < s.n; i++)
        tu_batch(e, &s.m[i], 1, &got[i]);
    label(what, sizeof what, "one per batch", kind);
    tu_assert_digests(s.m, s.n, s.want, got, what);
    tu_assert_clean(e);
    hb_engine_close(e);
    free(got);
    tu_msgset_free(&s);
}
END_TEST

/* Prefixes of one random buffer, longest first: neighbours share all but
 * one byte, so a lane mix-up or an off-by-one length is caught. */
START_TEST(test_prefixes_one_batch)
{
    hb_backend_kind kind = tu_backends[_i];
    uint8_t *buf = malloc(MAX_LEN);
    hb_msg *m = calloc(NLENS, sizeof *m);
    ck_assert_ptr_nonnull(buf);
    ck_assert_ptr_nonnull(m);
    tu_rng r;
    tu_rng_seed(&r, 1003);
    tu_rng_fill(&r, buf, MAX_LEN);
    for (size_t i = 0; i < NLENS; i++) {
        m[i].data = buf;
        m[i].len = MAX_LEN - i;
    }
    hb_digest *want = tu_oracle(m, NLENS);
    hb_digest *got = tu_digests(NLENS);
    hb_engine *e = tu_open(kind);
    tu_batch(e, m, NLENS, got);
    char what[96];
    label(what, sizeof what, "prefixes of one buffer", kind);
    tu_assert_digests(m, NLENS, want, got, what);
    tu_assert_clean(e);
    hb_engine_close(e);
    free(got);
    free(want);
    free(m);
    free(buf);
}
END_TEST

/* (loop: backend x one length or mixed x about 300 KiB or long enough
 * for the pool to share mid-message) few long messages per batch. */
START_TEST(test_few_long_messages)
{
    hb_backend_kind kind = tu_backends[_i / 4];
    int mixed = _i % 2, moving = (_i / 2) % 2;
    static const size_t counts[] = {1, 2, 15, 16, 17, 31, 33};
    hb_cpu_impl impl = hb_cpu_impl_default();
    size_t base = moving && impl != HB_CPU_IMPL_SHA_NI ? (size_t)hb_long_share_min_bytes(impl) + 64
                                                       : 300u << 10;
    hb_engine *e = tu_open(kind);
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        size_t n = counts[c], lens[33];
        for (size_t i = 0; i < n; i++)
            lens[i] = base + (mixed ? 61 * i : 0);
        tu_msgset s;
        tu_msgset_from_lengths(&s, lens, n, 0x10a9 + n * 2 + (size_t)mixed);
        hb_digest *got = tu_digests(n);
        char what[96];
        snprintf(what, sizeof what, "%zu long messages of %zu bytes (%s) via %s", n, base,
                 mixed ? "mixed" : "one length", hb_backend_name(kind));
        tu_batch(e, s.m, n, got);
        tu_assert_digests(s.m, n, s.want, got, what);
        free(got);
        tu_msgset_free(&s);
    }
    hb_engine_close(e);
}
END_TEST

static Suite *lengths_suite(void)
{
    Suite *s = suite_create("lengths");
    int nb = (int)tu_backend_count;
    TCase *tc = tcase_create("lengths");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_all_lengths_one_batch, 0, nb);
    tcase_add_loop_test(tc, test_each_length_alone, 0, nb);
    tcase_add_loop_test(tc, test_prefixes_one_batch, 0, nb);
    tcase_add_loop_test(tc, test_few_long_messages, 0, 4 * nb);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(lengths_suite());
}
