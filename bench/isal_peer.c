/*
 * isal_peer.c - isa-l_crypto's multi-buffer SHA-1 rate, the peer beside
 * hashbatch's CPU implementations in issue 12's benchmarks.
 *
 * Owns: hashing COUNT distinct messages of MESSAGE_BYTES through
 * isa-l_crypto's function-dispatched context manager
 * (isal_sha1_ctx_mgr_init/submit/flush: on a CPU with AVX-512 and SHA-NI
 * it picks the 16-lane AVX-512 code with SHA-NI for the last lanes),
 * THREADS threads (kept between passes; at most one per message) each
 * with its own manager and an equal contiguous share; timing ROUNDS
 * rounds after an untimed warm-up (a round: one pass over every message,
 * or with --min-time passes until S seconds have gone by) and printing
 * each and the median per pass;
 * checking a sample of digests against OpenSSL's SHA1() after the warm-up
 * and after every timed round (outside the timing); and, with --one, the
 * latency of one message (submit + flush) as a median of REPEATS.
 * The messages lie in one arena of COUNT * MESSAGE_BYTES, back to back, as
 * in hashbatch's own benchmarks (bench/throughput.c): xorshift bytes, and
 * each message's index in its first 8 bytes (when it has 8), so no two are
 * equal. Digests are written to an array (COUNT x 20 bytes), as hashbatch
 * writes them.
 * Must not: be built by the project's CMake or run under ctest (it needs a
 * build of isa-l_crypto, which is never required; bench/isal_peer.sh
 * builds it, and `hashbatch bench --peer-isal DIR` compiles the copy of
 * this file embedded in it), or carry any isa-l_crypto code.
 *
 *   isal_peer [--min-time S] MESSAGE_BYTES COUNT [ROUNDS] [THREADS]
 *                                                      (5; online cores)
 *   isal_peer --one MESSAGE_BYTES [REPEATS]            (10000)
 *
 * Prints `round=R s=S gbps=G passes=P` per round (S: the round's
 * seconds, P passes), then `isal_sha1_mb bytes=B count=N threads=T
 * median_s=S gbps=G msgs_per_s=M` (S: per pass; GB = 1e9 bytes), or
 * `isal_sha1_mb_one bytes=B repeats=R median_ns=X min_ns=Y`. A usage
 * error exits 2; a digest that differs from OpenSSL's, or a failure of
 * isa-l_crypto, exits 1.
 */
#define _POSIX_C_SOURCE 200809L

#include <isa-l_crypto.h>
#include <openssl/sha.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef ISAL_SHA1_MAX_LANES
#error "isal_peer needs isa-l_crypto 2.25 or newer (isal_sha1_ctx_mgr_* and ISAL_ names)"
#endif

#define DIGEST_BYTES 20
#define SAMPLE_DIGESTS 1000
#define MAX_ROUNDS 1000
#define MAX_MIN_TIME 60
#define MAX_THREADS 1024
#define DEFAULT_ROUNDS 5
#define DEFAULT_REPEATS 10000
#define MAX_REPEATS 10000000
/* Contexts per manager: a manager holds at most ISAL_SHA1_MAX_LANES in
 * flight, so twice that never runs dry (a flush refills it if it did). */
#define POOL_CTXS (2 * ISAL_SHA1_MAX_LANES)

typedef struct {
    const unsigned char *arena;
    size_t bytes;        /* of each message */
    size_t first, count; /* this share: messages [first, first + count) */
    unsigned char *out;  /* digests of every message, DIGEST_BYTES each */
    const char *failure; /* NULL, or what went wrong */
} share;

/* One manager and its contexts, with a stack of the free ones. */
typedef struct {
    ISAL_SHA1_HASH_CTX_MGR *mgr;
    ISAL_SHA1_HASH_CTX *ctxs;
    ISAL_SHA1_HASH_CTX *free_ctxs[POOL_CTXS];
    size_t n_free;
} lane_pool;

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median of v[0..n) (n >= 1); sorts v. */
static double median_of(double *v, size_t n)
{
    qsort(v, n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* parse_count: *out = s as a decimal in [lo, hi]; 0 with a message naming
 * what when it is not. */
static int parse_count(const char *s, const char *what, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s < '0' || *s > '9' || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
        fprintf(stderr,
                "isal_peer: %s must be a whole number from %" PRIu64 " to %" PRIu64 ", not '%s'\n",
                what, lo, hi, s);
        return 0;
    }
    *out = v;
    return 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: isal_peer [--min-time S] MESSAGE_BYTES COUNT [ROUNDS] [THREADS]\n"
                    "       isal_peer --one MESSAGE_BYTES [REPEATS]\n");
    return 2;
}

/* parse_seconds: *out = s as seconds above 0 and at most MAX_MIN_TIME; 0
 * with a message when it is not. */
static int parse_seconds(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !(v > 0 && v <= MAX_MIN_TIME)) {
        fprintf(stderr, "isal_peer: --min-time must be seconds above 0, at most %d, not '%s'\n",
                MAX_MIN_TIME, s);
        return 0;
    }
    *out = v;
    return 1;
}

/* fill_messages: xorshift bytes over the arena, then each message's index
 * in its first 8 bytes (little-endian) when it is that long. */
static void fill_messages(unsigned char *arena, size_t bytes, size_t count)
{
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < bytes * count; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        arena[i] = (unsigned char)(x >> 32);
    }
    for (size_t i = 0; bytes >= 8 && i < count; i++) {
        for (int b = 0; b < 8; b++)
            arena[i * bytes + (size_t)b] = (unsigned char)((uint64_t)i >> (8 * b));
    }
}

/* round_up_64: n rounded up to a multiple of 64 (aligned_alloc wants one). */
static size_t round_up_64(size_t n)
{
    return (n + 63) / 64 * 64;
}

/* pool_open: a manager (64-byte aligned, as its AVX-512 code wants) and
 * POOL_CTXS contexts, all free; 0 when memory or the manager's init fails. */
static int pool_open(lane_pool *p)
{
    memset(p, 0, sizeof *p);
    p->mgr = aligned_alloc(64, round_up_64(sizeof *p->mgr));
    p->ctxs = aligned_alloc(64, round_up_64(POOL_CTXS * sizeof *p->ctxs));
    if (!p->mgr || !p->ctxs || isal_sha1_ctx_mgr_init(p->mgr) != 0)
        return 0;
    for (size_t i = 0; i < POOL_CTXS; i++) {
        isal_hash_ctx_init(&p->ctxs[i]);
        p->free_ctxs[p->n_free++] = &p->ctxs[i];
    }
    return 1;
}

static void pool_close(lane_pool *p)
{
    free(p->mgr);
    free(p->ctxs);
}

/* digest_bytes: the 5 words of a finished context, big-endian, as SHA1()
 * writes them. */
static void digest_bytes(const ISAL_SHA1_HASH_CTX *ctx, unsigned char *out)
{
    const uint32_t *w = isal_hash_ctx_digest(ctx);
    for (int i = 0; i < ISAL_SHA1_DIGEST_NWORDS; i++) {
        out[4 * i] = (unsigned char)(w[i] >> 24);
        out[4 * i + 1] = (unsigned char)(w[i] >> 16);
        out[4 * i + 2] = (unsigned char)(w[i] >> 8);
        out[4 * i + 3] = (unsigned char)w[i];
    }
}

/* harvest: a context the manager handed back: its digest to out at the
 * index in its user data, and the context back on the free stack; 0 when
 * it is not a finished hash. */
static int harvest(lane_pool *p, ISAL_SHA1_HASH_CTX *ctx, unsigned char *out)
{
    if (!isal_hash_ctx_complete(ctx) || isal_hash_ctx_error(ctx) != ISAL_HASH_CTX_ERROR_NONE)
        return 0;
    size_t index = (size_t)(uintptr_t)isal_hash_ctx_user_data(ctx);
    digest_bytes(ctx, out + index * DIGEST_BYTES);
    p->free_ctxs[p->n_free++] = ctx;
    return 1;
}

/* flush_one: flushes until the manager hands back a context (harvested);
 * returns 0 on a failure, and sets *empty when nothing was in flight. */
static int flush_one(lane_pool *p, unsigned char *out, int *empty)
{
    ISAL_SHA1_HASH_CTX *done = NULL;
    if (isal_sha1_ctx_mgr_flush(p->mgr, &done) != 0)
        return 0;
    *empty = done == NULL;
    return done == NULL || harvest(p, done, out);
}

/* take_ctx: a free context, flushing the manager until one comes back
 * when none is free; NULL, with *failure set, when none can. */
static ISAL_SHA1_HASH_CTX *take_ctx(lane_pool *p, unsigned char *out, const char **failure)
{
    int empty = 0;
    while (p->n_free == 0) {
        if (!flush_one(p, out, &empty)) {
            *failure = "flush handed back a failed context";
            return NULL;
        }
        if (empty) {
            *failure = "every context is out, yet the manager holds none";
            return NULL;
        }
    }
    return p->free_ctxs[--p->n_free];
}

/* hash_share: every message of s through pool p (whose contexts are all
 * free, and are again afterwards); NULL, or what failed. */
static const char *hash_share(share *s, lane_pool *p)
{
    const char *failure = NULL;
    int empty = 0;
    for (size_t i = s->first; i < s->first + s->count && !failure; i++) {
        ISAL_SHA1_HASH_CTX *ctx = take_ctx(p, s->out, &failure), *done = NULL;
        if (!ctx)
            break;
        isal_hash_ctx_init(ctx);
        ctx->user_data = (void *)(uintptr_t)i;
        if (isal_sha1_ctx_mgr_submit(p->mgr, ctx, &done, s->arena + i * s->bytes,
                                     (uint32_t)s->bytes, ISAL_HASH_ENTIRE) != 0)
            failure = "isal_sha1_ctx_mgr_submit failed";
        else if (done && !harvest(p, done, s->out))
            failure = "submit handed back an unfinished or failed context";
    }
    while (!failure && !empty)
        failure = flush_one(p, s->out, &empty) ? NULL : "flush handed back a failed context";
    if (!failure && p->n_free != POOL_CTXS)
        failure = "a context never came back from the manager";
    return failure;
}

/* A crew of threads that stay up between passes: the calling thread
 * starts a pass and hashes share 0 itself while THREADS - 1 workers hash
 * the others, each with its own manager opened once, so a pass pays for
 * neither starting threads nor setting up managers (hashbatch's CPU pool
 * keeps its threads too). */
typedef struct crew crew;

typedef struct {
    crew *c;
    size_t index;
    share s;
    lane_pool pool;
    pthread_t id;
} member;

struct crew {
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    unsigned long pass; /* incremented to start a pass */
    size_t pending;     /* workers still hashing the current pass */
    int quit;
    size_t threads, started; /* started: workers running (threads - 1 once open) */
    member m[MAX_THREADS];
};

static void *worker(void *arg)
{
    member *w = arg;
    crew *c = w->c;
    unsigned long seen = 0;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (c->pass == seen && !c->quit)
            pthread_cond_wait(&c->start, &c->mu);
        if (c->quit)
            break;
        seen = c->pass;
        pthread_mutex_unlock(&c->mu);
        w->s.failure = hash_share(&w->s, &w->pool);
        pthread_mutex_lock(&c->mu);
        if (--c->pending == 0)
            pthread_cond_signal(&c->done);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* crew_close: stops and joins the workers, frees the managers. */
static void crew_close(crew *c)
{
    pthread_mutex_lock(&c->mu);
    c->quit = 1;
    pthread_cond_broadcast(&c->start);
    pthread_mutex_unlock(&c->mu);
    for (size_t t = 1; t <= c->started; t++)
        pthread_join(c->m[t].id, NULL);
    for (size_t t = 0; t < c->threads; t++)
        pool_close(&c->m[t].pool);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->start);
    pthread_cond_destroy(&c->done);
}

/* crew_open: threads members (at most one per message: a member with
 * nothing to hash would only cost each pass a wake-up) on equal
 * contiguous shares of count messages, a manager each, all but the
 * first on their own threads;
 * 0 with a message (and nothing left open) when that fails. */
static int crew_open(crew *c, const unsigned char *arena, size_t bytes, size_t count,
                     size_t threads, unsigned char *out)
{
    int ok = 1;
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->start, NULL);
    pthread_cond_init(&c->done, NULL);
    c->threads = threads = threads < count ? threads : count; /* none idle */
    for (size_t t = 0; t < threads; t++) {
        member *w = &c->m[t];
        size_t first = count * t / threads, end = count * (t + 1) / threads;
        w->c = c;
        w->index = t;
        w->s = (share){arena, bytes, first, end - first, out, NULL};
        ok = ok && pool_open(&w->pool);
    }
    if (!ok)
        fprintf(stderr, "isal_peer: out of memory, or isal_sha1_ctx_mgr_init failed\n");
    for (size_t t = 1; ok && t < threads; t++) {
        ok = pthread_create(&c->m[t].id, NULL, worker, &c->m[t]) == 0;
        c->started += ok;
    }
    if (!ok && c->started + 1 < threads)
        fprintf(stderr, "isal_peer: could not start %zu threads\n", threads);
    if (!ok)
        crew_close(c);
    return ok;
}

/* crew_pass: every message once, all members at once; the wall seconds,
 * or -1 with a message when something failed. */
static double crew_pass(crew *c)
{
    double t0 = seconds_now();
    pthread_mutex_lock(&c->mu);
    c->pending = c->started;
    c->pass++;
    pthread_cond_broadcast(&c->start);
    pthread_mutex_unlock(&c->mu);
    c->m[0].s.failure = hash_share(&c->m[0].s, &c->m[0].pool);
    pthread_mutex_lock(&c->mu);
    while (c->pending > 0)
        pthread_cond_wait(&c->done, &c->mu);
    pthread_mutex_unlock(&c->mu);
    double elapsed = seconds_now() - t0;
    for (size_t t = 0; t < c->threads; t++) {
        if (c->m[t].s.failure) {
            fprintf(stderr, "isal_peer: thread %zu: %s\n", t, c->m[t].s.failure);
            return -1;
        }
    }
    return elapsed;
}

/* check_sample: SAMPLE_DIGESTS digests spread evenly over [0, count)
 * (first and last included; all when fewer) against OpenSSL's SHA1();
 * returns 0 and names the first that differs. */
static int check_sample(const unsigned char *arena, size_t bytes, size_t count,
                        const unsigned char *out)
{
    size_t n = count < SAMPLE_DIGESTS ? count : SAMPLE_DIGESTS;
    for (size_t k = 0; k < n; k++) {
        size_t i = n == 1 ? 0 : (count - 1) * k / (n - 1);
        unsigned char want[DIGEST_BYTES];
        SHA1(arena + i * bytes, bytes, want);
        if (memcmp(want, out + i * DIGEST_BYTES, DIGEST_BYTES) != 0) {
            fprintf(stderr, "isal_peer: digest of message %zu (%zu bytes) differs from OpenSSL's\n",
                    i, bytes);
            return 0;
        }
    }
    return 1;
}

static size_t online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (size_t)n;
}

/* timed_round: passes until min_time seconds have gone by (one pass when
 * min_time is 0); *passes of them took the seconds returned, or -1 when
 * one failed. */
static double timed_round(crew *c, double min_time, uint64_t *passes)
{
    double total = 0;
    *passes = 0;
    do {
        double s = crew_pass(c);
        if (s < 0)
            return -1;
        total += s;
        ++*passes;
    } while (total < min_time);
    return total;
}

/* run_batch: warm-up, check, then rounds timed rounds of at least
 * min_time seconds (each checked afterwards); prints each round and the
 * median line; the exit status. */
static int run_batch(size_t bytes, size_t count, size_t rounds, size_t threads, double min_time)
{
    size_t arena_bytes = bytes * count;
    unsigned char *arena = malloc(arena_bytes > 0 ? arena_bytes : 1);
    unsigned char *out = malloc(count * DIGEST_BYTES);
    crew *c = malloc(sizeof *c);
    double per_pass[MAX_ROUNDS];
    int status = 1, open = 0;
    if (!arena || !out || !c) {
        fprintf(stderr, "isal_peer: out of memory for %zu x %zu bytes\n", count, bytes);
        goto done;
    }
    fill_messages(arena, bytes, count);
    memset(out, 0, count * DIGEST_BYTES);
    open = crew_open(c, arena, bytes, count, threads, out);
    if (!open || crew_pass(c) < 0 || !check_sample(arena, bytes, count, out))
        goto done;
    for (size_t r = 0; r < rounds; r++) {
        uint64_t passes;
        memset(out, 0, count * DIGEST_BYTES);
        double s = timed_round(c, min_time, &passes);
        if (s < 0 || !check_sample(arena, bytes, count, out))
            goto done;
        per_pass[r] = s / (double)passes;
        printf("round=%zu s=%.6f gbps=%.3f passes=%" PRIu64 "\n", r + 1, s,
               (double)bytes * (double)count / per_pass[r] / 1e9, passes);
    }
    double median = median_of(per_pass, rounds);
    printf("isal_sha1_mb bytes=%zu count=%zu threads=%zu median_s=%.6f gbps=%.3f "
           "msgs_per_s=%.0f\n",
           bytes, count, threads, median, (double)bytes * (double)count / median / 1e9,
           (double)count / median);
    status = 0;
done:
    if (open)
        crew_close(c);
    free(c);
    free(arena);
    free(out);
    return status;
}

/* one_latency: one message through a manager set up beforehand (submit,
 * then flush until it is back), repeats times; ns of each into ns[]; 0
 * with a message when isa-l_crypto failed or the digest differs. */
static int one_latency(const unsigned char *msg, size_t bytes, size_t repeats, double *ns)
{
    lane_pool p;
    unsigned char want[DIGEST_BYTES], got[DIGEST_BYTES];
    int ok = pool_open(&p);
    SHA1(msg, bytes, want);
    for (size_t r = 0; ok && r < repeats; r++) {
        ISAL_SHA1_HASH_CTX *ctx = &p.ctxs[0], *done = NULL;
        double t0 = seconds_now();
        isal_hash_ctx_init(ctx);
        ok = isal_sha1_ctx_mgr_submit(p.mgr, ctx, &done, msg, (uint32_t)bytes, ISAL_HASH_ENTIRE) ==
             0;
        while (ok && done == NULL)
            ok = isal_sha1_ctx_mgr_flush(p.mgr, &done) == 0 && done != NULL;
        ns[r] = (seconds_now() - t0) * 1e9;
        ok = ok && done == ctx && isal_hash_ctx_complete(ctx);
        if (ok)
            digest_bytes(ctx, got);
        ok = ok && memcmp(want, got, DIGEST_BYTES) == 0;
    }
    pool_close(&p);
    if (!ok)
        fprintf(stderr,
                "isal_peer: one message of %zu bytes: isa-l_crypto failed or its digest "
                "differs from OpenSSL's\n",
                bytes);
    return ok;
}

static int run_one(size_t bytes, size_t repeats)
{
    unsigned char *msg = malloc(bytes ? bytes : 1);
    double *ns = malloc(repeats * sizeof *ns);
    int status = 1;
    if (!msg || !ns) {
        fprintf(stderr, "isal_peer: out of memory\n");
    } else {
        fill_messages(msg, bytes, 1);
        if (one_latency(msg, bytes, repeats, ns)) {
            double median = median_of(ns, repeats);
            printf("isal_sha1_mb_one bytes=%zu repeats=%zu median_ns=%.0f min_ns=%.0f\n", bytes,
                   repeats, median, ns[0]);
            status = 0;
        }
    }
    free(msg);
    free(ns);
    return status;
}

int main(int argc, char **argv)
{
    /* isa-l_crypto takes a uint32_t length per submit. */
    const uint64_t max_bytes = UINT32_MAX;
    uint64_t bytes, count, rounds = DEFAULT_ROUNDS, threads = online_cores();
    double min_time = 0;
    if (argc >= 2 && strcmp(argv[1], "--one") == 0) {
        uint64_t repeats = DEFAULT_REPEATS;
        if (argc < 3 || argc > 4)
            return usage();
        if (!parse_count(argv[2], "MESSAGE_BYTES", 0, 1u << 30, &bytes) ||
            (argc > 3 && !parse_count(argv[3], "REPEATS", 1, MAX_REPEATS, &repeats)))
            return 2;
        return run_one((size_t)bytes, (size_t)repeats);
    }
    if (argc >= 2 && strcmp(argv[1], "--min-time") == 0) {
        if (argc < 3 || !parse_seconds(argv[2], &min_time))
            return argc < 3 ? usage() : 2;
        argc -= 2;
        argv += 2;
    }
    if (argc < 3 || argc > 5)
        return usage();
    if (!parse_count(argv[1], "MESSAGE_BYTES", 0, max_bytes, &bytes) ||
        !parse_count(argv[2], "COUNT", 1, SIZE_MAX / DIGEST_BYTES, &count) ||
        (argc > 3 && !parse_count(argv[3], "ROUNDS", 1, MAX_ROUNDS, &rounds)) ||
        (argc > 4 && !parse_count(argv[4], "THREADS", 1, MAX_THREADS, &threads)))
        return 2;
    if (bytes && count > SIZE_MAX / bytes) {
        fprintf(stderr,
                "isal_peer: COUNT x MESSAGE_BYTES (%" PRIu64 " x %" PRIu64
                ") does not fit in memory\n",
                count, bytes);
        return 2;
    }
    return run_batch((size_t)bytes, (size_t)count, (size_t)rounds, (size_t)threads, min_time);
}
