/*
 * dedup_cache.c - dedup's use of the hash cache (cache/hcache.c).
 *
 * The candidates of the prefix stage (inodes that share their size with
 * another) are looked up with the keys the walk saw, in one read
 * transaction and one pass over their rows in (filesystem, device,
 * inode) order (hc_lookup_many; a point lookup each cost 2.2 us a
 * file). For an
 * inode whose key (filesystem, device, inode, size, mtime, ctime in ns;
 * the filesystem from fs_id.c, asked once per device, so that another
 * filesystem later mounted on the same device never matches) equals its
 * row's: its prefix SHA-1 is taken instead of reading 4 KiB, and its
 * whole-file SHA-1 instead of reading it whole (dd_cache_take_full). A
 * cached digest only tells which files may be equal: the classes are
 * still made by comparing bytes (dedup_classes.c), with one exception,
 * the byte proofs:
 *
 * Byte proofs. When a run proves a class of inodes byte-identical, every
 * member's row gets the class's proof id (a random 64-bit number, or the
 * one its representative already had). On a rescan, two inodes whose
 * keys are unchanged, whose digests came from the cache and whose rows
 * share a proof id are one class without reading them: the earlier byte
 * comparison, made while both files had the keys they still have, is the
 * evidence. A member whose key changed is read, hashed and compared
 * again; groups made from proofs are still re-checked against the file
 * system before they are reported (dedup_groups.c).
 *
 * At the end (dd_cache_end) what was hashed or proved is stored, in one
 * write transaction; keys whose mtime or ctime are within the timestamp
 * granularity of the moment the run began reading (hc_racy) are not, so
 * a file changed within the same second is always read again.
 *
 * A cache that cannot be opened, read or written is reported in one line
 * and the run goes on without it.
 *
 * Owns: the run's cache state (per inode: key, cached digests, proofs),
 * the counts --stats prints about it. Must not: call two files equal
 * (dedup_classes.c does), or fail the run because of the cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dedup_cache.h"
#include "fs_id.h"
#include "hcache.h"

enum {
    CE_KEYED = 1,  /* stat-ed: key holds the file as the walk saw it */
    CE_HIT = 2,    /* the cache had a row with this key */
    CE_USED = 4,   /* the whole-file SHA-1 came from the cache */
    CE_RACY = 8,   /* too recent to store */
    CE_STORED = 16 /* written at the end */
};

/* The cache's knowledge of one inode. */
typedef struct {
    uint8_t flags;
    hc_row row;        /* key, and the cached row's contents when CE_HIT */
    int64_t new_proof; /* the proof id of its class in this run, or 0 */
} cache_ent;

struct dd_cache {
    hcache *hc;
    int64_t start_ns; /* the moment reading began */
    cache_ent *ent;   /* per inode */
    uint64_t looked, hits, prefixes, fulls, proof_joins, stored, racy;
};

/* drop: reports the cache's failure in one line and goes on without it. */
static void drop(dd_run *r, const char *cause)
{
    progress_clear(r->meter);
    cli_error("%s: hash cache not used: %s", hc_path(r->cache->hc), cause);
    hc_close(r->cache->hc);
    r->cache->hc = NULL;
}

void dd_cache_begin(dd_run *r)
{
    char path[PATH_MAX], err[HC_ERR_MAX];
    const char *file = r->o->cache_file;
    if (file == NULL) {
        if (hc_default_path(path, sizeof path, 1, err, sizeof err) != 0) {
            cli_error("hash cache not used: %s", err);
            return;
        }
        file = path;
    }
    hcache *hc = NULL;
    if (hc_open(file, 1, &hc, err, sizeof err) != 0) {
        progress_clear(r->meter);
        cli_error("%s: hash cache not used: %s", file, err);
        return;
    }
    struct dd_cache *c = calloc(1, sizeof *c);
    if (c != NULL)
        c->ent = calloc(r->ninodes ? r->ninodes : 1, sizeof *c->ent);
    if (c == NULL || c->ent == NULL) {
        cli_error("%s: hash cache not used: %s", file, strerror(ENOMEM));
        free(c);
        hc_close(hc);
        return;
    }
    c->hc = hc;
    c->start_ns = hc_now_ns();
    r->cache = c;
}

/* key_now: inode k's key as the walk saw it (no stat again: a file that
 * changes after the walk fails the re-check every group gets before it
 * is reported, and the actions prove the bytes again), on the filesystem
 * of its device (fs_id.c: known after the device's first file). 1, or 0
 * when that filesystem cannot be told (the inode then goes without the
 * cache). */
static int key_now(const dd_run *r, uint32_t k, cache_ent *e)
{
    const dd_inode *in = &r->inodes[k];
    fs_id id;
    if (fs_id_at(AT_FDCWD, dd_inode_name(r, k), in->dev, &id) != 0)
        return 0;
    e->row.key.fs = id.fs;
    e->row.key.dev = (uint64_t)in->dev;
    e->row.key.ino = (uint64_t)in->ino;
    e->row.key.size = in->size;
    e->row.key.mtime_ns = in->mtime_sec * 1000000000 + (int64_t)in->mtime_nsec;
    e->row.key.ctime_ns = in->ctime_ns;
    return 1;
}

static const cache_ent *sort_ents; /* qsort has no context argument in C11 */

static int cmp_ent_key(const void *pa, const void *pb)
{
    const cache_ent *a = &sort_ents[*(const uint32_t *)pa], *b = &sort_ents[*(const uint32_t *)pb];
    return hc_key_cmp(&a->row.key, &b->row.key);
}

/* look_up_sorted: the rows of the keyed inodes order[0..n) (sorted by
 * key) from the cache, in one ordered pass (hc_lookup_many). 0 or -1. */
static int look_up_sorted(dd_run *r, const uint32_t *order, size_t n)
{
    struct dd_cache *c = r->cache;
    hc_key *keys = malloc((n ? n : 1) * sizeof *keys);
    hc_row *rows = malloc((n ? n : 1) * sizeof *rows);
    unsigned char *found = malloc(n ? n : 1);
    int rc = -1;
    if (keys != NULL && rows != NULL && found != NULL) {
        for (size_t i = 0; i < n; i++)
            keys[i] = c->ent[order[i]].row.key;
        rc = hc_lookup_many(c->hc, keys, n, rows, found);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (!found[i])
            continue;
        cache_ent *e = &c->ent[order[i]];
        e->row = rows[i];
        e->flags |= CE_HIT;
        c->hits++;
    }
    free(keys);
    free(rows);
    free(found);
    return rc;
}

void dd_cache_lookup(dd_run *r, const uint32_t *cand, size_t n)
{
    struct dd_cache *c = r->cache;
    if (c == NULL || c->hc == NULL)
        return;
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    if (order == NULL) {
        drop(r, strerror(ENOMEM));
        return;
    }
    size_t nkeyed = 0;
    for (size_t i = 0; i < n; i++) {
        cache_ent *e = &c->ent[cand[i]];
        if (!key_now(r, cand[i], e))
            continue;
        e->flags |= CE_KEYED;
        if (hc_racy(&e->row.key, c->start_ns))
            e->flags |= CE_RACY;
        order[nkeyed++] = cand[i];
    }
    c->looked += nkeyed;
    sort_ents = c->ent;
    qsort(order, nkeyed, sizeof *order, cmp_ent_key);
    if (hc_read_begin(c->hc) != 0 || look_up_sorted(r, order, nkeyed) != 0) {
        drop(r, hc_error(c->hc));
        memset(c->ent, 0, r->ninodes * sizeof *c->ent);
        c->looked = c->hits = 0;
    } else if (hc_read_end(c->hc) != 0) {
        drop(r, hc_error(c->hc));
    }
    free(order);
}

void dd_cache_expected_work(const dd_run *r, const uint32_t *cand, size_t n,
                            uint64_t *messages, uint64_t *bytes)
{
    *messages = *bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const cache_ent *e = r->cache != NULL ? &r->cache->ent[cand[i]] : NULL;
        int hit = e != NULL && (e->flags & CE_HIT);
        uint64_t size = r->inodes[cand[i]].size;
        if (!hit || !e->row.has_prefix) {
            ++*messages;
            *bytes += size < DD_PREFIX_BYTES ? size : DD_PREFIX_BYTES;
        }
        if (!hit || !e->row.has_full) {
            ++*messages;
            *bytes += size;
        }
    }
}

int dd_cache_prefix(dd_run *r, uint32_t k, uint8_t out[20])
{
    if (r->cache == NULL)
        return 0;
    cache_ent *e = &r->cache->ent[k];
    if (!(e->flags & CE_HIT) || !e->row.has_prefix)
        return 0;
    memcpy(out, e->row.prefix, 20);
    r->cache->prefixes++;
    return 1;
}

int dd_cache_take_full(dd_run *r, uint32_t k)
{
    if (r->cache == NULL)
        return 0;
    cache_ent *e = &r->cache->ent[k];
    if (!(e->flags & CE_HIT) || !e->row.has_full)
        return 0;
    if (!(e->flags & CE_USED)) {
        memcpy(r->inodes[k].full, e->row.full, 20);
        r->inodes[k].hashed = 1;
        e->flags |= CE_USED;
        r->cache->fulls++;
    }
    return 1;
}

int dd_cache_is_cached(const dd_run *r, uint32_t k)
{
    return r->cache != NULL && (r->cache->ent[k].flags & CE_USED) != 0;
}

int64_t dd_cache_proof(const dd_run *r, uint32_t k)
{
    if (!dd_cache_is_cached(r, k))
        return 0;
    return r->cache->ent[k].row.proof;
}

void dd_cache_count_proof_join(dd_run *r)
{
    if (r->cache != NULL)
        r->cache->proof_joins++;
}

/* new_proof_id: a random non-zero 64-bit id. */
static int64_t new_proof_id(void)
{
    static uint64_t counter;
    uint64_t x = 0;
    if (getrandom(&x, sizeof x, 0) != (ssize_t)sizeof x)
        x = (uint64_t)hc_now_ns() ^ ((uint64_t)getpid() << 32);
    x ^= ++counter * 0x9e3779b97f4a7c15ull;
    x &= 0x7fffffffffffffffull;
    return x == 0 ? 1 : (int64_t)x;
}

/* give_proofs: every class of two inodes or more that were read or taken
 * from the cache this run gets one proof id in its members' rows: the
 * one its representative already had, else a new one. */
static int give_proofs(dd_run *r)
{
    struct dd_cache *c = r->cache;
    uint32_t *count = calloc(r->ninodes ? r->ninodes : 1, sizeof *count);
    int64_t *id = calloc(r->ninodes ? r->ninodes : 1, sizeof *id);
    if (count == NULL || id == NULL) {
        free(count);
        free(id);
        return -1;
    }
    for (uint32_t k = 0; k < r->ninodes; k++)
        if (r->inodes[k].state == DD_ALIVE && r->inodes[k].hashed)
            count[r->inodes[k].cls]++;
    for (uint32_t k = 0; k < r->ninodes; k++) {
        const dd_inode *in = &r->inodes[k];
        if (in->state != DD_ALIVE || !in->hashed || count[in->cls] < 2)
            continue;
        if (id[in->cls] == 0) {
            int64_t old = dd_cache_proof(r, in->cls);
            id[in->cls] = old != 0 ? old : new_proof_id();
        }
        c->ent[k].new_proof = id[in->cls];
    }
    free(count);
    free(id);
    return 0;
}

/* row_to_store: e's row as it should be stored for inode k (the prefix
 * and whole-file SHA-1 known now, the proof of this run or the stored
 * one when the digest is unchanged); 1 when it differs from what the
 * cache holds (so it is written). */
static int row_to_store(const dd_run *r, uint32_t k, cache_ent *e)
{
    const dd_inode *in = &r->inodes[k];
    hc_row old = e->row;
    int hit = (e->flags & CE_HIT) != 0;
    if (!hit)
        old.has_prefix = old.has_full = 0, old.proof = 0;
    hc_row *now = &e->row;
    *now = old;
    memcpy(now->prefix, in->prefix, 20);
    now->has_prefix = 1;
    if (in->hashed) {
        if (!old.has_full || memcmp(old.full, in->full, 20) != 0)
            now->proof = 0; /* another content: the old proof says nothing */
        memcpy(now->full, in->full, 20);
        now->has_full = 1;
    }
    if (e->new_proof != 0)
        now->proof = e->new_proof;
    if (!now->has_full)
        now->proof = 0;
    return !hit || now->has_full != old.has_full || now->proof != old.proof ||
           memcmp(now->prefix, old.prefix, 20) != 0 ||
           (now->has_full && memcmp(now->full, old.full, 20) != 0);
}

/* store: writes the rows of the run's new knowledge in one transaction.
 * 0, or -1 with the cache's cause. */
static int store(dd_run *r)
{
    struct dd_cache *c = r->cache;
    if (give_proofs(r) != 0)
        return -1;
    int began = 0;
    for (uint32_t k = 0; k < r->ninodes; k++) {
        cache_ent *e = &c->ent[k];
        if (!(e->flags & CE_KEYED) || r->inodes[k].state != DD_ALIVE)
            continue;
        if (e->flags & CE_RACY) {
            c->racy++;
            continue;
        }
        if (!row_to_store(r, k, e))
            continue;
        if (!began && hc_write_begin(c->hc) != 0)
            return -1;
        began = 1;
        if (hc_put(c->hc, &e->row, dd_inode_name(r, k)) != 0)
            return -1;
        e->flags |= CE_STORED;
        c->stored++;
    }
    return began ? hc_write_commit(c->hc) : 0;
}

void dd_cache_end(dd_run *r)
{
    struct dd_cache *c = r->cache;
    if (c == NULL)
        return;
    if (c->hc != NULL && !r->fatal && store(r) != 0) {
        c->stored = 0;
        drop(r, hc_error(c->hc));
    }
    if (r->o->verbose)
        fprintf(stderr,
                "%s: cache: %" PRIu64 " files looked up, %" PRIu64 " found unchanged; %" PRIu64
                " prefixes and %" PRIu64 " whole-file digests taken from it, %" PRIu64
                " files joined by stored byte proofs; %" PRIu64 " entries stored, %" PRIu64
                " too recent to store\n",
                CLI_PROGRAM, c->looked, c->hits, c->prefixes, c->fulls, c->proof_joins, c->stored,
                c->racy);
    hc_close(c->hc);
    free(c->ent);
    free(c);
    r->cache = NULL;
}
