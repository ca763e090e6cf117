/*
 * backend_opencl.h - one OpenCL device hashing batches.
 *
 * Owns: the context, queue, program, kernel and staging buffers of one
 * device, and running a plan's launches on it.
 * Must not: verify results or fall back; it reports device errors as
 * HB_ERR_DEVICE with the OpenCL error named in err, and the engine decides.
 */
#ifndef HB_BACKEND_OPENCL_H
#define HB_BACKEND_OPENCL_H

#include "devices.h"
#include "error.h"
#include "fault.h"
#include "hashbatch.h"

typedef struct hb_opencl hb_opencl;

/* hb_opencl_open: sets the device up, builds the kernel and runs it once.
 * HB_ERR_BUILD_FAILED keeps the build log in err. */
hb_status hb_opencl_open(hb_opencl **out, const hb_cl_device *device, size_t staging_bytes,
                         hb_error_slot *err);
void hb_opencl_close(hb_opencl *cl);

/* hb_opencl_hash: out[i] = SHA-1(m[i]) on the device. One batch at a time
 * per device (the caller serialises). *launches counts kernel launches. */
hb_status hb_opencl_hash(hb_opencl *cl, const hb_msg *m, size_t n, hb_digest *out,
                         hb_fault_state *faults, uint64_t *launches, hb_error_slot *err);

/* hb_opencl_describe: "pocl: cpu-... [0:0], 16 lanes per work-item". */
const char *hb_opencl_describe(const hb_opencl *cl);

#endif /* HB_BACKEND_OPENCL_H */
