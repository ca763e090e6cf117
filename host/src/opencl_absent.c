/*
 * opencl_absent.c - the OpenCL-facing functions of a library built without
 * OpenCL (HB_NO_OPENCL: CMake's HB_OPENCL=OFF, or the gem's vendored build
 * where no CL/cl.h or libOpenCL was found).
 *
 * Owns: what devices.c, backend_opencl.c and cl_errors.c provide, for a
 * build that compiles none of them (host/opencl_sources.txt names them):
 * no device is ever found, listing devices and opening a device fail with
 * HB_ERR_NO_OPENCL "no OpenCL devices: built without OpenCL", so the
 * engine's auto backend runs on the OpenSSL pool and says why.
 * Must not: call or include OpenCL, or pretend a device exists. The device
 * functions past hb_opencl_open are unreachable (no hb_opencl is ever
 * made); they answer as an idle device with nothing in flight would.
 */
#include <string.h>

#include "backend_opencl.h"
#include "cl_errors.h"
#include "devices.h"
#include "pack.h"

#define BUILT_WITHOUT_OPENCL "no OpenCL devices: built without OpenCL"

/* ---- devices.h --------------------------------------------------------- */

int hb_cl_runtime_within(const hb_core_set *cores)
{
    (void)cores;
    return 0; /* no runtime: no device runs anywhere */
}

hb_status hb_cl_enumerate(hb_cl_device **out, size_t *count)
{
    *out = NULL; /* callers free() it */
    *count = 0;
    return HB_OK;
}

long hb_cl_auto_index(const hb_cl_device *devices, size_t count)
{
    (void)devices;
    (void)count;
    return -1;
}

hb_status hb_cl_select(const hb_cl_device *devices, size_t count, const char *spec, size_t *chosen,
                       size_t *nchosen, hb_error_slot *err)
{
    (void)devices;
    (void)count;
    (void)chosen;
    *nchosen = 0;
    if (spec != NULL && *spec != '\0' && strcmp(spec, "all") != 0)
        return hb_error_set(err, HB_ERR_BAD_DEVICE_SPEC, "device spec '%s' matches no device: %s",
                            spec, BUILT_WITHOUT_OPENCL);
    return hb_error_set(err, HB_ERR_NO_OPENCL, BUILT_WITHOUT_OPENCL);
}

hb_status hb_cl_check_spec(const char *spec, hb_error_slot *err)
{
    size_t nchosen;
    hb_status st = hb_cl_select(NULL, 0, spec, NULL, &nchosen, err);
    return st == HB_ERR_NO_OPENCL ? HB_OK : st; /* "all" of no device */
}

hb_status hb_devices_list(hb_device_info *out, size_t cap, size_t *count)
{
    if (count == NULL || (out == NULL && cap > 0))
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_devices_list: %s is NULL",
                            count == NULL ? "count" : "out");
    *count = 0;
    return hb_error_set(NULL, HB_ERR_NO_OPENCL, "hb_devices_list: " BUILT_WITHOUT_OPENCL);
}

/* ---- cl_errors.h ------------------------------------------------------- */

const char *hb_cl_error_name(int code)
{
    (void)code;
    return "CL_UNKNOWN_ERROR";
}

/* ---- backend_opencl.h -------------------------------------------------- */

hb_status hb_opencl_open(hb_opencl **out, const hb_cl_device *device, size_t staging_bytes,
                         unsigned ring, hb_error_slot *err)
{
    (void)device;
    (void)staging_bytes;
    (void)ring;
    *out = NULL;
    return hb_error_set(err, HB_ERR_NO_OPENCL, BUILT_WITHOUT_OPENCL);
}

void hb_opencl_close(hb_opencl *cl)
{
    (void)cl;
}

unsigned hb_opencl_free_slots(const hb_opencl *cl)
{
    (void)cl;
    return 0;
}

unsigned hb_opencl_in_flight(const hb_opencl *cl)
{
    (void)cl;
    return 0;
}

hb_status hb_opencl_enqueue(hb_opencl *cl, const hb_plan *plan, size_t index, const hb_msg *m,
                            hb_digest *states, hb_probe *probe, hb_fault_state *faults, void *tag,
                            hb_error_slot *err)
{
    (void)cl;
    (void)plan;
    (void)index;
    (void)m;
    (void)states;
    (void)probe;
    (void)faults;
    (void)tag;
    return hb_error_set(err, HB_ERR_NO_OPENCL, BUILT_WITHOUT_OPENCL);
}

size_t hb_opencl_uniform_lanes(const hb_opencl *cl)
{
    (void)cl;
    return 0;
}

int hb_opencl_uniform_batch(const hb_opencl *cl, const hb_msg *m, size_t n, hb_span *span)
{
    (void)cl;
    (void)m;
    (void)n;
    (void)span;
    return 0;
}

size_t hb_opencl_uniform_launch_size(const hb_opencl *cl, const hb_msg *m, size_t n, hb_span *span,
                                     const hb_cost_terms *model)
{
    (void)cl;
    (void)m;
    (void)n;
    (void)span;
    (void)model;
    return 0;
}

hb_status hb_opencl_enqueue_uniform(hb_opencl *cl, const hb_msg *m, size_t n,
                                    const hb_span *batch_span, hb_digest *out, hb_probe *probe,
                                    hb_fault_state *faults, void *tag, hb_error_slot *err)
{
    (void)cl;
    (void)m;
    (void)n;
    (void)batch_span;
    (void)out;
    (void)probe;
    (void)faults;
    (void)tag;
    return hb_error_set(err, HB_ERR_NO_OPENCL, BUILT_WITHOUT_OPENCL);
}

int hb_opencl_reads_in_place(const hb_opencl *cl, const hb_msg *m, size_t n)
{
    (void)cl;
    (void)m;
    (void)n;
    return 0;
}

size_t hb_opencl_in_place_launch_bytes(const hb_opencl *cl, const hb_cost_terms *model)
{
    (void)cl;
    (void)model;
    return 0;
}

hb_status hb_opencl_collect(hb_opencl *cl, void **tag, hb_error_slot *err)
{
    (void)cl;
    *tag = NULL;
    return hb_error_set(err, HB_ERR_NO_OPENCL, BUILT_WITHOUT_OPENCL);
}

void hb_opencl_reset(hb_opencl *cl)
{
    (void)cl;
}

hb_status hb_opencl_hash(hb_opencl *cl, const hb_msg *m, size_t n, hb_digest *out,
                         hb_fault_state *faults, uint64_t *launches, hb_error_slot *err)
{
    (void)cl;
    (void)m;
    (void)n;
    (void)out;
    (void)faults;
    *launches = 0;
    return hb_error_set(err, HB_ERR_NO_OPENCL, BUILT_WITHOUT_OPENCL);
}

/* Shared with the device worker, which turns lane states into digests; a
 * real function here too, so the stub never changes a digest's bytes. */
void hb_states_to_digests(hb_digest *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t state[5];
        memcpy(state, out[i], sizeof state);
        hb_state_to_digest(state, out[i]);
    }
}

int hb_opencl_copies_bytes(const hb_opencl *cl)
{
    (void)cl;
    return 0;
}

const char *hb_opencl_describe(const hb_opencl *cl)
{
    (void)cl;
    return BUILT_WITHOUT_OPENCL;
}

const hb_device_info *hb_opencl_info(const hb_opencl *cl)
{
    (void)cl;
    static const hb_device_info none = {.type = HB_DEVICE_OTHER};
    return &none;
}

size_t hb_opencl_staging_bytes(const hb_opencl *cl)
{
    (void)cl;
    return 0;
}
