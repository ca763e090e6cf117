/*
 * fuzz_plan.c - libFuzzer target: the planner (plan.h) and the packing of
 * what it plans (pack.h, stage_in_place.h), on batch shapes read from the
 * input.
 *
 * Owns: decoding an input into a staging size, a layout (packed or mixed
 * lengths) and a batch of message lengths (0 bytes to 64 GiB, many equal
 * ones, block edges), and checking what plan.h promises of hb_plan_build:
 * the launches cut the steps in order; every padded block of every message
 * is run exactly once, in order, at most one step of a message per launch;
 * each launch's stride is its longest lane, its lanes fit
 * hb_plan_lanes_max, its blocks fit the staging buffer, and `continues`
 * says whether a lane carries state. For messages small enough to have
 * bytes, every step is also packed (hb_pack_lane) and, for mixed plans,
 * staged in place (hb_in_place_span, hb_in_place_fill), and the blocks
 * read back must be exactly the message padded by the book (0x80, zeros,
 * 64-bit big-endian bit length), written independently here.
 * Must not: call OpenCL or the engine, or trust any length the library
 * computes (the padded size is computed here too).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "config.h"
#include "pack.h"
#include "plan.h"
#include "stage_in_place.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_MESSAGES 20000u
#define STEP_BUDGET (1u << 16)     /* planned steps an input may need */
#define BYTES_LEN_MAX (256u << 10) /* longer messages are planned, not packed */
#define BYTES_TOTAL_MAX (1u << 20) /* bytes packed per input */
#define SPAN_MAX ((size_t)1 << 31) /* in-place span allowed (the library's is smaller) */

#define CHECK(cond, ...) FUZZ_CHECK("fuzz_plan", cond, __VA_ARGS__)

/* ---- reading the input ------------------------------------------------- */

/* (reader, read_byte, read_bytes: fuzz_util.h) */

/* The staging buffer: the engine's minimum, its default, or in between and
 * above, aligned or not. */
static size_t read_staging(reader *r)
{
    switch (read_byte(r) % 8) {
    case 0:
        return HB_MIN_STAGING_BYTES;
    case 1:
        return HB_DEFAULT_STAGING_BYTES;
    case 2:
        return (size_t)1 << 20;
    case 3:
        return HB_MIN_STAGING_BYTES + read_bytes(r, 2) * 64;
    case 4:
        return HB_MIN_STAGING_BYTES * 4 - 1;
    default:
        return HB_MIN_STAGING_BYTES + read_bytes(r, 3) * 16; /* up to 256 MiB */
    }
}

/* One length, by class: short, block edges, medium, large, huge. */
static uint64_t read_length(reader *r, unsigned code)
{
    unsigned x = code & 31;
    switch (code >> 5) {
    case 0:
        return x;
    case 1:
        return 32 + x;
    case 2: {
        uint64_t edge = 64 * (read_bytes(r, 1) + 1);
        return edge + x % 18 - 9; /* 9 below to 8 above a block boundary */
    }
    case 3:
        return read_bytes(r, 2);
    case 4:
        return read_bytes(r, 3) * 4 + x; /* up to 64 MiB */
    default:
        return read_bytes(r, 2) << 20 | read_bytes(r, 2); /* up to 64 GiB */
    }
}

static uint64_t padded_blocks_ref(uint64_t len)
{
    return (len + 1 + 8 + 63) / 64;
}

/* A generous estimate of the steps a batch needs (plan.c's chunk is at
 * least 64 blocks and grows with the staging buffer when few messages are
 * long), only to keep inputs within memory. */
static uint64_t estimate_steps(const uint64_t *lens, size_t n, size_t staging)
{
    size_t nlong = 0;
    for (size_t i = 0; i < n; i++)
        nlong += padded_blocks_ref(lens[i]) > 64;
    uint64_t cap = staging / 1024, groups = (nlong + 15) / 16;
    uint64_t chunk = groups ? cap / groups : cap;
    chunk = chunk < 64 ? 64 : chunk;
    uint64_t steps = 0;
    for (size_t i = 0; i < n; i++)
        steps += (padded_blocks_ref(lens[i]) - 1) / chunk + 1;
    return steps;
}

/* ---- the batch --------------------------------------------------------- */

typedef struct {
    size_t staging;
    int mixed;
    unsigned mixed_stagings; /* mixed: launches of up to this many stagings' blocks */
    size_t n;
    uint64_t lens[MAX_MESSAGES];
    hb_msg m[MAX_MESSAGES];
    int has_bytes[MAX_MESSAGES];
    uint8_t *pool;
    uint8_t *padded[MAX_MESSAGES]; /* reference padding, for messages with bytes */
    uint8_t *seen[MAX_MESSAGES];   /* blocks read back from packing / staging */
    uint64_t staged[MAX_MESSAGES]; /* blocks of it staged in place */
} batch;

static batch the_batch; /* big; one input at a time */

static void read_lengths(reader *r, batch *b)
{
    b->n = 0;
    while (r->left > 0 && b->n < MAX_MESSAGES) {
        unsigned code = read_byte(r);
        unsigned kind = code >> 5;
        if (kind >= 6 && b->n > 0) { /* repeats of the last length */
            size_t count = (code & 31) + 1u;
            if (kind == 7)
                count *= 64;
            for (size_t k = 0; k < count && b->n < MAX_MESSAGES; k++, b->n++)
                b->lens[b->n] = b->lens[b->n - 1];
            continue;
        }
        b->lens[b->n++] = read_length(r, kind >= 6 ? code & 0x9f : code);
    }
    /* the longest prefix within the budget (the estimate grows with n) */
    size_t lo = 0, hi = b->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (estimate_steps(b->lens, mid, b->staging) <= STEP_BUDGET)
            lo = mid;
        else
            hi = mid - 1;
    }
    b->n = lo;
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Bytes for the messages that get them: each at its own offset of one
 * pool (so whole blocks straddle pages at every alignment); the rest get
 * none (data NULL: the planner reads lengths only). */
static void give_bytes(batch *b, uint64_t seed)
{
    size_t total = 0;
    for (size_t i = 0; i < b->n; i++) {
        b->has_bytes[i] = b->lens[i] <= BYTES_LEN_MAX && total + b->lens[i] <= BYTES_TOTAL_MAX;
        total += b->has_bytes[i] ? b->lens[i] + 17 : 0;
    }
    b->pool = malloc(total + 1);
    CHECK(b->pool != NULL, "pool of %zu bytes", total);
    for (size_t k = 0; k < total; k += 8) {
        uint64_t v = mix64(seed + k);
        memcpy(b->pool + k, &v, total - k < 8 ? total - k : 8);
    }
    size_t at = 0;
    for (size_t i = 0; i < b->n; i++) {
        b->m[i] = (hb_msg){NULL, (size_t)b->lens[i]};
        b->padded[i] = b->seen[i] = NULL;
        b->staged[i] = 0;
        if (!b->has_bytes[i])
            continue;
        size_t skew = (size_t)(mix64(seed ^ i) % 17);
        b->m[i].data = b->pool + at + skew;
        at += b->lens[i] + 17;
        size_t padded = (size_t)padded_blocks_ref(b->lens[i]) * 64;
        b->padded[i] = calloc(padded, 1);
        b->seen[i] = calloc(padded, 1);
        CHECK(b->padded[i] != NULL && b->seen[i] != NULL, "%zu bytes", padded);
        memcpy(b->padded[i], b->m[i].data, b->lens[i]);
        b->padded[i][b->lens[i]] = 0x80;
        uint64_t bits = b->lens[i] * 8;
        for (int k = 0; k < 8; k++)
            b->padded[i][padded - 1 - k] = (uint8_t)(bits >> (8 * k));
    }
}

static void free_batch(batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->padded[i]);
        free(b->seen[i]);
    }
    free(b->pool);
    b->pool = NULL;
}

/* ---- checks of the plan ------------------------------------------------ */

/* The launches cut steps[0..nsteps) in order, none empty. */
static void check_launch_cover(const hb_plan *p, size_t n)
{
    if (n == 0) {
        CHECK(p->nsteps == 0 && p->nlaunches == 0, "empty batch: %zu steps", p->nsteps);
        return;
    }
    size_t next = 0;
    for (size_t k = 0; k < p->nlaunches; k++) {
        CHECK(p->launches[k].first_step == next, "launch %zu starts at step %zu, not %zu", k,
              p->launches[k].first_step, next);
        CHECK(p->launches[k].nsteps > 0, "launch %zu is empty", k);
        next += p->launches[k].nsteps;
    }
    CHECK(next == p->nsteps, "launches cover %zu of %zu steps", next, p->nsteps);
}

/* What a launch's blocks may add up to: the staging size, or for a mixed
 * plan its budget (only final steps use it: they read in place). */
static size_t launch_budget(const batch *b)
{
    return b->mixed ? b->staging * b->mixed_stagings : 0;
}

/* A launch's own limits: stride, lane count, staging bytes, continues. */
static void check_launch_limits(const batch *b, const hb_plan *p, size_t k)
{
    const hb_launch *l = &p->launches[k];
    const hb_lane_step *s = p->steps + l->first_step;
    uint64_t longest = 0, group_costs = 0, group_max = 0;
    int continues = 0;
    for (size_t j = 0; j < l->nsteps; j++) {
        CHECK(s[j].nblocks > 0 && s[j].nblocks <= l->stride,
              "launch %zu lane %zu runs %u blocks, stride %u", k, j, s[j].nblocks, l->stride);
        if (!b->mixed)
            CHECK(s[j].nblocks >= l->stride - l->stride / 8,
                  "launch %zu lane %zu runs %u blocks, under 7/8 of stride %u", k, j, s[j].nblocks,
                  l->stride);
        longest = s[j].nblocks > longest ? s[j].nblocks : longest;
        group_max = s[j].nblocks > group_max ? s[j].nblocks : group_max;
        if (j % HB_LANES == HB_LANES - 1 || j + 1 == l->nsteps) {
            group_costs += group_max;
            group_max = 0;
        }
        continues |= s[j].first_block > 0;
    }
    CHECK(longest == l->stride, "launch %zu: stride %u, longest lane %llu", k, l->stride,
          (unsigned long long)longest);
    CHECK(l->continues == continues, "launch %zu: continues %d, lanes say %d", k, l->continues,
          continues);
    CHECK(l->nsteps <= hb_plan_lanes_max(b->staging), "launch %zu: %zu lanes, at most %zu", k,
          l->nsteps, hb_plan_lanes_max(b->staging));
    uint64_t groups = (l->nsteps + HB_LANES - 1) / HB_LANES;
    uint64_t bytes = (b->mixed ? group_costs : groups * l->stride) * HB_LANES * HB_BLOCK_BYTES;
    size_t most = b->mixed ? launch_budget(b) : b->staging;
    CHECK(bytes <= most, "launch %zu: %llu groups need %llu bytes, at most %zu", k,
          (unsigned long long)groups, (unsigned long long)bytes, most);
}

/* Every padded block of every message, once, in order; no message twice
 * in a launch (its state would be needed before it is made). */
static void check_block_cover(const batch *b, const hb_plan *p)
{
    uint64_t *next_block = calloc(b->n, sizeof *next_block);
    size_t *last_launch = malloc(b->n * sizeof *last_launch);
    CHECK(next_block != NULL && last_launch != NULL, "out of memory");
    memset(last_launch, 0xff, b->n * sizeof *last_launch);
    for (size_t k = 0; k < p->nlaunches; k++) {
        const hb_launch *l = &p->launches[k];
        for (size_t j = l->first_step; j < l->first_step + l->nsteps; j++) {
            const hb_lane_step *s = &p->steps[j];
            CHECK(s->msg < b->n, "step %zu names message %zu of %zu", j, s->msg, b->n);
            CHECK(last_launch[s->msg] != k, "message %zu twice in launch %zu", s->msg, k);
            CHECK(s->first_block == next_block[s->msg],
                  "message %zu: step %zu starts at block %llu, not %llu", s->msg, j,
                  (unsigned long long)s->first_block, (unsigned long long)next_block[s->msg]);
            last_launch[s->msg] = k;
            next_block[s->msg] += s->nblocks;
            CHECK(next_block[s->msg] <= padded_blocks_ref(b->lens[s->msg]),
                  "message %zu (%llu bytes) runs past its %llu blocks", s->msg,
                  (unsigned long long)b->lens[s->msg],
                  (unsigned long long)padded_blocks_ref(b->lens[s->msg]));
        }
    }
    for (size_t i = 0; i < b->n; i++) {
        CHECK(next_block[i] == padded_blocks_ref(b->lens[i]),
              "message %zu (%llu bytes): %llu of %llu blocks run", i,
              (unsigned long long)b->lens[i], (unsigned long long)next_block[i],
              (unsigned long long)padded_blocks_ref(b->lens[i]));
        CHECK(hb_padded_blocks(b->lens[i]) == padded_blocks_ref(b->lens[i]),
              "hb_padded_blocks(%llu) = %llu", (unsigned long long)b->lens[i],
              (unsigned long long)hb_padded_blocks(b->lens[i]));
    }
    free(last_launch);
    free(next_block);
}

/* ---- packing what was planned ------------------------------------------ */

static void store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Packs step s into lane `lane` of a group and reads its blocks back into
 * seen[msg] (word j of block q of lane i is at q * 256 + j * 16 + i). */
static void pack_step(batch *b, const hb_lane_step *s, unsigned lane, uint32_t *words)
{
    size_t nwords = (size_t)s->nblocks * HB_GROUP_BLOCK_WORDS;
    memset(words, 0, nwords * sizeof *words);
    hb_pack_lane(words, lane, &b->m[s->msg], s->first_block, s->nblocks);
    uint8_t *out = b->seen[s->msg] + s->first_block * HB_BLOCK_BYTES;
    for (uint32_t q = 0; q < s->nblocks; q++)
        for (unsigned j = 0; j < 16; j++)
            store_be32(out + q * 64 + 4 * j, words[q * HB_GROUP_BLOCK_WORDS + j * 16 + lane]);
}

static void check_packed(batch *b, const hb_plan *p)
{
    uint32_t *words = NULL;
    size_t cap = 0;
    for (size_t k = 0; k < p->nlaunches; k++) {
        const hb_launch *l = &p->launches[k];
        for (size_t j = 0; j < l->nsteps; j++) {
            const hb_lane_step *s = &p->steps[l->first_step + j];
            if (!b->has_bytes[s->msg])
                continue;
            size_t need = (size_t)s->nblocks * HB_GROUP_BLOCK_WORDS;
            if (need > cap) {
                free(words);
                words = malloc(need * sizeof *words);
                CHECK(words != NULL, "out of memory");
                cap = need;
            }
            pack_step(b, s, (unsigned)(j % HB_LANES), words);
        }
    }
    free(words);
}

/* Stages launch k in place as a CPU device would, if every message of it
 * has bytes (a span needs their addresses), and reads every lane's blocks
 * back: whole blocks from the span, the rest from its tail. */
static void stage_launch(batch *b, const hb_plan *p, size_t k)
{
    const hb_launch *l = &p->launches[k];
    const hb_lane_step *s = p->steps + l->first_step;
    for (size_t j = 0; j < l->nsteps; j++)
        if (!b->has_bytes[s[j].msg])
            return;
    hb_span span;
    CHECK(hb_in_place_span(s, l->nsteps, b->m, SPAN_MAX, &span) == 1,
          "launch %zu: no span within %zu bytes", k, SPAN_MAX);
    size_t lanes = (l->nsteps + HB_LANES - 1) / HB_LANES * HB_LANES;
    uint32_t *offset = malloc(lanes * sizeof *offset), *whole = malloc(lanes * sizeof *whole);
    uint32_t *count = malloc(lanes * sizeof *count);
    uint8_t *tails = malloc(lanes * HB_TAIL_BYTES);
    CHECK(offset && whole && count && tails, "out of memory");
    hb_in_place_fill(s, l->nsteps, b->m, &span, &(hb_in_place_lanes){offset, whole, count, tails});
    for (size_t j = 0; j < lanes; j++) {
        if (j >= l->nsteps) {
            CHECK(count[j] == 0 && whole[j] == 0, "launch %zu: unused lane %zu runs blocks", k, j);
            continue;
        }
        CHECK(count[j] == s[j].nblocks && whole[j] <= count[j] && count[j] - whole[j] <= 2,
              "launch %zu lane %zu: count %u whole %u for a step of %u", k, j, count[j], whole[j],
              s[j].nblocks);
        CHECK((uint64_t)offset[j] + (uint64_t)whole[j] * 64 <= span.bytes,
              "launch %zu lane %zu: whole blocks past the span", k, j);
        uint8_t *out = b->seen[s[j].msg] + s[j].first_block * HB_BLOCK_BYTES;
        b->staged[s[j].msg] += count[j];
        if (whole[j] > 0)
            memcpy(out, span.base + offset[j], (size_t)whole[j] * 64);
        memcpy(out + (size_t)whole[j] * 64, tails + j * HB_TAIL_BYTES,
               (size_t)(count[j] - whole[j]) * 64);
    }
    free(tails);
    free(count);
    free(whole);
    free(offset);
}

/* seen[i] is the reference padding of message i (of the messages with
 * bytes; with staged_only, of those whose every block was staged); then
 * cleared. */
static void check_seen(batch *b, const char *how, int staged_only)
{
    for (size_t i = 0; i < b->n; i++) {
        if (!b->has_bytes[i] || (staged_only && b->staged[i] != padded_blocks_ref(b->lens[i])))
            continue;
        size_t padded = (size_t)padded_blocks_ref(b->lens[i]) * 64;
        if (memcmp(b->seen[i], b->padded[i], padded) != 0) {
            size_t at = 0;
            while (b->seen[i][at] == b->padded[i][at])
                at++;
            CHECK(0, "%s: message %zu (%llu bytes): padded byte %zu is %02x, not %02x", how, i,
                  (unsigned long long)b->lens[i], at, b->seen[i][at], b->padded[i][at]);
        }
        memset(b->seen[i], 0, padded);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size};
    batch *b = &the_batch;
    unsigned flags = read_byte(&r);
    b->mixed = flags & 1;
    b->mixed_stagings = 1 + ((flags >> 1) & 3); /* a mixed launch's budget */
    b->staging = read_staging(&r);
    uint64_t seed = read_bytes(&r, 2);
    read_lengths(&r, b);
    give_bytes(b, seed);
    hb_plan p;
    CHECK(hb_plan_build(&p, b->m, b->n, b->staging, launch_budget(b)) == HB_OK,
          "hb_plan_build(%zu messages, staging %zu, mixed %d)", b->n, b->staging, b->mixed);
    check_launch_cover(&p, b->n);
    for (size_t k = 0; k < p.nlaunches; k++)
        check_launch_limits(b, &p, k);
    check_block_cover(b, &p);
    check_packed(b, &p);
    check_seen(b, "hb_pack_lane", 0);
    /* CPU devices stage packed and mixed plans alike in place */
    for (size_t k = 0; k < p.nlaunches; k++)
        stage_launch(b, &p, k);
    check_seen(b, "in place", 1);
    hb_plan_free(&p);
    free_batch(b);
    return 0;
}
