/*
 * program_cache.h - built OpenCL programs kept between runs, so that an
 * engine opens without compiling its kernels again.
 *
 * Owns: one file per build under $XDG_CACHE_HOME/hashbatch/programs/
 * (HASHBATCH_PROGRAM_CACHE names another folder; "" or "off" turns the
 * cache off), named by the build's key: the SHA-1 of everything the
 * binary depends on (this library's version, the platform, device and
 * driver, the build options, the kernel source). A file holds a header
 * line, "hashbatch-program 1 KEY LENGTH SHA1", then LENGTH bytes of the
 * driver's binary whose SHA-1 the header gives: a file that is truncated,
 * corrupt, foreign or for another key is not found.
 * Why: pocl preprocesses and hashes the whole source on every build, even
 * one it has cached (about 60 of the 130 ms an engine open costs on a
 * 2-core Zen 3); from its binary the same program builds in about 20.
 * Must not: call OpenCL (the backend builds; this only keeps bytes),
 * print, or report errors: a cache that cannot be read or written is not
 * there, and the backend builds from source.
 */
#ifndef HB_PROGRAM_CACHE_H
#define HB_PROGRAM_CACHE_H

#include <stddef.h>

#define HB_PROGRAM_CACHE_VERSION 1
#define HB_PROGRAM_KEY_HEX 41 /* 40 hex digits and a NUL */
/* A driver's binary larger than this is not kept (pocl's: about 1 MB). */
#define HB_PROGRAM_CACHE_MAX_BYTES (64u << 20)

/* hb_program_key: the key of a build into key (HB_PROGRAM_KEY_HEX bytes)
 * from nparts NUL-terminated strings (the device's identity, the
 * options) and the kernel source (source_len bytes). */
void hb_program_key(char key[HB_PROGRAM_KEY_HEX], const char *const parts[], size_t nparts,
                    const void *source, size_t source_len);

/* hb_program_cache_path: the file for key into buf; 0 when there is no
 * cache (turned off, no home, or the path does not fit). */
int hb_program_cache_path(char *buf, size_t size, const char *key);

/* hb_program_cache_load: 1 with *binary (malloc'd, the caller frees it)
 * and *len filled when the file at path holds a good binary for key;
 * else 0. */
int hb_program_cache_load(const char *path, const char *key, unsigned char **binary, size_t *len);

/* hb_program_cache_store: the binary for key at path, atomically (the
 * folders above it made where missing). Returns 1 when stored. */
int hb_program_cache_store(const char *path, const char *key, const unsigned char *binary,
                           size_t len);

#endif /* HB_PROGRAM_CACHE_H */
