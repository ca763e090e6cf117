/*
 * test_collisions.c - the SHAttered and SHA-mbles SHA-1 collision pairs.
 *
 * Covers: each pair through every backend: the two files differ (memcmp)
 * yet both hash to the published digest; with a common suffix appended
 * (from 1 byte to over a MiB, ending on, before, after and across block
 * boundaries) the two still differ, OpenSSL says they still collide, and
 * every backend agrees with OpenSSL; all in one mixed batch too. The
 * published digests are the oracle for the plain files.
 * Data: tests/vectors/collisions/ (the SHAttered pair as the first 320
 * bytes of each PDF, where the collision is complete; see
 * tests/vectors/README.md). Where the files are missing the suite fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

typedef struct {
    const char *file1, *file2;
    const char *sha1_hex;
    size_t size;
} pair_info;

static const pair_info pairs[] = {
    {"collisions/shattered-1.prefix.bin", "collisions/shattered-2.prefix.bin",
     "f92d74e3874587aaf443d1db961d4e26dde13e9c", 320},
    {"collisions/sha-mbles-1.bin", "collisions/sha-mbles-2.bin",
     "8ac60ba76f1999a1ab70223f225aefdc78d4ddc0", 640},
};
#define NPAIRS (sizeof pairs / sizeof pairs[0])

/* Suffix lengths: both files are whole blocks (320 and 640 bytes), so a
 * suffix of 55 leaves one padded block, 56 and 63 push the length into a
 * second one, 64 and 128 end on a block boundary, 65 and 123 cross one;
 * 422,115 makes the SHAttered prefixes as long as the PDFs; the last one
 * is longer than one chunk (1 MiB for a lone long message at the default
 * 16 MiB staging), so its state carries between launches. */
static const size_t suffix_lens[] = {
    1, 9, 55, 56, 63, 64, 65, 123, 128, 4096, 100000, 422115, (1u << 20) + 7};
#define NSUFFIX (sizeof suffix_lens / sizeof suffix_lens[0])

typedef struct {
    uint8_t *a, *b; /* the two files */
    size_t len;
    uint8_t published[20];
} pair;

static void load_pair(const pair_info *pi, pair *p)
{
    size_t la = 0, lb = 0;
    p->a = tu_read_file(tu_testdata_path(pi->file1), &la);
    ck_assert_msg(p->a != NULL, "cannot read %s", pi->file1);
    p->b = tu_read_file(tu_testdata_path(pi->file2), &lb);
    ck_assert_msg(p->b != NULL, "cannot read %s", pi->file2);
    ck_assert_uint_eq(la, pi->size);
    ck_assert_uint_eq(lb, pi->size);
    p->len = la;
    ck_assert_int_eq(tu_unhex(pi->sha1_hex, p->published, 20), 20);
    ck_assert_msg(memcmp(p->a, p->b, la) != 0, "%s and %s are identical", pi->file1, pi->file2);
}

static void free_pair(pair *p)
{
    free(p->a);
    free(p->b);
}

/* with_suffix: malloc'd x || suffix. */
static uint8_t *with_suffix(const uint8_t *x, size_t len, const uint8_t *suffix, size_t slen)
{
    uint8_t *out = malloc(len + slen);
    ck_assert_ptr_nonnull(out);
    memcpy(out, x, len);
    memcpy(out + len, suffix, slen);
    return out;
}

static void assert_digest(const uint8_t *want, const uint8_t *got, const char *what)
{
    char w[41], g[41];
    tu_hex(want, 20, w);
    tu_hex(got, 20, g);
    ck_assert_msg(memcmp(want, got, 20) == 0, "%s: want %s got %s", what, w, g);
}

/* Loop index: backend * NPAIRS + pair. */
START_TEST(test_pair_collides)
{
    hb_backend_kind kind = tu_backends[_i / (int)NPAIRS];
    const pair_info *pi = &pairs[_i % (int)NPAIRS];
    pair p;
    load_pair(pi, &p);
    hb_engine *e = tu_open(kind);
    hb_msg m[2] = {{p.a, p.len}, {p.b, p.len}};
    hb_digest got[2];
    tu_batch(e, m, 2, got);
    char what[128];
    snprintf(what, sizeof what, "%s via %s", pi->file1, hb_backend_name(kind));
    assert_digest(p.published, got[0], what);
    snprintf(what, sizeof what, "%s via %s", pi->file2, hb_backend_name(kind));
    assert_digest(p.published, got[1], what);

    /* One at a time, too. */
    for (int i = 0; i < 2; i++) {
        hb_digest one;
        tu_batch(e, &m[i], 1, &one);
        assert_digest(p.published, one, "single-message batch");
    }
    tu_assert_clean(e);
    hb_engine_close(e);
    free_pair(&p);
}
END_TEST

/* Loop index: backend * NPAIRS + pair. Every suffix length, both files,
 * in one batch. */
START_TEST(test_pair_with_suffix)
{
    hb_backend_kind kind = tu_backends[_i / (int)NPAIRS];
    const pair_info *pi = &pairs[_i % (int)NPAIRS];
    pair p;
    load_pair(pi, &p);
    uint8_t *suffix = malloc(suffix_lens[NSUFFIX - 1]);
    ck_assert_ptr_nonnull(suffix);
    tu_rng r;
    tu_rng_seed(&r, 0xc011);
    tu_rng_fill(&r, suffix, suffix_lens[NSUFFIX - 1]);

    hb_msg m[2 * NSUFFIX];
    uint8_t *bufs[2 * NSUFFIX];
    for (size_t s = 0; s < NSUFFIX; s++) {
        bufs[2 * s] = with_suffix(p.a, p.len, suffix, suffix_lens[s]);
        bufs[2 * s + 1] = with_suffix(p.b, p.len, suffix, suffix_lens[s]);
        m[2 * s] = (hb_msg){bufs[2 * s], p.len + suffix_lens[s]};
        m[2 * s + 1] = (hb_msg){bufs[2 * s + 1], p.len + suffix_lens[s]};
    }
    hb_digest *want = tu_oracle(m, 2 * NSUFFIX);
    hb_digest got[2 * NSUFFIX];
    hb_engine *e = tu_open(kind);
    tu_batch(e, m, 2 * NSUFFIX, got);
    char what[128];
    snprintf(what, sizeof what, "%s + suffix via %s", pi->file1, hb_backend_name(kind));
    tu_assert_digests(m, 2 * NSUFFIX, want, got, what);
    for (size_t s = 0; s < NSUFFIX; s++) {
        ck_assert_msg(memcmp(bufs[2 * s], bufs[2 * s + 1], m[2 * s].len) != 0,
                      "%s: the suffixed files are identical", pi->file1);
        ck_assert_msg(memcmp(want[2 * s], want[2 * s + 1], 20) == 0,
                      "%s: OpenSSL says a suffix of %zu bytes broke the collision", pi->file1,
                      suffix_lens[s]);
        ck_assert_msg(memcmp(got[2 * s], got[2 * s + 1], 20) == 0,
                      "%s: suffix of %zu bytes broke the collision via %s", pi->file1,
                      suffix_lens[s], hb_backend_name(kind));
        ck_assert_msg(memcmp(got[2 * s], p.published, 20) != 0,
                      "suffixed digest equals the plain one");
    }
    tu_assert_clean(e);
    hb_engine_close(e);
    for (size_t i = 0; i < 2 * NSUFFIX; i++)
        free(bufs[i]);
    free(want);
    free(suffix);
    free_pair(&p);
}
END_TEST

/* Both pairs among random messages in one batch, per backend. */
START_TEST(test_pairs_in_mixed_batch)
{
    hb_backend_kind kind = tu_backends[_i];
    pair p[NPAIRS];
    tu_msgset filler;
    tu_msgset_random(&filler, 300, 3000, 0xf111);
    size_t n = filler.n + 2 * NPAIRS;
    hb_msg *m = calloc(n, sizeof *m);
    ck_assert_ptr_nonnull(m);
    size_t k = 0, f = 0;
    for (size_t i = 0; i < NPAIRS; i++) {
        load_pair(&pairs[i], &p[i]);
        for (int j = 0; j < 100; j++)
            m[k++] = filler.m[f++];
        m[k++] = (hb_msg){p[i].a, p[i].len};
        for (int j = 0; j < 50; j++)
            m[k++] = filler.m[f++];
        m[k++] = (hb_msg){p[i].b, p[i].len};
    }
    while (f < filler.n)
        m[k++] = filler.m[f++];
    ck_assert_uint_eq(k, n);
    hb_digest *want = tu_oracle(m, n);
    hb_digest *got = tu_digests(n);
    hb_engine *e = tu_open(kind);
    tu_batch(e, m, n, got);
    tu_assert_digests(m, n, want, got, "collision pairs in a mixed batch");
    /* And the pairs' digests are the published ones. */
    for (size_t i = 0, idx = 100; i < NPAIRS; i++, idx += 152) {
        assert_digest(p[i].published, got[idx], pairs[i].file1);
        assert_digest(p[i].published, got[idx + 51], pairs[i].file2);
    }
    tu_assert_clean(e);
    hb_engine_close(e);
    for (size_t i = 0; i < NPAIRS; i++)
        free_pair(&p[i]);
    free(got);
    free(want);
    free(m);
    tu_msgset_free(&filler);
}
END_TEST

static Suite *collisions_suite(void)
{
    Suite *s = suite_create("collisions");
    int nb = (int)tu_backend_count;
    TCase *tc = tcase_create("collisions");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_pair_collides, 0, nb * (int)NPAIRS);
    tcase_add_loop_test(tc, test_pair_with_suffix, 0, nb * (int)NPAIRS);
    tcase_add_loop_test(tc, test_pairs_in_mixed_batch, 0, nb);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    for (size_t i = 0; i < NPAIRS; i++) {
        const char *need[2] = {pairs[i].file1, pairs[i].file2};
        if (!tu_require_testdata(need, 2))
            return 1;
    }
    return tu_run_suite(collisions_suite());
}
