/*
 * backend_cpu.h - SHA-1 of a list of messages on the calling thread.
 *
 * Owns: the loop over OpenSSL for the CPU workers and the verifier.
 * Must not: start threads (the engine's CPU workers are the pool).
 */
#ifndef HB_BACKEND_CPU_H
#define HB_BACKEND_CPU_H

#include "hashbatch.h"

/* hb_cpu_hash: out[i] = SHA-1(m[i]) for each i listed in `which` (count
 * entries), or for every i in [0, count) when which is NULL. */
void hb_cpu_hash(const hb_msg *m, const size_t *which, size_t count, hb_digest *out);

#endif /* HB_BACKEND_CPU_H */
