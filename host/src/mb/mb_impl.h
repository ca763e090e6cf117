/*
 * mb_impl.h - the CPU implementations of SHA-1 and the choice among them.
 *
 * Owns: the list of implementations (OpenSSL's one message at a time, and
 * the multi-buffer ones: AVX-512 with 16 lanes, AVX2 with 8, portable C
 * vectors with 4), whether this CPU runs each, and their names (as
 * HASHBATCH_CPU_IMPL spells them). Each multi-buffer implementation is a
 * function that runs SHA-1's compression over `lanes` independent
 * messages at once. Which one an engine uses when none is asked for is
 * measured (mb_costs.h).
 * Must not: know messages, batches or lanes' bookkeeping (mb_batch.c).
 */
#ifndef HB_MB_IMPL_H
#define HB_MB_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "hashbatch.h"

typedef enum {
    HB_CPU_IMPL_SHA_NI = 0, /* OpenSSL, one message at a time (SHA-NI where present) */
    HB_CPU_IMPL_PORTABLE,   /* C vector extensions, 4 lanes: every machine */
    HB_CPU_IMPL_AVX2,       /* 8 lanes in ymm registers */
    HB_CPU_IMPL_AVX512,     /* 16 lanes in zmm registers (vprold, vpternlogd) */
    HB_CPU_IMPL_COUNT
} hb_cpu_impl;

/* The most lanes any implementation has. */
#define HB_MB_LANES_MAX 16u

/* mb_blocks_fn: for every lane l < lanes, state[k * lanes + l] (k < 5) is
 * lane l's SHA-1 state; runs nblocks (>= 1) compressions over the 64-byte
 * blocks at block[l], block[l] + 64, ... Every block[l] must be readable
 * for nblocks * 64 bytes, whether or not its lane's result is wanted. */
typedef void (*hb_mb_blocks_fn)(uint32_t *state, const uint8_t *const *block, size_t nblocks);

typedef struct {
    const char *name;       /* as HASHBATCH_CPU_IMPL spells it */
    unsigned lanes;         /* 0 for HB_CPU_IMPL_SHA_NI */
    hb_mb_blocks_fn blocks; /* NULL for HB_CPU_IMPL_SHA_NI */
} hb_cpu_impl_desc;

/* hb_cpu_impl_describe: the description of impl (valid for every impl). */
const hb_cpu_impl_desc *hb_cpu_impl_describe(hb_cpu_impl impl);

/* hb_cpu_impl_runnable: 1 if this CPU can run impl. */
int hb_cpu_impl_runnable(hb_cpu_impl impl);

/* hb_cpu_impl_parse: the implementation named `name` ("avx512", "avx2",
 * "portable", "sha-ni"). HB_ERR_INVALID_ARGUMENT for any other name, and
 * for one this CPU cannot run (*out is then set, so the caller can tell
 * the two apart: hb_cpu_impl_runnable). */
hb_status hb_cpu_impl_parse(const char *name, hb_cpu_impl *out);

/* Per-implementation kernels (mb_avx512.c, mb_avx2.c, mb_portable.c). */
void hb_mb_blocks_avx512(uint32_t *state, const uint8_t *const *block, size_t nblocks);
void hb_mb_blocks_avx2(uint32_t *state, const uint8_t *const *block, size_t nblocks);
void hb_mb_blocks_portable(uint32_t *state, const uint8_t *const *block, size_t nblocks);

#endif /* HB_MB_IMPL_H */
