/*
 * sum_list.c - the names `hashbatch sum` hashes, in output order: the
 * arguments as given, and under -r each directory argument replaced by
 * the regular files below it, sorted by the bytes of their full paths
 * (the order of `find DIR -type f -print0 | LC_ALL=C sort -z`).
 *
 * Owns: that order, and reporting what the walk skips (FIFOs, sockets,
 * devices, loops, unreadable directories; symbolic links below an
 * argument are skipped silently unless followed, as find -type f does).
 * Must not: open files (walk.c never opens them either) or hash.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "sum.h"
#include "walk.h"

int sum_list_add(sum_list *l, const char *name, int tree, uint64_t size, uint64_t dev)
{
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 256;
        char **nn = realloc(l->names, ncap * sizeof *nn);
        if (nn != NULL)
            l->names = nn;
        int *nt = nn != NULL ? realloc(l->tree, ncap * sizeof *nt) : NULL;
        if (nt != NULL)
            l->tree = nt;
        uint64_t *nd = nt != NULL ? realloc(l->dev, ncap * sizeof *nd) : NULL;
        if (nd == NULL)
            return ENOMEM;
        l->dev = nd;
        l->cap = ncap;
    }
    if ((l->names[l->n] = strdup(name)) == NULL)
        return ENOMEM;
    l->tree[l->n] = tree;
    l->dev[l->n] = dev;
    l->n++;
    l->bytes += size;
    return 0;
}

void sum_list_free(sum_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    free(l->tree);
    free(l->dev);
    for (size_t i = 0; i < l->ntrees; i++)
        free((char *)l->trees[i].path);
    free(l->trees);
    memset(l, 0, sizeof *l);
}

/* What one walk adds to. */
typedef struct {
    sum_list *list;
    int tree; /* the tree its files are found in, or -1 */
    progress *meter;
} walk_ctx;

/* on_entry: files join the list; what is skipped is said. */
static int on_entry(void *arg, const walk_entry *e)
{
    walk_ctx *c = arg;
    switch (e->kind) {
    case WALK_FILE:
        progress_add(c->meter, 1, (uint64_t)e->st->st_size);
        return sum_list_add(c->list, e->path, c->tree, (uint64_t)e->st->st_size,
                            (uint64_t)e->st->st_dev);
    case WALK_SYMLINK:
        return 0;
    case WALK_SPECIAL:
    case WALK_LOOP:
    case WALK_ERROR:
        break;
    }
    progress_clear(c->meter);
    fflush(stdout);
    fprintf(stderr, "%s: ", CLI_PROGRAM);
    cli_quote_name(stderr, e->path);
    fprintf(stderr, ": %s\n", e->cause);
    c->list->skipped = 1;
    return 0;
}

static int by_bytes(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* is_dir: does name (followed) name a directory? */
static int is_dir(const char *name)
{
    struct stat st;
    return strcmp(name, "-") != 0 && stat(name, &st) == 0 && S_ISDIR(st.st_mode);
}

/* add_named: a name as given, with its size for the meter's total and
 * its device for the read order (0 when not a regular file). */
static int add_named(sum_list *l, const char *name)
{
    struct stat st;
    if (strcmp(name, "-") == 0 || stat(name, &st) != 0 || !S_ISREG(st.st_mode))
        return sum_list_add(l, name, -1, 0, 0);
    return sum_list_add(l, name, -1, (uint64_t)st.st_size, (uint64_t)st.st_dev);
}

/* new_tree: a place in l->trees for the next tree walked, or -1 when out
 * of memory (errno ENOMEM). */
static int new_tree(sum_list *l)
{
    places_root *t = realloc(l->trees, (l->ntrees + 1) * sizeof *t);
    if (t == NULL)
        return -1;
    l->trees = t;
    memset(&t[l->ntrees], 0, sizeof *t);
    return (int)l->ntrees++;
}

/* add_tree: dir's regular files, sorted. Without follow they are found
 * in a tree of their own, its folder as the walk opened it, so that they
 * are read beneath it. Returns 0 or ENOMEM. */
static int add_tree(sum_list *l, char *dir, int follow, progress *meter)
{
    walk_opts wo;
    walk_opts_init(&wo);
    wo.follow_symlinks = follow;
    walk_root root = {0};
    walk_ctx c = {l, -1, meter};
    if (!follow) {
        if ((c.tree = new_tree(l)) < 0)
            return ENOMEM;
        wo.roots = &root;
    }
    size_t from = l->n;
    char *one[] = {dir};
    int rc = walk_paths(one, 1, &wo, on_entry, &c);
    if (rc == 0 && l->n > from) /* none found: names may still be NULL */
        qsort(l->names + from, l->n - from, sizeof *l->names, by_bytes);
    if (c.tree >= 0)
        l->trees[c.tree] = (places_root){root.path, (uint64_t)root.dev, (uint64_t)root.ino};
    return rc;
}

int sum_list_build(sum_list *l, char *const *args, size_t n, int recurse, int follow,
                   progress *meter)
{
    memset(l, 0, sizeof *l);
    progress_stage(meter, "scanning", 0, 0);
    for (size_t i = 0; i < n; i++) {
        int rc = recurse && is_dir(args[i])
                     ? add_tree(l, args[i], follow, meter)
                     : add_named(l, args[i]);
        if (rc != 0) {
            progress_clear(meter);
            cli_error("%s", strerror(rc));
            return rc;
        }
    }
    return 0;
}
