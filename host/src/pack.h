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

#define HB_LANES 16u             /* lanes per group */
#define HB_BLOCK_BYTES 64u
#define HB_GROUP_BLOCK_WORDS 256u /* one block of all 16 lanes */
#define HB_GROUP_STATE_WORDS 80u  /* 5 state words of all 16 lanes */

/* hb_padded_blocks: 64-byte blocks of a len-byte message once padded. */
uint64_t hb_padded_blocks(uint64_t len);

/* hb_pack_lane: writes blocks [first_block, first_block + nblocks) of the
 * padded message into lane `lane` of the group whose words start at
 * group_words (big-endian words, the kernel's layout). */
void hb_pack_lane(uint32_t *group_words, unsigned lane, const hb_msg *msg,
                  uint64_t first_block, uint32_t nblocks);

/* Lane state in the state buffer: word k of lane i at k * 16 + i. */
void hb_state_store_lane(uint32_t *group_state, unsigned lane, const uint32_t state[5]);
void hb_state_load_lane(const uint32_t *group_state, unsigned lane, uint32_t state[5]);

void hb_state_initial(uint32_t state[5]);
void hb_state_to_digest(const uint32_t state[5], uint8_t digest[20]);

#endif /* HB_PACK_H */
