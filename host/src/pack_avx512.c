/*
 * pack_avx512.c - packing a group of 16 lanes with AVX-512.
 *
 * Owns: the fast packer. For each block of a group it loads the 64 bytes
 * of each of the 16 lanes (one zmm register each), swaps every word to
 * big-endian with one byte shuffle, transposes the 16x16 words in four
 * shuffle stages, and stores 1 KiB of contiguous words: what the portable
 * path does with 256 scattered stores. Compiled for AVX-512 with function
 * attributes and only called when the CPU has AVX-512F and AVX-512BW.
 * Must not: produce a word that differs from hb_pack_group_scalar's (the
 * tests run both).
 */
#include "pack.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "transpose_avx512.h"

#define AVX512 __attribute__((target("avx512f,avx512bw")))

int hb_pack_avx512_usable(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

/* Where each lane's blocks come from: its bytes, then its padded tail. */
typedef struct {
    const uint8_t *bytes;
    uint64_t whole_blocks;
    uint64_t first_block;
    uint32_t nblocks;
    uint8_t tail[2 * HB_BLOCK_BYTES];
} lane_source;

static void prepare_sources(const hb_pack_lane_desc lanes[16], lane_source src[16])
{
    for (unsigned i = 0; i < HB_LANES; i++) {
        const hb_pack_lane_desc *d = &lanes[i];
        src[i].nblocks = d->nblocks;
        if (d->nblocks == 0)
            continue;
        src[i].bytes = d->msg->data;
        src[i].whole_blocks = d->msg->len / HB_BLOCK_BYTES;
        src[i].first_block = d->first_block;
        if (d->first_block + d->nblocks > src[i].whole_blocks)
            hb_pack_tail(d->msg, src[i].tail);
    }
}

static const uint8_t *block_of(const lane_source *s, uint32_t b)
{
    uint64_t q = s->first_block + b;
    return q < s->whole_blocks ? s->bytes + q * HB_BLOCK_BYTES
                               : s->tail + (q - s->whole_blocks) * HB_BLOCK_BYTES;
}

AVX512 void hb_pack_group_avx512(uint32_t *group_words, const hb_pack_lane_desc lanes[16])
{
    lane_source src[16];
    prepare_sources(lanes, src);
    uint32_t most = 0;
    for (unsigned i = 0; i < HB_LANES; i++)
        most = src[i].nblocks > most ? src[i].nblocks : most;
    const __m512i swap = _mm512_set4_epi32(0x0c0d0e0f, 0x08090a0b, 0x04050607, 0x00010203);
    for (uint32_t b = 0; b < most; b++) {
        __m512i r[16];
        for (unsigned i = 0; i < HB_LANES; i++)
            r[i] = b < src[i].nblocks
                       ? _mm512_shuffle_epi8(_mm512_loadu_si512(block_of(&src[i], b)), swap)
                       : _mm512_setzero_si512();
        hb_transpose16_avx512(r);
        uint32_t *dst = group_words + (size_t)b * HB_GROUP_BLOCK_WORDS;
        for (unsigned j = 0; j < 16; j++)
            _mm512_storeu_si512(dst + j * HB_LANES, r[j]);
    }
}

#else /* no AVX-512 code on this compiler or architecture */

int hb_pack_avx512_usable(void)
{
    return 0;
}

void hb_pack_group_avx512(uint32_t *group_words, const hb_pack_lane_desc lanes[16])
{
    hb_pack_group_scalar(group_words, lanes);
}

#endif
