/*
 * ceiling.c - how fast this machine hashes the Feature #11625 data with no
 * Ruby at all: N separately allocated SIZE-byte buffers (as Ruby keeps
 * its strings), SHA-1 of each with OpenSSL's low-level calls, split over
 * THREADS threads. The floor under any Ruby run of the workload.
 * With ONE_STRING=1 in the environment every message is one buffer, as in
 * the program of the Feature (one String pushed N times): hot in the cache.
 *
 * Usage: ceiling N SIZE REPS THREADS...   prints "threads seconds" lines
 *        (the median of REPS runs for each thread count).
 */
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    unsigned char **bufs;
    long n, size, first, step;
    unsigned sink;
} share;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *hash_share(void *arg)
{
    share *s = arg;
    unsigned char md[SHA_DIGEST_LENGTH];
    for (long i = s->first; i < s->n; i += s->step) {
        SHA_CTX ctx;
        SHA1_Init(&ctx);
        SHA1_Update(&ctx, s->bufs[i], (size_t)s->size);
        SHA1_Final(md, &ctx);
        s->sink += md[0];
    }
    return NULL;
}

static double run(unsigned char **bufs, long n, long size, int threads)
{
    pthread_t th[64];
    share sh[64];
    double t0 = now();
    for (int k = 0; k < threads; k++) {
        sh[k] = (share){bufs, n, size, k, threads, 0};
        pthread_create(&th[k], NULL, hash_share, &sh[k]);
    }
    for (int k = 0; k < threads; k++)
        pthread_join(th[k], NULL);
    return now() - t0;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s N SIZE REPS THREADS...\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]), size = atol(argv[2]);
    int reps = atoi(argv[3]);
    if (n <= 0 || size <= 0 || reps <= 0 || reps > 99) {
        fprintf(stderr, "ceiling: N, SIZE and REPS (1-99) must be positive\n");
        return 2;
    }
    unsigned char **bufs = malloc((size_t)n * sizeof *bufs);
    const char *one = getenv("ONE_STRING");
    int one_string = one != NULL && strcmp(one, "1") == 0;
    for (long i = 0; bufs && i < n; i++) {
        bufs[i] = one_string && i > 0 ? bufs[0] : malloc((size_t)size);
        if (!bufs[i]) {
            fprintf(stderr, "ceiling: out of memory\n");
            return 1;
        }
        if (!one_string || i == 0)
            memset(bufs[i], (int)i, (size_t)size);
    }
    for (int a = 4; a < argc; a++) {
        int threads = atoi(argv[a]);
        if (threads < 1 || threads > 64) {
            fprintf(stderr, "ceiling: THREADS must be 1-64 (got %s)\n", argv[a]);
            return 2;
        }
        double t[99];
        for (int r = 0; r < reps; r++)
            t[r] = run(bufs, n, size, threads);
        qsort(t, (size_t)reps, sizeof t[0], by_value);
        printf("%d %.3f\n", threads, t[reps / 2]);
    }
    return 0;
}
