/*
 * plan.h - which message runs in which lane of which launch.
 *
 * Owns: cutting a batch into launches that fit the staging buffer, with
 * lanes of similar length side by side, and long messages streamed in
 * chunks whose state carries from launch to launch.
 * Must not: touch bytes or devices; it works on lengths only.
 */
#ifndef HB_PLAN_H
#define HB_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "hashbatch.h"

typedef struct {
    size_t msg;           /* index of the message in the batch */
    uint64_t first_block; /* first padded block this step runs */
    uint32_t nblocks;     /* blocks this step runs */
} hb_lane_step;

typedef struct {
    uint32_t stride;   /* blocks reserved per lane: the most any lane runs */
    size_t first_step; /* this launch's lanes: steps[first_step ...] */
    size_t nsteps;
    int continues; /* 1 if a lane continues a message from an earlier
                      launch, whose state must be collected first */
} hb_launch;

typedef struct {
    hb_lane_step *steps;
    size_t nsteps;
    hb_launch *launches;
    size_t nlaunches;
} hb_plan;

/* hb_plan_build: a plan for m[0..n) whose launches each need at most
 * staging_bytes of block data (and hold at most hb_plan_lanes_max lanes).
 * Launches run in order; a message's steps appear in order. Returns HB_OK
 * or HB_ERR_NO_MEMORY.
 * With mixed_launch_bytes 0, the final steps of a launch are all within
 * 7/8 of its longest (its stride), so a packed layout of stride blocks per
 * lane wastes little. Otherwise (devices that read whole blocks in place
 * and pack no blocks), a launch takes final steps of any length, longest
 * first, each group of 16 lanes costing its longest lane, up to
 * mixed_launch_bytes of blocks (the staging buffer holds no blocks then,
 * so it does not bound them): far fewer launches for batches of very
 * different lengths; `stride` is then only the launch's longest step. */
hb_status hb_plan_build(hb_plan *plan, const hb_msg *m, size_t n, size_t staging_bytes,
                        size_t mixed_launch_bytes);
void hb_plan_free(hb_plan *plan);

/* hb_plan_lanes_max: the most lanes any launch of a plan can hold. */
size_t hb_plan_lanes_max(size_t staging_bytes);

#endif /* HB_PLAN_H */
