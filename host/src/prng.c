/*
 * prng.c - splitmix64 (see prng.h).
 *
 * Owns: hb_prng_next and hb_prng_below.
 * Must not: allocate, lock, or read anything but the caller's state.
 */
#include "prng.h"

uint64_t hb_prng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

uint64_t hb_prng_below(uint64_t *state, uint64_t n)
{
    return hb_prng_next(state) % n;
}
