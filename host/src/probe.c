/*
 * probe.c - verification by structure of device launches (probe.h).
 *
 * Owns: which lanes of a launch are checked, the probe words that ask the
 * kernel for their states, and recomputing those checks with OpenSSL.
 * Must not: use the host's padding (pack.c) in a check: a tail is checked
 * by OpenSSL's own padding, so a wrong tail rule cannot check itself.
 */
#include "probe.h"

#include <string.h>

#include "pack.h"
#include "prng.h"
#include "sha1_openssl.h"

/* Kinds of ending a lane's step can have: the tail kinds, then a step
 * that carries its state on to a later launch. */
#define ENDING_CARRY HB_TAIL_KINDS
#define ENDING_KINDS (HB_TAIL_KINDS + 1u)
#define ALL_ENDINGS ((1u << ENDING_KINDS) - 1u)
#define RUN_BLOCKS 2u

static uint32_t *at_word(hb_probe *p, unsigned slot, unsigned k, unsigned lane)
{
    return &p->words[16u + (slot * 2u + k) * 16u + lane];
}

/* The state the kernel wrote for check k of lane pl. */
static void returned_state(const hb_probe *p, const hb_probe_lane *pl, unsigned k, uint32_t h[5])
{
    const uint32_t *out = &p->words[HB_PROBE_IN_WORDS + (pl->slot * 2u + k) * 80u];
    for (unsigned w = 0; w < 5; w++)
        h[w] = out[w * 16u + pl->lane];
}

void hb_probe_clear(hb_probe *p)
{
    memset(p->words, 0, sizeof p->words);
    for (unsigned s = 0; s < 16; s++)
        p->words[s] = HB_PROBE_NONE;
    p->nlanes = 0;
}

/* The slot watching `group`, taken if none does yet; -1 when all are
 * taken by other groups. */
static int slot_for(hb_probe *p, size_t group)
{
    for (unsigned s = 0; s < HB_PROBE_SLOTS; s++) {
        if (p->words[s] == group)
            return (int)s;
        if (p->words[s] == HB_PROBE_NONE) {
            p->words[s] = (uint32_t)group;
            return (int)s;
        }
    }
    return -1;
}

static int step_is_final(const hb_lane_step *s, const hb_msg *m)
{
    return s->first_block + s->nblocks == hb_padded_blocks(m[s->msg].len);
}

/* The kind of ending step s has; ENDING_KINDS for a step that begins
 * inside its message's padding (after a step that ran its first padding
 * block): nothing of it can be checked without padding of our own. */
static unsigned ending_kind(const hb_lane_step *s, const hb_msg *m)
{
    uint64_t whole = m[s->msg].len / HB_BLOCK_BYTES;
    if (!step_is_final(s, m))
        return ENDING_CARRY;
    return s->first_block <= whole ? hb_tail_kind(m[s->msg].len) : ENDING_KINDS;
}

/* Lane l of its group (slot) is checked: its run over its first whole
 * blocks, and its end (to the digest, or to the state it hands on). */
static void watch_lane(hb_probe *p, const hb_lane_step *s, size_t l, unsigned slot, const hb_msg *m,
                       const uint32_t start[5])
{
    if (p->nlanes == HB_PROBE_LANES_MAX)
        return;
    uint64_t whole = m[s->msg].len / HB_BLOCK_BYTES;
    uint64_t raw = s->first_block < whole ? whole - s->first_block : 0;
    raw = raw < s->nblocks ? raw : s->nblocks; /* whole blocks this step runs */
    hb_probe_lane *pl = &p->lanes[p->nlanes];
    *pl = (hb_probe_lane){
        s->msg, s->first_block, s->nblocks, slot, (unsigned)(l % HB_LANES), {0, 0}, 0, 0, {0}};
    memcpy(pl->start, start, sizeof pl->start);
    pl->at[0] = (uint32_t)(raw < RUN_BLOCKS ? raw : RUN_BLOCKS);
    pl->run = pl->at[0] > 0;
    if (step_is_final(s, m)) {
        pl->end = s->first_block <= whole;
        pl->at[1] = pl->end ? (uint32_t)(whole - s->first_block) : 0;
    } else {
        pl->end = raw == s->nblocks; /* no padding block inside: all checkable */
        pl->at[1] = pl->end ? s->nblocks - (s->nblocks < RUN_BLOCKS ? s->nblocks : RUN_BLOCKS) : 0;
    }
    if (!pl->run && !pl->end)
        return;
    for (unsigned k = 0; k < 2; k++)
        *at_word(p, slot, k, pl->lane) = pl->at[k];
    p->nlanes++;
}

static void start_state(const hb_lane_step *s, const hb_digest *states, uint32_t h[5])
{
    if (s->first_block == 0 || states == NULL)
        hb_state_initial(h);
    else
        memcpy(h, states[s->msg], 5 * sizeof(uint32_t));
}

/* Every used lane of group g, in slot 0: each lane position is checked. */
static unsigned watch_group(hb_probe *p, const hb_lane_step *steps, size_t nsteps, size_t g,
                            const hb_msg *m, const hb_digest *states)
{
    int slot = slot_for(p, g);
    unsigned seen = 0;
    for (size_t l = g * HB_LANES; l < nsteps && l < (g + 1) * HB_LANES; l++) {
        uint32_t h[5];
        start_state(&steps[l], states, h);
        watch_lane(p, &steps[l], l, (unsigned)slot, m, h);
        seen |= 1u << ending_kind(&steps[l], m);
    }
    return seen & ALL_ENDINGS;
}

void hb_probe_plan_launch(hb_probe *p, const hb_lane_step *steps, size_t nsteps, const hb_msg *m,
                          const hb_digest *states, uint64_t *rng)
{
    hb_probe_clear(p);
    if (nsteps == 0)
        return;
    size_t ngroups = (nsteps + HB_LANES - 1) / HB_LANES;
    unsigned seen = watch_group(p, steps, nsteps, (size_t)hb_prng_below(rng, ngroups), m, states);
    /* then one lane of each other kind of ending, from a random place on */
    size_t from = (size_t)hb_prng_below(rng, nsteps);
    for (size_t j = 0; j < nsteps && seen != ALL_ENDINGS; j++) {
        size_t l = (from + j) % nsteps;
        unsigned kind = ending_kind(&steps[l], m);
        if (kind == ENDING_KINDS || (seen >> kind & 1u))
            continue;
        int slot = slot_for(p, l / HB_LANES);
        if (slot < 0)
            break;
        uint32_t h[5];
        start_state(&steps[l], states, h);
        watch_lane(p, &steps[l], l, (unsigned)slot, m, h);
        seen |= 1u << kind;
    }
}

void hb_probe_plan_uniform(hb_probe *p, const hb_msg *m, size_t n, uint64_t *rng)
{
    hb_probe_clear(p);
    if (n == 0)
        return;
    size_t g = (size_t)hb_prng_below(rng, (n + HB_LANES - 1) / HB_LANES);
    uint32_t blocks = (uint32_t)hb_padded_blocks(m[0].len);
    int slot = slot_for(p, g);
    for (size_t l = g * HB_LANES; l < n && l < (g + 1) * HB_LANES; l++) {
        hb_lane_step s = {l, 0, blocks};
        uint32_t h[5];
        hb_state_initial(h);
        watch_lane(p, &s, l, (unsigned)slot, m, h);
    }
}

static void count(hb_probe_result *r, uint64_t bytes, int differs)
{
    r->checks++;
    r->bytes += bytes;
    r->mismatches += differs != 0;
}

static void check_run(const hb_probe *p, const hb_probe_lane *pl, const hb_msg *msg,
                      hb_probe_result *r)
{
    uint32_t want[5], got[5];
    memcpy(want, pl->start, sizeof want);
    hb_sha1_openssl_blocks(want, (const uint8_t *)msg->data + pl->first_block * HB_BLOCK_BYTES,
                           pl->at[0]);
    returned_state(p, pl, 0, got);
    count(r, (uint64_t)pl->at[0] * HB_BLOCK_BYTES, memcmp(want, got, sizeof want));
}

static void check_end(const hb_probe *p, const hb_probe_lane *pl, const hb_msg *msg,
                      const uint8_t *result, int digests, hb_probe_result *r)
{
    uint32_t h[5];
    if (pl->at[1] > 0)
        returned_state(p, pl, 1, h);
    else
        memcpy(h, pl->start, sizeof h);
    uint64_t done = (pl->first_block + pl->at[1]) * HB_BLOCK_BYTES;
    const uint8_t *from = (const uint8_t *)msg->data + done;
    if (pl->first_block + pl->nblocks == hb_padded_blocks(msg->len)) {
        hb_digest want, got;
        hb_sha1_openssl_finish(h, done, from, (size_t)(msg->len - done), want);
        if (digests) {
            memcpy(got, result, sizeof got);
        } else {
            uint32_t state[5];
            memcpy(state, result, sizeof state);
            hb_state_to_digest(state, got);
        }
        count(r, msg->len - done, memcmp(want, got, sizeof want));
        return;
    }
    uint32_t blocks = pl->nblocks - pl->at[1];
    hb_sha1_openssl_blocks(h, from, blocks);
    count(r, (uint64_t)blocks * HB_BLOCK_BYTES, memcmp(h, result, sizeof h));
}

hb_probe_result hb_probe_check(const hb_probe *p, const hb_msg *m, const hb_digest *out,
                               int digests)
{
    hb_probe_result r = {0, 0, 0};
    for (unsigned i = 0; i < p->nlanes; i++) {
        const hb_probe_lane *pl = &p->lanes[i];
        if (pl->run)
            check_run(p, pl, &m[pl->msg], &r);
        if (pl->end)
            check_end(p, pl, &m[pl->msg], out[pl->msg], digests, &r);
    }
    return r;
}
