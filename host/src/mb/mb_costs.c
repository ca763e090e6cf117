/*
 * mb_costs.c - measuring lanes against OpenSSL (see mb_costs.h).
 *
 * Owns: the per-process measurements and the default implementation
 * (also as the public hb_cpu_impl_default_name), measured once per
 * machine and kept in the cache folder (cache_file.h).
 * The blocks hashed are zeros: SHA-1 takes the same time on any data.
 * Must not: measure more than once per implementation and process.
 */
#include "mb/mb_costs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_file.h"
#include "clock.h"
#include "machine_key.h"
#include "sha1_openssl.h"

enum {
    RUN_BLOCKS = 32, /* blocks per timed run: microseconds, far above the clock's cost */
    RUNS = 9         /* timed runs of each, alternating; the fastest counts */
};

static const uint8_t zero_blocks[RUN_BLOCKS * 64];

static pthread_mutex_t measure_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int measured[HB_CPU_IMPL_COUNT];
static hb_mb_costs costs[HB_CPU_IMPL_COUNT];

static uint64_t time_lanes(const hb_cpu_impl_desc *d)
{
    const uint8_t *block[HB_MB_LANES_MAX];
    uint32_t state[5 * HB_MB_LANES_MAX] = {0};
    for (unsigned l = 0; l < d->lanes; l++)
        block[l] = zero_blocks;
    uint64_t start = hb_now_ns();
    d->blocks(state, block, RUN_BLOCKS);
    return hb_now_ns() - start;
}

static uint64_t time_one_by_one(void)
{
    uint32_t h[5] = {0};
    uint64_t start = hb_now_ns();
    hb_sha1_openssl_blocks(h, zero_blocks, RUN_BLOCKS);
    return hb_now_ns() - start;
}

static hb_mb_costs measure(const hb_cpu_impl_desc *d)
{
    uint64_t lanes_best = UINT64_MAX, one_best = UINT64_MAX;
    for (int run = 0; run < RUNS; run++) {
        uint64_t t = time_lanes(d);
        lanes_best = t < lanes_best ? t : lanes_best;
        t = time_one_by_one();
        one_best = t < one_best ? t : one_best;
    }
    /* a clock too coarse to see a run still gives a non-zero cost */
    hb_mb_costs c = {
        .lanes_ns = (double)(lanes_best ? lanes_best : 1) / RUN_BLOCKS,
        .one_ns = (double)(one_best ? one_best : 1) / RUN_BLOCKS,
    };
    c.alone_by_openssl = c.one_ns <= c.lanes_ns;
    return c;
}

hb_mb_costs hb_mb_costs_of(hb_cpu_impl impl)
{
    if (!atomic_load_explicit(&measured[impl], memory_order_acquire)) {
        pthread_mutex_lock(&measure_lock);
        if (!atomic_load_explicit(&measured[impl], memory_order_relaxed)) {
            costs[impl] = measure(hb_cpu_impl_describe(impl));
            atomic_store_explicit(&measured[impl], 1, memory_order_release);
        }
        pthread_mutex_unlock(&measure_lock);
    }
    return costs[impl];
}

int hb_mb_alone_by_openssl(hb_cpu_impl impl)
{
    if (atomic_load_explicit(&measured[impl], memory_order_acquire))
        return costs[impl].alone_by_openssl;
    return hb_mb_costs_of(impl).alone_by_openssl;
}

/* The fastest by this process's measurement: the multi-buffer
 * implementation with the lowest cost per lane and block, if that beats
 * OpenSSL's cost per block; else SHA-NI. */
static hb_cpu_impl measure_default(void)
{
    static const hb_cpu_impl candidates[] = {HB_CPU_IMPL_AVX512, HB_CPU_IMPL_AVX2,
                                             HB_CPU_IMPL_PORTABLE};
    hb_cpu_impl best = HB_CPU_IMPL_SHA_NI;
    double best_per_block = 0;
    for (size_t k = 0; k < sizeof candidates / sizeof candidates[0]; k++) {
        if (!hb_cpu_impl_runnable(candidates[k]))
            continue;
        hb_mb_costs c = hb_mb_costs_of(candidates[k]);
        double per_block = c.lanes_ns / hb_cpu_impl_describe(candidates[k])->lanes;
        if (per_block < c.one_ns && (best == HB_CPU_IMPL_SHA_NI || per_block < best_per_block)) {
            best = candidates[k];
            best_per_block = per_block;
        }
    }
    return best;
}

hb_cpu_impl hb_mb_impl_for_few(hb_cpu_impl preferred, size_t count)
{
    static const hb_cpu_impl narrower[] = {HB_CPU_IMPL_AVX512, HB_CPU_IMPL_AVX2,
                                           HB_CPU_IMPL_PORTABLE};
    unsigned lanes = hb_cpu_impl_describe(preferred)->lanes;
    if (count == 0 || count >= lanes)
        return preferred;
    hb_mb_costs own = hb_mb_costs_of(preferred);
    hb_cpu_impl best = preferred;
    double best_ns = own.lanes_ns;
    for (size_t k = 0; k < sizeof narrower / sizeof narrower[0]; k++) {
        unsigned l = hb_cpu_impl_describe(narrower[k])->lanes;
        if (l >= lanes || !hb_cpu_impl_runnable(narrower[k]))
            continue;
        double ns = (double)((count + l - 1) / l) * hb_mb_costs_of(narrower[k]).lanes_ns;
        if (ns < best_ns)
            best = narrower[k], best_ns = ns;
    }
    return (double)count * own.one_ns < best_ns ? HB_CPU_IMPL_SHA_NI : best;
}

double hb_mb_streams_rate(hb_cpu_impl preferred, size_t count)
{
    if (count == 0)
        return 0;
    hb_cpu_impl impl = hb_mb_impl_for_few(preferred, count);
    unsigned lanes = hb_cpu_impl_describe(impl)->lanes;
    double step = lanes == 0
                      ? (double)count * hb_mb_costs_of(preferred).one_ns
                      : (double)((count + lanes - 1) / lanes) * hb_mb_costs_of(impl).lanes_ns;
    return step > 0 ? (double)count / step : 0;
}

/* ---- the choice kept per machine -------------------------------------- */

/* Where two implementations cost about the same (avx2 and SHA-NI on a
 * Zen 3), each process's measurement may pick either: the engine's
 * models would be the other one's (so calibrated again), `hashbatch
 * devices` would say one default, then the other. So the first choice on
 * a machine is kept, one line in cpu_impl.txt beside the model cache,
 * "KEY<TAB>NAME" after a header, KEY naming the machine
 * (machine_key.h); a missing, foreign or unreadable file, another
 * machine's key, or a name this CPU does not run is measured again. */
#define CHOICE_HEADER "hashbatch-cpu-impl 1\n"

/* The file sits beside the model cache and follows its setting
 * (HASHBATCH_MODEL_CACHE=PATH: in PATH's folder; =off: none). */
static int choice_path(char *buf, size_t size)
{
    return hb_cache_file_beside(buf, size, "HASHBATCH_MODEL_CACHE", "models.txt", "cpu_impl.txt");
}
#define CHOICE_FILE_MAX 4096

static int remembered_default(const char *key, hb_cpu_impl *out)
{
    char path[1024], *buf;
    size_t len, hl = sizeof CHOICE_HEADER - 1, kl = strlen(key);
    if (!choice_path(path, sizeof path) || !hb_cache_file_read(path, CHOICE_FILE_MAX, &buf, &len))
        return 0;
    int ok = len > hl + kl + 1 && memcmp(buf, CHOICE_HEADER, hl) == 0 &&
             memcmp(buf + hl, key, kl) == 0 && buf[hl + kl] == '\t';
    char *name = buf + hl + kl + 1, *nl = ok ? strchr(name, '\n') : NULL;
    ok = nl != NULL && nl[1] == '\0';
    if (ok)
        *nl = '\0';
    ok = ok && hb_cpu_impl_parse(name, out) == HB_OK && hb_cpu_impl_runnable(*out);
    free(buf);
    return ok;
}

static void remember_default(const char *key, hb_cpu_impl impl)
{
    char path[1024], text[1024];
    int n = snprintf(text, sizeof text, "%s%s\t%s\n", CHOICE_HEADER, key,
                     hb_cpu_impl_describe(impl)->name);
    if (n > 0 && (size_t)n < sizeof text && choice_path(path, sizeof path))
        (void)hb_cache_file_replace(path, text, (size_t)n);
}

static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static hb_cpu_impl default_impl;

static void choose_default(void)
{
    char key[512];
    hb_machine_key(key, sizeof key);
    if (remembered_default(key, &default_impl))
        return;
    default_impl = measure_default();
    remember_default(key, default_impl);
}

hb_cpu_impl hb_cpu_impl_default(void)
{
    pthread_once(&default_once, choose_default);
    return default_impl;
}

const char *hb_cpu_impl_default_name(void)
{
    return hb_cpu_impl_describe(hb_cpu_impl_default())->name;
}
