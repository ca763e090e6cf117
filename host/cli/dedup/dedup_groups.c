/*
 * dedup_groups.c - the groups `hashbatch dedup` reports: every class of
 * alive inodes with two paths or more (hard links count as paths), each
 * path stat-ed again first (a file that changed or vanished since the walk
 * is reported and left out; --merge checks the files it can reach
 * itself), paths in walk order, groups by first path. The re-checks run
 * on every core: they are one path lookup and stat each, and a rescan
 * from the cache spends a third of its time on them.
 *
 * Owns: r->groups and r->group_paths. Must not: print them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "dedup.h"
#include "dedup_dirs.h"
#include "fs_id.h"
#include "stat_ahead.h"

static const dd_run *sort_run; /* qsort has no context argument in C11 */

static int cmp_class(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    uint32_t ca = sort_run->inodes[a].cls, cb = sort_run->inodes[b].cls;
    if (ca != cb)
        return ca < cb ? -1 : 1;
    uint32_t oa = dd_inode_order(sort_run, a), ob = dd_inode_order(sort_run, b);
    return oa < ob ? -1 : oa > ob;
}

static int cmp_u32_order(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return a < b ? -1 : a > b;
}

static int cmp_group(const void *pa, const void *pb)
{
    const dd_group *a = pa, *b = pb;
    uint32_t x = sort_run->group_paths[a->first], y = sort_run->group_paths[b->first];
    return x < y ? -1 : x > y;
}

/* still_same: does st (of path i, now) show the file the walk saw? A
 * name that shows it through another mount (overlayfs) does too. */
static int still_same(const dd_run *r, uint32_t i, const struct stat *st)
{
    const dd_inode *k = &r->inodes[r->paths[i].inode];
    return S_ISREG(st->st_mode) && st->st_ino == k->ino &&
           (st->st_dev == k->dev || fs_id_one_file(st->st_dev, st->st_ino, k->dev, k->ino)) &&
           (uint64_t)st->st_size == k->size && (int64_t)st->st_mtim.tv_sec == k->mtime_sec &&
           st->st_mtim.tv_nsec == k->mtime_nsec;
}

/* class_paths: appends the paths of the class list[0..n) (alive inodes)
 * to r->group_paths in walk order. Returns how many. */
static size_t class_paths(dd_run *r, const uint32_t *list, size_t n)
{
    size_t first = r->ngroup_paths;
    for (size_t i = 0; i < n; i++) {
        const dd_inode *k = &r->inodes[list[i]];
        for (uint32_t p = 0; p < k->npaths; p++)
            r->group_paths[r->ngroup_paths++] = r->by_inode[k->first + p];
    }
    qsort(r->group_paths + first, r->ngroup_paths - first, sizeof *r->group_paths, cmp_u32_order);
    return r->ngroup_paths - first;
}

/* recheck_all: same[i] = whether paths[i] is still the file the walk
 * saw, for i < n, or -1 when out of memory. The stats run on every core
 * (stat_ahead.c): each is a path lookup and a getattr in the kernel. */
static int recheck_all(const dd_run *r, const uint32_t *paths, size_t n, unsigned char *same)
{
    const char **names = malloc((n ? n : 1) * sizeof *names);
    struct stat *sts = malloc((n ? n : 1) * sizeof *sts);
    int *errs = malloc((n ? n : 1) * sizeof *errs);
    stat_ahead *sa = names != NULL && sts != NULL && errs != NULL ? sa_open() : NULL;
    int rc = names != NULL && sts != NULL && errs != NULL ? 0 : -1;
    if (rc == 0) {
        for (size_t i = 0; i < n; i++)
            names[i] = dd_path_name(r, paths[i]);
        sa_stat_all(sa, AT_FDCWD, names, n, r->o->follow_symlinks ? 0 : AT_SYMLINK_NOFOLLOW, sts,
                    errs);
        for (size_t i = 0; i < n; i++)
            same[i] = (unsigned char)(errs[i] == 0 && still_same(r, paths[i], &sts[i]));
    }
    sa_close(sa);
    free(names);
    free(sts);
    free(errs);
    return rc;
}

/* distinct_inodes: how many inodes the paths group_paths[first..end) name. */
static uint32_t distinct_inodes(const dd_run *r, size_t first, size_t end)
{
    uint32_t count = 0;
    for (size_t i = first; i < end; i++) {
        uint32_t ino = r->paths[r->group_paths[i]].inode;
        int seen = 0;
        for (size_t j = first; j < i && !seen; j++)
            seen = r->paths[r->group_paths[j]].inode == ino;
        count += !seen;
    }
    return count;
}

/* add_group: the class list[0..n) as a group of the paths
 * group_paths[first..first + npaths) whose re-check said same[] (the
 * others are reported and left out), moved down to r->ngroup_paths; no
 * group when fewer than two remain. */
static void add_group(dd_run *r, const uint32_t *list, size_t n, size_t first, size_t npaths,
                      const unsigned char *same)
{
    size_t start = r->ngroup_paths, kept = start;
    for (size_t i = first; i < first + npaths; i++) {
        uint32_t p = r->group_paths[i];
        if (same[i])
            r->group_paths[kept++] = p;
        else
            dd_report(r, dd_path_name(r, p), "changed or vanished during the scan: left out");
    }
    if (kept - start < 2)
        return;
    r->ngroup_paths = kept;
    dd_group *g = &r->groups[r->ngroups++];
    memset(g, 0, sizeof *g);
    g->first = (uint32_t)start;
    g->n = (uint32_t)(kept - start);
    g->size = r->inodes[list[0]].size;
    for (size_t i = 0; i < n; i++)
        if (r->inodes[list[i]].hashed) {
            g->hashed = 1;
            memcpy(g->sha1, r->inodes[list[i]].full, 20);
            break;
        }
    g->ninodes = distinct_inodes(r, start, kept);
}

/* dd_make_groups: every class with two paths or more, sorted by first
 * path: the classes' paths gathered, re-checked all at once, then kept. */
int dd_make_groups(dd_run *r)
{
    uint32_t *alive = malloc((r->ninodes ? r->ninodes : 1) * sizeof *alive);
    size_t *cls_start = malloc((r->ninodes + 1) * sizeof *cls_start);
    r->groups = malloc((r->ninodes ? r->ninodes : 1) * sizeof *r->groups);
    r->group_paths = malloc((r->npaths ? r->npaths : 1) * sizeof *r->group_paths);
    unsigned char *same = malloc(r->npaths ? r->npaths : 1);
    if (alive == NULL || cls_start == NULL || r->groups == NULL || r->group_paths == NULL ||
        same == NULL) {
        free(alive);
        free(cls_start);
        free(same);
        return -1;
    }
    size_t n = 0;
    for (uint32_t k = 0; k < r->ninodes; k++)
        if (r->inodes[k].state == DD_ALIVE)
            alive[n++] = k;
    sort_run = r;
    qsort(alive, n, sizeof *alive, cmp_class);
    /* Each class of two paths or more: its paths at group_paths[from..),
     * where from is noted at cls_start[its first member's index]. */
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && r->inodes[alive[j]].cls == r->inodes[alive[i]].cls)
            j++;
        cls_start[i] = r->ngroup_paths;
        if (class_paths(r, alive + i, j - i) < 2)
            r->ngroup_paths = cls_start[i];
        i = j;
    }
    size_t total = r->ngroup_paths;
    int merged = r->dirs != NULL && r->dirs->merged; /* dedup_merge.c checked them */
    if (merged) {
        memset(same, 1, total);
    } else if (recheck_all(r, r->group_paths, total, same) != 0) {
        free(alive);
        free(cls_start);
        free(same);
        return -1;
    }
    r->ngroup_paths = 0;
    size_t from = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && r->inodes[alive[j]].cls == r->inodes[alive[i]].cls)
            j++;
        size_t upto = j < n ? cls_start[j] : total;
        if (upto > from) /* kept paths move down, never past ones unread */
            add_group(r, alive + i, j - i, from, upto - from, same);
        from = upto;
        i = j;
    }
    free(alive);
    free(cls_start);
    free(same);
    qsort(r->groups, r->ngroups, sizeof *r->groups, cmp_group);
    return 0;
}
