/*
 * dedup_scan.c - the scan of `hashbatch dedup`: walks the roots (walk.c),
 * keeps each regular file that passes the size filters, reports what is
 * skipped, and folds paths of one (dev, ino) into one inode. The walk
 * reports each directory entry once (walk_opts.once), so repeated or
 * overlapping arguments neither count a file twice nor make it look like
 * a hard link of itself.
 *
 * Owns: the path arena, the path and inode tables, and reporting of
 * skipped entries (one stderr line each, counted for the exit status).
 * Must not: open files, or drop a path without saying why (only symbolic
 * links not followed, and files under the size filters, go silently).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "dedup.h"
#include "walk.h"

/* A file as the walk saw it, before paths are folded into inodes. */
typedef struct {
    dev_t dev;
    ino_t ino;
    uint64_t size;
    int64_t mtime_sec;
    long mtime_nsec;
    int64_t ctime_ns;
} dd_seen;

typedef struct {
    dd_run *r;
    dd_seen *seen;
    size_t cap_seen;
    int nomem;
} scan_ctx;

const char *dd_path_name(const dd_run *r, uint32_t i)
{
    return r->arena + r->paths[i].name;
}

const char *dd_inode_name(const dd_run *r, uint32_t k)
{
    return dd_path_name(r, r->by_inode[r->inodes[k].first]);
}

/* remember: keeps a copy of a reported problem for --json. */
static void remember(dd_run *r, const char *path, const char *cause)
{
    if (cli_grow((void **)&r->errs, &r->cap_errs, r->nerrs + 1, sizeof *r->errs) != 0)
        return;
    char *p = strdup(path);
    char *c = strdup(cause);
    if (p == NULL || c == NULL) {
        free(p);
        free(c);
        return;
    }
    r->errs[r->nerrs].path = p;
    r->errs[r->nerrs++].cause = c;
}

void dd_report(dd_run *r, const char *path, const char *cause)
{
    progress_clear(r->meter);
    fflush(stdout);
    fprintf(stderr, "%s: ", CLI_PROGRAM);
    cli_quote_name(stderr, path);
    fprintf(stderr, ": %s\n", cause);
    r->skipped++;
    remember(r, path, cause);
}

void dd_fail_inode(dd_run *r, uint32_t k, const char *cause)
{
    if (r->inodes[k].state == DD_FAILED)
        return;
    r->inodes[k].state = DD_FAILED;
    dd_report(r, dd_inode_name(r, k), cause);
}

/* keep: records one regular file. Returns 0 or ENOMEM. */
static int keep(scan_ctx *c, const char *path, const struct stat *st)
{
    dd_run *r = c->r;
    size_t len = strlen(path) + 1;
    if (r->npaths >= UINT32_MAX - 1)
        return ENOMEM;
    if (cli_grow((void **)&r->arena, &r->arena_cap, r->arena_used + len, 1) != 0 ||
        cli_grow((void **)&r->paths, &r->cap_paths, r->npaths + 1, sizeof *r->paths) != 0 ||
        cli_grow((void **)&c->seen, &c->cap_seen, r->npaths + 1, sizeof *c->seen) != 0)
        return ENOMEM;
    memcpy(r->arena + r->arena_used, path, len);
    dd_path *p = &r->paths[r->npaths];
    p->name = r->arena_used;
    p->order = (uint32_t)r->npaths;
    p->inode = 0;
    dd_seen *s = &c->seen[r->npaths];
    s->dev = st->st_dev;
    s->ino = st->st_ino;
    s->size = (uint64_t)st->st_size;
    s->mtime_sec = (int64_t)st->st_mtim.tv_sec;
    s->mtime_nsec = st->st_mtim.tv_nsec;
    s->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
    r->arena_used += len;
    r->npaths++;
    return 0;
}

/* on_entry: the walk's callback. */
static int on_entry(void *ctx, const walk_entry *e)
{
    scan_ctx *c = ctx;
    dd_run *r = c->r;
    if (atomic_load(&r->stop_scan))
        return ECANCELED;
    switch (e->kind) {
    case WALK_FILE:
        r->scanned++;
        progress_add(r->meter, 1, (uint64_t)e->st->st_size);
        if ((uint64_t)e->st->st_size < r->o->min_size || (e->st->st_size == 0 && !r->o->empty)) {
            r->ignored_small++;
            return 0;
        }
        if (keep(c, e->path, e->st) != 0) {
            c->nomem = 1;
            return ENOMEM;
        }
        return 0;
    case WALK_SYMLINK:
        return 0; /* not followed: not a file, and not an error */
    case WALK_SPECIAL:
    case WALK_LOOP:
    case WALK_ERROR:
        dd_report(r, e->path, e->cause);
        return 0;
    }
    return 0;
}

static const dd_seen *sort_seen; /* qsort has no context argument */
static const dd_run *sort_run;

/* cmp_by_inode: paths by (dev, ino), then walk order. */
static int cmp_by_inode(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const dd_seen *x = &sort_seen[a], *y = &sort_seen[b];
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* same_path_before: does path i repeat a path already in this inode's
 * list? The walk reports each directory entry once, but with -L one path
 * can still be reached twice through links (dedup -L DIR/link DIR). */
static int same_path_before(const dd_run *r, const uint32_t *list, size_t n, uint32_t i)
{
    for (size_t j = 0; j < n; j++)
        if (strcmp(dd_path_name(r, list[j]), dd_path_name(r, i)) == 0)
            return 1;
    return 0;
}

/* build_inodes: folds the paths into inodes (a repeated path counts as
 * scanned once). Returns 0 or ENOMEM. */
static int build_inodes(dd_run *r, const dd_seen *seen)
{
    size_t n = r->npaths;
    uint32_t *idx = malloc((n ? n : 1) * sizeof *idx);
    r->by_inode = malloc((n ? n : 1) * sizeof *r->by_inode);
    r->inodes = calloc(n ? n : 1, sizeof *r->inodes);
    if (idx == NULL || r->by_inode == NULL || r->inodes == NULL) {
        free(idx);
        return ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        idx[i] = (uint32_t)i;
    sort_seen = seen;
    sort_run = r;
    qsort(idx, n, sizeof *idx, cmp_by_inode);
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        const dd_seen *s = &seen[idx[i]];
        dd_inode *k = &r->inodes[r->ninodes];
        k->dev = s->dev;
        k->ino = s->ino;
        k->size = s->size;
        k->mtime_sec = s->mtime_sec;
        k->mtime_nsec = s->mtime_nsec;
        k->ctime_ns = s->ctime_ns;
        k->first = (uint32_t)out;
        k->cls = (uint32_t)r->ninodes;
        size_t j = i;
        for (; j < n && seen[idx[j]].dev == s->dev && seen[idx[j]].ino == s->ino; j++) {
            if (same_path_before(r, r->by_inode + k->first, out - k->first, idx[j])) {
                r->scanned--;
                continue;
            }
            r->paths[idx[j]].inode = (uint32_t)r->ninodes;
            r->by_inode[out++] = idx[j];
        }
        k->npaths = (uint32_t)(out - k->first);
        r->ninodes++;
        i = j;
    }
    free(idx);
    return 0;
}

int dd_scan(dd_run *r, char *const *roots, size_t n)
{
    scan_ctx c;
    memset(&c, 0, sizeof c);
    c.r = r;
    walk_opts wo;
    walk_opts_init(&wo);
    wo.follow_symlinks = r->o->follow_symlinks;
    wo.once = 1; /* a file reached twice (DIR DIR, DIR DIR/sub) is one path */
    progress_stage(r->meter, "scanning", 0, 0);
    int rc = walk_paths(roots, n, &wo, on_entry, &c);
    if (rc == 0 && !c.nomem)
        rc = build_inodes(r, c.seen);
    free(c.seen);
    return rc == ECANCELED ? ECANCELED : rc ? ENOMEM : 0;
}

void dd_free(dd_run *r)
{
    for (size_t i = 0; i < r->nerrs; i++) {
        free(r->errs[i].path);
        free(r->errs[i].cause);
    }
    free(r->errs);
    free(r->arena);
    free(r->paths);
    free(r->inodes);
    free(r->by_inode);
    free(r->groups);
    free(r->group_paths);
    free(r->collisions);
}
