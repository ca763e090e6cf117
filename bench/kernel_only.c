/*
 * kernel_only.c - the kernel's own rate, without packing or transfers.
 *
 * Owns: timing kernels/sha1.cl alone on one OpenCL device: the staging
 * buffers are filled once, then the same launch runs RUNS times; reports
 * the median in blocks per second and GB/s of message data.
 * Usage: hb_kernel_only KERNEL.cl LANES_PER_MESSAGE_BLOCKS MESSAGES [RUNS] [DEVICE_INDEX]
 *   e.g. hb_kernel_only kernels/sha1.cl 64 65536   (4 KiB messages)
 *        hb_kernel_only kernels/sha1.cl 1 1048576  (one-block messages)
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    if (text != NULL && fread(text, 1, (size_t)n, f) == (size_t)n)
        text[n] = '\0';
    fclose(f);
    *size = (size_t)n;
    return text;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define CHECK(what, rc)                                                            \
    do {                                                                           \
        if ((rc) != CL_SUCCESS) {                                                  \
            fprintf(stderr, "hb_kernel_only: %s failed: %d\n", (what), (int)(rc)); \
            return 1;                                                              \
        }                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: hb_kernel_only KERNEL.cl BLOCKS_PER_MESSAGE MESSAGES [RUNS]\n");
        return 2;
    }
    size_t source_size;
    char *source = read_file(argv[1], &source_size);
    cl_uint blocks = (cl_uint)atoi(argv[2]);
    size_t messages = strtoull(argv[3], NULL, 10);
    int runs = argc > 4 ? atoi(argv[4]) : 7;
    if (source == NULL || blocks == 0 || messages == 0 || runs < 1) {
        fprintf(stderr, "hb_kernel_only: bad arguments or unreadable %s\n", argv[1]);
        return 2;
    }
    cl_platform_id platform;
    cl_device_id device;
    cl_int rc = clGetPlatformIDs(1, &platform, NULL);
    CHECK("clGetPlatformIDs", rc);
    rc = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL);
    CHECK("clGetDeviceIDs", rc);
    cl_device_type type;
    clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    int cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &rc);
    CHECK("clCreateContext", rc);
    cl_command_queue q = clCreateCommandQueue(ctx, device, 0, &rc);
    CHECK("clCreateCommandQueue", rc);
    cl_program prog = clCreateProgramWithSource(ctx, 1, (const char **)&source, &source_size, &rc);
    CHECK("clCreateProgramWithSource", rc);
    rc = clBuildProgram(prog, 1, &device, cpu ? "-DHB_LANES=16" : "-DHB_LANES=1", NULL, NULL);
    CHECK("clBuildProgram", rc);
    cl_kernel k = clCreateKernel(prog, "hb_sha1_blocks", &rc);
    CHECK("clCreateKernel", rc);

    size_t groups = (messages + 15) / 16;
    size_t data_bytes = groups * 16 * (size_t)blocks * 64;
    cl_mem data = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, data_bytes, NULL, &rc);
    CHECK("clCreateBuffer", rc);
    cl_mem state = clCreateBuffer(ctx, CL_MEM_READ_WRITE, groups * 80 * 4, NULL, &rc);
    CHECK("clCreateBuffer", rc);
    cl_uint *counts_host = malloc(groups * 16 * sizeof *counts_host);
    for (size_t i = 0; i < groups * 16; i++)
        counts_host[i] = blocks;
    cl_mem counts = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                   groups * 16 * 4, counts_host, &rc);
    CHECK("clCreateBuffer", rc);
    unsigned char *fill = clEnqueueMapBuffer(q, data, CL_TRUE, CL_MAP_WRITE, 0, data_bytes, 0, NULL,
                                             NULL, &rc);
    CHECK("clEnqueueMapBuffer", rc);
    for (size_t i = 0; i < data_bytes; i++)
        fill[i] = (unsigned char)(i * 2654435761u >> 13);
    clEnqueueUnmapMemObject(q, data, fill, 0, NULL, NULL);
    cl_uint ngroups = (cl_uint)groups;
    clSetKernelArg(k, 0, sizeof data, &data);
    clSetKernelArg(k, 1, sizeof state, &state);
    clSetKernelArg(k, 2, sizeof counts, &counts);
    clSetKernelArg(k, 3, sizeof blocks, &blocks);
    clSetKernelArg(k, 4, sizeof ngroups, &ngroups);
    size_t local = cpu ? 8 : 64;
    size_t items = cpu ? groups : groups * 16;
    size_t global = (items + local - 1) / local * local;
    double *t = malloc((size_t)(runs + 1) * sizeof *t);
    for (int r = 0; r <= runs; r++) { /* run 0 warms up */
        double t0 = seconds_now();
        rc = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL);
        CHECK("clEnqueueNDRangeKernel", rc);
        clFinish(q);
        t[r] = seconds_now() - t0;
    }
    qsort(t + 1, (size_t)runs, sizeof *t, by_value);
    double median = t[1 + runs / 2];
    double total_blocks = (double)groups * 16 * blocks;
    printf("kernel only: %zu messages x %u blocks: median %.2f ms, %.1f M blocks/s, %.2f GB/s, "
           "%.1f M messages/s (min %.2f ms, max %.2f ms)\n",
           messages, blocks, median * 1e3, total_blocks / median / 1e6,
           total_blocks * 64 / median / 1e9, (double)messages / median / 1e6, t[1] * 1e3,
           t[runs] * 1e3);
    return 0;
}
