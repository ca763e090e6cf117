/*
 * test_huge.c - a message longer than 4 GiB, per backend (label "huge").
 *
 * Covers: lengths whose byte count does not fit 32 bits (4 GiB + 1003
 * bytes, and exactly 4 GiB as a prefix of the same mapping), streamed
 * through the staging buffers with the state carried across launches, in
 * one batch with a few small messages around them (which must come back
 * in order and correct). OpenSSL computes each long digest once.
 * Skips (exit 77) if the 4 GiB anonymous mapping cannot be made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "test_util.h"

#define HUGE_LEN (((size_t)4 << 30) + 1000 + 3)
#define FOUR_GIB ((size_t)4 << 30)

static uint8_t *huge_buf;

typedef struct {
    hb_msg m[6];
    hb_digest want[6];
} huge_batch;

static huge_batch batch;

/* build_batch: small, huge, small, exactly 4 GiB, small, empty. */
static void build_batch(void)
{
    static uint8_t small[3][200];
    tu_rng r;
    tu_rng_seed(&r, 4242);
    for (int i = 0; i < 3; i++)
        tu_rng_fill(&r, small[i], sizeof small[i]);
    batch.m[0] = (hb_msg){small[0], 55};
    batch.m[1] = (hb_msg){huge_buf, HUGE_LEN};
    batch.m[2] = (hb_msg){small[1], 200};
    batch.m[3] = (hb_msg){huge_buf + 1, FOUR_GIB};
    batch.m[4] = (hb_msg){small[2], 64};
    batch.m[5] = (hb_msg){NULL, 0};
    for (int i = 0; i < 6; i++) {
        double t0 = tu_now();
        tu_sha1(batch.m[i].data, batch.m[i].len, batch.want[i]);
        if (batch.m[i].len > 1000000)
            fprintf(stderr, "OpenSSL over %zu bytes: %.2f s\n",
                    batch.m[i].len, tu_now() - t0);
    }
}

START_TEST(test_huge_message)
{
    hb_backend_kind kind = tu_backends[_i];
    hb_engine *e = tu_open(kind);
    hb_digest got[6];
    memset(got, 0, sizeof got);
    double t0 = tu_now();
    tu_batch(e, batch.m, 6, got);
    fprintf(stderr, "%s: batch with 8 GiB in %.2f s\n", hb_backend_name(kind),
            tu_now() - t0);
    char what[64];
    snprintf(what, sizeof what, "huge batch via %s", hb_backend_name(kind));
    tu_assert_digests(batch.m, 6, batch.want, got, what);

    hb_stats st;
    ck_assert_int_eq(hb_engine_stats(e, &st), HB_OK);
    uint64_t bytes = 0;
    for (int i = 0; i < 6; i++)
        bytes += batch.m[i].len;
    ck_assert_uint_eq(st.messages, 6);
    ck_assert_uint_eq(st.bytes, bytes);
    tu_assert_clean(e);
    hb_engine_close(e);
}
END_TEST

static Suite *huge_suite(void)
{
    Suite *s = suite_create("huge");
    TCase *tc = tcase_create("huge");
    tcase_set_timeout(tc, 800);
    tcase_add_loop_test(tc, test_huge_message, 0, (int)tu_backend_count);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* Mapped and hashed by OpenSSL once, before the forked test cases,
     * which inherit it (copy on write, never written). */
    void *p = mmap(NULL, HUGE_LEN, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        printf("SKIP: cannot map %zu bytes for the huge message\n",
               (size_t)HUGE_LEN);
        return TU_SKIP_CODE;
    }
    huge_buf = p;
    double t0 = tu_now();
    tu_fill_pattern(huge_buf, HUGE_LEN);
    fprintf(stderr, "filled %zu bytes in %.2f s\n", (size_t)HUGE_LEN,
            tu_now() - t0);
    build_batch();
    int rc = tu_run_suite(huge_suite());
    munmap(p, HUGE_LEN);
    return rc;
}
