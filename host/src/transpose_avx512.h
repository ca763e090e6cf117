/*
 * transpose_avx512.h - a 16 x 16 matrix of 32-bit words, transposed in
 * zmm registers.
 *
 * Owns: hb_transpose16_avx512, shared by the packer (pack_avx512.c) and
 * the AVX-512 multi-buffer kernel (mb/mb_avx512.c), which both turn one
 * 64-byte block of each of 16 lanes into 16 vectors of one word per lane.
 * Must not: be called on a CPU without AVX-512F (callers check first).
 */
#ifndef HB_TRANSPOSE_AVX512_H
#define HB_TRANSPOSE_AVX512_H

#include <immintrin.h>

/* r[i] = word row of lane i on entry; r[j] = word j of every lane after.
 * The loops are unrolled (GCC's -O2 keeps them, and then the 32 vectors
 * live on the stack instead of in registers: a quarter of the AVX-512
 * kernel's time went to those loads and stores). */
__attribute__((target("avx512f"))) static inline void hb_transpose16_avx512(__m512i r[16])
{
    __m512i a[16], b[16];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        a[2 * k] = _mm512_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
        a[2 * k + 1] = _mm512_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        b[4 * k] = _mm512_unpacklo_epi64(a[4 * k], a[4 * k + 2]);
        b[4 * k + 1] = _mm512_unpackhi_epi64(a[4 * k], a[4 * k + 2]);
        b[4 * k + 2] = _mm512_unpacklo_epi64(a[4 * k + 1], a[4 * k + 3]);
        b[4 * k + 3] = _mm512_unpackhi_epi64(a[4 * k + 1], a[4 * k + 3]);
    }
    /* b[4k + m], 128-bit lane L: word 4L + m of lanes 4k..4k+3 */
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) {
        __m512i xlo = _mm512_shuffle_i32x4(b[m], b[4 + m], _MM_SHUFFLE(2, 0, 2, 0));
        __m512i xhi = _mm512_shuffle_i32x4(b[m], b[4 + m], _MM_SHUFFLE(3, 1, 3, 1));
        __m512i ylo = _mm512_shuffle_i32x4(b[8 + m], b[12 + m], _MM_SHUFFLE(2, 0, 2, 0));
        __m512i yhi = _mm512_shuffle_i32x4(b[8 + m], b[12 + m], _MM_SHUFFLE(3, 1, 3, 1));
        r[0 + m] = _mm512_shuffle_i32x4(xlo, ylo, _MM_SHUFFLE(2, 0, 2, 0));
        r[8 + m] = _mm512_shuffle_i32x4(xlo, ylo, _MM_SHUFFLE(3, 1, 3, 1));
        r[4 + m] = _mm512_shuffle_i32x4(xhi, yhi, _MM_SHUFFLE(2, 0, 2, 0));
        r[12 + m] = _mm512_shuffle_i32x4(xhi, yhi, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

#endif /* HB_TRANSPOSE_AVX512_H */
