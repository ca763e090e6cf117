/*
 * cancel_latency.c - how long a cancel of a job of long messages takes.
 *
 * Owns: the measurement behind issue 11, defect 2: a job of 1 GiB + 4 x
 * 256 MiB, or of 4 x 1 GiB, is submitted, and 1 ms later hb_job_cancel
 * (or hb_job_free) is called; the time until that call returns is the
 * latency (the job is then finished: its waiters are awake). Medians of 5
 * per backend (auto, opencl, cpu), and the job's outcome. Uses only the
 * public API, so the same file measures an older library.
 * Must not: check digests (the test suites do), or run under ctest.
 *
 *   hb_cancel_latency [REPEATS]      (default 5)
 */
#include <hashbatch.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GIB ((size_t)1 << 30)
#define MIB ((size_t)1 << 20)
#define MAX_REPEATS 21

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void sleep_ms(double ms)
{
    struct timespec t = {0, (long)(ms * 1e6)};
    nanosleep(&t, NULL);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    const char *name;
    hb_msg m[5];
    size_t n;
} shape;

/* One submit, 1 ms, then cancel or free; returns the seconds the stop took
 * and the outcome seen (HB_ERR_CANCELLED when it landed in time). */
static double stop_once(hb_engine *e, const shape *s, int by_free, hb_status *outcome)
{
    hb_digest out[5];
    hb_job *j;
    if (hb_submit(e, s->m, s->n, out, &j) != HB_OK) {
        fprintf(stderr, "submit failed: %s\n", hb_engine_last_error(e));
        exit(1);
    }
    sleep_ms(1.0);
    double t0 = now_s();
    if (by_free) {
        hb_job_free(j);
        *outcome = HB_ERR_CANCELLED; /* not observable after free */
        return now_s() - t0;
    }
    hb_job_cancel(j);
    double took = now_s() - t0;
    *outcome = hb_job_wait(j, 0);
    hb_job_free(j);
    return took;
}

static void measure(hb_engine *e, const char *backend, const shape *s, int by_free,
                    int repeats)
{
    double took[MAX_REPEATS];
    unsigned ok = 0;
    for (int r = 0; r < repeats; r++) {
        hb_status outcome;
        took[r] = stop_once(e, s, by_free, &outcome);
        ok += outcome == HB_OK;
    }
    qsort(took, (size_t)repeats, sizeof *took, by_value);
    printf("%-7s %-18s %-6s median %8.1f ms  (min %.1f, max %.1f)%s\n", backend, s->name,
           by_free ? "free" : "cancel", took[repeats / 2] * 1e3, took[0] * 1e3,
           took[repeats - 1] * 1e3, ok ? "  [some finished before the cancel]" : "");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int repeats = argc > 1 ? atoi(argv[1]) : 5;
    if (repeats < 1 || repeats > MAX_REPEATS) {
        fprintf(stderr, "usage: hb_cancel_latency [REPEATS 1..%d]\n", MAX_REPEATS);
        return 2;
    }
    uint8_t *data = malloc(GIB);
    if (data == NULL) {
        fprintf(stderr, "out of memory (1 GiB)\n");
        return 1;
    }
    for (size_t i = 0; i < GIB; i += 4096)
        memset(data + i, (int)(i >> 12), 4096);
    shape shapes[2] = {{"1G + 4 x 256M", {{data, GIB}}, 5}, {"4 x 1G", {{data, GIB}}, 4}};
    for (size_t k = 1; k < 5; k++)
        shapes[0].m[k] = (hb_msg){data + (k - 1) * 256 * MIB, 256 * MIB};
    for (size_t k = 1; k < 4; k++)
        shapes[1].m[k] = (hb_msg){data, GIB};
    static const hb_backend_kind kinds[] = {HB_BACKEND_AUTO, HB_BACKEND_OPENCL, HB_BACKEND_CPU};
    for (size_t b = 0; b < 3; b++) {
        hb_config cfg;
        hb_config_init(&cfg);
        cfg.backend = kinds[b];
        hb_engine *e;
        if (hb_engine_open(&e, &cfg) != HB_OK) {
            printf("%-7s not available: %s\n", hb_backend_name(kinds[b]),
                   hb_engine_last_error(NULL));
            continue;
        }
        printf("# %s: %s\n", hb_backend_name(kinds[b]), hb_engine_describe(e));
        for (size_t s = 0; s < 2; s++)
            for (int by_free = 0; by_free < 2; by_free++)
                measure(e, hb_backend_name(kinds[b]), &shapes[s], by_free, repeats);
        hb_engine_close(e);
    }
    free(data);
    return 0;
}
