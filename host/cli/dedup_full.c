/*
 * dedup_full.c - the whole-file stage of `hashbatch dedup`: sets of inodes
 * with one size and one prefix digest are read whole, batch by batch (up
 * to --batch-bytes), on a few threads. In each set every file is compared
 * byte for byte with the distinct contents met so far (up to REPS_MAX); a
 * copy joins its content and needs no SHA-1 of its own (equal bytes have
 * equal SHA-1s). Each distinct content is hashed through the engine
 * (hb_submit) while the next batch is read. Sets bigger than a batch are
 * compared by streaming the files, and their distinct contents hashed with
 * hb_hash_files (which streams them too), so memory stays near two
 * batches whatever the file sizes.
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

#define BATCH_FILES 4096
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

/* pick_batch: the sets from *next on that fit one batch (sets too big for
 * memory are passed over: big_set streams them). Sets b->lo..b->hi;
 * returns the files and *bytes. */
static size_t pick_batch(const dd_run *r, const dd_set_list *s, size_t *next, full_batch *b,
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
    dd_read_all(r, b->items, b->n, dd_read_threads());
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
    hb_status st = hb_job_wait(b->job, -1);
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
 * of the earlier member whose bytes member i has, or -1 (to be hashed). */
static void big_split(dd_run *r, const uint32_t *list, int32_t *join, size_t n)
{
    int32_t reps[REPS_MAX];
    size_t nreps = 0;
    for (size_t i = 0; i < n; i++) {
        join[i] = -1;
        for (size_t k = 0; k < nreps && join[i] < 0; k++) {
            if (r->inodes[list[reps[k]]].state != DD_ALIVE || r->inodes[list[i]].state != DD_ALIVE)
                continue;
            if (dd_same_bytes(r, list[reps[k]], NULL, list[i], NULL) == 1)
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
    if (dd_need_engine(r) != 0)
        goto out;
    hb_status st = hb_hash_files(r->engine, paths, m, res, NULL);
    if (st != HB_OK) {
        dd_engine_error(r, st);
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

/* big_sets: the sets too big to hold in memory together: each is compared
 * streaming (copies join the first member they equal), then the distinct
 * contents of all of them are hashed in one hb_hash_files job (its I/O
 * threads stream several files at once through OpenSSL), then each set is
 * classified as a batch's are. Memory stays at a few chunk buffers.
 * Returns 0 or -1. */
static int big_sets(dd_run *r, const dd_set_list *s)
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
