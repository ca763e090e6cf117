/*
 * mb_streams.h - messages that arrive in pieces (files read chunk by
 * chunk), their blocks hashed side by side in multi-buffer lanes.
 *
 * Owns: the state of a message hashed in pieces, appending a piece to
 * each of several such messages at once, and the end of one.
 * Must not: allocate, read files or know who feeds the pieces.
 */
#ifndef HB_MB_STREAMS_H
#define HB_MB_STREAMS_H

#include <stddef.h>
#include <stdint.h>

#include "mb/mb_batch.h"
#include "mb/mb_impl.h"

typedef struct {
    uint32_t h[5];  /* SHA-1 state after the whole blocks so far */
    uint64_t bytes; /* bytes appended so far */
} hb_mb_stream;

/* hb_mb_stream_init: an empty message. */
void hb_mb_stream_init(hb_mb_stream *s);

/* hb_mb_streams_update: for each k < n, appends the len[k] bytes at
 * data[k] (a multiple of 64: whole blocks) to *s[k]. The n messages go
 * through impl's lanes side by side (n of them at most at once), or one
 * by one through OpenSSL where the measured costs (mb_costs.h) say that
 * is cheaper, as for the end of a list (mb_batch.h); with
 * HB_CPU_IMPL_SHA_NI always one by one. */
void hb_mb_streams_update(hb_cpu_impl impl, hb_mb_stream *const *s, const uint8_t *const *data,
                          const size_t *len, size_t n);

/* hb_mb_streams_update_checked: hb_mb_streams_update, its lanes checked
 * by structure (check NULL: not checked): the first kernel call of each
 * group of pieces runs two blocks of every lane, and each lane's two are
 * hashed again by OpenSSL from the state the piece started from (so a
 * state carried in from the previous piece is checked too); check's out
 * fields count runs, bytes and mismatches (tails stays 0: the last bytes
 * and the padding are OpenSSL's, hb_mb_stream_final). A mismatch does not
 * stop the update: the caller redoes the pieces from their saved states. */
void hb_mb_streams_update_checked(hb_cpu_impl impl, hb_mb_stream *const *s,
                                  const uint8_t *const *data, const size_t *len, size_t n,
                                  hb_mb_check *check);

/* hb_mb_stream_final: appends the last len bytes (any length) to s, by
 * OpenSSL, and writes the digest of everything appended; s is spent. */
void hb_mb_stream_final(hb_mb_stream *s, const void *rest, size_t len, uint8_t digest[20]);

#endif /* HB_MB_STREAMS_H */
