/*
 * fault.c - deliberate misbehaviour for tests.
 *
 * Owns: hb_testing_set_build_fault, hb_testing_set_calibration_slowdown,
 * hb_testing_set_lanes_forced, hb_testing_set_device_break
 * and the per-engine fault counters.
 * Compiled into every build, active only with HB_FAULT_INJECTION, so the
 * installed library refuses to misbehave.
 * Must not: print, or act on anything but the plan a test set.
 */
#include "fault.h"

#include <stdatomic.h>
#include <time.h>

#include "mb/mb_batch.h"
#include "prng.h"

#ifdef HB_FAULT_INJECTION
#define FAULTS_COMPILED_IN 1
#else
#define FAULTS_COMPILED_IN 0
#endif

static atomic_int build_fault_requested;
static _Atomic uint64_t calibration_slowdown; /* 0 or 1: none */

void hb_fault_init(hb_fault_state *f)
{
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->changed, NULL);
    f->kind = HB_FAULT_NONE;
    f->every = 1;
    f->chance_per_mille = 0;
    f->random = 1;
    f->launches = 0;
    f->delayed = 0;
    f->delay_ns = 0;
    f->target = 0;
    f->lost = 0;
}

static int launch_is_faulted(hb_fault_state *f, uint64_t n)
{
    if (f->chance_per_mille > 0)
        return hb_prng_below(&f->random, 1000) < f->chance_per_mille;
    return n % f->every == 0;
}

void hb_fault_destroy(hb_fault_state *f)
{
    pthread_cond_destroy(&f->changed);
    pthread_mutex_destroy(&f->lock);
}

void hb_fault_configure(hb_fault_state *f, const hb_fault_plan *plan)
{
    pthread_mutex_lock(&f->lock);
    f->kind = plan ? plan->kind : HB_FAULT_NONE;
    f->every = plan && plan->every_nth_launch > 1 ? plan->every_nth_launch : 1;
    f->chance_per_mille = plan ? plan->chance_per_mille : 0;
    f->random = plan && plan->seed ? plan->seed : 0x2545F4914F6CDD1DULL;
    f->launches = 0;
    f->delayed = 0;
    f->delay_ns = plan ? plan->delay_ns : 0;
    f->target = plan ? plan->target : 0;
    f->lost = 0;
    pthread_cond_broadcast(&f->changed);
    pthread_mutex_unlock(&f->lock);
}

hb_fault_kind hb_fault_for_launch(hb_fault_state *f)
{
    if (!FAULTS_COMPILED_IN)
        return HB_FAULT_NONE;
    pthread_mutex_lock(&f->lock);
    uint64_t n = ++f->launches;
    hb_fault_kind kind = launch_is_faulted(f, n) ? f->kind : HB_FAULT_NONE;
    if (kind == HB_FAULT_DEVICE_LOST)
        f->lost = 1;
    if (f->lost)
        kind = HB_FAULT_DEVICE_LOST;
    pthread_mutex_unlock(&f->lock);
    return kind;
}

int hb_fault_for_cpu_kernel(hb_fault_state *f, unsigned *which)
{
    if (!FAULTS_COMPILED_IN)
        return HB_MB_BREAK_NONE;
    pthread_mutex_lock(&f->lock);
    hb_fault_kind kind = f->kind;
    *which = f->target;
    pthread_mutex_unlock(&f->lock);
    switch (kind) {
    case HB_FAULT_CORRUPT_CPU_LANES:
        return HB_MB_BREAK_ALL_LANES;
    case HB_FAULT_CPU_LANE:
        return HB_MB_BREAK_LANE;
    case HB_FAULT_CPU_TAIL:
        return HB_MB_BREAK_TAIL;
    case HB_FAULT_CPU_CARRY:
        return HB_MB_BREAK_CARRY;
    default:
        return HB_MB_BREAK_NONE;
    }
}

uint64_t hb_fault_delay(hb_fault_state *f, hb_fault_kind kind)
{
    if (!FAULTS_COMPILED_IN)
        return 0;
    pthread_mutex_lock(&f->lock);
    uint64_t ns = 0;
    if (f->kind == kind && launch_is_faulted(f, ++f->delayed))
        ns = f->delay_ns;
    pthread_mutex_unlock(&f->lock);
    return ns;
}

int hb_fault_holding(hb_fault_state *f)
{
    if (!FAULTS_COMPILED_IN)
        return 0;
    pthread_mutex_lock(&f->lock);
    int holding = f->kind == HB_FAULT_HOLD_LONG;
    pthread_mutex_unlock(&f->lock);
    return holding;
}

void hb_fault_wait_hold(hb_fault_state *f, uint64_t max_ns)
{
    if (!FAULTS_COMPILED_IN)
        return;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until); /* the condition's clock */
    uint64_t ns = (uint64_t)until.tv_nsec + max_ns;
    until.tv_sec += (time_t)(ns / 1000000000u);
    until.tv_nsec = (long)(ns % 1000000000u);
    pthread_mutex_lock(&f->lock);
    if (f->kind == HB_FAULT_HOLD_LONG)
        pthread_cond_timedwait(&f->changed, &f->lock, &until);
    pthread_mutex_unlock(&f->lock);
}

int hb_fault_build_requested(void)
{
    return FAULTS_COMPILED_IN && atomic_load(&build_fault_requested);
}

void hb_fault_corrupt(hb_fault_kind kind, uint32_t *state_words, size_t ngroups)
{
    if (kind == HB_FAULT_CORRUPT_ONE && ngroups > 0)
        state_words[0] ^= 1u;
    if (kind == HB_FAULT_CORRUPT_ALL)
        for (size_t g = 0; g < ngroups; g++)
            for (size_t lane = 0; lane < 16; lane++)
                state_words[g * 80 + lane] ^= 1u;
}

void hb_fault_corrupt_digests(hb_fault_kind kind, hb_digest *digests, size_t n)
{
    if (kind == HB_FAULT_CORRUPT_ONE && n > 0)
        digests[0][0] ^= 1u;
    if (kind == HB_FAULT_CORRUPT_ALL)
        for (size_t i = 0; i < n; i++)
            digests[i][0] ^= 1u;
}

hb_status hb_testing_set_build_fault(int on)
{
    if (!FAULTS_COMPILED_IN)
        return HB_ERR_INVALID_ARGUMENT;
    atomic_store(&build_fault_requested, on != 0);
    return HB_OK;
}

uint64_t hb_fault_calibration_slowdown(void)
{
    uint64_t f = FAULTS_COMPILED_IN ? atomic_load(&calibration_slowdown) : 1;
    return f > 1 ? f : 1;
}

static atomic_int lanes_forced;

hb_status hb_testing_set_lanes_forced(int on)
{
    if (!FAULTS_COMPILED_IN)
        return HB_ERR_INVALID_ARGUMENT;
    atomic_store(&lanes_forced, on != 0);
    return HB_OK;
}

int hb_fault_lanes_forced(void)
{
    return FAULTS_COMPILED_IN && atomic_load(&lanes_forced);
}

hb_status hb_testing_set_calibration_slowdown(uint64_t factor)
{
    if (!FAULTS_COMPILED_IN)
        return HB_ERR_INVALID_ARGUMENT;
    atomic_store(&calibration_slowdown, factor);
    return HB_OK;
}

static atomic_int device_break_kind;
static atomic_uint device_break_which;

hb_status hb_testing_set_device_break(hb_device_break kind, unsigned which)
{
    if (!FAULTS_COMPILED_IN)
        return HB_ERR_INVALID_ARGUMENT;
    atomic_store(&device_break_which, which);
    atomic_store(&device_break_kind, (int)kind);
    return HB_OK;
}

int hb_fault_device_break(unsigned *which)
{
    *which = atomic_load(&device_break_which);
    return FAULTS_COMPILED_IN ? atomic_load(&device_break_kind) : HB_DEVICE_BREAK_NONE;
}

int hb_fault_tail_broken(unsigned kind)
{
    unsigned which;
    return hb_fault_device_break(&which) == HB_DEVICE_BREAK_TAIL && which == kind;
}
