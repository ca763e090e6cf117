/*
 * sha1_openssl.c - SHA-1 of one message with OpenSSL's low-level API.
 *
 * Owns: hb_sha1_openssl. The context lives on the stack: no allocation,
 * no EVP dispatch, which is what makes small messages cheap.
 * Must not: hold state between calls.
 */
#include "sha1_openssl.h"

#include <openssl/sha.h>

void hb_sha1_openssl(const void *data, size_t len, uint8_t digest[20])
{
    SHA_CTX ctx;
    SHA1_Init(&ctx);
    if (len > 0)
        SHA1_Update(&ctx, data, len);
    SHA1_Final(digest, &ctx);
}
