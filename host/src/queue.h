/*
 * queue.h - the engine's one queue: jobs waiting, and batches taken.
 *
 * Owns: the FIFO of jobs that still have messages to hand out, cutting
 * work off its head into batches that fit the taker (a device wants up to
 * a staging buffer's worth, the CPU pool small pieces), the list of batches
 * a faulty device handed back for the CPU, and wake-ups for idle workers.
 * Consecutive messages of many jobs go into one batch: that is how small
 * jobs from many threads share one device launch.
 * Must not: hash, or decide which worker exists.
 */
#ifndef HB_QUEUE_H
#define HB_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "hashbatch.h"
#include "job.h"

typedef struct {
    hb_job *job;
    size_t first; /* job message index */
    size_t count;
} hb_slice;

/* A batch: slices of one or more jobs, flattened into one message array.
 * digests[k] is the result (or carried state) of msgs[k]. */
typedef struct hb_batch {
    hb_slice *slices;
    size_t nslices;
    const hb_msg *msgs; /* the job's own (borrowed) or owned_msgs */
    hb_digest *digests; /* the job's output (borrowed) or the batch's own */
    hb_msg *owned_msgs; /* NULL when borrowed */
    int borrowed;       /* one slice: msgs and digests point into its job */
    size_t n;
    uint64_t bytes;
    struct hb_queue *queue; /* the queue it was taken from */
    double predicted_ns;    /* the taker's share callback's prediction of
                               its time, made as it was taken; < 0: none
                               (a fallback, or no scheduler) */
    struct hb_batch *next;  /* in the fallback list, or a worker's list */
} hb_batch;

typedef struct {
    uint64_t max_bytes; /* stop adding messages past this many bytes */
    size_t max_messages;
    uint64_t long_above;  /* messages longer than this are long: they go
                             in batches of long messages only */
    size_t long_max;      /* long messages per batch (they stream side
                             by side through a device's lanes) */
    int refuse_long;      /* 1: take nothing if the head message is long */
    unsigned share_among; /* >1: a job with fewer than share_below
                             messages left gives a take at most
                             1/share_among of them (rounded up), so a job
                             of few messages still reaches every taker */
    size_t share_below;
    size_t long_share_below;  /* a job of fewer messages, the next one long,
                                 is cut into share_among equal takes (0:
                                 never) */
    uint64_t long_whole_from; /* ... but one of long_max messages or fewer,
                                 the next one at least this long, goes
                                 whole to one taker, who shares it with
                                 the others mid-message (0: never) */
    /* The scheduler's say (NULL: none): given the work pending in the
     * queue (messages, bytes not yet handed out), 0 when this taker should
     * leave it to others, else 1 with the most it may take now (called
     * under the queue's lock). */
    int (*share)(void *ctx, uint64_t pending_messages, uint64_t pending_bytes,
                 uint64_t *max_messages, uint64_t *max_bytes);
    /* ... and told what the take got (NULL: not told), under the lock, so
     * the next taker's share counts it; returns the predicted ns. */
    double (*taken)(void *ctx, uint64_t messages, uint64_t bytes);
    void *share_ctx;
} hb_take_limits;

typedef enum { HB_TAKER_DEVICE, HB_TAKER_CPU } hb_taker;

/* Work a pool thread may join when it finds nothing to take: a list one
 * thread took and shares with the others (long_share.h). */
typedef struct hb_help_offer {
    int (*join)(void *ctx);  /* under the queue's lock: 1 when the taker is
                                in (it must then call help) */
    void (*help)(void *ctx); /* without the lock: works beside the owner,
                                returns when there is nothing left for it */
    void *ctx;
    struct hb_help_offer *next;
} hb_help_offer;

/* The queue's fields are its own: other modules use the calls below. */
typedef struct hb_queue {
    pthread_mutex_t lock;
    pthread_cond_t device_work; /* device workers wait here */
    pthread_cond_t cpu_work;    /* CPU workers wait here */
    pthread_cond_t reconsider;  /* takers the scheduler turned down wait
                                   here: a new job or a poke wakes them */
    hb_job *head, *tail;
    uint64_t pending_messages;
    uint64_t pending_bytes;
    uint64_t pending_jobs;
    uint64_t jobs_withdrawn; /* jobs that lost messages to cancel or close */
    hb_batch *fallback_head, *fallback_tail;
    hb_help_offer *offers;                      /* shared lists pool threads may join */
    int fallbacks_final;                        /* no device will hand back more */
    atomic_uint declined;                       /* takers waiting after the scheduler said
                                                   no: hb_queue_poke wakes them */
    uint64_t declined_messages, declined_bytes; /* the most pending work
                                  a taker was turned down with: a push
                                  wakes them once the pending work is
                                  twice that */
    atomic_int cpu_takes_jobs;                  /* the pool hashes queued jobs, not only
                                                   fallbacks; set under lock, read without */
    atomic_int closing;                         /* set under lock; workers read it without,
                                                   between the chunks of a batch */
} hb_queue;

void hb_queue_init(hb_queue *q, int cpu_takes_jobs);
void hb_queue_destroy(hb_queue *q);

/* hb_queue_push: appends j (HB_ERR_CLOSED once closing). */
hb_status hb_queue_push(hb_queue *q, hb_job *j);

/* hb_queue_take: a batch for the taker, or NULL. With wait, sleeps until
 * there is one or the queue closes (then NULL; a CPU taker waits on until
 * hb_queue_fallbacks_final, taking what devices hand back). CPU takers get
 * fallback batches first. A taker the scheduler turns down (limits->share)
 * waits to be poked or for a new job, and asks again. Out of memory, it
 * returns NULL and the messages stay queued. */
hb_batch *hb_queue_take(hb_queue *q, hb_taker taker, const hb_take_limits *limits, int wait);

/* hb_queue_take_or_help: hb_queue_take for a pool thread (HB_TAKER_CPU,
 * waiting), which may also join an offer when no job is queued:
 * then it returns NULL with *joined set, and the caller runs
 * (*joined)->help. NULL with *joined NULL: the queue closed. */
hb_batch *hb_queue_take_or_help(hb_queue *q, const hb_take_limits *limits, hb_help_offer **joined);

/* hb_queue_offer_help: o may be joined until hb_queue_withdraw_help;
 * idle pool threads are woken to look. */
void hb_queue_offer_help(hb_queue *q, hb_help_offer *o);

/* hb_queue_withdraw_help: nobody joins o after this returns (those in
 * already are the owner's to wait for). */
void hb_queue_withdraw_help(hb_queue *q, hb_help_offer *o);

/* hb_queue_take_own: for hb_sha1_batch's thread about to wait on j: a batch of j's own
 * messages that nobody has taken yet, if the CPU pool takes queued jobs
 * (so the waiter hashes them itself instead of waking a worker); else
 * NULL. */
hb_batch *hb_queue_take_own(hb_queue *q, hb_job *j, const hb_take_limits *limits);

/* hb_queue_end_whole_takes: limits (a taker's, read under the queue's
 * lock) no longer hand a few long messages out whole: their sharing
 * ended (the pool's lanes were distrusted). */
void hb_queue_end_whole_takes(hb_queue *q, hb_take_limits *limits);

/* hb_queue_poke: the scheduler's picture changed (a batch finished):
 * takers it turned down ask again. Cheap when none waits. */
void hb_queue_poke(hb_queue *q);

/* hb_queue_let_cpu_take_jobs: from now on the pool hashes queued jobs too
 * (no device is left). */
void hb_queue_let_cpu_take_jobs(hb_queue *q);

/* hb_queue_fallbacks_final: every device worker has stopped: CPU takers
 * waiting for fallbacks during close may leave. */
void hb_queue_fallbacks_final(hb_queue *q);

/* hb_queue_push_fallback: hands a batch to the CPU pool. */
void hb_queue_push_fallback(hb_queue *q, hb_batch *b);

/* hb_queue_withdraw: takes j out of the queue (if there) and returns how
 * many of its messages were never handed out: the caller abandons them
 * (hb_job_cancel does, under j->lock: the lock order is job, then queue). */
size_t hb_queue_withdraw(hb_queue *q, hb_job *j);

/* hb_queue_close: from now on pushes fail and waiting takers wake; every
 * job still queued is withdrawn with HB_ERR_CLOSED. */
void hb_queue_close(hb_queue *q);

/* hb_queue_cpu_takes_jobs: 1 while the CPU pool hashes queued jobs. */
int hb_queue_cpu_takes_jobs(hb_queue *q);

/* hb_queue_is_closing: 1 once hb_queue_close has begun. */
int hb_queue_is_closing(hb_queue *q);

/* hb_queue_depth: pending messages and jobs, now. */
void hb_queue_depth(hb_queue *q, uint64_t *messages, uint64_t *jobs);

/* hb_batch_deliver: writes each slice's digests into its job's output and
 * counts them finished with `status` (results are not copied unless OK). */
void hb_batch_deliver(hb_batch *b, hb_status status);
void hb_batch_free(hb_batch *b);

/* hb_batch_stop_reason: HB_OK while b's work is wanted; HB_ERR_CLOSED once
 * its queue is closing; HB_ERR_CANCELLED once every job it carries has
 * been cancelled. Lock-free: workers ask between the chunks of a batch. */
hb_status hb_batch_stop_reason(const hb_batch *b);

/* hb_batch_abandon: b's messages will not be done: each slice is counted
 * abandoned for its job, with the job's own cancel reason if it has one,
 * else `reason`. Nothing is written to the jobs' outputs. */
void hb_batch_abandon(hb_batch *b, hb_status reason);

/* hb_batch_count_work: `bytes` of b's messages were just hashed (a chunk
 * finished); counted for each job of b (hb_testing_job_work). */
void hb_batch_count_work(hb_batch *b, uint64_t bytes);

#endif /* HB_QUEUE_H */
