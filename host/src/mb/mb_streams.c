/*
 * mb_streams.c - pieces of several messages through lanes at once (see
 * mb_streams.h).
 *
 * Owns: one update over up to `lanes` pieces: each step runs the kernel
 * over as many blocks as every unfinished piece still has; a lane whose
 * piece is done has its state saved at once, then reads another lane's
 * blocks, its result dropped.
 * When the pieces left are cheaper one by one (their blocks at OpenSSL's
 * cost against the longest one at the cost of a step), OpenSSL finishes
 * them from their states.
 * Must not: allocate, or read past a piece.
 */
#include "mb/mb_streams.h"

#include <string.h>

#include "mb/mb_costs.h"
#include "mb/mb_pad.h"
#include "sha1_openssl.h"

typedef struct {
    const hb_cpu_impl_desc *impl;
    hb_mb_costs costs;
    size_t n;
    hb_mb_stream *const *s; /* where each piece's state goes once it is done */
    const uint8_t *next[HB_MB_LANES_MAX];
    uint64_t left[HB_MB_LANES_MAX];      /* blocks left of each piece */
    uint32_t state[5 * HB_MB_LANES_MAX]; /* state[k * lanes + lane] */
} lanes_run;

void hb_mb_stream_init(hb_mb_stream *s)
{
    memcpy(s->h, hb_mb_initial_state, sizeof s->h);
    s->bytes = 0;
}

static int one_by_one_pays(const lanes_run *r)
{
    double sum = 0, longest = 0;
    for (size_t k = 0; k < r->n; k++) {
        sum += (double)r->left[k];
        longest = (double)r->left[k] > longest ? (double)r->left[k] : longest;
    }
    return sum * r->costs.one_ns <= longest * r->costs.lanes_ns;
}

/* Piece k is done: its lane's state is saved now, before later steps
 * (which run every lane) overwrite it. */
static void save_state(lanes_run *r, size_t k)
{
    for (unsigned w = 0; w < 5; w++)
        r->s[k]->h[w] = r->state[w * r->impl->lanes + k];
}

static void finish_one_by_one(lanes_run *r)
{
    for (size_t k = 0; k < r->n; k++) {
        if (r->left[k] == 0)
            continue;
        save_state(r, k);
        hb_sha1_openssl_blocks(r->s[k]->h, r->next[k], (size_t)r->left[k]);
        r->left[k] = 0;
    }
}

/* One kernel call over every lane; returns 0 when no piece has blocks left. */
static int step(lanes_run *r)
{
    const uint8_t *block[HB_MB_LANES_MAX];
    const uint8_t *spare = NULL;
    uint64_t n = UINT64_MAX;
    for (size_t k = 0; k < r->n; k++) {
        if (r->left[k] == 0)
            continue;
        spare = r->next[k];
        n = r->left[k] < n ? r->left[k] : n;
    }
    if (spare == NULL)
        return 0;
    for (unsigned k = 0; k < r->impl->lanes; k++)
        block[k] = k < r->n && r->left[k] > 0 ? r->next[k] : spare;
    r->impl->blocks(r->state, block, (size_t)n);
    for (size_t k = 0; k < r->n; k++) {
        if (r->left[k] == 0)
            continue;
        r->next[k] += n * HB_MB_BLOCK;
        r->left[k] -= n;
        if (r->left[k] == 0)
            save_state(r, k);
    }
    return 1;
}

/* Up to `lanes` pieces, side by side. */
static void update_group(hb_cpu_impl impl, hb_mb_stream *const *s, const uint8_t *const *data,
                         const size_t *len, size_t n)
{
    lanes_run r;
    r.impl = hb_cpu_impl_describe(impl);
    r.costs = hb_mb_costs_of(impl);
    r.n = n;
    r.s = s;
    unsigned lanes = r.impl->lanes;
    for (size_t k = 0; k < n; k++) {
        r.next[k] = data[k];
        r.left[k] = len[k] / HB_MB_BLOCK;
        for (unsigned w = 0; w < 5; w++)
            r.state[w * lanes + k] = s[k]->h[w];
    }
    while (!one_by_one_pays(&r) && step(&r))
        ;
    finish_one_by_one(&r);
    for (size_t k = 0; k < n; k++)
        s[k]->bytes += len[k];
}

void hb_mb_streams_update(hb_cpu_impl impl, hb_mb_stream *const *s, const uint8_t *const *data,
                          const size_t *len, size_t n)
{
    unsigned lanes = hb_cpu_impl_describe(impl)->lanes;
    if (lanes == 0) {
        for (size_t k = 0; k < n; k++) {
            hb_sha1_openssl_blocks(s[k]->h, data[k], len[k] / HB_MB_BLOCK);
            s[k]->bytes += len[k];
        }
        return;
    }
    for (size_t first = 0; first < n; first += lanes) {
        size_t group = n - first < lanes ? n - first : lanes;
        update_group(impl, s + first, data + first, len + first, group);
    }
}

void hb_mb_stream_final(hb_mb_stream *s, const void *rest, size_t len, uint8_t digest[20])
{
    const uint8_t *bytes = rest;
    size_t whole = len / HB_MB_BLOCK;
    if (whole > 0)
        hb_sha1_openssl_blocks(s->h, bytes, whole);
    unsigned rest_bytes = (unsigned)(len % HB_MB_BLOCK);
    uint8_t tail[2 * HB_MB_BLOCK];
    unsigned blocks = hb_mb_build_tail(tail, rest_bytes ? bytes + whole * HB_MB_BLOCK : NULL,
                                       rest_bytes, s->bytes + len);
    hb_sha1_openssl_blocks(s->h, tail, blocks);
    hb_mb_state_to_digest(s->h, digest);
}
