/*
 * dedup_scan.c - the scan of `hashbatch dedup`: walks the roots (walk.c),
 * keeps each regular file that passes the size filters, reports what is
 * skipped, and folds paths of one (dev, ino) into one inode. The walk
 * reports each directory entry once (walk_opts.once), so repeated or
 * overlapping arguments neither count a file twice nor make it look like
 * a hard link of itself.
 *
 * Two views of one file are one inode too: an overlayfs mount shows a
 * lower layer's file under its own st_dev with the lower inode's number,
 * so `dedup merged lower` sees one file twice. Where a stacked device is
 * among those scanned (fs_id.c, asked once per device), paths with one
 * inode number on two devices that fs_id_one_file takes for one file,
 * and of one size (views always agree on it; files of different sizes
 * are never duplicates anyway), are one file reached twice: like a path
 * given twice, it is kept once, under its first path in walk order (the
 * one it is opened by); the other views are not listed, so they are never
 * duplicates, never a hard link of it, never reclaimable.
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
#include "fs_id.h"
#include "places.h"
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
static const dev_t *sort_dev;

/* cmp_by_inode: paths by (the device their inode is filed under, ino),
 * then walk order. */
static int cmp_by_inode(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const dd_seen *x = &sort_seen[a], *y = &sort_seen[b];
    if (sort_dev[a] != sort_dev[b])
        return sort_dev[a] < sort_dev[b] ? -1 : 1;
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

/* sort_by_inode: idx[0..n) = the paths sorted by cmp_by_inode, with
 * path i filed under device filed[i]. */
static void sort_by_inode(uint32_t *idx, size_t n, const dd_seen *seen, const dev_t *filed)
{
    sort_seen = seen;
    sort_dev = filed;
    qsort(idx, n, sizeof *idx, cmp_by_inode);
}

/* any_stacked: is one of the devices of the sorted paths idx[0..n)
 * stacked, with another device beside it? (One query per device.) */
static int any_stacked(const uint32_t *idx, size_t n, const dd_seen *seen)
{
    int stacked = 0, devices = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && seen[idx[i]].dev == seen[idx[i - 1]].dev)
            continue;
        devices++;
        stacked |= fs_id_stacked(seen[idx[i]].dev);
    }
    return stacked && devices > 1;
}

/* The runs of one (dev, ino) in the sorted paths, while views are
 * joined: run j starts at idx[start[j]] (its first path in walk order);
 * parent[] is a union-find forest whose roots are walk-earliest. */
typedef struct {
    size_t *start;
    uint32_t *parent, *by_ino;
    size_t n;
} runs;

static const dd_seen *sort_run_seen;
static const uint32_t *sort_run_idx;
static const size_t *sort_run_start;

/* cmp_run_ino: runs by (ino, dev). */
static int cmp_run_ino(const void *pa, const void *pb)
{
    const dd_seen *x = &sort_run_seen[sort_run_idx[sort_run_start[*(const uint32_t *)pa]]];
    const dd_seen *y = &sort_run_seen[sort_run_idx[sort_run_start[*(const uint32_t *)pb]]];
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return x->dev < y->dev ? -1 : x->dev > y->dev;
}

/* run_root: the root of run j's set. */
static uint32_t run_root(runs *u, uint32_t j)
{
    while (u->parent[j] != j)
        j = u->parent[j] = u->parent[u->parent[j]];
    return j;
}

/* join_runs: one set for runs a and b, rooted at the walk-earlier. */
static void join_runs(runs *u, const uint32_t *idx, uint32_t a, uint32_t b)
{
    a = run_root(u, a);
    b = run_root(u, b);
    if (a == b)
        return;
    if (idx[u->start[b]] < idx[u->start[a]])
        u->parent[a] = b;
    else
        u->parent[b] = a;
}

/* join_span: joins the runs by_ino[lo..hi) (one inode number) that are
 * views of one file: fs_id_one_file says so and their sizes agree. */
static void join_span(runs *u, const uint32_t *idx, const dd_seen *seen, size_t lo, size_t hi)
{
    for (size_t a = lo; a < hi; a++) {
        const dd_seen *x = &seen[idx[u->start[u->by_ino[a]]]];
        for (size_t b = a + 1; b < hi; b++) {
            const dd_seen *y = &seen[idx[u->start[u->by_ino[b]]]];
            if (x->dev != y->dev && x->size == y->size &&
                fs_id_one_file(x->dev, x->ino, y->dev, y->ino))
                join_runs(u, idx, u->by_ino[a], u->by_ino[b]);
        }
    }
}

/* join_views: files each path's inode under the device of the first path
 * (walk order) of the set of views it belongs to (filed[]), and sorts
 * idx again by it. idx comes sorted by (dev, ino). 0 or ENOMEM. */
static int join_views(uint32_t *idx, size_t n, const dd_seen *seen, dev_t *filed)
{
    runs u = {malloc((n + 1) * sizeof *u.start), malloc((n ? n : 1) * sizeof *u.parent),
              malloc((n ? n : 1) * sizeof *u.by_ino), 0};
    int rc = ENOMEM;
    if (u.start == NULL || u.parent == NULL || u.by_ino == NULL)
        goto out;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || seen[idx[i]].dev != seen[idx[i - 1]].dev ||
            seen[idx[i]].ino != seen[idx[i - 1]].ino) {
            u.parent[u.n] = (uint32_t)u.n;
            u.by_ino[u.n] = (uint32_t)u.n;
            u.start[u.n++] = i;
        }
    u.start[u.n] = n;
    sort_run_seen = seen;
    sort_run_idx = idx;
    sort_run_start = u.start;
    qsort(u.by_ino, u.n, sizeof *u.by_ino, cmp_run_ino);
    for (size_t lo = 0, hi; lo < u.n; lo = hi) {
        ino_t ino = seen[idx[u.start[u.by_ino[lo]]]].ino;
        for (hi = lo + 1; hi < u.n && seen[idx[u.start[u.by_ino[hi]]]].ino == ino; hi++)
            ;
        if (hi - lo > 1)
            join_span(&u, idx, seen, lo, hi);
    }
    for (uint32_t j = 0; j < u.n; j++) {
        dev_t dev = seen[idx[u.start[run_root(&u, j)]]].dev;
        for (size_t i = u.start[j]; i < u.start[j + 1]; i++)
            filed[idx[i]] = dev;
    }
    sort_by_inode(idx, n, seen, filed);
    rc = 0;
out:
    free(u.start);
    free(u.parent);
    free(u.by_ino);
    return rc;
}

/* build_inodes: folds the paths into inodes (a repeated path counts as
 * scanned once; views of one file on a stacked device are one inode).
 * Returns 0 or ENOMEM. */
static int build_inodes(dd_run *r, const dd_seen *seen)
{
    size_t n = r->npaths;
    uint32_t *idx = malloc((n ? n : 1) * sizeof *idx);
    dev_t *filed = malloc((n ? n : 1) * sizeof *filed);
    r->by_inode = malloc((n ? n : 1) * sizeof *r->by_inode);
    r->inodes = calloc(n ? n : 1, sizeof *r->inodes);
    if (idx == NULL || filed == NULL || r->by_inode == NULL || r->inodes == NULL) {
        free(idx);
        free(filed);
        return ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        idx[i] = (uint32_t)i;
        filed[i] = seen[i].dev;
    }
    sort_by_inode(idx, n, seen, filed);
    if (any_stacked(idx, n, seen) && join_views(idx, n, seen, filed) != 0) {
        free(idx);
        free(filed);
        return ENOMEM;
    }
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        const dd_seen *s = &seen[idx[i]]; /* the inode's first path: on its device */
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
        for (; j < n && filed[idx[j]] == s->dev && seen[idx[j]].ino == s->ino; j++) {
            if (same_path_before(r, r->by_inode + k->first, out - k->first, idx[j]) ||
                seen[idx[j]].dev != s->dev) {
                r->scanned--; /* the same path again, or the file seen again
                                 through another mount */
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
    free(filed);
    return 0;
}

/* open_places: the scan's roots, opened again, for its reads: a file is
 * read beneath the root it was found under, with no symbolic link
 * followed on the way (places.c). NULL: out of memory. */
static places *open_places(const dd_run *r)
{
    places_root *pr = calloc(r->nroots ? r->nroots : 1, sizeof *pr);
    if (pr == NULL)
        return NULL;
    for (size_t i = 0; i < r->nroots; i++)
        pr[i] = (places_root){r->roots[i].path, (uint64_t)r->roots[i].dev,
                              (uint64_t)r->roots[i].ino};
    places *pl = places_new(pr, r->nroots);
    free(pr);
    return pl;
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
    if ((wo.roots = r->roots = calloc(n ? n : 1, sizeof *r->roots)) == NULL)
        return ENOMEM;
    r->nroots = n; /* where each argument was walked from, for the plan */
    progress_stage(r->meter, "scanning", 0, 0);
    int rc = walk_paths(roots, n, &wo, on_entry, &c);
    if (rc == 0 && !c.nomem)
        rc = build_inodes(r, c.seen);
    if (rc == 0 && !r->o->follow_symlinks && (r->places = open_places(r)) == NULL)
        rc = ENOMEM;
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
    walk_roots_free(r->roots, r->nroots);
    free(r->roots);
    places_free(r->places);
}
