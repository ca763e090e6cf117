/*
 * throughput.c - first throughput figures: one backend, one message size.
 *
 * Owns: timing hb_sha1_batch end to end (packing, padding, transfer,
 * readback, sampled verification included) over RUNS repetitions, and
 * printing the median with the spread. Builds the batch once; the first
 * batch is a warm-up and is not timed.
 * Usage: hb_throughput BACKEND MESSAGE_BYTES COUNT [RUNS] [VERIFY] [STAGING_BYTES]
 *        [CPU_THREADS]   (0 for either: the default)
 * BACKEND: auto, opencl, cpu, or all (auto with device "all": every
 * OpenCL device and the CPU pool side by side).
 * Prints one line: backend, size, count, median GB/s, min, max, Mmsg/s.
 */
#include <hashbatch.h>
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

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static unsigned char *make_data(size_t bytes)
{
    unsigned char *data = malloc(bytes ? bytes : 1);
    uint32_t x = 2463534242u;
    for (size_t i = 0; data && i < bytes; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        data[i] = (unsigned char)x;
    }
    return data;
}

static int usage(void)
{
    fprintf(stderr, "usage: hb_throughput auto|opencl|cpu|all MESSAGE_BYTES COUNT [RUNS] "
                    "[off|sample|full] [STAGING_BYTES] [CPU_THREADS]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return usage();
    hb_config cfg;
    hb_config_init(&cfg);
    size_t size = strtoull(argv[2], NULL, 10), count = strtoull(argv[3], NULL, 10);
    int runs = argc > 4 ? atoi(argv[4]) : 5;
    int all = strcmp(argv[1], "all") == 0; /* auto with every device and the pool */
    if (all)
        cfg.device = "all";
    if (argc > 6)
        cfg.staging_bytes = strtoull(argv[6], NULL, 10);
    if (argc > 7)
        cfg.cpu_threads = (unsigned)atoi(argv[7]);
    if ((!all && hb_backend_parse(argv[1], &cfg.backend) != HB_OK) || count == 0 || runs < 1 ||
        (argc > 5 && hb_verify_parse(argv[5], &cfg.verify) != HB_OK))
        return usage();

    hb_engine *engine;
    hb_status st = hb_engine_open(&engine, &cfg);
    if (st != HB_OK) {
        fprintf(stderr, "hb_throughput: %s: %s\n", hb_status_str(st),
                hb_engine_last_error(NULL));
        return 1;
    }
    unsigned char *data = make_data(size * count);
    hb_msg *messages = malloc(count * sizeof *messages);
    hb_digest *out = malloc(count * sizeof *out);
    double *rates = malloc((size_t)runs * sizeof *rates);
    if (data == NULL || messages == NULL || out == NULL || rates == NULL) {
        fprintf(stderr, "hb_throughput: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < count; i++)
        messages[i] = (hb_msg){data + i * size, size};

    st = hb_sha1_batch(engine, messages, count, out); /* warm-up */
    for (int r = 0; r < runs && st == HB_OK; r++) {
        double t0 = seconds_now();
        st = hb_sha1_batch(engine, messages, count, out);
        rates[r] = (double)(size * count) / (seconds_now() - t0);
    }
    if (st != HB_OK) {
        fprintf(stderr, "hb_throughput: %s: %s\n", hb_status_str(st),
                hb_engine_last_error(engine));
        return 1;
    }
    qsort(rates, (size_t)runs, sizeof *rates, by_value);
    double median = rates[runs / 2];
    printf("%-6s %8zu B x %8zu  median %6.2f GB/s  (min %.2f, max %.2f)  %8.2f M msg/s  [%s]\n",
           argv[1], size, count, median / 1e9, rates[0] / 1e9, rates[runs - 1] / 1e9,
           median / (double)size / 1e6, hb_engine_describe(engine));
    free(rates);
    free(out);
    free(messages);
    free(data);
    hb_engine_close(engine);
    return 0;
}
