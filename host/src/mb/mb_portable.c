/*
 * mb_portable.c - SHA-1 of 4 lanes at once in the compiler's vectors.
 *
 * Owns: hb_mb_blocks_portable, the multi-buffer kernel every machine runs
 * (GCC and Clang vector extensions: SSE2 on any x86-64, NEON on Arm, or
 * plain scalar code). Words are loaded one by one, big-endian, so it
 * needs no alignment and no instruction set of its own. It keeps the
 * multi-buffer path tested and running where the wide kernels cannot.
 * Must not: produce a state that differs from OpenSSL's for any block.
 */
#include "mb/mb_impl.h"

typedef uint32_t mb_v4 __attribute__((vector_size(16)));

#define MB_VEC mb_v4
#define MB_ADD(a, b) ((a) + (b))
#define MB_ADD_K(x, k) ((x) + (uint32_t)(k))
#define MB_ROL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))
#define MB_XOR4(a, b, c, d) ((a) ^ (b) ^ (c) ^ (d))
#define MB_CH(b, c, d) ((d) ^ ((b) & ((c) ^ (d))))
#define MB_PARITY(b, c, d) ((b) ^ (c) ^ (d))
#define MB_MAJ(b, c, d) (((b) & (c)) | ((d) & ((b) | (c))))
#include "mb/mb_rounds.h"

static inline uint32_t load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void hb_mb_blocks_portable(uint32_t *state, const uint8_t *const *block, size_t nblocks)
{
    mb_v4 s[5];
    for (int k = 0; k < 5; k++)
        for (int lane = 0; lane < 4; lane++)
            s[k][lane] = state[4 * k + lane];
    for (size_t n = 0; n < nblocks; n++) {
        mb_v4 w[16];
        for (int j = 0; j < 16; j++)
            for (int lane = 0; lane < 4; lane++)
                w[j][lane] = load_be32(block[lane] + 64 * n + 4 * j);
        MB_COMPRESS(s, w);
    }
    for (int k = 0; k < 5; k++)
        for (int lane = 0; lane < 4; lane++)
            state[4 * k + lane] = s[k][lane];
}
