/*
 * dedup_classes.c - classes of identical files among inodes of one size
 * whose whole SHA-1 is known: equal SHA-1 and equal bytes (compared in
 * memory, or by streaming the files) make one class; equal SHA-1 and
 * different bytes are a SHA-1 collision: recorded, announced on stderr,
 * never grouped.
 *
 * Owns: class ids, byte comparison before joining, collisions. Must not:
 * join two inodes whose bytes it did not compare.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dedup.h"

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
static int same_bytes(dd_run *r, const member *a, const member *b)
{
    uint64_t size = r->inodes[a->inode].size;
    if (a->data != NULL && b->data != NULL) {
        r->compared_bytes += size;
        return memcmp(a->data, b->data, (size_t)size) == 0;
    }
    uint32_t bad;
    const char *cause;
    char buf[160];
    int eq = dd_files_equal(r, a->inode, b->inode, &bad, &cause, buf, sizeof buf);
    if (eq < 0)
        dd_fail_inode(r, bad, cause);
    else
        r->compared_bytes += size;
    return eq;
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
    for (size_t i = 0; i < n; i++) {
        if (r->inodes[m[i].inode].state != DD_ALIVE)
            continue;
        int joined = 0;
        size_t ndiffer = 0;
        for (size_t j = 0; j < nreps && !joined; j++) {
            if (r->inodes[m[j].inode].state != DD_ALIVE)
                continue;
            int eq = same_bytes(r, &m[j], &m[i]);
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
                  const unsigned char *db)
{
    member x = {a, da}, y = {b, db};
    return same_bytes(r, &x, &y);
}
