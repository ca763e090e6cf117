/*
 * backend_cpu.c - batches hashed by OpenSSL on the calling thread.
 *
 * Owns: hb_cpu_hash. Parallelism comes from the engine's CPU workers each
 * taking their own batches from the queue.
 * Must not: allocate, or hash any way but hb_sha1_openssl.
 */
#include "backend_cpu.h"

#include "sha1_openssl.h"

void hb_cpu_hash(const hb_msg *m, const size_t *which, size_t count, hb_digest *out)
{
    for (size_t k = 0; k < count; k++) {
        size_t i = which ? which[k] : k;
        hb_sha1_openssl(m[i].data, m[i].len, out[i]);
    }
}
