/*
 * walk.c - the recursive, sorted, loop-safe directory walk (see walk.h).
 *
 * Directories are opened relative to their parent's descriptor (openat,
 * fstatat), so each entry costs one stat and paths are only joined for the
 * callback; a directory's entries are stat-ed on every core at once
 * (stat_ahead.c) before they are visited in order. Each directory's names are read in full, sorted with strcmp,
 * then visited; the ancestors' (dev, ino) pairs are kept on a stack to
 * detect loops. With once, every directory entered goes into a set, and
 * file arguments are kept as (parent directory, name) entries, so that no
 * directory entry is reported twice.
 *
 * Owns: traversal order, path joining, loop detection, the once rule,
 * the events' causes, and (walk_opts.roots) each argument's root. Must
 * not: open regular files or special files, print, or stop on an error
 * (errors are events).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "fileid_set.h"
#include "stat_ahead.h"
#include "walk.h"

typedef fileid dir_id;

/* A file argument as a directory entry: its parent directory and name. */
typedef struct {
    fileid parent;
    char *name;
} arg_entry;

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
    fileid_set entered; /* once: every directory entered */
    arg_entry *args;    /* once: the file arguments reported */
    size_t nargs, capargs;
    size_t links;   /* once: symlinked directories being walked */
    size_t argi;    /* the argument being walked (its walk_root) */
    stat_ahead *sa; /* stats each directory's entries on every core */
} walker;

/* An entry's stat taken ahead of its visit (stat_ahead.c). */
typedef struct {
    const struct stat *st;
    int err; /* 0: st holds it; else the visit stats it again itself */
} pre_stat;

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

static int visit(walker *w, int parent_fd, const char *name, size_t depth, const pre_stat *pre);

/* is_ancestor: is (dev, ino) a directory being walked above? */
static int is_ancestor(const walker *w, const struct stat *st)
{
    for (size_t i = 0; i < w->nanc; i++)
        if (w->anc[i].dev == st->st_dev && w->anc[i].ino == st->st_ino)
            return 1;
    return 0;
}

/* visit_names: visits the entries l of the directory fd in order, their
 * stats taken ahead on every core (without them, each visit stats its
 * entry itself). Returns 0 to go on, else the value that stops. */
static int visit_names(walker *w, int fd, const name_list *l, size_t depth)
{
    const char **names = malloc((l->n ? l->n : 1) * sizeof *names);
    struct stat *sts = malloc((l->n ? l->n : 1) * sizeof *sts);
    int *errs = malloc((l->n ? l->n : 1) * sizeof *errs);
    int ahead = names != NULL && sts != NULL && errs != NULL;
    if (ahead) {
        for (size_t i = 0; i < l->n; i++)
            names[i] = l->buf + l->off[i];
        sa_stat_all(w->sa, fd, names, l->n, w->o->follow_symlinks ? 0 : AT_SYMLINK_NOFOLLOW, sts,
                    errs);
    }
    int rc = 0;
    for (size_t i = 0; i < l->n && rc == 0; i++) {
        pre_stat pre = {ahead ? &sts[i] : NULL, ahead ? errs[i] : -1};
        rc = visit(w, fd, l->buf + l->off[i], depth, &pre);
    }
    free(names);
    free(sts);
    free(errs);
    return rc;
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
    rc = visit_names(w, dirfd(d), &l, depth + 1);
    w->nanc--;
out:
    closedir(d);
    free(l.buf);
    free(l.off);
    return rc;
}

/* via_symlink: with follow_symlinks, is the entry (name in parent_fd, or
 * the argument itself at depth 0) a symbolic link, followed? */
static int via_symlink(const walker *w, int parent_fd, const char *name, size_t depth)
{
    struct stat l;
    if (!w->o->follow_symlinks)
        return 0;
    int r = depth == 0 ? lstat(w->path, &l) : fstatat(parent_fd, name, &l, AT_SYMLINK_NOFOLLOW);
    return r == 0 && S_ISLNK(l.st_mode);
}

/* once_enter: the once rule for a directory about to be entered (linked:
 * reached through a symbolic link while following): -1 when it was
 * walked already (its entries were reported: pass it over), else 0 (it
 * is recorded), or ENOMEM. A directory reached through a link, or below
 * one, is neither checked nor recorded: its entries are other names of
 * the files, as a hard link is, and the real directory must still be
 * walked when the walk reaches it. */
static int once_enter(walker *w, const struct stat *st, int linked)
{
    if (!w->o->once || linked || w->links > 0)
        return 0;
    dir_id id = {st->st_dev, st->st_ino};
    if (fileid_set_has(&w->entered, id))
        return -1;
    return fileid_set_add(&w->entered, id);
}

/* note_root: with o->roots, records path[0..len) (NULL: the current
 * path) and st as the current argument's root. 0 or ENOMEM. */
static int note_root(walker *w, const char *path, size_t len, const struct stat *st)
{
    if (w->o->roots == NULL)
        return 0;
    walk_root *r = &w->o->roots[w->argi];
    free(r->path);
    if ((r->path = path ? strndup(path, len) : strdup(w->path)) == NULL)
        return ENOMEM;
    r->dev = st->st_dev;
    r->ino = st->st_ino;
    return 0;
}

void walk_roots_free(walk_root *roots, size_t n)
{
    for (size_t i = 0; roots != NULL && i < n; i++) {
        free(roots[i].path);
        roots[i].path = NULL;
    }
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
    int linked = w->o->once && via_symlink(w, parent_fd, name, depth);
    int rc = once_enter(w, st, linked);
    if (rc < 0 && depth == 0)
        return note_root(w, NULL, 0, st); /* walked already, from another argument */
    if (rc != 0)
        return rc < 0 ? 0 : rc;
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
    if (depth == 0 && (rc = note_root(w, NULL, 0, &now)) != 0) {
        close(fd);
        return rc;
    }
    w->links += (size_t)linked;
    rc = walk_children(w, fd, &now, depth);
    w->links -= (size_t)linked;
    return rc;
}

/* stat_entry: the stat of name in parent_fd (an argument: of the path,
 * followed), or the one taken ahead when it succeeded (a failed one is
 * taken again here, for its cause). Returns 0 or an errno value;
 * *is_dangling tells a dangling symlink while following. */
static int stat_entry(walker *w, int parent_fd, const char *name, size_t depth,
                      const pre_stat *pre, struct stat *st, int *is_dangling)
{
    *is_dangling = 0;
    if (pre != NULL && pre->err == 0) {
        *st = *pre->st;
        return 0;
    }
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

/* arg_dir: the directory that holds the argument path, as written (its
 * text up to the last slash; "/" for "/name"; "." when there is none).
 * Returns a malloc'd string, or NULL (ENOMEM). */
static char *arg_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t len = slash == NULL ? 0 : slash == path ? 1 : (size_t)(slash - path);
    return slash == NULL ? strdup(".") : strndup(path, len);
}

/* arg_parent: the identity of arg_dir(path). Returns 0 or an errno value. */
static int arg_parent(const char *path, fileid *out)
{
    char *dir = arg_dir(path);
    if (dir == NULL)
        return ENOMEM;
    struct stat st;
    int rc = stat(dir, &st) == 0 ? 0 : errno;
    free(dir);
    out->dev = st.st_dev;
    out->ino = st.st_ino;
    return rc;
}

/* note_file_root: with o->roots, records the directory holding the file
 * argument being walked as its root (none when it cannot be stat-ed).
 * 0 or ENOMEM. */
static int note_file_root(walker *w)
{
    if (w->o->roots == NULL)
        return 0;
    char *dir = arg_dir(w->path);
    if (dir == NULL)
        return ENOMEM;
    struct stat st;
    int rc = stat(dir, &st) == 0 ? note_root(w, dir, strlen(dir), &st) : 0;
    free(dir);
    return rc;
}

/* arg_index: the file argument that is the entry name of parent, or -1. */
static ptrdiff_t arg_index(const walker *w, fileid parent, const char *name)
{
    for (size_t i = 0; i < w->nargs; i++)
        if (w->args[i].parent.dev == parent.dev && w->args[i].parent.ino == parent.ino &&
            strcmp(w->args[i].name, name) == 0)
            return (ptrdiff_t)i;
    return -1;
}

/* seen_arg: with once, has the file argument at w->path been reported
 * (its directory walked, or an earlier argument naming the same entry)?
 * Else it is recorded. Returns 1, 0, or -1 when out of memory. */
static int seen_arg(walker *w)
{
    fileid parent;
    if (arg_parent(w->path, &parent) != 0)
        return 0; /* no parent to compare with: reported as given */
    const char *slash = strrchr(w->path, '/');
    const char *name = slash ? slash + 1 : w->path;
    if (fileid_set_has(&w->entered, parent) || arg_index(w, parent, name) >= 0)
        return 1;
    if (cli_grow((void **)&w->args, &w->capargs, w->nargs + 1, sizeof *w->args) != 0 ||
        (w->args[w->nargs].name = strdup(name)) == NULL)
        return -1;
    w->args[w->nargs++].parent = parent;
    return 0;
}

/* seen_entry: with once, was the file entry (name in the directory being
 * walked, or the argument at depth 0) reported already? 1, 0 or -1. */
static int seen_entry(walker *w, const char *name, size_t depth)
{
    if (!w->o->once)
        return 0;
    if (depth == 0)
        return seen_arg(w);
    return w->nargs > 0 && arg_index(w, w->anc[w->nanc - 1], name) >= 0;
}

/* visit: one entry (name in parent_fd, or the current path at depth 0),
 * with its stat when it was taken ahead (pre; NULL: none). */
static int visit(walker *w, int parent_fd, const char *name, size_t depth, const pre_stat *pre)
{
    size_t old = w->len;
    if (depth > 0 && path_push(w, name, &old) != 0)
        return ENOMEM;
    struct stat st;
    int dangling;
    int rc;
    int e = stat_entry(w, parent_fd, name, depth, pre, &st, &dangling);
    int seen = e == 0 && !dangling && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)
                   ? seen_entry(w, name, depth)
                   : 0;
    if (seen != 0)
        rc = seen < 0 ? ENOMEM : 0;
    else if (e != 0)
        rc = emit_error(w, e, depth);
    else if (dangling)
        rc = emit(w, WALK_SYMLINK, &st, 0, "dangling symbolic link (skipped)", depth);
    else if (S_ISREG(st.st_mode) && depth == 0 && (rc = note_file_root(w)) != 0)
        ; /* out of memory */
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
    w.sa = sa_open();
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        size_t l = strlen(paths[i]);
        if ((rc = cli_grow((void **)&w.path, &w.cap, l + 1, 1)) != 0)
            break;
        memcpy(w.path, paths[i], l + 1);
        w.len = l;
        w.nanc = 0;
        w.argi = i;
        rc = visit(&w, AT_FDCWD, paths[i], 0, NULL);
    }
    sa_close(w.sa);
    free(w.path);
    free(w.anc);
    fileid_set_free(&w.entered);
    for (size_t i = 0; i < w.nargs; i++)
        free(w.args[i].name);
    free(w.args);
    return rc;
}
