/*
 * dedup_full.c - the whole-file stage of `hashbatch dedup`: sets of inodes
 * with one size and one prefix digest are read whole, batch by batch (up
 * to --batch-bytes), on a few threads. In each set every file is compared
 * byte for byte with the distinct contents met so far (up to REPS_MAX); a
 * copy joins its content and needs no SHA-1 of its own (equal bytes have
 * equal SHA-1s). The comparison alone sorts a set of up to REPS_MAX
 * distinct contents, so those are hashed only when something needs their
 * whole-file SHA-1 (see digests_wanted), or when two of them differ within
 * the prefix their equal prefix SHA-1s were taken over: a SHA-1
 * collision, which dd_classify must see to announce. What is hashed goes
 * through the engine (hb_submit) while the next batch is read. Sets
 * bigger than a batch are compared by streaming the files, and their distinct contents hashed by
 * files jobs (hb_submit_files, which stream them through OpenSSL) while
 * the next sets are compared; so are sets of files over 1 MiB, on which a
 * device's lanes gain nothing. Memory stays near two batches whatever the
 * file sizes.
 *
 * With --cache, members whose whole-file SHA-1 came from the cache
 * (dd_cache_is_cached) are neither read nor hashed here: they join the
 * classification of their set with their bytes left on disk, where
 * dedup_classes.c compares them (or finds a stored byte proof).
 *
 * Owns: batching, the pipeline of reads and engine jobs, streaming of big
 * sets. Must not: hold more than two batches in memory, or map files (a
 * truncated mapping would raise SIGBUS).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dedup.h"
#include "dedup_cache.h"

#define BATCH_FILES 4096
#define STREAM_OVER ((uint64_t)1 << 20) /* files bigger are streamed */
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

#define REPS_MAX 8 /* distinct contents looked for by comparison in one set */

/* What the comparison leaves in join[i] when member i is not a copy of an
 * earlier member (join[i] >= 0: that member's index). JOIN_HASH: hashed
 * whole, then classified by SHA-1 and bytes. JOIN_DISTINCT: a content
 * proven distinct from every other one of its set by comparison; its own
 * class, no SHA-1. */
#define JOIN_HASH (-1)
#define JOIN_DISTINCT (-2)

/* digests_wanted: does this run need the whole-file SHA-1 of every file
 * it groups or leaves out? The JSON and CSV reports print each group's,
 * the index records every file's, the cache stores them, and a merge
 * compares them; the text reports and the actions use none. */
static int digests_wanted(const dd_run *r)
{
    const dd_opts *o = r->o;
    return o->format == DD_JSON || o->format == DD_CSV || o->index_out != NULL || o->use_cache ||
           o->merge;
}

/* settle_distinct: the distinct contents of one set's members (join[0..n))
 * are hashed after all when digests are wanted or when the set holds a
 * prefix collision; otherwise each keeps the class it has (its own) and is
 * counted as proven distinct by comparison. */
static void settle_distinct(dd_run *r, int32_t *join, size_t n, int prefix_collision)
{
    int hash = prefix_collision || digests_wanted(r);
    for (size_t i = 0; i < n; i++) {
        if (join[i] != JOIN_DISTINCT)
            continue;
        if (hash)
            join[i] = JOIN_HASH;
        else
            r->distinct_by_bytes++;
    }
}

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
static uint64_t set_bytes(const dd_run *r, const dd_set_list *s, size_t k)
{
    return (uint64_t)(s->start[k + 1] - s->start[k]) * r->inodes[s->inodes[s->start[k]]].size;
}

/* set_reads: members of set k to read (those not taken from the cache). */
static size_t set_reads(const dd_run *r, const dd_set_list *s, size_t k)
{
    size_t n = 0;
    for (size_t i = s->start[k]; i < s->start[k + 1]; i++)
        n += !dd_cache_is_cached(r, s->inodes[i]);
    return n;
}

/* is_big: is set k streamed rather than read into a batch? When it does
 * not fit one, or when its files are big: one SHA-1 stream is sequential,
 * so a device's lanes gain nothing on a single big file, which the files
 * jobs stream through OpenSSL on their own threads instead (the library's
 * own policy for files over 1 MiB). */
static int is_big(const dd_run *r, const dd_set_list *s, size_t k)
{
    return set_bytes(r, s, k) > r->o->batch_bytes ||
           r->inodes[s->inodes[s->start[k]]].size > STREAM_OVER;
}

/* pick_batch: the sets from *next on that fit one batch (sets too big for
 * memory are passed over: big_set streams them). Sets b->lo..b->hi;
 * returns the files and *bytes. */
static size_t pick_batch(const dd_run *r, const dd_set_list *s, size_t *next, full_batch *b,
                         uint64_t *bytes)
{
    while (*next < s->nsets && is_big(r, s, *next))
        (*next)++;
    b->lo = *next;
    size_t files = 0;
    *bytes = 0;
    for (; *next < s->nsets; (*next)++) {
        uint64_t sb = set_bytes(r, s, *next);
        size_t sf = s->start[*next + 1] - s->start[*next];
        if (is_big(r, s, *next))
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
 * bytes are its digest's); the distinct contents are JOIN_DISTINCT (then
 * settled), the rest beyond REPS_MAX JOIN_HASH. */
static void split_by_bytes(dd_run *r, const dd_read_item *items, int32_t *join, size_t n,
                           int32_t base)
{
    int32_t reps[REPS_MAX];
    size_t nreps = 0;
    int prefix_collision = 0;
    for (size_t i = 0; i < n; i++) {
        join[i] = JOIN_HASH;
        if (items[i].cause != NULL)
            continue;
        for (size_t k = 0; k < nreps && join[i] < 0; k++) {
            const dd_read_item *rep = &items[reps[k] - base];
            int head_differs = 0;
            if (dd_same_bytes(r, rep->inode, rep->buf, items[i].inode, items[i].buf,
                              &head_differs) == 1)
                join[i] = reps[k];
            prefix_collision |= head_differs;
        }
        if (join[i] < 0 && nreps < REPS_MAX) {
            join[i] = JOIN_DISTINCT;
            reps[nreps++] = base + (int32_t)i;
        }
    }
    settle_distinct(r, join, n, prefix_collision);
}

/* batch_start: reads the next batch of sets, splits each by bytes, and
 * submits one message per distinct content. Returns 1 when a batch was
 * started, 0 when none is left, -1 on failure (reported). */
static int batch_start(dd_run *r, const dd_set_list *s, size_t *next, full_batch *b,
                       dd_reuse_buf *arena_buf)
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
    unsigned char *arena = dd_reuse_get(arena_buf, (size_t)bytes);
    if (b->items == NULL || arena == NULL || b->msgs == NULL || b->digests == NULL ||
        b->msg_item == NULL || b->join == NULL) {
        cli_error("%s", strerror(ENOMEM));
        r->fatal = 1;
        return -1;
    }
    size_t off = 0;
    for (size_t k = b->lo; k < b->hi; k++) {
        if (is_big(r, s, k))
            continue;
        for (size_t i = s->start[k]; i < s->start[k + 1]; i++) {
            if (dd_cache_is_cached(r, s->inodes[i]))
                continue;
            dd_read_item *it = &b->items[b->n++];
            it->inode = s->inodes[i];
            it->want = (size_t)r->inodes[it->inode].size;
            it->whole = 1;
            it->buf = arena + off;
            off += it->want;
        }
    }
    dd_read_all(r, b->items, b->n, dd_read_threads());
    for (size_t i = 0; i < b->n; i++)
        if (b->items[i].cause != NULL)
            dd_fail_inode(r, b->items[i].inode, b->items[i].cause);
    size_t i = 0;
    for (size_t k = b->lo; k < b->hi; k++) {
        if (is_big(r, s, k))
            continue;
        size_t n = set_reads(r, s, k);
        split_by_bytes(r, b->items + i, b->join + i, n, (int32_t)i);
        i += n;
    }
    for (i = 0; i < b->n; i++) {
        if (b->items[i].cause != NULL || b->join[i] != JOIN_HASH)
            continue;
        b->msgs[b->nmsgs].data = b->items[i].buf;
        b->msgs[b->nmsgs].len = b->items[i].want;
        b->msg_item[b->nmsgs++] = (uint32_t)i;
    }
    if (b->nmsgs == 0)
        return 1; /* every member came from the cache or failed */
    if (dd_need_engine(r) != 0)
        return -1;
    hb_status st = hb_submit(r->engine, b->msgs, b->nmsgs, b->digests, &b->job);
    return st == HB_OK ? 1 : dd_engine_error(r, st);
}

/* batch_finish: waits for b's digests; the hashed items of each set are
 * classified (equal SHA-1 and equal bytes: one class; equal SHA-1 and
 * different bytes: a collision), and the items that joined one by their
 * bytes take its class and digest. Returns 0 or -1. */
static int batch_finish(dd_run *r, const dd_set_list *s, full_batch *b)
{
    hb_status st = b->job != NULL ? hb_job_wait(b->job, -1) : HB_OK;
    if (st != HB_OK)
        return dd_engine_error(r, st);
    uint64_t bytes = 0;
    for (size_t j = 0; j < b->nmsgs; j++) {
        dd_read_item *it = &b->items[b->msg_item[j]];
        memcpy(r->inodes[it->inode].full, b->digests[j], 20);
        r->inodes[it->inode].hashed = 1;
        bytes += it->want;
    }
    r->hashed_full += b->nmsgs;
    r->bytes_full += bytes;
    size_t cap = 1;
    for (size_t k = b->lo; k < b->hi; k++)
        if (!is_big(r, s, k))
            cap += s->start[k + 1] - s->start[k];
    unsigned char **data = malloc(cap * sizeof *data);
    uint32_t *list = malloc(cap * sizeof *list);
    if (data == NULL || list == NULL) {
        free(data);
        free(list);
        cli_error("%s", strerror(ENOMEM));
        r->fatal = 1;
        return -1;
    }
    size_t i = 0;
    for (size_t k = b->lo; k < b->hi; k++) {
        if (is_big(r, s, k))
            continue;
        size_t n = set_reads(r, s, k), m = 0;
        for (size_t j = i; j < i + n; j++) {
            if (b->join[j] >= 0)
                continue;
            list[m] = b->items[j].inode;
            data[m++] = b->items[j].buf;
        }
        for (size_t j = s->start[k]; j < s->start[k + 1]; j++) {
            if (!dd_cache_is_cached(r, s->inodes[j]))
                continue;
            list[m] = s->inodes[j];
            data[m++] = NULL;
        }
        dd_classify(r, list, data, m);
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
 * of the earlier member whose bytes member i has, or, as split_by_bytes
 * leaves it, JOIN_DISTINCT (settled) or JOIN_HASH. */
static void big_split(dd_run *r, const uint32_t *list, int32_t *join, size_t n)
{
    int32_t reps[REPS_MAX];
    size_t nreps = 0;
    int prefix_collision = 0;
    for (size_t i = 0; i < n; i++) {
        join[i] = JOIN_HASH;
        if (dd_cache_is_cached(r, list[i]))
            continue; /* classified with its cached SHA-1 (big_finish) */
        for (size_t k = 0; k < nreps && join[i] < 0; k++) {
            if (r->inodes[list[reps[k]]].state != DD_ALIVE || r->inodes[list[i]].state != DD_ALIVE)
                continue;
            int head_differs = 0;
            if (dd_same_bytes(r, list[reps[k]], NULL, list[i], NULL, &head_differs) == 1)
                join[i] = reps[k];
            prefix_collision |= head_differs;
        }
        if (join[i] < 0 && nreps < REPS_MAX && r->inodes[list[i]].state == DD_ALIVE) {
            join[i] = JOIN_DISTINCT;
            reps[nreps++] = (int32_t)i;
        }
    }
    settle_distinct(r, join, n, prefix_collision);
}

/* The hashing of some big sets' distinct contents: one files job. */
typedef struct {
    hb_file_input *in;
    uint32_t *inode;
    hb_file_result *res;
    size_t n;
    hb_files_job *job;
} big_job;

#define BIG_JOB_BYTES ((uint64_t)256 << 20) /* distinct bytes per files job */
#define BIG_JOBS 2                          /* files jobs in flight */

/* big_job_free: releases j (its job must have finished). */
static void big_job_free(big_job *j)
{
    if (j->job != NULL)
        hb_files_job_free(j->job);
    free(j->in);
    free(j->inode);
    free(j->res);
    memset(j, 0, sizeof *j);
}

/* big_job_start: starts hashing, on the files job's own I/O threads (which
 * stream big files through OpenSSL), each alive member of list[0..n) with
 * join[i] == JOIN_HASH. Returns 0 or -1 (reported). */
static int big_job_start(dd_run *r, const uint32_t *list, const int32_t *join, size_t n, big_job *j)
{
    memset(j, 0, sizeof *j);
    j->in = calloc(n ? n : 1, sizeof *j->in);
    j->inode = malloc((n ? n : 1) * sizeof *j->inode);
    j->res = calloc(n ? n : 1, sizeof *j->res);
    if (j->in == NULL || j->inode == NULL || j->res == NULL) {
        cli_error("%s", strerror(ENOMEM));
        r->fatal = 1;
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (join[i] == JOIN_HASH && r->inodes[list[i]].state == DD_ALIVE &&
            !dd_cache_is_cached(r, list[i])) {
            j->in[j->n].path = dd_inode_name(r, list[i]);
            j->in[j->n].fd = -1;
            j->inode[j->n++] = list[i];
        }
    if (j->n == 0)
        return 0; /* all from the cache: no job */
    if (dd_need_engine(r) != 0)
        return -1;
    hb_status st = hb_submit_files(r->engine, j->in, j->n, j->res, NULL, &j->job);
    return st == HB_OK ? 0 : dd_engine_error(r, st);
}

/* big_job_finish: waits for j and records each file's SHA-1, or leaves
 * the file out with its cause. Frees j. Returns 0 or -1. */
static int big_job_finish(dd_run *r, big_job *j)
{
    hb_status st = j->job != NULL ? hb_files_job_wait(j->job, -1) : HB_OK;
    if (st != HB_OK) {
        big_job_free(j);
        return dd_engine_error(r, st);
    }
    for (size_t i = 0; i < j->n; i++) {
        dd_inode *k = &r->inodes[j->inode[i]];
        const hb_file_result *res = &j->res[i];
        if (res->status == HB_OK && res->size == k->size) {
            memcpy(k->full, res->digest, 20);
            k->hashed = 1;
            r->hashed_full++;
            r->bytes_full += k->size;
        } else if (res->status == HB_OK || res->status == HB_ERR_FILE_CHANGED) {
            dd_fail_inode(r, j->inode[i], "changed during the scan: left out");
        } else {
            char buf[200];
            snprintf(buf, sizeof buf, "%s%s%s", hb_status_str(res->status), res->err ? ": " : "",
                     res->err ? strerror(res->err) : "");
            dd_fail_inode(r, j->inode[i], buf);
        }
    }
    big_job_free(j);
    return 0;
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
    dd_classify(r, scratch, NULL, m);
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

/* big_split_all: every set too big for a batch is copied to list (in
 * set order) and split by its bytes (join: indices into list); while the
 * next sets are compared, the distinct contents found so far are hashed
 * by files jobs (BIG_JOBS in flight), so reading to compare overlaps
 * hashing. Returns 0 or -1. */
static int big_split_all(dd_run *r, const dd_set_list *s, uint32_t *list, int32_t *join)
{
    big_job jobs[BIG_JOBS];
    memset(jobs, 0, sizeof jobs);
    size_t njobs = 0, off = 0, from = 0;
    uint64_t pending = 0;
    size_t last_big = 0;
    for (size_t k = 0; k < s->nsets; k++)
        if (is_big(r, s, k))
            last_big = k;
    int rc = 0;
    for (size_t k = 0; k < s->nsets && rc == 0; k++) {
        if (!is_big(r, s, k))
            continue;
        size_t n = s->start[k + 1] - s->start[k];
        memcpy(list + off, s->inodes + s->start[k], n * sizeof *list);
        big_split(r, list + off, join + off, n);
        for (size_t i = off; i < off + n; i++) {
            if (join[i] >= 0)
                join[i] += (int32_t)off;
            else if (join[i] == JOIN_HASH && !dd_cache_is_cached(r, list[i]))
                pending += r->inodes[list[i]].size;
        }
        off += n;
        if (pending < BIG_JOB_BYTES && k != last_big)
            continue;
        if (njobs == BIG_JOBS) { /* the oldest finishes first */
            rc = big_job_finish(r, &jobs[0]);
            memmove(jobs, jobs + 1, (BIG_JOBS - 1) * sizeof *jobs);
            njobs--;
        }
        if (rc == 0)
            rc = big_job_start(r, list + from, join + from, off - from, &jobs[njobs++]);
        from = off;
        pending = 0;
    }
    for (size_t q = 0; q < njobs; q++) {
        int f = rc == 0 ? big_job_finish(r, &jobs[q])
                        : (jobs[q].job ? (void)hb_files_job_cancel(jobs[q].job) : (void)0, 0);
        if (f != 0)
            rc = -1;
        big_job_free(&jobs[q]);
    }
    return rc;
}

/* big_sets: the sets too big to hold in memory together: each compared
 * streaming (copies join the first member they equal), the distinct
 * contents hashed by files jobs meanwhile (big_split_all), then each set
 * classified as a batch's are. Memory stays at a few chunk buffers.
 * Returns 0 or -1. */
static int big_sets(dd_run *r, const dd_set_list *s)
{
    size_t total = 0;
    for (size_t k = 0; k < s->nsets; k++)
        if (is_big(r, s, k))
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
    if (big_split_all(r, s, list, join) != 0)
        goto out;
    size_t off = 0;
    for (size_t k = 0; k < s->nsets; k++) {
        if (!is_big(r, s, k))
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

/* dd_full_stage: hashes every set whole and classifies it; the next batch is
 * read while the engine hashes the current one. Returns 0 or -1. */
int dd_full_stage(dd_run *r, const dd_set_list *s)
{
    progress_stage(r->meter, "hashing", s->n, s->bytes);
    full_batch cur, nxt;
    dd_reuse_buf arenas[2] = {{NULL, 0}, {NULL, 0}};
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
