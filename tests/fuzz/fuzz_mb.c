/*
 * fuzz_mb.c - libFuzzer target: the multi-buffer SHA-1 (mb/mb_batch.h) on
 * up to 40 messages cut from the input, through every implementation this
 * CPU runs and every tail rule, against OpenSSL.
 *
 * Owns: decoding an input into messages (lengths from 0 bytes to 1 MiB,
 * block edges; their bytes are the input's own payload, cut in order,
 * then a fill seeded from it once the payload runs out), laid out one
 * after another, with gaps that shift their alignment, or each in an
 * allocation of exactly its length (AddressSanitizer sees an over-read);
 * optionally a `which` list (a permuted subset: the entries not listed
 * must stay untouched) and a watcher that always goes on (told, with the
 * pending rest its callers flush, exactly the message bytes). Every digest is checked against
 * OpenSSL's. Must not: take a digest from the library as an expectation, or use
 * hb_cpu_impl_runnable's answer for anything but which implementations
 * to run.
 */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "mb/mb_batch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_MESSAGES 40u
#define LEN_MAX ((size_t)1 << 20)
#define TOTAL_MAX ((size_t)2 << 20) /* message bytes per input */
#define SENTINEL 0xa5

#define CHECK(cond, ...) FUZZ_CHECK("fuzz_mb", cond, __VA_ARGS__)

static const hb_cpu_impl impls[] = {HB_CPU_IMPL_PORTABLE, HB_CPU_IMPL_AVX2, HB_CPU_IMPL_AVX512};
static const hb_mb_tail_rule rules[] = {HB_MB_TAIL_MEASURED, HB_MB_TAIL_LANES,
                                        HB_MB_TAIL_ONE_BY_ONE};
static const char *const rule_names[] = {"measured", "lanes", "one-by-one"};

/* ---- reading the input ------------------------------------------------- */

/* (reader, read_byte, read_bytes: fuzz_util.h) */

/* One length, by the code's top two bits: short, around a block
 * boundary, medium, long. */
static size_t read_length(reader *r, unsigned code)
{
    unsigned x = code & 63;
    switch (code >> 6) {
    case 0:
        return x;
    case 1:
        return 64 * (read_bytes(r, 1) + 1) + x % 18 - 9;
    case 2:
        return (size_t)read_bytes(r, 2);
    default:
        return (size_t)read_bytes(r, 3) % (LEN_MAX + 1);
    }
}

typedef struct {
    size_t n, total;
    size_t lens[MAX_MESSAGES];
    hb_msg m[MAX_MESSAGES];
    uint8_t *own[MAX_MESSAGES]; /* separately allocated messages */
    uint8_t *pool;
    size_t which[MAX_MESSAGES], nwhich;
    int use_which;
    hb_digest want[MAX_MESSAGES], got[MAX_MESSAGES];
} batch;

static batch the_batch;

/* read_lengths: a count (0..40) and that many length codes; the total is
 * capped at TOTAL_MAX (later messages shrink to fit). */
static void read_lengths(reader *r, batch *b)
{
    b->n = read_byte(r) % (MAX_MESSAGES + 1);
    b->total = 0;
    for (size_t i = 0; i < b->n; i++) {
        size_t len = read_length(r, read_byte(r));
        if (len > TOTAL_MAX - b->total)
            len = TOTAL_MAX - b->total;
        b->lens[i] = len;
        b->total += len;
    }
}

/* read_which: a permuted subset of [0, n), its size and order from the
 * input. */
static void read_which(reader *r, batch *b)
{
    size_t idx[MAX_MESSAGES];
    for (size_t i = 0; i < b->n; i++)
        idx[i] = i;
    b->nwhich = read_byte(r) % (b->n + 1);
    for (size_t i = 0; i < b->nwhich; i++) {
        size_t j = i + read_byte(r) % (b->n - i);
        size_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
        b->which[i] = idx[i];
    }
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* fill: len bytes, the rest of the payload first, then from seed. */
static void fill(uint8_t *p, size_t len, reader *payload, uint64_t seed)
{
    size_t k = len < payload->left ? len : payload->left;
    memcpy(p, payload->p, k);
    payload->p += k;
    payload->left -= k;
    for (; k < len; k += 8) {
        uint64_t v = mix64(seed + k);
        memcpy(p + k, &v, len - k < 8 ? len - k : 8);
    }
}

/* give_bytes: the messages one after another in one pool, gap bytes
 * (0..63, from the flags and the index) before each; or each in its own
 * allocation of exactly its length (separate). */
static void give_bytes(batch *b, reader *payload, unsigned gap, int separate)
{
    uint64_t seed = mix64(payload->left) ^ (payload->left ? payload->p[0] : 0);
    b->pool = NULL;
    if (!separate) {
        b->pool = malloc(b->total + 64 * b->n + 1);
        CHECK(b->pool != NULL, "pool of %zu bytes", b->total + 64 * b->n + 1);
    }
    size_t at = 0;
    for (size_t i = 0; i < b->n; i++) {
        b->own[i] = NULL;
        uint8_t *p;
        if (separate) {
            b->own[i] = b->lens[i] ? malloc(b->lens[i]) : NULL;
            CHECK(b->lens[i] == 0 || b->own[i] != NULL, "%zu bytes", b->lens[i]);
            p = b->own[i];
        } else {
            at += gap ? (gap * 7 + i * 13) % 64 : 0;
            p = b->pool + at;
            at += b->lens[i];
        }
        if (b->lens[i] > 0)
            fill(p, b->lens[i], payload, seed ^ mix64(i));
        b->m[i] = (hb_msg){p, b->lens[i]};
        unsigned outlen = 0;
        CHECK(EVP_Digest(p, b->lens[i], b->want[i], &outlen, EVP_sha1(), NULL) == 1, "EVP_Digest");
    }
}

static void free_batch(batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->own[i]);
    free(b->pool);
}

/* ---- checking ---------------------------------------------------------- */

static int go_on(void *ctx, uint64_t bytes)
{
    *(uint64_t *)ctx += bytes;
    return 1;
}

/* check_digest: got[i] is OpenSSL's digest of message i. */
static void check_digest(const batch *b, size_t i, const char *impl, const char *rule)
{
    if (memcmp(b->got[i], b->want[i], 20) == 0)
        return;
    char w[41], g[41];
    fuzz_hex(b->want[i], w);
    fuzz_hex(b->got[i], g);
    CHECK(0, "%s/%s: message %zu of %zu (%zu bytes, at %p): want %s got %s", impl, rule, i, b->n,
          b->lens[i], b->m[i].data, w, g);
}

/* run: one implementation and rule over the batch. */
static void run(batch *b, hb_cpu_impl impl, int rule, int watched)
{
    const char *name = hb_cpu_impl_describe(impl)->name;
    uint64_t told = 0;
    hb_cpu_watch w = {go_on, &told, 0, 0};
    memset(b->got, SENTINEL, sizeof b->got);
    size_t count = b->use_which ? b->nwhich : b->n, from_lanes = SIZE_MAX;
    int done = hb_mb_hash(impl, rules[rule], b->m, b->use_which ? b->which : NULL, count, b->got,
                          watched ? &w : NULL, &from_lanes);
    CHECK(done == 1, "%s/%s: hb_mb_hash of %zu messages returned %d", name, rule_names[rule], count,
          done);
    CHECK(from_lanes <= count, "%s/%s: %zu of %zu from the lanes", name, rule_names[rule],
          from_lanes, count);
    CHECK(rules[rule] != HB_MB_TAIL_LANES || from_lanes == count,
          "%s/%s: %zu of %zu from the lanes under the lanes rule", name, rule_names[rule],
          from_lanes, count);
    uint8_t listed[MAX_MESSAGES] = {0};
    size_t bytes = 0;
    for (size_t k = 0; k < count; k++) {
        size_t i = b->use_which ? b->which[k] : k;
        listed[i] = 1;
        bytes += b->lens[i];
        check_digest(b, i, name, rule_names[rule]);
    }
    for (size_t i = 0; i < b->n; i++)
        for (size_t k = 0; k < 20 && !listed[i]; k++)
            CHECK(b->got[i][k] == SENTINEL, "%s/%s: out[%zu], not in the which list, written", name,
                  rule_names[rule], i);
    if (watched)
        hb_cpu_watch_flush(&w); /* the rest, as its callers do */
    if (watched)
        CHECK(told == bytes && w.pending == 0,
              "%s/%s: watcher told %llu bytes (%llu pending) of %zu hashed", name, rule_names[rule],
              (unsigned long long)told, (unsigned long long)w.pending, bytes);
}

/* Input: flags (bit 0: separate allocations; bit 1: a which list; bit 2:
 * a watcher; bits 3-7: alignment gaps, 0 for none), the count and length
 * codes, the which list when asked for, then the payload. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size};
    batch *b = &the_batch;
    unsigned flags = read_byte(&r);
    read_lengths(&r, b);
    b->use_which = (flags >> 1) & 1;
    if (b->use_which)
        read_which(&r, b);
    give_bytes(b, &r, flags >> 3, flags & 1);
    CHECK(hb_cpu_impl_runnable(HB_CPU_IMPL_PORTABLE), "the portable implementation must run");
    for (size_t k = 0; k < sizeof impls / sizeof impls[0]; k++)
        if (hb_cpu_impl_runnable(impls[k]))
            for (int rule = 0; rule < 3; rule++)
                run(b, impls[k], rule, (flags >> 2) & 1);
    free_batch(b);
    return 0;
}
