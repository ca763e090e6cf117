/*
 * mb_batch.c - a list of messages through multi-buffer lanes (see
 * mb_batch.h).
 *
 * Owns: the lanes' bookkeeping. A lane holds one message: its whole
 * 64-byte blocks are read where they are; its last partial block and the
 * padding (one or two blocks) are built in the lane's tail buffer. Each
 * step runs the kernel over as many blocks as every busy lane has left in
 * its current run (in place, or in its tail), so lanes of any lengths mix;
 * a lane whose message ends writes its digest and takes the next message
 * before the next step. A free lane reads a busy lane's blocks; its
 * result is dropped.
 * When no message waits for a lane, the lanes still busy are finished one
 * by one by OpenSSL from their states if that is cheaper by the measured
 * costs (mb_costs.h): sum of their blocks at OpenSSL's cost per block,
 * against the longest lane's blocks at the cost of a step. The same rule
 * sends a list too small to fill lanes, or a message alone, to OpenSSL:
 * when it does so from the start, by OpenSSL's one-shot call, no lane
 * set up (a message alone is as fast as it was before lanes).
 * With a check (hb_mb_hash_checked), the structure of the list's work is
 * recomputed by OpenSSL as it goes: the first step that finds a lane
 * position in place and unchecked is cut to CHECK_RUN_BLOCKS, run as two
 * kernel calls (so a state carried between calls is checked too), and
 * every such lane's run is hashed again from the state before it; a
 * message that opens a tail kind (or runs on an unchecked lane without a
 * block in place) keeps its state at the start of its tail, and its
 * digest is recomputed from there by OpenSSL's own padding.
 * Must not: allocate, or read a byte outside a message.
 */
#include "mb/mb_batch.h"

#include "mb/mb_costs.h"
#include "mb/mb_pad.h"
#include "pack.h"
#include "sha1_openssl.h"

#include <string.h>

#define BLOCK HB_MB_BLOCK
#define NO_MESSAGE SIZE_MAX

typedef struct {
    size_t msg;               /* index in m[] and out[]; NO_MESSAGE when free */
    const uint8_t *next;      /* next whole block in place */
    uint64_t in_place;        /* whole blocks left in place */
    const uint8_t *tail_next; /* next block of the tail buffer */
    unsigned tail_left;       /* tail blocks left, run after those in place */
    unsigned tail_bytes;      /* message bytes in the tail (len % 64) */
    uint8_t tail[2 * BLOCK];  /* last partial block and padding */
    uint64_t done;            /* blocks run so far */
    int check_tail;           /* its digest is recomputed from tail_h */
    uint32_t tail_h[5];       /* with check_tail: the state its tail starts from */
} mb_lane;

/* Blocks in a checked run: two, so that the run spans two kernel calls. */
#define CHECK_RUN_BLOCKS 2u

typedef struct {
    const hb_cpu_impl_desc *impl;
    hb_mb_costs costs;
    hb_mb_tail_rule rule;
    const hb_msg *m;
    const size_t *which;
    size_t count, taken;
    hb_digest *out;
    hb_cpu_watch *w;
    unsigned busy;
    size_t from_lanes;                   /* digests the kernel finished */
    uint32_t state[5 * HB_MB_LANES_MAX]; /* state[k * lanes + lane] */
    hb_mb_check *check;                  /* NULL: no checks */
    uint32_t lanes_unchecked;            /* lane positions no check covered yet */
    unsigned kinds_unchecked;            /* tail kinds no check covered yet */
    mb_lane lane[HB_MB_LANES_MAX];
} mb_run;

static int bit_set(uint32_t bits, unsigned i)
{
    return (int)((bits >> i) & 1u);
}

/* A message whose tail is checked, and a test build's broken tail rule. */
static void plan_tail_check(mb_run *r, unsigned i, uint64_t len)
{
    mb_lane *l = &r->lane[i];
    l->check_tail = 0;
    if (r->check == NULL ||
        (r->kinds_unchecked == 0 && r->lanes_unchecked == 0 && r->check->brk == HB_MB_BREAK_NONE))
        return;
    unsigned kind = hb_tail_kind(len);
    if (bit_set(r->kinds_unchecked, kind) || (bit_set(r->lanes_unchecked, i) && l->in_place == 0)) {
        l->check_tail = 1;
        r->kinds_unchecked &= ~(1u << kind);
        memcpy(l->tail_h, hb_mb_initial_state, sizeof l->tail_h); /* kept if no block in place */
    }
    if (r->check->brk == HB_MB_BREAK_TAIL && r->check->brk_which == kind)
        l->tail[l->tail_left * BLOCK - 1] ^= 1u; /* the length, one bit off */
}

static void note_check(mb_run *r, uint64_t bytes, int differs)
{
    r->check->bytes += bytes;
    r->check->mismatches += differs != 0;
}

static uint64_t lane_blocks_left(const mb_lane *l)
{
    return l->in_place + l->tail_left;
}

static void lane_start(mb_run *r, unsigned i, size_t msg)
{
    mb_lane *l = &r->lane[i];
    const hb_msg *m = &r->m[msg];
    const uint8_t *data = m->data;
    l->msg = msg;
    l->next = data;
    l->in_place = m->len / BLOCK;
    l->tail_bytes = (unsigned)(m->len % BLOCK);
    l->tail_left = hb_mb_build_tail(l->tail, l->tail_bytes ? data + l->in_place * BLOCK : NULL,
                                    l->tail_bytes, m->len);
    l->tail_next = l->tail;
    l->done = 0;
    plan_tail_check(r, i, m->len);
    unsigned lanes = r->impl->lanes;
    for (unsigned k = 0; k < 5; k++)
        r->state[k * lanes + i] = hb_mb_initial_state[k];
    r->busy++;
}

static void lane_state(const mb_run *r, unsigned i, uint32_t h[5])
{
    for (unsigned k = 0; k < 5; k++)
        h[k] = r->state[k * r->impl->lanes + i];
}

static void lane_finish(mb_run *r, unsigned i, const uint32_t h[5])
{
    hb_mb_state_to_digest(h, r->out[r->lane[i].msg]);
    r->lane[i].msg = NO_MESSAGE;
    r->busy--;
}

/* The first blocks of the messages that take the next free lanes are
 * asked for now, a whole message ahead: within a message the hardware
 * prefetchers keep up (a software prefetch a few blocks ahead measured no
 * gain), but a message's first blocks lie on a page none has seen yet
 * (without this, 65,536 x 4 KiB from DRAM ran at 6.3 GB/s on one core
 * against 7.4 for 1 MiB messages; with it, 6.7). */
static void prefetch_next_messages(const mb_run *r)
{
    enum { AHEAD_BYTES = 512 };
    size_t end = r->taken + r->impl->lanes < r->count ? r->taken + r->impl->lanes : r->count;
    for (size_t k = r->taken; k < end; k++) {
        const hb_msg *m = &r->m[r->which ? r->which[k] : k];
        const char *p = m->data;
        for (uint64_t at = 0; at < m->len && at < AHEAD_BYTES; at += BLOCK)
            __builtin_prefetch(p + at, 0, 2);
    }
}

static void fill_free_lanes(mb_run *r)
{
    int started = 0;
    for (unsigned i = 0; i < r->impl->lanes && r->taken < r->count; i++) {
        if (r->lane[i].msg != NO_MESSAGE)
            continue;
        size_t k = r->taken++;
        lane_start(r, i, r->which ? r->which[k] : k);
        started = 1;
    }
    if (started)
        prefetch_next_messages(r);
}

/* Whether the busy lanes are finished sooner one by one (no message waits). */
static int one_by_one_pays(const mb_run *r)
{
    if (r->rule != HB_MB_TAIL_MEASURED)
        return r->rule == HB_MB_TAIL_ONE_BY_ONE;
    double sum = 0, longest = 0;
    for (unsigned i = 0; i < r->impl->lanes; i++) {
        if (r->lane[i].msg == NO_MESSAGE)
            continue;
        double left = (double)lane_blocks_left(&r->lane[i]);
        sum += left;
        longest = left > longest ? left : longest;
    }
    return sum * r->costs.one_ns <= longest * r->costs.lanes_ns;
}

/* Runs blocks of one lane's state by OpenSSL, a piece at a time. */
static int blocks_by_openssl(mb_run *r, uint32_t h[5], const uint8_t *p, uint64_t blocks,
                             int counted)
{
    const uint64_t piece = HB_CPU_PIECE_BYTES / BLOCK;
    while (blocks > 0) {
        if (hb_cpu_watch_stopped(r->w))
            return 0;
        uint64_t n = blocks < piece ? blocks : piece;
        hb_sha1_openssl_blocks(h, p, (size_t)n);
        if (counted)
            hb_cpu_watch_note(r->w, n * BLOCK);
        p += n * BLOCK;
        blocks -= n;
    }
    return 1;
}

static int finish_busy_one_by_one(mb_run *r)
{
    for (unsigned i = 0; i < r->impl->lanes; i++) {
        mb_lane *l = &r->lane[i];
        if (l->msg == NO_MESSAGE)
            continue;
        uint32_t h[5];
        lane_state(r, i, h);
        if (!blocks_by_openssl(r, h, l->next, l->in_place, 1) ||
            !blocks_by_openssl(r, h, l->tail_next, l->tail_left, 0))
            return 0;
        hb_cpu_watch_note(r->w, l->tail_bytes);
        lane_finish(r, i, h);
    }
    return 1;
}

/* Blocks every busy lane has left in its current run, at most a piece. */
static uint64_t step_blocks(const mb_run *r)
{
    uint64_t piece = HB_CPU_PIECE_BYTES / BLOCK / r->impl->lanes;
    uint64_t n = piece > 0 ? piece : 1;
    for (unsigned i = 0; i < r->impl->lanes; i++) {
        const mb_lane *l = &r->lane[i];
        if (l->msg == NO_MESSAGE)
            continue;
        uint64_t run = l->in_place > 0 ? l->in_place : l->tail_left;
        n = run < n ? run : n;
    }
    return n;
}

static const uint8_t *lane_block(const mb_lane *l)
{
    return l->in_place > 0 ? l->next : l->tail_next;
}

/* A checked tail: the lane's digest against OpenSSL's from tail_h on. */
static void check_tail(mb_run *r, unsigned i, size_t msg)
{
    const hb_msg *m = &r->m[msg];
    uint64_t whole = m->len / BLOCK * BLOCK;
    hb_digest want;
    hb_sha1_openssl_finish(r->lane[i].tail_h, whole, (const uint8_t *)m->data + whole,
                           (size_t)(m->len - whole), want);
    r->check->tails++;
    note_check(r, m->len - whole, memcmp(want, r->out[msg], sizeof want));
    r->lanes_unchecked &= ~(1u << i);
}

/* Moves lane i on by n blocks; returns the message bytes they covered. */
static uint64_t lane_advance(mb_run *r, unsigned i, uint64_t n)
{
    mb_lane *l = &r->lane[i];
    l->done += n;
    if (l->in_place > 0) {
        l->next += n * BLOCK;
        l->in_place -= n;
        if (l->in_place == 0 && l->check_tail)
            lane_state(r, i, l->tail_h);
        return n * BLOCK;
    }
    l->tail_next += n * BLOCK;
    l->tail_left -= (unsigned)n;
    if (l->tail_left > 0)
        return 0;
    uint32_t h[5];
    size_t msg = l->msg;
    lane_state(r, i, h);
    lane_finish(r, i, h);
    r->from_lanes++;
    if (l->check_tail)
        check_tail(r, i, msg);
    return l->tail_bytes;
}

/* Busy lane positions in place that no check covered yet: this step's runs to check. */
static uint32_t runs_due(const mb_run *r)
{
    uint32_t due = 0;
    if (r->check == NULL || r->lanes_unchecked == 0)
        return 0; /* the common case, once the first steps are done */
    for (unsigned i = 0; i < r->impl->lanes; i++)
        if (r->lane[i].msg != NO_MESSAGE && r->lane[i].in_place > 0 &&
            bit_set(r->lanes_unchecked, i))
            due |= 1u << i;
    return due;
}

/* Each due lane's n blocks again by OpenSSL, from its state in before[],
 * read from its message at the place its count of blocks left gives. */
static void check_runs(mb_run *r, const uint32_t *before, uint64_t n, uint32_t due)
{
    unsigned lanes = r->impl->lanes;
    for (unsigned i = 0; i < lanes; i++) {
        if (!bit_set(due, i))
            continue;
        const mb_lane *l = &r->lane[i];
        const hb_msg *m = &r->m[l->msg];
        uint32_t want[5], got[5];
        for (unsigned k = 0; k < 5; k++)
            want[k] = before[k * lanes + i];
        hb_sha1_openssl_blocks(
            want, (const uint8_t *)m->data + (m->len / BLOCK - l->in_place) * BLOCK, (size_t)n);
        lane_state(r, i, got);
        r->check->runs++;
        note_check(r, n * BLOCK, memcmp(want, got, sizeof want));
        r->lanes_unchecked &= ~(1u << i);
    }
}

/* A test build's broken kernel: states wrong after a call (lanes), or
 * loaded wrong at its start (carry: lanes `offset` blocks into the step
 * that are past their message's first block). */
static void break_state(mb_run *r, int after, uint64_t offset)
{
    hb_mb_break_kind brk = r->check ? r->check->brk : HB_MB_BREAK_NONE;
    unsigned lanes = r->impl->lanes;
    for (unsigned i = 0; i < lanes && brk != HB_MB_BREAK_NONE; i++) {
        int busy = r->lane[i].msg != NO_MESSAGE;
        int hit = after ? brk == HB_MB_BREAK_ALL_LANES ||
                              (brk == HB_MB_BREAK_LANE && r->check->brk_which == i)
                        : brk == HB_MB_BREAK_CARRY && busy && r->lane[i].done + offset > 0;
        if (hit)
            r->state[i] ^= 1u;
    }
}

static void kernel_call(mb_run *r, const uint8_t *const *block, uint64_t n, uint64_t offset)
{
    break_state(r, 0, offset);
    r->impl->blocks(r->state, block, (size_t)n);
    break_state(r, 1, offset);
}

/* n blocks of every lane; split: as two calls (a checked run). */
static void run_kernel(mb_run *r, const uint8_t *const *block, uint64_t n, int split)
{
    uint64_t first = split && n > 1 ? 1 : n;
    kernel_call(r, block, first, 0);
    if (first == n)
        return;
    const uint8_t *later[HB_MB_LANES_MAX];
    for (unsigned i = 0; i < r->impl->lanes; i++)
        later[i] = block[i] + first * BLOCK;
    kernel_call(r, later, n - first, first);
}

/* One kernel call over every lane; free lanes read a busy lane's blocks. */
static void step(mb_run *r)
{
    const uint8_t *block[HB_MB_LANES_MAX];
    const uint8_t *spare = NULL;
    uint64_t n = step_blocks(r);
    uint32_t due = runs_due(r), before[5 * HB_MB_LANES_MAX];
    if (due != 0) {
        n = n < CHECK_RUN_BLOCKS ? n : CHECK_RUN_BLOCKS;
        memcpy(before, r->state, sizeof before);
    }
    for (unsigned i = 0; i < r->impl->lanes; i++)
        if (r->lane[i].msg != NO_MESSAGE)
            spare = block[i] = lane_block(&r->lane[i]);
    for (unsigned i = 0; i < r->impl->lanes; i++)
        if (r->lane[i].msg == NO_MESSAGE)
            block[i] = spare;
    run_kernel(r, block, n, due != 0);
    if (due != 0)
        check_runs(r, before, n, due);
    uint64_t bytes = 0;
    for (unsigned i = 0; i < r->impl->lanes; i++)
        if (r->lane[i].msg != NO_MESSAGE)
            bytes += lane_advance(r, i, n);
    hb_cpu_watch_note(r->w, bytes);
}

static int run_lanes(mb_run *r)
{
    for (;;) {
        if (hb_cpu_watch_stopped(r->w))
            return 0;
        fill_free_lanes(r);
        if (r->busy == 0)
            return 1;
        if (r->taken == r->count && one_by_one_pays(r))
            return finish_busy_one_by_one(r);
        step(r);
    }
}

/* A list of at most `lanes` messages of at most a piece each that the
 * tail rule sends to OpenSSL as a whole (a message alone, above all): it
 * goes there straight, one-shot calls, no lanes set up. 0 if not such. */
static int small_list_by_openssl(const hb_cpu_impl_desc *d, hb_mb_costs costs, const hb_msg *m,
                                 const size_t *which, size_t count, hb_digest *out, hb_cpu_watch *w)
{
    if (count > d->lanes)
        return 0;
    double sum = 0, longest = 0;
    for (size_t k = 0; k < count; k++) {
        uint64_t len = m[which ? which[k] : k].len;
        if (len > HB_CPU_PIECE_BYTES)
            return 0; /* long: the lanes' path hashes it in pieces */
        double blocks = (double)(len / BLOCK + (len % BLOCK + 9 <= BLOCK ? 1 : 2));
        sum += blocks;
        longest = blocks > longest ? blocks : longest;
    }
    if (sum * costs.one_ns > longest * costs.lanes_ns)
        return 0;
    for (size_t k = 0; k < count; k++) {
        size_t i = which ? which[k] : k;
        hb_sha1_openssl(m[i].data, m[i].len, out[i]);
        hb_cpu_watch_note(w, m[i].len);
    }
    return 1;
}

int hb_mb_hash(hb_cpu_impl impl, hb_mb_tail_rule rule, const hb_msg *m, const size_t *which,
               size_t count, hb_digest *out, hb_cpu_watch *w, size_t *from_lanes)
{
    return hb_mb_hash_checked(impl, rule, m, which, count, out, w, from_lanes, NULL);
}

int hb_mb_hash_checked(hb_cpu_impl impl, hb_mb_tail_rule rule, const hb_msg *m, const size_t *which,
                       size_t count, hb_digest *out, hb_cpu_watch *w, size_t *from_lanes,
                       hb_mb_check *check)
{
    hb_mb_check_reset(check);
    if (rule == HB_MB_TAIL_MEASURED && !hb_cpu_watch_stopped(w) &&
        small_list_by_openssl(hb_cpu_impl_describe(impl), hb_mb_costs_of(impl), m, which, count,
                              out, w)) {
        if (from_lanes != NULL)
            *from_lanes = 0;
        return 1;
    }
    mb_run r; /* not zeroed as a whole: a message alone must stay cheap */
    r.impl = hb_cpu_impl_describe(impl);
    r.costs = rule == HB_MB_TAIL_MEASURED ? hb_mb_costs_of(impl) : (hb_mb_costs){0, 0, 0};
    r.rule = rule;
    r.m = m, r.which = which, r.count = count, r.taken = 0;
    r.out = out, r.w = w;
    r.busy = 0, r.from_lanes = 0;
    r.check = check;
    r.lanes_unchecked = (uint32_t)((1ull << r.impl->lanes) - 1);
    r.kinds_unchecked = (1u << HB_MB_TAIL_KINDS) - 1;
    for (unsigned i = 0; i < r.impl->lanes; i++)
        r.lane[i].msg = NO_MESSAGE;
    int going = run_lanes(&r);
    if (from_lanes != NULL)
        *from_lanes = r.from_lanes;
    return going;
}
