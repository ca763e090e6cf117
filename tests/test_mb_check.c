/*
 * test_mb_check.c - verification by structure in the multi-buffer lanes
 * (hb_mb_hash_checked, mb/mb_batch.h), every implementation this CPU runs.
 *
 * Covers: lists hashed with checks on give OpenSSL's digests and no
 * mismatch; what the checks report (runs, tails, bytes) is exactly what
 * the rules of mb_batch.h recompute, worked out here from the list's
 * shape (one run of two blocks per lane position, one tail per tail kind,
 * a tail per lane position when no block is in place); and each kind of
 * broken kernel (every lane, one lane at each position, one tail kind of
 * each of the six, a state carried between calls) both makes digests
 * wrong and is caught within the one call. Lists run with the lanes' tail
 * rule (HB_MB_TAIL_LANES), so no message leaves the lanes for OpenSSL.
 * The same for messages hashed in pieces (hb_mb_streams_update_checked,
 * as big files are): two pieces each, the second continuing the first;
 * every lane checked on each, right digests, and a broken lane or a
 * broken carry into the second piece caught there.
 * An implementation this CPU cannot run is named and the suite ends with
 * 77 (ctest's may_skip), as test_mb does: never a silent pass.
 * Must not: take an expected digest from the library: OpenSSL is the oracle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb/mb_batch.h"
#include "mb/mb_streams.h"
#include "test_util.h"

static const hb_cpu_impl impls[] = {HB_CPU_IMPL_PORTABLE, HB_CPU_IMPL_AVX2, HB_CPU_IMPL_AVX512};
#define NIMPLS 3

static unsigned lanes_of(hb_cpu_impl impl)
{
    return hb_cpu_impl_describe(impl)->lanes;
}

/* Hashes s with check (brk set by the caller); returns the wrong digests. */
static size_t hash_checked(hb_cpu_impl impl, const tu_msgset *s, hb_mb_check *check)
{
    hb_digest *got = tu_digests(s->n);
    int done = hb_mb_hash_checked(impl, HB_MB_TAIL_LANES, s->m, NULL, s->n, got, NULL, NULL, check);
    ck_assert_int_eq(done, 1);
    size_t wrong = 0;
    for (size_t i = 0; i < s->n; i++)
        wrong += memcmp(got[i], s->want[i], sizeof got[i]) != 0;
    free(got);
    return wrong;
}

#define SKIP_UNLESS_RUNNABLE(impl)                                                                 \
    do {                                                                                           \
        if (!hb_cpu_impl_runnable(impl)) {                                                         \
            ck_assert_int_ne((impl), HB_CPU_IMPL_PORTABLE);                                        \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* (loop: implementation) random lengths 0..5,000: right, no mismatch,
 * and every lane position and tail kind the list has was checked. */
START_TEST(test_clean_random_lists)
{
    hb_cpu_impl impl = impls[_i];
    SKIP_UNLESS_RUNNABLE(impl);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        tu_msgset s;
        tu_msgset_random(&s, 500, 5000, 0xc4ec0 + seed);
        hb_mb_check check = {0};
        ck_assert_uint_eq(hash_checked(impl, &s, &check), 0);
        ck_assert_uint_eq(check.mismatches, 0);
        /* every lane position, by a run or (no block in place) a tail */
        ck_assert_uint_ge(check.runs + check.tails, lanes_of(impl));
        ck_assert_uint_ge(check.tails, 1);
        ck_assert_uint_le(check.tails, HB_MB_TAIL_KINDS + lanes_of(impl));
        ck_assert_uint_le(check.bytes, check.runs * 128 + check.tails * 63);
        ck_assert_uint_lt(check.bytes * 100, s.total_bytes); /* a cost per list, not per byte */
        tu_msgset_free(&s);
    }
}
END_TEST

/* (loop: implementation) the counts, worked out from the rules. */
START_TEST(test_counts_follow_the_rules)
{
    hb_cpu_impl impl = impls[_i];
    SKIP_UNLESS_RUNNABLE(impl);
    unsigned lanes = lanes_of(impl);
    struct {
        size_t len;
        size_t runs, run_bytes, tails, tail_bytes;
    } shape[] = {
        /* whole blocks: each lane's first step is a run of two blocks;
         * one tail (kind 0: padding alone, no message bytes) */
        {4096, lanes, 128, 1, 0},
        /* one block in place: runs of one block; kind 0 */
        {64, lanes, 64, 1, 0},
        /* one block and 36 bytes: runs of one block; one tail of kind 1 */
        {100, lanes, 64, 1, 36},
        /* no block in place: a tail on every lane position, 10 bytes each */
        {10, 0, 0, lanes, 10},
        /* the empty message: a tail on every lane position, no bytes */
        {0, 0, 0, lanes, 0},
    };
    for (size_t k = 0; k < sizeof shape / sizeof shape[0]; k++) {
        tu_msgset s;
        tu_msgset_same_length(&s, 4 * lanes, shape[k].len, 0xc0 + k);
        hb_mb_check check = {0};
        ck_assert_uint_eq(hash_checked(impl, &s, &check), 0);
        ck_assert_msg(check.runs == shape[k].runs && check.tails == shape[k].tails,
                      "%s, %zu-byte messages: %zu runs, %zu tails; the rules give %zu and %zu",
                      hb_cpu_impl_describe(impl)->name, shape[k].len, check.runs, check.tails,
                      shape[k].runs, shape[k].tails);
        ck_assert_uint_eq(check.bytes, shape[k].runs * shape[k].run_bytes +
                                           shape[k].tails * shape[k].tail_bytes);
        ck_assert_uint_eq(check.mismatches, 0);
        tu_msgset_free(&s);
    }
}
END_TEST

/* Hashes s broken as (brk, which): the break is real (some digest wrong)
 * and the checks saw it. */
static void assert_caught(hb_cpu_impl impl, const tu_msgset *s, hb_mb_break_kind brk,
                          unsigned which, const char *what)
{
    hb_mb_check check = {0};
    check.brk = brk;
    check.brk_which = which;
    size_t wrong = hash_checked(impl, s, &check);
    ck_assert_msg(wrong > 0, "%s, %s %u: the break changed no digest",
                  hb_cpu_impl_describe(impl)->name, what, which);
    ck_assert_msg(check.mismatches > 0,
                  "%s, %s %u: %zu wrong digests, not caught (%zu runs, %zu tails)",
                  hb_cpu_impl_describe(impl)->name, what, which, wrong, check.runs, check.tails);
}

/* (loop: implementation) a lane broken at each position, and every lane:
 * caught on lists of whole blocks, one block, and no block in place. */
START_TEST(test_broken_lane_caught)
{
    hb_cpu_impl impl = impls[_i];
    SKIP_UNLESS_RUNNABLE(impl);
    unsigned lanes = lanes_of(impl);
    const size_t lens[] = {4096, 64, 10};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        tu_msgset s;
        tu_msgset_same_length(&s, 3 * lanes, lens[k], 0x1a4e + k);
        for (unsigned lane = 0; lane < lanes; lane++)
            assert_caught(impl, &s, HB_MB_BREAK_LANE, lane, "lane");
        assert_caught(impl, &s, HB_MB_BREAK_ALL_LANES, 0, "every lane");
        tu_msgset_free(&s);
    }
}
END_TEST

/* (loop: implementation) each tail kind padded wrong, in a list that
 * mixes every kind: caught. */
START_TEST(test_broken_tail_caught)
{
    hb_cpu_impl impl = impls[_i];
    SKIP_UNLESS_RUNNABLE(impl);
    /* kinds 0-2 with blocks in place (len % 64: 0, 1-55, 56-63), 3-5 without */
    const size_t of_kind[HB_MB_TAIL_KINDS] = {128, 100, 120, 0, 10, 60};
    enum { EACH = 7 };
    size_t lens[HB_MB_TAIL_KINDS * EACH];
    for (size_t i = 0; i < HB_MB_TAIL_KINDS * EACH; i++)
        lens[i] = of_kind[i % HB_MB_TAIL_KINDS] +
                  64 * (i / HB_MB_TAIL_KINDS) * (of_kind[i % HB_MB_TAIL_KINDS] >= 64);
    tu_msgset s;
    tu_msgset_from_lengths(&s, lens, HB_MB_TAIL_KINDS * EACH, 0x7a11);
    for (unsigned kind = 0; kind < HB_MB_TAIL_KINDS; kind++)
        assert_caught(impl, &s, HB_MB_BREAK_TAIL, kind, "tail kind");
    tu_msgset_free(&s);
}
END_TEST

/* (loop: implementation) a state carried between kernel calls loaded
 * wrong: caught on long messages (many calls) and on 64-byte ones (the
 * one carry is into the tail). */
START_TEST(test_broken_carry_caught)
{
    hb_cpu_impl impl = impls[_i];
    SKIP_UNLESS_RUNNABLE(impl);
    const size_t lens[] = {3 << 20, 4096, 64};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        tu_msgset s;
        tu_msgset_same_length(&s, lanes_of(impl) + 1, lens[k], 0xca77 + k);
        assert_caught(impl, &s, HB_MB_BREAK_CARRY, 0, "carry");
        tu_msgset_free(&s);
    }
}
END_TEST

/* Messages of `lanes` pieces of 16 KiB each, fed as two pieces of 8 KiB:
 * returns the wrong digests; checks[0..1] say what each update found. */
static size_t stream_checked(hb_cpu_impl impl, const tu_msgset *s, hb_mb_break_kind brk,
                             unsigned which, hb_mb_check checks[2])
{
    hb_mb_stream st[HB_MB_LANES_MAX], *ptr[HB_MB_LANES_MAX];
    const uint8_t *data[HB_MB_LANES_MAX];
    size_t len[HB_MB_LANES_MAX];
    for (size_t k = 0; k < s->n; k++) {
        hb_mb_stream_init(&st[k]);
        ptr[k] = &st[k];
    }
    for (int piece = 0; piece < 2; piece++) {
        for (size_t k = 0; k < s->n; k++) {
            data[k] = (const uint8_t *)s->m[k].data + piece * (s->m[k].len / 2);
            len[k] = s->m[k].len / 2;
        }
        checks[piece] = (hb_mb_check){0};
        checks[piece].brk = brk;
        checks[piece].brk_which = which;
        hb_mb_streams_update_checked(impl, ptr, data, len, s->n, &checks[piece]);
    }
    size_t wrong = 0;
    for (size_t k = 0; k < s->n; k++) {
        hb_digest d;
        hb_mb_stream_final(&st[k], NULL, 0, d);
        wrong += memcmp(d, s->want[k], sizeof d) != 0;
    }
    return wrong;
}

/* (loop: implementation) streams: counts, right digests, breaks caught. */
START_TEST(test_streams_checked)
{
    hb_cpu_impl impl = impls[_i];
    SKIP_UNLESS_RUNNABLE(impl);
    unsigned lanes = lanes_of(impl);
    tu_msgset s;
    tu_msgset_same_length(&s, lanes, 16384, 0x57e4);
    hb_mb_check checks[2];
    ck_assert_uint_eq(stream_checked(impl, &s, HB_MB_BREAK_NONE, 0, checks), 0);
    for (int piece = 0; piece < 2; piece++) {
        ck_assert_uint_eq(checks[piece].runs, lanes);
        ck_assert_uint_eq(checks[piece].bytes, (uint64_t)lanes * 128);
        ck_assert_uint_eq(checks[piece].mismatches, 0);
        ck_assert_uint_eq(checks[piece].tails, 0);
    }
    for (unsigned lane = 0; lane < lanes; lane++) {
        ck_assert_uint_gt(stream_checked(impl, &s, HB_MB_BREAK_LANE, lane, checks), 0);
        ck_assert_msg(checks[0].mismatches > 0 && checks[1].mismatches > 0,
                      "%s: broken lane %u not caught in each piece",
                      hb_cpu_impl_describe(impl)->name, lane);
    }
    ck_assert_uint_gt(stream_checked(impl, &s, HB_MB_BREAK_CARRY, 0, checks), 0);
    ck_assert_msg(checks[1].mismatches > 0, "%s: broken carry into the second piece not caught",
                  hb_cpu_impl_describe(impl)->name);
    tu_msgset_free(&s);
}
END_TEST

static Suite *check_suite(void)
{
    Suite *s = suite_create("mb_check");
    TCase *tc = tcase_create("structure");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_clean_random_lists, 0, NIMPLS);
    tcase_add_loop_test(tc, test_counts_follow_the_rules, 0, NIMPLS);
    tcase_add_loop_test(tc, test_broken_lane_caught, 0, NIMPLS);
    tcase_add_loop_test(tc, test_broken_tail_caught, 0, NIMPLS);
    tcase_add_loop_test(tc, test_broken_carry_caught, 0, NIMPLS);
    tcase_add_loop_test(tc, test_streams_checked, 0, NIMPLS);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    int rc = tu_run_suite(check_suite());
    int not_run = 0;
    for (int k = 0; k < NIMPLS; k++)
        if (!hb_cpu_impl_runnable(impls[k])) {
            fprintf(stderr, "%s %s",
                    not_run++ ? "," : "SKIP: test_mb_check: not tested on this CPU:",
                    hb_cpu_impl_describe(impls[k])->name);
        }
    if (not_run > 0)
        fprintf(stderr, "\n");
    return rc == 0 && not_run > 0 ? 77 : rc;
}
