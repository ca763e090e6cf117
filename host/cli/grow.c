/*
 * grow.c - growing arrays, for the CLI modules that collect paths, lines
 * and records of unknown count (walk, dedup).
 *
 * Owns: doubling an array's capacity until it holds what is needed.
 * Must not: print or exit: a failure is ENOMEM for the caller to report.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "cli.h"

#define FIRST_CAPACITY 16u

int cli_grow(void **p, size_t *cap, size_t need, size_t elem_size)
{
    if (need <= *cap)
        return 0;
    if (elem_size == 0 || need > SIZE_MAX / 2 / elem_size)
        return ENOMEM;
    size_t ncap = *cap ? *cap : FIRST_CAPACITY;
    while (ncap < need)
        ncap *= 2;
    void *np = realloc(*p, ncap * elem_size);
    if (np == NULL)
        return ENOMEM;
    *p = np;
    *cap = ncap;
    return 0;
}
