/*
 * hb_testing.h - fault injection, for test builds only.
 *
 * Owns: the switches that make a test build misbehave on purpose, so tests
 * can prove that no wrong digest reaches a caller and that device errors
 * are reported or survived. Compiled in only with HB_FAULT_INJECTION (the
 * hashbatch_testing library); the installed library has none of it, and
 * these functions then return HB_ERR_INVALID_ARGUMENT.
 */
#ifndef HB_TESTING_H
#define HB_TESTING_H

#include "hashbatch.h"

typedef enum {
    HB_FAULT_NONE = 0,
    HB_FAULT_CORRUPT_ONE = 1,       /* flip one bit of one lane's result */
    HB_FAULT_CORRUPT_ALL = 2,       /* flip one bit of every lane's result */
    HB_FAULT_ENQUEUE_ERROR = 3,     /* enqueue the kernel with an invalid work
                                       size: a real OpenCL error from the
                                       runtime (CL_INVALID_WORK_GROUP_SIZE or
                                       similar) */
    HB_FAULT_BUILD_ERROR = 4,       /* at hb_engine_open: build the kernel with
                                       a broken define, a real build failure */
    HB_FAULT_DEVICE_LOST = 5,       /* from the faulted launch on, every launch
                                       of the device fails as ENQUEUE_ERROR
                                       does: the device is gone for good */
    HB_FAULT_CORRUPT_CPU_LANES = 6, /* flip one bit of every lane's state
                                   after each call of the CPU pool's
                                   multi-buffer kernel: every digest from
                                   the lanes wrong, as a broken kernel
                                   would (OpenCL launches are left alone) */
    HB_FAULT_DELAY_DEVICE = 7,      /* each faulted OpenCL launch takes
                                       delay_ns longer (the worker sleeps
                                       before collecting it): a device that
                                       turns slow */
    HB_FAULT_DELAY_CPU = 8,         /* each faulted CPU pool batch takes
                                       delay_ns longer (the thread sleeps
                                       after hashing it) */
    HB_FAULT_HOLD_LONG = 9,         /* a gate the test opens: a long
                                       message's batch stops after its
                                       first piece (a CPU batch of more
                                       than HB_CPU_PIECE_BYTES: its thread
                                       waits; a device batch, before a
                                       launch that continues a message:
                                       its worker runs short work and
                                       collects meanwhile) until the plan
                                       changes (hb_testing_set_fault, NULL
                                       too) or the batch is cancelled.
                                       Open it before hb_engine_close. */
    HB_FAULT_CPU_LANE = 10,         /* the pool's multi-buffer kernel
                                       wrong on lane `target` only */
    HB_FAULT_CPU_TAIL = 11,         /* the pool's lanes pad messages of
                                       tail kind `target` wrong (mb_batch.h:
                                       0-2 with a block in place, 3-5
                                       without; by len % 64: 0, 1-55,
                                       56-63) */
    HB_FAULT_CPU_CARRY = 12,        /* the pool's lanes load a state carried
                                       from one kernel call to the next,
                                       mid-message, wrong */
    HB_FAULT_DEVICE_CARRY = 13      /* a device launch that continues a
                                       message starts it from a wrong
                                       carried state */
} hb_fault_kind;

typedef struct {
    hb_fault_kind kind;
    uint64_t every_nth_launch; /* fault launches n, 2n, 3n ... (1-based);
                                  0 or 1: every launch */
    unsigned chance_per_mille; /* if non-zero, instead: fault each launch
                                  with this chance (random points) */
    uint64_t seed;             /* for chance_per_mille; 0: a fixed one */
    uint64_t delay_ns;         /* for the DELAY kinds */
    unsigned target;           /* for CPU_LANE and CPU_TAIL */
} hb_fault_plan;

/* hb_testing_set_fault: from now on, e's OpenCL launches misbehave as plan
 * says (plan NULL or kind NONE: stop). Launches are counted per engine from
 * this call on. Returns HB_OK, HB_ERR_NULL_ARGUMENT, or
 * HB_ERR_INVALID_ARGUMENT where fault injection is not compiled in. */
hb_status hb_testing_set_fault(hb_engine *e, const hb_fault_plan *plan);

/* hb_testing_set_build_fault: on = 1 makes every later hb_engine_open in
 * this process fail its kernel build (HB_ERR_BUILD_FAILED with the log in
 * the last error); 0 restores. Returns as hb_testing_set_fault. */
hb_status hb_testing_set_build_fault(int on);

/* Device kernels and packing broken on purpose, process-wide, so that
 * verification by structure can be shown to catch each kind of fault. */
typedef enum {
    HB_DEVICE_BREAK_NONE = 0,
    HB_DEVICE_BREAK_LANE = 1,   /* every kernel: lane `which` (0-15) of each
                                   group of 16 wrong after each block */
    HB_DEVICE_BREAK_KERNEL = 2, /* kernel entry `which` (0 hb_sha1_blocks,
                                   1 hb_sha1_in_place, 2 hb_sha1_uniform):
                                   every lane's final state wrong */
    HB_DEVICE_BREAK_TAIL = 3    /* messages of tail kind `which` (0-5,
                                   pack.h's hb_tail_kind) padded wrong for
                                   the devices: by the host's packing, and
                                   for kind 0 by the uniform kernel's own
                                   padding block too */
} hb_device_break;

/* hb_testing_set_device_break: from now on the devices misbehave as
 * kind says: a kernel break is built into the kernels of engines opened
 * after the call (never stored in the program cache), a tail break
 * strikes the next packing at once. HB_DEVICE_BREAK_NONE restores.
 * Returns as hb_testing_set_fault. */
hb_status hb_testing_set_device_break(hb_device_break kind, unsigned which);

/* hb_testing_set_lanes_forced: on = 1 makes the CPU pool hash every
 * list in its multi-buffer lanes, however few messages it has and
 * whatever the measured costs say (where OpenSSL would be cheaper, as a
 * slow instrumented build can measure), so that tests of the lanes'
 * checks have lanes to check; 0 restores. Returns as hb_testing_set_fault. */
hb_status hb_testing_set_lanes_forced(int on);

/* hb_testing_set_calibration_slowdown: factor > 1 makes every later
 * calibration in this process (hb_engine_open without cached models)
 * see each backend factor times slower: its clock runs factor times
 * faster than CLOCK_MONOTONIC, so a fast device stands for a slow one
 * (10,000: pocl as slow as a GPU simulator) against the same budget. 0 or
 * 1 restores. Returns as hb_testing_set_fault. */
hb_status hb_testing_set_calibration_slowdown(uint64_t factor);

/* hb_testing_shut_down: everything hb_engine_close(e) does except freeing
 * e's memory: afterwards every call on e answers HB_ERR_CLOSED (or, for the
 * questions, what a closed engine answers) until hb_engine_close(e) frees
 * it. For tests whose threads race calls against the close and must not
 * call into freed memory once it is over. Returns HB_OK,
 * HB_ERR_NULL_ARGUMENT, or HB_ERR_INVALID_ARGUMENT as above. */
hb_status hb_testing_shut_down(hb_engine *e);

/* hb_testing_job_work: the bytes the engine has hashed for j so far (each
 * CPU piece, device launch or verification piece counted once it has
 * finished, for every job of the batch it served), and how many of them
 * were done when j was cancelled (0 if it never was). What a cancelled job
 * cost after its cancel is the difference. Returns HB_OK,
 * HB_ERR_NULL_ARGUMENT, or HB_ERR_INVALID_ARGUMENT as above. */
hb_status hb_testing_job_work(hb_job *j, uint64_t *bytes, uint64_t *bytes_at_cancel);

/* hb_testing_force_costs: fixes the cost model of e's backend number
 * `backend` (its index in hb_stats.device[]) to terms[0..HB_COST_CLASSES):
 * the scheduler routes by them and no longer learns that backend's model
 * from what its batches take. terms NULL: learning resumes from the terms
 * as they are. Returns HB_OK, HB_ERR_NULL_ARGUMENT (e NULL),
 * HB_ERR_INVALID_ARGUMENT (no such backend, a negative or non-finite
 * term, or no fault injection compiled in). */
hb_status hb_testing_force_costs(hb_engine *e, unsigned backend, const hb_cost_terms *terms);

/* hb_testing_set_cost_clock: from now on, the scheduler takes each batch
 * of e's backend number `backend` to have cost what terms[0..
 * HB_COST_CLASSES) predict for it, instead of the time it measured (a
 * DELAY fault's time included): the backend's model learns, by the
 * scheduler's own rule, from a clock the test sets, so what it learns
 * does not hang on how loaded the machine is. terms NULL: measured time
 * again. Returns as hb_testing_force_costs. */
hb_status hb_testing_set_cost_clock(hb_engine *e, unsigned backend, const hb_cost_terms *terms);

#endif /* HB_TESTING_H */
