/*
 * backend_cpu.h - SHA-1 of a batch on the CPU pool, with OpenSSL.
 *
 * Owns: splitting a batch into tasks for the pool.
 * Must not: verify (OpenSSL is the reference itself) or touch devices.
 */
#ifndef HB_BACKEND_CPU_H
#define HB_BACKEND_CPU_H

#include "hashbatch.h"
#include "thread_pool.h"

/* hb_cpu_hash: out[i] = SHA-1(m[i]) for the messages whose indices are
 * listed in `which` (NULL: all of [0, n)), on the pool. */
void hb_cpu_hash(hb_pool *pool, const hb_msg *m, size_t n, const size_t *which,
                 hb_digest *out);

#endif /* HB_BACKEND_CPU_H */
