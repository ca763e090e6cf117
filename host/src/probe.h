/*
 * probe.h - verification by structure of device launches.
 *
 * Owns: choosing, for one launch, the lanes whose work is recomputed
 * (every lane position of one group drawn at random, plus one lane of
 * each kind of ending the launch has: the six tail kinds of pack.h's
 * hb_tail_kind, and a step that carries its state to a later launch),
 * the words that ask the kernel for their states at chosen block
 * boundaries (kernels/sha1.cl, "The probe"), and checking what came back
 * with OpenSSL:
 *   run:  from the state the lane began the launch with, its first two
 *         whole blocks, against the state the kernel wrote after them;
 *   end:  from the state the kernel wrote before the lane's last blocks
 *         (its tail, or the last two blocks of a step that carries on),
 *         to the digest (OpenSSL pads, not the host's packing) or to the
 *         state the launch handed back.
 * So a fault in one lane position, one tail rule, one kernel entry or one
 * carried state shows in the launch it strikes; its cost is a few dozen
 * blocks per launch, whatever the launch's bytes.
 * Must not: touch OpenCL (backend_opencl.c moves the words), or decide
 * what a mismatch means (the device worker does).
 */
#ifndef HB_PROBE_H
#define HB_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "hashbatch.h"
#include "plan.h"

#define HB_PROBE_SLOTS 8u /* groups watched per launch */
#define HB_PROBE_NONE 0xFFFFFFFFu
#define HB_PROBE_IN_WORDS 272u /* groups (16) and block counts (8 x 2 x 16) */
#define HB_PROBE_WORDS (HB_PROBE_IN_WORDS + HB_PROBE_SLOTS * 2u * 80u)
#define HB_PROBE_LANES_MAX 32u /* a group's 16, and one per kind of ending */

/* One lane checked: which message, what this launch ran of it, and where
 * its states come back. */
typedef struct {
    size_t msg;           /* index into the launch's messages */
    uint64_t first_block; /* of the message's padded blocks */
    uint32_t nblocks;     /* run in this launch */
    unsigned slot, lane;  /* its probe slot and lane in the group */
    uint32_t at[2];       /* the run's and the end's block counts (0: none) */
    int run, end;         /* which checks it gets */
    uint32_t start[5];    /* the state it began the launch with */
} hb_probe_lane;

typedef struct {
    uint32_t words[HB_PROBE_WORDS]; /* the kernel's view (sha1.cl) */
    hb_probe_lane lanes[HB_PROBE_LANES_MAX];
    unsigned nlanes;
} hb_probe;

typedef struct {
    size_t checks;     /* runs and ends recomputed */
    uint64_t bytes;    /* message bytes recomputed */
    size_t mismatches; /* of those, how many differed */
} hb_probe_result;

/* hb_probe_clear: no lane watched (a launch with this probe writes none). */
void hb_probe_clear(hb_probe *p);

/* hb_probe_plan_launch: the lanes of a planned launch to check: steps[l]
 * runs in lane l (group l / 16) from states[steps[l].msg] (or SHA-1's
 * initial state at the message's start), which must hold the state the
 * launch starts from. rng: a prng.h state. */
void hb_probe_plan_launch(hb_probe *p, const hb_lane_step *steps, size_t nsteps, const hb_msg *m,
                          const hb_digest *states, uint64_t *rng);

/* hb_probe_plan_uniform: the same for a uniform launch of m[0..n), all of
 * one length, message i in lane i, from SHA-1's initial state. */
void hb_probe_plan_uniform(hb_probe *p, const hb_msg *m, size_t n, uint64_t *rng);

/* hb_probe_check: once the launch is done: recomputes every check of p
 * against p's returned words and the launch's results, out[msg] for each
 * lane: five host-order state words (digests 0) or the final digest
 * (digests 1, uniform launches). */
hb_probe_result hb_probe_check(const hb_probe *p, const hb_msg *m, const hb_digest *out,
                               int digests);

#endif /* HB_PROBE_H */
