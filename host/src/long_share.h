/*
 * long_share.h - a few long messages hashed by every free CPU thread,
 * streams moved between the lanes and SHA-NI mid-message.
 *
 * Owns: hashing a list of long messages no longer than one lane group in
 * rounds. The thread that took the list (the owner) runs most streams
 * through its lanes, a round's piece of each; pool threads with nothing
 * else to do join through the queue (hb_queue_offer_help) and each runs
 * one stream with OpenSSL (SHA-NI) in short pieces. Between two rounds
 * the owner takes the streams back and hands the helpers those with the
 * most bytes left, so the streams end together and the lanes stay full
 * until the end: 16 messages on two cores run as 15 lanes plus one core of
 * SHA-NI, not 8 lanes on each (half of every lane group idle).
 * Must not: know jobs, batches or the engine (the caller's watcher does),
 * or hold its lock while calling the queue.
 */
#ifndef HB_LONG_SHARE_H
#define HB_LONG_SHARE_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_watch.h"
#include "hashbatch.h"
#include "mb/mb_batch.h"
#include "mb/mb_impl.h"
#include "queue.h"

typedef struct {
    hb_queue *queue;      /* where idle pool threads find the list */
    unsigned max_helpers; /* threads that may join (the pool's others) */
    hb_cpu_impl impl;     /* the owner's lanes: a multi-buffer implementation */
    hb_mb_check *check;   /* in: the fault to inject; out: the rounds' checks,
                             summed (NULL: lanes unchecked) */
    unsigned wait_for;    /* tests: the first round waits until this many
                             helpers have joined (0 in the library) */
} hb_long_share_setup;

/* hb_long_share_min_bytes: the shortest message a shared list holds with
 * impl's lanes: SHARE_MIN_ROUNDS of the owner's rounds (long_share.c).
 * From the measured costs. */
uint64_t hb_long_share_min_bytes(hb_cpu_impl impl);

/* hb_long_share_pays: 1 when, by the measured costs, a lane group of
 * long messages (impl's lanes of them) runs faster as one list shared by
 * `threads` threads (the owner's lanes full but for one stream per helper,
 * each helper one stream by SHA-NI) than cut into one equal take per
 * thread (each in the narrowest lanes, or OpenSSL, that its share fills
 * for least). */
int hb_long_share_pays(hb_cpu_impl impl, unsigned threads);

/* hb_long_share_worth: 1 when m[0..n) is worth sharing with up to
 * max_helpers other threads: at least two messages, no more than impl's
 * lanes, each at least hb_long_share_min_bytes long. */
int hb_long_share_worth(hb_cpu_impl impl, unsigned max_helpers, const hb_msg *m, size_t n);

/* What a shared list took besides the owner's own work. */
typedef struct {
    size_t from_lanes;      /* digests the lanes had a part in (to verify) */
    uint64_t helper_bytes;  /* bytes the helpers hashed (SHA-NI) */
    uint64_t helper_cpu_ns; /* the helpers' CPU time, for the cost model */
} hb_long_share_result;

/* hb_long_share_hash: out[i] = SHA-1(m[i]) for i < n, shared as the top
 * says; asks w (NULL: nobody) after each round with the bytes every thread
 * hashed. Returns 1 when every digest is written, 0 when w stopped it
 * (the helpers have left either way); *result either way. */
int hb_long_share_hash(const hb_long_share_setup *setup, const hb_msg *m, size_t n, hb_digest *out,
                       hb_cpu_watch *w, hb_long_share_result *result);

#endif /* HB_LONG_SHARE_H */
