/*
 * dedup_prefix.c - the prefix stage of `hashbatch dedup`: the first 4 KiB
 * of every inode that shares its size with another, read on a few threads
 * and hashed 8,192 files per hb_sha1_batch. Files of up to 4 KiB are then
 * whole: they are classified at once, their bytes still in memory. Bigger
 * ones are split by prefix digest into sets for the full stage.
 *
 * With --cache, an inode whose key is unchanged takes its prefix SHA-1
 * from the cache and is not read; one of up to 4 KiB is then whole and
 * classified with its bytes left on disk (data NULL), and members of sets
 * take their cached whole-file SHA-1 (dedup_cache.c).
 *
 * Owns: prefix chunks and their memory, the sets. Must not: decide that
 * two files are equal from their prefix.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dedup.h"
#include "dedup_cache.h"

#define PREFIX_CHUNK_FILES 8192
#define PREFIX_RUN_SPLIT 65536 /* bigger runs of one size are not kept in memory */

static const dd_run *sort_run; /* qsort has no context argument in C11 */

static int cmp_prefix(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    int c = memcmp(sort_run->inodes[a].prefix, sort_run->inodes[b].prefix, 20);
    if (c != 0)
        return c;
    uint32_t oa = dd_inode_order(sort_run, a), ob = dd_inode_order(sort_run, b);
    return oa < ob ? -1 : oa > ob;
}

/* add_set: a set of n inodes (one size, one prefix) for the full stage. */
static int add_set(dd_set_list *s, const dd_run *r, const uint32_t *list, size_t n)
{
    if (cli_grow((void **)&s->inodes, &s->cap, s->n + n, sizeof *s->inodes) != 0 ||
        cli_grow((void **)&s->start, &s->cap_sets, s->nsets + 2, sizeof *s->start) != 0)
        return ENOMEM;
    if (s->nsets == 0)
        s->start[0] = 0;
    memcpy(s->inodes + s->n, list, n * sizeof *list);
    s->n += n;
    s->start[++s->nsets] = s->n;
    s->bytes += (uint64_t)n * r->inodes[list[0]].size;
    return 0;
}

/* settle_run: a run of one size whose prefixes are hashed: small files
 * are classified now (data: their bytes, or NULL), bigger ones split by
 * prefix into sets for the full stage. Returns 0 or ENOMEM. */
static int settle_run(dd_run *r, uint32_t *run, unsigned char *const *data, size_t n,
                      dd_set_list *sets)
{
    if (n == 0)
        return 0;
    if (r->inodes[run[0]].size <= DD_PREFIX_BYTES) {
        dd_classify(r, run, data, n);
        return 0;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (r->inodes[run[i]].state == DD_ALIVE)
            run[k++] = run[i];
    sort_run = r;
    qsort(run, k, sizeof *run, cmp_prefix);
    for (size_t i = 0; i < k;) {
        size_t j = i + 1;
        while (j < k && memcmp(r->inodes[run[j]].prefix, r->inodes[run[i]].prefix, 20) == 0)
            j++;
        if (j - i > 1) {
            for (size_t m = i; m < j; m++)
                (void)dd_cache_take_full(r, run[m]);
            if (add_set(sets, r, run + i, j - i) != 0)
                return ENOMEM;
        }
        i = j;
    }
    return 0;
}

/* from_cache: candidates of cand[0..n) whose prefix the cache holds take
 * it (and, up to 4 KiB, it is their whole SHA-1); their data[i] is NULL.
 * The others' indices go to todo. Returns how many are left to read. */
static size_t from_cache(dd_run *r, const uint32_t *cand, size_t n, unsigned char **data,
                         size_t *todo)
{
    size_t nt = 0;
    for (size_t i = 0; i < n; i++) {
        dd_inode *k = &r->inodes[cand[i]];
        uint8_t p[20];
        int small = k->size <= DD_PREFIX_BYTES;
        if (k->state == DD_ALIVE && dd_cache_prefix(r, cand[i], p) &&
            (!small || dd_cache_take_full(r, cand[i]))) {
            memcpy(k->prefix, p, 20);
            data[i] = NULL;
            continue;
        }
        todo[nt++] = i;
    }
    return nt;
}

/* prefix_chunk: reads and hashes the prefixes of cand[0..n) into buf
 * (those the cache holds excepted); data[i] points at each one's bytes,
 * or is NULL. Returns 0 or -1 (engine failure or no memory, reported). */
static int prefix_chunk(dd_run *r, const uint32_t *cand, size_t n, dd_reuse_buf *buf,
                        unsigned char **data)
{
    dd_read_item *items = calloc(n, sizeof *items);
    hb_msg *msgs = malloc(n * sizeof *msgs);
    hb_digest *dig = malloc(n * sizeof *dig);
    uint32_t *which = malloc(n * sizeof *which);
    size_t *todo = malloc(n * sizeof *todo);
    unsigned char *arena = NULL;
    size_t total = 0, nt = 0;
    int rc = -1;
    if (todo != NULL) {
        nt = from_cache(r, cand, n, data, todo);
        for (size_t t = 0; t < nt; t++) {
            uint64_t s = r->inodes[cand[todo[t]]].size;
            total += s < DD_PREFIX_BYTES ? (size_t)s : DD_PREFIX_BYTES;
        }
        arena = dd_reuse_get(buf, total);
    }
    if (items == NULL || msgs == NULL || dig == NULL || which == NULL || todo == NULL ||
        arena == NULL) {
        cli_error("%s", strerror(ENOMEM));
        r->fatal = 1;
        goto out;
    }
    size_t off = 0;
    for (size_t t = 0; t < nt; t++) {
        size_t i = todo[t];
        uint64_t s = r->inodes[cand[i]].size;
        items[t].inode = cand[i];
        items[t].want = s < DD_PREFIX_BYTES ? (size_t)s : DD_PREFIX_BYTES;
        items[t].whole = s <= DD_PREFIX_BYTES;
        items[t].buf = arena + off;
        data[i] = items[t].buf;
        off += items[t].want;
    }
    dd_read_all(r, items, nt, dd_read_threads());
    size_t nm = 0;
    for (size_t t = 0; t < nt; t++) {
        if (items[t].cause != NULL) {
            dd_fail_inode(r, items[t].inode, items[t].cause);
            continue;
        }
        msgs[nm].data = items[t].buf;
        msgs[nm].len = items[t].want;
        which[nm++] = (uint32_t)t;
    }
    if (dd_hash_now(r, msgs, nm, dig) != 0)
        goto out;
    for (size_t j = 0; j < nm; j++) {
        dd_inode *k = &r->inodes[items[which[j]].inode];
        memcpy(k->prefix, dig[j], 20);
        if (k->size <= DD_PREFIX_BYTES) {
            memcpy(k->full, dig[j], 20);
            k->hashed = 1;
        }
    }
    r->hashed_prefix += nm;
    progress_add(r->meter, n, total);
    rc = 0;
out:
    free(items);
    free(msgs);
    free(dig);
    free(which);
    free(todo);
    return rc;
}

/* dd_prefix_stage: hashes the prefixes of the candidates (sorted by size,
 * in runs of two or more) and settles each run. Returns 0 or -1. */
int dd_prefix_stage(dd_run *r, uint32_t *cand, size_t n, dd_set_list *sets)
{
    unsigned char **data = malloc((n ? n : 1) * sizeof *data);
    if (data == NULL)
        return -1;
    progress_stage(r->meter, "prefixes", n, 0);
    dd_cache_lookup(r, cand, n);
    if (r->open_late && !r->open_tried)
        dd_cache_expected_work(r, cand, n, &r->expect_messages, &r->expect_bytes);
    dd_reuse_buf buf = {NULL, 0};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        size_t j = dd_run_end(r, cand, n, i);
        if (j - i > PREFIX_RUN_SPLIT) {
            /* one huge run: in pieces, its bytes not kept */
            for (size_t p = i; p < j && rc == 0; p += PREFIX_CHUNK_FILES) {
                size_t q = p + PREFIX_CHUNK_FILES < j ? p + PREFIX_CHUNK_FILES : j;
                rc = prefix_chunk(r, cand + p, q - p, &buf, data + p);
            }
            if (rc == 0 && settle_run(r, cand + i, NULL, j - i, sets) != 0)
                rc = -1;
            i = j;
            continue;
        }
        while (j < n && j - i < PREFIX_CHUNK_FILES) { /* whole runs per chunk */
            size_t e = dd_run_end(r, cand, n, j);
            if (e - i > PREFIX_RUN_SPLIT)
                break;
            j = e;
        }
        rc = prefix_chunk(r, cand + i, j - i, &buf, data + i);
        for (size_t a = i; a < j && rc == 0;) {
            size_t b = dd_run_end(r, cand, j, a);
            if (settle_run(r, cand + a, data + a, b - a, sets) != 0)
                rc = -1;
            a = b;
        }
        i = j;
    }
    free(buf.p);
    free(data);
    return rc;
}
