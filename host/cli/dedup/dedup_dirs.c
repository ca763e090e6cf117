/*
 * dedup_dirs.c - duplicate directories (`dedup --dirs`), after the file
 * groups are made:
 *
 *  1. the directories: every directory that holds, at some depth, a file
 *     the scan kept, at or below the DIRs, found from the paths (a table
 *     by path);
 *  2. each is read (dedup_dirtree.c) into a signature, and those with
 *     equal signatures are compared exactly; identical ones form groups;
 *  3. only the topmost are reported: when a/ and b/ are reported as one
 *     group, a/ (the least deep, then the first by path) stands for its
 *     contents, and b/, the copy, hides what it holds from every other
 *     group: a/sub and b/sub are no group of their own, and a group of
 *     files a/x, b/x, c/x lists a/x and c/x. A group left with one member
 *     is no group.
 *
 * Directories that hold no file the scan kept (empty ones, or ones with
 * only empty or small files) are compared as parts of others, never
 * reported on their own.
 *
 * Owns: the table, the groups of directories, leaving out what they
 * cover, and struct dd_dirs. Must not: print, or call two directories
 * identical that dd_dir_same did not.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dedup_dirs.h"

#define REPS_MAX 8 /* distinct contents looked for among equal signatures */

static struct dd_dirs state; /* one run per process */

struct dd_dirs *dd_dirs_state(dd_run *r)
{
    if (r->dirs == NULL)
        r->dirs = &state;
    return r->dirs;
}

void dd_dirs_set_roots(dd_run *r, char *const *roots, size_t n)
{
    struct dd_dirs *d = dd_dirs_state(r);
    d->roots = roots;
    d->nroots = n;
}

void dd_dirs_free(dd_run *r)
{
    struct dd_dirs *d = r->dirs;
    if (d == NULL)
        return;
    for (size_t i = 0; i < d->nmembers; i++)
        free(d->members[i].path);
    free(d->members);
    free(d->groups);
    free(d->proof);
    free((void *)d->host);
    d->members = NULL;
    d->groups = NULL;
    d->proof = NULL;
    d->host = NULL;
    d->nmembers = d->ngroups = 0;
}

/* ---- the table ---------------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

uint32_t dd_dir_lookup(const dd_dir_table *t, const char *path)
{
    if (t->nslots == 0)
        return UINT32_MAX;
    for (size_t i = hash_str(path) & (t->nslots - 1);; i = (i + 1) & (t->nslots - 1)) {
        uint32_t v = t->slots[i];
        if (v == 0)
            return UINT32_MAX;
        if (strcmp(t->nodes[v - 1].path, path) == 0)
            return v - 1;
    }
}

/* rehash: the slots, at least twice the nodes. Returns 0 or ENOMEM. */
static int rehash(dd_dir_table *t)
{
    size_t n = 1024;
    while (n < 2 * (t->nnodes + 1))
        n *= 2;
    if (n <= t->nslots)
        return 0;
    uint32_t *s = calloc(n, sizeof *s);
    if (s == NULL)
        return ENOMEM;
    for (size_t k = 0; k < t->nnodes; k++) {
        size_t i = hash_str(t->nodes[k].path) & (n - 1);
        while (s[i] != 0)
            i = (i + 1) & (n - 1);
        s[i] = (uint32_t)k + 1;
    }
    free(t->slots);
    t->slots = s;
    t->nslots = n;
    return 0;
}

/* parent_path: path without its last name (trailing '/' dropped, "/"
 * kept), malloc'd; NULL when it has no parent or memory is short. */
static char *parent_path(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL || (slash == path && path[1] == '\0'))
        return NULL;
    size_t len = (size_t)(slash - path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    if (len == 0)
        len = 1; /* "/x": its parent is "/" */
    char *p = malloc(len + 1);
    if (p == NULL)
        return NULL;
    memcpy(p, path, len);
    p[len] = '\0';
    return p;
}

/* root_len: root without its trailing slashes ("/" kept). */
static size_t root_len(const char *root)
{
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/')
        n--;
    return n;
}

/* within_roots: is directory path at or below one of the DIRs (any path
 * when they are not known)? */
static int within_roots(const dd_run *r, const char *path)
{
    const struct dd_dirs *d = r->dirs;
    if (d == NULL || d->roots == NULL)
        return 1;
    for (size_t i = 0; i < d->nroots; i++) {
        size_t n = root_len(d->roots[i]);
        if (strncmp(path, d->roots[i], n) != 0)
            continue;
        if (path[n] == '\0' || path[n] == '/' || (n == 1 && d->roots[i][0] == '/'))
            return 1;
    }
    return 0;
}

/* add_dir: the node of dir (taking the string), made with its parents
 * when new. Returns its index, or UINT32_MAX (outside the DIRs, or no
 * memory: t->nomem is set; dir is freed). */
static uint32_t add_dir(dd_dir_table *t, char *dir)
{
    uint32_t k = dd_dir_lookup(t, dir);
    if (k != UINT32_MAX || !within_roots(t->r, dir)) {
        free(dir);
        return k;
    }
    char *up = parent_path(dir);
    uint32_t parent = up != NULL ? add_dir(t, up) : UINT32_MAX;
    if (cli_grow((void **)&t->nodes, &t->cap, t->nnodes + 1, sizeof *t->nodes) != 0 ||
        rehash(t) != 0) {
        free(dir);
        t->nomem = 1;
        return UINT32_MAX;
    }
    dd_dir_node *nd = &t->nodes[t->nnodes];
    memset(nd, 0, sizeof *nd);
    nd->path = dir;
    nd->parent = parent;
    nd->depth = parent == UINT32_MAX ? 0 : t->nodes[parent].depth + 1;
    k = (uint32_t)t->nnodes++;
    size_t i = hash_str(dir) & (t->nslots - 1);
    while (t->slots[i] != 0)
        i = (i + 1) & (t->nslots - 1);
    t->slots[i] = k + 1;
    return k;
}

static const dd_run *sort_run; /* qsort has no context argument in C11 */
static const dd_dir_table *sort_table;

static int cmp_id(const void *pa, const void *pb)
{
    const dd_inode *a = &sort_run->inodes[*(const uint32_t *)pa];
    const dd_inode *b = &sort_run->inodes[*(const uint32_t *)pb];
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    return a->ino < b->ino ? -1 : a->ino > b->ino;
}

/* build: the table from the paths of r's inodes. Returns 0 or ENOMEM. */
static int build(dd_dir_table *t)
{
    dd_run *r = t->r;
    t->by_id = malloc((r->ninodes ? r->ninodes : 1) * sizeof *t->by_id);
    if (t->by_id == NULL || rehash(t) != 0)
        return ENOMEM;
    for (uint32_t k = 0; k < r->ninodes; k++) {
        t->by_id[t->nids++] = k;
        for (uint32_t p = 0; p < r->inodes[k].npaths; p++) {
            char *dir = parent_path(dd_path_name(r, r->by_inode[r->inodes[k].first + p]));
            if (dir != NULL)
                add_dir(t, dir);
            if (t->nomem)
                return ENOMEM;
        }
    }
    sort_run = r;
    qsort(t->by_id, t->nids, sizeof *t->by_id, cmp_id);
    return 0;
}

static void table_free(dd_dir_table *t)
{
    for (size_t i = 0; i < t->nnodes; i++)
        free(t->nodes[i].path);
    free(t->nodes);
    free(t->slots);
    free(t->by_id);
}

/* ---- groups ------------------------------------------------------------- */

/* A group being formed: nodes m[first .. first + n). */
typedef struct {
    uint32_t first, n;
    uint64_t reclaimable;
    int reported;
} cand_group;

typedef struct {
    uint32_t *m;   /* members, group by group */
    uint64_t *rec; /* per member: its bytes that are not hard links to the first's */
    size_t nm;
    cand_group *g;
    size_t ng, cap;
} cand_list;

static int cmp_sig(const void *pa, const void *pb)
{
    const dd_dir_node *a = &sort_table->nodes[*(const uint32_t *)pa];
    const dd_dir_node *b = &sort_table->nodes[*(const uint32_t *)pb];
    int c = memcmp(a->sig, b->sig, 20);
    if (c != 0)
        return c;
    if (a->files != b->files)
        return a->files < b->files ? -1 : 1;
    return strcmp(a->path, b->path);
}

/* split_run: nodes run[0..n) share a signature: each joins the first
 * earlier content it is identical to (dd_dir_same), else starts one (up
 * to REPS_MAX); contents with two members or more become groups. */
static int split_run(dd_dir_table *t, const uint32_t *run, size_t n, cand_list *c)
{
    uint32_t rep[REPS_MAX], nrep = 0;
    uint32_t *cls = malloc(n * sizeof *cls);
    uint64_t *rec = calloc(n, sizeof *rec);
    if (cls == NULL || rec == NULL) {
        free(cls);
        free(rec);
        return ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        cls[i] = UINT32_MAX;
        for (uint32_t j = 0; j < nrep && cls[i] == UINT32_MAX; j++)
            if (dd_dir_same(t, t->nodes[run[rep[j]]].path, t->nodes[run[i]].path, &rec[i]))
                cls[i] = j;
        if (cls[i] == UINT32_MAX && nrep < REPS_MAX) {
            rep[nrep] = (uint32_t)i;
            cls[i] = nrep++;
            rec[i] = 0;
        }
    }
    int rc = 0;
    for (uint32_t j = 0; j < nrep && rc == 0; j++) {
        cand_group g = {(uint32_t)c->nm, 0, 0, 0};
        for (size_t i = 0; i < n; i++)
            if (cls[i] == j) {
                c->rec[c->nm] = rec[i];
                c->m[c->nm++] = run[i];
                g.n++;
                g.reclaimable += rec[i];
            }
        if (g.n < 2)
            c->nm = g.first;
        else if (cli_grow((void **)&c->g, &c->cap, c->ng + 1, sizeof *c->g) != 0)
            rc = ENOMEM;
        else
            c->g[c->ng++] = g;
    }
    free(cls);
    free(rec);
    return rc;
}

/* find_candidates: every group of identical directories. */
static int find_candidates(dd_dir_table *t, cand_list *c)
{
    uint32_t *ok = malloc((t->nnodes ? t->nnodes : 1) * sizeof *ok);
    c->m = malloc((t->nnodes ? t->nnodes : 1) * sizeof *c->m);
    c->rec = malloc((t->nnodes ? t->nnodes : 1) * sizeof *c->rec);
    if (ok == NULL || c->m == NULL || c->rec == NULL) {
        free(ok);
        return ENOMEM;
    }
    size_t n = 0;
    for (uint32_t k = 0; k < t->nnodes; k++) {
        if (t->nodes[k].state == DD_DIR_TODO)
            dd_dir_sign(t, k, NULL);
        if (t->nodes[k].state == DD_DIR_OK)
            ok[n++] = k;
    }
    sort_table = t;
    qsort(ok, n, sizeof *ok, cmp_sig);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        size_t j = i + 1;
        while (j < n && memcmp(t->nodes[ok[j]].sig, t->nodes[ok[i]].sig, 20) == 0 &&
               t->nodes[ok[j]].files == t->nodes[ok[i]].files)
            j++;
        if (j - i > 1)
            rc = split_run(t, ok + i, j - i, c);
        i = j;
    }
    free(ok);
    return rc;
}

/* in_copy: does a copy (a member of a reported group other than its
 * first) hold node k or one of its parents? */
static int in_copy(const dd_dir_table *t, uint32_t k)
{
    for (; k != UINT32_MAX; k = t->nodes[k].parent)
        if (t->nodes[k].copy)
            return 1;
    return 0;
}

/* One member in the order of decide_dirs. */
typedef struct {
    uint32_t node, group, at; /* at: its place in c->m */
} member_at;

static int cmp_member_depth(const void *pa, const void *pb)
{
    const dd_dir_node *a = &sort_table->nodes[((const member_at *)pa)->node];
    const dd_dir_node *b = &sort_table->nodes[((const member_at *)pb)->node];
    if (a->depth != b->depth)
        return a->depth < b->depth ? -1 : 1;
    return strcmp(a->path, b->path);
}

/* decide_dirs: members in order of depth (then path), so that whether a
 * parent is a copy is known before its children: a member inside a copy
 * is dropped; the first member of a group to stay stands for it, each
 * later one is a copy. Groups left with two members or more are reported. */
static int decide_dirs(dd_dir_table *t, cand_list *c)
{
    member_at *all = malloc((c->nm ? c->nm : 1) * sizeof *all);
    uint32_t *rep = malloc((c->ng ? c->ng : 1) * sizeof *rep);
    uint8_t *drop = calloc(c->nm ? c->nm : 1, 1);
    if (all == NULL || rep == NULL || drop == NULL) {
        free(all);
        free(rep);
        free(drop);
        return ENOMEM;
    }
    size_t n = 0;
    for (size_t g = 0; g < c->ng; g++) {
        rep[g] = UINT32_MAX;
        for (uint32_t i = 0; i < c->g[g].n; i++, n++) {
            all[n].node = c->m[c->g[g].first + i];
            all[n].group = (uint32_t)g;
            all[n].at = c->g[g].first + i;
        }
    }
    sort_table = t;
    qsort(all, n, sizeof *all, cmp_member_depth);
    for (size_t i = 0; i < n; i++) {
        if (in_copy(t, t->nodes[all[i].node].parent))
            drop[all[i].at] = 1;
        else if (rep[all[i].group] == UINT32_MAX)
            rep[all[i].group] = all[i].node;
        else
            t->nodes[all[i].node].copy = 1;
    }
    for (size_t g = 0; g < c->ng; g++) {
        cand_group *cg = &c->g[g];
        uint32_t kept = 0;
        uint64_t rec = 0;
        for (uint32_t i = 0; i < cg->n; i++) {
            if (drop[cg->first + i])
                continue;
            rec += c->rec[cg->first + i];
            c->m[cg->first + kept++] = c->m[cg->first + i];
        }
        cg->n = kept;
        cg->reclaimable = rec;
        cg->reported = kept >= 2;
    }
    free(all);
    free(rep);
    free(drop);
    return 0;
}

/* drop_copies: takes out of the file groups the paths inside copies; a
 * group left with one path is no group. */
static void drop_copies(dd_dir_table *t)
{
    dd_run *r = t->r;
    size_t kept = 0;
    for (size_t g = 0; g < r->ngroups; g++) {
        dd_group *gr = &r->groups[g];
        uint32_t *p = r->group_paths + gr->first, n = 0;
        for (uint32_t i = 0; i < gr->n; i++) {
            char *dir = parent_path(dd_path_name(r, p[i]));
            uint32_t k = dir != NULL ? dd_dir_lookup(t, dir) : UINT32_MAX;
            free(dir);
            if (!in_copy(t, k))
                p[n++] = p[i];
        }
        gr->n = n;
        gr->ninodes = 0;
        for (uint32_t i = 0; i < n; i++) { /* distinct inodes kept */
            uint32_t j = 0;
            while (j < i && r->paths[p[j]].inode != r->paths[p[i]].inode)
                j++;
            gr->ninodes += j == i;
        }
        if (n >= 2)
            r->groups[kept++] = *gr;
    }
    r->ngroups = kept;
}

static int cmp_member(const void *pa, const void *pb)
{
    return strcmp(((const dd_dir_member *)pa)->path, ((const dd_dir_member *)pb)->path);
}

static int cmp_dir_group(const void *pa, const void *pb)
{
    const dd_dir_group *a = pa, *b = pb;
    return strcmp(state.members[a->first].path, state.members[b->first].path);
}

/* keep_reported: the reported groups into r->dirs, sorted. */
static int keep_reported(dd_dir_table *t, const cand_list *c)
{
    struct dd_dirs *d = dd_dirs_state(t->r);
    d->groups = malloc((c->ng ? c->ng : 1) * sizeof *d->groups);
    d->members = malloc((c->nm ? c->nm : 1) * sizeof *d->members);
    if (d->groups == NULL || d->members == NULL)
        return ENOMEM;
    for (size_t g = 0; g < c->ng; g++) {
        const cand_group *cg = &c->g[g];
        if (!cg->reported)
            continue;
        dd_dir_group *dg = &d->groups[d->ngroups++];
        const dd_dir_node *first = &t->nodes[c->m[cg->first]];
        dg->first = (uint32_t)d->nmembers;
        dg->n = cg->n;
        dg->files = first->files;
        dg->bytes = first->bytes;
        dg->reclaimable = cg->reclaimable;
        for (uint32_t i = 0; i < cg->n; i++) {
            dd_dir_node *nd = &t->nodes[c->m[cg->first + i]];
            dd_dir_member *m = &d->members[d->nmembers++];
            m->path = nd->path;
            nd->path = strdup(nd->path); /* the table keeps a copy */
            m->dev = nd->dev;
            m->ino = nd->ino;
            if (nd->path == NULL)
                return ENOMEM;
        }
        qsort(d->members + dg->first, dg->n, sizeof *d->members, cmp_member);
    }
    qsort(d->groups, d->ngroups, sizeof *d->groups, cmp_dir_group);
    return 0;
}

int dd_dirs_find(dd_run *r)
{
    dd_dirs_state(r);
    progress_stage(r->meter, "directories", 0, 0);
    dd_dir_table t;
    memset(&t, 0, sizeof t);
    t.r = r;
    cand_list c;
    memset(&c, 0, sizeof c);
    int rc = build(&t);
    if (rc == 0)
        rc = find_candidates(&t, &c);
    if (rc == 0)
        rc = decide_dirs(&t, &c);
    if (rc == 0) {
        drop_copies(&t);
        rc = keep_reported(&t, &c);
    }
    progress_clear(r->meter);
    free(c.rec);
    free(c.m);
    free(c.g);
    table_free(&t);
    if (rc != 0) {
        cli_error("--dirs: %s", strerror(rc));
        return -1;
    }
    return 0;
}
