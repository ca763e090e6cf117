/*
 * absorb.c - feeding a Ruby string's bytes to OpenSSL's SHA-1
 * (Hashbatch::SHA1 and the drop-in), one page ahead of the hashing.
 *
 * Why: the strings a program hashes were mostly made a while before
 * (read, received, built into an array or a Queue) and are no longer in
 * the CPU's caches. SHA-NI takes about 2 ns a 64-byte block, while a cache
 * miss costs tens of nanoseconds, and the hardware prefetcher starts over
 * at every 4 KiB page, so a string hashed straight from memory waits on
 * each page's first lines in turn. Asking for a whole page's lines at once
 * (and for the next page while this one is hashed) lets their misses
 * overlap. Measured on an Intel Xeon (2026-12-03, bench/RESULTS.md §4):
 * 600,000 distinct 4 KiB strings hashed one by one in 2.07 s before,
 * 1.54-1.72 s with it; one string hashed 600,000 times (always cached)
 * 1.35 s either way.
 *
 * Owns: the prefetch pattern. Must not: hash any other way than
 * SHA1_Update, or touch the GVL.
 */
#include "absorb.h"
#include "hb_ext.h"

#define PAGE ((size_t)4096) /* the prefetcher's reach, and the step here */
#define LINE ((size_t)64)   /* a cache line */

/* prefetch: asks for the lines of p[0..n), for reading, to stay cached. */
static void prefetch(const unsigned char *p, size_t n)
{
    for (size_t off = 0; off < n; off += LINE)
        __builtin_prefetch(p + off, 0, 3);
}

void hb_sha1_absorb(SHA_CTX *ctx, const void *data, size_t n)
{
    const unsigned char *p = data;
    prefetch(p, n < PAGE ? n : PAGE);
    for (size_t done = 0; done < n; done += PAGE) {
        size_t left = n - done, take = left < PAGE ? left : PAGE;
        if (left > take)
            prefetch(p + done + take, left - take < PAGE ? left - take : PAGE);
        SHA1_Update(ctx, p + done, take);
    }
}
