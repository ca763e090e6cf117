/*
 * fault.c - deliberate misbehaviour for tests.
 *
 * Owns: hb_testing_set_build_fault and the per-engine fault counters.
 * Compiled into every build, active only with HB_FAULT_INJECTION, so the
 * installed library refuses to misbehave.
 * Must not: print, or act on anything but the plan a test set.
 */
#include "fault.h"

#include <stdatomic.h>

#ifdef HB_FAULT_INJECTION
#define FAULTS_COMPILED_IN 1
#else
#define FAULTS_COMPILED_IN 0
#endif

static atomic_int build_fault_requested;

void hb_fault_init(hb_fault_state *f)
{
    pthread_mutex_init(&f->lock, NULL);
    f->kind = HB_FAULT_NONE;
    f->every = 1;
    f->launches = 0;
}

void hb_fault_destroy(hb_fault_state *f)
{
    pthread_mutex_destroy(&f->lock);
}

void hb_fault_configure(hb_fault_state *f, const hb_fault_plan *plan)
{
    pthread_mutex_lock(&f->lock);
    f->kind = plan ? plan->kind : HB_FAULT_NONE;
    f->every = plan && plan->every_nth_launch > 1 ? plan->every_nth_launch : 1;
    f->launches = 0;
    pthread_mutex_unlock(&f->lock);
}

hb_fault_kind hb_fault_for_launch(hb_fault_state *f)
{
    if (!FAULTS_COMPILED_IN)
        return HB_FAULT_NONE;
    pthread_mutex_lock(&f->lock);
    uint64_t n = ++f->launches;
    hb_fault_kind kind = n % f->every == 0 ? f->kind : HB_FAULT_NONE;
    pthread_mutex_unlock(&f->lock);
    return kind;
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

hb_status hb_testing_set_build_fault(int on)
{
    if (!FAULTS_COMPILED_IN)
        return HB_ERR_INVALID_ARGUMENT;
    atomic_store(&build_fault_requested, on != 0);
    return HB_OK;
}
