/*
 * job.h - a submitted batch: its messages, its progress and its waiters.
 *
 * Owns: the job's life: messages finished, the outcome, waking waiters
 * (condition variable and, on request, an eventfd), and the reference
 * count shared by the caller's handle and the engine's queue.
 * Must not: know the engine; a finished job outlives it.
 */
#ifndef HB_JOB_H
#define HB_JOB_H

#include <pthread.h>
#include <stdatomic.h>

#include "hashbatch.h"

/* uniform_len of a job whose messages differ in length */
#define HB_LENGTHS_VARY UINT64_MAX

struct hb_job {
    /* set at submit, read-only after */
    const hb_msg *msgs;
    hb_digest *out;
    size_t n;
    uint64_t uniform_len;                    /* every message's length, or HB_LENGTHS_VARY */
    struct hb_queue *queue;                  /* set once when queued; for cancel */
    atomic_uint_fast64_t *completed_counter; /* bumped as it finishes OK,
                                                before waiters wake */
    atomic_uint_fast64_t *cancelled_counter; /* bumped as it finishes
                                                cancelled or closed */

    /* set by cancel (under lock), read by workers without it */
    atomic_int stop;                 /* HB_OK, or HB_ERR_CANCELLED: its batches stop
                                        at their next chunk */
    atomic_uint_fast64_t work_bytes; /* bytes its batches have hashed (each
                              chunk counted once finished): for tests */

    /* guarded by the engine's queue lock */
    size_t next_to_take; /* messages [0, next_to_take) were handed out */
    uint64_t bytes_left; /* bytes of the messages not handed out (set at
                            submit, before the job is queued) */
    int queued;          /* in the engine's pending list */
    struct hb_job *queue_next;

    /* guarded by lock */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    size_t finished;   /* messages whose digest is written */
    size_t abandoned;  /* messages dropped by cancel or close */
    hb_status outcome; /* first failure, else HB_OK */
    int done;
    int event_fd;                /* -1 until hb_job_fd */
    uint64_t work_bytes_at_stop; /* work_bytes when stop was set */

    atomic_int refs; /* the caller's handle + the engine's */
};

/* hb_job_create: a job with two references (caller and engine). */
hb_job *hb_job_create(const hb_msg *m, size_t n, hb_digest *out);

/* hb_job_release: drops one reference; the last frees the job. */
void hb_job_release(hb_job *j);

/* hb_job_add_finished: count messages done (with a failure status if
 * they failed); finishes the job when nothing is left. */
void hb_job_add_finished(hb_job *j, size_t count, hb_status status);

/* hb_job_abandon: count messages that will never be done, with the reason
 * (HB_ERR_CANCELLED, HB_ERR_CLOSED); finishes the job when nothing is
 * left. */
void hb_job_abandon(hb_job *j, size_t count, hb_status reason);

/* hb_job_abandon_locked: hb_job_abandon with j->lock already held. */
void hb_job_abandon_locked(hb_job *j, size_t count, hb_status reason);

/* hb_job_stop_locked: with j->lock held, asks every worker holding j's
 * messages to drop them at its next chunk (reason HB_ERR_CANCELLED), and
 * notes how much work had been done at that moment. */
void hb_job_stop_locked(hb_job *j, hb_status reason);

/* hb_job_stopped: HB_OK, or the reason j's batches must stop. Lock-free. */
hb_status hb_job_stopped(const hb_job *j);

/* hb_job_count_work: bytes of j's messages hashed by a chunk that just
 * finished. Lock-free. */
void hb_job_count_work(hb_job *j, uint64_t bytes);

/* hb_job_wait_done: waits until j is done (every message finished or
 * abandoned), without helping. */
void hb_job_wait_done(hb_job *j);

#endif /* HB_JOB_H */
