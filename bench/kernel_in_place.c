/*
 * kernel_in_place.c - the in-place kernels' own rate on a CPU OpenCL
 * device (pocl), without the library around them.
 *
 * Owns: timing hb_sha1_in_place (whole blocks read from the messages'
 * bytes through a CL_MEM_USE_HOST_PTR buffer, final blocks from packed
 * tails) and hb_sha1_uniform (one length, padding built in the kernel,
 * digests written by it) over MESSAGES messages of LENGTH bytes lying
 * side by side in one host buffer. Lane descriptors and tails are filled
 * once, outside the timing. Every digest is checked against OpenSSL.
 * Usage: hb_kernel_in_place KERNEL.cl in-place|uniform LENGTH MESSAGES [RUNS]
 *   e.g. hb_kernel_in_place kernels/sha1.cl in-place 4096 65536
 *        hb_kernel_in_place kernels/sha1.cl uniform 64 1000000
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAIL_BYTES 128u

typedef struct {
    cl_context ctx;
    cl_device_id device;
    cl_command_queue queue;
    cl_kernel kernel;
} cl_setup;

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

static int fail(const char *what, cl_int rc)
{
    fprintf(stderr, "hb_kernel_in_place: %s failed: %d\n", what, (int)rc);
    return 1;
}

static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text != NULL && fread(text, 1, (size_t)n, f) == (size_t)n)
        text[n] = '\0';
    fclose(f);
    *size = (size_t)n;
    return text;
}

/* Builds the kernel file for the first CPU device, as the library does. */
static int setup(cl_setup *s, const char *path, const char *kernel_name)
{
    size_t size;
    char *source = read_file(path, &size);
    if (source == NULL)
        return fail("reading the kernel file", 0);
    cl_platform_id platform;
    cl_int rc = clGetPlatformIDs(1, &platform, NULL);
    if (rc == CL_SUCCESS)
        rc = clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 1, &s->device, NULL);
    if (rc != CL_SUCCESS)
        return fail("finding a CPU OpenCL device", rc);
    s->ctx = clCreateContext(NULL, 1, &s->device, NULL, NULL, &rc);
    if (rc == CL_SUCCESS)
        s->queue = clCreateCommandQueue(s->ctx, s->device, 0, &rc);
    cl_program prog = NULL;
    if (rc == CL_SUCCESS)
        prog = clCreateProgramWithSource(s->ctx, 1, (const char **)&source, &size, &rc);
    if (rc == CL_SUCCESS)
        rc = clBuildProgram(prog, 1, &s->device, "-DHB_LANES=16 -DHB_IN_PLACE -cl-std=CL1.2",
                            NULL, NULL);
    if (rc == CL_SUCCESS)
        s->kernel = clCreateKernel(prog, kernel_name, &rc);
    free(source);
    return rc == CL_SUCCESS ? 0 : fail("building the kernel", rc);
}

static cl_mem buffer(cl_setup *s, cl_mem_flags flags, size_t bytes, void *host)
{
    cl_int rc;
    cl_mem m = clCreateBuffer(s->ctx, flags, bytes ? bytes : 1, host, &rc);
    if (rc != CL_SUCCESS) {
        fail("clCreateBuffer", rc);
        exit(1);
    }
    return m;
}

/* The final 1 or 2 blocks of a len-byte message at p, as raw bytes. */
static uint32_t pack_tail(const uint8_t *p, size_t len, uint8_t *tail)
{
    size_t whole = len / 64 * 64, rest = len - whole;
    uint32_t blocks = rest + 9 > 64 ? 2 : 1;
    memset(tail, 0, TAIL_BYTES);
    memcpy(tail, p + whole, rest);
    tail[rest] = 0x80;
    uint64_t bits = (uint64_t)len * 8;
    for (int b = 0; b < 8; b++)
        tail[blocks * 64 - 1 - b] = (uint8_t)(bits >> (8 * b));
    return blocks;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: hb_kernel_in_place KERNEL.cl in-place|uniform LENGTH MESSAGES "
                        "[RUNS]\n");
        return 2;
    }
    int uniform = strcmp(argv[2], "uniform") == 0;
    size_t len = strtoull(argv[3], NULL, 10), n = strtoull(argv[4], NULL, 10);
    int runs = argc > 5 ? atoi(argv[5]) : 7;
    if ((!uniform && strcmp(argv[2], "in-place") != 0) || n == 0 || runs < 1 ||
        len * n > UINT32_MAX) {
        fprintf(stderr, "hb_kernel_in_place: bad arguments\n");
        return 2;
    }
    cl_setup s;
    if (setup(&s, argv[1], uniform ? "hb_sha1_uniform" : "hb_sha1_in_place") != 0)
        return 1;
    size_t groups = (n + 15) / 16, lanes = groups * 16;
    uint8_t *data = aligned_alloc(4096, (len * n + 4095) / 4096 * 4096 + 4096);
    uint32_t *offset = calloc(lanes, 4), *whole = calloc(lanes, 4), *count = calloc(lanes, 4);
    uint8_t *tails = calloc(lanes, TAIL_BYTES), *digests = calloc(n, 20);
    uint32_t *state = calloc(lanes, 20);
    if (!data || !offset || !whole || !count || !tails || !digests || !state)
        return fail("allocating", 0);
    for (size_t i = 0; i < len * n; i++)
        data[i] = (uint8_t)(i * 2654435761u >> 13);
    for (size_t i = 0; i < n; i++) {
        offset[i] = (uint32_t)(i * len);
        whole[i] = (uint32_t)(len / 64);
        count[i] = whole[i] + pack_tail(data + i * len, len, tails + i * TAIL_BYTES);
    }
    static const uint32_t iv[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u,
                                   0xC3D2E1F0u};
    for (size_t g = 0; g < groups; g++)
        for (int k = 0; k < 5; k++)
            for (int i = 0; i < 16; i++)
                state[(g * 5 + k) * 16 + i] = iv[k];
    cl_mem_flags ro = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
    cl_mem bytes_m = buffer(&s, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, len * n, data);
    cl_mem offset_m = buffer(&s, ro, lanes * 4, offset);
    cl_mem whole_m = buffer(&s, ro, lanes * 4, whole);
    cl_mem count_m = buffer(&s, ro, lanes * 4, count);
    cl_mem tails_m = buffer(&s, ro, lanes * TAIL_BYTES, tails);
    cl_mem state_m = buffer(&s, CL_MEM_READ_WRITE, lanes * 20, NULL);
    cl_mem digests_m = buffer(&s, CL_MEM_WRITE_ONLY, n * 20, NULL);
    cl_uint length = (cl_uint)len, nmsg = (cl_uint)n, ngroups = (cl_uint)groups, zero = 0;
    cl_int rc = CL_SUCCESS;
    if (uniform) {
        rc |= clSetKernelArg(s.kernel, 0, sizeof bytes_m, &bytes_m);
        rc |= clSetKernelArg(s.kernel, 1, sizeof offset_m, &offset_m);
        rc |= clSetKernelArg(s.kernel, 2, sizeof tails_m, &tails_m);
        rc |= clSetKernelArg(s.kernel, 3, sizeof length, &length);
        rc |= clSetKernelArg(s.kernel, 4, sizeof nmsg, &nmsg);
        rc |= clSetKernelArg(s.kernel, 5, sizeof digests_m, &digests_m);
        rc |= clSetKernelArg(s.kernel, 6, sizeof zero, &zero);
    } else {
        rc |= clSetKernelArg(s.kernel, 0, sizeof bytes_m, &bytes_m);
        rc |= clSetKernelArg(s.kernel, 1, sizeof offset_m, &offset_m);
        rc |= clSetKernelArg(s.kernel, 2, sizeof whole_m, &whole_m);
        rc |= clSetKernelArg(s.kernel, 3, sizeof tails_m, &tails_m);
        rc |= clSetKernelArg(s.kernel, 4, sizeof state_m, &state_m);
        rc |= clSetKernelArg(s.kernel, 5, sizeof count_m, &count_m);
        rc |= clSetKernelArg(s.kernel, 6, sizeof ngroups, &ngroups);
    }
    if (rc != CL_SUCCESS)
        return fail("clSetKernelArg", rc);
    size_t local = 8, global = (groups + local - 1) / local * local;
    double *t = malloc((size_t)(runs + 1) * sizeof *t);
    for (int r = 0; r <= runs; r++) { /* run 0 warms up */
        if (!uniform)
            clEnqueueWriteBuffer(s.queue, state_m, CL_TRUE, 0, lanes * 20, state, 0, NULL, NULL);
        double t0 = seconds_now();
        rc = clEnqueueNDRangeKernel(s.queue, s.kernel, 1, NULL, &global, &local, 0, NULL, NULL);
        if (rc != CL_SUCCESS)
            return fail("clEnqueueNDRangeKernel", rc);
        clFinish(s.queue);
        t[r] = seconds_now() - t0;
    }
    /* the digests of the last run, against OpenSSL */
    uint32_t *out_state = malloc(lanes * 20);
    if (uniform)
        clEnqueueReadBuffer(s.queue, digests_m, CL_TRUE, 0, n * 20, digests, 0, NULL, NULL);
    else
        clEnqueueReadBuffer(s.queue, state_m, CL_TRUE, 0, lanes * 20, out_state, 0, NULL, NULL);
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t want[20], got[20];
        SHA1(data + i * len, len, want);
        for (int k = 0; k < 5 && !uniform; k++) {
            uint32_t v = out_state[(i / 16 * 5 + (size_t)k) * 16 + i % 16];
            got[4 * k] = (uint8_t)(v >> 24), got[4 * k + 1] = (uint8_t)(v >> 16);
            got[4 * k + 2] = (uint8_t)(v >> 8), got[4 * k + 3] = (uint8_t)v;
        }
        wrong += memcmp(want, uniform ? digests + i * 20 : got, 20) != 0;
    }
    qsort(t + 1, (size_t)runs, sizeof *t, by_value);
    double median = t[1 + runs / 2];
    double blocks = (double)n * (double)count[0];
    printf("kernel %s: %zu messages x %zu B: median %.2f ms, %.1f M blocks/s, %.2f GB/s, "
           "%.1f M messages/s (min %.2f ms, max %.2f ms); %zu digests wrong\n",
           argv[2], n, len, median * 1e3, blocks / median / 1e6,
           (double)(len * n) / median / 1e9, (double)n / median / 1e6, t[1] * 1e3,
           t[runs] * 1e3, wrong);
    return wrong == 0 ? 0 : 1;
}
