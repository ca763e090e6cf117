/*
 * dedup_stages.c - from inodes to groups of identical files, in stages
 * that each read more only of what the last one could not tell apart:
 *
 *  1. size: inodes of a size no other inode has are done (no read);
 *  2. prefix: the first 4 KiB of every remaining inode, read on a few
 *     threads, hashed in one hb_sha1_batch per chunk of 8192 files; for
 *     files of up to 4 KiB that is the whole file;
 *  3. full: the rest, read whole into memory batch by batch (up to
 *     --batch-bytes). In each set (one size, one prefix) every file is
 *     compared byte for byte with the distinct contents met so far (up to
 *     REPS_MAX of them); a copy joins its content and needs no SHA-1 of
 *     its own (equal bytes have equal SHA-1s). Each distinct content is
 *     hashed whole through the engine (hb_submit, while the next batch is
 *     read). Sets bigger than a batch are compared by streaming the files,
 *     and their distinct contents hashed by hb_hash_files (which streams
 *     too), so memory stays bounded;
 *  4. SHA-1 check: hashed files of one set with equal SHA-1s are compared
 *     byte for byte: equal (files past REPS_MAX) join one class;
 *     different bytes under one SHA-1 are a SHA-1 collision: warned
 *     about, never grouped.
 * Then each group's paths are stat-ed again: a path whose file changed
 * since the walk is reported and left out.
 *
 * Owns: the stages, their batching and memory bounds, the classes, the
 * collisions and the groups. Must not: print groups (dedup_output.c), or
 * call two files equal without comparing their bytes (hard links to one
 * inode excepted: they are one file).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "dedup.h"

#define PREFIX_CHUNK_FILES 8192
#define PREFIX_RUN_SPLIT 65536 /* bigger runs of one size are not kept in memory */
#define BATCH_FILES 4096
#define HUGE_PAGE ((size_t)2 << 20)

/* The sets the full stage hashes: inodes of one size and one prefix. */
typedef struct {
    uint32_t *inodes;
    size_t n, cap;
    size_t *start; /* set s is inodes[start[s] .. start[s + 1]) */
    size_t nsets, cap_sets;
    uint64_t bytes;
} set_list;

/* One batch of the full stage: whole sets, read into one arena. */
typedef struct {
    size_t lo, hi; /* sets */
    dd_read_item *items;
    size_t n;
    hb_msg *msgs;
    hb_digest *digests;
    uint32_t *msg_item;
    size_t nmsgs;
    int32_t *join; /* per item: the item whose bytes it has, or -1 */
    hb_job *job;
} full_batch;

static const dd_run *sort_run; /* qsort has no context argument in C11 */

/* inode_order: walk order of inode k's first path. */
static uint32_t inode_order(const dd_run *r, uint32_t k)
{
    return r->paths[r->by_inode[r->inodes[k].first]].order;
}

static int cmp_size(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const dd_inode *x = &sort_run->inodes[a], *y = &sort_run->inodes[b];
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    return inode_order(sort_run, a) < inode_order(sort_run, b) ? -1 : 1;
}

static int cmp_prefix(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    int c = memcmp(sort_run->inodes[a].prefix, sort_run->inodes[b].prefix, 20);
    if (c != 0)
        return c;
    return inode_order(sort_run, a) < inode_order(sort_run, b) ? -1 : 1;
}

/* grow: makes *p (of *cap elements of size sz) hold need. 0 or ENOMEM. */
static int grow(void **p, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 256;
    while (ncap < need)
        ncap *= 2;
    void *np = realloc(*p, ncap * sz);
    if (np == NULL)
        return ENOMEM;
    *p = np;
    *cap = ncap;
    return 0;
}

/* read_threads: threads that read files: one per online core, 2..8. */
static unsigned read_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 2 ? 2u : n > 8 ? 8u : (unsigned)n;
}

/* engine_error: reports a failed engine call; the run is incomplete. */
static int engine_error(dd_run *r, hb_status st)
{
    progress_clear(r->meter);
    const char *detail = r->engine ? hb_engine_last_error(r->engine) : "";
    cli_error("hashing failed: %s%s%s", hb_status_str(st), detail[0] ? ": " : "", detail);
    r->fatal = 1;
    return -1;
}

/* need_engine: opens the engine the first time it is needed. */
static int need_engine(dd_run *r)
{
    if (r->fatal)
        return -1;
    if (r->engine != NULL)
        return 0;
    progress_clear(r->meter);
    if (cli_engine_open(r->cfg, &r->engine) != CLI_EXIT_OK) {
        r->fatal = 1;
        return -1;
    }
    return 0;
}

/* hash_now: out[i] = SHA-1(m[i]) through the engine. 0 or -1. */
static int hash_now(dd_run *r, const hb_msg *m, size_t n, hb_digest *out)
{
    if (n == 0)
        return 0;
    if (need_engine(r) != 0)
        return -1;
    hb_status st = hb_sha1_batch(r->engine, m, n, out);
    return st == HB_OK ? 0 : engine_error(r, st);
}

/* ---- classes: equal SHA-1, then equal bytes --------------------------- */

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
    return inode_order(sort_run, a->inode) < inode_order(sort_run, b->inode) ? -1 : 1;
}

/* add_collision: records and announces that a and b share a SHA-1 but not
 * their bytes. */
static void add_collision(dd_run *r, uint32_t a, uint32_t b)
{
    if (grow((void **)&r->collisions, &r->cap_collisions, r->ncollisions + 1,
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

/* classify_run: members m[0..n) share one SHA-1: each joins the first
 * earlier class whose bytes it has, else starts a new one. */
static void classify_run(dd_run *r, member *m, size_t n)
{
    size_t nreps = 0; /* class representatives are moved to m[0..nreps) */
    for (size_t i = 0; i < n; i++) {
        if (r->inodes[m[i].inode].state != DD_ALIVE)
            continue;
        int joined = 0;
        for (size_t j = 0; j < nreps && !joined; j++) {
            if (r->inodes[m[j].inode].state != DD_ALIVE)
                continue;
            int eq = same_bytes(r, &m[j], &m[i]);
            if (eq == 1) {
                r->inodes[m[i].inode].cls = r->inodes[m[j].inode].cls;
                joined = 1;
            } else if (eq == 0) {
                add_collision(r, m[j].inode, m[i].inode);
            } else if (r->inodes[m[i].inode].state != DD_ALIVE) {
                joined = 1; /* it failed: out */
            }
        }
        if (!joined) {
            r->inodes[m[i].inode].cls = m[i].inode;
            m[nreps++] = m[i];
        }
    }
}

/* classify: inodes of one size, every one hashed whole (or failed), with
 * their bytes in data[] when at hand (data NULL: none). */
static void classify(dd_run *r, const uint32_t *list, unsigned char *const *data, size_t n)
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

/* ---- the prefix stage ---------------------------------------------------- */

/* add_set: a set of n inodes (one size, one prefix) for the full stage. */
static int add_set(set_list *s, const dd_run *r, const uint32_t *list, size_t n)
{
    if (grow((void **)&s->inodes, &s->cap, s->n + n, sizeof *s->inodes) != 0 ||
        grow((void **)&s->start, &s->cap_sets, s->nsets + 2, sizeof *s->start) != 0)
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
                      set_list *sets)
{
    if (n == 0)
        return 0;
    if (r->inodes[run[0]].size <= DD_PREFIX_BYTES) {
        classify(r, run, data, n);
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
        if (j - i > 1 && add_set(sets, r, run + i, j - i) != 0)
            return ENOMEM;
        i = j;
    }
    return 0;
}

/* A buffer reused from chunk to chunk and batch to batch: fresh memory
 * for every one would cost a page fault per 4 KiB. */
typedef struct {
    unsigned char *p;
    size_t cap;
} reuse_buf;

/* reuse_get: b with room for n bytes (its contents are not kept), or
 * NULL. */
static unsigned char *reuse_get(reuse_buf *b, size_t n)
{
    if (n == 0)
        n = 1;
    if (n > b->cap) {
        free(b->p);
        b->cap = n + n / 4;
        b->p = NULL;
        if (b->cap >= HUGE_PAGE) {
            /* huge pages: one fault per 2 MiB instead of per 4 KiB */
            b->cap = (b->cap + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
            void *p = NULL;
            if (posix_memalign(&p, HUGE_PAGE, b->cap) == 0) {
                b->p = p;
                (void)madvise(p, b->cap, MADV_HUGEPAGE);
            }
        } else {
            b->p = malloc(b->cap);
        }
        if (b->p == NULL)
            b->cap = 0;
    }
    return b->p;
}

/* prefix_chunk: reads and hashes the prefixes of cand[0..n) into buf;
 * data[i] points at each one's bytes. Returns 0 or -1 (engine failure or
 * no memory, reported). */
static int prefix_chunk(dd_run *r, const uint32_t *cand, size_t n, reuse_buf *buf,
                        unsigned char **data)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = r->inodes[cand[i]].size;
        total += s < DD_PREFIX_BYTES ? (size_t)s : DD_PREFIX_BYTES;
    }
    dd_read_item *items = calloc(n, sizeof *items);
    hb_msg *msgs = malloc(n * sizeof *msgs);
    hb_digest *dig = malloc(n * sizeof *dig);
    uint32_t *which = malloc(n * sizeof *which);
    unsigned char *arena = reuse_get(buf, total);
    int rc = -1;
    if (items == NULL || msgs == NULL || dig == NULL || which == NULL || arena == NULL) {
        cli_error("%s", strerror(ENOMEM));
        r->fatal = 1;
        goto out;
    }
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = r->inodes[cand[i]].size;
        items[i].inode = cand[i];
        items[i].want = s < DD_PREFIX_BYTES ? (size_t)s : DD_PREFIX_BYTES;
        items[i].whole = s <= DD_PREFIX_BYTES;
        items[i].buf = arena + off;
        data[i] = items[i].buf;
        off += items[i].want;
    }
    dd_read_all(r, items, n, read_threads());
    size_t nm = 0;
    for (size_t i = 0; i < n; i++) {
        if (items[i].cause != NULL) {
            dd_fail_inode(r, cand[i], items[i].cause);
            continue;
        }
        msgs[nm].data = items[i].buf;
        msgs[nm].len = items[i].want;
        which[nm++] = (uint32_t)i;
    }
    if (hash_now(r, msgs, nm, dig) != 0)
        goto out;
    for (size_t j = 0; j < nm; j++) {
        dd_inode *k = &r->inodes[cand[which[j]]];
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
    return rc;
}

/* run_end: the end of the run of one size starting at cand[i]. */
static size_t run_end(const dd_run *r, const uint32_t *cand, size_t n, size_t i)
{
    size_t j = i + 1;
    while (j < n && r->inodes[cand[j]].size == r->inodes[cand[i]].size)
        j++;
    return j;
}

/* prefix_stage: hashes the prefixes of the candidates (sorted by size,
 * in runs of two or more) and settles each run. Returns 0 or -1. */
static int prefix_stage(dd_run *r, uint32_t *cand, size_t n, set_list *sets)
{
    unsigned char **data = malloc((n ? n : 1) * sizeof *data);
    if (data == NULL)
        return -1;
    progress_stage(r->meter, "prefixes", n, 0);
    reuse_buf buf = {NULL, 0};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        size_t j = run_end(r, cand, n, i);
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
            size_t e = run_end(r, cand, n, j);
            if (e - i > PREFIX_RUN_SPLIT)
                break;
            j = e;
        }
        rc = prefix_chunk(r, cand + i, j - i, &buf, data + i);
        for (size_t a = i; a < j && rc == 0;) {
            size_t b = run_end(r, cand, j, a);
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

/* ---- the full stage ------------------------------------------------------ */

#define REPS_MAX 8 /* distinct contents looked for by comparison in one set */

static void batch_free(full_batch *b)
{
    free(b->items);
    free(b->msgs);
    free(b->digests);
    free(b->msg_item);
    free(b->join);
    hb_job_free(b->job);
    memset(b, 0, sizeof *b);
}

/* set_bytes: the bytes of set s. */
static uint64_t set_bytes(const dd_run *r, const set_list *s, size_t k)
{
    return (uint64_t)(s->start[k + 1] - s->start[k]) * r->inodes[s->inodes[s->start[k]]].size;
}

/* pick_batch: the sets from *next on that fit one batch (sets too big for
 * memory are passed over: big_set streams them). Sets b->lo..b->hi;
 * returns the files and *bytes. */
static size_t pick_batch(const dd_run *r, const set_list *s, size_t *next, full_batch *b,
                         uint64_t *bytes)
{
    while (*next < s->nsets && set_bytes(r, s, *next) > r->o->batch_bytes)
        (*next)++;
    b->lo = *next;
    size_t files = 0;
    *bytes = 0;
    for (; *next < s->nsets; (*next)++) {
        uint64_t sb = set_bytes(r, s, *next);
        size_t sf = s->start[*next + 1] - s->start[*next];
        if (sb > r->o->batch_bytes)
            continue;
        if (files > 0 && (*bytes + sb > r->o->batch_bytes || files + sf > BATCH_FILES))
            break;
        *bytes += sb;
        files += sf;
    }
    b->hi = *next;
    return files;
}

/* split_by_bytes: items[0..n) of one set, read: each is compared with the
 * distinct contents met so far (up to REPS_MAX); one equal to an earlier
 * item joins it (join[i] = that item) and needs no SHA-1 of its own (its
 * bytes are its digest's); the others are hashed (join[i] = -1). */
static void split_by_bytes(dd_run *r, const dd_read_item *items, int32_t *join, size_t n,
                           int32_t base)
{
    int32_t reps[REPS_MAX];
    size_t nreps = 0;
    for (size_t i = 0; i < n; i++) {
        join[i] = -1;
        if (items[i].cause != NULL)
            continue;
        for (size_t k = 0; k < nreps && join[i] < 0; k++) {
            const dd_read_item *rep = &items[reps[k] - base];
            r->compared_bytes += items[i].want;
            if (memcmp(rep->buf, items[i].buf, items[i].want) == 0)
                join[i] = reps[k];
        }
        if (join[i] < 0 && nreps < REPS_MAX)
            reps[nreps++] = base + (int32_t)i;
    }
}

/* batch_start: reads the next batch of sets, splits each by bytes, and
 * submits one message per distinct content. Returns 1 when a batch was
 * started, 0 when none is left, -1 on failure (reported). */
static int batch_start(dd_run *r, const set_list *s, size_t *next, full_batch *b,
                       reuse_buf *arena_buf)
{
    memset(b, 0, sizeof *b);
    uint64_t bytes;
    size_t files = pick_batch(r, s, next, b, &bytes);
    if (files == 0)
        return 0;
    b->items = calloc(files, sizeof *b->items);
    b->msgs = malloc(files * sizeof *b->msgs);
    b->digests = malloc(files * sizeof *b->digests);
    b->msg_item = malloc(files * sizeof *b->msg_item);
    b->join = malloc(files * sizeof *b->join);
    unsigned char *arena = reuse_get(arena_buf, (size_t)bytes);
    if (b->items == NULL || arena == NULL || b->msgs == NULL || b->digests == NULL ||
        b->msg_item == NULL || b->join == NULL) {
        cli_error("%s", strerror(ENOMEM));
        r->fatal = 1;
        return -1;
    }
    size_t off = 0;
    for (size_t k = b->lo; k < b->hi; k++) {
        if (set_bytes(r, s, k) > r->o->batch_bytes)
            continue;
        for (size_t i = s->start[k]; i < s->start[k + 1]; i++) {
            dd_read_item *it = &b->items[b->n++];
            it->inode = s->inodes[i];
            it->want = (size_t)r->inodes[it->inode].size;
            it->whole = 1;
            it->buf = arena + off;
            off += it->want;
        }
    }
    dd_read_all(r, b->items, b->n, read_threads());
    for (size_t i = 0; i < b->n; i++)
        if (b->items[i].cause != NULL)
            dd_fail_inode(r, b->items[i].inode, b->items[i].cause);
    size_t i = 0;
    for (size_t k = b->lo; k < b->hi; k++) {
        if (set_bytes(r, s, k) > r->o->batch_bytes)
            continue;
        size_t n = s->start[k + 1] - s->start[k];
        split_by_bytes(r, b->items + i, b->join + i, n, (int32_t)i);
        i += n;
    }
    for (i = 0; i < b->n; i++) {
        if (b->items[i].cause != NULL || b->join[i] >= 0)
            continue;
        b->msgs[b->nmsgs].data = b->items[i].buf;
        b->msgs[b->nmsgs].len = b->items[i].want;
        b->msg_item[b->nmsgs++] = (uint32_t)i;
    }
    if (need_engine(r) != 0)
        return -1;
    hb_status st = hb_submit(r->engine, b->msgs, b->nmsgs, b->digests, &b->job);
    return st == HB_OK ? 1 : engine_error(r, st);
}

/* batch_finish: waits for b's digests; the hashed items of each set are
 * classified (equal SHA-1 and equal bytes: one class; equal SHA-1 and
 * different bytes: a collision), and the items that joined one by their
 * bytes take its class and digest. Returns 0 or -1. */
static int batch_finish(dd_run *r, const set_list *s, full_batch *b)
{
    hb_status st = hb_job_wait(b->job, -1);
    if (st != HB_OK)
        return engine_error(r, st);
    uint64_t bytes = 0;
    for (size_t j = 0; j < b->nmsgs; j++) {
        dd_read_item *it = &b->items[b->msg_item[j]];
        memcpy(r->inodes[it->inode].full, b->digests[j], 20);
        r->inodes[it->inode].hashed = 1;
        bytes += it->want;
    }
    r->hashed_full += b->nmsgs;
    r->bytes_full += bytes;
    unsigned char **data = malloc((b->n ? b->n : 1) * sizeof *data);
    uint32_t *list = malloc((b->n ? b->n : 1) * sizeof *list);
    if (data == NULL || list == NULL) {
        free(data);
        free(list);
        cli_error("%s", strerror(ENOMEM));
        r->fatal = 1;
        return -1;
    }
    size_t i = 0;
    for (size_t k = b->lo; k < b->hi; k++) {
        if (set_bytes(r, s, k) > r->o->batch_bytes)
            continue;
        size_t n = s->start[k + 1] - s->start[k], m = 0;
        for (size_t j = i; j < i + n; j++) {
            if (b->join[j] >= 0)
                continue;
            list[m] = b->items[j].inode;
            data[m++] = b->items[j].buf;
        }
        classify(r, list, data, m);
        for (size_t j = i; j < i + n; j++) {
            if (b->join[j] < 0 || b->items[j].cause != NULL)
                continue;
            dd_inode *to = &r->inodes[b->items[j].inode];
            const dd_inode *from = &r->inodes[b->items[b->join[j]].inode];
            to->cls = from->cls;
            memcpy(to->full, from->full, 20);
            to->hashed = from->hashed;
            r->joined_by_bytes++;
        }
        i += n;
    }
    free(data);
    free(list);
    progress_add(r->meter, b->n, bytes);
    return 0;
}

/* big_split: members list[0..n) of a big set compared, streaming, with
 * the distinct contents met so far (up to REPS_MAX); join[i] is the index
 * of the earlier member whose bytes member i has, or -1 (to be hashed). */
static void big_split(dd_run *r, const uint32_t *list, int32_t *join, size_t n)
{
    int32_t reps[REPS_MAX];
    size_t nreps = 0;
    for (size_t i = 0; i < n; i++) {
        join[i] = -1;
        for (size_t k = 0; k < nreps && join[i] < 0; k++) {
            if (r->inodes[list[reps[k]]].state != DD_ALIVE ||
                r->inodes[list[i]].state != DD_ALIVE)
                continue;
            member a = {list[reps[k]], NULL}, m = {list[i], NULL};
            if (same_bytes(r, &a, &m) == 1)
                join[i] = reps[k];
        }
        if (join[i] < 0 && nreps < REPS_MAX && r->inodes[list[i]].state == DD_ALIVE)
            reps[nreps++] = (int32_t)i;
    }
}

/* big_hash: the SHA-1 of each member of list[0..n) with join[i] < 0,
 * through hb_hash_files (which streams big files). Returns 0 or -1. */
static int big_hash(dd_run *r, const uint32_t *list, const int32_t *join, size_t n)
{
    const char **paths = malloc(n * sizeof *paths);
    uint32_t *which = malloc(n * sizeof *which);
    hb_file_result *res = calloc(n, sizeof *res);
    int rc = -1;
    if (paths == NULL || which == NULL || res == NULL) {
        cli_error("%s", strerror(ENOMEM));
        r->fatal = 1;
        goto out;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (join[i] < 0 && r->inodes[list[i]].state == DD_ALIVE) {
            which[m] = (uint32_t)i;
            paths[m++] = dd_inode_name(r, list[i]);
        }
    if (need_engine(r) != 0)
        goto out;
    hb_status st = hb_hash_files(r->engine, paths, m, res, NULL);
    if (st != HB_OK) {
        engine_error(r, st);
        goto out;
    }
    for (size_t j = 0; j < m; j++) {
        uint32_t ki = list[which[j]];
        dd_inode *k = &r->inodes[ki];
        if (res[j].status == HB_OK && res[j].size == k->size) {
            memcpy(k->full, res[j].digest, 20);
            k->hashed = 1;
            r->hashed_full++;
            r->bytes_full += k->size;
        } else if (res[j].status == HB_OK || res[j].status == HB_ERR_FILE_CHANGED) {
            dd_fail_inode(r, ki, "changed during the scan: left out");
        } else {
            char buf[200];
            snprintf(buf, sizeof buf, "%s%s%s", hb_status_str(res[j].status),
                     res[j].err ? ": " : "", res[j].err ? strerror(res[j].err) : "");
            dd_fail_inode(r, ki, buf);
        }
    }
    rc = 0;
out:
    free(paths);
    free(which);
    free(res);
    return rc;
}

/* big_finish: the set list[0..n) after its distinct contents were
 * hashed: those are classified, and each copy takes the class and digest
 * of the member it joined (join: indices into list). */
static void big_finish(dd_run *r, const uint32_t *list, const int32_t *join, size_t n,
                       uint32_t *scratch)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (join[i] < 0)
            scratch[m++] = list[i];
    classify(r, scratch, NULL, m);
    for (size_t i = 0; i < n; i++) {
        dd_inode *to = &r->inodes[list[i]];
        const dd_inode *from = join[i] >= 0 ? &r->inodes[list[join[i]]] : NULL;
        if (from == NULL || to->state != DD_ALIVE || from->state != DD_ALIVE)
            continue;
        to->cls = from->cls;
        memcpy(to->full, from->full, 20);
        to->hashed = from->hashed;
        r->joined_by_bytes++;
    }
}

/* big_sets: the sets too big to hold in memory together: each is compared
 * streaming (copies join the first member they equal), then the distinct
 * contents of all of them are hashed in one hb_hash_files job (its I/O
 * threads stream several files at once through OpenSSL), then each set is
 * classified as a batch's are. Memory stays at a few chunk buffers.
 * Returns 0 or -1. */
static int big_sets(dd_run *r, const set_list *s)
{
    size_t total = 0;
    for (size_t k = 0; k < s->nsets; k++)
        if (set_bytes(r, s, k) > r->o->batch_bytes)
            total += s->start[k + 1] - s->start[k];
    if (total == 0)
        return 0;
    uint32_t *list = malloc(total * sizeof *list);
    uint32_t *scratch = malloc(total * sizeof *scratch);
    int32_t *join = malloc(total * sizeof *join);
    int rc = -1;
    if (list == NULL || scratch == NULL || join == NULL) {
        cli_error("%s", strerror(ENOMEM));
        r->fatal = 1;
        goto out;
    }
    size_t off = 0;
    for (size_t k = 0; k < s->nsets; k++) {
        if (set_bytes(r, s, k) <= r->o->batch_bytes)
            continue;
        size_t n = s->start[k + 1] - s->start[k];
        memcpy(list + off, s->inodes + s->start[k], n * sizeof *list);
        big_split(r, list + off, join + off, n);
        for (size_t i = off; i < off + n; i++)
            if (join[i] >= 0)
                join[i] += (int32_t)off;
        off += n;
    }
    if (big_hash(r, list, join, total) != 0)
        goto out;
    off = 0;
    for (size_t k = 0; k < s->nsets; k++) {
        if (set_bytes(r, s, k) <= r->o->batch_bytes)
            continue;
        size_t n = s->start[k + 1] - s->start[k];
        for (size_t i = off; i < off + n; i++)
            if (join[i] >= 0)
                join[i] -= (int32_t)off;
        big_finish(r, list + off, join + off, n, scratch);
        progress_add(r->meter, n, (uint64_t)n * r->inodes[list[off]].size);
        off += n;
    }
    rc = 0;
out:
    free(list);
    free(scratch);
    free(join);
    return rc;
}

/* full_stage: hashes every set whole and classifies it; the next batch is
 * read while the engine hashes the current one. Returns 0 or -1. */
static int full_stage(dd_run *r, const set_list *s)
{
    progress_stage(r->meter, "hashing", s->n, s->bytes);
    full_batch cur, nxt;
    reuse_buf arenas[2] = {{NULL, 0}, {NULL, 0}};
    unsigned which = 0;
    size_t next = 0;
    int rc = 0;
    int have = batch_start(r, s, &next, &cur, &arenas[which]);
    while (have == 1) {
        which ^= 1;
        int have_next = batch_start(r, s, &next, &nxt, &arenas[which]);
        rc = batch_finish(r, s, &cur);
        batch_free(&cur);
        if (rc != 0 || have_next < 0) {
            batch_free(&nxt);
            rc = -1;
            break;
        }
        cur = nxt;
        have = have_next;
    }
    if (have < 0) {
        batch_free(&cur);
        rc = -1;
    }
    free(arenas[0].p);
    free(arenas[1].p);
    if (rc == 0 && big_sets(r, s) != 0)
        rc = -1;
    return rc;
}

/* ---- empty files --------------------------------------------------------- */

/* empty_run: inodes of size 0 (--empty): each is checked to be really
 * empty (files in /proc say 0 and hold bytes), then all are one class. */
static int empty_run(dd_run *r, const uint32_t *list, size_t n)
{
    dd_read_item *items = calloc(n ? n : 1, sizeof *items);
    if (items == NULL)
        return -1;
    for (size_t i = 0; i < n; i++) {
        items[i].inode = list[i];
        items[i].whole = 1;
    }
    dd_read_all(r, items, n, read_threads());
    hb_msg empty = {"", 0};
    hb_digest d;
    int rc = hash_now(r, &empty, 1, &d);
    uint32_t rep = UINT32_MAX;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (items[i].cause != NULL) {
            dd_fail_inode(r, list[i], items[i].cause);
            continue;
        }
        dd_inode *k = &r->inodes[list[i]];
        memcpy(k->full, d, 20);
        k->hashed = 1;
        if (rep == UINT32_MAX)
            rep = list[i];
        k->cls = rep;
    }
    free(items);
    return rc;
}

/* ---- groups -------------------------------------------------------------- */

static int cmp_class(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    uint32_t ca = sort_run->inodes[a].cls, cb = sort_run->inodes[b].cls;
    if (ca != cb)
        return ca < cb ? -1 : 1;
    return inode_order(sort_run, a) < inode_order(sort_run, b) ? -1 : 1;
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
    qsort(r->group_paths + first, r->ngroup_paths - first, sizeof *r->group_paths,
          cmp_u32_order);
    size_t kept = first;
    for (size_t i = first; i < r->ngroup_paths; i++) {
        uint32_t p = r->group_paths[i];
        if (still_same(r, p))
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

/* make_groups: every class with two paths or more, sorted by first path. */
static int make_groups(dd_run *r)
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

/* now_s: the monotonic clock in seconds. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int dd_find_groups(dd_run *r)
{
    double t0 = now_s();
    uint32_t *order = malloc((r->ninodes ? r->ninodes : 1) * sizeof *order);
    uint32_t *cand = malloc((r->ninodes ? r->ninodes : 1) * sizeof *cand);
    set_list sets;
    memset(&sets, 0, sizeof sets);
    int rc = -1;
    if (order == NULL || cand == NULL)
        goto out;
    for (uint32_t k = 0; k < r->ninodes; k++)
        order[k] = k;
    sort_run = r;
    qsort(order, r->ninodes, sizeof *order, cmp_size);
    size_t ncand = 0;
    for (size_t i = 0; i < r->ninodes;) {
        size_t j = run_end(r, order, r->ninodes, i);
        uint64_t npaths = 0;
        for (size_t k = i; k < j; k++)
            npaths += r->inodes[order[k]].npaths;
        if (r->inodes[order[i]].size == 0) {
            if (npaths > 1 && empty_run(r, order + i, j - i) != 0)
                goto out;
        } else if (j - i > 1) {
            memcpy(cand + ncand, order + i, (j - i) * sizeof *cand);
            ncand += j - i;
        }
        i = j;
    }
    if (prefix_stage(r, cand, ncand, &sets) != 0)
        goto out;
    double t1 = now_s();
    r->secs[1] = t1 - t0;
    if (full_stage(r, &sets) != 0)
        goto out;
    double t2 = now_s();
    r->secs[2] = t2 - t1;
    progress_clear(r->meter);
    rc = make_groups(r);
    r->secs[3] = now_s() - t2;
out:
    if (rc != 0 && !r->fatal) {
        cli_error("%s", strerror(ENOMEM));
        r->fatal = 1;
    }
    free(order);
    free(cand);
    free(sets.inodes);
    free(sets.start);
    return rc == 0 ? 0 : CLI_EXIT_FAILURE;
}
