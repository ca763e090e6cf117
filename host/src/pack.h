/*
 * pack.h - SHA-1 padding and the group-blocked device layout.
 *
 * Owns: how message bytes become the words a kernel reads (kernels/sha1.cl
 * states the layout), and how a lane's final state becomes a digest.
 * Must not: decide which message goes to which lane (plan.c does).
 */
#ifndef HB_PACK_H
#define HB_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "hashbatch.h"

#define HB_LANES 16u /* lanes per group */
#define HB_BLOCK_BYTES 64u
#define HB_GROUP_BLOCK_WORDS 256u /* one block of all 16 lanes */
#define HB_GROUP_STATE_WORDS 80u  /* 5 state words of all 16 lanes */

/* hb_padded_blocks: 64-byte blocks of a len-byte message once padded. */
uint64_t hb_padded_blocks(uint64_t len);

/* hb_pack_lane: writes blocks [first_block, first_block + nblocks) of the
 * padded message into lane `lane` of the group whose words start at
 * group_words (big-endian words, the kernel's layout). */
void hb_pack_lane(uint32_t *group_words, unsigned lane, const hb_msg *msg, uint64_t first_block,
                  uint32_t nblocks);

/* One lane of a group to pack: blocks [first_block, first_block + nblocks)
 * of msg's padded form (nblocks 0: an unused lane, left as it is). */
typedef struct {
    const hb_msg *msg;
    uint64_t first_block;
    uint32_t nblocks;
} hb_pack_lane_desc;

/* hb_pack_group: packs the 16 lanes of one group whose words start at
 * group_words: block b of every lane at group_words + b * 256 (the caller
 * leaves room for the group's longest lane). Uses AVX-512 (16 lanes loaded,
 * byte-swapped and transposed at once) where the CPU has it, else the
 * portable per-lane path; HASHBATCH_PACK=scalar in the environment forces
 * the portable one (for tests). Both write the same words. */
void hb_pack_group(uint32_t *group_words, const hb_pack_lane_desc lanes[16]);

/* hb_pack_group_scalar / hb_pack_group_avx512: the two implementations
 * (the second only where hb_pack_avx512_usable() says so). */
void hb_pack_group_scalar(uint32_t *group_words, const hb_pack_lane_desc lanes[16]);
void hb_pack_group_avx512(uint32_t *group_words, const hb_pack_lane_desc lanes[16]);
int hb_pack_avx512_usable(void);

/* The kinds of final blocks a message ends with (its tail rule): whole
 * blocks then padding alone (len % 64 == 0); a partial block with its
 * padding in one block (1-55); one too full for the length, two blocks
 * (56-63); and the same three, 3-5, for a message shorter than a block
 * (no whole block before its tail). */
#define HB_TAIL_KINDS 6u

/* hb_tail_kind: which of HB_TAIL_KINDS a len-byte message ends with.
 * Inline: the lanes ask it of every message they start when checks are
 * on, and a call there cost about 1% of 64-byte messages. */
static inline unsigned hb_tail_kind(uint64_t len)
{
    unsigned rest = (unsigned)(len % HB_BLOCK_BYTES);
    unsigned kind = rest == 0 ? 0 : rest + 9 <= HB_BLOCK_BYTES ? 1 : 2;
    return len < HB_BLOCK_BYTES ? 3 + kind : kind;
}

/* hb_pack_tail: the final 1 or 2 blocks of msg (the bytes after its last
 * whole block, 0x80, zeros, the bit length); returns how many. */
unsigned hb_pack_tail(const hb_msg *msg, uint8_t tail[2 * HB_BLOCK_BYTES]);

/* Lane state in the state buffer: word k of lane i at k * 16 + i. */
void hb_state_store_lane(uint32_t *group_state, unsigned lane, const uint32_t state[5]);
void hb_state_load_lane(const uint32_t *group_state, unsigned lane, uint32_t state[5]);

void hb_state_initial(uint32_t state[5]);
void hb_state_to_digest(const uint32_t state[5], uint8_t digest[20]);

#endif /* HB_PACK_H */
