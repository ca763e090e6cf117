/*
 * beneath.c - a folder opened beneath another without following a
 * symbolic link (beneath.h says why). openat2 resolves the whole path in
 * the kernel in one call; kernels before 5.6 (ENOSYS) and filesystems
 * that refuse it get the walk of one component at a time.
 *
 * Owns: the resolution. Must not: print, exit, or act on what it opens.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "beneath.h"

#define DIR_FLAGS (O_PATH | O_DIRECTORY | O_CLOEXEC)

/* openat2_at: the kernel's resolution of rel from base, opened with
 * flags. Returns the descriptor, or -1 with errno (ENOSYS: no openat2). */
static int openat2_at(int base, const char *rel, int flags, int beneath)
{
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (uint64_t)flags;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | (beneath ? RESOLVE_BENEATH : 0);
    for (;;) {
        long fd = syscall(SYS_openat2, base, rel, &how, sizeof how);
        if (fd >= 0 || errno != EAGAIN)
            return (int)fd;
        /* EAGAIN: a rename raced the lookup of ".."; try again. */
    }
}

/* open_component: one name of a path, never through a symbolic link. */
static int open_component(int at, const char *name)
{
    int fd = openat(at, name, DIR_FLAGS | O_NOFOLLOW);
    if (fd < 0 && errno == ENOTDIR) {
        struct stat st;
        if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            errno = ELOOP;
        else
            errno = ENOTDIR;
    }
    return fd;
}

/* walk_dir: the fallback, one component at a time; rel is writable. */
static int walk_dir(int base, char *rel, int beneath)
{
    int cur = openat(base, ".", DIR_FLAGS);
    char *save = NULL;
    for (char *c = strtok_r(rel, "/", &save); cur >= 0 && c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, ".") == 0)
            continue;
        if (strcmp(c, "..") == 0 && beneath) {
            close(cur);
            errno = EXDEV;
            return -1;
        }
        int next = open_component(cur, c);
        int e = errno;
        close(cur);
        errno = e;
        cur = next;
    }
    return cur;
}

int bn_open_dir(int base, const char *rel, size_t len, int beneath)
{
    if (len == 0)
        return openat(base, ".", DIR_FLAGS);
    char *copy = malloc(len + 1);
    if (copy == NULL) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(copy, rel, len);
    copy[len] = '\0';
    int fd = openat2_at(base, copy, DIR_FLAGS, beneath);
    if (fd < 0 && (errno == ENOSYS || errno == EPERM))
        fd = walk_dir(base, copy, beneath); /* EPERM: a seccomp filter's refusal */
    int e = errno;
    free(copy);
    errno = e;
    return fd;
}

int bn_open_file(int base, const char *rel, int flags, int beneath)
{
    flags |= O_NOFOLLOW | O_CLOEXEC;
    int fd = openat2_at(base, rel, flags, beneath);
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
        return fd;
    size_t dir_len;
    const char *leaf = bn_leaf(rel, &dir_len);
    int dir = bn_open_dir(base, rel, dir_len, beneath);
    if (dir < 0)
        return -1;
    fd = openat(dir, leaf, flags);
    int e = errno;
    close(dir);
    errno = e;
    return fd;
}

const char *bn_leaf(const char *path, size_t *dir_len)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        *dir_len = 0;
        return path;
    }
    size_t n = (size_t)(slash - path);
    while (n > 0 && path[n - 1] == '/')
        n--;
    *dir_len = n == 0 ? 1 : n; /* "/x": the folder is "/" */
    return slash + 1;
}

int bn_leaf_ok(const char *leaf)
{
    return leaf[0] != '\0' && strcmp(leaf, ".") != 0 && strcmp(leaf, "..") != 0;
}
