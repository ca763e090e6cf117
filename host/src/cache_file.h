/*
 * cache_file.h - the library's files under $XDG_CACHE_HOME/hashbatch/:
 * where they live, reading one without trusting it, replacing one
 * atomically.
 *
 * Owns: the cache folder's path rule (an environment override, else XDG,
 * else $HOME/.cache), the bounded read of a regular file, and the write
 * through a temporary file beside the target and a rename.
 * Must not: print, report errors or hold locks: a cache that cannot be
 * read or written is simply not there, and the caller goes on without it.
 */
#ifndef HB_CACHE_FILE_H
#define HB_CACHE_FILE_H

#include <stddef.h>

/* hb_cache_file_path: into buf, the path of name under the cache folder:
 * the environment variable env_override when set (then "" or "off" mean
 * no cache, and any other value is the path itself, name not appended),
 * else $XDG_CACHE_HOME/hashbatch/NAME (an absolute XDG_CACHE_HOME only),
 * else $HOME/.cache/hashbatch/NAME. Returns 1 with buf filled; 0 when
 * there is no cache (off, no home, or the path does not fit in size). */
int hb_cache_file_path(char *buf, size_t size, const char *env_override, const char *name);

/* hb_cache_file_beside: into buf, the path of name in the folder of the
 * file that hb_cache_file_path(env_override, file_name) gives, so that
 * one setting (a path, or "off") governs both. Returns 0 as that does. */
int hb_cache_file_beside(char *buf, size_t size, const char *env_override, const char *file_name,
                         const char *name);

/* hb_cache_file_read: up to max_bytes of the regular file at path (opened
 * without blocking: a FIFO there is not waited on), malloc'd into *buf
 * (*len bytes, plus a terminating NUL not counted). Returns 0 when it
 * cannot be read or is not a regular file. */
int hb_cache_file_read(const char *path, size_t max_bytes, char **buf, size_t *len);

/* hb_cache_file_replace: len bytes of data at path, atomically: the
 * folders above it made (0700) where missing, a temporary file beside it
 * written and renamed over it. Returns 1 when path was replaced; 0 when
 * not, with no temporary file left behind. */
int hb_cache_file_replace(const char *path, const void *data, size_t len);

#endif /* HB_CACHE_FILE_H */
