/*
 * mb_kernel.c - the multi-buffer lanes alone, on one thread: no engine,
 * no queue, no verification.
 *
 * Owns: timing hb_mb_hash (host/src/mb/mb_batch.h, the measured tail
 * rule) over COUNT distinct messages of BYTES laid back to back in one
 * buffer (random bytes, touched before timing), the fastest of ROUNDS,
 * and checking a sample of the digests against OpenSSL first. What
 * bench/RESULTS.md compares with isa-l_crypto on one thread
 * (`isal_peer BYTES COUNT 5 1`).
 * Usage: hb_mb_kernel BYTES COUNT [IMPL] [ROUNDS]   IMPL: avx512 (default),
 *        avx2, portable. Prints one line: impl, shape, GB/s, M msg/s.
 */
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mb/mb_batch.h"
#include "mb/mb_impl.h"

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int usage(void)
{
    fprintf(stderr, "usage: hb_mb_kernel BYTES COUNT [avx512|avx2|portable] [ROUNDS]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    size_t len = strtoull(argv[1], NULL, 0), count = strtoull(argv[2], NULL, 0);
    hb_cpu_impl impl = HB_CPU_IMPL_AVX512;
    if (argc > 3 && (hb_cpu_impl_parse(argv[3], &impl) != HB_OK || impl == HB_CPU_IMPL_SHA_NI)) {
        fprintf(stderr, "hb_mb_kernel: '%s' is not a multi-buffer implementation this CPU runs\n",
                argv[3]);
        return 2;
    }
    if (argc <= 3 && !hb_cpu_impl_runnable(impl))
        impl = HB_CPU_IMPL_PORTABLE;
    int rounds = argc > 4 ? atoi(argv[4]) : 5;
    if (count == 0 || rounds < 1)
        return usage();
    unsigned char *buf = malloc(len * count + 1);
    hb_msg *m = malloc(count * sizeof *m);
    hb_digest *out = malloc(count * sizeof *out);
    if (buf == NULL || m == NULL || out == NULL) {
        fprintf(stderr, "hb_mb_kernel: out of memory\n");
        return 1;
    }
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < len * count; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (unsigned char)x;
    }
    for (size_t i = 0; i < count; i++)
        m[i] = (hb_msg){buf + i * len, len};
    hb_mb_hash(impl, HB_MB_TAIL_MEASURED, m, NULL, count, out, NULL, NULL);
    for (size_t i = 0; i < count; i += count / 1000 + 1) {
        unsigned char want[20];
        SHA1(m[i].data, m[i].len, want);
        if (memcmp(want, out[i], 20) != 0) {
            fprintf(stderr, "hb_mb_kernel: digest of message %zu differs from OpenSSL's\n", i);
            return 1;
        }
    }
    double best = 1e30;
    for (int r = 0; r < rounds; r++) {
        double t = seconds_now();
        hb_mb_hash(impl, HB_MB_TAIL_MEASURED, m, NULL, count, out, NULL, NULL);
        t = seconds_now() - t;
        best = t < best ? t : best;
    }
    printf("%s %zu B x %zu: %.2f GB/s, %.2f M msg/s (one thread, fastest of %d)\n",
           hb_cpu_impl_describe(impl)->name, len, count, (double)(len * count) / best / 1e9,
           (double)count / best / 1e6, rounds);
    free(buf), free(m), free(out);
    return 0;
}
