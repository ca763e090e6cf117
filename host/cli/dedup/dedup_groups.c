/*
 * dedup_groups.c - the groups `hashbatch dedup` reports: every class of
 * alive inodes with two paths or more (hard links count as paths), each
 * path stat-ed again first (a file that changed or vanished since the walk
 * is reported and left out; --merge checks the files it can reach
 * itself), paths in walk order, groups by first path.
 *
 * Owns: r->groups and r->group_paths. Must not: print them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "dedup.h"
#include "dedup_dirs.h"

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

/* still_same: is path i still the file the walk saw? */
static int still_same(const dd_run *r, uint32_t i)
{
    const dd_inode *k = &r->inodes[r->paths[i].inode];
    struct stat st;
    const char *name = dd_path_name(r, i);
    int rc = r->o->follow_symlinks ? stat(name, &st) : lstat(name, &st);
    return rc == 0 && S_ISREG(st.st_mode) && st.st_dev == k->dev && st.st_ino == k->ino &&
           (uint64_t)st.st_size == k->size && (int64_t)st.st_mtim.tv_sec == k->mtime_sec &&
           st.st_mtim.tv_nsec == k->mtime_nsec;
}

/* add_group: the class list[0..n) (alive inodes) as a group, its paths
 * re-checked. Paths are the walk order indices (sorted). */
static void add_group(dd_run *r, const uint32_t *list, size_t n)
{
    size_t first = r->ngroup_paths;
    for (size_t i = 0; i < n; i++) {
        const dd_inode *k = &r->inodes[list[i]];
        for (uint32_t p = 0; p < k->npaths; p++)
            r->group_paths[r->ngroup_paths++] = r->by_inode[k->first + p];
    }
    if (r->ngroup_paths - first < 2) {
        r->ngroup_paths = first;
        return;
    }
    qsort(r->group_paths + first, r->ngroup_paths - first, sizeof *r->group_paths, cmp_u32_order);
    size_t kept = first;
    int merged = r->dirs != NULL && r->dirs->merged; /* dedup_merge.c checked them */
    for (size_t i = first; i < r->ngroup_paths; i++) {
        uint32_t p = r->group_paths[i];
        if (merged || still_same(r, p))
            r->group_paths[kept++] = p;
        else
            dd_report(r, dd_path_name(r, p), "changed or vanished during the scan: left out");
    }
    r->ngroup_paths = kept;
    if (kept - first < 2) {
        r->ngroup_paths = first;
        return;
    }
    dd_group *g = &r->groups[r->ngroups++];
    memset(g, 0, sizeof *g);
    g->first = (uint32_t)first;
    g->n = (uint32_t)(kept - first);
    g->size = r->inodes[list[0]].size;
    for (size_t i = 0; i < n; i++)
        if (r->inodes[list[i]].hashed) {
            g->hashed = 1;
            memcpy(g->sha1, r->inodes[list[i]].full, 20);
            break;
        }
    uint32_t last = UINT32_MAX;
    for (size_t i = first; i < kept; i++) { /* count distinct inodes kept */
        uint32_t ino = r->paths[r->group_paths[i]].inode;
        int seen = 0;
        for (size_t j = first; j < i && !seen; j++)
            seen = r->paths[r->group_paths[j]].inode == ino;
        if (!seen)
            g->ninodes++;
        last = ino;
    }
    (void)last;
}

/* dd_make_groups: every class with two paths or more, sorted by first path. */
int dd_make_groups(dd_run *r)
{
    uint32_t *alive = malloc((r->ninodes ? r->ninodes : 1) * sizeof *alive);
    r->groups = malloc((r->ninodes ? r->ninodes : 1) * sizeof *r->groups);
    r->group_paths = malloc((r->npaths ? r->npaths : 1) * sizeof *r->group_paths);
    if (alive == NULL || r->groups == NULL || r->group_paths == NULL) {
        free(alive);
        return -1;
    }
    size_t n = 0;
    for (uint32_t k = 0; k < r->ninodes; k++)
        if (r->inodes[k].state == DD_ALIVE)
            alive[n++] = k;
    sort_run = r;
    qsort(alive, n, sizeof *alive, cmp_class);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && r->inodes[alive[j]].cls == r->inodes[alive[i]].cls)
            j++;
        add_group(r, alive + i, j - i);
        i = j;
    }
    free(alive);
    qsort(r->groups, r->ngroups, sizeof *r->groups, cmp_group);
    return 0;
}
