/*
 * calibrate.h - first cost models, measured at hb_engine_open.
 *
 * Owns: the short calibration that seeds each backend's cost terms when
 * the model cache has none: a few batches of each class of work (short,
 * mid and long messages, and one lone message for the fixed cost), timed
 * on the backend itself, best of a few runs, terms solved from the
 * differences. Tens of milliseconds in all: the scheduler refines the
 * terms from every batch afterwards, so they only need to be near.
 * Each backend has a budget (HB_CALIBRATION_BUDGET_NS), whatever the
 * device. The lone message runs first (best of three while the budget
 * allows); each later workload starts at the most messages its share of
 * what is left is predicted to fit (the last run's time per byte, fixed
 * cost included, so the prediction errs long) and grows by at most 16x a
 * step while the next step still fits; no launch starts that is not
 * predicted to end inside the budget. A fast backend reaches every
 * workload's full size; a slow one (a simulator, an old or a shared GPU)
 * is measured on what fits, and a class it could not measure costs, per
 * message and per byte, the dearest class it did (calibrate.c). Only the
 * first launch, one 64-byte message, and a launch that outruns its
 * prediction can end past the budget.
 * A device is timed end to end (hb_opencl_hash: packing, copies where the
 * device has its own memory, the kernel, the read-back), the CPU pool on
 * one thread (its model is per thread).
 * Must not: run while the backend's workers run (the engine calibrates
 * before it starts them), or print.
 */
#ifndef HB_CALIBRATE_H
#define HB_CALIBRATE_H

#include <stdint.h>

#include "backend.h"
#include "hashbatch.h"

/* The calibration's message bytes: allocate once, share among backends. */
typedef struct {
    unsigned char *bytes;
    size_t size;
    hb_msg *msgs;
    hb_digest *out;
    size_t cap;
} hb_calibration_data;

hb_status hb_calibration_data_init(hb_calibration_data *d);
void hb_calibration_data_free(hb_calibration_data *d);

/* Each device's calibration budget: the README's "tens of ms" at open,
 * a policy, not a measurement. The CPU pool has none (models.c): it is
 * the host's own cores, about 15 ms in full, and a model it had cut
 * short would shrink its takes below a set of lanes. */
#define HB_CALIBRATION_BUDGET_NS (50ull * 1000 * 1000)

/* The clock a calibration is timed and budgeted on: now_ns(arg) in ns,
 * or hb_now_ns when now_ns is NULL (tests slow it down or speed it up);
 * budget_ns 0: no budget, every workload in full. */
typedef struct {
    uint64_t budget_ns;
    uint64_t (*now_ns)(void *arg);
    void *arg;
} hb_calibration_clock;

/* What a calibration did, on its clock. */
typedef struct {
    unsigned workloads;      /* workloads measured (of 6: lone, 2 short, 2 mid, long) */
    unsigned full;           /* of them, at their full size */
    unsigned launches;       /* ops->hash calls */
    uint64_t last_start_ns;  /* when the last launch began, from the start */
    uint64_t spent_ns;       /* from the start to the end */
    int complete;            /* every workload at full size */
    int measured[HB_COST_CLASSES]; /* 1: the class's terms come from its own
                                    * workloads; 0: the dearest measured
                                    * (or the lone message's) stand in */
} hb_calibration_report;

#define HB_CALIBRATION_WORKLOADS 6u

/* hb_calibrate: the terms of the backend `self` of kind ops (for the
 * pool: one thread's), timed through ops->hash within clock's budget;
 * report (may be NULL) says what fitted. A failed launch's status (err
 * says why) when one fails. */
hb_status hb_calibrate(hb_calibration_data *d, const hb_backend_ops *ops, void *self,
                       const hb_calibration_clock *clock, hb_cost_terms out[HB_COST_CLASSES],
                       hb_calibration_report *report, hb_error_slot *err);

#endif /* HB_CALIBRATE_H */
