/*
 * prng.h - the library's one pseudo-random generator.
 *
 * Owns: splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom
 * number generators", OOPSLA 2014; the seeder of xoshiro): the state
 * advances by the golden-ratio constant and the output is that state
 * through a 64-bit finaliser. Every state is valid (0 too), every output
 * of 2^64 appears once per period, and it passes BigCrush: plenty for
 * choosing what verification samples, seeding a batch's sample, and
 * placing injected faults.
 * Must not: be used where an attacker could gain from predicting it (it
 * is not cryptographic), or keep hidden state: callers own theirs.
 */
#ifndef HB_PRNG_H
#define HB_PRNG_H

#include <stdint.h>

/* hb_prng_next: the next 64-bit value of the stream whose state is *state
 * (advanced). Not thread-safe on one state: callers lock or own it. */
uint64_t hb_prng_next(uint64_t *state);

/* hb_prng_below: a value in [0, n) from *state (n > 0); the modulo's
 * bias, below n / 2^64, does not matter for sampling. */
uint64_t hb_prng_below(uint64_t *state, uint64_t n);

#endif /* HB_PRNG_H */
