/*
 * sha1_openssl.h - SHA-1 on the CPU through OpenSSL, the reference.
 *
 * Owns: the library's only calls into OpenSSL's SHA-1: one message at once
 * (the CPU backend, the verifier) and a message in pieces (files streamed in
 * chunks, long messages hashed between cancellation checks), and blocks
 * from a given state (the multi-buffer lanes' stragglers). Uses the
 * low-level interface (SHA-NI where present, no per-call context
 * allocation), not the slower EVP path.
 * Must not: be bypassed: no other file includes <openssl/sha.h>.
 */
#ifndef HB_SHA1_OPENSSL_H
#define HB_SHA1_OPENSSL_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/sha.h>

/* hb_sha1_openssl: digest = SHA-1(data[0..len)). data may be NULL if len is 0. */
void hb_sha1_openssl(const void *data, size_t len, uint8_t digest[20]);

/* hb_sha1_openssl_blocks: runs SHA-1's compression over nblocks 64-byte
 * blocks from state h (a message's first blocks, or the rest of one that
 * multi-buffer lanes began): padding is the caller's. */
void hb_sha1_openssl_blocks(uint32_t h[5], const void *blocks, size_t nblocks);

/* hb_sha1_openssl_finish: the digest of a message whose first `done`
 * bytes (a multiple of 64) left state h, and whose last len bytes are
 * rest: OpenSSL appends them and pads. The verifier's check of a tail. */
void hb_sha1_openssl_finish(const uint32_t h[5], uint64_t done, const void *rest, size_t len,
                            uint8_t digest[20]);

/* A message hashed in pieces: init, any number of updates, final once. */
typedef struct {
    SHA_CTX ctx;
} hb_sha1_stream;

void hb_sha1_stream_init(hb_sha1_stream *s);
/* hb_sha1_stream_update: appends data[0..len) (data may be NULL if len is 0). */
void hb_sha1_stream_update(hb_sha1_stream *s, const void *data, size_t len);
/* hb_sha1_stream_final: the digest of everything appended; s is spent. */
void hb_sha1_stream_final(hb_sha1_stream *s, uint8_t digest[20]);

#endif /* HB_SHA1_OPENSSL_H */
