/*
 * mb_pad.h - the end of a SHA-1 message: its last partial block and the
 * padding, and the digest from a state.
 *
 * Owns: hb_mb_build_tail and hb_mb_state_to_digest, shared by the list
 * hasher (mb_batch.c) and the streams (mb_streams.c).
 * Must not: hash.
 */
#ifndef HB_MB_PAD_H
#define HB_MB_PAD_H

#include <stddef.h>
#include <stdint.h>

#define HB_MB_BLOCK 64u

/* hb_mb_build_tail: the last blocks of a message of len bytes in total:
 * rest (rest_bytes < 64 bytes: what follows its last whole block), 0x80,
 * zeros and the length in bits, big-endian. Returns the blocks written
 * to tail (1 or 2). */
unsigned hb_mb_build_tail(uint8_t tail[2 * HB_MB_BLOCK], const uint8_t *rest, unsigned rest_bytes,
                          uint64_t len);

/* hb_mb_state_to_digest: the five state words, big-endian. */
void hb_mb_state_to_digest(const uint32_t h[5], uint8_t digest[20]);

/* SHA-1's initial state (FIPS 180-4, 5.3.1). */
extern const uint32_t hb_mb_initial_state[5];

#endif /* HB_MB_PAD_H */
