/*
 * fuzz_batch.c - libFuzzer target: hb_sha1_batch on batches read from the
 * input, through the cpu backend and the opencl backend (pocl here),
 * against OpenSSL.
 *
 * Owns: decoding an input into a batch (lengths from 0 bytes to 2 MiB,
 * block edges, runs of one length that take the uniform path, contents
 * from a seed; messages in one pool, so launches read them in place, or
 * each in its own allocation of exactly its size, so an over-read is
 * caught by AddressSanitizer) and checking every digest of every engine
 * against OpenSSL's, and that the engines stay clean: no device error,
 * fallback or quarantine, and every byte sent to an opencl engine hashed
 * on its device. Three engines, each opened once, lazily, and kept: cpu;
 * opencl with the default staging buffer; opencl with the smallest one
 * (64 KiB, two launches in flight), where long messages stream through
 * many chunks.
 * Must not: take a digest from the library as an expectation, or close the
 * engines (they live as long as the process; LeakSanitizer sees them
 * reachable).
 */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "hashbatch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_MESSAGES 4096u
#define LEN_MAX (2u << 20)
#define TOTAL_MAX (2u << 20) /* message bytes per input */
#define NENGINES 3

#define CHECK(cond, ...) FUZZ_CHECK("fuzz_batch", cond, __VA_ARGS__)

/* ---- engines ----------------------------------------------------------- */

static hb_engine *engines[NENGINES];

/* engine k, opened on first use: verification off and no CPU fallback, so
 * a wrong device digest or a device error reaches the check. */
static hb_engine *engine(int k)
{
    if (engines[k] != NULL)
        return engines[k];
    hb_config cfg;
    hb_config_init(&cfg);
    cfg.backend = k == 0 ? HB_BACKEND_CPU : HB_BACKEND_OPENCL;
    cfg.use_environment = 0;
    cfg.verify = HB_VERIFY_OFF;
    cfg.cpu_fallback = 0;
    cfg.seed = 0x5eed;
    if (k == 2) {
        cfg.staging_bytes = 64u << 10;
        cfg.ring_depth = 2;
    }
    hb_status st = hb_engine_open(&engines[k], &cfg);
    CHECK(st == HB_OK, "hb_engine_open(engine %d) = %s: %s", k, hb_status_name(st),
          hb_engine_last_error(NULL));
    return engines[k];
}

static void check_clean(hb_engine *e)
{
    hb_stats s;
    CHECK(hb_engine_stats(e, &s) == HB_OK, "hb_engine_stats");
    CHECK(s.verify_mismatches == 0 && s.fallbacks == 0 && s.device_errors == 0 &&
              s.quarantined == 0,
          "%s: mismatches %llu, fallbacks %llu, device errors %llu, quarantined %d",
          hb_engine_describe(e), (unsigned long long)s.verify_mismatches,
          (unsigned long long)s.fallbacks, (unsigned long long)s.device_errors, s.quarantined);
    if (hb_engine_backend(e) == HB_BACKEND_OPENCL)
        CHECK(s.device_bytes == s.bytes, "%s: %llu of %llu bytes hashed on the device",
              hb_engine_describe(e), (unsigned long long)s.device_bytes,
              (unsigned long long)s.bytes);
}

/* ---- reading the input ------------------------------------------------- */

/* (reader, read_byte, read_bytes: fuzz_util.h) */

/* One length, by class: short, block edges, medium, long. */
static size_t read_length(reader *r, unsigned code)
{
    unsigned x = code & 31;
    switch ((code >> 5) % 6) {
    case 0:
        return x;
    case 1:
        return 32 + x;
    case 2:
        return 64 * (read_bytes(r, 1) + 1) + x % 18 - 9; /* around a block boundary */
    case 3:
        return (size_t)read_bytes(r, 2) % 8192;
    case 4:
        return (size_t)read_bytes(r, 2) * 16 + x; /* up to 1 MiB */
    default:
        return (size_t)read_bytes(r, 3) % LEN_MAX;
    }
}

typedef struct {
    size_t n, total;
    size_t lens[MAX_MESSAGES];
    hb_msg m[MAX_MESSAGES];
    uint8_t *own[MAX_MESSAGES]; /* separately allocated messages */
    uint8_t *pool;
    hb_digest want[MAX_MESSAGES], got[MAX_MESSAGES];
} batch;

static batch the_batch;

/* Lengths until the input ends, MAX_MESSAGES or TOTAL_MAX bytes; codes
 * 0xc0..0xff repeat the last length 1..64 (or 64..4096) times. */
static void read_lengths(reader *r, batch *b)
{
    b->n = b->total = 0;
    while (r->left > 0 && b->n < MAX_MESSAGES) {
        unsigned code = read_byte(r);
        size_t count = 1, len;
        if (code >= 0xc0 && b->n > 0) {
            count = (code & 31) + 1u;
            if (code >= 0xe0)
                count *= 64;
            len = b->lens[b->n - 1];
        } else {
            len = read_length(r, code);
        }
        for (size_t k = 0; k < count && b->n < MAX_MESSAGES; k++) {
            if (b->total + len > TOTAL_MAX)
                return;
            b->lens[b->n++] = len;
            b->total += len;
        }
    }
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void fill(uint8_t *p, size_t len, uint64_t seed)
{
    for (size_t k = 0; k < len; k += 8) {
        uint64_t v = mix64(seed + k);
        memcpy(p + k, &v, len - k < 8 ? len - k : 8);
    }
}

/* Contents: one pool, each message at its own offset (separate = 0), or
 * each message in an allocation of exactly its length. */
static void give_bytes(batch *b, uint64_t seed, int separate)
{
    b->pool = NULL;
    if (!separate) {
        size_t pool_len = b->total + 64 * b->n + 1;
        b->pool = malloc(pool_len);
        CHECK(b->pool != NULL, "pool of %zu bytes", pool_len);
        fill(b->pool, pool_len, seed);
    }
    size_t at = 0;
    for (size_t i = 0; i < b->n; i++) {
        b->own[i] = NULL;
        if (separate) {
            b->own[i] = malloc(b->lens[i] ? b->lens[i] : 1);
            CHECK(b->own[i] != NULL, "%zu bytes", b->lens[i]);
            fill(b->own[i], b->lens[i], seed ^ mix64(i));
            b->m[i] = (hb_msg){b->own[i], b->lens[i]};
        } else {
            at += mix64(seed + i) % 64;
            b->m[i] = (hb_msg){b->pool + at, b->lens[i]};
            at += b->lens[i];
        }
        unsigned outlen = 0;
        CHECK(EVP_Digest(b->m[i].data, b->lens[i], b->want[i], &outlen, EVP_sha1(), NULL) == 1,
              "EVP_Digest");
    }
}

static void free_batch(batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->own[i]);
    free(b->pool);
}

static void run_engine(batch *b, int k)
{
    hb_engine *e = engine(k);
    memset(b->got, 0, b->n * sizeof b->got[0]);
    hb_status st = hb_sha1_batch(e, b->m, b->n, b->got);
    CHECK(st == HB_OK, "%s: hb_sha1_batch(%zu messages, %zu bytes) = %s: %s", hb_engine_describe(e),
          b->n, b->total, hb_status_name(st), hb_engine_last_error(e));
    for (size_t i = 0; i < b->n; i++) {
        if (memcmp(b->got[i], b->want[i], 20) == 0)
            continue;
        char w[41], g[41];
        fuzz_hex(b->want[i], w);
        fuzz_hex(b->got[i], g);
        CHECK(0, "%s: message %zu of %zu (%zu bytes): want %s got %s", hb_engine_describe(e), i,
              b->n, b->lens[i], w, g);
    }
    check_clean(e);
}

/* Input: flags (bits 0-2: which engines, none set meaning all; bit 3:
 * separate allocations), a 2-byte seed, then length codes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size};
    batch *b = &the_batch;
    unsigned flags = read_byte(&r);
    uint64_t seed = read_bytes(&r, 2);
    read_lengths(&r, b);
    give_bytes(b, seed, (flags >> 3) & 1);
    unsigned mask = flags & 7 ? flags & 7 : 7;
    for (int k = 0; k < NENGINES; k++)
        if (mask >> k & 1)
            run_engine(b, k);
    free_batch(b);
    return 0;
}
