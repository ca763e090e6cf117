/*
 * backend_opencl.c - hashing on one OpenCL device, launches in flight.
 *
 * Owns: the device's OpenCL objects and its ring of staging slots. Three
 * in-order queues keep the stages apart: `write` fills a slot's device
 * buffers, `exec` runs kernels/sha1.cl once they are written, and `read`
 * brings the lane states back once the kernel is done. So while one launch
 * computes, the next is packed and the one before is read back; events
 * order the three. Only the device's worker thread calls in here; nothing
 * waits in a callback.
 * Two ways to fill a slot:
 *   mapped (devices sharing the host's memory: pocl, integrated GPUs):
 *     the slot's buffers are CL_MEM_ALLOC_HOST_PTR, mapped, packed and
 *     unmapped (zero copy); the states are mapped back;
 *   copied (discrete GPUs): each slot has a pinned host staging buffer
 *     (CL_MEM_ALLOC_HOST_PTR, mapped once at open and kept mapped) and
 *     device-only buffers; a launch packs into the pinned memory, writes
 *     exactly the bytes it uses to the device (non-blocking), and reads
 *     its states back into pinned memory, which collect waits for.
 * CPU devices run 16 lanes per work-item in uint16 vectors; GPUs run one
 * lane per work-item over the same layout. Where a CPU device shares the
 * host's memory (pocl), whole blocks are read in place: a buffer made
 * over the caller's bytes (no copy), with only the padded final blocks
 * packed (stage_in_place.c), and same-length batches run as uniform
 * launches; HASHBATCH_LAYOUT=packed turns that off. In test builds
 * (HB_FAULT_INJECTION), HASHBATCH_TEST_GPU_SHAPE=1 runs any device as a
 * discrete GPU: one lane per work-item, the GPU local size, packed and
 * copied, no uniform kernel; the installed library ignores it.
 * The program is built from the driver's binary kept in the program
 * cache (program_cache.h) where there is a good one, else from source,
 * and its binary stored for the next open.
 * Must not: verify, retry or fall back (the engine does), or print.
 */
#include "backend_opencl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_errors.h"
#include "pack.h"
#include "probe.h"
#include "program_cache.h"
#include "stage_in_place.h"

extern const char hb_kernel_sha1_source[];
extern const size_t hb_kernel_sha1_source_size;

#define KERNEL_NAME "hb_sha1_blocks"
#define IN_PLACE_KERNEL_NAME "hb_sha1_in_place"
#define UNIFORM_KERNEL_NAME "hb_sha1_uniform"
#define CPU_LOCAL_SIZE 8u
#define GPU_LOCAL_SIZE 64u
#define MAX_RING 8u

typedef struct {
    cl_mem blocks;                 /* staging_bytes of packed block words */
    cl_mem state;                  /* 5 words per lane */
    cl_mem counts;                 /* 1 word per lane: blocks it runs */
    cl_mem offsets, wholes, tails; /* in-place lane descriptors */
    cl_mem probe;                  /* HB_PROBE_WORDS: a probed launch's */
    /* copied slots: the pinned staging, mapped from open to close, laid
     * out as blocks, state, counts (the device buffers above hold no
     * host pointer) */
    cl_mem pinned;
    void *pinned_map;
    uint32_t *host_blocks, *host_state, *host_counts;
    /* while in flight: */
    int in_place;     /* read in place (else packed) */
    size_t uniform_n; /* a uniform launch's messages (0: a planned launch) */
    hb_digest *uniform_out;
    cl_mem out;  /* a uniform launch's buffer over its digests */
    cl_mem span; /* an in-place launch's buffer over the caller's bytes */
    cl_event read_done;
    uint32_t *read_map;
    const hb_plan *plan;
    size_t launch;
    hb_digest *states;
    hb_probe *probed; /* the launch's probe (NULL: none) */
    hb_fault_kind fault;
    void *tag;
} cl_slot;

struct hb_opencl {
    hb_cl_device device;
    cl_context context;
    cl_command_queue write_queue, exec_queue, read_queue;
    cl_program program;
    cl_kernel kernel;
    cl_kernel in_place_kernel; /* NULL where whole blocks are packed */
    cl_kernel uniform_kernel;  /* likewise */
    cl_mem no_probe;           /* the probe words of a launch not probed */
    size_t max_span;           /* widest buffer the device allows */
    cl_slot slots[MAX_RING];
    unsigned ring;
    unsigned oldest;    /* slot of the oldest launch in flight */
    unsigned in_flight; /* launches in flight: slots oldest.. */
    size_t staging_bytes;
    size_t lanes_max;
    unsigned lanes_per_item; /* 16 (CPU) or 1 */
    size_t local_size;
    int copies;    /* 1: packed in pinned staging and copied (discrete GPUs) */
    int gpu_shape; /* HASHBATCH_TEST_GPU_SHAPE forced the GPU shape */
    char description[512];
};

/* Records the failed call and its error, and yields HB_ERR_DEVICE. */
static hb_status cl_failure(hb_error_slot *err, const hb_opencl *cl, const char *call, cl_int code)
{
    return hb_error_set(err, HB_ERR_DEVICE, "%s failed: %s (%d) on OpenCL device %u:%u %s", call,
                        hb_cl_error_name(code), (int)code, cl->device.info.platform_index,
                        cl->device.info.device_index, cl->device.info.name);
}

#define CL_CHECK(call_text, code)                                                                  \
    do {                                                                                           \
        if ((code) != CL_SUCCESS)                                                                  \
            return cl_failure(err, cl, (call_text), (code));                                       \
    } while (0)

/* ---- opening and closing ------------------------------------------------ */

static hb_status create_queues(hb_opencl *cl, hb_error_slot *err)
{
    cl_int rc;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                     (cl_context_properties)cl->device.platform, 0};
    cl->context = clCreateContext(props, 1, &cl->device.device, NULL, NULL, &rc);
    CL_CHECK("clCreateContext", rc);
    cl_command_queue *queues[] = {&cl->write_queue, &cl->exec_queue, &cl->read_queue};
    for (size_t i = 0; i < 3; i++) {
        *queues[i] = clCreateCommandQueue(cl->context, cl->device.device, 0, &rc);
        CL_CHECK("clCreateCommandQueue", rc);
    }
    return HB_OK;
}

static hb_status build_failure(hb_opencl *cl, cl_int rc, hb_error_slot *err)
{
    char log[HB_ERROR_TEXT_MAX - 256] = "";
    clGetProgramBuildInfo(cl->program, cl->device.device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log,
                          NULL);
    log[sizeof log - 1] = '\0';
    return hb_error_set(err, HB_ERR_BUILD_FAILED,
                        "building kernels/sha1.cl for %s failed: %s (%d); build log:\n%s",
                        cl->device.info.name, hb_cl_error_name(rc), (int)rc, log);
}

/* The program cache's file for this device and these options (0: none,
 * or the build is to fail or to be broken on purpose and must really be
 * built, and not kept). */
static int program_cache_file(const hb_opencl *cl, const char *options,
                              char key[HB_PROGRAM_KEY_HEX], char *path, size_t size)
{
    unsigned which;
    if (hb_fault_build_requested() || hb_fault_device_break(&which) != HB_DEVICE_BREAK_NONE)
        return 0;
    const hb_device_info *d = &cl->device.info;
    const char *parts[] = {d->platform_name, d->name,           d->vendor,
                           d->version,       d->driver_version, options};
    hb_program_key(key, parts, sizeof parts / sizeof parts[0], hb_kernel_sha1_source,
                   hb_kernel_sha1_source_size);
    return hb_program_cache_path(path, size, key);
}

/* The program from the cached binary at path, built; 0 (no program) when
 * there is none or the driver refuses it: then the source is built. */
static int build_from_cache(hb_opencl *cl, const char *options, const char *key, const char *path)
{
    unsigned char *binary;
    size_t len;
    if (!hb_program_cache_load(path, key, &binary, &len))
        return 0;
    cl_int rc, status = CL_SUCCESS;
    const unsigned char *bins[] = {binary};
    cl->program =
        clCreateProgramWithBinary(cl->context, 1, &cl->device.device, &len, bins, &status, &rc);
    free(binary);
    if (rc == CL_SUCCESS && status == CL_SUCCESS)
        rc = clBuildProgram(cl->program, 1, &cl->device.device, options, NULL, NULL);
    if ((rc != CL_SUCCESS || status != CL_SUCCESS) && cl->program != NULL) {
        clReleaseProgram(cl->program);
        cl->program = NULL;
    }
    return cl->program != NULL;
}

/* The built program's binary into the cache, for the next open. */
static void store_in_cache(hb_opencl *cl, const char *key, const char *path)
{
    size_t len = 0;
    if (clGetProgramInfo(cl->program, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) !=
            CL_SUCCESS ||
        len == 0 || len > HB_PROGRAM_CACHE_MAX_BYTES)
        return;
    unsigned char *binary = malloc(len);
    unsigned char *bins[] = {binary};
    if (binary != NULL &&
        clGetProgramInfo(cl->program, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS)
        (void)hb_program_cache_store(path, key, binary, len);
    free(binary);
}

static hb_status build_from_source(hb_opencl *cl, const char *options, hb_error_slot *err)
{
    cl_int rc;
    const char *source = hb_kernel_sha1_source;
    size_t length = hb_kernel_sha1_source_size;
    cl->program = clCreateProgramWithSource(cl->context, 1, &source, &length, &rc);
    CL_CHECK("clCreateProgramWithSource", rc);
    rc = clBuildProgram(cl->program, 1, &cl->device.device, options, NULL, NULL);
    if (rc != CL_SUCCESS)
        return build_failure(cl, rc, err);
    return HB_OK;
}

/* A test build's kernel broken on purpose (hb_testing_set_device_break):
 * its define, or "" for none. */
static const char *break_option(char *text, size_t size)
{
    unsigned which;
    switch (hb_fault_device_break(&which)) {
    case HB_DEVICE_BREAK_LANE:
        snprintf(text, size, " -DHB_BREAK_LANE=%uu", which);
        return text;
    case HB_DEVICE_BREAK_KERNEL:
        snprintf(text, size, " -DHB_BREAK_KERNEL=%u", which);
        return text;
    case HB_DEVICE_BREAK_TAIL:
        return which == 0 ? " -DHB_BREAK_PADDING" : "";
    default:
        return "";
    }
}

static hb_status build_program(hb_opencl *cl, hb_error_slot *err)
{
    char options[192], broken[64];
    unsigned lanes = hb_fault_build_requested() ? 3u : cl->lanes_per_item;
    snprintf(options, sizeof options, "-DHB_LANES=%u%s%s -cl-std=CL1.2", lanes,
             cl->max_span > 0 ? " -DHB_IN_PLACE" : "", break_option(broken, sizeof broken));
    char key[HB_PROGRAM_KEY_HEX], path[4096];
    int cached = program_cache_file(cl, options, key, path, sizeof path);
    if (!cached || !build_from_cache(cl, options, key, path)) {
        hb_status st = build_from_source(cl, options, err);
        if (st != HB_OK)
            return st;
        if (cached)
            store_in_cache(cl, key, path);
    }
    cl_int rc;
    cl->kernel = clCreateKernel(cl->program, KERNEL_NAME, &rc);
    CL_CHECK("clCreateKernel", rc);
    if (cl->max_span > 0) {
        cl->in_place_kernel = clCreateKernel(cl->program, IN_PLACE_KERNEL_NAME, &rc);
        CL_CHECK("clCreateKernel(in place)", rc);
        cl->uniform_kernel = clCreateKernel(cl->program, UNIFORM_KERNEL_NAME, &rc);
        CL_CHECK("clCreateKernel(uniform)", rc);
    }
    return HB_OK;
}

/* Bytes of a copied slot's pinned staging, and where its parts start. */
static size_t pinned_state_offset(const hb_opencl *cl)
{
    return (cl->staging_bytes + 63u) / 64u * 64u;
}

static size_t pinned_counts_offset(const hb_opencl *cl)
{
    return pinned_state_offset(cl) + cl->lanes_max * 5 * sizeof(uint32_t);
}

static size_t pinned_bytes(const hb_opencl *cl)
{
    return pinned_counts_offset(cl) + cl->lanes_max * sizeof(uint32_t);
}

/* A copied slot's pinned staging, mapped now and kept mapped until close:
 * launches pack into it and read their states back into it. */
static hb_status create_pinned(hb_opencl *cl, cl_slot *slot, hb_error_slot *err)
{
    cl_int rc;
    slot->pinned = clCreateBuffer(cl->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                                  pinned_bytes(cl), NULL, &rc);
    CL_CHECK("clCreateBuffer(pinned staging)", rc);
    slot->pinned_map =
        clEnqueueMapBuffer(cl->write_queue, slot->pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                           pinned_bytes(cl), 0, NULL, NULL, &rc);
    CL_CHECK("clEnqueueMapBuffer(pinned staging)", rc);
    uint8_t *base = slot->pinned_map;
    slot->host_blocks = (uint32_t *)(void *)base;
    slot->host_state = (uint32_t *)(void *)(base + pinned_state_offset(cl));
    slot->host_counts = (uint32_t *)(void *)(base + pinned_counts_offset(cl));
    return HB_OK;
}

static hb_status create_slot(hb_opencl *cl, cl_slot *slot, hb_error_slot *err)
{
    cl_int rc;
    /* copied: device-only buffers; mapped: buffers the host maps */
    cl_mem_flags flags = CL_MEM_READ_WRITE | (cl->copies ? 0 : CL_MEM_ALLOC_HOST_PTR);
    if (cl->copies) {
        hb_status st = create_pinned(cl, slot, err);
        if (st != HB_OK)
            return st;
    }
    slot->blocks = clCreateBuffer(cl->context, flags, cl->staging_bytes, NULL, &rc);
    CL_CHECK("clCreateBuffer(blocks)", rc);
    slot->state =
        clCreateBuffer(cl->context, flags, cl->lanes_max * 5 * sizeof(uint32_t), NULL, &rc);
    CL_CHECK("clCreateBuffer(state)", rc);
    slot->counts = clCreateBuffer(cl->context, flags, cl->lanes_max * sizeof(uint32_t), NULL, &rc);
    CL_CHECK("clCreateBuffer(counts)", rc);
    slot->probe = clCreateBuffer(cl->context, CL_MEM_READ_WRITE, HB_PROBE_WORDS * sizeof(uint32_t),
                                 NULL, &rc);
    CL_CHECK("clCreateBuffer(probe)", rc);
    if (cl->max_span == 0)
        return HB_OK;
    cl_mem *lane_words[] = {&slot->offsets, &slot->wholes};
    for (size_t i = 0; i < 2; i++) {
        *lane_words[i] =
            clCreateBuffer(cl->context, flags, cl->lanes_max * sizeof(uint32_t), NULL, &rc);
        CL_CHECK("clCreateBuffer(lane descriptors)", rc);
    }
    slot->tails = clCreateBuffer(cl->context, flags, cl->lanes_max * HB_TAIL_BYTES, NULL, &rc);
    CL_CHECK("clCreateBuffer(tails)", rc);
    return HB_OK;
}

/* The probe words every launch not probed gets: no group watched. */
static hb_status create_no_probe(hb_opencl *cl, hb_error_slot *err)
{
    hb_probe none;
    hb_probe_clear(&none);
    cl_int rc;
    cl->no_probe = clCreateBuffer(cl->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                  HB_PROBE_WORDS * sizeof(uint32_t), none.words, &rc);
    CL_CHECK("clCreateBuffer(no probe)", rc);
    return HB_OK;
}

static hb_status create_slots(hb_opencl *cl, hb_error_slot *err)
{
    hb_status made = create_no_probe(cl, err);
    if (made != HB_OK)
        return made;
    cl->lanes_max = hb_plan_lanes_max(cl->staging_bytes);
    for (unsigned i = 0; i < cl->ring; i++) {
        hb_status st = create_slot(cl, &cl->slots[i], err);
        if (st != HB_OK)
            return st;
    }
    return HB_OK;
}

/* The widest in-place buffer: 0 (pack everything) unless the device is a
 * CPU device sharing host memory and HASHBATCH_LAYOUT is not "packed". */
static size_t in_place_limit(const hb_opencl *cl)
{
    const char *layout = getenv("HASHBATCH_LAYOUT");
    cl_bool unified = CL_FALSE;
    cl_ulong max_alloc = 0;
    if (cl->device.info.type != HB_DEVICE_CPU || (layout && strcmp(layout, "packed") == 0))
        return 0;
    if (clGetDeviceInfo(cl->device.device, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified,
                        NULL) != CL_SUCCESS ||
        clGetDeviceInfo(cl->device.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc,
                        &max_alloc, NULL) != CL_SUCCESS ||
        !unified)
        return 0;
    return max_alloc > UINT32_MAX ? UINT32_MAX : (size_t)max_alloc;
}

/* HASHBATCH_TEST_GPU_SHAPE=1: run this device as a discrete GPU. Read
 * only in test builds; the installed library never looks. */
static int gpu_shape_forced(void)
{
#ifdef HB_FAULT_INJECTION
    const char *forced = getenv("HASHBATCH_TEST_GPU_SHAPE");
    return forced != NULL && strcmp(forced, "1") == 0;
#else
    return 0;
#endif
}

/* Whether the device reads host memory directly (pocl, integrated GPUs):
 * then mapping a CL_MEM_ALLOC_HOST_PTR buffer copies nothing. */
static int shares_host_memory(const hb_opencl *cl)
{
    cl_bool unified = CL_FALSE;
    return clGetDeviceInfo(cl->device.device, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified,
                           &unified, NULL) == CL_SUCCESS &&
           unified;
}

static const char *layout_text(const hb_opencl *cl)
{
    if (cl->max_span > 0)
        return "whole blocks read in place";
    return cl->copies ? "blocks packed in pinned staging and copied to the device"
                      : "blocks packed in mapped memory";
}

static void choose_shape(hb_opencl *cl)
{
    cl->gpu_shape = gpu_shape_forced();
    int cpu = cl->device.info.type == HB_DEVICE_CPU && !cl->gpu_shape;
    cl->lanes_per_item = cpu ? 16u : 1u;
    cl->local_size = cpu ? CPU_LOCAL_SIZE : GPU_LOCAL_SIZE;
    cl->max_span = cpu ? in_place_limit(cl) : 0;
    cl->copies = cl->gpu_shape || (!cpu && !shares_host_memory(cl));
    snprintf(cl->description, sizeof cl->description,
             "%s: %s [%u:%u], %u lane%s per work-item, %s, %u launches in flight%s",
             cl->device.info.platform_name, cl->device.info.name, cl->device.info.platform_index,
             cl->device.info.device_index, cl->lanes_per_item, cl->lanes_per_item == 1 ? "" : "s",
             layout_text(cl), cl->ring, cl->gpu_shape ? ", GPU shape (test switch)" : "");
}

static void fit_local_size(hb_opencl *cl)
{
    size_t most = 0;
    if (clGetKernelWorkGroupInfo(cl->kernel, cl->device.device, CL_KERNEL_WORK_GROUP_SIZE,
                                 sizeof most, &most, NULL) == CL_SUCCESS &&
        most > 0 && most < cl->local_size)
        cl->local_size = most;
}

/* warm_up: a launch of each kernel the device will run, on one work-group
 * and on several (pocl builds a kernel again for each such shape, seconds
 * on a fresh kernel cache), so neither the calibration nor the first
 * batch is charged for a build: one empty message, many empty ones (a
 * uniform launch), and many of two lengths (a planned one). */
static hb_status warm_up(hb_opencl *cl, hb_error_slot *err)
{
    enum { WARM_MAX = 2 * HB_LANES * GPU_LOCAL_SIZE + 1 };
    static const char byte[1] = {'w'};
    hb_msg msgs[WARM_MAX];
    hb_digest digests[WARM_MAX];
    size_t several = 2 * HB_LANES * cl->local_size + 1;
    if (several > WARM_MAX)
        several = WARM_MAX;
    uint64_t launches = 0;
    for (size_t i = 0; i < several; i++)
        msgs[i] = (hb_msg){byte, 0};
    hb_status st = hb_opencl_hash(cl, msgs, 1, digests, NULL, &launches, err);
    if (st == HB_OK)
        st = hb_opencl_hash(cl, msgs, several, digests, NULL, &launches, err);
    for (size_t i = 1; i < several; i += 2)
        msgs[i].len = 1;
    if (st == HB_OK)
        st = hb_opencl_hash(cl, msgs, several, digests, NULL, &launches, err);
    return st;
}

hb_status hb_opencl_open(hb_opencl **out, const hb_cl_device *device, size_t staging_bytes,
                         unsigned ring, hb_error_slot *err)
{
    *out = NULL;
    hb_opencl *cl = calloc(1, sizeof *cl);
    if (cl == NULL)
        return hb_error_set(err, HB_ERR_NO_MEMORY, "out of memory opening an OpenCL device");
    cl->device = *device;
    cl->staging_bytes = staging_bytes;
    cl->ring = ring < 1 ? 1 : (ring > MAX_RING ? MAX_RING : ring);
    choose_shape(cl);
    hb_status st = create_queues(cl, err);
    if (st == HB_OK)
        st = build_program(cl, err);
    if (st == HB_OK)
        st = create_slots(cl, err);
    if (st == HB_OK) {
        fit_local_size(cl);
        st = warm_up(cl, err);
    }
    if (st != HB_OK) {
        hb_opencl_close(cl);
        return st;
    }
    *out = cl;
    return HB_OK;
}

static void release_slot(hb_opencl *cl, cl_slot *slot)
{
    if (slot->pinned_map != NULL) {
        clEnqueueUnmapMemObject(cl->write_queue, slot->pinned, slot->pinned_map, 0, NULL, NULL);
        clFinish(cl->write_queue);
    }
    if (slot->pinned)
        clReleaseMemObject(slot->pinned);
    cl_mem extra[] = {slot->offsets, slot->wholes, slot->tails, slot->probe};
    for (size_t i = 0; i < 4; i++)
        if (extra[i])
            clReleaseMemObject(extra[i]);
    if (slot->counts)
        clReleaseMemObject(slot->counts);
    if (slot->state)
        clReleaseMemObject(slot->state);
    if (slot->blocks)
        clReleaseMemObject(slot->blocks);
}

void hb_opencl_close(hb_opencl *cl)
{
    if (cl == NULL)
        return;
    hb_opencl_reset(cl);
    for (unsigned i = 0; i < cl->ring; i++)
        release_slot(cl, &cl->slots[i]);
    if (cl->kernel)
        clReleaseKernel(cl->kernel);
    if (cl->in_place_kernel)
        clReleaseKernel(cl->in_place_kernel);
    if (cl->uniform_kernel)
        clReleaseKernel(cl->uniform_kernel);
    if (cl->no_probe)
        clReleaseMemObject(cl->no_probe);
    if (cl->program)
        clReleaseProgram(cl->program);
    cl_command_queue queues[] = {cl->write_queue, cl->exec_queue, cl->read_queue};
    for (size_t i = 0; i < 3; i++)
        if (queues[i])
            clReleaseCommandQueue(queues[i]);
    if (cl->context)
        clReleaseContext(cl->context);
    free(cl);
}

const char *hb_opencl_describe(const hb_opencl *cl)
{
    return cl->description;
}

const hb_device_info *hb_opencl_info(const hb_opencl *cl)
{
    return &cl->device.info;
}

size_t hb_opencl_staging_bytes(const hb_opencl *cl)
{
    return cl->staging_bytes;
}

int hb_opencl_copies_bytes(const hb_opencl *cl)
{
    return cl->copies;
}

unsigned hb_opencl_free_slots(const hb_opencl *cl)
{
    return cl->ring - cl->in_flight;
}

unsigned hb_opencl_in_flight(const hb_opencl *cl)
{
    return cl->in_flight;
}

/* ---- one launch: stage, run, read back --------------------------------- */

typedef struct {
    const hb_launch *launch;
    const hb_lane_step *steps;
    size_t ngroups;
} launch_view;

static launch_view view_of(const hb_plan *plan, size_t index)
{
    const hb_launch *launch = &plan->launches[index];
    return (launch_view){launch, plan->steps + launch->first_step,
                         (launch->nsteps + HB_LANES - 1) / HB_LANES};
}

/* Each lane's starting state: SHA-1's initial one, or where the message's
 * previous launch left it (zeros for unused lanes); a test build's
 * HB_FAULT_DEVICE_CARRY (break_carry) loads a carried one wrong. */
static void fill_states(const launch_view *v, const hb_digest *states, uint32_t *state,
                        int break_carry)
{
    size_t lanes = v->ngroups * HB_LANES;
    for (size_t l = 0; l < lanes; l++) {
        uint32_t lane_state[5] = {0, 0, 0, 0, 0};
        if (l < v->launch->nsteps) {
            const hb_lane_step *s = &v->steps[l];
            if (s->first_block == 0)
                hb_state_initial(lane_state);
            else
                memcpy(lane_state, states[s->msg], sizeof lane_state);
            if (break_carry && s->first_block > 0)
                lane_state[2] ^= 1u;
        }
        hb_state_store_lane(state + l / HB_LANES * HB_GROUP_STATE_WORDS, (unsigned)(l % HB_LANES),
                            lane_state);
    }
}

static void pack_lanes(const launch_view *v, const hb_msg *m, uint32_t *blocks, uint32_t *counts)
{
    size_t group_words = (size_t)v->launch->stride * HB_GROUP_BLOCK_WORDS;
    for (size_t g = 0; g < v->ngroups; g++) {
        hb_pack_lane_desc lanes[HB_LANES];
        for (unsigned lane = 0; lane < HB_LANES; lane++) {
            size_t l = g * HB_LANES + lane;
            lanes[lane] = (hb_pack_lane_desc){NULL, 0, 0};
            if (l < v->launch->nsteps) {
                const hb_lane_step *s = &v->steps[l];
                lanes[lane] = (hb_pack_lane_desc){&m[s->msg], s->first_block, s->nblocks};
            }
            counts[l] = lanes[lane].nblocks;
        }
        hb_pack_group(blocks + g * group_words, lanes);
    }
}

typedef struct {
    cl_mem buffer;
    size_t bytes;
    void *ptr;
} mapping;

enum { MAP_STATE, MAP_COUNTS, MAP_BLOCKS, MAP_OFFSETS = MAP_BLOCKS, MAP_WHOLES, MAP_TAILS };

/* Maps the n buffers for writing, whole, on the write queue. */
static cl_int map_for_writing(hb_opencl *cl, mapping *maps, size_t n)
{
    cl_int rc = CL_SUCCESS;
    for (size_t i = 0; i < n && rc == CL_SUCCESS; i++)
        maps[i].ptr = clEnqueueMapBuffer(cl->write_queue, maps[i].buffer, CL_TRUE,
                                         CL_MAP_WRITE_INVALIDATE_REGION, 0, maps[i].bytes, 0, NULL,
                                         NULL, &rc);
    return rc;
}

/* Unmaps what was mapped; unmapped[i] is the event the kernel waits for. */
static void unmap_all(hb_opencl *cl, mapping *maps, size_t n, cl_event *unmapped)
{
    for (size_t i = 0; i < n; i++) {
        unmapped[i] = NULL;
        if (maps[i].ptr != NULL)
            clEnqueueUnmapMemObject(cl->write_queue, maps[i].buffer, maps[i].ptr, 0, NULL,
                                    &unmapped[i]);
    }
    clFlush(cl->write_queue);
}

#define MAX_MAPS 5

static hb_status stage_packed(hb_opencl *cl, cl_slot *slot, const launch_view *v, const hb_msg *m,
                              const hb_digest *states, cl_event *unmapped, hb_error_slot *err)
{
    size_t lanes = v->ngroups * HB_LANES;
    mapping maps[3] = {
        [MAP_STATE] = {slot->state, lanes * 5 * sizeof(uint32_t), NULL},
        [MAP_COUNTS] = {slot->counts, lanes * sizeof(uint32_t), NULL},
        [MAP_BLOCKS] = {slot->blocks, lanes * (size_t)v->launch->stride * HB_BLOCK_BYTES, NULL},
    };
    cl_int rc = map_for_writing(cl, maps, 3);
    if (rc == CL_SUCCESS) {
        fill_states(v, states, maps[MAP_STATE].ptr, slot->fault == HB_FAULT_DEVICE_CARRY);
        pack_lanes(v, m, maps[MAP_BLOCKS].ptr, maps[MAP_COUNTS].ptr);
    }
    unmap_all(cl, maps, 3, unmapped);
    CL_CHECK("clEnqueueMapBuffer(staging)", rc);
    return HB_OK;
}

/* Packs into the slot's pinned staging and writes exactly the bytes the
 * launch uses to the device, without waiting; the kernel waits for the
 * three writes (written[0..3)). */
static hb_status stage_copied(hb_opencl *cl, cl_slot *slot, const launch_view *v, const hb_msg *m,
                              const hb_digest *states, cl_event *written, hb_error_slot *err)
{
    size_t lanes = v->ngroups * HB_LANES;
    fill_states(v, states, slot->host_state, slot->fault == HB_FAULT_DEVICE_CARRY);
    pack_lanes(v, m, slot->host_blocks, slot->host_counts);
    mapping writes[3] = {
        [MAP_STATE] = {slot->state, lanes * 5 * sizeof(uint32_t), slot->host_state},
        [MAP_COUNTS] = {slot->counts, lanes * sizeof(uint32_t), slot->host_counts},
        [MAP_BLOCKS] = {slot->blocks, lanes * (size_t)v->launch->stride * HB_BLOCK_BYTES,
                        slot->host_blocks},
    };
    cl_int rc = CL_SUCCESS;
    for (size_t i = 0; i < 3 && rc == CL_SUCCESS; i++)
        rc = clEnqueueWriteBuffer(cl->write_queue, writes[i].buffer, CL_FALSE, 0, writes[i].bytes,
                                  writes[i].ptr, 0, NULL, &written[i]);
    clFlush(cl->write_queue);
    CL_CHECK("clEnqueueWriteBuffer(staging)", rc);
    return HB_OK;
}

static hb_status stage_in_place(hb_opencl *cl, cl_slot *slot, const launch_view *v, const hb_msg *m,
                                const hb_digest *states, const hb_span *span, cl_event *unmapped,
                                hb_error_slot *err)
{
    size_t lanes = v->ngroups * HB_LANES;
    mapping maps[MAX_MAPS] = {
        [MAP_STATE] = {slot->state, lanes * 5 * sizeof(uint32_t), NULL},
        [MAP_COUNTS] = {slot->counts, lanes * sizeof(uint32_t), NULL},
        [MAP_OFFSETS] = {slot->offsets, lanes * sizeof(uint32_t), NULL},
        [MAP_WHOLES] = {slot->wholes, lanes * sizeof(uint32_t), NULL},
        [MAP_TAILS] = {slot->tails, lanes * HB_TAIL_BYTES, NULL},
    };
    cl_int rc = map_for_writing(cl, maps, MAX_MAPS);
    if (rc == CL_SUCCESS) {
        fill_states(v, states, maps[MAP_STATE].ptr, slot->fault == HB_FAULT_DEVICE_CARRY);
        hb_in_place_lanes out = {maps[MAP_OFFSETS].ptr, maps[MAP_WHOLES].ptr, maps[MAP_COUNTS].ptr,
                                 maps[MAP_TAILS].ptr};
        hb_in_place_fill(v->steps, v->launch->nsteps, m, span, &out);
    }
    unmap_all(cl, maps, MAX_MAPS, unmapped);
    CL_CHECK("clEnqueueMapBuffer(lane descriptors)", rc);
    if (span->bytes == 0)
        return HB_OK; /* only final blocks: the kernel reads no span */
    /* the device reads the caller's bytes where they are; it never writes */
    slot->span = clCreateBuffer(cl->context, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, span->bytes,
                                (void *)(uintptr_t)span->base, &rc);
    CL_CHECK("clCreateBuffer(in place)", rc);
    return HB_OK;
}

/* Stages the launch: in place where the device can read the caller's
 * bytes and they lie within one buffer's reach, else packed (a launch
 * planned for mixed lengths must not need packing: see
 * hb_opencl_reads_in_place). */
static hb_status stage_slot(hb_opencl *cl, cl_slot *slot, const launch_view *v, const hb_msg *m,
                            const hb_digest *states, cl_event *unmapped, hb_error_slot *err)
{
    hb_span span;
    if (cl->max_span > 0 && hb_in_place_span(v->steps, v->launch->nsteps, m, cl->max_span, &span)) {
        slot->in_place = 1;
        return stage_in_place(cl, slot, v, m, states, &span, unmapped, err);
    }
    if (v->ngroups * HB_LANES * (size_t)v->launch->stride * HB_BLOCK_BYTES > cl->staging_bytes)
        return hb_error_set(err, HB_ERR_INTERNAL,
                            "a launch of %zu lanes x %u blocks does not "
                            "fit the staging buffer",
                            v->ngroups * HB_LANES, (unsigned)v->launch->stride);
    if (cl->copies)
        return stage_copied(cl, slot, v, m, states, unmapped, err);
    return stage_packed(cl, slot, v, m, states, unmapped, err);
}

/* Launches are sized by the device's cost model: long enough that the
 * fixed cost of a launch is at most a twentieth of it (its work, at the
 * model's rates, this many times the fixed cost). Launches that read in
 * place, and uniform ones, stage no blocks, so nothing else bounds them
 * but their lanes; without a model (the calibration, before there is
 * one) they hold what a staging buffer would. */
#define LAUNCH_WORK_PER_FIXED 19.0

/* The work (ns at the model's rates) a launch should carry; 0 when the
 * model says nothing (NULL, or no fixed cost). */
static double launch_work_ns(const hb_cost_terms *model)
{
    return model != NULL && model->fixed_ns > 0 ? LAUNCH_WORK_PER_FIXED * model->fixed_ns : 0;
}

size_t hb_opencl_in_place_launch_bytes(const hb_opencl *cl, const hb_cost_terms *model)
{
    double work = launch_work_ns(model);
    if (work <= 0 || !(model->ns_per_byte > 0))
        return cl->staging_bytes;
    double bytes = work / model->ns_per_byte;
    return bytes < (double)cl->staging_bytes ? cl->staging_bytes
           : bytes > (double)(SIZE_MAX / 2)  ? SIZE_MAX / 2
                                             : (size_t)bytes;
}

int hb_opencl_reads_in_place(const hb_opencl *cl, const hb_msg *m, size_t n)
{
    if (cl->max_span == 0 || n == 0)
        return 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (m[i].len < HB_BLOCK_BYTES)
            continue;
        uintptr_t start = (uintptr_t)m[i].data, end = start + m[i].len;
        lo = start < lo ? start : lo;
        hi = end > hi ? end : hi;
    }
    return hi == 0 || hi - (lo - lo % 4096u) <= cl->max_span;
}

static void release_events(cl_event *events, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (events[i] != NULL)
            clReleaseEvent(events[i]);
}

/* The probe words the launch's kernel gets. */
static const cl_mem *probe_buffer(const hb_opencl *cl, const cl_slot *slot)
{
    return slot->probed != NULL ? &slot->probe : &cl->no_probe;
}

/* A probed launch's words go to the device before its kernel runs
 * (*written: the event it waits for; NULL when not probed). */
static cl_int write_probe(hb_opencl *cl, cl_slot *slot, cl_event *written)
{
    *written = NULL;
    if (slot->probed == NULL)
        return CL_SUCCESS;
    cl_int rc =
        clEnqueueWriteBuffer(cl->write_queue, slot->probe, CL_FALSE, 0, sizeof slot->probed->words,
                             slot->probed->words, 0, NULL, written);
    clFlush(cl->write_queue);
    return rc;
}

/* ... and the states the kernel wrote come back, after *read_done (which
 * then marks both: the read queue runs in order). */
static cl_int read_probe(hb_opencl *cl, cl_slot *slot, cl_event kernel_done)
{
    if (slot->probed == NULL)
        return CL_SUCCESS;
    cl_event read = NULL;
    size_t offset = HB_PROBE_IN_WORDS * sizeof(uint32_t);
    cl_int rc = clEnqueueReadBuffer(
        cl->read_queue, slot->probe, CL_FALSE, offset, sizeof slot->probed->words - offset,
        slot->probed->words + HB_PROBE_IN_WORDS, 1, &kernel_done, &read);
    if (rc != CL_SUCCESS)
        return rc;
    release_events(&slot->read_done, 1);
    slot->read_done = read;
    return CL_SUCCESS;
}

static cl_int set_packed_args(hb_opencl *cl, cl_slot *slot, const launch_view *v)
{
    cl_uint stride = v->launch->stride, ngroups = (cl_uint)v->ngroups;
    cl_int rc = clSetKernelArg(cl->kernel, 0, sizeof(cl_mem), &slot->blocks);
    rc |= clSetKernelArg(cl->kernel, 1, sizeof(cl_mem), &slot->state);
    rc |= clSetKernelArg(cl->kernel, 2, sizeof(cl_mem), &slot->counts);
    rc |= clSetKernelArg(cl->kernel, 3, sizeof stride, &stride);
    rc |= clSetKernelArg(cl->kernel, 4, sizeof ngroups, &ngroups);
    rc |= clSetKernelArg(cl->kernel, 5, sizeof(cl_mem), probe_buffer(cl, slot));
    return rc;
}

static cl_int set_in_place_args(hb_opencl *cl, cl_slot *slot, const launch_view *v)
{
    cl_uint ngroups = (cl_uint)v->ngroups;
    cl_kernel k = cl->in_place_kernel;
    /* with no whole block in the launch any buffer will do: none is read */
    cl_mem bytes = slot->span != NULL ? slot->span : slot->tails;
    cl_int rc = clSetKernelArg(k, 0, sizeof(cl_mem), &bytes);
    rc |= clSetKernelArg(k, 1, sizeof(cl_mem), &slot->offsets);
    rc |= clSetKernelArg(k, 2, sizeof(cl_mem), &slot->wholes);
    rc |= clSetKernelArg(k, 3, sizeof(cl_mem), &slot->tails);
    rc |= clSetKernelArg(k, 4, sizeof(cl_mem), &slot->state);
    rc |= clSetKernelArg(k, 5, sizeof(cl_mem), &slot->counts);
    rc |= clSetKernelArg(k, 6, sizeof ngroups, &ngroups);
    rc |= clSetKernelArg(k, 7, sizeof(cl_mem), probe_buffer(cl, slot));
    return rc;
}

static hb_status run_kernel(hb_opencl *cl, cl_slot *slot, const launch_view *v, cl_event *unmapped,
                            cl_uint nunmapped, cl_event *kernel_done, hb_error_slot *err)
{
    cl_int rc = slot->in_place ? set_in_place_args(cl, slot, v) : set_packed_args(cl, slot, v);
    CL_CHECK("clSetKernelArg", rc);
    size_t items = v->ngroups * (HB_LANES / cl->lanes_per_item);
    size_t local = cl->local_size;
    size_t global = (items + local - 1) / local * local;
    if (slot->fault == HB_FAULT_ENQUEUE_ERROR || slot->fault == HB_FAULT_DEVICE_LOST)
        local = global + 1; /* a work-group larger than the launch: invalid */
    rc = clEnqueueNDRangeKernel(cl->exec_queue, slot->in_place ? cl->in_place_kernel : cl->kernel,
                                1, NULL, &global, &local, nunmapped, unmapped, kernel_done);
    CL_CHECK("clEnqueueNDRangeKernel", rc);
    clFlush(cl->exec_queue);
    return HB_OK;
}

/* The states come back once the kernel is done: mapped (a mapped slot),
 * or copied into the pinned staging (a copied one), and a probed launch's
 * probe states beside them. read_done marks it. */
static hb_status start_read_back(hb_opencl *cl, cl_slot *slot, const launch_view *v,
                                 cl_event kernel_done, hb_error_slot *err)
{
    cl_int rc;
    size_t bytes = v->ngroups * HB_GROUP_STATE_WORDS * sizeof(uint32_t);
    if (cl->copies) {
        rc = clEnqueueReadBuffer(cl->read_queue, slot->state, CL_FALSE, 0, bytes, slot->host_state,
                                 1, &kernel_done, &slot->read_done);
        CL_CHECK("clEnqueueReadBuffer(state)", rc);
        slot->read_map = slot->host_state;
    } else {
        slot->read_map = clEnqueueMapBuffer(cl->read_queue, slot->state, CL_FALSE, CL_MAP_READ, 0,
                                            bytes, 1, &kernel_done, &slot->read_done, &rc);
        CL_CHECK("clEnqueueMapBuffer(state)", rc);
    }
    rc = read_probe(cl, slot, kernel_done);
    CL_CHECK("clEnqueueReadBuffer(probe)", rc);
    clFlush(cl->read_queue);
    return HB_OK;
}

static void release_span(cl_slot *slot)
{
    if (slot->span != NULL)
        clReleaseMemObject(slot->span);
    if (slot->out != NULL)
        clReleaseMemObject(slot->out);
    slot->span = NULL;
    slot->out = NULL;
}

/* A slot taken for a new launch, its in-flight fields reset. */
static cl_slot *claim_slot(hb_opencl *cl, const hb_plan *plan, size_t index, hb_digest *states,
                           hb_probe *probe, hb_fault_state *faults, void *tag)
{
    cl_slot *slot = &cl->slots[(cl->oldest + cl->in_flight) % cl->ring];
    slot->in_place = 0;
    slot->uniform_n = 0;
    slot->uniform_out = NULL;
    slot->span = NULL;
    slot->out = NULL;
    slot->read_done = NULL;
    slot->read_map = NULL;
    slot->plan = plan;
    slot->launch = index;
    slot->states = states;
    slot->probed = probe;
    slot->fault = faults ? hb_fault_for_launch(faults) : HB_FAULT_NONE;
    slot->tag = tag;
    return slot;
}

hb_status hb_opencl_enqueue(hb_opencl *cl, const hb_plan *plan, size_t index, const hb_msg *m,
                            hb_digest *states, hb_probe *probe, hb_fault_state *faults, void *tag,
                            hb_error_slot *err)
{
    if (cl->in_flight == cl->ring)
        return hb_error_set(err, HB_ERR_INTERNAL, "hb_opencl_enqueue: no free slot");
    cl_slot *slot = claim_slot(cl, plan, index, states, probe, faults, tag);
    launch_view v = view_of(plan, index);
    cl_event unmapped[MAX_MAPS + 1] = {NULL}, kernel_done = NULL;
    hb_status st = stage_slot(cl, slot, &v, m, (const hb_digest *)states, unmapped, err);
    cl_uint nunmapped = slot->in_place ? MAX_MAPS : 3;
    cl_int rc = st == HB_OK ? write_probe(cl, slot, &unmapped[nunmapped]) : CL_SUCCESS;
    if (rc != CL_SUCCESS)
        st = cl_failure(err, cl, "clEnqueueWriteBuffer(probe)", rc);
    nunmapped += unmapped[nunmapped] != NULL;
    if (st == HB_OK)
        st = run_kernel(cl, slot, &v, unmapped, nunmapped, &kernel_done, err);
    if (st == HB_OK)
        st = start_read_back(cl, slot, &v, kernel_done, err);
    release_events(unmapped, MAX_MAPS + 1);
    if (st != HB_OK)
        release_span(slot);
    release_events(&kernel_done, 1);
    if (st == HB_OK)
        cl->in_flight++;
    return st;
}

/* ---- uniform launches ---------------------------------------------------- */

size_t hb_opencl_uniform_lanes(const hb_opencl *cl)
{
    return cl->uniform_kernel != NULL ? cl->lanes_max : 0;
}

/* Fills the lane offsets (and tails, for lengths off a block boundary). */
static hb_status stage_uniform(hb_opencl *cl, cl_slot *slot, const hb_msg *m, size_t n,
                               uint64_t len, const hb_span *span, cl_event *unmapped,
                               hb_error_slot *err)
{
    size_t lanes = (n + HB_LANES - 1) / HB_LANES * HB_LANES;
    int tails = len % HB_BLOCK_BYTES != 0;
    mapping maps[2] = {{slot->offsets, lanes * sizeof(uint32_t), NULL},
                       {slot->tails, lanes * HB_TAIL_BYTES, NULL}};
    size_t nmaps = tails ? 2 : 1;
    cl_int rc = map_for_writing(cl, maps, nmaps);
    if (rc == CL_SUCCESS)
        hb_uniform_fill(m, n, len, span, maps[0].ptr, tails ? maps[1].ptr : NULL);
    unmap_all(cl, maps, nmaps, unmapped);
    CL_CHECK("clEnqueueMapBuffer(lane offsets)", rc);
    return HB_OK;
}

/* Buffers over the caller's bytes and over the digests to write. */
static hb_status wrap_caller_memory(hb_opencl *cl, cl_slot *slot, const hb_span *span,
                                    hb_digest *out, size_t n, cl_uint *digest_offset,
                                    hb_error_slot *err)
{
    cl_int rc;
    if (span->bytes > 0) {
        slot->span = clCreateBuffer(cl->context, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR,
                                    span->bytes, (void *)(uintptr_t)span->base, &rc);
        CL_CHECK("clCreateBuffer(in place)", rc);
    }
    uintptr_t first = (uintptr_t)out, base = first - first % 4096u;
    size_t bytes = (size_t)(first - base) + n * sizeof(hb_digest);
    slot->out = clCreateBuffer(cl->context, CL_MEM_WRITE_ONLY | CL_MEM_USE_HOST_PTR, bytes,
                               (void *)base, &rc);
    CL_CHECK("clCreateBuffer(digests)", rc);
    *digest_offset = (cl_uint)(first - base);
    return HB_OK;
}

static hb_status run_uniform(hb_opencl *cl, cl_slot *slot, size_t n, uint64_t len,
                             cl_uint digest_offset, cl_event *unmapped, cl_uint nunmapped,
                             hb_error_slot *err)
{
    cl_kernel k = cl->uniform_kernel;
    cl_uint length = (cl_uint)len, count = (cl_uint)n;
    cl_mem bytes = slot->span != NULL ? slot->span : slot->tails;
    cl_int rc = clSetKernelArg(k, 0, sizeof(cl_mem), &bytes);
    rc |= clSetKernelArg(k, 1, sizeof(cl_mem), &slot->offsets);
    rc |= clSetKernelArg(k, 2, sizeof(cl_mem), &slot->tails);
    rc |= clSetKernelArg(k, 3, sizeof length, &length);
    rc |= clSetKernelArg(k, 4, sizeof count, &count);
    rc |= clSetKernelArg(k, 5, sizeof(cl_mem), &slot->out);
    rc |= clSetKernelArg(k, 6, sizeof digest_offset, &digest_offset);
    rc |= clSetKernelArg(k, 7, sizeof(cl_mem), probe_buffer(cl, slot));
    CL_CHECK("clSetKernelArg(uniform)", rc);
    size_t groups = (n + HB_LANES - 1) / HB_LANES, local = cl->local_size;
    size_t global = (groups + local - 1) / local * local;
    if (slot->fault == HB_FAULT_ENQUEUE_ERROR || slot->fault == HB_FAULT_DEVICE_LOST)
        local = global + 1; /* a work-group larger than the launch: invalid */
    cl_event kernel_done = NULL;
    rc = clEnqueueNDRangeKernel(cl->exec_queue, k, 1, NULL, &global, &local, nunmapped, unmapped,
                                &kernel_done);
    CL_CHECK("clEnqueueNDRangeKernel(uniform)", rc);
    clFlush(cl->exec_queue);
    /* mapping the digests back orders the host's reads after the kernel */
    slot->read_map = clEnqueueMapBuffer(cl->read_queue, slot->out, CL_FALSE, CL_MAP_READ, 0,
                                        digest_offset + n * sizeof(hb_digest), 1, &kernel_done,
                                        &slot->read_done, &rc);
    if (rc == CL_SUCCESS)
        rc = read_probe(cl, slot, kernel_done);
    clReleaseEvent(kernel_done);
    CL_CHECK("clEnqueueMapBuffer(digests) or clEnqueueReadBuffer(probe)", rc);
    clFlush(cl->read_queue);
    return HB_OK;
}

hb_status hb_opencl_enqueue_uniform(hb_opencl *cl, const hb_msg *m, size_t n,
                                    const hb_span *batch_span, hb_digest *out, hb_probe *probe,
                                    hb_fault_state *faults, void *tag, hb_error_slot *err)
{
    if (cl->in_flight == cl->ring || n == 0 || n > hb_opencl_uniform_lanes(cl))
        return hb_error_set(err, HB_ERR_INTERNAL, "hb_opencl_enqueue_uniform: bad launch");
    const hb_span span = *batch_span;
    uint64_t len = m[0].len;
    cl_slot *slot = claim_slot(cl, NULL, 0, out, probe, faults, tag);
    slot->uniform_n = n;
    slot->uniform_out = out;
    cl_event unmapped[3] = {NULL, NULL, NULL};
    cl_uint digest_offset = 0, nunmapped = len % HB_BLOCK_BYTES != 0 ? 2 : 1;
    hb_status st = stage_uniform(cl, slot, m, n, len, &span, unmapped, err);
    cl_int rc = st == HB_OK ? write_probe(cl, slot, &unmapped[nunmapped]) : CL_SUCCESS;
    if (rc != CL_SUCCESS)
        st = cl_failure(err, cl, "clEnqueueWriteBuffer(probe)", rc);
    nunmapped += unmapped[nunmapped] != NULL;
    if (st == HB_OK)
        st = wrap_caller_memory(cl, slot, &span, out, n, &digest_offset, err);
    if (st == HB_OK)
        st = run_uniform(cl, slot, n, len, digest_offset, unmapped, nunmapped, err);
    release_events(unmapped, 3);
    if (st != HB_OK) {
        if (slot->read_done != NULL)
            clWaitForEvents(1, &slot->read_done);
        release_events(&slot->read_done, 1);
        release_span(slot);
        return st;
    }
    cl->in_flight++;
    return HB_OK;
}

int hb_opencl_uniform_batch(const hb_opencl *cl, const hb_msg *m, size_t n, hb_span *span)
{
    return hb_opencl_uniform_lanes(cl) > 0 && hb_uniform_batch(m, n, cl->max_span, span);
}

/* Batches of messages all of one length run as uniform launches where the
 * device has them: no plan, no state round trip, digests written by the
 * kernel. A uniform launch holds whole messages, one work-item per 16 of
 * them, so it must hold enough of them to keep every compute unit busy
 * (a work-group each); where the launch the model asks for is smaller
 * than that (long messages), the planned path, which splits messages
 * across launches, runs the batch instead. */
#define UNIFORM_MESSAGES_MIN 64u

/* The messages a uniform launch needs to give each compute unit a
 * work-group. */
static size_t uniform_fill(const hb_opencl *cl)
{
    size_t units = cl->device.info.compute_units > 0 ? cl->device.info.compute_units : 1;
    return units * cl->local_size * HB_LANES;
}

size_t hb_opencl_uniform_launch_size(const hb_opencl *cl, const hb_msg *m, size_t n, hb_span *span,
                                     const hb_cost_terms *model)
{
    size_t per = hb_opencl_uniform_lanes(cl);
    if (per == 0 || n < UNIFORM_MESSAGES_MIN || !hb_opencl_uniform_batch(cl, m, n, span))
        return 0;
    double work = launch_work_ns(model);
    double each = model != NULL ? model->ns_per_message + (double)m[0].len * model->ns_per_byte : 0;
    double wanted = work > 0 && each > 0
                        ? work / each
                        : (double)cl->staging_bytes / (double)(m[0].len + HB_BLOCK_BYTES);
    per = wanted < (double)per ? (size_t)wanted : per;
    per = per < HB_LANES ? HB_LANES : per / HB_LANES * HB_LANES;
    size_t fill = uniform_fill(cl);
    if (per < fill && per < n)
        return 0;
    return per;
}

/* hb_opencl_hash of a batch that runs as uniform launches of `per`. */
static hb_status hash_uniform(hb_opencl *cl, const hb_msg *m, size_t n, hb_digest *out, size_t per,
                              const hb_span *span, hb_fault_state *faults, uint64_t *launches,
                              hb_error_slot *err)
{
    hb_status st = HB_OK;
    void *tag;
    for (size_t first = 0; first < n && st == HB_OK; first += per) {
        while (st == HB_OK && cl->in_flight == cl->ring)
            st = hb_opencl_collect(cl, &tag, err);
        size_t count = n - first < per ? n - first : per;
        if (st == HB_OK)
            st = hb_opencl_enqueue_uniform(cl, m + first, count, span, out + first, NULL, faults,
                                           NULL, err);
        ++*launches;
    }
    while (st == HB_OK && cl->in_flight > 0)
        st = hb_opencl_collect(cl, &tag, err);
    if (st != HB_OK)
        hb_opencl_reset(cl);
    return st;
}

static void finish_slot(hb_opencl *cl, cl_slot *slot)
{
    /* a copied slot's states lie in its pinned staging: nothing to unmap */
    if (slot->read_map != NULL && !cl->copies) {
        cl_event unmapped = NULL;
        clEnqueueUnmapMemObject(cl->read_queue, slot->uniform_n > 0 ? slot->out : slot->state,
                                slot->read_map, 0, NULL, &unmapped);
        if (unmapped != NULL) {
            clWaitForEvents(1, &unmapped);
            clReleaseEvent(unmapped);
        }
    }
    release_events(&slot->read_done, 1);
    release_span(slot);
    slot->read_map = NULL;
    slot->read_done = NULL;
}

static void copy_states_out(const cl_slot *slot)
{
    launch_view v = view_of(slot->plan, slot->launch);
    for (size_t l = 0; l < v.launch->nsteps; l++) {
        uint32_t lane_state[5];
        hb_state_load_lane(slot->read_map + l / HB_LANES * HB_GROUP_STATE_WORDS,
                           (unsigned)(l % HB_LANES), lane_state);
        memcpy(slot->states[v.steps[l].msg], lane_state, sizeof lane_state);
    }
}

hb_status hb_opencl_collect(hb_opencl *cl, void **tag, hb_error_slot *err)
{
    if (cl->in_flight == 0)
        return hb_error_set(err, HB_ERR_INTERNAL, "hb_opencl_collect: nothing in flight");
    cl_slot *slot = &cl->slots[cl->oldest];
    cl_int rc = clWaitForEvents(1, &slot->read_done);
    if (rc == CL_SUCCESS && slot->uniform_n > 0) {
        hb_fault_corrupt_digests(slot->fault, slot->uniform_out, slot->uniform_n);
    } else if (rc == CL_SUCCESS) {
        hb_fault_corrupt(slot->fault, slot->read_map, view_of(slot->plan, slot->launch).ngroups);
        copy_states_out(slot);
    }
    *tag = slot->tag;
    finish_slot(cl, slot);
    cl->oldest = (cl->oldest + 1) % cl->ring;
    cl->in_flight--;
    CL_CHECK("clWaitForEvents(read-back)", rc);
    return HB_OK;
}

void hb_opencl_reset(hb_opencl *cl)
{
    clFinish(cl->write_queue);
    clFinish(cl->exec_queue);
    clFinish(cl->read_queue);
    for (unsigned k = 0; k < cl->in_flight; k++)
        finish_slot(cl, &cl->slots[(cl->oldest + k) % cl->ring]);
    cl->in_flight = 0;
    cl->oldest = 0;
}

/* ---- a whole batch, synchronously ---------------------------------------- */

void hb_states_to_digests(hb_digest *out, size_t n)
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
    hb_span span = {NULL, 0};
    size_t per = n > 0 ? hb_opencl_uniform_launch_size(cl, m, n, &span, NULL) : 0;
    if (per > 0)
        return hash_uniform(cl, m, n, out, per, &span, faults, launches, err);
    hb_plan plan;
    size_t mixed =
        n > 0 && hb_opencl_reads_in_place(cl, m, n) ? hb_opencl_in_place_launch_bytes(cl, NULL) : 0;
    if (hb_plan_build(&plan, m, n, cl->staging_bytes, mixed) != HB_OK)
        return hb_error_set(err, HB_ERR_NO_MEMORY, "out of memory planning %zu messages", n);
    hb_status st = HB_OK;
    void *tag;
    for (size_t k = 0; k < plan.nlaunches && st == HB_OK; k++) {
        while (st == HB_OK && cl->in_flight > 0 &&
               (cl->in_flight == cl->ring || plan.launches[k].continues))
            st = hb_opencl_collect(cl, &tag, err);
        if (st == HB_OK)
            st = hb_opencl_enqueue(cl, &plan, k, m, out, NULL, faults, NULL, err);
        ++*launches;
    }
    while (st == HB_OK && cl->in_flight > 0)
        st = hb_opencl_collect(cl, &tag, err);
    if (st != HB_OK)
        hb_opencl_reset(cl);
    hb_plan_free(&plan);
    if (st == HB_OK)
        hb_states_to_digests(out, n);
    return st;
}
