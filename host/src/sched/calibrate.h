/*
 * calibrate.h - first cost models, measured at hb_engine_open.
 *
 * Owns: the short calibration that seeds each backend's cost terms when
 * the model cache has none: a few batches of each class of work (short,
 * mid and long messages, and one lone message for the fixed cost), timed
 * on the backend itself, best of a few runs, terms solved from the
 * differences. Tens of milliseconds in all: the scheduler refines the
 * terms from every batch afterwards, so they only need to be near.
 * A device is timed end to end (hb_opencl_hash: packing, copies where the
 * device has its own memory, the kernel, the read-back), the CPU pool on
 * one thread (its model is per thread).
 * Must not: run while the backend's workers run (the engine calibrates
 * before it starts them), or print.
 */
#ifndef HB_CALIBRATE_H
#define HB_CALIBRATE_H

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

/* hb_calibrate: the terms of the backend `self` of kind ops (for the
 * pool: one thread's), timed through ops->hash; a failed launch's status
 * (err says why) when it fails. */
hb_status hb_calibrate(hb_calibration_data *d, const hb_backend_ops *ops, void *self,
                       hb_cost_terms out[HB_COST_CLASSES], hb_error_slot *err);

#endif /* HB_CALIBRATE_H */
