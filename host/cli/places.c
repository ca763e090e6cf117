/*
 * places.c - where a file found by a scan is, resolved once: the root the
 * scan found it under (a DIR of `dedup DIR...`, opened when the places
 * are made, as the user wrote it, and shown to be the directory the scan
 * saw), then the rest of its path, beneath that root with no symbolic
 * link followed (beneath.c). `link` and `remove` take the folder holding
 * a file and make every check and change on that folder's descriptor and
 * the file's last name; dedup's reads open the file itself the same way.
 *
 * A path under no root (a plan made before roots were recorded, by a
 * merge, or by hand) is resolved whole with no symbolic link followed:
 * from "/" when absolute, else from the working directory.
 *
 * Every root is opened by places_new, so the places may be used from
 * several threads at once.
 *
 * Owns: the mapping of a path to (root, rest). Must not: read or change
 * the files, print, or exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "beneath.h"
#include "places.h"

/* One root, as opened when the places were made. */
typedef struct {
    const char *path; /* the caller's */
    int fd;           /* O_PATH descriptor, -1 when refused */
    const char *why;  /* the refusal, when fd < 0 */
    int err;          /* its errno, when why is NULL */
} root_state;

struct places {
    root_state *roots;
    size_t nroots;
    int slash_fd; /* "/" for absolute paths under no root, or -1 */
};

/* open_root: r, as the user wrote it, shown to be the scan's directory. */
static void open_root(root_state *rs, const places_root *r)
{
    rs->path = r->path;
    rs->fd = open(r->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rs->fd < 0) {
        rs->err = errno;
        return;
    }
    struct stat st;
    if (fstat(rs->fd, &st) != 0 || (uint64_t)st.st_dev != r->dev || (uint64_t)st.st_ino != r->ino) {
        close(rs->fd);
        rs->fd = -1;
        rs->why = "the folder the scan started from is another one now (replaced since the "
                  "scan): left alone";
    }
}

places *places_new(const places_root *roots, size_t n)
{
    places *pl = calloc(1, sizeof *pl);
    if (pl == NULL || (n && (pl->roots = calloc(n, sizeof *pl->roots)) == NULL)) {
        free(pl);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        pl->roots[i].fd = -1;
        if (roots[i].path != NULL)
            open_root(&pl->roots[i], &roots[i]);
    }
    pl->nroots = n;
    pl->slash_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    return pl;
}

void places_free(places *pl)
{
    if (pl == NULL)
        return;
    for (size_t i = 0; i < pl->nroots; i++)
        if (pl->roots[i].fd >= 0)
            close(pl->roots[i].fd);
    if (pl->slash_fd >= 0)
        close(pl->slash_fd);
    free(pl->roots);
    free(pl);
}

/* covers: does root r cover path ("tree" covers "tree/x", "tree/"
 * covers "tree/x", "." covers "x", the name of a FILE argument given
 * without a folder)? Sets *n to the length of path that r names. */
static int covers(const char *path, const char *r, size_t *n)
{
    *n = strlen(r);
    if (*n == 0)
        return 0;
    if (strncmp(path, r, *n) == 0 && (r[*n - 1] == '/' || path[*n] == '/'))
        return 1;
    *n = 0;
    return (strcmp(r, ".") == 0 || strcmp(r, "./") == 0) && path[0] != '/' &&
           strncmp(path, "../", 3) != 0 && strchr(path, '/') == NULL;
}

/* root_of: the index of the longest root covering path, or -1. */
static long root_of(const places *pl, const char *path, size_t *covered)
{
    long best = -1;
    *covered = 0;
    for (size_t i = 0; i < pl->nroots; i++) {
        size_t n;
        if (pl->roots[i].path == NULL)
            continue;
        if (covers(path, pl->roots[i].path, &n) && (best < 0 || n > *covered)) {
            *covered = n;
            best = (long)i;
        }
    }
    return best;
}

int places_root_fd(const places *pl, size_t i, const char **why)
{
    *why = NULL;
    const root_state *rs = i < pl->nroots ? &pl->roots[i] : NULL;
    if (rs == NULL || rs->path == NULL) {
        errno = EINVAL;
        return -1;
    }
    if (rs->fd < 0) {
        *why = rs->why;
        errno = rs->err;
    }
    return rs->fd;
}

long places_below(const places *pl, size_t i, const char *path)
{
    size_t n;
    if (i >= pl->nroots || pl->roots[i].path == NULL || !covers(path, pl->roots[i].path, &n))
        return -1;
    while (path[n] == '/')
        n++;
    return (long)n;
}

long places_root_of(const places *pl, const char *path, size_t *rel)
{
    long ri = root_of(pl, path, rel);
    while (ri >= 0 && path[*rel] == '/')
        (*rel)++;
    return ri;
}

/* base_without_root: where a path outside every root is resolved from. */
static int base_without_root(const places *pl, const char *path, size_t *skip)
{
    *skip = 0;
    if (path[0] != '/')
        return AT_FDCWD;
    while (path[*skip] == '/')
        (*skip)++;
    return pl->slash_fd;
}

/* refusal: the reason for errno e met while resolving a file's folder. */
static const char *refusal(int e)
{
    switch (e) {
    case ELOOP:
        return "a folder in its path is a symbolic link (replaced since the scan, or followed "
               "by dedup -L): left alone, not followed";
    case EXDEV:
        return "its path leads outside the folder the scan started from: left alone";
    case ENOTDIR:
        return "a folder in its path is not a folder now (changed since the scan): left alone";
    default:
        return NULL;
    }
}

/* base_of: the descriptor path is resolved from, with *skip the length
 * of path it stands for and *beneath whether ".." may not climb out.
 * Returns -1 (with *why, or errno) when path's root was refused. */
static int base_of(const places *pl, const char *path, size_t *skip, int *beneath, const char **why)
{
    long ri = places_root_of(pl, path, skip);
    *beneath = ri >= 0;
    if (ri < 0)
        return base_without_root(pl, path, skip);
    const root_state *rs = &pl->roots[ri];
    if (rs->fd < 0) {
        *why = rs->why;
        errno = rs->err;
    }
    return rs->fd;
}

int places_dir(const places *pl, const char *path, const char **leaf, const char **why)
{
    *why = NULL;
    size_t dir_len, skip;
    int beneath;
    *leaf = bn_leaf(path, &dir_len);
    if (!bn_leaf_ok(*leaf)) {
        *why = "its path does not end in a file name";
        return -1;
    }
    int base = base_of(pl, path, &skip, &beneath, why);
    if (base == -1)
        return -1;
    size_t rel_len = dir_len > skip ? dir_len - skip : 0;
    int fd = bn_open_dir(base, path + skip, rel_len, beneath);
    if (fd < 0)
        *why = refusal(errno);
    return fd;
}

int places_open(const places *pl, const char *path, int flags, const char **why)
{
    *why = NULL;
    size_t skip;
    int beneath;
    int base = base_of(pl, path, &skip, &beneath, why);
    if (base == -1)
        return -1;
    return bn_open_file(base, path + skip, flags, beneath);
}
