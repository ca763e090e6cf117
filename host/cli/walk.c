/*
 * walk.c - the recursive, sorted, loop-safe directory walk (see walk.h).
 *
 * Directories are opened relative to their parent's descriptor (openat,
 * fstatat), so each entry costs one stat and paths are only joined for the
 * callback. Each directory's names are read in full, sorted with strcmp,
 * then visited; the ancestors' (dev, ino) pairs are kept on a stack to
 * detect loops.
 *
 * Owns: traversal order, path joining, loop detection, and the events'
 * causes. Must not: open regular files or special files, print, or stop
 * on an error (errors are events).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "walk.h"

typedef struct {
    dev_t dev;
    ino_t ino;
} dir_id;

typedef struct {
    const walk_opts *o;
    walk_fn fn;
    void *ctx;
    char *path; /* the current path, NUL-terminated */
    size_t len;
    size_t cap;
    dir_id *anc; /* directories being walked, outermost first */
    size_t nanc;
    size_t capanc;
} walker;

/* A directory's names, read whole and sorted. */
typedef struct {
    char *buf; /* the names, each NUL-terminated */
    size_t used;
    size_t cap;
    size_t *off; /* offsets of the names in buf */
    size_t n;
    size_t capn;
} name_list;

void walk_opts_init(walk_opts *o)
{
    memset(o, 0, sizeof *o);
}

/* path_push: appends "/name" (no slash after a trailing one, none on an
 * empty path) to the current path; *old gets the length to restore.
 * Returns 0 or ENOMEM. */
static int path_push(walker *w, const char *name, size_t *old)
{
    size_t nl = strlen(name);
    int slash = w->len > 0 && w->path[w->len - 1] != '/';
    if (cli_grow((void **)&w->path, &w->cap, w->len + (size_t)slash + nl + 1, 1) != 0)
        return ENOMEM;
    *old = w->len;
    if (slash)
        w->path[w->len++] = '/';
    memcpy(w->path + w->len, name, nl + 1);
    w->len += nl;
    return 0;
}

/* path_pop: restores the path to length old. */
static void path_pop(walker *w, size_t old)
{
    w->len = old;
    w->path[old] = '\0';
}

/* emit: one event to the callback; returns its value. */
static int emit(walker *w, walk_kind kind, const struct stat *st, int err, const char *cause,
                size_t depth)
{
    walk_entry e = {kind, w->path, st, err, cause, depth, depth == 0};
    return w->fn(w->ctx, &e);
}

/* emit_error: a WALK_ERROR event for errno err. */
static int emit_error(walker *w, int err, size_t depth)
{
    return emit(w, WALK_ERROR, NULL, err, strerror(err), depth);
}

const char *walk_special_cause(mode_t m)
{
    if (S_ISFIFO(m))
        return "is a FIFO (skipped)";
    if (S_ISSOCK(m))
        return "is a socket (skipped)";
    if (S_ISCHR(m))
        return "is a character device (skipped)";
    if (S_ISBLK(m))
        return "is a block device (skipped)";
    return "is not a regular file (skipped)";
}

static int names_add(name_list *l, const char *name)
{
    size_t nl = strlen(name) + 1;
    if (cli_grow((void **)&l->buf, &l->cap, l->used + nl, 1) != 0 ||
        cli_grow((void **)&l->off, &l->capn, l->n + 1, sizeof *l->off) != 0)
        return ENOMEM;
    memcpy(l->buf + l->used, name, nl);
    l->off[l->n++] = l->used;
    l->used += nl;
    return 0;
}

static const char *sort_base; /* qsort has no context argument in C11 */

static int cmp_off(const void *a, const void *b)
{
    return strcmp(sort_base + *(const size_t *)a, sort_base + *(const size_t *)b);
}

/* read_names: every name in d but "." and "..", sorted. Returns 0, ENOMEM,
 * or the errno of a failed readdir (names read so far are kept). */
static int read_names(DIR *d, name_list *l)
{
    struct dirent *de;
    int e = 0;
    for (;;) {
        errno = 0;
        de = readdir(d);
        if (de == NULL) {
            e = errno;
            break;
        }
        const char *nm = de->d_name;
        if (nm[0] == '.' && (nm[1] == '\0' || (nm[1] == '.' && nm[2] == '\0')))
            continue;
        if ((e = names_add(l, nm)) != 0)
            break;
    }
    sort_base = l->buf;
    if (l->n > 1)
        qsort(l->off, l->n, sizeof *l->off, cmp_off);
    return e;
}

static int visit(walker *w, int parent_fd, const char *name, size_t depth);

/* is_ancestor: is (dev, ino) a directory being walked above? */
static int is_ancestor(const walker *w, const struct stat *st)
{
    for (size_t i = 0; i < w->nanc; i++)
        if (w->anc[i].dev == st->st_dev && w->anc[i].ino == st->st_ino)
            return 1;
    return 0;
}

/* walk_children: visits the entries of the open directory fd (consumed),
 * whose stat is st. Returns 0 to go on, else the value that stops. */
static int walk_children(walker *w, int fd, const struct stat *st, size_t depth)
{
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        int e = errno;
        close(fd);
        return emit_error(w, e, depth);
    }
    name_list l;
    memset(&l, 0, sizeof l);
    int rc = read_names(d, &l);
    if (rc == ENOMEM)
        goto out;
    if (rc != 0 && (rc = emit_error(w, rc, depth)) != 0)
        goto out;
    rc = cli_grow((void **)&w->anc, &w->capanc, w->nanc + 1, sizeof *w->anc);
    if (rc != 0)
        goto out;
    w->anc[w->nanc].dev = st->st_dev;
    w->anc[w->nanc].ino = st->st_ino;
    w->nanc++;
    for (size_t i = 0; i < l.n && rc == 0; i++)
        rc = visit(w, dirfd(d), l.buf + l.off[i], depth + 1);
    w->nanc--;
out:
    closedir(d);
    free(l.buf);
    free(l.off);
    return rc;
}

/* enter_dir: opens the directory at name (relative to parent_fd; the
 * current path for an argument) that stat said is st, checks it is still
 * that directory, and walks it. */
static int enter_dir(walker *w, int parent_fd, const char *name, const struct stat *st,
                     size_t depth)
{
    if (w->o->no_recurse)
        return emit(w, WALK_ERROR, NULL, EISDIR, strerror(EISDIR), depth);
    if (is_ancestor(w, st))
        return emit(w, WALK_LOOP, st, 0,
                    "file system loop: a directory that contains itself "
                    "(not entered again)",
                    depth);
    int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY;
    if (depth > 0 && !w->o->follow_symlinks)
        flags |= O_NOFOLLOW;
    int fd = depth == 0 ? open(w->path, flags) : openat(parent_fd, name, flags);
    if (fd < 0)
        return emit_error(w, errno, depth);
    struct stat now;
    if (fstat(fd, &now) != 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
        close(fd);
        return emit(w, WALK_ERROR, NULL, EAGAIN, "replaced during the walk", depth);
    }
    return walk_children(w, fd, &now, depth);
}

/* stat_entry: the stat of name in parent_fd (an argument: of the path,
 * followed). Returns 0 or an errno value; *is_dangling tells a dangling
 * symlink while following. */
static int stat_entry(walker *w, int parent_fd, const char *name, size_t depth, struct stat *st,
                      int *is_dangling)
{
    *is_dangling = 0;
    int follow = depth == 0 || w->o->follow_symlinks;
    int r = depth == 0 ? stat(w->path, st)
                       : fstatat(parent_fd, name, st, follow ? 0 : AT_SYMLINK_NOFOLLOW);
    if (r == 0)
        return 0;
    int e = errno;
    if (e == ENOENT && follow) {
        r = depth == 0 ? lstat(w->path, st) : fstatat(parent_fd, name, st, AT_SYMLINK_NOFOLLOW);
        if (r == 0 && S_ISLNK(st->st_mode)) {
            *is_dangling = 1;
            return 0;
        }
    }
    return e;
}

/* visit: one entry (name in parent_fd, or the current path at depth 0). */
static int visit(walker *w, int parent_fd, const char *name, size_t depth)
{
    size_t old = w->len;
    if (depth > 0 && path_push(w, name, &old) != 0)
        return ENOMEM;
    struct stat st;
    int dangling;
    int rc;
    int e = stat_entry(w, parent_fd, name, depth, &st, &dangling);
    if (e != 0)
        rc = emit_error(w, e, depth);
    else if (dangling)
        rc = emit(w, WALK_SYMLINK, &st, 0, "dangling symbolic link (skipped)", depth);
    else if (S_ISREG(st.st_mode))
        rc = emit(w, WALK_FILE, &st, 0, "", depth);
    else if (S_ISDIR(st.st_mode))
        rc = enter_dir(w, parent_fd, name, &st, depth);
    else if (S_ISLNK(st.st_mode))
        rc = emit(w, WALK_SYMLINK, &st, 0, "symbolic link (not followed)", depth);
    else
        rc = emit(w, WALK_SPECIAL, &st, 0, walk_special_cause(st.st_mode), depth);
    path_pop(w, old);
    return rc;
}

int walk_paths(char *const *paths, size_t n, const walk_opts *opts, walk_fn fn, void *ctx)
{
    walk_opts defaults;
    walk_opts_init(&defaults);
    walker w;
    memset(&w, 0, sizeof w);
    w.o = opts ? opts : &defaults;
    w.fn = fn;
    w.ctx = ctx;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        size_t l = strlen(paths[i]);
        if ((rc = cli_grow((void **)&w.path, &w.cap, l + 1, 1)) != 0)
            break;
        memcpy(w.path, paths[i], l + 1);
        w.len = l;
        w.nanc = 0;
        rc = visit(&w, AT_FDCWD, paths[i], 0);
    }
    free(w.path);
    free(w.anc);
    return rc;
}
