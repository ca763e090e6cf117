/*
 * service_bench.c - benchmarks of the hashing service (issue: service).
 *
 * Owns: two measurements that unit tests must not make:
 *   coalesce BACKEND THREADS SECONDS [INFLIGHT]
 *       THREADS threads each hash single 64-byte messages for SECONDS:
 *       through the engine (INFLIGHT 0: hb_sha1_batch per message; N > 0:
 *       each thread keeps N one-message jobs in flight), then the same
 *       threads calling OpenSSL's SHA-1 directly. Prints messages/second
 *       of both and their ratio.
 *   latency BACKEND COUNT
 *       one 64-byte job at a time on an otherwise idle engine, COUNT
 *       times: submit to wait's return, p50 / p90 / p99 / max in us.
 */
#include <hashbatch.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MSG_BYTES 64

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct {
    hb_engine *engine; /* NULL: OpenSSL directly */
    double seconds;
    unsigned inflight;
    uint64_t done;
    int failed;
} coalesce_thread;

static atomic_int go;

static void fill(unsigned char *m, uint64_t i)
{
    memset(m, 0, MSG_BYTES);
    memcpy(m, &i, sizeof i);
}

static void *openssl_loop(void *arg)
{
    coalesce_thread *t = arg;
    unsigned char m[MSG_BYTES], d[20];
    while (!atomic_load(&go))
        ;
    double end = seconds_now() + t->seconds;
    uint64_t i = 0;
    while ((i & 255) != 0 || seconds_now() < end) {
        fill(m, i++);
        SHA_CTX c;
        SHA1_Init(&c);
        SHA1_Update(&c, m, sizeof m);
        SHA1_Final(d, &c);
    }
    t->done = i;
    return NULL;
}

/* inflight 0: hb_sha1_batch, one message per call */
static void sync_loop(coalesce_thread *t)
{
    unsigned char m[MSG_BYTES];
    hb_digest d;
    while (!atomic_load(&go))
        ;
    double end = seconds_now() + t->seconds;
    uint64_t i = 0;
    while ((i & 255) != 0 || seconds_now() < end) {
        fill(m, i++);
        hb_msg msg = {m, sizeof m};
        t->failed |= hb_sha1_batch(t->engine, &msg, 1, &d) != HB_OK;
    }
    t->done = i;
}

static void *engine_loop(void *arg)
{
    coalesce_thread *t = arg;
    unsigned k = t->inflight;
    if (k == 0) {
        sync_loop(t);
        return NULL;
    }
    unsigned char (*m)[MSG_BYTES] = calloc(k, MSG_BYTES);
    hb_msg *msgs = calloc(k, sizeof *msgs);
    hb_digest *out = calloc(k, sizeof *out);
    hb_job **jobs = calloc(k, sizeof *jobs);
    while (!atomic_load(&go))
        ;
    double end = seconds_now() + t->seconds;
    uint64_t i = 0;
    for (unsigned s = 0; s < k; s++) {
        fill(m[s], i++);
        msgs[s] = (hb_msg){m[s], MSG_BYTES};
        t->failed |= hb_submit(t->engine, &msgs[s], 1, &out[s], &jobs[s]) != HB_OK;
    }
    for (unsigned s = 0;; s = (s + 1) % k) {
        t->failed |= hb_job_wait(jobs[s], -1) != HB_OK;
        hb_job_free(jobs[s]);
        t->done++;
        if (seconds_now() >= end)
            break;
        fill(m[s], i++);
        t->failed |= hb_submit(t->engine, &msgs[s], 1, &out[s], &jobs[s]) != HB_OK;
    }
    for (unsigned s = 0; s < k; s++) /* the ones still in flight */
        if (t->done < i) {
            hb_job_wait(jobs[(s) % k], -1);
        }
    free(jobs);
    free(out);
    free(msgs);
    free(m);
    return NULL;
}

static double run_threads(hb_engine *e, unsigned threads, double seconds, unsigned inflight)
{
    coalesce_thread *t = calloc(threads, sizeof *t);
    pthread_t *ids = calloc(threads, sizeof *ids);
    atomic_store(&go, 0);
    for (unsigned i = 0; i < threads; i++) {
        t[i] = (coalesce_thread){e, seconds, inflight, 0, 0};
        pthread_create(&ids[i], NULL, e ? engine_loop : openssl_loop, &t[i]);
    }
    double start = seconds_now();
    atomic_store(&go, 1);
    uint64_t total = 0;
    int failed = 0;
    for (unsigned i = 0; i < threads; i++) {
        pthread_join(ids[i], NULL);
        total += t[i].done;
        failed |= t[i].failed;
    }
    double rate = (double)total / (seconds_now() - start);
    free(ids);
    free(t);
    return failed ? -1.0 : rate;
}

static hb_engine *open_engine(const char *backend)
{
    hb_config cfg;
    hb_config_init(&cfg);
    if (strcmp(backend, "all") == 0) {
        cfg.device = "all";
    } else if (hb_backend_parse(backend, &cfg.backend) != HB_OK) {
        fprintf(stderr, "unknown backend %s (auto, opencl, cpu, all)\n", backend);
        return NULL;
    }
    hb_engine *e;
    hb_status st = hb_engine_open(&e, &cfg);
    if (st != HB_OK) {
        fprintf(stderr, "open: %s: %s\n", hb_status_str(st), hb_engine_last_error(NULL));
        return NULL;
    }
    return e;
}

static int coalesce(const char *backend, unsigned threads, double seconds, unsigned inflight)
{
    hb_engine *e = open_engine(backend);
    if (e == NULL)
        return 1;
    double engine_rate = run_threads(e, threads, seconds, inflight);
    double openssl_rate = run_threads(NULL, threads, seconds, 1);
    hb_stats st;
    hb_engine_stats(e, &st);
    printf("coalesce %-6s threads %2u inflight %3u: engine %10.0f msg/s, openssl direct %10.0f "
           "msg/s, ratio %.3f, %.1f messages per internal batch  [%s]\n",
           backend, threads, inflight, engine_rate, openssl_rate, engine_rate / openssl_rate,
           st.batches ? (double)st.messages / (double)st.batches : 0.0, hb_engine_describe(e));
    hb_engine_close(e);
    return engine_rate < 0;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int latency(const char *backend, unsigned count)
{
    hb_engine *e = open_engine(backend);
    if (e == NULL)
        return 1;
    double *us = calloc(count, sizeof *us);
    unsigned char m[MSG_BYTES];
    hb_digest d;
    for (unsigned i = 0; i < count + 100; i++) {
        fill(m, i);
        hb_msg msg = {m, sizeof m};
        hb_job *j;
        double t0 = seconds_now();
        if (hb_submit(e, &msg, 1, &d, &j) != HB_OK || hb_job_wait(j, -1) != HB_OK)
            return 1;
        double t1 = seconds_now();
        hb_job_free(j);
        if (i >= 100) /* the first 100 warm up */
            us[i - 100] = (t1 - t0) * 1e6;
    }
    qsort(us, count, sizeof *us, by_value);
    printf("latency  %-6s %u jobs of 64 B: p50 %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us  [%s]\n",
           backend, count, us[count / 2], us[count * 9 / 10], us[count * 99 / 100], us[count - 1],
           hb_engine_describe(e));
    free(us);
    hb_engine_close(e);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[1], "coalesce") == 0)
        return coalesce(argv[2], (unsigned)atoi(argv[3]), atof(argv[4]),
                        argc > 5 ? (unsigned)atoi(argv[5]) : 0u);
    if (argc >= 4 && strcmp(argv[1], "latency") == 0)
        return latency(argv[2], (unsigned)atoi(argv[3]));
    fprintf(stderr, "usage: hb_service_bench coalesce BACKEND THREADS SECONDS [INFLIGHT]\n"
                    "       hb_service_bench latency BACKEND COUNT\n"
                    "BACKEND: cpu, opencl, auto, or all (auto with device \"all\")\n");
    return 2;
}
