/*
 * verify.c - recomputing device results with OpenSSL.
 *
 * Owns: full verification (every message) and sampled verification of
 * whole messages: one random message from each of k equal slices of the
 * batch, chosen fresh
 * for every batch so that no lane position escapes checking for long.
 * Must not: decide what a mismatch means; it only counts them.
 */
#include "verify.h"

#include "backend_cpu.h"
#include "prng.h"

#include <stdlib.h>
#include <string.h>

static size_t sample_size(size_t n, unsigned per_mille)
{
    return (size_t)((double)n * per_mille / 1000.0);
}

/* The sample: `count` indices in runs of up to 16 consecutive messages,
 * one run at a random place in each of count / 16 equal slices of [0, n):
 * distinct, spread over the whole batch, and a run covers every lane of a
 * device's group of 16 (a lane that computes wrong is caught by any run
 * over its group). Runs also keep the checks' reads of messages and
 * digests on shared cache lines: at a random index each, the sample of a
 * million 64-byte messages cost the device worker more than its launches. */
#define SAMPLE_RUN 16u

static void draw_sample(size_t n, size_t count, uint64_t *rng, size_t *which)
{
    size_t runs = (count + SAMPLE_RUN - 1) / SAMPLE_RUN, k = 0;
    for (size_t r = 0; r < runs; r++) {
        size_t start = r * n / runs, end = (r + 1) * n / runs;
        size_t len = count - k < SAMPLE_RUN ? count - k : SAMPLE_RUN;
        len = len < end - start ? len : end - start;
        size_t first = start + (size_t)hb_prng_below(rng, end - start - len + 1);
        for (size_t i = 0; i < len; i++)
            which[k++] = first + i;
    }
    while (k < count) /* slices shorter than a run: fill with the last */
        which[k] = which[k - 1], k++;
}

/* Which messages to recompute: all, or the sample (never empty). */
static size_t *choose_indices(size_t n, hb_verify_mode mode, unsigned per_mille, uint64_t *rng,
                              size_t *count)
{
    size_t drawn = mode == HB_VERIFY_FULL ? n : sample_size(n, per_mille);
    if (drawn == 0)
        drawn = 1; /* a sample is never empty */
    *count = drawn;
    size_t *which = malloc(*count * sizeof *which);
    if (which == NULL)
        return NULL;
    if (mode == HB_VERIFY_FULL)
        for (size_t k = 0; k < n; k++)
            which[k] = k;
    else
        draw_sample(n, drawn, rng, which);
    return which;
}

hb_status hb_verify_batch(const hb_msg *m, size_t n, const hb_digest *got, hb_verify_mode mode,
                          unsigned per_mille, uint64_t *rng, hb_cpu_watch *watch,
                          hb_verify_result *result)
{
    *result = (hb_verify_result){0, 0, 0};
    if (mode == HB_VERIFY_OFF || n == 0)
        return HB_OK;
    size_t count;
    size_t *which = choose_indices(n, mode, per_mille, rng, &count);
    if (which == NULL)
        return HB_ERR_NO_MEMORY;
    hb_status st = HB_OK;
    for (size_t k = 0; k < count && st == HB_OK; k++) {
        hb_digest expected;
        if (!hb_cpu_sha1_watched(&m[which[k]], expected, watch)) {
            st = HB_ERR_CANCELLED;
            break;
        }
        result->checked++;
        result->bytes += m[which[k]].len;
        if (memcmp(expected, got[which[k]], sizeof(hb_digest)) != 0)
            result->mismatches++;
    }
    hb_cpu_watch_flush(watch);
    free(which);
    return st;
}
