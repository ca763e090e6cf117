/*
 * counters.h - what the engine's backends did, and which are out.
 *
 * Owns: the counters behind hb_engine_stats (per backend and in total),
 * the random seeds for verification samples, and quarantine: a backend
 * found faulty is marked, the scheduler stops giving it work, and when
 * the last device is out the CPU pool takes queued jobs.
 * Sits below the workers (they count and quarantine through it) and
 * above nothing but the queue and the scheduler, which quarantine tells.
 * Must not: hash, or call into the engine or the workers.
 */
#ifndef HB_COUNTERS_H
#define HB_COUNTERS_H

#include <pthread.h>
#include <stdatomic.h>

#include "hashbatch.h"
#include "queue.h"
#include "sched/scheduler.h"

typedef struct {
    pthread_mutex_t lock; /* guards stats, device, rng */
    hb_stats stats;
    hb_device_stats device[HB_STATS_MAX_DEVICES];
    unsigned n;
    uint64_t rng; /* prng.h state: seeds each batch's sample */
    atomic_int devices_alive;
    unsigned pool_index; /* the CPU pool's entry */
    struct {
        atomic_uint_fast64_t calls, messages, bytes, busy_ns;
    } inline_work; /* small hb_sha1_batch calls hashed on the caller */
} hb_counters;

void hb_counters_init(hb_counters *c, uint64_t seed);
void hb_counters_destroy(hb_counters *c);

/* hb_counters_add: a backend's entry; returns its index. */
unsigned hb_counters_add(hb_counters *c, const char *name, int is_cpu, int shares_host_cores);

/* hb_counters_set_devices: how many devices are alive at the start. */
void hb_counters_set_devices(hb_counters *c, int devices);

/* hb_counters_submitted: one more job submitted. */
void hb_counters_submitted(hb_counters *c);

/* hb_counters_batch: backend `index` is about to deliver b (counted first,
 * so a caller woken by the delivery sees it), or with b NULL just busy
 * time and launches. */
void hb_counters_batch(hb_counters *c, unsigned index, const hb_batch *b, uint64_t busy_ns,
                       uint64_t launches);

/* hb_counters_inline: a small batch hashed on its caller's thread. */
void hb_counters_inline(hb_counters *c, size_t n, uint64_t bytes, uint64_t busy_ns);

/* hb_counters_verify: checks made (messages, or runs and tails of
 * them), the bytes they hashed again, and how many mismatched. */
void hb_counters_verify(hb_counters *c, size_t checked, uint64_t bytes, size_t mismatches);

/* hb_counters_moved: bytes of shared long messages a helping pool thread
 * hashed (long_share.h). */
void hb_counters_moved(hb_counters *c, uint64_t bytes);

/* hb_counters_fallback: a batch redone on the CPU whole. */
void hb_counters_fallback(hb_counters *c);

/* hb_counters_device_error: an OpenCL error on device `index`, with the
 * number of batches it handed back. */
void hb_counters_device_error(hb_counters *c, unsigned index, size_t handed_back);

/* hb_counters_quarantine: device `index` is out: marked, retired from the
 * scheduler s; if it was the last device, the pool takes queued jobs (in
 * q and in s). */
void hb_counters_quarantine(hb_counters *c, unsigned index, hb_sched *s, hb_queue *q);

/* hb_counters_next_random: a fresh seed (a prng.h state) for sampling. */
uint64_t hb_counters_next_random(hb_counters *c);

/* hb_counters_read: a snapshot into out (the scheduler's models and the
 * queue depth are the caller's to add). */
void hb_counters_read(hb_counters *c, hb_stats *out);

#endif /* HB_COUNTERS_H */
