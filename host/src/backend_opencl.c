/*
 * backend_opencl.c - hashing batches on one OpenCL device.
 *
 * Owns: the device's OpenCL objects and the launch loop. For each launch
 * of a plan (plan.c) it maps the staging buffers (zero copy where the
 * device shares host memory, as pocl does), packs the lanes straight into
 * them (pack.c), runs kernels/sha1.cl and reads each lane's state back.
 * Between launches a message's state lives in its own output slot, as five
 * host-order words, and becomes digest bytes once the batch is done.
 * CPU devices run 16 lanes per work-item in uint16 vectors; other devices
 * run one lane per work-item over the same layout.
 * Must not: verify, retry or fall back (the engine does), or print.
 */
#include "backend_opencl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_errors.h"
#include "pack.h"
#include "plan.h"

extern const char hb_kernel_sha1_source[];
extern const size_t hb_kernel_sha1_source_size;

#define KERNEL_NAME "hb_sha1_blocks"
#define CPU_LOCAL_SIZE 8u
#define GPU_LOCAL_SIZE 64u

struct hb_opencl {
    hb_cl_device device;
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel;
    cl_mem blocks; /* staging_bytes of packed block words */
    cl_mem state;  /* 5 words per lane */
    cl_mem counts; /* 1 word per lane: blocks it runs */
    size_t staging_bytes;
    size_t lanes_max;
    unsigned lanes_per_item; /* 16 (CPU) or 1 */
    size_t local_size;
    char description[512];
};

/* Records the failed call and its error, and yields HB_ERR_DEVICE. */
static hb_status cl_failure(hb_error_slot *err, const hb_opencl *cl, const char *call,
                            cl_int code)
{
    return hb_error_set(err, HB_ERR_DEVICE, "%s failed: %s (%d) on OpenCL device %u:%u %s",
                        call, hb_cl_error_name(code), (int)code,
                        cl->device.info.platform_index, cl->device.info.device_index,
                        cl->device.info.name);
}

#define CL_CHECK(call_text, code)                                  \
    do {                                                           \
        if ((code) != CL_SUCCESS)                                  \
            return cl_failure(err, cl, (call_text), (code));       \
    } while (0)

static hb_status create_context(hb_opencl *cl, hb_error_slot *err)
{
    cl_int rc;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                     (cl_context_properties)cl->device.platform, 0};
    cl->context = clCreateContext(props, 1, &cl->device.device, NULL, NULL, &rc);
    CL_CHECK("clCreateContext", rc);
    cl->queue = clCreateCommandQueue(cl->context, cl->device.device, 0, &rc);
    CL_CHECK("clCreateCommandQueue", rc);
    return HB_OK;
}

static hb_status build_failure(hb_opencl *cl, cl_int rc, hb_error_slot *err)
{
    char log[HB_ERROR_TEXT_MAX - 256] = "";
    size_t size = 0;
    clGetProgramBuildInfo(cl->program, cl->device.device, CL_PROGRAM_BUILD_LOG,
                          sizeof log - 1, log, &size);
    log[sizeof log - 1] = '\0';
    return hb_error_set(err, HB_ERR_BUILD_FAILED,
                        "building kernels/sha1.cl for %s failed: %s (%d); build log:\n%s",
                        cl->device.info.name, hb_cl_error_name(rc), (int)rc, log);
}

static hb_status build_program(hb_opencl *cl, hb_error_slot *err)
{
    cl_int rc;
    const char *source = hb_kernel_sha1_source;
    size_t length = hb_kernel_sha1_source_size;
    cl->program = clCreateProgramWithSource(cl->context, 1, &source, &length, &rc);
    CL_CHECK("clCreateProgramWithSource", rc);
    char options[128];
    unsigned lanes = hb_fault_build_requested() ? 3u : cl->lanes_per_item;
    snprintf(options, sizeof options, "-DHB_LANES=%u -cl-std=CL1.2", lanes);
    rc = clBuildProgram(cl->program, 1, &cl->device.device, options, NULL, NULL);
    if (rc != CL_SUCCESS)
        return build_failure(cl, rc, err);
    cl->kernel = clCreateKernel(cl->program, KERNEL_NAME, &rc);
    CL_CHECK("clCreateKernel", rc);
    return HB_OK;
}

static hb_status create_buffers(hb_opencl *cl, hb_error_slot *err)
{
    cl_int rc;
    cl_mem_flags flags = CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR;
    cl->lanes_max = hb_plan_lanes_max(cl->staging_bytes);
    cl->blocks = clCreateBuffer(cl->context, flags, cl->staging_bytes, NULL, &rc);
    CL_CHECK("clCreateBuffer(blocks)", rc);
    cl->state = clCreateBuffer(cl->context, flags, cl->lanes_max * 5 * sizeof(uint32_t), NULL, &rc);
    CL_CHECK("clCreateBuffer(state)", rc);
    cl->counts = clCreateBuffer(cl->context, flags, cl->lanes_max * sizeof(uint32_t), NULL, &rc);
    CL_CHECK("clCreateBuffer(counts)", rc);
    return HB_OK;
}

static void choose_shape(hb_opencl *cl)
{
    int cpu = cl->device.info.type == HB_DEVICE_CPU;
    cl->lanes_per_item = cpu ? 16u : 1u;
    cl->local_size = cpu ? CPU_LOCAL_SIZE : GPU_LOCAL_SIZE;
    snprintf(cl->description, sizeof cl->description,
             "%s: %s [%u:%u], %u lane%s per work-item", cl->device.info.platform_name,
             cl->device.info.name, cl->device.info.platform_index,
             cl->device.info.device_index, cl->lanes_per_item,
             cl->lanes_per_item == 1 ? "" : "s");
}

static void fit_local_size(hb_opencl *cl)
{
    size_t most = 0;
    if (clGetKernelWorkGroupInfo(cl->kernel, cl->device.device, CL_KERNEL_WORK_GROUP_SIZE,
                                 sizeof most, &most, NULL) == CL_SUCCESS &&
        most > 0 && most < cl->local_size)
        cl->local_size = most;
}

hb_status hb_opencl_open(hb_opencl **out, const hb_cl_device *device, size_t staging_bytes,
                         hb_error_slot *err)
{
    *out = NULL;
    hb_opencl *cl = calloc(1, sizeof *cl);
    if (cl == NULL)
        return hb_error_set(err, HB_ERR_NO_MEMORY, "out of memory opening an OpenCL device");
    cl->device = *device;
    cl->staging_bytes = staging_bytes;
    choose_shape(cl);
    hb_status st = create_context(cl, err);
    if (st == HB_OK)
        st = build_program(cl, err);
    if (st == HB_OK)
        st = create_buffers(cl, err);
    if (st == HB_OK) {
        fit_local_size(cl);
        hb_digest warm;
        hb_msg empty = {"", 0};
        uint64_t launches = 0;
        st = hb_opencl_hash(cl, &empty, 1, &warm, NULL, &launches, err);
    }
    if (st != HB_OK) {
        hb_opencl_close(cl);
        return st;
    }
    *out = cl;
    return HB_OK;
}

void hb_opencl_close(hb_opencl *cl)
{
    if (cl == NULL)
        return;
    if (cl->queue)
        clFinish(cl->queue);
    if (cl->counts)
        clReleaseMemObject(cl->counts);
    if (cl->state)
        clReleaseMemObject(cl->state);
    if (cl->blocks)
        clReleaseMemObject(cl->blocks);
    if (cl->kernel)
        clReleaseKernel(cl->kernel);
    if (cl->program)
        clReleaseProgram(cl->program);
    if (cl->queue)
        clReleaseCommandQueue(cl->queue);
    if (cl->context)
        clReleaseContext(cl->context);
    free(cl);
}

const char *hb_opencl_describe(const hb_opencl *cl)
{
    return cl->description;
}

/* ---- one launch ------------------------------------------------------- */

typedef struct {
    const hb_launch *launch;
    const hb_lane_step *steps;
    size_t ngroups;
} launch_view;

static void pack_lanes(const launch_view *v, const hb_msg *m, hb_digest *out,
                       uint32_t *blocks, uint32_t *state, uint32_t *counts)
{
    size_t group_words = (size_t)v->launch->stride * HB_GROUP_BLOCK_WORDS;
    for (size_t l = 0; l < v->ngroups * HB_LANES; l++) {
        size_t g = l / HB_LANES;
        unsigned lane = (unsigned)(l % HB_LANES);
        uint32_t lane_state[5] = {0, 0, 0, 0, 0};
        counts[l] = 0;
        if (l < v->launch->nsteps) {
            const hb_lane_step *s = &v->steps[l];
            hb_pack_lane(blocks + g * group_words, lane, &m[s->msg], s->first_block,
                         s->nblocks);
            counts[l] = s->nblocks;
            if (s->first_block == 0)
                hb_state_initial(lane_state);
            else
                memcpy(lane_state, out[s->msg], sizeof lane_state);
        }
        hb_state_store_lane(state + g * HB_GROUP_STATE_WORDS, lane, lane_state);
    }
}

static hb_status map_for_writing(hb_opencl *cl, cl_mem buffer, size_t bytes, void **ptr,
                                 hb_error_slot *err)
{
    cl_int rc;
    *ptr = clEnqueueMapBuffer(cl->queue, buffer, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0,
                              bytes, 0, NULL, NULL, &rc);
    CL_CHECK("clEnqueueMapBuffer", rc);
    return HB_OK;
}

static hb_status stage_launch(hb_opencl *cl, const launch_view *v, const hb_msg *m,
                              hb_digest *out, hb_error_slot *err)
{
    size_t lanes = v->ngroups * HB_LANES;
    void *blocks = NULL, *state = NULL, *counts = NULL;
    hb_status st = map_for_writing(
        cl, cl->blocks, lanes * (size_t)v->launch->stride * HB_BLOCK_BYTES, &blocks, err);
    if (st == HB_OK)
        st = map_for_writing(cl, cl->state, lanes * 5 * sizeof(uint32_t), &state, err);
    if (st == HB_OK)
        st = map_for_writing(cl, cl->counts, lanes * sizeof(uint32_t), &counts, err);
    if (st == HB_OK)
        pack_lanes(v, m, out, blocks, state, counts);
    if (counts)
        clEnqueueUnmapMemObject(cl->queue, cl->counts, counts, 0, NULL, NULL);
    if (state)
        clEnqueueUnmapMemObject(cl->queue, cl->state, state, 0, NULL, NULL);
    if (blocks)
        clEnqueueUnmapMemObject(cl->queue, cl->blocks, blocks, 0, NULL, NULL);
    return st;
}

static hb_status enqueue_kernel(hb_opencl *cl, const launch_view *v, hb_fault_kind fault,
                                hb_error_slot *err)
{
    cl_uint stride = v->launch->stride, ngroups = (cl_uint)v->ngroups;
    cl_int rc = clSetKernelArg(cl->kernel, 0, sizeof(cl_mem), &cl->blocks);
    rc |= clSetKernelArg(cl->kernel, 1, sizeof(cl_mem), &cl->state);
    rc |= clSetKernelArg(cl->kernel, 2, sizeof(cl_mem), &cl->counts);
    rc |= clSetKernelArg(cl->kernel, 3, sizeof stride, &stride);
    rc |= clSetKernelArg(cl->kernel, 4, sizeof ngroups, &ngroups);
    CL_CHECK("clSetKernelArg", rc);
    size_t items = v->ngroups * (HB_LANES / cl->lanes_per_item);
    size_t local = cl->local_size;
    size_t global = (items + local - 1) / local * local;
    if (fault == HB_FAULT_ENQUEUE_ERROR)
        local = global + 1; /* a work-group larger than the launch: invalid */
    rc = clEnqueueNDRangeKernel(cl->queue, cl->kernel, 1, NULL, &global, &local, 0, NULL, NULL);
    CL_CHECK("clEnqueueNDRangeKernel", rc);
    return HB_OK;
}

static hb_status collect_states(hb_opencl *cl, const launch_view *v, hb_fault_kind fault,
                                hb_digest *out, hb_error_slot *err)
{
    cl_int rc;
    size_t bytes = v->ngroups * HB_GROUP_STATE_WORDS * sizeof(uint32_t);
    uint32_t *state = clEnqueueMapBuffer(cl->queue, cl->state, CL_TRUE, CL_MAP_READ, 0, bytes,
                                         0, NULL, NULL, &rc);
    CL_CHECK("clEnqueueMapBuffer(state)", rc);
    hb_fault_corrupt(fault, state, v->ngroups);
    for (size_t l = 0; l < v->launch->nsteps; l++) {
        uint32_t lane_state[5];
        hb_state_load_lane(state + l / HB_LANES * HB_GROUP_STATE_WORDS,
                           (unsigned)(l % HB_LANES), lane_state);
        memcpy(out[v->steps[l].msg], lane_state, sizeof lane_state);
    }
    rc = clEnqueueUnmapMemObject(cl->queue, cl->state, state, 0, NULL, NULL);
    CL_CHECK("clEnqueueUnmapMemObject(state)", rc);
    return HB_OK;
}

static hb_status run_launch(hb_opencl *cl, const hb_plan *plan, size_t index,
                            const hb_msg *m, hb_digest *out, hb_fault_state *faults,
                            hb_error_slot *err)
{
    const hb_launch *launch = &plan->launches[index];
    launch_view v = {launch, plan->steps + launch->first_step,
                     (launch->nsteps + HB_LANES - 1) / HB_LANES};
    hb_fault_kind fault = faults ? hb_fault_for_launch(faults) : HB_FAULT_NONE;
    hb_status st = stage_launch(cl, &v, m, out, err);
    if (st == HB_OK)
        st = enqueue_kernel(cl, &v, fault, err);
    if (st == HB_OK)
        st = collect_states(cl, &v, fault, out, err);
    return st;
}

static void states_to_digests(hb_digest *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t state[5];
        memcpy(state, out[i], sizeof state);
        hb_state_to_digest(state, out[i]);
    }
}

hb_status hb_opencl_hash(hb_opencl *cl, const hb_msg *m, size_t n, hb_digest *out,
                         hb_fault_state *faults, uint64_t *launches, hb_error_slot *err)
{
    hb_plan plan;
    if (hb_plan_build(&plan, m, n, cl->staging_bytes) != HB_OK)
        return hb_error_set(err, HB_ERR_NO_MEMORY, "out of memory planning %zu messages", n);
    hb_status st = HB_OK;
    for (size_t k = 0; k < plan.nlaunches && st == HB_OK; k++) {
        st = run_launch(cl, &plan, k, m, out, faults, err);
        ++*launches;
    }
    hb_plan_free(&plan);
    if (st != HB_OK) {
        clFinish(cl->queue);
        return st;
    }
    states_to_digests(out, n);
    return HB_OK;
}
