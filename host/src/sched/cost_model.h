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

/* Only a batch of at most this many messages, whose prediction is mostly
 * its fixed part, teaches the fixed term; others teach the rates. */
#define HB_COST_FEW_MESSAGES 16u

typedef struct {
    hb_cost_terms terms[HB_COST_CLASSES];
    hb_cost_terms shape[HB_COST_CLASSES]; /* the rates' ratio, from the seed */
    uint64_t learnt[HB_COST_CLASSES];     /* batches each class learnt from */
    int frozen;                           /* a test fixed the terms: no learning */
} hb_cost_model;

/* hb_cost_seed: m starts from terms (a calibration's, or the cache's). */
void hb_cost_seed(hb_cost_model *m, const hb_cost_terms terms[HB_COST_CLASSES]);

/* hb_cost_class_of: the class of a batch of n messages holding bytes. */
unsigned hb_cost_class_of(uint64_t n, uint64_t bytes);

/* hb_cost_terms_valid: 1 when every term is finite and >= 0. */
int hb_cost_terms_valid(const hb_cost_terms *t);

/* hb_cost_predict: the predicted ns of a batch of n messages, bytes. */
double hb_cost_predict(const hb_cost_model *m, uint64_t n, uint64_t bytes);

/* hb_cost_learn: a batch of n messages and bytes took measured_ns: its
 * class's terms move part of the way toward what would have predicted
 * it. A batch of few messages (HB_COST_FEW_MESSAGES) whose prediction is
 * mostly the fixed term moves that term, a quarter of the way; any other
 * batch (many messages, or a few long ones) moves the per-message and
 * per-byte rates together (their ratio stays the seed's), a quarter of
 * the way times weight (0 to 1: the scheduler gives the batch's fullness,
 * its share of the backend's take limits, so the rates follow the batches
 * big jobs are made of rather than small ones whose data sat hot in a
 * cache). Both conditions on the fixed term matter: by weight alone, a
 * model seeded with everything in the fixed term would learn only that
 * term from batches of any size; by count alone, takes of a few long
 * messages (a lane group) would never correct the rates. One batch moves
 * a term by at most a factor of 8, so a stray measurement cannot wreck
 * it, and a backend that turns slow is found out within a few batches. */
void hb_cost_learn(hb_cost_model *m, uint64_t n, uint64_t bytes, double measured_ns, double weight);

#endif /* HB_COST_MODEL_H */
