/*
 * stage_in_place.h - the host's share of launches that read the caller's
 * bytes in place (CPU devices sharing host memory).
 *
 * Owns, for a planned in-place launch (kernel hb_sha1_in_place): the byte
 * span its whole blocks are read from (so a buffer can be made over the
 * caller's memory without copying it), and each lane's descriptor: where
 * its whole blocks start in that span, how many there are, and its padded
 * final blocks, packed as raw bytes. For uniform launches (kernel
 * hb_sha1_uniform: many messages of one length, no plan): checking in one
 * pass that a batch qualifies and the span that covers it, and each
 * message's offset in it and packed tail. kernels/sha1.cl states both
 * layouts.
 * Must not: call OpenCL, or read message bytes other than the tails.
 */
#ifndef HB_STAGE_IN_PLACE_H
#define HB_STAGE_IN_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "hashbatch.h"
#include "plan.h"

#define HB_TAIL_BYTES 128u /* room for a lane's final blocks: at most two */

/* The bytes a launch reads in place: [base, base + bytes). base is
 * page-aligned (it may start before the first message, never after). */
typedef struct {
    const uint8_t *base;
    size_t bytes;
} hb_span;

/* hb_in_place_span: the span of the whole blocks that steps[0..nsteps)
 * read in place. Returns 1 and sets *span if it is at most max_bytes
 * (bytes 0 and base NULL when no lane has a whole block), 0 if it is
 * wider: that launch must be packed instead. */
int hb_in_place_span(const hb_lane_step *steps, size_t nsteps, const hb_msg *m,
                     size_t max_bytes, hb_span *span);

/* Where the lane descriptors go: mapped buffers of at least
 * round_up(nsteps, 16) lanes each (tails: HB_TAIL_BYTES per lane). */
typedef struct {
    uint32_t *offset; /* byte offset of the lane's first whole block in the span */
    uint32_t *whole;  /* whole blocks read in place */
    uint32_t *count;  /* all blocks the lane runs (whole + final) */
    uint8_t *tails;   /* the final blocks it runs, raw bytes, from 0 */
} hb_in_place_lanes;

/* hb_in_place_fill: writes every lane's descriptor (lanes past nsteps up
 * to the next multiple of 16 run nothing). */
void hb_in_place_fill(const hb_lane_step *steps, size_t nsteps, const hb_msg *m,
                      const hb_span *span, const hb_in_place_lanes *out);

/* ---- uniform launches: messages of one length, no plan --------------- */

/* hb_uniform_batch: 1 if every message of m[0..n) has m[0].len bytes and
 * their whole blocks lie within max_bytes of one page-aligned base; then
 * *span covers them all (and so every launch cut from them). One pass. */
int hb_uniform_batch(const hb_msg *m, size_t n, size_t max_bytes, hb_span *span);

/* hb_uniform_fill: offset[i] of each message's first byte in the span
 * (0 for the lanes up to the next multiple of 16), and, when len is not a
 * multiple of 64, each message's final blocks in tails + i * HB_TAIL_BYTES
 * (tails may be NULL otherwise). */
void hb_uniform_fill(const hb_msg *m, size_t n, uint64_t len, const hb_span *span,
                     uint32_t *offset, uint8_t *tails);

#endif /* HB_STAGE_IN_PLACE_H */
