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
 * them from their states. Checked (hb_mb_streams_update_checked), a
 * group's first step is cut to two blocks, run as two kernel calls, and
 * every lane's two blocks are recomputed by OpenSSL from the state its
 * piece started from.
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
    hb_mb_check *check;                  /* NULL: no checks */
    uint64_t steps;                      /* kernel steps so far */
} lanes_run;

/* Blocks in a checked run: two, so that the run spans two kernel calls. */
#define CHECK_RUN_BLOCKS 2u

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

/* A test build's broken kernel (mb_batch.h's breaks): states wrong after
 * a call, or loaded wrong at its start where the piece's message is
 * under way (bytes before this piece, or a call before this one). */
static void break_state(lanes_run *r, int after, int first_call)
{
    hb_mb_break_kind brk = r->check ? r->check->brk : HB_MB_BREAK_NONE;
    for (size_t k = 0; k < r->n && brk != HB_MB_BREAK_NONE; k++) {
        int mid_message = !first_call || r->s[k]->bytes > 0;
        int hit = after ? brk == HB_MB_BREAK_ALL_LANES ||
                              (brk == HB_MB_BREAK_LANE && r->check->brk_which == k)
                        : brk == HB_MB_BREAK_CARRY && mid_message;
        if (hit)
            r->state[k] ^= 1u;
    }
}

/* n blocks of every lane; split: as two calls (a checked run). */
static void run_kernel(lanes_run *r, const uint8_t *const *block, uint64_t n, int split)
{
    uint64_t first = split && n > 1 ? 1 : n;
    break_state(r, 0, r->steps == 0);
    r->impl->blocks(r->state, block, (size_t)first);
    break_state(r, 1, 0);
    if (first == n)
        return;
    const uint8_t *later[HB_MB_LANES_MAX];
    for (unsigned k = 0; k < r->impl->lanes; k++)
        later[k] = block[k] + first * HB_MB_BLOCK;
    break_state(r, 0, 0);
    r->impl->blocks(r->state, later, (size_t)(n - first));
    break_state(r, 1, 0);
}

/* Every lane's n blocks again by OpenSSL from its piece's first state. */
static void check_runs(lanes_run *r, const uint8_t *const *from, uint64_t n)
{
    unsigned lanes = r->impl->lanes;
    for (size_t k = 0; k < r->n; k++) {
        if (r->left[k] == 0)
            continue; /* no whole block in this piece: its lane ran another's */
        uint32_t want[5], got[5];
        memcpy(want, r->s[k]->h, sizeof want); /* not yet saved over: the piece's start */
        hb_sha1_openssl_blocks(want, from[k], (size_t)n);
        for (unsigned w = 0; w < 5; w++)
            got[w] = r->state[w * lanes + k];
        r->check->runs++;
        r->check->bytes += n * HB_MB_BLOCK;
        r->check->mismatches += memcmp(want, got, sizeof want) != 0;
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
    /* checked: the first step, when every piece has its first blocks left */
    int checked = r->check != NULL && r->steps == 0;
    if (checked)
        n = n < CHECK_RUN_BLOCKS ? n : CHECK_RUN_BLOCKS;
    for (unsigned k = 0; k < r->impl->lanes; k++)
        block[k] = k < r->n && r->left[k] > 0 ? r->next[k] : spare;
    run_kernel(r, block, n, checked);
    if (checked)
        check_runs(r, block, n);
    r->steps++;
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
                         const size_t *len, size_t n, hb_mb_check *check)
{
    lanes_run r;
    r.check = check;
    r.steps = 0;
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
    /* a checked group runs its first step in lanes, whatever the costs say */
    while ((check != NULL && r.steps == 0 ? 1 : !one_by_one_pays(&r)) && step(&r))
        ;
    finish_one_by_one(&r);
    for (size_t k = 0; k < n; k++)
        s[k]->bytes += len[k];
}

void hb_mb_streams_update(hb_cpu_impl impl, hb_mb_stream *const *s, const uint8_t *const *data,
                          const size_t *len, size_t n)
{
    hb_mb_streams_update_checked(impl, s, data, len, n, NULL);
}

void hb_mb_streams_update_checked(hb_cpu_impl impl, hb_mb_stream *const *s,
                                  const uint8_t *const *data, const size_t *len, size_t n,
                                  hb_mb_check *check)
{
    hb_mb_check_reset(check);
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
        update_group(impl, s + first, data + first, len + first, group, check);
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
