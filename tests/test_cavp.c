/*
 * test_cavp.c - NIST CAVP SHA-1 vectors (SHAVS) through every backend.
 *
 * Covers: SHA1ShortMsg.rsp and SHA1LongMsg.rsp, each file both as one
 * batch of all its vectors and vector by vector; SHA1Monte.rsp as the
 * sequential chain SHAVS describes (one message per hb_sha1_batch call)
 * and as 100 independent chains hashed side by side (lane j starts from
 * the published checkpoint j-1, so every checkpoint is checked in 1000
 * batches of 100). The NIST files are the oracle; OpenSSL is checked
 * against them too, so a broken parser cannot pass silently.
 * The files are tests/vectors/cavp/ (see tests/vectors/README.md); where
 * they are missing the suite fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define SHORT_FILE "cavp/SHA1ShortMsg.rsp"
#define LONG_FILE "cavp/SHA1LongMsg.rsp"
#define MONTE_FILE "cavp/SHA1Monte.rsp"

/* The sequential Monte Carlo chain costs 100,000 single-message calls.
 * Measured on 2 cores with pocl: about 0.1 s on the CPU backend and about
 * 13 s on OpenCL (every call a kernel launch), well under the 60 s where a
 * subset would be needed, so the full chain runs through every backend.
 * HASHBATCH_MONTE_QUICK=1 (for slow sanitizer builds) limits the OpenCL
 * chain to its first MONTE_OPENCL_CHECKPOINTS checkpoints; all 100 still
 * run there through the side-by-side chains (test_monte_parallel). */
#define MONTE_OPENCL_CHECKPOINTS 10

static void load_rsp(const char *rel, tu_rsp *r)
{
    const char *path = tu_testdata_path(rel);
    ck_assert_msg(tu_rsp_load(path, r) == 0, "cannot parse %s", path);
}

/* vectors_as_msgs: the vectors as hb_msg entries (malloc'd). */
static hb_msg *vectors_as_msgs(const tu_rsp *r)
{
    hb_msg *m = calloc(r->nvectors, sizeof *m);
    ck_assert_ptr_nonnull(m);
    for (size_t i = 0; i < r->nvectors; i++) {
        m[i].data = r->vectors[i].msg;
        m[i].len = r->vectors[i].len;
    }
    return m;
}

/* assert_vector: got equals the NIST MD of vector i. */
static void assert_vector(const tu_rsp *r, size_t i, const uint8_t got[20], const char *what)
{
    char w[41], g[41];
    if (memcmp(got, r->vectors[i].md, 20) == 0)
        return;
    tu_hex(r->vectors[i].md, 20, w);
    tu_hex(got, 20, g);
    ck_abort_msg("%s: vector %zu (Len = %zu bits): want %s got %s", what, i, r->vectors[i].len * 8,
                 w, g);
}

/* run_vectors: every vector of rel through kind, as one batch or one by
 * one, checked against the file's MD. */
static void run_vectors(const char *rel, size_t expect_count, hb_backend_kind kind, int one_batch)
{
    tu_rsp r;
    load_rsp(rel, &r);
    ck_assert_uint_eq(r.nvectors, expect_count);
    hb_msg *m = vectors_as_msgs(&r);
    hb_digest *got = tu_digests(r.nvectors);
    hb_engine *e = tu_open(kind);
    char what[128];
    snprintf(what, sizeof what, "%s via %s (%s)", rel, hb_backend_name(kind),
             one_batch ? "one batch" : "one by one");
    if (one_batch) {
        tu_batch(e, m, r.nvectors, got);
    } else {
        for (size_t i = 0; i < r.nvectors; i++)
            tu_batch(e, &m[i], 1, &got[i]);
    }
    for (size_t i = 0; i < r.nvectors; i++)
        assert_vector(&r, i, got[i], what);
    tu_assert_clean(e);
    hb_engine_close(e);
    free(got);
    free(m);
    tu_rsp_free(&r);
}

/* The oracle itself agrees with NIST (guards the parser and the oracle). */
START_TEST(test_oracle_agrees_with_nist)
{
    const char *files[] = {SHORT_FILE, LONG_FILE};
    for (size_t f = 0; f < 2; f++) {
        tu_rsp r;
        load_rsp(files[f], &r);
        ck_assert_uint_gt(r.nvectors, 0);
        for (size_t i = 0; i < r.nvectors; i++) {
            uint8_t md[20];
            tu_sha1(r.vectors[i].msg, r.vectors[i].len, md);
            assert_vector(&r, i, md, "OpenSSL");
        }
        /* Len = 0 is the empty message, not the byte 00. */
        if (f == 0) {
            ck_assert_uint_eq(r.vectors[0].len, 0);
        }
        tu_rsp_free(&r);
    }
}
END_TEST

START_TEST(test_short_one_batch)
{
    run_vectors(SHORT_FILE, 65, tu_backends[_i], 1);
}
END_TEST

START_TEST(test_short_each)
{
    run_vectors(SHORT_FILE, 65, tu_backends[_i], 0);
}
END_TEST

START_TEST(test_long_one_batch)
{
    run_vectors(LONG_FILE, 64, tu_backends[_i], 1);
}
END_TEST

START_TEST(test_long_each)
{
    run_vectors(LONG_FILE, 64, tu_backends[_i], 0);
}
END_TEST

/* monte_step: MD(i) from MD(i-3..i-1) held in md[0..2], then shifts. */
static void monte_step(hb_engine *e, uint8_t md[3][20])
{
    uint8_t msg[60];
    hb_msg m;
    hb_digest out;
    memcpy(msg, md[0], 20);
    memcpy(msg + 20, md[1], 20);
    memcpy(msg + 40, md[2], 20);
    m.data = msg;
    m.len = sizeof msg;
    tu_batch(e, &m, 1, &out);
    memmove(md[0], md[1], 40);
    memcpy(md[2], out, 20);
}

static size_t monte_checkpoints_for(hb_backend_kind kind, size_t available)
{
    const char *quick = getenv("HASHBATCH_MONTE_QUICK");
    if (kind == HB_BACKEND_OPENCL && quick && strcmp(quick, "1") == 0 &&
        available > MONTE_OPENCL_CHECKPOINTS)
        return MONTE_OPENCL_CHECKPOINTS;
    return available;
}

START_TEST(test_monte_chain)
{
    hb_backend_kind kind = tu_backends[_i];
    tu_rsp r;
    load_rsp(MONTE_FILE, &r);
    ck_assert(r.has_seed);
    ck_assert_uint_eq(r.ncheckpoints, 100);
    size_t count = monte_checkpoints_for(kind, r.ncheckpoints);
    hb_engine *e = tu_open(kind);
    uint8_t seed[20];
    memcpy(seed, r.seed, 20);
    double t0 = tu_now();
    for (size_t j = 0; j < count; j++) {
        uint8_t md[3][20];
        for (int k = 0; k < 3; k++)
            memcpy(md[k], seed, 20);
        for (int i = 3; i <= 1002; i++)
            monte_step(e, md);
        char w[41], g[41];
        tu_hex(r.checkpoints[j], 20, w);
        tu_hex(md[2], 20, g);
        ck_assert_msg(memcmp(md[2], r.checkpoints[j], 20) == 0,
                      "Monte via %s: checkpoint %zu want %s got %s", hb_backend_name(kind), j, w,
                      g);
        memcpy(seed, md[2], 20);
    }
    fprintf(stderr, "Monte chain via %s: %zu of %zu checkpoints, %.2f s\n", hb_backend_name(kind),
            count, r.ncheckpoints, tu_now() - t0);
    tu_assert_clean(e);
    hb_engine_close(e);
    tu_rsp_free(&r);
}
END_TEST

/* All 100 chains at once: lane j starts from checkpoint j-1 (the Seed for
 * j = 0), and after 1000 steps must reach checkpoint j. */
START_TEST(test_monte_parallel)
{
    hb_backend_kind kind = tu_backends[_i];
    tu_rsp r;
    load_rsp(MONTE_FILE, &r);
    size_t n = r.ncheckpoints;
    ck_assert_uint_eq(n, 100);
    uint8_t(*state)[60] = calloc(n, sizeof *state);
    hb_msg *m = calloc(n, sizeof *m);
    hb_digest *out = tu_digests(n);
    ck_assert_ptr_nonnull(state);
    ck_assert_ptr_nonnull(m);
    for (size_t j = 0; j < n; j++) {
        const uint8_t *seed = j == 0 ? r.seed : r.checkpoints[j - 1];
        for (int k = 0; k < 3; k++)
            memcpy(state[j] + 20 * k, seed, 20);
        m[j].data = state[j];
        m[j].len = 60;
    }
    hb_engine *e = tu_open(kind);
    for (int i = 3; i <= 1002; i++) {
        tu_batch(e, m, n, out);
        for (size_t j = 0; j < n; j++) {
            memmove(state[j], state[j] + 20, 40);
            memcpy(state[j] + 40, out[j], 20);
        }
    }
    for (size_t j = 0; j < n; j++) {
        char w[41], g[41];
        tu_hex(r.checkpoints[j], 20, w);
        tu_hex(out[j], 20, g);
        ck_assert_msg(memcmp(out[j], r.checkpoints[j], 20) == 0,
                      "Monte side by side via %s: checkpoint %zu want %s "
                      "got %s",
                      hb_backend_name(kind), j, w, g);
    }
    tu_assert_clean(e);
    hb_engine_close(e);
    free(out);
    free(m);
    free(state);
    tu_rsp_free(&r);
}
END_TEST

static Suite *cavp_suite(void)
{
    Suite *s = suite_create("cavp");
    int nb = (int)tu_backend_count;

    TCase *tc = tcase_create("oracle");
    tcase_add_test(tc, test_oracle_agrees_with_nist);
    suite_add_tcase(s, tc);

    tc = tcase_create("shortmsg");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_short_one_batch, 0, nb);
    tcase_add_loop_test(tc, test_short_each, 0, nb);
    suite_add_tcase(s, tc);

    tc = tcase_create("longmsg");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_long_one_batch, 0, nb);
    tcase_add_loop_test(tc, test_long_each, 0, nb);
    suite_add_tcase(s, tc);

    tc = tcase_create("monte");
    tcase_set_timeout(tc, 400);
    tcase_add_loop_test(tc, test_monte_chain, 0, nb);
    tcase_add_loop_test(tc, test_monte_parallel, 0, nb);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    const char *need[] = {SHORT_FILE, LONG_FILE, MONTE_FILE};
    if (!tu_require_testdata(need, sizeof need / sizeof need[0]))
        return 1;
    return tu_run_suite(cavp_suite());
}
