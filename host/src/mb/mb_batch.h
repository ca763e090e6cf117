/*
 * mb_batch.h - a list of messages hashed through multi-buffer lanes.
 *
 * Owns: keeping every lane of a multi-buffer implementation busy: a lane
 * whose message ends (its padded final blocks done) takes the next
 * message at once, whatever the lengths; and deciding, from the costs
 * measured on this machine (mb_costs.h), when the few lanes still busy at
 * the end of a list are finished faster one message at a time by OpenSSL
 * (SHA-NI), and when a list is too small to fill lanes at all.
 * Must not: allocate, start threads, or know jobs and batches (the
 * watcher's callback does).
 */
#ifndef HB_MB_BATCH_H
#define HB_MB_BATCH_H

#include "cpu_watch.h"
#include "hashbatch.h"
#include "mb/mb_impl.h"

/* How the end of a list is finished (tests force each way). */
typedef enum {
    HB_MB_TAIL_MEASURED = 0, /* by the measured costs: what the library does */
    HB_MB_TAIL_LANES,        /* always in lanes, however few are busy */
    HB_MB_TAIL_ONE_BY_ONE    /* as soon as no message waits for a lane */
} hb_mb_tail_rule;

/* hb_mb_hash: out[i] = SHA-1(m[i]) for each i listed in `which` (count
 * entries), or every i in [0, count) when which is NULL, with the
 * multi-buffer implementation impl (not HB_CPU_IMPL_SHA_NI; the caller
 * checked it runs here). Asks w (NULL: nobody) every HB_CPU_PIECE_BYTES
 * or so; returns 1 when every digest is written, 0 when w stopped it.
 * Up to a piece of bytes may stay in w->pending: the caller flushes
 * (hb_cpu_watch_flush), as backend_cpu.c does.
 * *from_lanes (if not NULL) is set to the number of digests the kernel
 * computed (the others OpenSSL did, by the tail rule). */
int hb_mb_hash(hb_cpu_impl impl, hb_mb_tail_rule rule, const hb_msg *m, const size_t *which,
               size_t count, hb_digest *out, hb_cpu_watch *w, size_t *from_lanes);

#endif /* HB_MB_BATCH_H */
