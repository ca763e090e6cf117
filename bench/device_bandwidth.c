/*
 * device_bandwidth.c - how fast bytes reach an OpenCL device and come
 * back: the ceiling under any end-to-end figure of a discrete GPU.
 *
 * Owns: timing clEnqueueWriteBuffer / clEnqueueReadBuffer of one buffer
 * (blocking, one at a time) from pageable memory (malloc) and from pinned
 * memory (a CL_MEM_ALLOC_HOST_PTR buffer, mapped), the median of RUNS
 * transfers each; and the cost of one small (4 KiB) blocking write.
 * Must not: hash anything.
 *
 * Usage: hb_device_bandwidth [P:D] [MIB] [RUNS]   (default 0:0 256 7)
 * Prints one JSON object on stdout; exit 1 on an OpenCL error, 2 on bad
 * arguments.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SMALL_BYTES 4096
#define SMALL_COUNT 1000

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define CHECK(what, rc)                                                                  \
    do {                                                                                 \
        if ((rc) != CL_SUCCESS) {                                                        \
            fprintf(stderr, "hb_device_bandwidth: %s failed: %d\n", (what), (int)(rc)); \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* pick: device d of platform p. */
static cl_device_id pick(unsigned p, unsigned d, char *name, size_t len)
{
    cl_platform_id plats[16];
    cl_uint np = 0, nd = 0;
    CHECK("clGetPlatformIDs", clGetPlatformIDs(16, plats, &np));
    cl_device_id devs[16];
    if (p >= np || clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS ||
        d >= nd) {
        fprintf(stderr, "hb_device_bandwidth: no OpenCL device %u:%u\n", p, d);
        exit(1);
    }
    CHECK("clGetDeviceInfo", clGetDeviceInfo(devs[d], CL_DEVICE_NAME, len, name, NULL));
    return devs[d];
}

/* median_rate: bytes per second of the median of runs transfers. */
static double median_rate(cl_command_queue q, cl_mem dev, void *host, size_t bytes, int write,
                          int runs)
{
    double t[64];
    for (int r = 0; r <= runs; r++) { /* transfer 0 warms up */
        double t0 = seconds_now();
        cl_int rc = write ? clEnqueueWriteBuffer(q, dev, CL_TRUE, 0, bytes, host, 0, NULL, NULL)
                          : clEnqueueReadBuffer(q, dev, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
        CHECK(write ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer", rc);
        if (r > 0)
            t[r - 1] = seconds_now() - t0;
    }
    qsort(t, (size_t)runs, sizeof *t, by_value);
    return (double)bytes / t[runs / 2];
}

int main(int argc, char **argv)
{
    unsigned p = 0, d = 0;
    size_t mib = argc > 2 ? strtoull(argv[2], NULL, 10) : 256;
    int runs = argc > 3 ? atoi(argv[3]) : 7;
    if ((argc > 1 && sscanf(argv[1], "%u:%u", &p, &d) != 2) || mib == 0 || mib > 4096 ||
        runs < 1 || runs > 64) {
        fprintf(stderr, "usage: hb_device_bandwidth [P:D] [MIB (1-4096)] [RUNS (1-64)]\n");
        return 2;
    }
    char name[256] = "";
    cl_device_id dev = pick(p, d, name, sizeof name);
    size_t bytes = mib << 20;
    cl_int rc;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    CHECK("clCreateContext", rc);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &rc);
    CHECK("clCreateCommandQueue", rc);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &rc);
    CHECK("clCreateBuffer", rc);
    cl_mem pinned = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &rc);
    CHECK("clCreateBuffer (pinned)", rc);
    void *pin = clEnqueueMapBuffer(q, pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0,
                                   NULL, NULL, &rc);
    CHECK("clEnqueueMapBuffer", rc);
    unsigned char *pageable = malloc(bytes);
    if (pageable == NULL) {
        fprintf(stderr, "hb_device_bandwidth: out of memory\n");
        return 1;
    }
    memset(pageable, 0x5a, bytes);
    memset(pin, 0xa5, bytes);

    double w_page = median_rate(q, buf, pageable, bytes, 1, runs);
    double w_pin = median_rate(q, buf, pin, bytes, 1, runs);
    double r_page = median_rate(q, buf, pageable, bytes, 0, runs);
    double r_pin = median_rate(q, buf, pin, bytes, 0, runs);
    double t0 = seconds_now();
    for (int i = 0; i < SMALL_COUNT; i++)
        CHECK("clEnqueueWriteBuffer (4 KiB)",
              clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, SMALL_BYTES, pin, 0, NULL, NULL));
    double small_us = (seconds_now() - t0) / SMALL_COUNT * 1e6;

    printf("{\"device\": \"%u:%u\", \"name\": \"", p, d);
    for (const char *c = name; *c; c++)
        if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20)
            putchar(*c);
    printf("\", \"bytes\": %zu, \"runs\": %d,\n"
           " \"write_pageable_gb_per_s\": %.3f, \"write_pinned_gb_per_s\": %.3f,\n"
           " \"read_pageable_gb_per_s\": %.3f, \"read_pinned_gb_per_s\": %.3f,\n"
           " \"write_4k_blocking_us\": %.2f}\n",
           bytes, runs, w_page / 1e9, w_pin / 1e9, r_page / 1e9, r_pin / 1e9, small_us);
    clEnqueueUnmapMemObject(q, pinned, pin, 0, NULL, NULL);
    clFinish(q);
    free(pageable);
    clReleaseMemObject(pinned);
    clReleaseMemObject(buf);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
