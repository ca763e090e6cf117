/*
 * service_util.h - helpers shared by the service suites (tests/service).
 *
 * Owns: the backend variants the suites loop over (cpu, opencl, auto with
 * device "all") and opening an engine for one; a checked stats snapshot;
 * the HB_TEST_SCALE divisor; feeders: threads that each keep up to a few
 * jobs in flight on one engine, finish them oldest first, check every
 * digest against the thread's own OpenSSL digests and count what they saw.
 * Must not: decide what a suite asserts. The feeders only count; the
 * suites build the message sets, pick the bounds and check the totals.
 */
#ifndef HB_SERVICE_UTIL_H
#define HB_SERVICE_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "test_util.h"

/* ---- backends ------------------------------------------------------- */

typedef struct {
    const char *name;
    hb_backend_kind kind;
    const char *device;
} variant;

/* Indices into variants[]; NVARIANTS is the loop bound of the suites. */
enum { VARIANT_CPU, VARIANT_OPENCL, VARIANT_AUTO_ALL, NVARIANTS };

extern const variant variants[NVARIANTS];

/* variant_config: tu_config for variant i's backend, with its device. */
void variant_config(hb_config *cfg, int i);

/* open_variant: opens variant i from variant_config (tu_open_cfg). */
hb_engine *open_variant(int i);

/* open_variant_checked: open_variant, and fails the test when auto with
 * device "all" did not open a device (it fell back to the CPU pool). */
hb_engine *open_variant_checked(int i);

/* stats_of: hb_engine_stats of e; fails the test unless it is HB_OK. */
hb_stats stats_of(const hb_engine *e);

/* scale: HB_TEST_SCALE, the divisor of the heavy suites (default 1). */
unsigned scale(void);

/* ---- feeders: threads keeping jobs in flight ------------------------ */

#define FEED_MAX_MSGS 64 /* the most messages in one job */
#define FEED_MAX_SET 64  /* the most messages in one feeder's set */

/* What differs between suites: how many jobs are in flight, how many
 * messages a job has (1..max_msgs, drawn from the feeder's rng), how each
 * message is picked from the set, and whether HB_ERR_DEVICE is an allowed
 * outcome (cpu_fallback 0) instead of a bad status. */
typedef struct {
    unsigned in_flight;
    unsigned max_msgs;
    unsigned (*pick)(tu_rng *r); /* an index into the feeder's set */
    int allow_device_error;
} feed_plan;

typedef struct {
    hb_engine *e;
    feed_plan plan;
    uint64_t seed;
    unsigned jobs;
    /* the thread's messages and their OpenSSL digests; the suite fills
     * them (data is freed by feeders_free) */
    uint8_t *data;
    hb_msg set[FEED_MAX_SET];
    hb_digest want[FEED_MAX_SET];
    /* what it did */
    uint64_t submitted, messages, bytes, ok_jobs, device_errors;
    unsigned bad_status, bad_digest, failed_submit;
    char first_error[200];
} feeder;

/* The feeders' counts added up. */
typedef struct {
    uint64_t submitted, messages, bytes, ok_jobs, device_errors;
    unsigned bad_status, bad_digest, failed_submit;
} feed_totals;

/* feeders_new: n zeroed feeders (fails the test if out of memory). */
feeder *feeders_new(int n);

/* feeder_init: zeroes f and sets what it feeds, with which plan, its
 * seed and its number of jobs; the set is left to the suite. */
void feeder_init(feeder *f, hb_engine *e, const feed_plan *plan,
                 uint64_t seed, unsigned jobs);

/* feeders_run: one thread per feeder; returns when all have finished. */
void feeders_run(feeder *f, int n);

/* feeders_total: the sums, printing each thread's first error. */
feed_totals feeders_total(const feeder *f, int n);

/* feeders_free: frees each feeder's data, then the array. */
void feeders_free(feeder *f, int n);

#endif /* HB_SERVICE_UTIL_H */
