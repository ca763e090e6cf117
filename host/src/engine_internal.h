/*
 * engine_internal.h - the engine's insides, shared with its workers.
 *
 * Owns: the layout of struct hb_engine and hb_worker. Workers read the
 * engine's settings and use the modules below them through it: the queue,
 * the scheduler, the counters (which also quarantine), the faults.
 * Must not: be included outside host/src.
 */
#ifndef HB_ENGINE_INTERNAL_H
#define HB_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "backend.h"
#include "backend_opencl.h"
#include "clock.h"
#include "config.h"
#include "counters.h"
#include "cpu_watch.h"
#include "error.h"
#include "fault.h"
#include "gate.h"
#include "hashbatch.h"
#include "queue.h"
#include "sched/scheduler.h"

#define HB_QUARANTINE_AFTER_ERRORS 3

typedef struct hb_worker {
    struct hb_engine *engine;
    pthread_t thread;
    int started;
    hb_opencl *device;         /* NULL: a CPU worker */
    const hb_backend_ops *ops; /* a device's table (backend.h); NULL for CPU workers */
    void *self;                /* the device, as ops takes it */
    unsigned stats_index;      /* its backend: entry in the counters and the scheduler */
    hb_sched_taker taker;      /* what it asks the scheduler with */
    unsigned consecutive_errors;
} hb_worker;

struct hb_engine {
    hb_gate gate;    /* public calls inside; close shuts it and waits */
    int shut_down;   /* close's work is done, only the memory is left */
    int queue_ready; /* the queue is set up (and not yet destroyed) */
    hb_settings settings;
    hb_take_limits pool_limits; /* what the CPU pool (and a waiting caller) take */
    hb_sched_taker pool_taker;
    hb_backend_kind backend; /* OPENCL or CPU: what hashes queued jobs */
    hb_queue queue;
    hb_sched sched;
    hb_counters counters;
    hb_worker *workers;
    size_t nworkers;
    size_t ndevices; /* workers[0, ndevices) are devices */
    hb_fault_state faults;
    int costs_distorted; /* a testing hook injected faults or forced costs:
                          * what the run learnt is not this machine's */
    hb_error_slot error;
    char model_keys[HB_STATS_MAX_DEVICES][512]; /* each backend's model cache key */
    uint64_t calibration_ns;
    int models_from_cache;
    char calibration_note[256]; /* backends whose calibration ran out of budget */
    hb_core_set pool_cores;     /* with HASHBATCH_DEVICE_CORES: the pool's (count 0: all) */
    int cores_apart;            /* the OpenCL runtime's threads are on the device
                                 * cores, apart from the pool's (cores.h) */

    atomic_uint_fast64_t jobs_completed; /* bumped by the jobs themselves */
    atomic_uint_fast64_t jobs_cancelled; /* likewise: cancelled or closed */
    atomic_int cpu_lanes_distrusted;     /* a lane digest failed verification */
    char description[1024];
};

/* Worker thread entry points (worker_cpu.c, worker_device.c). */
void *hb_cpu_worker_main(void *worker);
void *hb_device_worker_main(void *worker);

/* hb_cpu_run_batch: hashes b on this thread (hb_cpu_hash_checked), counts
 * it for the CPU pool, tells the scheduler what it took when the pool
 * took it from the jobs (b->predicted_ns), delivers and frees it
 * (worker_cpu.c). */
void hb_cpu_run_batch(hb_engine *e, hb_batch *b);

/* hb_device_take_limits: what a device worker takes from the queue at
 * once from cl: several staging buffers' worth (worker_device.c). */
hb_take_limits hb_device_take_limits(hb_opencl *cl);

/* hb_cpu_take_limits_for: what a CPU worker takes from the queue at once
 * when it hashes with impl, whose per-thread cost model is `model`: about
 * a fifth of a millisecond of work, and enough messages to fill its
 * lanes (worker_cpu.c). */
hb_take_limits hb_cpu_take_limits_for(hb_cpu_impl impl, const hb_cost_terms model[HB_COST_CLASSES]);

/* hb_cpu_take_share_below: below how many messages left a job is shared
 * out among `threads` pool threads rather than taken whole into one
 * thread's lanes: where each thread's part goes to OpenSSL one by one
 * (fewer messages than a step of the lanes costs in OpenSSL blocks, by
 * the measured costs), splitting runs them in parallel; above, a split
 * would leave lanes half empty for the same cost per step. */
size_t hb_cpu_take_share_below(hb_cpu_impl impl, unsigned threads);

/* hb_cpu_take_whole_from: the pool's long_whole_from (queue.h): the
 * shortest message of a list the pool's threads share mid-message
 * (long_share.h), or 0 where the pool cuts such lists into one take per
 * thread instead (one thread, an implementation named by the user, no
 * lanes, or equal takes measured faster: hb_long_share_pays)
 * (worker_cpu.c). */
uint64_t hb_cpu_take_whole_from(const hb_engine *e);

/* hb_engine_cpu_impl_now: the implementation e's pool hashes with: its
 * settings', or OpenSSL once a lane digest failed verification. */
hb_cpu_impl hb_engine_cpu_impl_now(hb_engine *e);

/* hb_engine_distrust_cpu_lanes: a lane digest failed verification: from
 * now on e hashes on the CPU with OpenSSL only (worker_cpu.c). */
void hb_engine_distrust_cpu_lanes(hb_engine *e);

/* hb_cpu_hash_checked: out[i] = SHA-1(m[i]) for i < n on this thread with
 * hb_engine_cpu_impl_now(e), lane digests verified as e's verify mode
 * says (recomputed by OpenSSL on a mismatch). A few long messages are
 * shared with the pool's idle threads (long_share.h); *helper_cpu_ns (if
 * not NULL) gets the CPU time they gave. Returns 1 when every digest is
 * written and stands, 0 when w (NULL: nobody) stopped it. */
int hb_cpu_hash_checked(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out, hb_cpu_watch *w,
                        uint64_t *helper_cpu_ns);

/* hb_batch_keep_going: the hb_cpu_watch callback of work on a batch (ctx
 * is the hb_batch): counts the bytes, and answers 0 once the batch is not
 * wanted any more (hb_batch_stop_reason) (worker_cpu.c). */
int hb_batch_keep_going(void *batch, uint64_t bytes);

#endif /* HB_ENGINE_INTERNAL_H */
