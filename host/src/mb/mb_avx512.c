/*
 * mb_avx512.c - SHA-1 of 16 lanes at once in AVX-512 registers.
 *
 * Owns: hb_mb_blocks_avx512. Each zmm register holds one word of all 16
 * lanes: rotates are vprold, the round functions and the schedule's
 * three-way XOR one vpternlogd each. A block of every lane is loaded as
 * 16 rows of 64 bytes, byte-swapped to big-endian words with one
 * vpshufb each and transposed into 16 word vectors (transpose_avx512.h).
 * As in isa-l_crypto's x16 kernel, the schedule runs 16 rounds ahead and
 * the next block's rows load during the last 16 rounds (mb_rounds.h):
 * 5.3 to 5.9 GB/s a thread at 1 MiB, 4.4-4.8 to 5.4-5.5 at 4 KiB, on a
 * Zen 4; 6.26 at 1 MiB and 5.90 at 4 KiB on a Xeon, level with and ahead
 * of isa-l_crypto's 6.26 and 5.50 (bench/RESULTS.md).
 * Compiled with function attributes; called only where the CPU has
 * AVX-512F and AVX-512BW (mb_impl.c checks).
 * Must not: produce a state that differs from OpenSSL's for any block.
 */
#include "mb/mb_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "transpose_avx512.h"

#define AVX512 __attribute__((target("avx512f,avx512bw")))

#define MB_VEC __m512i
#define MB_ADD(a, b) _mm512_add_epi32((a), (b))
#define MB_ADD_K(x, k) _mm512_add_epi32((x), _mm512_set1_epi32((int)(k)))
#define MB_ROL(x, n) _mm512_rol_epi32((x), (n))
/* The schedule's four-way XOR, written as (W[t] ^ W[t+2]) first and
 * vpternlogd with the other two after. gcc 12 still emits vpternlogd
 * then vpxord, but this form lets it keep each window word in its
 * register: 83 register copies a block (isa-l_crypto's x16 kernel has
 * 85, the 80 of them copies of B before Ft). Written vpternlogd-first,
 * it renamed the window and copied one word in two: 147 copies, and
 * 6.03 against 6.26 GB/s a thread at 1 MiB on a Xeon (bench/RESULTS.md,
 * section 6, "The kernel's register copies"). */
#define MB_XOR4(a, b, c, d) _mm512_ternarylogic_epi32(_mm512_xor_si512((d), (c)), (a), (b), 0x96)
#define MB_CH(b, c, d) _mm512_ternarylogic_epi32((b), (c), (d), 0xca)
#define MB_PARITY(b, c, d) _mm512_ternarylogic_epi32((b), (c), (d), 0x96)
#define MB_MAJ(b, c, d) _mm512_ternarylogic_epi32((b), (c), (d), 0xe8)
#include "mb/mb_rounds.h"

/* Rows to words: w[lane] holds lane's 64 bytes on entry; w[j] is the
 * big-endian word j of every lane after. */
AVX512 static inline void rows_to_words(__m512i w[16])
{
    const __m512i to_big_endian = _mm512_set4_epi32(0x0c0d0e0f, 0x08090a0b, 0x04050607, 0x00010203);
#pragma GCC unroll 16
    for (int lane = 0; lane < 16; lane++)
        w[lane] = _mm512_shuffle_epi8(w[lane], to_big_endian);
    hb_transpose16_avx512(w);
}

AVX512 void hb_mb_blocks_avx512(uint32_t *state, const uint8_t *const *block, size_t nblocks)
{
    __m512i s[5], w[16];
#pragma GCC unroll 5
    for (int k = 0; k < 5; k++)
        s[k] = _mm512_loadu_si512(state + 16 * k);
#pragma GCC unroll 16
    for (int lane = 0; lane < 16; lane++)
        w[lane] = _mm512_loadu_si512(block[lane]);
    for (size_t n = 0; n < nblocks; n++) {
        /* the next block's rows load during rounds 64-79 (the last
         * block loads itself again: no byte past nblocks is read) */
        size_t next = 64 * (n + 1 < nblocks ? n + 1 : n);
#define NEXT_ROW(t) (w[(t)&15] = _mm512_loadu_si512(block[(t)&15] + next))
        rows_to_words(w);
        MB_COMPRESS_THEN(s, w, NEXT_ROW);
#undef NEXT_ROW
    }
#pragma GCC unroll 5
    for (int k = 0; k < 5; k++)
        _mm512_storeu_si512(state + 16 * k, s[k]);
}

#else

void hb_mb_blocks_avx512(uint32_t *state, const uint8_t *const *block, size_t nblocks)
{
    (void)state, (void)block, (void)nblocks; /* never called: not runnable here */
}

#endif
