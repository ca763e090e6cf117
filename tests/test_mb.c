/*
 * test_mb.c - the multi-buffer SHA-1 implementations (mb/mb_batch.h,
 * mb/mb_impl.h) against OpenSSL, every implementation this CPU runs,
 * every tail rule.
 *
 * Covers, through hb_mb_hash for each runnable multi-buffer implementation
 * (portable, avx2, avx512) and each tail rule (measured, lanes,
 * one-by-one): NIST's SHA1ShortMsg/SHA1LongMsg vectors as one batch and
 * one per call; every length 0..20,000 in one batch (ascending and
 * shuffled), so lanes end at every block boundary and every padding case;
 * one giant message (1 GiB, or 64 MiB under sanitizers) beside 15 of
 * 0..200 bytes, in both orders; batches of 0, 1, 15, 16, 17 and of the
 * implementation's lanes -1, +0, +1 (and twice that); messages starting at
 * every offset 0..63; messages that end exactly at, or start exactly
 * after, an inaccessible page, in read-only memory (an over-read, an
 * under-read or a write faults); `which` lists (a permuted subset; the
 * entries not listed stay untouched); the watcher (a stop on its first
 * call makes hb_mb_hash return 0 having reported no more bytes than the
 * batch holds; a watcher that always goes on is told exactly the message
 * bytes, and asked along the way); a random differential (20,000 messages
 * of 0..5,000 bytes, several seeds, one in exact-size allocations).
 * Also: the implementation table itself (portable is always built and
 * runnable: the suite fails otherwise).
 * An implementation this CPU cannot run is named at the start, with the
 * reason, and its cases do nothing; the suite then ends with exit status
 * 77, the implementations it did not test and why on stderr, when every
 * other case passed (a failure is still exit 1): a run that left an
 * implementation untested is never a pass. ctest counts 77 as skipped
 * only with the may_skip label of tests/CMakeLists.txt, as a failure
 * otherwise.
 * Environment: HB_TEST_SEED (the random seed; printed at start and in
 * every failure), HB_TEST_SCALE (a divisor, as in the service suites, of
 * the giant message and the random differential: at least 1/64; default
 * 1, 16 under sanitizers).
 * Must not: take an expected digest from the library: OpenSSL and NIST's
 * files are the oracle. Must not test the engine (the service suites do).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mb/mb_batch.h"
#include "test_util.h"

#define SHORT_FILE "cavp/SHA1ShortMsg.rsp"
#define LONG_FILE "cavp/SHA1LongMsg.rsp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif
#ifndef UNDER_SANITIZER
#define UNDER_SANITIZER 0
#endif

#define GIANT_FULL ((size_t)1 << 30)
#define GIANT_MIN ((size_t)64 << 20)
#define SMALL_COUNT 15
#define SENTINEL 0xa5

/* ---- settings: seed and scale ---------------------------------------- */

static uint64_t base_seed;
static double scale = 1.0;

/* read_settings: HB_TEST_SEED and HB_TEST_SCALE; 0 (with a message) when
 * either is malformed. */
static int read_settings(void)
{
    const char *seed = getenv("HB_TEST_SEED");
    const char *sc = getenv("HB_TEST_SCALE");
    char *end = NULL;
    base_seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
    if (seed != NULL && *seed != '\0') {
        base_seed = strtoull(seed, &end, 0);
        if (*end != '\0') {
            fprintf(stderr, "test_mb: HB_TEST_SEED=%s is not a number\n", seed);
            return 0;
        }
    }
    scale = UNDER_SANITIZER ? 1.0 / 16 : 1.0;
    if (sc != NULL && *sc != '\0') {
        double divisor = strtod(sc, &end);
        if (*end != '\0' || !(divisor >= 1.0 / 64)) {
            fprintf(stderr, "test_mb: HB_TEST_SCALE=%s is not a divisor of at least 1/64\n", sc);
            return 0;
        }
        scale = 1.0 / divisor;
    }
    return 1;
}

/* scaled: n * scale, at least lo. */
static size_t scaled(size_t n, size_t lo)
{
    double v = (double)n * scale;
    return v < (double)lo ? lo : (size_t)v;
}

/* ---- implementations and rules --------------------------------------- */

static const hb_cpu_impl mb_impls[] = {HB_CPU_IMPL_PORTABLE, HB_CPU_IMPL_AVX2, HB_CPU_IMPL_AVX512};
#define NIMPLS ((int)(sizeof mb_impls / sizeof mb_impls[0]))

static const hb_mb_tail_rule rules[] = {HB_MB_TAIL_MEASURED, HB_MB_TAIL_LANES,
                                        HB_MB_TAIL_ONE_BY_ONE};
static const char *const rule_names[] = {"measured", "lanes", "one-by-one"};
#define NRULES ((int)(sizeof rules / sizeof rules[0]))
#define NCOMBOS (NIMPLS * NRULES)

typedef struct {
    hb_cpu_impl impl;
    hb_mb_tail_rule rule;
    const char *name;
    const char *rule_name;
    unsigned lanes;
} combo;

/* why_not_runnable: why this CPU does not run impl, as far as we can tell. */
static const char *why_not_runnable(hb_cpu_impl impl)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (impl == HB_CPU_IMPL_AVX512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
                   ? "AVX-512F and BW present but not runnable here"
                   : "this CPU lacks AVX-512F or AVX-512BW";
    if (impl == HB_CPU_IMPL_AVX2)
        return __builtin_cpu_supports("avx2") ? "AVX2 present but not runnable here"
                                              : "this CPU lacks AVX2";
#endif
    return "hb_cpu_impl_runnable says no";
}

/* combo_get: combination i (implementation i / NRULES, rule i % NRULES);
 * 0, after saying so, when this CPU cannot run its implementation. */
static int combo_get(int i, combo *c)
{
    c->impl = mb_impls[i / NRULES];
    c->rule = rules[i % NRULES];
    c->rule_name = rule_names[i % NRULES];
    const hb_cpu_impl_desc *d = hb_cpu_impl_describe(c->impl);
    ck_assert_ptr_nonnull(d);
    c->name = d->name;
    c->lanes = d->lanes;
    if (!hb_cpu_impl_runnable(c->impl)) {
        fprintf(stderr, "skipped %s/%s: %s\n", c->name, c->rule_name, why_not_runnable(c->impl));
        return 0;
    }
    return 1;
}

/* label: "impl/rule: what (HB_TEST_SEED=S)" into buf: the seed that
 * reproduces every random input of the run. */
static const char *label(char *buf, size_t cap, const combo *c, const char *what)
{
    snprintf(buf, cap, "%s/%s: %s (HB_TEST_SEED=%llu)", c->name, c->rule_name, what,
             (unsigned long long)base_seed);
    return buf;
}

/* check_rule: the digests the kernel computed (from_lanes) of count fit
 * the tail rule: all of them in lanes; at most a lane's worth one by one
 * (those busy when no message waits any more); any split when measured. */
static void check_rule(const combo *c, size_t count, size_t from_lanes)
{
    ck_assert_msg(from_lanes <= count, "%s/%s: %zu of %zu digests from the lanes", c->name,
                  c->rule_name, from_lanes, count);
    if (c->rule == HB_MB_TAIL_LANES)
        ck_assert_msg(from_lanes == count,
                      "%s/%s: only %zu of %zu digests from the lanes under the lanes rule", c->name,
                      c->rule_name, from_lanes, count);
    if (c->rule == HB_MB_TAIL_ONE_BY_ONE && count > c->lanes)
        ck_assert_msg(from_lanes >= count - c->lanes,
                      "%s/%s: %zu of %zu digests from %u lanes: more than a lane's worth one by "
                      "one",
                      c->name, c->rule_name, from_lanes, count, c->lanes);
}

/* mb: hb_mb_hash with no watcher; fails the test unless it returns 1 with
 * the tail rule kept. Returns how many digests came from the lanes. */
static size_t mb(const combo *c, const hb_msg *m, const size_t *which, size_t count, hb_digest *out)
{
    size_t from_lanes = SIZE_MAX;
    int done = hb_mb_hash(c->impl, c->rule, m, which, count, out, NULL, &from_lanes);
    ck_assert_msg(done == 1, "%s/%s: hb_mb_hash of %zu messages with no watcher returned %d",
                  c->name, c->rule_name, count, done);
    check_rule(c, count, from_lanes);
    return from_lanes;
}

/* check_batch: n messages in one call, every digest against want. */
static void check_batch(const combo *c, const hb_msg *m, size_t n, hb_digest *want,
                        const char *what)
{
    hb_digest *got = tu_digests(n);
    size_t from_lanes = mb(c, m, NULL, n, got);
    tu_assert_digests(m, n, want, got, what);
    if (n >= 1000)
        fprintf(stderr, "%s: %zu of %zu digests from the lanes\n", what, from_lanes, n);
    free(got);
}

/* check_each: each message in a call of its own. */
static void check_each(const combo *c, const hb_msg *m, size_t n, hb_digest *want, const char *what)
{
    hb_digest *got = tu_digests(n);
    for (size_t i = 0; i < n; i++) {
        int done = hb_mb_hash(c->impl, c->rule, &m[i], NULL, 1, &got[i], NULL, NULL);
        ck_assert_msg(done == 1, "%s: message %zu alone: hb_mb_hash returned %d", what, i, done);
    }
    tu_assert_digests(m, n, want, got, what);
    free(got);
}

/* ---- the implementation table ------------------------------------------ */

START_TEST(test_portable_runnable)
{
    ck_assert_msg(hb_cpu_impl_runnable(HB_CPU_IMPL_PORTABLE),
                  "the portable implementation is always built and must run everywhere");
}
END_TEST

/* Every multi-buffer implementation: lanes in 1..HB_MB_LANES_MAX, a kernel,
 * a name that parses back to it (refused, but named, where it cannot
 * run); sha-ni has no lanes; an unknown name is refused. */
START_TEST(test_impl_table)
{
    for (int k = 0; k < NIMPLS; k++) {
        const hb_cpu_impl_desc *d = hb_cpu_impl_describe(mb_impls[k]);
        ck_assert_ptr_nonnull(d);
        ck_assert_ptr_nonnull(d->name);
        ck_assert_msg(d->blocks != NULL, "%s: no kernel", d->name);
        ck_assert_msg(d->lanes >= 1 && d->lanes <= HB_MB_LANES_MAX, "%s: %u lanes", d->name,
                      d->lanes);
        hb_cpu_impl parsed = HB_CPU_IMPL_COUNT;
        hb_status st = hb_cpu_impl_parse(d->name, &parsed);
        ck_assert_int_eq(parsed, mb_impls[k]);
        ck_assert_int_eq(st, hb_cpu_impl_runnable(mb_impls[k]) ? HB_OK : HB_ERR_INVALID_ARGUMENT);
    }
    ck_assert_uint_eq(hb_cpu_impl_describe(HB_CPU_IMPL_SHA_NI)->lanes, 0);
    hb_cpu_impl parsed;
    ck_assert_int_eq(hb_cpu_impl_parse("avx1024", &parsed), HB_ERR_INVALID_ARGUMENT);
}
END_TEST

/* ---- NIST vectors -------------------------------------------------------- */

/* nist: the vectors of rel as messages, and their NIST digests (which the
 * oracle must agree with, so a broken parser cannot pass). */
static hb_msg *nist(const char *rel, tu_rsp *r, hb_digest **want)
{
    const char *path = tu_testdata_path(rel);
    ck_assert_msg(tu_rsp_load(path, r) == 0, "cannot parse %s", path);
    ck_assert_uint_gt(r->nvectors, 60);
    hb_msg *m = calloc(r->nvectors, sizeof *m);
    *want = tu_digests(r->nvectors);
    ck_assert_ptr_nonnull(m);
    for (size_t i = 0; i < r->nvectors; i++) {
        m[i] = (hb_msg){r->vectors[i].msg, r->vectors[i].len};
        memcpy((*want)[i], r->vectors[i].md, 20);
    }
    hb_digest *ossl = tu_oracle(m, r->nvectors);
    tu_assert_digests(m, r->nvectors, *want, ossl, "OpenSSL against NIST");
    free(ossl);
    return m;
}

static void run_nist(const char *rel, int one_batch, int i)
{
    combo c;
    if (!combo_get(i, &c))
        return;
    tu_rsp r;
    hb_digest *want;
    hb_msg *m = nist(rel, &r, &want);
    char what[160], desc[96];
    snprintf(desc, sizeof desc, "%s %s", rel, one_batch ? "in one batch" : "one per call");
    label(what, sizeof what, &c, desc);
    if (one_batch)
        check_batch(&c, m, r.nvectors, want, what);
    else
        check_each(&c, m, r.nvectors, want, what);
    free(want);
    free(m);
    tu_rsp_free(&r);
}

START_TEST(test_nist_short_batch)
{
    run_nist(SHORT_FILE, 1, _i);
}
END_TEST

START_TEST(test_nist_short_each)
{
    run_nist(SHORT_FILE, 0, _i);
}
END_TEST

START_TEST(test_nist_long_batch)
{
    run_nist(LONG_FILE, 1, _i);
}
END_TEST

START_TEST(test_nist_long_each)
{
    run_nist(LONG_FILE, 0, _i);
}
END_TEST

/* ---- every length ------------------------------------------------------- */

#define ALL_LENGTHS_MAX 20000

/* Every length 0..20,000 in one batch, ascending (neighbouring lanes end a
 * byte apart) and shuffled (every lane sees every padding case). */
START_TEST(test_all_lengths)
{
    combo c;
    if (!combo_get(_i, &c))
        return;
    size_t n = ALL_LENGTHS_MAX + 1;
    size_t *lens = malloc(n * sizeof *lens);
    ck_assert_ptr_nonnull(lens);
    for (size_t k = 0; k < n; k++)
        lens[k] = k;
    for (int shuffled = 0; shuffled < 2; shuffled++) {
        uint64_t seed = base_seed + 100 + (uint64_t)shuffled;
        if (shuffled) {
            tu_rng r;
            tu_rng_seed(&r, seed);
            tu_shuffle_sizes(&r, lens, n);
        }
        tu_msgset s;
        tu_msgset_from_lengths(&s, lens, n, seed);
        char what[160];
        label(what, sizeof what, &c, shuffled ? "lengths 0..20000 shuffled" : "lengths 0..20000");
        check_batch(&c, s.m, s.n, s.want, what);
        tu_msgset_free(&s);
    }
    free(lens);
}
END_TEST

/* ---- a giant beside small ones -------------------------------------------- */

static uint8_t *giant_buf;
static size_t giant_map_len, giant_len;
static hb_digest giant_want_whole, giant_want_odd; /* [0, giant_len), [1, giant_len - 9) */

/* giant_prepare: maps, fills and hashes the giant once, before the forked
 * cases (which share it, never writing it). 0 if it cannot be mapped. */
static int giant_prepare(void)
{
    giant_len = scaled(GIANT_FULL, GIANT_MIN);
    giant_map_len = giant_len + 64;
    void *p = mmap(NULL, giant_map_len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "test_mb: cannot map %zu bytes for the giant message\n", giant_map_len);
        return 0;
    }
    giant_buf = p;
    double t0 = tu_now();
    tu_fill_pattern(giant_buf, giant_map_len);
    tu_sha1(giant_buf, giant_len, giant_want_whole);
    tu_sha1(giant_buf + 1, giant_len - 9, giant_want_odd);
    mprotect(giant_buf, giant_map_len, PROT_READ);
    fprintf(stderr, "giant message: %zu bytes, filled and hashed twice by OpenSSL in %.2f s\n",
            giant_len, tu_now() - t0);
    return 1;
}

static const size_t small_lens[SMALL_COUNT] = {0,   1,   3,   55,  56,  63,  64, 65,
                                               100, 119, 120, 127, 128, 191, 200};

/* giant_batch: the giant (whole and block-aligned, or starting at byte 1
 * and ending mid-block) first or last, beside the 15 small messages (the
 * empty one with data NULL). */
static void giant_batch(const combo *c, int giant_last)
{
    static uint8_t small[SMALL_COUNT][200];
    hb_msg m[SMALL_COUNT + 1];
    hb_digest want[SMALL_COUNT + 1];
    uint64_t seed = base_seed + 200;
    tu_rng r;
    tu_rng_seed(&r, seed);
    size_t at = giant_last ? 0 : 1;
    for (size_t k = 0; k < SMALL_COUNT; k++, at++) {
        tu_rng_fill(&r, small[k], sizeof small[k]);
        m[at] = (hb_msg){small_lens[k] ? small[k] : NULL, small_lens[k]};
        tu_sha1(m[at].data, m[at].len, want[at]);
    }
    size_t g = giant_last ? SMALL_COUNT : 0;
    if (giant_last) {
        m[g] = (hb_msg){giant_buf + 1, giant_len - 9};
        memcpy(want[g], giant_want_odd, 20);
    } else {
        m[g] = (hb_msg){giant_buf, giant_len};
        memcpy(want[g], giant_want_whole, 20);
    }
    char what[160], desc[96];
    snprintf(desc, sizeof desc, "%zu-byte message %s 15 of 0..200 bytes", m[g].len,
             giant_last ? "after" : "before");
    double t0 = tu_now();
    check_batch(c, m, SMALL_COUNT + 1, want, label(what, sizeof what, c, desc));
    fprintf(stderr, "%s/%s: giant %s: %.2f s\n", c->name, c->rule_name,
            giant_last ? "last" : "first", tu_now() - t0);
}

START_TEST(test_giant_first)
{
    combo c;
    if (combo_get(_i, &c))
        giant_batch(&c, 0);
}
END_TEST

START_TEST(test_giant_last)
{
    combo c;
    if (combo_get(_i, &c))
        giant_batch(&c, 1);
}
END_TEST

/* ---- batch sizes -------------------------------------------------------- */

/* batch_of: n messages of random lengths 0..300 (uniform_len < 0) or all of
 * uniform_len bytes, in one call. */
static void batch_of(const combo *c, size_t n, long uniform_len, uint64_t seed)
{
    size_t *lens = malloc((n ? n : 1) * sizeof *lens);
    ck_assert_ptr_nonnull(lens);
    tu_rng r;
    tu_rng_seed(&r, seed);
    for (size_t k = 0; k < n; k++)
        lens[k] = uniform_len < 0 ? tu_rng_below(&r, 301) : (size_t)uniform_len;
    tu_msgset s;
    tu_msgset_from_lengths(&s, lens, n, seed);
    char what[160], desc[96];
    if (uniform_len < 0)
        snprintf(desc, sizeof desc, "batch of %zu, lengths 0..300", n);
    else
        snprintf(desc, sizeof desc, "batch of %zu, all %ld bytes", n, uniform_len);
    check_batch(c, s.m, s.n, s.want, label(what, sizeof what, c, desc));
    tu_msgset_free(&s);
    free(lens);
}

START_TEST(test_batch_sizes)
{
    combo c;
    if (!combo_get(_i, &c))
        return;
    size_t l = c.lanes;
    const size_t sizes[] = {1, 2, 15, 16, 17, l - 1, l, l + 1, 2 * l - 1, 2 * l, 2 * l + 1, 100};
    const long uniform[] = {-1, 0, 55, 64, 1000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (size_t u = 0; u < sizeof uniform / sizeof uniform[0]; u++)
            if (sizes[k] > 0)
                batch_of(&c, sizes[k], uniform[u], base_seed + 300 + k * 8 + u);
}
END_TEST

/* A batch of 0 writes nothing and is done, with or without a which list. */
START_TEST(test_batch_of_zero)
{
    combo c;
    if (!combo_get(_i, &c))
        return;
    hb_msg m[1] = {{"abc", 3}};
    size_t which[1] = {0};
    hb_digest out[1];
    memset(out, SENTINEL, sizeof out);
    mb(&c, m, NULL, 0, out);
    mb(&c, m, which, 0, out);
    for (size_t k = 0; k < 20; k++)
        ck_assert_uint_eq(out[0][k], SENTINEL);
}
END_TEST

/* ---- where the bytes lie -------------------------------------------------- */

static const size_t offset_lens[] = {0, 1, 54, 55, 56, 63, 64, 65, 119, 120, 128, 1000, 4103};
#define NOFFSET_LENS (sizeof offset_lens / sizeof offset_lens[0])

/* Messages starting at every offset 0..63 of a buffer: all in one batch,
 * and one batch per offset. */
START_TEST(test_unaligned)
{
    combo c;
    if (!combo_get(_i, &c))
        return;
    uint64_t seed = base_seed + 400;
    size_t n = 64 * NOFFSET_LENS;
    uint8_t *buf = malloc(64 + 4103);
    hb_msg *m = calloc(n, sizeof *m);
    ck_assert_ptr_nonnull(buf);
    ck_assert_ptr_nonnull(m);
    tu_rng r;
    tu_rng_seed(&r, seed);
    tu_rng_fill(&r, buf, 64 + 4103);
    for (size_t off = 0; off < 64; off++)
        for (size_t k = 0; k < NOFFSET_LENS; k++)
            m[off * NOFFSET_LENS + k] = (hb_msg){buf + off, offset_lens[k]};
    hb_digest *want = tu_oracle(m, n);
    char what[160];
    check_batch(&c, m, n, want, label(what, sizeof what, &c, "offsets 0..63, one batch"));
    for (size_t off = 0; off < 64; off++) {
        char desc[64];
        snprintf(desc, sizeof desc, "offset %zu, a batch of its own", off);
        check_batch(&c, m + off * NOFFSET_LENS, NOFFSET_LENS, want + off * NOFFSET_LENS,
                    label(what, sizeof what, &c, desc));
    }
    free(want);
    free(m);
    free(buf);
}
END_TEST

/* guarded: read-only pages with an inaccessible page on each side. */
typedef struct {
    uint8_t *map, *lo, *hi; /* [lo, hi) readable */
    size_t map_len;
} guarded;

static void guarded_make(guarded *g, size_t len, uint64_t seed)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = (len + page - 1) / page * page;
    g->map_len = body + 2 * page;
    void *p = mmap(NULL, g->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_msg(p != MAP_FAILED, "mmap of %zu bytes", g->map_len);
    g->map = p;
    g->lo = g->map + page;
    g->hi = g->lo + body;
    ck_assert_int_eq(mprotect(g->lo, body, PROT_READ | PROT_WRITE), 0);
    tu_rng r;
    tu_rng_seed(&r, seed);
    tu_rng_fill(&r, g->lo, body);
    ck_assert_int_eq(mprotect(g->lo, body, PROT_READ), 0);
}

/* Every length 0..300 and some longer, each ending exactly where the
 * readable pages end, then each starting exactly where they begin, in
 * read-only memory: reading past either edge, or writing, faults (and
 * fails the case). In one batch, and a batch of each. */
START_TEST(test_guard_pages)
{
    combo c;
    if (!combo_get(_i, &c))
        return;
    static const size_t longer[] = {511, 512, 513, 1000, 4095, 4096, 4097, 8191, 65537};
    size_t nlong = sizeof longer / sizeof longer[0];
    size_t per_side = 301 + nlong;
    uint64_t seed = base_seed + 500;
    guarded g;
    guarded_make(&g, 65537, seed);
    hb_msg *m = calloc(2 * per_side, sizeof *m);
    ck_assert_ptr_nonnull(m);
    for (size_t k = 0; k < per_side; k++) {
        size_t len = k < 301 ? k : longer[k - 301];
        m[k] = (hb_msg){g.hi - len, len};
        m[per_side + k] = (hb_msg){g.lo, len};
    }
    hb_digest *want = tu_oracle(m, 2 * per_side);
    char what[160];
    check_batch(&c, m, 2 * per_side, want,
                label(what, sizeof what, &c, "against guard pages, one batch"));
    check_batch(&c, m, per_side, want, label(what, sizeof what, &c, "ending at a guard page"));
    check_batch(&c, m + per_side, per_side, want + per_side,
                label(what, sizeof what, &c, "starting after a guard page"));
    check_each(&c, m, 2 * per_side, want,
               label(what, sizeof what, &c, "against guard pages, one per call"));
    free(want);
    free(m);
    munmap(g.map, g.map_len);
}
END_TEST

/* ---- which lists -------------------------------------------------------- */

/* assert_untouched: out[i] still all SENTINEL. */
static void assert_untouched(const combo *c, hb_digest *out, size_t i)
{
    for (size_t k = 0; k < 20; k++)
        ck_assert_msg(out[i][k] == SENTINEL,
                      "%s/%s: out[%zu], not in the which list, was written (byte %zu = 0x%02x)",
                      c->name, c->rule_name, i, k, out[i][k]);
}

/* run_which: the count indices of which, on the set; the listed entries
 * right, every other entry untouched. */
static void run_which(const combo *c, const tu_msgset *s, const size_t *which, size_t count,
                      const char *what)
{
    hb_digest *got = tu_digests(s->n);
    uint8_t *listed = calloc(s->n, 1);
    ck_assert_ptr_nonnull(listed);
    memset(got, SENTINEL, s->n * sizeof *got);
    mb(c, s->m, which, count, got);
    for (size_t k = 0; k < count; k++) {
        size_t i = which[k];
        listed[i] = 1;
        if (memcmp(got[i], s->want[i], 20) != 0)
            tu_assert_digests(&s->m[i], 1, &s->want[i], &got[i], what);
    }
    for (size_t i = 0; i < s->n; i++)
        if (!listed[i])
            assert_untouched(c, got, i);
    free(listed);
    free(got);
}

/* A permuted subset of 117 of 200 messages, a single index, and all of
 * them in reverse order. */
START_TEST(test_which)
{
    combo c;
    if (!combo_get(_i, &c))
        return;
    uint64_t seed = base_seed + 600;
    tu_msgset s;
    size_t lens[200];
    tu_rng r;
    tu_rng_seed(&r, seed);
    for (size_t k = 0; k < 200; k++)
        lens[k] = k % 50 == 7 ? 100000 + tu_rng_below(&r, 1000) : tu_rng_below(&r, 3001);
    tu_msgset_from_lengths(&s, lens, 200, seed);
    size_t idx[200];
    for (size_t k = 0; k < 200; k++)
        idx[k] = k;
    tu_shuffle_sizes(&r, idx, 200);
    char what[160];
    run_which(&c, &s, idx, 117, label(what, sizeof what, &c, "117 of 200 permuted"));
    size_t last[1] = {199};
    run_which(&c, &s, last, 1, label(what, sizeof what, &c, "which = {199}"));
    for (size_t k = 0; k < 200; k++)
        idx[k] = 199 - k;
    run_which(&c, &s, idx, 200, label(what, sizeof what, &c, "all 200 reversed"));
    tu_msgset_free(&s);
}
END_TEST

/* ---- the watcher -------------------------------------------------------- */

typedef struct {
    uint64_t calls;
    uint64_t bytes;
    int stop; /* 1: say stop from the first call on */
} counter;

static int count_bytes(void *ctx, uint64_t bytes)
{
    counter *k = ctx;
    k->calls++;
    k->bytes += bytes;
    return !k->stop;
}

/* watch_set: kind 0: 8 messages of 3 MiB among 500 of 0..5,000 bytes;
 * kind 1: 5 small messages (under one piece in all); kind 2: one 40 MiB
 * message; kind 3: 1,000 messages of 0..20,000 bytes (about 10 MB). */
static void watch_set(tu_msgset *s, int kind, uint64_t seed)
{
    size_t lens[1000], n = 0;
    tu_rng r;
    tu_rng_seed(&r, seed);
    if (kind == 0) {
        for (n = 0; n < 508; n++)
            lens[n] = n % 63 == 5 ? (size_t)3 << 20 : tu_rng_below(&r, 5001);
    } else if (kind == 1) {
        static const size_t few[] = {0, 3, 64, 1000, 20000};
        for (n = 0; n < 5; n++)
            lens[n] = few[n];
    } else if (kind == 2) {
        lens[n++] = (size_t)40 << 20;
    } else {
        for (n = 0; n < 1000; n++)
            lens[n] = tu_rng_below(&r, 20001);
    }
    tu_msgset_from_lengths(s, lens, n, seed);
}

/* A watcher that always goes on: every digest right; what it was told
 * plus what is pending (less than a piece: its callers flush it, as
 * hb_cpu_hash_watched does) exactly the message bytes, padding not
 * counted; and, over many pieces, asked along the way, not only once. */
START_TEST(test_watch_goes_on)
{
    combo c;
    if (!combo_get(_i, &c))
        return;
    for (int kind = 0; kind < 4; kind++) {
        uint64_t seed = base_seed + 700 + (uint64_t)kind;
        tu_msgset s;
        watch_set(&s, kind, seed);
        counter k = {0, 0, 0};
        hb_cpu_watch w = {count_bytes, &k, 0, 0};
        hb_digest *got = tu_digests(s.n);
        char what[160], desc[64];
        snprintf(desc, sizeof desc, "watched, set %d (%zu messages, %zu bytes)", kind, s.n,
                 s.total_bytes);
        label(what, sizeof what, &c, desc);
        size_t from_lanes = SIZE_MAX;
        int done = hb_mb_hash(c.impl, c.rule, s.m, NULL, s.n, got, &w, &from_lanes);
        ck_assert_msg(done == 1, "%s: returned %d though the watcher never said stop", what, done);
        tu_assert_digests(s.m, s.n, s.want, got, what);
        check_rule(&c, s.n, from_lanes);
        ck_assert_msg(k.bytes + w.pending == s.total_bytes,
                      "%s: the watcher was told %llu bytes and %llu are pending, of %zu", what,
                      (unsigned long long)k.bytes, (unsigned long long)w.pending, s.total_bytes);
        ck_assert_msg(w.pending < HB_CPU_PIECE_BYTES,
                      "%s: %llu bytes pending, more than a piece, when hb_mb_hash returned", what,
                      (unsigned long long)w.pending);
        ck_assert_int_eq(hb_cpu_watch_flush(&w), 1); /* as its callers do */
        ck_assert_msg(w.pending == 0 && k.bytes == s.total_bytes,
                      "%s: the watcher was told %llu bytes of %zu after the flush", what,
                      (unsigned long long)k.bytes, s.total_bytes);
        uint64_t pieces = s.total_bytes / HB_CPU_PIECE_BYTES;
        ck_assert_msg(k.calls >= pieces / 8, "%s: asked %llu times over %llu pieces of %llu bytes",
                      what, (unsigned long long)k.calls, (unsigned long long)pieces,
                      (unsigned long long)HB_CPU_PIECE_BYTES);
        ck_assert_int_eq(w.stopped, 0);
        free(got);
        tu_msgset_free(&s);
    }
}
END_TEST

/* A watcher that says stop at its first call: hb_mb_hash returns 0, the
 * watcher knows it stopped, and it was told no more than the batch holds. */
START_TEST(test_watch_stops)
{
    combo c;
    if (!combo_get(_i, &c))
        return;
    const int kinds[] = {0, 2, 3};
    for (size_t j = 0; j < 3; j++) {
        uint64_t seed = base_seed + 800 + (uint64_t)j;
        tu_msgset s;
        watch_set(&s, kinds[j], seed);
        counter k = {0, 0, 1};
        hb_cpu_watch w = {count_bytes, &k, 0, 0};
        hb_digest *got = tu_digests(s.n);
        char what[160], desc[64];
        snprintf(desc, sizeof desc, "stopped at once, set %d (%zu messages, %zu bytes)", kinds[j],
                 s.n, s.total_bytes);
        label(what, sizeof what, &c, desc);
        int done = hb_mb_hash(c.impl, c.rule, s.m, NULL, s.n, got, &w, NULL);
        fprintf(stderr, "%s: returned %d after %llu calls, %llu bytes reported\n", what, done,
                (unsigned long long)k.calls, (unsigned long long)k.bytes);
        ck_assert_msg(done == 0, "%s: returned %d though the watcher said stop", what, done);
        ck_assert_msg(k.calls >= 1, "%s: returned 0 but never asked the watcher", what);
        ck_assert_int_eq(w.stopped, 1);
        ck_assert_msg(k.bytes + w.pending <= s.total_bytes,
                      "%s: %llu bytes reported (%llu pending) of %zu in the batch", what,
                      (unsigned long long)k.bytes, (unsigned long long)w.pending, s.total_bytes);
        free(got);
        tu_msgset_free(&s);
    }
}
END_TEST

/* ---- random differential -------------------------------------------------- */

#define RANDOM_N 20000
#define RANDOM_MAXLEN 5000
#define RANDOM_SEEDS 4

/* exact_copies: each message of s copied into an allocation of exactly its
 * length (none for the empty ones), so AddressSanitizer sees an over-read. */
static hb_msg *exact_copies(const tu_msgset *s, uint8_t ***own)
{
    hb_msg *m = calloc(s->n, sizeof *m);
    *own = calloc(s->n, sizeof **own);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(*own);
    for (size_t i = 0; i < s->n; i++) {
        m[i].len = s->m[i].len;
        if (m[i].len == 0)
            continue;
        (*own)[i] = malloc(m[i].len);
        ck_assert_ptr_nonnull((*own)[i]);
        memcpy((*own)[i], s->m[i].data, m[i].len);
        m[i].data = (*own)[i];
    }
    return m;
}

/* Four seeds per implementation and rule, each its own: 0: one batch;
 * 1: a which list of every index, shuffled; 2: split into uneven calls;
 * 3: each message in its own allocation. */
START_TEST(test_random_differential)
{
    combo c;
    if (!combo_get(_i, &c))
        return;
    size_t n = scaled(RANDOM_N, 100);
    for (int v = 0; v < RANDOM_SEEDS; v++) {
        uint64_t seed = base_seed + 900 + (uint64_t)(_i * RANDOM_SEEDS + v);
        tu_msgset s;
        tu_msgset_random(&s, n, RANDOM_MAXLEN, seed);
        char what[160], desc[96];
        snprintf(desc, sizeof desc, "random differential %d, %zu messages of 0..%d bytes", v, n,
                 RANDOM_MAXLEN);
        label(what, sizeof what, &c, desc);
        hb_digest *got = tu_digests(n);
        if (v == 1) {
            size_t *which = malloc(n * sizeof *which);
            ck_assert_ptr_nonnull(which);
            for (size_t i = 0; i < n; i++)
                which[i] = i;
            tu_rng r;
            tu_rng_seed(&r, seed);
            tu_shuffle_sizes(&r, which, n);
            mb(&c, s.m, which, n, got);
            free(which);
        } else if (v == 2) {
            tu_rng r;
            tu_rng_seed(&r, seed);
            for (size_t at = 0; at < n;) {
                size_t k = 1 + tu_rng_below(&r, 3 * c.lanes);
                k = k > n - at ? n - at : k;
                mb(&c, s.m + at, NULL, k, got + at);
                at += k;
            }
        } else if (v == 3) {
            uint8_t **own;
            hb_msg *m = exact_copies(&s, &own);
            mb(&c, m, NULL, n, got);
            for (size_t i = 0; i < n; i++)
                free(own[i]);
            free(own);
            free(m);
        } else {
            mb(&c, s.m, NULL, n, got);
        }
        tu_assert_digests(s.m, n, s.want, got, what);
        free(got);
        tu_msgset_free(&s);
    }
}
END_TEST

/* ---- the suite ------------------------------------------------------------ */

static void add_case(Suite *s, const char *name, const TTest *test, int timeout)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, timeout);
    tcase_add_loop_test(tc, test, 0, NCOMBOS);
    suite_add_tcase(s, tc);
}

static Suite *mb_suite(void)
{
    Suite *s = suite_create("mb");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, test_portable_runnable);
    tcase_add_test(tc, test_impl_table);
    suite_add_tcase(s, tc);

    add_case(s, "nist_short_batch", test_nist_short_batch, 60);
    add_case(s, "nist_short_each", test_nist_short_each, 60);
    add_case(s, "nist_long_batch", test_nist_long_batch, 60);
    add_case(s, "nist_long_each", test_nist_long_each, 60);
    add_case(s, "all_lengths", test_all_lengths, 300);
    add_case(s, "giant_first", test_giant_first, 300);
    add_case(s, "giant_last", test_giant_last, 300);
    add_case(s, "batch_sizes", test_batch_sizes, 120);
    add_case(s, "batch_of_zero", test_batch_of_zero, 30);
    add_case(s, "unaligned", test_unaligned, 60);
    add_case(s, "guard_pages", test_guard_pages, 60);
    add_case(s, "which", test_which, 60);
    add_case(s, "watch_goes_on", test_watch_goes_on, 120);
    add_case(s, "watch_stops", test_watch_stops, 120);
    add_case(s, "random_differential", test_random_differential, 300);
    return s;
}

/* report_impls: which implementations run here, which do not and why;
 * returns how many do not. */
static int report_impls(void)
{
    int not_run = 0;
    fprintf(stderr, "test_mb: HB_TEST_SEED=%llu, sizes scaled by %g%s\n",
            (unsigned long long)base_seed, scale, UNDER_SANITIZER ? " (sanitizer build)" : "");
    for (int k = 0; k < NIMPLS; k++) {
        const hb_cpu_impl_desc *d = hb_cpu_impl_describe(mb_impls[k]);
        if (hb_cpu_impl_runnable(mb_impls[k]))
            fprintf(stderr, "test_mb: testing %s (%u lanes)\n", d->name, d->lanes);
        else {
            fprintf(stderr, "test_mb: SKIPPING %s: %s\n", d->name, why_not_runnable(mb_impls[k]));
            not_run++;
        }
    }
    return not_run;
}

int main(void)
{
    const char *need[] = {SHORT_FILE, LONG_FILE};
    if (!tu_require_testdata(need, sizeof need / sizeof need[0]))
        return 1;
    if (!read_settings())
        return 1;
    int not_run = report_impls();
    if (!giant_prepare())
        return 1;
    int rc = tu_run_suite(mb_suite());
    munmap(giant_buf, giant_map_len);
    if (rc == 0 && not_run > 0) {
        fprintf(stderr, "SKIP: test_mb: every case passed, but not for:");
        for (int k = 0; k < NIMPLS; k++)
            if (!hb_cpu_impl_runnable(mb_impls[k]))
                fprintf(stderr, " %s (%s)", hb_cpu_impl_describe(mb_impls[k])->name,
                        why_not_runnable(mb_impls[k]));
        fprintf(stderr, "\n");
        return 77; /* skipped, or failed without SKIP_RETURN_CODE 77: never passed */
    }
    return rc;
}
