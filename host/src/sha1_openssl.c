/*
 * sha1_openssl.c - SHA-1 with OpenSSL's low-level API (see sha1_openssl.h).
 *
 * Owns: hb_sha1_openssl, hb_sha1_openssl_blocks, hb_sha1_openssl_finish and the hb_sha1_stream calls. Contexts live with
 * the caller (on the stack): no allocation, no EVP dispatch, which is what
 * makes small messages cheap.
 * Must not: hold state between calls.
 */
#include "sha1_openssl.h"

#include <string.h>

void hb_sha1_openssl(const void *data, size_t len, uint8_t digest[20])
{
    hb_sha1_stream s;
    hb_sha1_stream_init(&s);
    hb_sha1_stream_update(&s, data, len);
    hb_sha1_stream_final(&s, digest);
}

void hb_sha1_stream_init(hb_sha1_stream *s)
{
    SHA1_Init(&s->ctx);
}

void hb_sha1_stream_update(hb_sha1_stream *s, const void *data, size_t len)
{
    if (len > 0)
        SHA1_Update(&s->ctx, data, len);
}

void hb_sha1_stream_final(hb_sha1_stream *s, uint8_t digest[20])
{
    SHA1_Final(digest, &s->ctx);
}

void hb_sha1_openssl_blocks(uint32_t h[5], const void *blocks, size_t nblocks)
{
    /* With nothing buffered (num 0) and whole blocks, SHA1_Update runs the
     * compression straight over them and buffers nothing; the length
     * fields it counts are never used, since SHA1_Final is not called. */
    SHA_CTX c;
    memset(&c, 0, sizeof c);
    c.h0 = h[0], c.h1 = h[1], c.h2 = h[2], c.h3 = h[3], c.h4 = h[4];
    if (nblocks > 0)
        SHA1_Update(&c, blocks, nblocks * SHA_CBLOCK);
    h[0] = c.h0, h[1] = c.h1, h[2] = c.h2, h[3] = c.h3, h[4] = c.h4;
}

void hb_sha1_openssl_finish(const uint32_t h[5], uint64_t done, const void *rest, size_t len,
                            uint8_t digest[20])
{
    /* The context as SHA1_Update leaves it after `done` bytes of whole
     * blocks: the state, the length in bits in two halves, nothing buffered. */
    SHA_CTX c;
    memset(&c, 0, sizeof c);
    c.h0 = h[0], c.h1 = h[1], c.h2 = h[2], c.h3 = h[3], c.h4 = h[4];
    uint64_t bits = done << 3;
    c.Nl = (SHA_LONG)bits;
    c.Nh = (SHA_LONG)(bits >> 32);
    if (len > 0)
        SHA1_Update(&c, rest, len);
    SHA1_Final(digest, &c);
}
