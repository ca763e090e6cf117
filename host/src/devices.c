/*
 * devices.c - OpenCL device discovery and device specs.
 *
 * Owns: hb_devices_list and the internal enumeration
 * and selection used by the OpenCL backend.
 * Must not: keep OpenCL objects alive; it only asks questions.
 */
#include "devices.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PLATFORMS 16u
#define MAX_DEVICES_PER_PLATFORM 64u

static void query_string(cl_device_id device, cl_device_info what, char *out, size_t size)
{
    if (clGetDeviceInfo(device, what, size, out, NULL) != CL_SUCCESS)
        snprintf(out, size, "?");
    out[size - 1] = '\0';
}

static hb_device_type type_of(cl_device_type type)
{
    if (type & CL_DEVICE_TYPE_GPU)
        return HB_DEVICE_GPU;
    if (type & CL_DEVICE_TYPE_CPU)
        return HB_DEVICE_CPU;
    if (type & CL_DEVICE_TYPE_ACCELERATOR)
        return HB_DEVICE_ACCELERATOR;
    return HB_DEVICE_OTHER;
}

static void describe_device(hb_cl_device *d, const char *platform_name)
{
    hb_device_info *info = &d->info;
    snprintf(info->platform_name, sizeof info->platform_name, "%s", platform_name);
    query_string(d->device, CL_DEVICE_NAME, info->name, sizeof info->name);
    query_string(d->device, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
    query_string(d->device, CL_DEVICE_VERSION, info->version, sizeof info->version);
    query_string(d->device, CL_DRIVER_VERSION, info->driver_version, sizeof info->driver_version);

    cl_device_type type = 0;
    cl_uint units = 0, clock = 0;
    cl_ulong mem = 0, alloc = 0;
    cl_bool available = CL_FALSE;
    clGetDeviceInfo(d->device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof clock, &clock, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof alloc, &alloc, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_AVAILABLE, sizeof available, &available, NULL);
    info->type = type_of(type);
    info->compute_units = units;
    info->max_clock_mhz = clock;
    info->global_mem_bytes = mem;
    info->max_alloc_bytes = alloc;
    info->available = available == CL_TRUE;
}

static size_t enumerate_platform(cl_platform_id platform, unsigned platform_index,
                                 hb_cl_device *out)
{
    char platform_name[128] = "?";
    clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof platform_name, platform_name, NULL);
    platform_name[sizeof platform_name - 1] = '\0';
    cl_device_id ids[MAX_DEVICES_PER_PLATFORM];
    cl_uint n = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, MAX_DEVICES_PER_PLATFORM, ids, &n) !=
        CL_SUCCESS)
        return 0;
    if (n > MAX_DEVICES_PER_PLATFORM)
        n = MAX_DEVICES_PER_PLATFORM;
    for (cl_uint i = 0; i < n; i++) {
        out[i] = (hb_cl_device){.platform = platform, .device = ids[i]};
        out[i].info.platform_index = platform_index;
        out[i].info.device_index = i;
        describe_device(&out[i], platform_name);
    }
    return n;
}

/* The cores the OpenCL runtime's threads were started on: those of the
 * thread that first listed devices in this process, pinned for that call
 * to HASHBATCH_DEVICE_CORES when it is set (process-wide, whoever lists
 * devices first: hashbatch devices, bench, an engine). */
static pthread_mutex_t runtime_lock = PTHREAD_MUTEX_INITIALIZER;
static int runtime_started;
static hb_core_set runtime_cores;

int hb_cl_runtime_within(const hb_core_set *cores)
{
    pthread_mutex_lock(&runtime_lock);
    int within = runtime_started && runtime_cores.count > 0 &&
                 hb_cores_within(&runtime_cores, cores);
    pthread_mutex_unlock(&runtime_lock);
    return within;
}

static hb_status enumerate_all(hb_cl_device **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    cl_platform_id platforms[MAX_PLATFORMS];
    cl_uint nplatforms = 0;
    if (clGetPlatformIDs(MAX_PLATFORMS, platforms, &nplatforms) != CL_SUCCESS || nplatforms == 0)
        return HB_OK; /* no ICD, or no platform: no devices */
    if (nplatforms > MAX_PLATFORMS)
        nplatforms = MAX_PLATFORMS;
    hb_cl_device *all = calloc((size_t)nplatforms * MAX_DEVICES_PER_PLATFORM, sizeof *all);
    if (all == NULL)
        return HB_ERR_NO_MEMORY;
    size_t total = 0;
    for (cl_uint p = 0; p < nplatforms; p++)
        total += enumerate_platform(platforms[p], p, all + total);
    long pick = hb_cl_auto_index(all, total);
    if (pick >= 0)
        all[pick].info.auto_pick = 1;
    *out = all;
    *count = total;
    return HB_OK;
}

/* start_runtime: the first listing, from this thread pinned to
 * HASHBATCH_DEVICE_CORES when set (the runtime's threads start now and
 * keep the cores they start on), its cores recorded. */
static hb_status start_runtime(hb_cl_device **out, size_t *count)
{
    hb_core_set mine = hb_cores_of_self(), device;
    int pinned = hb_cores_from_environment(&device) && hb_cores_pin_self(&device) == 0;
    runtime_cores = hb_cores_of_self();
    runtime_started = 1;
    hb_status st = enumerate_all(out, count);
    if (pinned)
        hb_cores_pin_self(&mine);
    return st;
}

hb_status hb_cl_enumerate(hb_cl_device **out, size_t *count)
{
    pthread_mutex_lock(&runtime_lock);
    if (!runtime_started) {
        hb_status st = start_runtime(out, count);
        pthread_mutex_unlock(&runtime_lock);
        return st;
    }
    pthread_mutex_unlock(&runtime_lock);
    return enumerate_all(out, count);
}

static long first_of_type(const hb_cl_device *devices, size_t count, int type)
{
    for (size_t i = 0; i < count; i++)
        if (devices[i].info.available && (type < 0 || (int)devices[i].info.type == type))
            return (long)i;
    return -1;
}

long hb_cl_auto_index(const hb_cl_device *devices, size_t count)
{
    long i = first_of_type(devices, count, HB_DEVICE_GPU);
    if (i < 0)
        i = first_of_type(devices, count, HB_DEVICE_CPU);
    if (i < 0)
        i = first_of_type(devices, count, -1);
    return i;
}

static int contains_ignoring_case(const char *haystack, const char *needle)
{
    size_t n = strlen(needle);
    for (; *haystack; haystack++) {
        size_t k = 0;
        while (k < n && haystack[k] &&
               tolower((unsigned char)haystack[k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == n)
            return 1;
    }
    return n == 0;
}

/* P:D: two decimal numbers (digits only) around one colon. */
static int parse_index_pair(const char *spec, unsigned *platform, unsigned *device)
{
    char tail;
    size_t p = strspn(spec, "0123456789");
    if (p == 0 || spec[p] != ':' || strspn(spec + p + 1, "0123456789") == 0)
        return 0;
    return sscanf(spec, "%u:%u%c", platform, device, &tail) == 2;
}

/* A spec no device could ever answer to: a colon that is not P:D, a
 * control character, or nothing but blanks (any name contains a blank). */
static int spec_is_malformed(const char *spec)
{
    unsigned p, d;
    int blanks_only = 1;
    for (const char *c = spec; *c; c++) {
        if (iscntrl((unsigned char)*c))
            return 1;
        blanks_only &= *c == ' ';
    }
    return blanks_only || (strchr(spec, ':') != NULL && !parse_index_pair(spec, &p, &d));
}

static hb_status malformed(const char *spec, hb_error_slot *err)
{
    return hb_error_set(err, HB_ERR_BAD_DEVICE_SPEC,
                        "device spec '%s' is malformed (specs: all, gpu, cpu, accelerator, "
                        "P:D with two numbers, or a name substring)",
                        spec);
}

static int spec_matches(const hb_cl_device *d, const char *spec)
{
    unsigned p, i;
    if (strcmp(spec, "all") == 0)
        return 1;
    if (strcmp(spec, "gpu") == 0)
        return d->info.type == HB_DEVICE_GPU;
    if (strcmp(spec, "cpu") == 0)
        return d->info.type == HB_DEVICE_CPU;
    if (strcmp(spec, "accelerator") == 0)
        return d->info.type == HB_DEVICE_ACCELERATOR;
    if (parse_index_pair(spec, &p, &i))
        return d->info.platform_index == p && d->info.device_index == i;
    return contains_ignoring_case(d->info.name, spec) ||
           contains_ignoring_case(d->info.platform_name, spec);
}

static hb_status no_match(const hb_cl_device *devices, size_t count, const char *spec,
                          hb_error_slot *err)
{
    char names[1024] = "";
    size_t used = 0;
    for (size_t i = 0; i < count && used < sizeof names; i++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%u:%u %s", i ? ", " : "",
                                 devices[i].info.platform_index, devices[i].info.device_index,
                                 devices[i].info.name);
    return hb_error_set(err, HB_ERR_BAD_DEVICE_SPEC,
                        "device spec '%s' matches no available OpenCL device "
                        "(specs: all, gpu, cpu, accelerator, P:D or a name substring; "
                        "devices: %s)",
                        spec, names);
}

hb_status hb_cl_select(const hb_cl_device *devices, size_t count, const char *spec, size_t *chosen,
                       size_t *nchosen, hb_error_slot *err)
{
    *nchosen = 0;
    int named = spec != NULL && *spec != '\0';
    if (named && spec_is_malformed(spec))
        return malformed(spec, err);
    if (count == 0 && named && strcmp(spec, "all") != 0)
        return hb_error_set(err, HB_ERR_BAD_DEVICE_SPEC,
                            "device spec '%s' matches no device: no OpenCL platform or "
                            "device found",
                            spec);
    if (count == 0)
        return hb_error_set(err, HB_ERR_NO_OPENCL,
                            "no OpenCL platform or device found (is an ICD such as "
                            "pocl-opencl-icd installed, and OCL_ICD_VENDORS right?)");
    if (spec == NULL || *spec == '\0') {
        long pick = hb_cl_auto_index(devices, count);
        if (pick < 0)
            return hb_error_set(err, HB_ERR_NO_OPENCL, "%zu OpenCL devices found, none available",
                                count);
        chosen[(*nchosen)++] = (size_t)pick;
        return HB_OK;
    }
    for (size_t i = 0; i < count; i++)
        if (devices[i].info.available && spec_matches(&devices[i], spec))
            chosen[(*nchosen)++] = i;
    return *nchosen ? HB_OK : no_match(devices, count, spec, err);
}

hb_status hb_cl_check_spec(const char *spec, hb_error_slot *err)
{
    if (spec == NULL || *spec == '\0')
        return HB_OK;
    hb_cl_device *devices;
    size_t count, nchosen;
    if (hb_cl_enumerate(&devices, &count) != HB_OK)
        return hb_error_set(err, HB_ERR_NO_MEMORY, "out of memory listing OpenCL devices");
    size_t *chosen = calloc(count ? count : 1, sizeof *chosen);
    hb_status st = chosen == NULL ? hb_error_set(err, HB_ERR_NO_MEMORY, "out of memory")
                                  : hb_cl_select(devices, count, spec, chosen, &nchosen, err);
    free(chosen);
    free(devices);
    return st == HB_ERR_NO_OPENCL ? HB_OK : st; /* "all" of no device */
}

hb_status hb_devices_list(hb_device_info *out, size_t cap, size_t *count)
{
    if (count == NULL || (out == NULL && cap > 0))
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_devices_list: %s is NULL",
                            count == NULL ? "count" : "out");
    hb_cl_device *devices;
    size_t total;
    hb_status st = hb_cl_enumerate(&devices, &total);
    if (st != HB_OK)
        return hb_error_set(NULL, st, "hb_devices_list: out of memory");
    for (size_t i = 0; i < total && i < cap; i++)
        out[i] = devices[i].info;
    *count = total;
    free(devices);
    return HB_OK;
}
