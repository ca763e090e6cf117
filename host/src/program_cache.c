/*
 * program_cache.c - the files of built OpenCL programs (see
 * program_cache.h).
 *
 * Owns: the key's arithmetic, the file's header and its checks.
 * Must not: call OpenCL or print; every failure returns 0.
 */
#include "program_cache.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_file.h"
#include "hashbatch.h"
#include "sha1_openssl.h"

#define STRINGIFY(x) #x
#define VERSION_TEXT(v) STRINGIFY(v)
#define MAGIC "hashbatch-program " VERSION_TEXT(HB_PROGRAM_CACHE_VERSION) " "
#define HEADER_MAX 128 /* magic, key, length and SHA-1 fit well within */

static void to_hex(const uint8_t digest[20], char hex[HB_PROGRAM_KEY_HEX])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 20; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[40] = '\0';
}

/* One part into the key: its length first, so no two lists of parts
 * hash the same bytes. */
static void key_part(hb_sha1_stream *s, const void *data, size_t len)
{
    uint64_t n = len;
    hb_sha1_stream_update(s, &n, sizeof n);
    hb_sha1_stream_update(s, data, len);
}

void hb_program_key(char key[HB_PROGRAM_KEY_HEX], const char *const parts[], size_t nparts,
                    const void *source, size_t source_len)
{
    hb_sha1_stream s;
    hb_sha1_stream_init(&s);
    key_part(&s, HB_VERSION_STRING, strlen(HB_VERSION_STRING));
    for (size_t i = 0; i < nparts; i++)
        key_part(&s, parts[i] != NULL ? parts[i] : "", parts[i] != NULL ? strlen(parts[i]) : 0);
    key_part(&s, source, source_len);
    uint8_t digest[20];
    hb_sha1_stream_final(&s, digest);
    to_hex(digest, key);
}

int hb_program_cache_path(char *buf, size_t size, const char *key)
{
    char dir[4096];
    if (key == NULL || !hb_cache_file_path(dir, sizeof dir, "HASHBATCH_PROGRAM_CACHE", "programs"))
        return 0;
    int n = snprintf(buf, size, "%s/%s.bin", dir, key);
    return n > 0 && (size_t)n < size;
}

static void header_of(char out[HEADER_MAX], const char *key, size_t len, const char *sha)
{
    snprintf(out, HEADER_MAX, MAGIC "%s %zu %s\n", key, len, sha);
}

static void digest_hex(const void *data, size_t len, char hex[HB_PROGRAM_KEY_HEX])
{
    uint8_t digest[20];
    hb_sha1_openssl(data, len, digest);
    to_hex(digest, hex);
}

/* The binary's length as the header after the key states it, and where
 * the binary starts; 0 when the file does not start as ours for key. */
static int parse_header(const char *buf, size_t len, const char *key, size_t *binary_len,
                        size_t *binary_at)
{
    char expect[HEADER_MAX];
    snprintf(expect, sizeof expect, MAGIC "%s ", key);
    size_t el = strlen(expect);
    const char *nl = memchr(buf, '\n', len < HEADER_MAX ? len : HEADER_MAX);
    if (nl == NULL || len < el || memcmp(buf, expect, el) != 0)
        return 0;
    char *end;
    unsigned long long n = strtoull(buf + el, &end, 10);
    if (end == buf + el || *end != ' ' || n > HB_PROGRAM_CACHE_MAX_BYTES)
        return 0;
    *binary_at = (size_t)(nl - buf) + 1;
    *binary_len = (size_t)n;
    return *binary_at + *binary_len == len;
}

int hb_program_cache_load(const char *path, const char *key, unsigned char **binary, size_t *len)
{
    char *buf;
    size_t got, n, at;
    if (path == NULL || key == NULL ||
        !hb_cache_file_read(path, HB_PROGRAM_CACHE_MAX_BYTES + HEADER_MAX, &buf, &got))
        return 0;
    int ok = parse_header(buf, got, key, &n, &at) && n > 0;
    char sha[HB_PROGRAM_KEY_HEX], want[HEADER_MAX];
    if (ok) {
        digest_hex(buf + at, n, sha);
        header_of(want, key, n, sha);
        ok = strlen(want) == at && memcmp(want, buf, at) == 0;
    }
    unsigned char *b = ok ? malloc(n) : NULL;
    if (b != NULL)
        memcpy(b, buf + at, n);
    free(buf);
    if (b == NULL)
        return 0;
    *binary = b;
    *len = n;
    return 1;
}

int hb_program_cache_store(const char *path, const char *key, const unsigned char *binary,
                           size_t len)
{
    if (path == NULL || key == NULL || binary == NULL || len == 0 ||
        len > HB_PROGRAM_CACHE_MAX_BYTES)
        return 0;
    char sha[HB_PROGRAM_KEY_HEX], header[HEADER_MAX];
    digest_hex(binary, len, sha);
    header_of(header, key, len, sha);
    size_t hl = strlen(header);
    char *file = malloc(hl + len);
    if (file == NULL)
        return 0;
    memcpy(file, header, hl);
    memcpy(file + hl, binary, len);
    int ok = hb_cache_file_replace(path, file, hl + len);
    free(file);
    return ok;
}
