/*
 * gvl_params.c - what releasing the GVL costs on the machine the gem runs
 * on, measured once when the extension loads, and the parameters derived
 * from those costs (Hashbatch.gvl_parameters shows both).
 *
 * Measured (with the GVL held, bounded to a few ms in all):
 *  - sha1_ns_per_byte: OpenSSL's SHA-1 of a 16 KiB buffer, best of a few;
 *  - release_ns: one rb_thread_call_without_gvl of nothing and the retake,
 *    best of a few; only while no other Ruby thread exists (another could
 *    take the GVL for its whole time slice), else RELEASE_DEFAULT_NS and
 *    release_measured false;
 *  - wake_ns: one hand-off to a thread asleep on a condition variable (a
 *    ping-pong with a helper thread, the median), what a thread that
 *    blocks for the GVL pays to be woken;
 *  - cpus: the CPUs this process may run on (its affinity mask).
 * Derived:
 *  - gvl_threshold: the size whose hash costs RELEASE_SHARE times one
 *    release, so releasing costs at most 1/RELEASE_SHARE of the hash;
 *  - handoff_spin_ns = wake_ns: a turn holder spins for the GVL at most as
 *    long as blocking and being woken would cost (spin-then-block);
 *  - turn_slice_ns: SLICE_PER_WAKE wakes, so giving a turn over (a few
 *    wakes) costs a fraction of a percent of the slice.
 * Each is clamped to a sane range (the *_MIN / *_MAX below). The calls
 * made here are not counted by nogvl.c: they are not work.
 * Must not: run after Init (the parameters are read without locks), or
 * take more than a few ms.
 */
#include "hb_ext.h"

#include <openssl/sha.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HASH_PROBE_BYTES (16 << 10)
#define HASH_ROUNDS 6
#define RELEASE_ROUNDS 32
#define RELEASE_DEFAULT_NS 400
#define WAKE_ROUNDS 16
#define WAKE_ROUND_LIMIT_NS 20000000ll /* a starved helper: stop measuring */
#define WAKE_DEFAULT_NS 20000
#define RELEASE_SHARE 8
#define SLICE_PER_WAKE 1000
#define THRESHOLD_MIN 1024
#define THRESHOLD_MAX (64 << 10)
#define SPIN_MIN_NS 2000ull
#define SPIN_MAX_NS 200000ull
#define SLICE_MIN_NS 5000000ull
#define SLICE_MAX_NS 100000000ull

static hb_gvl_params params;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t clamp_u64(uint64_t v, uint64_t lo, uint64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static double measure_sha1_ns_per_byte(void)
{
    static unsigned char buf[HASH_PROBE_BYTES];
    memset(buf, 0x5a, sizeof buf);
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < HASH_ROUNDS; i++) {
        SHA_CTX ctx;
        unsigned char md[SHA_DIGEST_LENGTH];
        uint64_t t0 = now_ns();
        SHA1_Init(&ctx);
        SHA1_Update(&ctx, buf, sizeof buf);
        SHA1_Final(md, &ctx);
        uint64_t t = now_ns() - t0;
        if (t < best)
            best = t;
    }
    return best > 0 ? (double)best / HASH_PROBE_BYTES : 0.1;
}

static void *nothing(void *p)
{
    return p;
}

/* measure_release_ns: 0 when other Ruby threads exist (see the top). */
static uint64_t measure_release_ns(void)
{
    if (!rb_thread_alone())
        return 0;
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < RELEASE_ROUNDS; i++) {
        uint64_t t0 = now_ns();
        rb_thread_call_without_gvl(nothing, NULL, NULL, NULL);
        uint64_t t = now_ns() - t0;
        if (t < best)
            best = t;
    }
    return best ? best : 1;
}

/* The ping-pong of measure_wake_ns: the ball is 1 on the helper's side. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t moved;
    int ball;
    int stop;
} pingpong;

static void *pong(void *p)
{
    pingpong *g = p;
    pthread_mutex_lock(&g->lock);
    while (!g->stop) {
        if (g->ball == 1) {
            g->ball = 0;
            pthread_cond_broadcast(&g->moved);
        }
        pthread_cond_wait(&g->moved, &g->lock);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* measure_wake_ns: half the median round trip; 0 if it could not be
 * measured (no thread, or the helper was starved). */
static uint64_t measure_wake_ns(void)
{
    pingpong g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&g.moved, &attr);
    pthread_condattr_destroy(&attr);
    pthread_t helper;
    if (pthread_create(&helper, NULL, pong, &g) != 0) {
        pthread_cond_destroy(&g.moved);
        return 0;
    }
    uint64_t rounds[WAKE_ROUNDS];
    int n = 0;
    pthread_mutex_lock(&g.lock);
    while (n < WAKE_ROUNDS) {
        uint64_t t0 = now_ns();
        g.ball = 1;
        pthread_cond_broadcast(&g.moved);
        while (g.ball == 1 && now_ns() - t0 < (uint64_t)WAKE_ROUND_LIMIT_NS) {
            uint64_t until = t0 + WAKE_ROUND_LIMIT_NS;
            struct timespec ts = {(time_t)(until / 1000000000ull), (long)(until % 1000000000ull)};
            pthread_cond_timedwait(&g.moved, &g.lock, &ts);
        }
        if (g.ball == 1)
            break;
        rounds[n++] = now_ns() - t0;
    }
    g.stop = 1;
    pthread_cond_broadcast(&g.moved);
    pthread_mutex_unlock(&g.lock);
    pthread_join(helper, NULL);
    pthread_cond_destroy(&g.moved);
    if (n < 3)
        return 0;
    qsort(rounds, (size_t)n, sizeof rounds[0], cmp_u64);
    return rounds[n / 2] / 2;
}

static long count_cpus(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

void hb_gvl_calibrate(void)
{
    uint64_t t0 = now_ns();
    hb_gvl_params p = {0};
    p.sha1_ns_per_byte = measure_sha1_ns_per_byte();
    p.release_ns = measure_release_ns();
    p.release_measured = p.release_ns != 0;
    if (!p.release_measured)
        p.release_ns = RELEASE_DEFAULT_NS;
    p.wake_ns = measure_wake_ns();
    if (p.wake_ns == 0)
        p.wake_ns = WAKE_DEFAULT_NS;
    p.cpus = count_cpus();
    uint64_t bytes = (uint64_t)(RELEASE_SHARE * (double)p.release_ns / p.sha1_ns_per_byte);
    p.gvl_threshold = (long)((clamp_u64(bytes, THRESHOLD_MIN, THRESHOLD_MAX) + 63) & ~63ull);
    p.handoff_spin_ns = clamp_u64(p.wake_ns, SPIN_MIN_NS, SPIN_MAX_NS);
    p.turn_slice_ns = clamp_u64(SLICE_PER_WAKE * p.wake_ns, SLICE_MIN_NS, SLICE_MAX_NS);
    p.calibration_ns = now_ns() - t0;
    params = p;
}

const hb_gvl_params *hb_gvl_params_get(void)
{
    return &params;
}

static void put(VALUE h, const char *key, VALUE v)
{
    rb_hash_aset(h, ID2SYM(rb_intern(key)), v);
}

/* Hashbatch.gvl_parameters: the measurements and what was derived from
 * them (a new frozen Hash each call). Hashbatch::SHA1.gvl_threshold= and
 * gvl_slots= override two of them; this shows what was measured. */
static VALUE s_gvl_parameters(VALUE self)
{
    const hb_gvl_params *p = &params;
    VALUE h = rb_hash_new();
    put(h, "sha1_ns_per_byte", DBL2NUM(p->sha1_ns_per_byte));
    put(h, "release_ns", ULL2NUM(p->release_ns));
    put(h, "release_measured", p->release_measured ? Qtrue : Qfalse);
    put(h, "wake_ns", ULL2NUM(p->wake_ns));
    put(h, "cpus", LONG2NUM(p->cpus));
    put(h, "gvl_threshold", LONG2NUM(p->gvl_threshold));
    put(h, "handoff_spin_ns", ULL2NUM(p->handoff_spin_ns));
    put(h, "turn_slice_ns", ULL2NUM(p->turn_slice_ns));
    put(h, "calibration_ns", ULL2NUM(p->calibration_ns));
    return rb_obj_freeze(h);
}

void hb_ext_init_gvl_params(void)
{
    rb_define_singleton_method(hb_mHashbatch, "gvl_parameters", s_gvl_parameters, 0);
}
