/*
 * verify_cost.c - what sampled verification costs, measured in pairs.
 *
 * Owns: one process, two engines on the same backend, one verifying as
 * the default does (sample) and one not (off); batches alternate between
 * them (A B, then B A, so neither always runs first), and each pair gives
 * one ratio: the sampled engine's rate over the other's. A shared, noisy
 * host slows both halves of a pair alike, where separate processes
 * minutes apart see different hosts; the median of the pairs' ratios is
 * the cost. Also printed: the share of the bytes the sampled engine
 * hashed again (hb_stats.verified_bytes over the bytes it hashed) and its
 * checks per batch, which are what a transient fault is caught with,
 * and the pieces (pool takes, device launches) a batch was cut into.
 * Usage: hb_verify_cost auto|opencl|cpu BYTES COUNT [PAIRS]   (PAIRS: 15)
 * Prints one line: backend, size, count, both medians, the median of the
 * pairs' ratios with its quartiles, the verified share, checks a batch.
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

/* The value at quantile q (0..1) of v[0..n), sorted in place. */
static double quantile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return v[(int)(q * (n - 1) + 0.5)];
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
    fprintf(stderr, "usage: hb_verify_cost auto|opencl|cpu MESSAGE_BYTES COUNT [PAIRS]\n");
    return 2;
}

static hb_status open_with(hb_backend_kind backend, hb_verify_mode verify, hb_engine **out)
{
    hb_config cfg;
    hb_config_init(&cfg);
    cfg.backend = backend;
    cfg.verify = verify;
    hb_status st = hb_engine_open(out, &cfg);
    if (st != HB_OK)
        fprintf(stderr, "hb_verify_cost: %s: %s\n", hb_status_str(st), hb_engine_last_error(NULL));
    return st;
}

/* One timed batch on e: its rate in bytes a second (negative: failed). */
static double timed_batch(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out, double bytes)
{
    double t0 = seconds_now();
    hb_status st = hb_sha1_batch(e, m, n, out);
    if (st != HB_OK) {
        fprintf(stderr, "hb_verify_cost: %s: %s\n", hb_status_str(st), hb_engine_last_error(e));
        return -1;
    }
    return bytes / (seconds_now() - t0);
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return usage();
    hb_backend_kind backend;
    size_t size = strtoull(argv[2], NULL, 10), count = strtoull(argv[3], NULL, 10);
    int pairs = argc > 4 ? atoi(argv[4]) : 15;
    if (hb_backend_parse(argv[1], &backend) != HB_OK || count == 0 || pairs < 1)
        return usage();
    hb_engine *sampled, *off;
    if (open_with(backend, HB_VERIFY_SAMPLE, &sampled) != HB_OK ||
        open_with(backend, HB_VERIFY_OFF, &off) != HB_OK)
        return 1;
    unsigned char *data = make_data(size * count);
    hb_msg *m = malloc(count * sizeof *m);
    hb_digest *out = malloc(count * sizeof *out);
    double *on_rate = malloc((size_t)pairs * sizeof(double));
    double *off_rate = malloc((size_t)pairs * sizeof(double));
    double *ratio = malloc((size_t)pairs * sizeof(double));
    if (!data || !m || !out || !on_rate || !off_rate || !ratio) {
        fprintf(stderr, "hb_verify_cost: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < count; i++)
        m[i] = (hb_msg){data + i * size, size};
    double bytes = (double)size * (double)count;
    hb_stats before, after;
    if (timed_batch(sampled, m, count, out, bytes) < 0 ||
        timed_batch(off, m, count, out, bytes) < 0 ||
        hb_engine_stats(sampled, &before) != HB_OK) /* warm-ups: not counted */
        return 1;
    for (int p = 0; p < pairs; p++) {
        int sampled_first = p % 2 == 0;
        double first = timed_batch(sampled_first ? sampled : off, m, count, out, bytes);
        double second = timed_batch(sampled_first ? off : sampled, m, count, out, bytes);
        if (first < 0 || second < 0)
            return 1;
        on_rate[p] = sampled_first ? first : second;
        off_rate[p] = sampled_first ? second : first;
        ratio[p] = on_rate[p] / off_rate[p];
    }
    if (hb_engine_stats(sampled, &after) != HB_OK)
        return 1;
    double hashed = (double)(after.cpu_bytes - before.cpu_bytes) +
                    (double)(after.device_bytes - before.device_bytes);
    double share = hashed > 0 ? (double)(after.verified_bytes - before.verified_bytes) / hashed : 0;
    double checks = (double)(after.verified - before.verified) / pairs;
    double takes = (double)(after.batches - before.batches) / pairs;
    double q1 = quantile(ratio, pairs, 0.25), q3 = quantile(ratio, pairs, 0.75);
    printf("%-6s %8zu B x %8zu  sampled %6.2f GB/s  off %6.2f GB/s  ratio %.3f (q1 %.3f, q3 "
           "%.3f, pairs %d)  verified share %.2e  checks/batch %.0f  takes/batch %.0f  [%s]\n",
           argv[1], size, count, quantile(on_rate, pairs, 0.5) / 1e9,
           quantile(off_rate, pairs, 0.5) / 1e9, quantile(ratio, pairs, 0.5), q1, q3, pairs, share,
           checks, takes, hb_engine_describe(sampled));
    free(ratio);
    free(off_rate);
    free(on_rate);
    free(out);
    free(m);
    free(data);
    hb_engine_close(off);
    hb_engine_close(sampled);
    return 0;
}
