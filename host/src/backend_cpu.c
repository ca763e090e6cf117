/*
 * backend_cpu.c - batches hashed by OpenSSL on a pool of threads.
 *
 * Owns: cutting a batch into contiguous runs of messages, sized so each
 * thread gets several (for balance) and each run amortises its hand-out.
 * Small batches run on the caller's thread: waking workers would cost more
 * than the hashing.
 * Must not: allocate, or hash any way but hb_sha1_openssl.
 */
#include "backend_cpu.h"

#include "sha1_openssl.h"

#define INLINE_BYTES_LIMIT ((size_t)64 << 10)
#define INLINE_COUNT_LIMIT 64
#define RUNS_PER_THREAD 8

typedef struct {
    const hb_msg *messages;
    const size_t *which;
    size_t count;
    size_t per_run;
    hb_digest *out;
} cpu_batch;

static void hash_one(const cpu_batch *batch, size_t k)
{
    size_t i = batch->which ? batch->which[k] : k;
    hb_sha1_openssl(batch->messages[i].data, batch->messages[i].len, batch->out[i]);
}

static void hash_run(void *context, size_t run)
{
    const cpu_batch *batch = context;
    size_t first = run * batch->per_run;
    size_t last = first + batch->per_run;
    if (last > batch->count)
        last = batch->count;
    for (size_t k = first; k < last; k++)
        hash_one(batch, k);
}

static size_t total_bytes(const cpu_batch *batch, size_t limit)
{
    size_t bytes = 0;
    for (size_t k = 0; k < batch->count && bytes < limit; k++)
        bytes += batch->messages[batch->which ? batch->which[k] : k].len;
    return bytes;
}

void hb_cpu_hash(hb_pool *pool, const hb_msg *m, size_t n, const size_t *which,
                 hb_digest *out)
{
    cpu_batch batch = {m, which, n, n, out};
    if (n <= INLINE_COUNT_LIMIT && total_bytes(&batch, INLINE_BYTES_LIMIT) < INLINE_BYTES_LIMIT) {
        hash_run(&batch, 0);
        return;
    }
    size_t runs = (size_t)hb_pool_threads(pool) * RUNS_PER_THREAD;
    batch.per_run = (n + runs - 1) / runs;
    hb_pool_run(pool, hash_run, &batch, (n + batch.per_run - 1) / batch.per_run);
}
