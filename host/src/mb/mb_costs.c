/*
 * mb_costs.c - measuring lanes against OpenSSL (see mb_costs.h).
 *
 * Owns: the per-process measurements and the default implementation
 * (also as the public hb_cpu_impl_default_name).
 * The blocks hashed are zeros: SHA-1 takes the same time on any data.
 * Must not: measure more than once per implementation and process.
 */
#include "mb/mb_costs.h"

#include <pthread.h>
#include <stdatomic.h>

#include "clock.h"
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

hb_cpu_impl hb_cpu_impl_default(void)
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

const char *hb_cpu_impl_default_name(void)
{
    return hb_cpu_impl_describe(hb_cpu_impl_default())->name;
}
