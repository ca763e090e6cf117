/*
 * fault.h - fault injection points inside the library (test builds only).
 *
 * Owns: the per-engine fault plan, counting launches, and the process-wide
 * "break the next kernel build" switch. Without HB_FAULT_INJECTION every
 * function here reports "no fault" and the tests' switches are refused.
 * Must not: decide how faults are handled; the backend and engine do that.
 */
#ifndef HB_FAULT_H
#define HB_FAULT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "hashbatch.h"

#include "hb_testing.h"

typedef struct {
    pthread_mutex_t lock;
    hb_fault_kind kind;
    uint64_t every;
    unsigned chance_per_mille;
    uint64_t random; /* prng.h state, for chance_per_mille */
    uint64_t launches;
    uint64_t delayed; /* batches or launches counted for the DELAY kinds */
    uint64_t delay_ns;
    unsigned target;        /* for the CPU_LANE and CPU_TAIL kinds */
    int lost;               /* DEVICE_LOST has struck */
    pthread_cond_t changed; /* the plan changed: a HOLD_LONG may be over */
} hb_fault_state;

void hb_fault_init(hb_fault_state *f);
void hb_fault_destroy(hb_fault_state *f);
void hb_fault_configure(hb_fault_state *f, const hb_fault_plan *plan);

/* hb_fault_for_launch: counts one launch; the fault to apply to it. */
hb_fault_kind hb_fault_for_launch(hb_fault_state *f);

/* hb_fault_for_cpu_kernel: the break the plan puts in the pool's
 * multi-buffer kernel (CORRUPT_CPU_LANES, CPU_LANE, CPU_TAIL, CPU_CARRY)
 * as mb_batch.h's break and its lane or tail kind; HB_MB_BREAK_NONE (0)
 * when the plan is another. */
int hb_fault_for_cpu_kernel(hb_fault_state *f, unsigned *which);

/* hb_fault_delay: for the plan of kind `kind` (HB_FAULT_DELAY_DEVICE:
 * asked once per collected launch; HB_FAULT_DELAY_CPU: once per pool
 * batch), counts one and returns how long it should be held up (ns); 0
 * when the plan is another or this one is not faulted. */
uint64_t hb_fault_delay(hb_fault_state *f, hb_fault_kind kind);

/* hb_fault_holding: 1 while the plan is HB_FAULT_HOLD_LONG. */
int hb_fault_holding(hb_fault_state *f);

/* hb_fault_wait_hold: while holding, waits until the plan changes, or at
 * most max_ns (the caller looks again at what it waits for). */
void hb_fault_wait_hold(hb_fault_state *f, uint64_t max_ns);

/* hb_fault_build_requested: 1 when kernel builds are to fail. */
int hb_fault_build_requested(void);

/* hb_fault_device_break: the device break a test asked for (an
 * hb_device_break; HB_DEVICE_BREAK_NONE outside test builds), its target
 * in *which. */
int hb_fault_device_break(unsigned *which);

/* hb_fault_tail_broken: 1 if a test broke the devices' padding of
 * messages of tail kind `kind`. */
int hb_fault_tail_broken(unsigned kind);

/* hb_fault_lanes_forced: 1 while a test forces every CPU list into lanes. */
int hb_fault_lanes_forced(void);

/* hb_fault_calibration_slowdown: the factor calibrations are to see
 * backends slowed by (hb_testing_set_calibration_slowdown); 1 when none. */
uint64_t hb_fault_calibration_slowdown(void);

/* hb_fault_corrupt: flips a bit of word 0 of the first lane (ONE) or of
 * every lane (ALL) in a launch's state buffer of ngroups groups (the
 * kernel's layout: word k of lane i of group g at (g * 5 + k) * 16 + i). */
void hb_fault_corrupt(hb_fault_kind kind, uint32_t *state_words, size_t ngroups);

/* hb_fault_corrupt_digests: the same for a uniform launch, which writes
 * final digests: a bit of digests[0] (ONE) or of every digest (ALL). */
void hb_fault_corrupt_digests(hb_fault_kind kind, hb_digest *digests, size_t n);

#endif /* HB_FAULT_H */
