/*
 * dedup_stages.c - the order of the stages of `hashbatch dedup` and what
 * they share: from the inodes the scan found to the groups it prints.
 *
 *  1. size (here): inodes of a size no other inode has are done, not
 *     opened; empty files (with --empty) are checked to be empty and form
 *     one class;
 *  2. prefix (dedup_prefix.c): the first 4 KiB of the rest, hashed;
 *  3. whole files (dedup_full.c): what still shares a size and a prefix
 *     is compared byte for byte and each distinct content hashed whole;
 *  4. classes (dedup_classes.c): equal SHA-1 and equal bytes make a class;
 *     equal SHA-1 and different bytes are a SHA-1 collision, warned about
 *     and never grouped;
 *  5. with --index-out, every file not hashed whole yet is (an index
 *     needs every file's digests: dedup_index.c);
 *  6. groups (dedup_groups.c): classes with two paths or more, each path
 *     stat-ed again before it is reported.
 *
 * Owns: the stage order and timings, the engine's lazy opening, the size
 * stage, empty files, and the helpers the stages share (growing arrays,
 * reused buffers, reader threads). Must not: print groups, or call two
 * files equal without comparing their bytes (hard links to one inode
 * excepted: they are one file).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "dedup.h"
#include "dedup_dirs.h"

#define HUGE_PAGE ((size_t)2 << 20)

static const dd_run *sort_run; /* qsort has no context argument in C11 */

/* dd_inode_order: walk order of inode k's first path. */
uint32_t dd_inode_order(const dd_run *r, uint32_t k)
{
    return r->paths[r->by_inode[r->inodes[k].first]].order;
}

static int cmp_size(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const dd_inode *x = &sort_run->inodes[a], *y = &sort_run->inodes[b];
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    uint32_t oa = dd_inode_order(sort_run, a), ob = dd_inode_order(sort_run, b);
    return oa < ob ? -1 : oa > ob;
}

/* dd_read_threads: threads that read files: one per online core, 2..8. */
unsigned dd_read_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 2 ? 2u : n > 8 ? 8u : (unsigned)n;
}

/* dd_engine_error: reports a failed engine call; the run is incomplete. */
int dd_engine_error(dd_run *r, hb_status st)
{
    progress_clear(r->meter);
    const char *detail = r->engine ? hb_engine_last_error(r->engine) : "";
    cli_error("hashing failed: %s%s%s", hb_status_str(st), detail[0] ? ": " : "", detail);
    r->fatal = 1;
    return -1;
}

void dd_engine_open_now(dd_run *r)
{
    hb_config cfg = *r->cfg;
    if (r->open_late) { /* lets the default route leave out devices that cannot pay */
        cfg.expected_messages = r->expect_messages;
        cfg.expected_bytes = r->expect_bytes;
    }
    r->open_tried = 1;
    r->open_status = hb_engine_open(&r->opened, &cfg);
    if (r->open_status != HB_OK)
        snprintf(r->open_detail, sizeof r->open_detail, "%s", hb_engine_last_error(NULL));
}

int dd_engine_usage_error(dd_run *r)
{
    if (!r->open_tried && !r->open_late)
        dd_engine_open_now(r);
    if (!dd_engine_bad_settings(r))
        return 0;
    return cli_engine_open_failed(DD_CMD, r->cfg, r->open_status, r->open_detail);
}

int dd_engine_bad_settings(const dd_run *r)
{
    return r->open_tried && cli_engine_settings_invalid(r->open_status);
}

int dd_need_engine(dd_run *r)
{
    if (r->fatal)
        return -1;
    if (r->engine != NULL)
        return 0;
    progress_clear(r->meter);
    if (!r->open_tried)
        dd_engine_open_now(r);
    if (r->open_status == HB_OK) {
        r->engine = r->opened;
        return 0;
    }
    cli_engine_open_failed(DD_CMD, r->cfg, r->open_status, r->open_detail);
    r->fatal = 1;
    return -1;
}

void dd_engine_stop(dd_run *r)
{
    if (r->engine == NULL)
        r->engine = r->opened; /* opened, never needed */
    hb_engine_close(r->engine);
    r->engine = r->opened = NULL;
}

/* dd_hash_now: out[i] = SHA-1(m[i]) through the engine. 0 or -1. */
int dd_hash_now(dd_run *r, const hb_msg *m, size_t n, hb_digest *out)
{
    if (n == 0)
        return 0;
    if (dd_need_engine(r) != 0)
        return -1;
    hb_status st = hb_sha1_batch(r->engine, m, n, out);
    return st == HB_OK ? 0 : dd_engine_error(r, st);
}

/* dd_reuse_get: b with room for n bytes (its contents are not kept), or
 * NULL. */
unsigned char *dd_reuse_get(dd_reuse_buf *b, size_t n)
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

/* dd_run_end: the end of the run of one size starting at cand[i]. */
size_t dd_run_end(const dd_run *r, const uint32_t *cand, size_t n, size_t i)
{
    size_t j = i + 1;
    while (j < n && r->inodes[cand[j]].size == r->inodes[cand[i]].size)
        j++;
    return j;
}

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
    dd_read_all(r, items, n, dd_read_threads());
    hb_msg empty = {"", 0};
    hb_digest d;
    int rc = dd_hash_now(r, &empty, 1, &d);
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
    dd_set_list sets;
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
        size_t j = dd_run_end(r, order, r->ninodes, i);
        uint64_t npaths = 0;
        for (size_t k = i; k < j; k++)
            npaths += r->inodes[order[k]].npaths;
        if (r->inodes[order[i]].size == 0) {
            if (npaths > 1 && empty_run(r, order + i, j - i) != 0)
                goto out;
        } else if (j - i > 1 || r->o->index_out) { /* an index needs every prefix */
            memcpy(cand + ncand, order + i, (j - i) * sizeof *cand);
            ncand += j - i;
        }
        i = j;
    }
    if (dd_prefix_stage(r, cand, ncand, &sets) != 0)
        goto out;
    double t1 = now_s();
    r->secs[1] = t1 - t0;
    if (dd_full_stage(r, &sets) != 0)
        goto out;
    double t2 = now_s();
    r->secs[2] = t2 - t1;
    if (r->o->index_out && dd_index_hash_all(r) != 0)
        goto out;
    progress_clear(r->meter);
    rc = dd_make_groups(r);
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
