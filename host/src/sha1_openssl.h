/*
 * sha1_openssl.h - one message's SHA-1 through OpenSSL, the reference.
 *
 * Owns: the single call into OpenSSL's SHA-1 that the CPU backend and the
 * verifier share. Uses the low-level interface (SHA-NI where present, no
 * per-call context allocation), not the slower one-shot path.
 */
#ifndef HB_SHA1_OPENSSL_H
#define HB_SHA1_OPENSSL_H

#include <stddef.h>
#include <stdint.h>

void hb_sha1_openssl(const void *data, size_t len, uint8_t digest[20]);

#endif /* HB_SHA1_OPENSSL_H */
