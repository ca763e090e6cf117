/*
 * bench_measure.c - timing one case of `hashbatch bench`: a batch of
 * equal-sized messages, hashed back to back by one backend (or by
 * OpenSSL's SHA-1 on one thread), run after run, every run checked
 * against OpenSSL's digests.
 *
 * Owns: the random input, laying batches over it, the reference digests,
 * the timed loops, the medians and spreads, and the collection of
 * results. Must not: print anything but a failure (digest mismatch,
 * engine error), or choose what to measure.
 *
 * The reference is OpenSSL's low-level SHA1_Init/Update/Final, as the
 * library's CPU pool uses it: in OpenSSL 3 the one-shot SHA1() fetches
 * the algorithm on every call, which costs more than hashing 64 bytes.
 *
 * Testing hook: HASHBATCH_BENCH_CORRUPT=NAME flips one byte of backend
 * NAME's output after its first timed run (NAME "openssl": the OpenSSL
 * loop's), to show that a wrong digest stops the benchmark.
 */
#define OPENSSL_SUPPRESS_DEPRECATED /* SHA1_Init: the cheapest OpenSSL path */
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "bench.h"

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* sha1: OpenSSL's SHA-1 of one message, with a context on the stack. */
static void sha1(const void *data, size_t len, uint8_t *digest)
{
    SHA_CTX ctx;
    SHA1_Init(&ctx);
    SHA1_Update(&ctx, data, len);
    SHA1_Final(digest, &ctx);
}

int bench_input_make(bench_input *in, size_t bytes)
{
    memset(in, 0, sizeof *in);
    in->data = malloc(bytes ? bytes : 1);
    if (in->data == NULL)
        return -1;
    in->bytes = bytes;
    uint64_t x = 0;
    if (getrandom(&x, sizeof x, 0) != (ssize_t)sizeof x)
        x = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15u;
    x |= 1; /* xorshift needs a non-zero state */
    in->seed = x;
    for (size_t i = 0; i < bytes; i += 8) { /* xorshift64* */
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t v = x * 0x2545f4914f6cdd1du;
        memcpy(in->data + i, &v, bytes - i < 8 ? bytes - i : 8);
    }
    return 0;
}

void bench_input_free(bench_input *in)
{
    free(in->data);
    memset(in, 0, sizeof *in);
}

int bench_case_init(bench_case *c, const bench_input *in, size_t size, size_t count)
{
    memset(c, 0, sizeof *c);
    c->size = size;
    c->count = count;
    c->msgs = malloc(count * sizeof *c->msgs);
    c->want = malloc(count * sizeof *c->want);
    c->got = malloc(count * sizeof *c->got);
    if (c->msgs == NULL || c->want == NULL || c->got == NULL || size * count > in->bytes) {
        bench_case_free(c);
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        c->msgs[i] = (hb_msg){in->data + i * size, size};
        sha1(in->data + i * size, size, c->want[i]);
    }
    return 0;
}

void bench_case_free(bench_case *c)
{
    free(c->msgs);
    free(c->want);
    free(c->got);
    memset(c, 0, sizeof *c);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* quantile: of sorted v[0..n), linearly interpolated (q in [0, 1]). */
static double quantile(const double *v, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n)
        return v[n - 1];
    return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

void bench_spread_of(double *v, size_t n, bench_spread *s)
{
    qsort(v, n, sizeof *v, by_value);
    s->min = v[0];
    s->max = v[n - 1];
    s->median = quantile(v, n, 0.5);
    s->q1 = quantile(v, n, 0.25);
    s->q3 = quantile(v, n, 0.75);
}

/* corrupt_wanted: does the testing hook name this backend? */
static int corrupt_wanted(const char *name)
{
    const char *v = getenv("HASHBATCH_BENCH_CORRUPT");
    return v != NULL && strcmp(v, name) == 0;
}

/* hex: the digest as 40 hex digits into buf[41]. */
static const char *hex(const uint8_t *d, char *buf)
{
    for (int i = 0; i < 20; i++)
        snprintf(buf + 2 * i, 3, "%02x", d[i]);
    return buf;
}

/* check: every digest of the run against OpenSSL's. Returns 0, or
 * CLI_EXIT_FAILURE after naming the first message that differs. */
static int check(const bench_case *c, const char *who)
{
    if (memcmp(c->got, c->want, c->count * sizeof *c->want) == 0)
        return 0;
    size_t i = 0;
    while (memcmp(c->got[i], c->want[i], sizeof c->want[i]) == 0)
        i++;
    char g[41], w[41];
    cli_error(BENCH_CMD ": DIGEST MISMATCH: backend %s, batch of %zu messages of %zu bytes: "
                        "message %zu hashed to %s, OpenSSL gives %s; the benchmark stops",
              who, c->count, c->size, i, hex(c->got[i], g), hex(c->want[i], w));
    return CLI_EXIT_FAILURE;
}

/* engine_failed: reports a failed batch. */
static int engine_failed(const bench_backend *b, const bench_case *c, hb_status st)
{
    const char *detail = hb_engine_last_error(b->engine);
    cli_error(BENCH_CMD ": backend %s, batch of %zu messages of %zu bytes: %s%s%s", b->name,
              c->count, c->size, hb_status_str(st), detail[0] ? ": " : "", detail);
    return CLI_EXIT_FAILURE;
}

/* finish: spreads of the per-run rates into *r. */
static void finish(const bench_case *c, double *rate, unsigned runs, bench_result *r)
{
    double mps[1000];
    for (unsigned i = 0; i < runs; i++)
        mps[i] = rate[i] / (double)c->size;
    bench_spread_of(mps, runs, &r->mps);
    for (unsigned i = 0; i < runs; i++)
        rate[i] /= 1e9;
    bench_spread_of(rate, runs, &r->gbps);
}

/* init_result: the fields every result has. */
static void init_result(bench_result *r, const bench_case *c, int backend, const bench_opts *o)
{
    bench_sweep sweep = r->sweep;
    memset(r, 0, sizeof *r);
    r->sweep = sweep;
    r->backend = backend;
    r->size = c->size;
    r->count = c->count;
    r->runs = o->runs;
    r->device_share = -1;
}

int bench_case_engine(const bench_case *c, const bench_backend *b, int index, const bench_opts *o,
                      bench_result *r)
{
    double rate[1000];
    init_result(r, c, index, o);
    hb_status st = hb_sha1_batch(b->engine, c->msgs, c->count, c->got); /* warm-up */
    if (st != HB_OK)
        return engine_failed(b, c, st);
    if (check(c, b->name) != 0)
        return CLI_EXIT_FAILURE;
    hb_stats before, after;
    hb_engine_stats(b->engine, &before);
    for (unsigned run = 0; run < o->runs; run++) {
        memset(c->got, 0, c->count * sizeof *c->got);
        uint64_t calls = 0;
        double t0 = seconds_now(), t;
        do {
            st = hb_sha1_batch(b->engine, c->msgs, c->count, c->got);
            calls++;
            t = seconds_now() - t0;
        } while (st == HB_OK && t < o->min_time);
        if (st != HB_OK)
            return engine_failed(b, c, st);
        if (run == 0 && corrupt_wanted(b->name))
            c->got[c->count - 1][0] ^= 1;
        if (check(c, b->name) != 0)
            return CLI_EXIT_FAILURE;
        r->checked++;
        r->calls += calls;
        r->seconds += t;
        rate[run] = (double)calls * (double)c->count * (double)c->size / t;
    }
    hb_engine_stats(b->engine, &after);
    uint64_t bytes = after.bytes - before.bytes;
    if (strcmp(b->kind, "cpu") != 0 && bytes > 0)
        r->device_share = (double)(after.device_bytes - before.device_bytes) / (double)bytes;
    r->verified = after.verified - before.verified;
    r->mismatches = after.verify_mismatches - before.verify_mismatches;
    r->fallbacks = after.fallbacks - before.fallbacks;
    finish(c, rate, o->runs, r);
    return 0;
}

/* openssl_pass: OpenSSL over every message of c, on this thread. */
static void openssl_pass(const bench_case *c)
{
    for (size_t i = 0; i < c->count; i++)
        sha1(c->msgs[i].data, c->msgs[i].len, c->got[i]);
}

int bench_case_openssl(const bench_case *c, const bench_opts *o, bench_result *r)
{
    double rate[1000];
    init_result(r, c, BENCH_OPENSSL, o);
    openssl_pass(c); /* warm-up */
    for (unsigned run = 0; run < o->runs; run++) {
        memset(c->got, 0, c->count * sizeof *c->got);
        uint64_t calls = 0;
        double t0 = seconds_now(), t;
        do {
            openssl_pass(c);
            calls++;
            t = seconds_now() - t0;
        } while (t < o->min_time);
        if (run == 0 && corrupt_wanted("openssl"))
            c->got[c->count - 1][0] ^= 1;
        if (check(c, "openssl") != 0)
            return CLI_EXIT_FAILURE;
        r->checked++;
        r->calls += calls;
        r->seconds += t;
        rate[run] = (double)calls * (double)c->count * (double)c->size / t;
    }
    finish(c, rate, o->runs, r);
    return 0;
}

int bench_report_add(bench_report *rep, const bench_result *r)
{
    if (rep->n == rep->cap) {
        size_t cap = rep->cap ? rep->cap * 2 : 64;
        bench_result *p = realloc(rep->r, cap * sizeof *p);
        if (p == NULL)
            return -1;
        rep->r = p;
        rep->cap = cap;
    }
    rep->r[rep->n++] = *r;
    return 0;
}

const bench_result *bench_report_find(const bench_report *rep, bench_sweep sweep, int backend,
                                      size_t size, size_t count)
{
    for (size_t i = 0; i < rep->n; i++) {
        const bench_result *r = &rep->r[i];
        if (r->sweep == sweep && r->backend == backend && r->size == size && r->count == count)
            return r;
    }
    return NULL;
}
