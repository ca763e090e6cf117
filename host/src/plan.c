/*
 * plan.c - turning a batch into a sequence of kernel launches.
 *
 * Owns: the schedule. Every message of B padded blocks is cut into
 * s = (B - 1) / K full steps of K blocks and one final step of 1..K blocks.
 * Full steps run first, round by round (step r of every long message in
 * round r), then all final steps, sorted longest first and grouped so that
 * no lane in a launch runs less than 7/8 of the launch's stride: lanes of
 * a launch finish nearly together. K grows when few messages are long, so
 * one huge message gets big chunks rather than many tiny launches.
 * Must not: read message bytes.
 */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#include "pack.h"

#define SHORT_BLOCKS 64u /* at or below this, a message is one step */
#define GROUP_BLOCK_BYTES ((size_t)HB_LANES * HB_BLOCK_BYTES)

typedef struct {
    uint64_t blocks; /* of the final step */
    size_t msg;
    uint64_t first_block;
} final_step;

static size_t groups_fitting(size_t staging_bytes, uint64_t stride)
{
    size_t groups = staging_bytes / (GROUP_BLOCK_BYTES * stride);
    return groups ? groups : 1;
}

size_t hb_plan_lanes_max(size_t staging_bytes)
{
    return groups_fitting(staging_bytes, 1) * HB_LANES;
}

static uint64_t choose_chunk(const hb_msg *m, size_t n, size_t staging_bytes)
{
    size_t long_count = 0;
    for (size_t i = 0; i < n; i++)
        if (hb_padded_blocks(m[i].len) > SHORT_BLOCKS)
            long_count++;
    uint64_t cap = staging_bytes / GROUP_BLOCK_BYTES; /* one group fills it */
    if (cap < SHORT_BLOCKS)
        cap = SHORT_BLOCKS;
    if (long_count == 0)
        return cap;
    uint64_t groups = (long_count + HB_LANES - 1) / HB_LANES;
    uint64_t chunk = cap / groups;
    return chunk < SHORT_BLOCKS ? SHORT_BLOCKS : chunk;
}

/* Sorts finals by blocks, longest first, keeping message order among
 * equals (a counting sort: final steps are at most `chunk` blocks long).
 * Returns 0 when out of memory. */
static int sort_by_blocks_descending(final_step *finals, size_t n, uint64_t chunk)
{
    size_t *starts = calloc(chunk + 2, sizeof *starts);
    final_step *sorted = malloc(n * sizeof *sorted);
    if (starts == NULL || sorted == NULL) {
        free(starts);
        free(sorted);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        starts[chunk - finals[i].blocks + 1]++; /* slot 0: the longest */
    for (uint64_t b = 1; b <= chunk + 1; b++)
        starts[b] += starts[b - 1];
    for (size_t i = 0; i < n; i++)
        sorted[starts[chunk - finals[i].blocks]++] = finals[i];
    memcpy(finals, sorted, n * sizeof *finals);
    free(sorted);
    free(starts);
    return 1;
}

static int any_continues(const hb_lane_step *steps, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (steps[i].first_block > 0)
            return 1;
    return 0;
}

static hb_status push_launch(hb_plan *plan, size_t *cap, uint32_t stride, size_t first,
                             size_t count)
{
    if (plan->nlaunches == *cap) {
        size_t grown = *cap ? *cap * 2 : 64;
        hb_launch *more = realloc(plan->launches, grown * sizeof *more);
        if (more == NULL)
            return HB_ERR_NO_MEMORY;
        plan->launches = more;
        *cap = grown;
    }
    plan->launches[plan->nlaunches++] =
        (hb_launch){stride, first, count, any_continues(plan->steps + first, count)};
    return HB_OK;
}

/* Round r of the full steps: step r of every message with more than r.
 * `pending` lists the messages that still have full steps; it shrinks as
 * they run out, so a huge message among many small ones costs little. */
static hb_status plan_full_rounds(hb_plan *plan, size_t *launch_cap, const hb_msg *m,
                                  size_t *pending, size_t npending, uint64_t chunk,
                                  size_t staging_bytes)
{
    size_t lanes_per_launch = groups_fitting(staging_bytes, chunk) * HB_LANES;
    for (uint64_t round = 0; npending > 0; round++) {
        size_t round_start = plan->nsteps, kept = 0;
        for (size_t k = 0; k < npending; k++) {
            size_t i = pending[k];
            plan->steps[plan->nsteps++] = (hb_lane_step){i, round * chunk, (uint32_t)chunk};
            if ((hb_padded_blocks(m[i].len) - 1) / chunk > round + 1)
                pending[kept++] = i;
        }
        npending = kept;
        for (size_t s = round_start; s < plan->nsteps; s += lanes_per_launch) {
            size_t count =
                plan->nsteps - s < lanes_per_launch ? plan->nsteps - s : lanes_per_launch;
            hb_status st = push_launch(plan, launch_cap, (uint32_t)chunk, s, count);
            if (st != HB_OK)
                return st;
        }
    }
    return HB_OK;
}

/* Mixed lengths: launches of whole groups of 16 sorted steps, until the
 * groups' longest lanes add up to launch_bytes of blocks (or the lanes
 * to lanes_max). */
static hb_status plan_mixed_final_steps(hb_plan *plan, size_t *launch_cap, const final_step *finals,
                                        size_t n, size_t staging_bytes, size_t launch_bytes)
{
    uint64_t budget = launch_bytes / GROUP_BLOCK_BYTES; /* group-blocks per launch */
    size_t lanes_max = hb_plan_lanes_max(staging_bytes);
    size_t i = 0;
    while (i < n) {
        size_t first = plan->nsteps;
        uint64_t stride = finals[i].blocks, used = 0;
        while (i < n && plan->nsteps - first < lanes_max) {
            uint64_t group_cost = finals[i].blocks; /* sorted: a group's first is its longest */
            if (used > 0 && used + group_cost > budget)
                break;
            used += group_cost;
            for (size_t k = 0; k < HB_LANES && i < n; k++, i++)
                plan->steps[plan->nsteps++] = (hb_lane_step){finals[i].msg, finals[i].first_block,
                                                             (uint32_t)finals[i].blocks};
        }
        hb_status st = push_launch(plan, launch_cap, (uint32_t)stride, first, plan->nsteps - first);
        if (st != HB_OK)
            return st;
    }
    return HB_OK;
}

static hb_status plan_final_steps(hb_plan *plan, size_t *launch_cap, final_step *finals, size_t n,
                                  uint64_t chunk, size_t staging_bytes, size_t mixed_launch_bytes)
{
    if (!sort_by_blocks_descending(finals, n, chunk))
        return HB_ERR_NO_MEMORY;
    if (mixed_launch_bytes > 0)
        return plan_mixed_final_steps(plan, launch_cap, finals, n, staging_bytes,
                                      mixed_launch_bytes);
    size_t i = 0;
    while (i < n) {
        uint64_t stride = finals[i].blocks;
        uint64_t shortest = stride - stride / 8;
        size_t lanes_max = groups_fitting(staging_bytes, stride) * HB_LANES;
        size_t first = plan->nsteps;
        while (i < n && finals[i].blocks >= shortest && plan->nsteps - first < lanes_max) {
            plan->steps[plan->nsteps++] =
                (hb_lane_step){finals[i].msg, finals[i].first_block, (uint32_t)finals[i].blocks};
            i++;
        }
        hb_status st = push_launch(plan, launch_cap, (uint32_t)stride, first, plan->nsteps - first);
        if (st != HB_OK)
            return st;
    }
    return HB_OK;
}

static size_t count_steps(const hb_msg *m, size_t n, uint64_t chunk)
{
    size_t steps = 0;
    for (size_t i = 0; i < n; i++)
        steps += (size_t)((hb_padded_blocks(m[i].len) - 1) / chunk) + 1;
    return steps;
}

hb_status hb_plan_build(hb_plan *plan, const hb_msg *m, size_t n, size_t staging_bytes,
                        size_t mixed_launch_bytes)
{
    *plan = (hb_plan){0};
    if (n == 0)
        return HB_OK;
    uint64_t chunk = choose_chunk(m, n, staging_bytes);
    plan->steps = malloc(count_steps(m, n, chunk) * sizeof *plan->steps);
    final_step *finals = malloc(n * sizeof *finals);
    size_t *pending = malloc(n * sizeof *pending);
    hb_status st = HB_ERR_NO_MEMORY;
    if (plan->steps != NULL && finals != NULL && pending != NULL) {
        size_t npending = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t blocks = hb_padded_blocks(m[i].len);
            uint64_t full = (blocks - 1) / chunk;
            finals[i] = (final_step){blocks - full * chunk, i, full * chunk};
            if (full > 0)
                pending[npending++] = i;
        }
        size_t launch_cap = 0;
        st = plan_full_rounds(plan, &launch_cap, m, pending, npending, chunk, staging_bytes);
        if (st == HB_OK)
            st = plan_final_steps(plan, &launch_cap, finals, n, chunk, staging_bytes,
                                  mixed_launch_bytes);
    }
    free(pending);
    free(finals);
    if (st != HB_OK)
        hb_plan_free(plan);
    return st;
}

void hb_plan_free(hb_plan *plan)
{
    free(plan->steps);
    free(plan->launches);
    *plan = (hb_plan){0};
}
