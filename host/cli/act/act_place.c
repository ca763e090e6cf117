/*
 * act_place.c - where a file of a plan is, resolved once: the root the
 * scan found it under (a DIR of `dedup DIR...`, opened once per run as
 * the user wrote it and shown to be the directory the scan saw), then
 * the folder holding the file, opened beneath that root with no symbolic
 * link followed (beneath.c). Every later check and change of the file is
 * made on that folder's descriptor and the file's last name.
 *
 * A plan without roots (made before they were recorded, by a merge, or
 * by hand) has each path resolved whole with no symbolic link followed:
 * from "/" when absolute, else from the working directory.
 *
 * Owns: the mapping of a plan path to (root, folder, name). Must not:
 * open the files themselves, print, or exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "act.h"
#include "beneath.h"

/* The state of one root of the plan in this run. */
typedef struct {
    int tried;       /* opened (or refused) already */
    int fd;          /* O_PATH descriptor, -1 when refused */
    const char *why; /* the refusal, when fd < 0 */
    int err;         /* its errno, when why is NULL */
} root_state;

struct act_places {
    const act_plan *plan;
    root_state *roots;
    int slash_fd; /* "/" for absolute paths without a root, or -1 */
};

act_places *act_places_new(const act_plan *p)
{
    act_places *pl = calloc(1, sizeof *pl);
    if (pl == NULL)
        return NULL;
    pl->plan = p;
    pl->slash_fd = -1;
    if (p->nroots && (pl->roots = calloc(p->nroots, sizeof *pl->roots)) == NULL) {
        free(pl);
        return NULL;
    }
    return pl;
}

void act_places_free(act_places *pl)
{
    if (pl == NULL)
        return;
    for (size_t i = 0; i < pl->plan->nroots; i++)
        if (pl->roots[i].tried && pl->roots[i].fd >= 0)
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
static long root_of(const act_plan *p, const char *path, size_t *covered)
{
    long best = -1;
    *covered = 0;
    for (size_t i = 0; i < p->nroots; i++) {
        size_t n;
        if (covers(path, p->roots[i].path, &n) && (best < 0 || n > *covered)) {
            *covered = n;
            best = (long)i;
        }
    }
    return best;
}

long act_place_root(const act_places *pl, const act_file *f, size_t *rel)
{
    long ri = root_of(pl->plan, f->path, rel);
    while (ri >= 0 && f->path[*rel] == '/')
        (*rel)++;
    return ri;
}

/* open_root: root i, once per run, shown to be the scan's directory. */
static root_state *open_root(act_places *pl, size_t i)
{
    root_state *rs = &pl->roots[i];
    if (rs->tried)
        return rs;
    rs->tried = 1;
    const act_root *r = &pl->plan->roots[i];
    rs->fd = open(r->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rs->fd < 0) {
        rs->err = errno;
        return rs;
    }
    struct stat st;
    if (fstat(rs->fd, &st) != 0 || (uint64_t)st.st_dev != r->dev || (uint64_t)st.st_ino != r->ino) {
        close(rs->fd);
        rs->fd = -1;
        rs->why = "the folder the scan started from is another one now (replaced since the "
                  "scan): left alone";
    }
    return rs;
}

/* base_without_root: where a path outside every root is resolved from. */
static int base_without_root(act_places *pl, const char *path, size_t *skip)
{
    *skip = 0;
    if (path[0] != '/')
        return AT_FDCWD;
    while (path[*skip] == '/')
        (*skip)++;
    if (pl->slash_fd < 0)
        pl->slash_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    return pl->slash_fd;
}

/* refusal: the reason for errno e met while resolving a file's folder. */
static const char *refusal(int e)
{
    switch (e) {
    case ELOOP:
        return "a folder in its path is a symbolic link now (changed since the scan): left "
               "alone, not followed";
    case EXDEV:
        return "its path leads outside the folder the scan started from: left alone";
    case ENOTDIR:
        return "a folder in its path is not a folder now (changed since the scan): left alone";
    default:
        return NULL;
    }
}

int act_place_dir(act_places *pl, const act_file *f, const char **leaf, const char **why)
{
    *why = NULL;
    size_t dir_len, covered;
    *leaf = bn_leaf(f->path, &dir_len);
    if (!bn_leaf_ok(*leaf)) {
        *why = "its path does not end in a file name";
        return -1;
    }
    long ri = root_of(pl->plan, f->path, &covered);
    int base, beneath = ri >= 0;
    size_t skip = covered;
    if (ri >= 0) {
        root_state *rs = open_root(pl, (size_t)ri);
        if (rs->fd < 0) {
            *why = rs->why;
            errno = rs->err;
            return -1;
        }
        base = rs->fd;
        while (f->path[skip] == '/')
            skip++;
    } else if ((base = base_without_root(pl, f->path, &skip)) == -1)
        return -1;
    size_t rel_len = dir_len > skip ? dir_len - skip : 0;
    int fd = bn_open_dir(base, f->path + skip, rel_len, beneath);
    if (fd < 0)
        *why = refusal(errno);
    return fd;
}
