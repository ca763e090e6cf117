/*
 * verify.h - checking device digests against OpenSSL.
 *
 * Owns: choosing which messages to check (none, a sample, all) and
 * comparing. Must not: repair anything; the engine recomputes on mismatch.
 */
#ifndef HB_VERIFY_H
#define HB_VERIFY_H

#include "backend_cpu.h"
#include "hashbatch.h"

typedef struct {
    size_t checked;    /* messages recomputed */
    uint64_t bytes;    /* their bytes */
    size_t mismatches; /* of those, how many differed */
} hb_verify_result;

/* hb_verify_batch: recomputes some or all of got[] on the calling thread:
 * with HB_VERIFY_FULL all; with HB_VERIFY_SAMPLE per_mille of the batch at
 * random (chosen with *rng, a prng.h state), never none; with
 * HB_VERIFY_OFF none. The
 * recomputation asks watch (NULL: nobody) between pieces of a few MiB;
 * when it says stop, returns HB_ERR_CANCELLED at once (the batch is not
 * wanted any more). Else HB_OK or HB_ERR_NO_MEMORY. */
hb_status hb_verify_batch(const hb_msg *m, size_t n, const hb_digest *got, hb_verify_mode mode,
                          unsigned per_mille, uint64_t *rng, hb_cpu_watch *watch,
                          hb_verify_result *result);

#endif /* HB_VERIFY_H */
