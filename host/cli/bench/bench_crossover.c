/*
 * bench_crossover.c - where an OpenCL backend overtakes the cpu backend
 * in the batch sweep of `hashbatch bench`.
 *
 * Owns: the definition of the crossover: the smallest measured batch
 * from which the backend's median messages/s stays above the cpu
 * backend's (the "cpu" row: the pool's default implementation) at every
 * larger measured batch. Must not: measure or print.
 */
#include <string.h>

#include "bench.h"

int bench_cpu_index(const bench_report *rep)
{
    for (size_t i = 0; i < rep->backends.n; i++)
        if (strcmp(rep->backends.b[i].kind, "cpu") == 0 && !rep->backends.b[i].cpu_forced)
            return (int)i;
    return -1;
}

long long bench_crossover(const bench_report *rep, int backend, size_t size)
{
    int cpu = bench_cpu_index(rep);
    const bench_list *batches = &rep->opts->batches;
    if (cpu < 0 || batches->n == 0)
        return -1;
    long long from = 0; /* the batch from which it is ahead, so far */
    int measured = 0;
    for (size_t i = batches->n; i-- > 0;) { /* from the largest batch down */
        size_t n = batches->v[i];
        const bench_result *d = bench_report_find(rep, BENCH_SWEEP_BATCH, backend, size, n);
        const bench_result *c = bench_report_find(rep, BENCH_SWEEP_BATCH, cpu, size, n);
        if (d == NULL || c == NULL)
            continue;
        measured = 1;
        if (d->mps.median <= c->mps.median)
            break;
        from = (long long)n;
    }
    return measured ? from : -1;
}
