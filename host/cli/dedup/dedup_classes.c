/*
 * dedup_classes.c - classes of identical files among inodes of one size
 * whose whole SHA-1 is known: equal SHA-1 and equal bytes (compared in
 * memory, or by streaming the files) make one class; equal SHA-1 and
 * different bytes are a SHA-1 collision: recorded, announced on stderr,
 * never grouped.
 *
 * With --cache, inodes whose whole SHA-1 came from the cache and whose
 * rows share a byte proof id (dedup_cache.c) join one class without
 * being read: the proof is the record of an earlier byte comparison made
 * while the files had the keys they still have. Members of a run of one
 * SHA-1 are sorted by proof so that those are next to each other.
 *
 * Owns: class ids, byte comparison before joining, collisions. Must not:
 * join two inodes whose bytes it did not compare, in this run or (a
 * stored proof) in an earlier one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dedup.h"
#include "dedup_cache.h"

static const dd_run *sort_run; /* qsort has no context argument in C11 */

/* One member of a class being formed: an inode and, when still in memory,
 * its bytes. */
typedef struct {
    uint32_t inode;
    const unsigned char *data;
} member;

static int cmp_member(const void *pa, const void *pb)
{
    const member *a = pa, *b = pb;
    int c = memcmp(sort_run->inodes[a->inode].full, sort_run->inodes[b->inode].full, 20);
    if (c != 0)
        return c;
    int64_t qa = dd_cache_proof(sort_run, a->inode), qb = dd_cache_proof(sort_run, b->inode);
    if (qa != qb)
        return qa < qb ? -1 : 1;
    uint32_t oa = dd_inode_order(sort_run, a->inode), ob = dd_inode_order(sort_run, b->inode);
    return oa < ob ? -1 : oa > ob;
}

/* add_collision: records and announces that a and b share a SHA-1 but not
 * their bytes. */
static void add_collision(dd_run *r, uint32_t a, uint32_t b)
{
    if (cli_grow((void **)&r->collisions, &r->cap_collisions, r->ncollisions + 1,
                 sizeof *r->collisions) == 0) {
        dd_collision *c = &r->collisions[r->ncollisions++];
        c->a = a;
        c->b = b;
        memcpy(c->sha1, r->inodes[a].full, 20);
    }
    char hex[41];
    for (int i = 0; i < 20; i++)
        snprintf(hex + 2 * i, 3, "%02x", r->inodes[a].full[i]);
    progress_clear(r->meter);
    fflush(stdout);
    fprintf(stderr, "%s: warning: SHA-1 collision: ", CLI_PROGRAM);
    cli_quote_name(stderr, dd_inode_name(r, a));
    fputs(" and ", stderr);
    cli_quote_name(stderr, dd_inode_name(r, b));
    fprintf(stderr,
            " have the same size (%llu bytes) and the same SHA-1 (%s) but different bytes; "
            "they are NOT duplicates and are not grouped\n",
            (unsigned long long)r->inodes[a].size, hex);
}

/* same_bytes: are a's and b's bytes equal? 1, 0, or -1 after failing the
 * unreadable one. */
static int same_bytes(dd_run *r, const member *a, const member *b, int *prefix_differs)
{
    uint64_t size = r->inodes[a->inode].size;
    if (a->data != NULL && b->data != NULL) {
        r->compared_bytes += size;
        int eq = memcmp(a->data, b->data, (size_t)size) == 0;
        if (prefix_differs != NULL)
            *prefix_differs = !eq && memcmp(a->data, b->data,
                                            size < DD_PREFIX_BYTES ? size : DD_PREFIX_BYTES) != 0;
        return eq;
    }
    uint32_t bad;
    const char *cause;
    char buf[160];
    int eq = dd_files_equal(r, a->inode, b->inode, &bad, &cause, buf, sizeof buf, prefix_differs);
    if (eq < 0)
        dd_fail_inode(r, bad, cause);
    else
        r->compared_bytes += size;
    return eq;
}

/* proof_join: when inode k and the member placed before it (prev) share
 * a stored byte proof, k joins prev's class unread. Returns 1 when it
 * did. */
static int proof_join(dd_run *r, uint32_t prev, uint32_t k)
{
    if (prev == UINT32_MAX || r->inodes[prev].state != DD_ALIVE)
        return 0;
    int64_t p = dd_cache_proof(r, k);
    if (p == 0 || dd_cache_proof(r, prev) != p)
        return 0;
    r->inodes[k].cls = r->inodes[prev].cls;
    dd_cache_count_proof_join(r);
    return 1;
}

/* classify_run: members m[0..n) share one SHA-1: each joins the earlier
 * class whose bytes it has, else starts a new one; a collision is a pair
 * of distinct contents, so it is recorded when a member starts a class,
 * once for each earlier class (a copy of a content already met joins
 * that class and adds none). */
static void classify_run(dd_run *r, member *m, size_t n)
{
    size_t nreps = 0; /* class representatives are moved to m[0..nreps) */
    uint32_t *differ = malloc((n ? n : 1) * sizeof *differ);
    uint32_t prev = UINT32_MAX; /* the member placed last */
    for (size_t i = 0; i < n; i++) {
        if (r->inodes[m[i].inode].state != DD_ALIVE)
            continue;
        if (proof_join(r, prev, m[i].inode)) {
            prev = m[i].inode;
            continue;
        }
        prev = m[i].inode;
        int joined = 0;
        size_t ndiffer = 0;
        for (size_t j = 0; j < nreps && !joined; j++) {
            if (r->inodes[m[j].inode].state != DD_ALIVE)
                continue;
            int eq = same_bytes(r, &m[j], &m[i], NULL);
            if (eq == 1) {
                r->inodes[m[i].inode].cls = r->inodes[m[j].inode].cls;
                joined = 1;
            } else if (eq == 0) {
                if (differ != NULL)
                    differ[ndiffer++] = m[j].inode;
            } else if (r->inodes[m[i].inode].state != DD_ALIVE) {
                joined = 1; /* it failed: out */
            }
        }
        if (joined)
            continue;
        for (size_t k = 0; k < ndiffer; k++)
            if (r->inodes[differ[k]].state == DD_ALIVE)
                add_collision(r, differ[k], m[i].inode);
        r->inodes[m[i].inode].cls = m[i].inode;
        m[nreps++] = m[i];
    }
    free(differ);
}

/* dd_classify: inodes of one size, every one hashed whole (or failed), with
 * their bytes in data[] when at hand (data NULL: none). */
void dd_classify(dd_run *r, const uint32_t *list, unsigned char *const *data, size_t n)
{
    member *m = malloc((n ? n : 1) * sizeof *m);
    if (m == NULL) {
        for (size_t i = 0; i < n; i++)
            dd_fail_inode(r, list[i], "out of memory");
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (r->inodes[list[i]].state != DD_ALIVE || !r->inodes[list[i]].hashed)
            continue;
        m[k].inode = list[i];
        m[k++].data = data ? data[i] : NULL;
    }
    sort_run = r;
    qsort(m, k, sizeof *m, cmp_member);
    for (size_t i = 0; i < k;) {
        size_t j = i + 1;
        while (j < k && memcmp(r->inodes[m[j].inode].full, r->inodes[m[i].inode].full, 20) == 0)
            j++;
        if (j - i > 1)
            classify_run(r, m + i, j - i);
        i = j;
    }
    free(m);
}

int dd_same_bytes(dd_run *r, uint32_t a, const unsigned char *da, uint32_t b,
                  const unsigned char *db, int *prefix_differs)
{
    member x = {a, da}, y = {b, db};
    return same_bytes(r, &x, &y, prefix_differs);
}
