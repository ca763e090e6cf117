/*
 * engine_internal.h - the engine's insides, shared with its workers.
 *
 * Owns: the layout of struct hb_engine and hb_worker, and the small
 * helpers workers use to report (stats, quarantine).
 * Must not: be included outside host/src.
 */
#ifndef HB_ENGINE_INTERNAL_H
#define HB_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "clock.h"
#include "backend_opencl.h"
#include "config.h"
#include "cpu_watch.h"
#include "error.h"
#include "fault.h"
#include "gate.h"
#include "hashbatch.h"
#include "queue.h"

#define HB_QUARANTINE_AFTER_ERRORS 3

typedef struct hb_worker {
    struct hb_engine *engine;
    pthread_t thread;
    int started;
    hb_opencl *device;    /* NULL: a CPU worker */
    unsigned stats_index; /* its entry in engine->device_stats */
    unsigned consecutive_errors;
} hb_worker;

struct hb_engine {
    hb_gate gate;  /* public calls inside; close shuts it and waits */
    int shut_down; /* close's work is done, only the memory is left */
    hb_settings settings;
    hb_take_limits pool_limits; /* what the CPU pool (and a waiting caller) take */
    hb_backend_kind backend;    /* OPENCL or CPU: what hashes queued jobs */
    hb_queue queue;
    hb_worker *workers;
    unsigned cpu_stats_index; /* the CPU pool's entry in device_stats */
    size_t nworkers;
    size_t ndevices; /* workers[0, ndevices) are devices */
    atomic_int devices_alive;
    atomic_int devices_done; /* device workers have all exited (close) */
    hb_fault_state faults;
    hb_error_slot error;

    atomic_uint_fast64_t jobs_completed; /* bumped by the jobs themselves */
    atomic_uint_fast64_t jobs_cancelled; /* likewise: cancelled or closed */
    struct {
        atomic_uint_fast64_t calls, messages, bytes, busy_ns;
    } inline_work;              /* small hb_sha1_batch calls hashed on the caller */
    pthread_mutex_t stats_lock; /* guards stats, device_stats, rng */
    hb_stats stats;
    hb_device_stats device_stats[HB_STATS_MAX_DEVICES];
    unsigned ndevice_stats;
    uint64_t rng; /* prng.h state: seeds each batch's sample */

    atomic_int cpu_lanes_distrusted; /* a lane digest failed verification */
    char description[1024];
};

/* Worker thread entry points (worker_cpu.c, worker_device.c). */
void *hb_cpu_worker_main(void *worker);

/* hb_cpu_run_batch: hashes b on this thread (hb_cpu_hash_checked), counts
 * it for the CPU pool, delivers and frees it (worker_cpu.c). */
void hb_cpu_run_batch(hb_engine *e, hb_batch *b);

/* hb_cpu_take_limits_for: what a CPU worker takes from the queue at once
 * when it hashes with impl (enough messages to fill its lanes). */
hb_take_limits hb_cpu_take_limits_for(hb_cpu_impl impl);

/* hb_cpu_take_share_below: below how many messages left a job is shared
 * out among `threads` pool threads rather than taken whole into one
 * thread's lanes: where each thread's part goes to OpenSSL one by one
 * (fewer messages than a step of the lanes costs in OpenSSL blocks, by
 * the measured costs), splitting runs them in parallel; above, a split
 * would leave lanes half empty for the same cost per step. */
size_t hb_cpu_take_share_below(hb_cpu_impl impl, unsigned threads);

/* hb_engine_cpu_impl_now: the implementation e's pool hashes with: its
 * settings', or OpenSSL once a lane digest failed verification. */
hb_cpu_impl hb_engine_cpu_impl_now(hb_engine *e);

/* hb_engine_distrust_cpu_lanes: a lane digest failed verification: from
 * now on e hashes on the CPU with OpenSSL only (worker_cpu.c). */
void hb_engine_distrust_cpu_lanes(hb_engine *e);

/* hb_cpu_hash_checked: out[i] = SHA-1(m[i]) for i < n on this thread with
 * hb_engine_cpu_impl_now(e), lane digests verified as e's verify mode
 * says (recomputed by OpenSSL on a mismatch). Returns 1 when every digest
 * is written and stands, 0 when w (NULL: nobody) stopped it. */
int hb_cpu_hash_checked(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out, hb_cpu_watch *w);

/* hb_batch_keep_going: the hb_cpu_watch callback of work on a batch (ctx
 * is the hb_batch): counts the bytes, and answers 0 once the batch is not
 * wanted any more (hb_batch_stop_reason) (worker_cpu.c). */
int hb_batch_keep_going(void *batch, uint64_t bytes);
void *hb_device_worker_main(void *worker);

/* hb_engine_count_batch: a batch a worker is about to deliver (counted
 * first, so a caller woken by the delivery sees it in the stats), or with
 * b NULL just busy time. */
void hb_engine_count_batch(hb_engine *e, const hb_worker *w, const hb_batch *b, uint64_t busy_ns,
                           uint64_t launches);

/* hb_engine_count_verify: messages a device worker verified, and how many
 * of them mismatched. */
void hb_engine_count_verify(hb_engine *e, size_t checked, size_t mismatches);

/* hb_engine_count_fallback: a device batch handed to the CPU whole. */
void hb_engine_count_fallback(hb_engine *e);

/* hb_engine_count_device_error: an OpenCL error on w's device, with the
 * number of batches it handed back (fallbacks). */
void hb_engine_count_device_error(hb_engine *e, hb_worker *w, size_t batches_handed_back);

/* hb_engine_quarantine: w's device is out; if it was the last one, the
 * CPU pool starts taking queued jobs. */
void hb_engine_quarantine(hb_engine *e, hb_worker *w);

/* hb_engine_next_random: a fresh seed (a prng.h state) for sampling. */
uint64_t hb_engine_next_random(hb_engine *e);

#endif /* HB_ENGINE_INTERNAL_H */
