/*
 * absorb.h - a string's bytes into OpenSSL's SHA-1, prefetched a page
 * ahead (absorb.c).
 */
#ifndef HB_EXT_ABSORB_H
#define HB_EXT_ABSORB_H

#include <stddef.h>
#include <openssl/sha.h>

/* hb_sha1_absorb: SHA1_Update(ctx, data, n), each 4 KiB page's lines
 * asked for before it is hashed. Needs no GVL; thread-safe per ctx. */
void hb_sha1_absorb(SHA_CTX *ctx, const void *data, size_t n);

#endif
