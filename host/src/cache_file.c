/*
 * cache_file.c - reading and replacing the library's cache files (see
 * cache_file.h).
 *
 * Owns: the path rule, the bounded non-blocking read and the atomic
 * replace shared by the model cache and the program cache.
 * Must not: print or report errors; every failure unlinks what it made.
 */
#include "cache_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_SUFFIX ".tmp-XXXXXX"

static int path_join(char *buf, size_t size, const char *a, const char *b, const char *c)
{
    int n = snprintf(buf, size, "%s%s%s", a, b, c);
    return n > 0 && (size_t)n < size;
}

int hb_cache_file_path(char *buf, size_t size, const char *env_override, const char *name)
{
    if (buf == NULL || size == 0 || name == NULL)
        return 0;
    const char *env = env_override != NULL ? getenv(env_override) : NULL;
    if (env != NULL) {
        if (env[0] == '\0' || strcmp(env, "off") == 0)
            return 0;
        return path_join(buf, size, env, "", "");
    }
    /* XDG: a relative or empty XDG_CACHE_HOME is to be ignored */
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg != NULL && xdg[0] == '/')
        return path_join(buf, size, xdg, "/hashbatch/", name);
    const char *home = getenv("HOME");
    if (home != NULL && home[0] != '\0')
        return path_join(buf, size, home, "/.cache/hashbatch/", name);
    return 0;
}

int hb_cache_file_beside(char *buf, size_t size, const char *env_override, const char *file_name,
                         const char *name)
{
    char file[4096];
    if (!hb_cache_file_path(file, sizeof file, env_override, file_name))
        return 0;
    char *slash = strrchr(file, '/');
    if (slash == NULL)
        return path_join(buf, size, name, "", "");
    slash[1] = '\0';
    return path_join(buf, size, file, name, "");
}

int hb_cache_file_read(const char *path, size_t max_bytes, char **buf, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return 0;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0) {
        close(fd);
        return 0;
    }
    size_t cap = (uint64_t)st.st_size < max_bytes ? (size_t)st.st_size : max_bytes;
    char *b = malloc(cap + 1);
    size_t got = 0;
    while (b != NULL && got < cap) {
        ssize_t r = read(fd, b + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (b == NULL)
        return 0;
    b[got] = '\0';
    *buf = b;
    *len = got;
    return 1;
}

/* make_parents: mkdir (0700) every folder above the file at path, those
 * that exist failing harmlessly. What cannot be made, the temporary
 * file's creation finds. */
static void make_parents(const char *path)
{
    char dir[PATH_MAX];
    size_t n = strlen(path);
    if (n >= sizeof dir)
        return;
    memcpy(dir, path, n + 1);
    for (char *p = dir + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        (void)mkdir(dir, 0700);
        *p = '/';
    }
}

static int write_all(int fd, const char *b, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, b, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return 0;
        b += w;
        len -= (size_t)w;
    }
    return 1;
}

int hb_cache_file_replace(const char *path, const void *data, size_t len)
{
    char tmp[PATH_MAX];
    if (path == NULL || path[0] == '\0' || !path_join(tmp, sizeof tmp, path, TMP_SUFFIX, ""))
        return 0;
    make_parents(path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return 0;
    int ok = write_all(fd, data, len);
    ok = close(fd) == 0 && ok;
    ok = ok && rename(tmp, path) == 0;
    if (!ok)
        unlink(tmp);
    return ok;
}
