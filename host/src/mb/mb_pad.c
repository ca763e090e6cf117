/*
 * mb_pad.c - SHA-1 padding and digests (see mb_pad.h).
 *
 * Owns: the tail builder, the digest writer and the initial state.
 * Must not: hash.
 */
#include "mb/mb_pad.h"

#include <string.h>

const uint32_t hb_mb_initial_state[5] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u,
                                         0xc3d2e1f0u};

static void store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
    p[3] = (uint8_t)v;
}

unsigned hb_mb_build_tail(uint8_t tail[2 * HB_MB_BLOCK], const uint8_t *rest, unsigned rest_bytes,
                          uint64_t len)
{
    unsigned blocks = rest_bytes + 1 + 8 <= HB_MB_BLOCK ? 1 : 2;
    memset(tail, 0, blocks * HB_MB_BLOCK);
    if (rest_bytes > 0)
        memcpy(tail, rest, rest_bytes);
    tail[rest_bytes] = 0x80;
    uint64_t bits = len << 3;
    store_be32(tail + blocks * HB_MB_BLOCK - 8, (uint32_t)(bits >> 32));
    store_be32(tail + blocks * HB_MB_BLOCK - 4, (uint32_t)bits);
    return blocks;
}

void hb_mb_state_to_digest(const uint32_t h[5], uint8_t digest[20])
{
    for (unsigned k = 0; k < 5; k++)
        store_be32(digest + 4 * k, h[k]);
}
