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

/* The kinds of last blocks a message can end with (its tail rule): whole
 * blocks then padding alone; a partial block with its padding in one
 * block; one too full for the length (two blocks); and the same three for
 * a message shorter than a block (no block in place: the lane starts in
 * its tail). */
#define HB_MB_TAIL_KINDS 6u /* pack.h's HB_TAIL_KINDS, by hb_tail_kind */

/* A kernel broken on purpose (test builds), so the checks can be shown to
 * catch each kind of fault. */
typedef enum {
    HB_MB_BREAK_NONE = 0,
    HB_MB_BREAK_ALL_LANES, /* every lane's state wrong after each kernel call */
    HB_MB_BREAK_LANE,      /* lane `which`'s state wrong after each kernel call */
    HB_MB_BREAK_TAIL,      /* messages of tail kind `which` padded wrong */
    HB_MB_BREAK_CARRY      /* a state carried from one kernel call to the
                              next, mid-message, loaded wrong */
} hb_mb_break_kind;

/* Verification by structure: while it hashes a list, hb_mb_hash_checked
 * recomputes with OpenSSL a short run of blocks on every lane position
 * (from the state before the run to the state after it, the run spanning
 * two kernel calls where it has two blocks) and the last blocks of one
 * message of each tail kind the list has (from the state before its tail
 * to the final digest, padding built by OpenSSL, not by the lanes), plus
 * the tail of a message on each lane position that no run checked. Its
 * cost is a few dozen blocks per list, whatever the list's bytes. */
typedef struct {
    hb_mb_break_kind brk; /* in: HB_MB_BREAK_NONE but in fault tests */
    unsigned brk_which;   /* in: the lane or the tail kind broken */
    size_t runs;          /* out: runs of blocks recomputed */
    size_t tails;         /* out: tails recomputed to the digest */
    uint64_t bytes;       /* out: message bytes recomputed */
    size_t mismatches;    /* out: of runs and tails, how many differed */
} hb_mb_check;

/* hb_mb_check_reset: check's out fields to zero (check NULL: nothing). */
static inline void hb_mb_check_reset(hb_mb_check *check)
{
    if (check != NULL)
        check->runs = check->tails = check->mismatches = 0, check->bytes = 0;
}

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

/* hb_mb_hash_checked: hb_mb_hash with the checks above (check NULL: none;
 * else its out fields are set). A mismatch does not stop the hashing: the
 * caller, told by check->mismatches, recomputes the list. */
int hb_mb_hash_checked(hb_cpu_impl impl, hb_mb_tail_rule rule, const hb_msg *m, const size_t *which,
                       size_t count, hb_digest *out, hb_cpu_watch *w, size_t *from_lanes,
                       hb_mb_check *check);

#endif /* HB_MB_BATCH_H */
