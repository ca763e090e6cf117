/*
 * devices.h - finding OpenCL devices and matching a device spec.
 *
 * Owns: enumeration of platforms and devices (table-driven queries), the
 * `auto` choice, and the spec grammar: all | gpu | cpu | accelerator |
 * P:D | a name substring.
 * Must not: create contexts or build programs (backend_opencl.c does).
 * Built without OpenCL (HB_NO_OPENCL: CMake's HB_OPENCL=OFF, or the gem
 * where no CL/cl.h or libOpenCL is found), opencl_absent.c implements
 * these and the OpenCL handles are opaque pointers.
 */
#ifndef HB_DEVICES_H
#define HB_DEVICES_H

#include <stddef.h>
#ifdef HB_NO_OPENCL
typedef struct hb_absent_cl_platform *cl_platform_id;
typedef struct hb_absent_cl_device *cl_device_id;
#else
#include <CL/cl.h>
#endif

#include "cores.h"
#include "error.h"
#include "hashbatch.h"

typedef struct {
    cl_platform_id platform;
    cl_device_id device;
    hb_device_info info;
} hb_cl_device;

/* hb_cl_enumerate: every device of every platform, in a new array (free()).
 * No platform at all gives *count 0 and HB_OK. The process's first call
 * starts the OpenCL runtime, whose threads (pocl's) take the calling
 * thread's cores: it records them. */
hb_status hb_cl_enumerate(hb_cl_device **out, size_t *count);

/* hb_cl_runtime_within: 1 when this library started the OpenCL runtime
 * (its first hb_cl_enumerate) from a thread on cores within `cores`. */
int hb_cl_runtime_within(const hb_core_set *cores);

/* hb_cl_auto_index: the device `auto` uses: the first available GPU, else
 * the first available CPU device, else any available device; -1 if none. */
long hb_cl_auto_index(const hb_cl_device *devices, size_t count);

/* hb_cl_select: indices of the devices spec names (empty spec: the auto
 * one) into `chosen` (room for count), their number in *nchosen.
 * HB_ERR_BAD_DEVICE_SPEC, with the reason (and the spec) in err, when the
 * spec is malformed or matches nothing, also when there is no device at
 * all; HB_ERR_NO_OPENCL when count is 0 and the spec is empty or "all". */
hb_status hb_cl_select(const hb_cl_device *devices, size_t count, const char *spec, size_t *chosen,
                       size_t *nchosen, hb_error_slot *err);

/* hb_cl_check_spec: whether spec would select a device, for engines that
 * open none (backend cpu): HB_OK for an empty spec, for "all", and for one
 * that matches a device; else hb_cl_select's HB_ERR_BAD_DEVICE_SPEC. */
hb_status hb_cl_check_spec(const char *spec, hb_error_slot *err);

#endif /* HB_DEVICES_H */
