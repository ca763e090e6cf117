/*
 * backend_cpu.h - SHA-1 of a list of messages on the calling thread.
 *
 * Owns: the loop over OpenSSL for the CPU workers and the verifier, and
 * hashing long messages in pieces so that a watcher can stop the work
 * between two pieces (cancel, close) and count what was done.
 * Must not: start threads (the engine's CPU workers are the pool), or know
 * jobs and batches (the watcher's callback does).
 */
#ifndef HB_BACKEND_CPU_H
#define HB_BACKEND_CPU_H

#include <stdint.h>

#include "hashbatch.h"

/* Bytes hashed between two questions to the watcher: about 1 ms of SHA-NI
 * (2.2 GB/s a core here, `openssl speed sha1`), so a cancel waits at most
 * that long per CPU thread, while the question (a few atomic loads) costs
 * nothing measurable against 2 MiB of hashing. */
#define HB_CPU_PIECE_BYTES ((uint64_t)2 << 20)

/* Who is asked, every HB_CPU_PIECE_BYTES or so, whether to go on. */
typedef struct {
    /* keep_going: `bytes` more were hashed since the last call; returns 0
     * to stop (the messages not finished then have no digest). */
    int (*keep_going)(void *ctx, uint64_t bytes);
    void *ctx;
    uint64_t pending; /* hashed and not reported yet; start at 0 */
    int stopped;      /* keep_going said 0; start at 0 */
} hb_cpu_watch;

/* hb_cpu_hash: out[i] = SHA-1(m[i]) for each i listed in `which` (count
 * entries), or for every i in [0, count) when which is NULL. */
void hb_cpu_hash(const hb_msg *m, const size_t *which, size_t count, hb_digest *out);

/* hb_cpu_hash_watched: hb_cpu_hash, asking w (NULL: nobody) between
 * pieces. Returns 1 when every digest is written, 0 when w stopped it. The
 * bytes hashed are all reported to w by the time it returns. */
int hb_cpu_hash_watched(const hb_msg *m, const size_t *which, size_t count, hb_digest *out,
                        hb_cpu_watch *w);

/* hb_cpu_sha1_watched: digest = SHA-1(*m), asking w (NULL: nobody)
 * between pieces; returns 1, or 0 when stopped (digest is then unset).
 * Bytes not yet reported stay in w->pending (hb_cpu_watch_flush). */
int hb_cpu_sha1_watched(const hb_msg *m, uint8_t digest[20], hb_cpu_watch *w);

/* hb_cpu_watch_flush: reports w->pending to w; returns 0 once it has said
 * stop (now or before), else 1. */
int hb_cpu_watch_flush(hb_cpu_watch *w);

#endif /* HB_BACKEND_CPU_H */
