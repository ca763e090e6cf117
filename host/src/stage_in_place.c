/*
 * stage_in_place.c - lane descriptors and tails for in-place launches.
 *
 * Owns: the arithmetic of which of a step's blocks are whole blocks of the
 * message (read by the kernel from the caller's bytes) and which are the
 * padded final blocks (built here, from pack.c's hb_pack_tail).
 * Must not: call OpenCL, or write anywhere but the descriptors given.
 */
#include "stage_in_place.h"

#include <string.h>

#include "pack.h"

#define PAGE_BYTES 4096u

/* The whole blocks of step s: first and how many. */
static uint64_t whole_blocks_of(const hb_lane_step *s, const hb_msg *m, uint64_t *first)
{
    uint64_t whole = m[s->msg].len / HB_BLOCK_BYTES;
    uint64_t end = s->first_block + s->nblocks;
    *first = s->first_block;
    if (s->first_block >= whole)
        return 0;
    return (end < whole ? end : whole) - s->first_block;
}

int hb_in_place_span(const hb_lane_step *steps, size_t nsteps, const hb_msg *m,
                     size_t max_bytes, hb_span *span)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (size_t l = 0; l < nsteps; l++) {
        uint64_t first, n = whole_blocks_of(&steps[l], m, &first);
        if (n == 0)
            continue;
        uintptr_t start = (uintptr_t)m[steps[l].msg].data + (uintptr_t)first * HB_BLOCK_BYTES;
        uintptr_t end = start + (uintptr_t)n * HB_BLOCK_BYTES;
        lo = start < lo ? start : lo;
        hi = end > hi ? end : hi;
    }
    if (hi == 0) {
        *span = (hb_span){NULL, 0};
        return 1;
    }
    lo -= lo % PAGE_BYTES;
    if (hi - lo > max_bytes || hi - lo > UINT32_MAX)
        return 0;
    *span = (hb_span){(const uint8_t *)lo, hi - lo};
    return 1;
}

/* The final blocks step s runs, written from tail[0]; returns how many. */
static uint32_t fill_tail(const hb_lane_step *s, const hb_msg *msg, uint64_t whole_run,
                          uint8_t *tail)
{
    uint32_t finals = s->nblocks - (uint32_t)whole_run;
    if (finals == 0)
        return 0;
    uint64_t whole = msg->len / HB_BLOCK_BYTES;
    uint64_t first_final = s->first_block + whole_run - whole; /* 0 or 1 */
    if (first_final == 0) {
        hb_pack_tail(msg, tail);
    } else {
        uint8_t both[2 * HB_BLOCK_BYTES];
        hb_pack_tail(msg, both);
        memcpy(tail, both + HB_BLOCK_BYTES, HB_BLOCK_BYTES);
    }
    return finals;
}

void hb_in_place_fill(const hb_lane_step *steps, size_t nsteps, const hb_msg *m,
                      const hb_span *span, const hb_in_place_lanes *out)
{
    size_t lanes = (nsteps + HB_LANES - 1) / HB_LANES * HB_LANES;
    for (size_t l = 0; l < nsteps; l++) {
        const hb_lane_step *s = &steps[l];
        uint64_t first, n = whole_blocks_of(s, m, &first);
        out->offset[l] = n == 0 ? 0
                                : (uint32_t)((const uint8_t *)m[s->msg].data +
                                             first * HB_BLOCK_BYTES - span->base);
        out->whole[l] = (uint32_t)n;
        out->count[l] = s->nblocks;
        fill_tail(s, &m[s->msg], n, out->tails + l * HB_TAIL_BYTES);
    }
    for (size_t l = nsteps; l < lanes; l++) {
        out->offset[l] = 0;
        out->whole[l] = 0;
        out->count[l] = 0;
    }
}

int hb_uniform_batch(const hb_msg *m, size_t n, size_t max_bytes, hb_span *span)
{
    if (n == 0)
        return 0;
    uint64_t len = m[0].len, whole_bytes = len / HB_BLOCK_BYTES * HB_BLOCK_BYTES;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        uintptr_t start = (uintptr_t)m[i].data;
        if (m[i].len != len)
            return 0;
        lo = start < lo ? start : lo;
        hi = start > hi ? start : hi;
    }
    if (whole_bytes == 0) {
        *span = (hb_span){NULL, 0};
        return 1;
    }
    hi += (uintptr_t)whole_bytes;
    lo -= lo % PAGE_BYTES;
    if (hi - lo > max_bytes || hi - lo > UINT32_MAX)
        return 0;
    *span = (hb_span){(const uint8_t *)lo, hi - lo};
    return 1;
}

void hb_uniform_fill(const hb_msg *m, size_t n, uint64_t len, const hb_span *span,
                     uint32_t *offset, uint8_t *tails)
{
    size_t lanes = (n + HB_LANES - 1) / HB_LANES * HB_LANES;
    int has_tails = len % HB_BLOCK_BYTES != 0;
    for (size_t i = 0; i < n; i++) {
        offset[i] = span->bytes == 0 ? 0 : (uint32_t)((const uint8_t *)m[i].data - span->base);
        if (has_tails)
            hb_pack_tail(&m[i], tails + i * HB_TAIL_BYTES);
    }
    for (size_t i = n; i < lanes; i++)
        offset[i] = 0;
}
