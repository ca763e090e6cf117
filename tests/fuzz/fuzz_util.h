/*
 * fuzz_util.h - what the fuzz targets share: a check that aborts with a
 * message (libFuzzer then keeps the input that failed it), digests in hex
 * for its messages, and a reader
 * that takes numbers from the fuzz input, zeros once it is used up.
 * Must not: hold state between inputs.
 */
#ifndef HB_FUZZ_UTIL_H
#define HB_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* FUZZ_CHECK(target, cond, fmt, ...): aborts, naming the target, the
 * condition and its place, if cond is false. */
#define FUZZ_CHECK(target, cond, ...)                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s: check failed: %s (%s:%d): ", target, #cond, __FILE__, __LINE__);  \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* fuzz_hex: a 20-byte digest as 40 hex digits and a NUL, for messages. */
static inline void fuzz_hex(const uint8_t *d, char out[41])
{
    for (int k = 0; k < 20; k++)
        snprintf(out + 2 * k, 3, "%02x", d[k]);
}

/* The unread rest of a fuzz input. */
typedef struct {
    const uint8_t *p;
    size_t left;
} reader;

/* read_byte: the next byte, or 0 once the input is used up. */
static inline unsigned read_byte(reader *r)
{
    if (r->left == 0)
        return 0;
    r->left--;
    return *r->p++;
}

/* read_bytes: the next n bytes (n <= 8) as a big-endian number. */
static inline uint64_t read_bytes(reader *r, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | read_byte(r);
    return v;
}

#endif
