/*
 * beneath.c - the command's side of reaching files beneath a folder: a
 * path split into its folder and its last name, the folder opened
 * (O_PATH) through the library's hb_open_beneath, which resolves it
 * without following a symbolic link (beneath.h says why), and a folder
 * remembered for a run of names in it.
 *
 * Owns: the splitting, the folder form of the resolution, the memo. Must not:
 * print, exit, or act on what it opens.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "beneath.h"
#include "hashbatch.h"

#define DIR_FLAGS (O_PATH | O_DIRECTORY)

int bn_open_dir(int base, const char *rel, size_t len, int beneath)
{
    if (len == 0)
        return openat(base, ".", DIR_FLAGS | O_CLOEXEC);
    char *copy = malloc(len + 1);
    if (copy == NULL) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(copy, rel, len);
    copy[len] = '\0';
    int fd = hb_open_beneath(base, copy, DIR_FLAGS, beneath ? HB_RESOLVE_BENEATH : 0);
    int e = errno;
    free(copy);
    errno = e;
    return fd;
}

int bn_open_file(int base, const char *rel, int flags, int beneath)
{
    return hb_open_beneath(base, rel, flags, beneath ? HB_RESOLVE_BENEATH : 0);
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

int bn_memo_find(const bn_memo *m, const char *path, size_t len)
{
    return m->path != NULL && m->len == len && memcmp(m->path, path, len) == 0 ? m->fd : -1;
}

int bn_memo_keep(bn_memo *m, const char *path, size_t len, int fd)
{
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return -1;
    memcpy(copy, path, len);
    copy[len] = '\0';
    bn_memo_forget(m);
    *m = (bn_memo){copy, len, fd};
    return 0;
}

void bn_memo_forget(bn_memo *m)
{
    if (m->path != NULL)
        close(m->fd);
    free(m->path);
    *m = (bn_memo)BN_MEMO_INIT;
}
