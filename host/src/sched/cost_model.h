/*
 * cost_model.h - what a launch costs a backend, predicted and learnt.
 *
 * Owns: one backend's model: per class of work (short, mid, long
 * messages: HB_COST_CLASSES), hb_cost_terms predicting a batch's time as
 * fixed + n * per message + bytes * per byte, and the rule that refines
 * them from each batch's measured time.
 * Must not: know backends, threads or clocks: callers bring the numbers.
 * Not thread-safe: the scheduler holds its lock around every call.
 */
#ifndef HB_COST_MODEL_H
#define HB_COST_MODEL_H

#include <stdint.h>

#include "hashbatch.h"

/* Class bounds on the mean message length: short below 1 KiB, mid below
 * 256 KiB (where messages stream through lanes in pieces), long above. */
#define HB_COST_SHORT_BELOW 1024u
#define HB_COST_MID_BELOW (256u << 10)

typedef struct {
    hb_cost_terms terms[HB_COST_CLASSES];
    uint64_t learnt[HB_COST_CLASSES]; /* batches each class learnt from */
    int frozen;                       /* a test fixed the terms: no learning */
} hb_cost_model;

/* hb_cost_class_of: the class of a batch of n messages holding bytes. */
unsigned hb_cost_class_of(uint64_t n, uint64_t bytes);

/* hb_cost_terms_valid: 1 when every term is finite and >= 0. */
int hb_cost_terms_valid(const hb_cost_terms *t);

/* hb_cost_predict: the predicted ns of a batch of n messages, bytes. */
double hb_cost_predict(const hb_cost_model *m, uint64_t n, uint64_t bytes);

/* hb_cost_learn: a batch of n messages and bytes took measured_ns: moves
 * its class's terms a quarter of the way toward what would have predicted it. The part
 * of the prediction that dominates learns: the fixed term for batches
 * where it outweighs the rest, else the per-message and per-byte terms
 * together (their ratio, from the calibration, stays). One batch moves a
 * term by at most a factor of 8, so a stray measurement cannot wreck it,
 * and a backend that turned slow is found out within a few batches. */
void hb_cost_learn(hb_cost_model *m, uint64_t n, uint64_t bytes, double measured_ns);

#endif /* HB_COST_MODEL_H */
