/*
 * backend_cpu.h - SHA-1 of a list of messages on the calling thread.
 *
 * Owns: hashing a list with the engine's CPU implementation (mb_impl.h):
 * through multi-buffer lanes, or one message at a time with OpenSSL; and
 * OpenSSL's one message at a time itself, in pieces so that a watcher can
 * stop the work between two pieces (cancel, close) and count what was
 * done (the verifier's recomputation uses it: OpenSSL is the oracle).
 * Must not: start threads (the engine's CPU workers are the pool), or know
 * jobs and batches (the watcher's callback does).
 */
#ifndef HB_BACKEND_CPU_H
#define HB_BACKEND_CPU_H

#include <stdint.h>

#include "cpu_watch.h"
#include "hashbatch.h"
#include "mb/mb_batch.h"
#include "mb/mb_impl.h"

/* hb_cpu_hash_watched: out[i] = SHA-1(m[i]) for each i listed in `which`
 * (count entries), or for every i in [0, count) when which is NULL, with
 * impl (one this CPU runs), asking w (NULL: nobody) between pieces. Returns 1 when every digest is
 * written, 0 when w stopped it. The bytes hashed are all reported to w by the time it returns.
 * *from_lanes (if not NULL) counts the digests the multi-buffer lanes computed, the rest being
 * OpenSSL's: only those need verifying. */
int hb_cpu_hash_watched(hb_cpu_impl impl, const hb_msg *m, const size_t *which, size_t count,
                        hb_digest *out, hb_cpu_watch *w, size_t *from_lanes);

/* hb_cpu_hash_structured: hb_cpu_hash_watched, the lanes' work checked
 * by structure as mb_batch.h says (check NULL: not checked; OpenSSL's
 * digests need no check, so check->runs and tails stay 0 without lanes). */
int hb_cpu_hash_structured(hb_cpu_impl impl, const hb_msg *m, const size_t *which, size_t count,
                           hb_digest *out, hb_cpu_watch *w, size_t *from_lanes, hb_mb_check *check);

/* hb_cpu_sha1_watched: digest = SHA-1(*m) by OpenSSL, asking w (NULL:
 * nobody) between pieces; returns 1, or 0 when stopped (digest is then
 * unset). Bytes not yet reported stay in w->pending (hb_cpu_watch_flush). */
int hb_cpu_sha1_watched(const hb_msg *m, uint8_t digest[20], hb_cpu_watch *w);

#endif /* HB_BACKEND_CPU_H */
