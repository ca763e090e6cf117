/*
 * fileid_set.c - the (device, inode) set of fileid_set.h: open addressing
 * with linear probing, kept at most half full, doubled when it fills.
 *
 * Owns: hashing ids and the table. Must not: touch the file system.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "fileid_set.h"

/* hash: a 64-bit mix of both fields (splitmix64's finalizer). */
static uint64_t hash(fileid id)
{
    uint64_t x = (uint64_t)id.ino * 0x9e3779b97f4a7c15u ^ (uint64_t)id.dev;
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9u;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static int same(fileid a, fileid b)
{
    return a.dev == b.dev && a.ino == b.ino;
}

/* find: the slot holding id, or the empty slot where it would go (cap > 0). */
static size_t find(const fileid_set *s, fileid id)
{
    size_t mask = s->cap - 1;
    size_t i = (size_t)hash(id) & mask;
    while (s->used[i] && !same(s->slot[i], id))
        i = (i + 1) & mask;
    return i;
}

int fileid_set_has(const fileid_set *s, fileid id)
{
    return s->cap > 0 && s->used[find(s, id)];
}

/* grow: a table twice as big (64 slots at first), every id moved over. */
static int grow(fileid_set *s)
{
    fileid_set t = {NULL, NULL, 0, s->cap ? s->cap * 2 : 64};
    t.slot = malloc(t.cap * sizeof *t.slot);
    t.used = calloc(t.cap, 1);
    if (t.slot == NULL || t.used == NULL) {
        free(t.slot);
        free(t.used);
        return ENOMEM;
    }
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->used[i])
            continue;
        size_t k = find(&t, s->slot[i]);
        t.slot[k] = s->slot[i];
        t.used[k] = 1;
        t.n++;
    }
    fileid_set_free(s);
    *s = t;
    return 0;
}

int fileid_set_add(fileid_set *s, fileid id)
{
    if (fileid_set_has(s, id))
        return 0;
    if ((s->n + 1) * 2 > s->cap && grow(s) != 0)
        return ENOMEM;
    size_t k = find(s, id);
    s->slot[k] = id;
    s->used[k] = 1;
    s->n++;
    return 0;
}

void fileid_set_free(fileid_set *s)
{
    free(s->slot);
    free(s->used);
    s->slot = NULL;
    s->used = NULL;
    s->n = s->cap = 0;
}
