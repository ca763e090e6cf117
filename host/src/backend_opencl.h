/*
 * backend_opencl.h - one OpenCL device, with launches in flight.
 *
 * Owns: the context, queues, program, kernel and a ring of staging slots
 * of one device. A launch is packed into a free slot (mapped memory where
 * the device shares the host's, else pinned staging copied to the device),
 * its kernel and the read-back of its lane states are enqueued, and it is
 * collected later, so several launches (of one or several batches) are in
 * flight at once.
 * Must not: verify, retry or fall back; it reports device errors as
 * HB_ERR_DEVICE with the OpenCL error named in err, and the caller decides.
 * Not thread-safe: one thread (the device's worker) makes every call.
 */
#ifndef HB_BACKEND_OPENCL_H
#define HB_BACKEND_OPENCL_H

#include "devices.h"
#include "error.h"
#include "fault.h"
#include "hashbatch.h"
#include "plan.h"
#include "probe.h"
#include "stage_in_place.h"

typedef struct hb_opencl hb_opencl;

/* hb_opencl_open: sets the device up with `ring` staging slots of
 * staging_bytes each, builds the kernel and runs it once. A failed build
 * returns HB_ERR_BUILD_FAILED with the build log in err. */
hb_status hb_opencl_open(hb_opencl **out, const hb_cl_device *device, size_t staging_bytes,
                         unsigned ring, hb_error_slot *err);
void hb_opencl_close(hb_opencl *cl);

/* hb_opencl_free_slots: slots that can take a launch without collecting. */
unsigned hb_opencl_free_slots(const hb_opencl *cl);

/* hb_opencl_in_flight: launches enqueued and not yet collected. */
unsigned hb_opencl_in_flight(const hb_opencl *cl);

/* hb_opencl_enqueue: packs launch `index` of plan into a free slot (there
 * must be one) and starts it. Lanes that continue a message read their
 * state from states[msg], which must hold it already (collect first).
 * probe (NULL: none; probe.h): the lanes whose states the kernel also
 * writes there, read back by the time hb_opencl_collect returns; it must
 * live until then. tag comes back from hb_opencl_collect. */
hb_status hb_opencl_enqueue(hb_opencl *cl, const hb_plan *plan, size_t index, const hb_msg *m,
                            hb_digest *states, hb_probe *probe, hb_fault_state *faults, void *tag,
                            hb_error_slot *err);

/* hb_opencl_uniform_lanes: the most messages of one length a uniform
 * launch takes; 0 where the device has no uniform kernel (only devices
 * that read the caller's bytes in place have one). */
size_t hb_opencl_uniform_lanes(const hb_opencl *cl);

/* hb_opencl_uniform_batch: 1 if m[0..n) can run as uniform launches:
 * the device has them, all the messages have m[0].len bytes and lie within
 * one buffer's reach, which *span then covers. */
int hb_opencl_uniform_batch(const hb_opencl *cl, const hb_msg *m, size_t n, hb_span *span);

/* hb_opencl_uniform_launch_size: how many messages each uniform launch
 * of the batch m[0..n) takes, with *span the bytes they read; 0 when the
 * batch does not run as uniform launches (too few messages, too long, of
 * different lengths, out of one buffer's reach, or no uniform kernel).
 * By model (the device's terms for the batch's class; NULL: none yet), a
 * launch is long enough that its fixed cost is at most a twentieth of it,
 * up to the device's lanes. */
size_t hb_opencl_uniform_launch_size(const hb_opencl *cl, const hb_msg *m, size_t n, hb_span *span,
                                     const hb_cost_terms *model);

/* hb_opencl_enqueue_uniform: starts one launch hashing m[0..n) (at most
 * hb_opencl_uniform_lanes), all of m[0].len bytes, straight from their
 * bytes within batch_span (from hb_opencl_uniform_batch over a batch that
 * holds them), the device writing the final digests into out[0..n) (no
 * plan, no states; hb_opencl_collect copies nothing); probe as for
 * hb_opencl_enqueue, message i in lane i. */
hb_status hb_opencl_enqueue_uniform(hb_opencl *cl, const hb_msg *m, size_t n,
                                    const hb_span *batch_span, hb_digest *out, hb_probe *probe,
                                    hb_fault_state *faults, void *tag, hb_error_slot *err);

/* hb_opencl_reads_in_place: 1 if every launch of a plan for m[0..n)
 * will read its whole blocks in place (the device can, and all the
 * messages lie within one buffer's reach), so the plan may mix lengths. */
int hb_opencl_reads_in_place(const hb_opencl *cl, const hb_msg *m, size_t n);

/* hb_opencl_in_place_launch_bytes: the most block bytes one launch that
 * reads whole blocks in place may cover (the plan's mixed_launch_bytes):
 * enough that, by model (the device's terms for the batch's class; NULL:
 * none yet), its fixed cost is at most a twentieth of the launch, and at
 * least a staging buffer's worth. */
size_t hb_opencl_in_place_launch_bytes(const hb_opencl *cl, const hb_cost_terms *model);

/* hb_opencl_collect: waits for the oldest launch in flight and writes its
 * lanes' states into the states array it was enqueued with, as five
 * host-order words per message. *tag is the launch's tag. */
hb_status hb_opencl_collect(hb_opencl *cl, void **tag, hb_error_slot *err);

/* hb_opencl_reset: after an error: waits out or abandons everything in
 * flight and frees every slot. The tags of abandoned launches are lost:
 * the caller keeps track of its batches. */
void hb_opencl_reset(hb_opencl *cl);

/* hb_opencl_hash: a whole batch, synchronously: out[i] = SHA-1(m[i]), in
 * the launches the device worker would use (uniform, in place, packed).
 * *launches counts kernel launches. */
hb_status hb_opencl_hash(hb_opencl *cl, const hb_msg *m, size_t n, hb_digest *out,
                         hb_fault_state *faults, uint64_t *launches, hb_error_slot *err);

/* hb_states_to_digests: the five host-order words in each of out[0..n)
 * become digest bytes, in place. */
void hb_states_to_digests(hb_digest *out, size_t n);

/* hb_opencl_copies_bytes: 1 where launches copy their blocks to the
 * device and their states back (discrete GPUs, or any device under
 * HASHBATCH_TEST_GPU_SHAPE=1 in a test build), 0 where the device reads
 * and writes host memory where it lies (pocl, integrated GPUs). */
int hb_opencl_copies_bytes(const hb_opencl *cl);

/* hb_opencl_describe: "pocl: cpu-... [0:0], 16 lanes per work-item, ...";
 * ends in ", GPU shape (test switch)" when HASHBATCH_TEST_GPU_SHAPE forced
 * the GPU shape. */
const char *hb_opencl_describe(const hb_opencl *cl);
const hb_device_info *hb_opencl_info(const hb_opencl *cl);
size_t hb_opencl_staging_bytes(const hb_opencl *cl);

#endif /* HB_BACKEND_OPENCL_H */
