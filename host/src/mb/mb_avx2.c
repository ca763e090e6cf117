/*
 * mb_avx2.c - SHA-1 of 8 lanes at once in AVX2 registers.
 *
 * Owns: hb_mb_blocks_avx2, for CPUs with AVX2 and no AVX-512. Each ymm
 * register holds one word of all 8 lanes; AVX2 has no rotate and no
 * three-input logic, so rotates are two shifts and an OR and the round
 * functions two or three operations. A block of every lane is loaded as
 * two halves of 8 words per lane, byte-swapped and transposed 8 x 8.
 * Compiled with function attributes; called only where the CPU has AVX2.
 * Must not: produce a state that differs from OpenSSL's for any block.
 */
#include "mb/mb_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))

#define MB_VEC __m256i
#define MB_ADD(a, b) _mm256_add_epi32((a), (b))
#define MB_ADD_K(x, k) _mm256_add_epi32((x), _mm256_set1_epi32((int)(k)))
#define MB_ROL(x, n) _mm256_or_si256(_mm256_slli_epi32((x), (n)), _mm256_srli_epi32((x), 32 - (n)))
#define MB_XOR4(a, b, c, d) _mm256_xor_si256(_mm256_xor_si256((a), (b)), _mm256_xor_si256((c), (d)))
#define MB_CH(b, c, d) _mm256_xor_si256((d), _mm256_and_si256((b), _mm256_xor_si256((c), (d))))
#define MB_PARITY(b, c, d) _mm256_xor_si256(_mm256_xor_si256((b), (c)), (d))
#define MB_MAJ(b, c, d)                                                                            \
    _mm256_or_si256(_mm256_and_si256((b), (c)), _mm256_and_si256((d), _mm256_or_si256((b), (c))))
#include "mb/mb_rounds.h"

/* r[i] = 8 words of lane i on entry; r[j] = word j of every lane after. */
AVX2 static inline void transpose8(__m256i r[8])
{
    __m256i t[8], u[8];
    for (int k = 0; k < 4; k++) {
        t[2 * k] = _mm256_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
    }
    for (int k = 0; k < 2; k++) {
        u[4 * k] = _mm256_unpacklo_epi64(t[4 * k], t[4 * k + 2]);
        u[4 * k + 1] = _mm256_unpackhi_epi64(t[4 * k], t[4 * k + 2]);
        u[4 * k + 2] = _mm256_unpacklo_epi64(t[4 * k + 1], t[4 * k + 3]);
        u[4 * k + 3] = _mm256_unpackhi_epi64(t[4 * k + 1], t[4 * k + 3]);
    }
    /* u[m] (lanes 0-3) and u[4 + m] (lanes 4-7): words m and 4 + m */
    for (int m = 0; m < 4; m++) {
        r[m] = _mm256_permute2x128_si256(u[m], u[4 + m], 0x20);
        r[4 + m] = _mm256_permute2x128_si256(u[m], u[4 + m], 0x31);
    }
}

/* w[j] = big-endian word j of block n of every lane. */
AVX2 static inline void load_words(__m256i w[16], const uint8_t *const *block, size_t n)
{
    const __m256i to_big_endian =
        _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12, 3, 2, 1, 0, 7, 6, 5,
                         4, 11, 10, 9, 8, 15, 14, 13, 12);
    for (int half = 0; half < 2; half++) {
        __m256i *r = w + 8 * half;
        for (int lane = 0; lane < 8; lane++) {
            const void *p = block[lane] + 64 * n + 32 * half;
            r[lane] = _mm256_shuffle_epi8(_mm256_loadu_si256(p), to_big_endian);
        }
        transpose8(r);
    }
}

AVX2 void hb_mb_blocks_avx2(uint32_t *state, const uint8_t *const *block, size_t nblocks)
{
    __m256i s[5];
    for (int k = 0; k < 5; k++)
        s[k] = _mm256_loadu_si256((const void *)(state + 8 * k));
    for (size_t n = 0; n < nblocks; n++) {
        __m256i w[16];
        load_words(w, block, n);
        MB_COMPRESS(s, w);
    }
    for (int k = 0; k < 5; k++)
        _mm256_storeu_si256((void *)(state + 8 * k), s[k]);
}

#else

void hb_mb_blocks_avx2(uint32_t *state, const uint8_t *const *block, size_t nblocks)
{
    (void)state, (void)block, (void)nblocks; /* never called: not runnable here */
}

#endif
