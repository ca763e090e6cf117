/*
 * sum_run.c - hashing a list of names through the library's files jobs
 * (hb_submit_files), results handed on in list order as they complete,
 * with the progress meter fed while the job runs.
 *
 * Standard input: every "-" is one descriptor input; a job holds at most
 * one of them, so that a second "-" reads what is left after the first
 * (nothing, for a pipe), as sha1sum does.
 *
 * With --cache (sum_cache): every named file is stat-ed first; one whose
 * key (filesystem, device, inode, size, mtime and ctime in ns; the
 * filesystem from fs_id.c, asked once per device) has a row in the hash
 * cache (cache/hcache.c) is handed on with the row's digest, unread; the
 * others are hashed in jobs of their own, their results merged back in
 * list order, and stored at the end (one transaction) when the file
 * still has the key it had before it was read and that key is not too
 * recent to trust (hc_racy: a change within the same timestamp tick would
 * not show).
 *
 * Owns: the order of results, job options, the meter's counts, the
 * wording of per-file failures and sum's use of the cache. Must not: format digest lines (the
 * callers do) or decide exit statuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "fs_id.h"
#include "hcache.h"
#include "stat_ahead.h"
#include "sum.h"
#include "walk.h"

#define TICK_NS 200000000LL

/* The in-order hand-off of one job's results. */
typedef struct {
    sum_runner *runner;
    sum_done_fn done;
    void *ctx;
    size_t base;          /* index of the job's first name in the list */
    size_t n, next;       /* names in the job; the next to hand on */
    unsigned char *ready; /* ready[i]: the result of the job's name i is final */
    hb_file_result *out;  /* by read position */
    uint32_t *order;      /* read position -> name (NULL: the same) */
    uint32_t *pos_of;     /* name -> read position (NULL: the same) */
} ordered;

/* on_file: the library's per-file callback (never concurrent): hands on
 * every result whose predecessors are all done. */
static void on_file(void *arg, size_t k, const hb_file_result *r)
{
    ordered *o = arg;
    (void)r;
    o->ready[o->order != NULL ? o->order[k] : k] = 1;
    progress_add(o->runner->meter, 1, 0);
    while (o->next < o->n && o->ready[o->next]) {
        const hb_file_result *res = &o->out[o->pos_of != NULL ? o->pos_of[o->next] : o->next];
        if (o->runner->stdout_tty || res->status != HB_OK)
            progress_clear(o->runner->meter);
        o->done(o->ctx, o->base + o->next, res);
        o->next++;
    }
}

/* add_stats: the job's counters into the run's. */
static void add_stats(hb_files_stats *t, const hb_files_stats *s)
{
    t->files += s->files;
    t->files_done += s->files_done;
    t->files_failed += s->files_failed;
    t->bytes_read += s->bytes_read;
    t->batched_files += s->batched_files;
    t->batched_bytes += s->batched_bytes;
    t->batches += s->batches;
    t->streamed_files += s->streamed_files;
    t->streamed_bytes += s->streamed_bytes;
    if (s->peak_memory > t->peak_memory)
        t->peak_memory = s->peak_memory;
}

/* wait_job: waits for j, feeding the meter the bytes read meanwhile. */
static void wait_job(sum_runner *r, hb_files_job *j)
{
    uint64_t shown = 0;
    hb_files_stats s;
    while (hb_files_job_wait(j, r->meter ? TICK_NS : -1) == HB_ERR_TIMEOUT) {
        hb_files_job_stats(j, &s);
        progress_add(r->meter, 0, s.bytes_read - shown);
        shown = s.bytes_read;
    }
    hb_files_job_stats(j, &s);
    progress_add(r->meter, 0, s.bytes_read - shown);
    add_stats(&r->total, &s);
}

/* tree_folder: the descriptor the names of tree t are read beneath, or
 * -1 when the tree's folder is not the one the walk saw now (every name
 * then fails with EXDEV: it is not beneath that folder). */
static int tree_folder(const sum_runner *r, int t)
{
    const char *why;
    return r->trees != NULL ? places_root_fd(r->trees, (size_t)t, &why) : -1;
}

/* fail_all: every one of o's names failed with err, before any read
 * (in list order: no read order is made). */
static void fail_all(ordered *o, int err)
{
    for (size_t i = 0; i < o->n; i++) {
        o->out[i].status = HB_ERR_IO;
        o->out[i].err = err;
        on_file(o, i, &o->out[i]);
    }
}

/* set_inputs: the job's inputs in read order (o->order): standard input
 * for "-", else the name, below its tree's folder when folder >= 0 (-1
 * when a name is not below it). */
static int set_inputs(const sum_runner *r, hb_file_input *in, char *const *names,
                      const ordered *o, int tree, int folder)
{
    for (size_t k = 0; k < o->n; k++) {
        const char *name = names[o->order != NULL ? o->order[k] : k];
        int is_stdin = folder < 0 && strcmp(name, "-") == 0;
        long below = folder >= 0 ? places_below(r->trees, (size_t)tree, name) : 0;
        if (below < 0 || (folder >= 0 && name[below] == '\0'))
            return -1;
        in[k].path = is_stdin ? NULL : name + below;
        in[k].fd = is_stdin ? STDIN_FILENO : -1;
    }
    return 0;
}

/* read_order: o's read order (sum_order.c) for its names, all found in
 * tree. 1: one was made (a rotational disk), 0: list order, -1: out of
 * memory. */
static int read_order(sum_runner *r, char *const *names, int tree, const uint64_t *devs,
                      ordered *o)
{
    o->order = malloc(o->n * sizeof *o->order);
    o->pos_of = malloc(o->n * sizeof *o->pos_of);
    int made = -1;
    if (o->order != NULL && o->pos_of != NULL)
        made = sum_read_order(r, names, tree, devs, o->n, o->order);
    if (made == 1) {
        for (size_t k = 0; k < o->n; k++)
            o->pos_of[o->order[k]] = (uint32_t)k;
        return 1;
    }
    free(o->order);
    free(o->pos_of);
    o->order = o->pos_of = NULL;
    return made;
}

/* submit: the job over in[0, n), beneath folder when it is >= 0; one
 * reader (unless --io-threads says how many) when it reads in a disk's
 * order. */
static hb_status submit(const sum_runner *r, int folder, const hb_file_input *in, size_t n,
                        ordered *o, hb_files_job **j)
{
    hb_files_options opt = r->files;
    if (o->order != NULL && opt.io_threads == 0)
        opt.io_threads = 1;
    opt.on_file = on_file;
    opt.ctx = o;
    return folder >= 0 ? hb_submit_files_at(r->engine, folder, in, n, o->out, &opt, j)
                       : hb_submit_files(r->engine, in, n, o->out, &opt, j);
}

/* run_job: one job over names[0, n), all found in tree (-1: as named),
 * on devices devs[0, n) (NULL: not known), handed on from index base. */
static int run_job(sum_runner *r, char *const *names, int tree, const uint64_t *devs, size_t n,
                   size_t base, sum_done_fn done, void *ctx)
{
    hb_file_input *in = calloc(n, sizeof *in);
    ordered o = {r,    done, ctx, base, n, 0, calloc(n, 1), calloc(n, sizeof(hb_file_result)),
                 NULL, NULL};
    int rc = CLI_EXIT_FAILURE;
    r->jobs++;
    int folder = tree >= 0 ? tree_folder(r, tree) : -1;
    if (in == NULL || o.ready == NULL || o.out == NULL ||
        ((folder >= 0 || tree < 0) && read_order(r, names, tree, devs, &o) < 0)) {
        cli_error("%s", strerror(ENOMEM));
        goto out;
    }
    if ((tree >= 0 && folder < 0) || set_inputs(r, in, names, &o, tree, folder) != 0) {
        fail_all(&o, EXDEV);
        rc = 0;
        goto out;
    }
    hb_files_job *j = NULL;
    hb_status st = submit(r, folder, in, n, &o, &j);
    if (st != HB_OK) {
        const char *detail = hb_engine_last_error(NULL);
        cli_error("cannot hash files: %s%s%s", hb_status_str(st), detail[0] ? ": " : "", detail);
        goto out;
    }
    wait_job(r, j);
    hb_files_job_free(j);
    rc = 0;
out:
    free(in);
    free(o.ready);
    free(o.out);
    free(o.order);
    free(o.pos_of);
    return rc;
}

/* tree_at: the tree name i was found in (trees NULL: none), or -1. */
static int tree_at(const int *trees, size_t i)
{
    return trees != NULL ? trees[i] : -1;
}

/* job_end: where the job starting at from ends: before a second "-", or
 * where the names' tree changes. */
static size_t job_end(char *const *names, const int *trees, size_t n, size_t from)
{
    int have_stdin = 0;
    size_t i = from;
    for (; i < n; i++) {
        if (tree_at(trees, i) != tree_at(trees, from))
            break;
        if (tree_at(trees, i) >= 0 || strcmp(names[i], "-") != 0)
            continue;
        if (have_stdin)
            break;
        have_stdin = 1;
    }
    return i;
}

/* need_engine: r->engine, opened now when it opens late (r->open_late),
 * told to expect messages files of bytes in all (0: not known). 0, or
 * cli_engine_open's status (reported). */
static int need_engine(sum_runner *r, uint64_t messages, uint64_t bytes)
{
    if (r->engine != NULL || r->open_late == NULL)
        return 0;
    hb_config cfg = *r->open_late;
    cfg.expected_messages = messages;
    cfg.expected_bytes = bytes;
    progress_clear(r->meter);
    return cli_engine_open(&cfg, "sum", &r->engine);
}

/* run_plain: every name hashed, in jobs split before each second "-"
 * and where the tree the names were found in changes (trees: per name,
 * NULL: none). */
static int run_plain(sum_runner *r, char *const *names, const int *trees, const uint64_t *devs,
                     size_t n, sum_done_fn done, void *ctx)
{
    int rc = n > 0 ? need_engine(r, 0, 0) : 0;
    if (rc != 0)
        return rc;
    for (size_t from = 0; from < n;) {
        size_t to = job_end(names, trees, n, from);
        rc = run_job(r, names + from, tree_at(trees, from), devs ? devs + from : NULL, to - from,
                     from, done, ctx);
        if (rc != 0)
            return rc;
        from = to;
    }
    return 0;
}

/* One row to store at the end. */
typedef struct {
    hc_row row;
    char *path;
} pending_row;

struct sum_cache {
    hcache *hc;
    int64_t start_ns; /* before the first stat: reads all begin later */
    pending_row *put;
    size_t nput, cap_put;
    uint64_t looked, hits, stored, racy, changed;
};

sum_cache *sum_cache_open(const char *file)
{
    char path[PATH_MAX], err[HC_ERR_MAX];
    if (file == NULL) {
        if (hc_default_path(path, sizeof path, 1, err, sizeof err) != 0) {
            cli_error("hash cache not used: %s", err);
            return NULL;
        }
        file = path;
    }
    sum_cache *c = calloc(1, sizeof *c);
    if (c == NULL) {
        cli_error("%s: hash cache not used: %s", file, strerror(ENOMEM));
        return NULL;
    }
    c->start_ns = hc_now_ns();
    if (hc_open(file, 1, &c->hc, err, sizeof err) != 0) {
        cli_error("%s: hash cache not used: %s", file, err);
        free(c);
        return NULL;
    }
    return c;
}

/* cache_fail: reports c's failure in one line; the run goes on without
 * the cache. */
static void cache_fail(sum_cache *c)
{
    cli_error("%s: hash cache not used: %s", hc_path(c->hc), hc_error(c->hc));
    hc_close(c->hc);
    c->hc = NULL;
}

/* store_all: c's pending rows in one write transaction. 0 or -1. */
static int store_all(sum_cache *c)
{
    if (c->nput == 0)
        return 0;
    if (hc_write_begin(c->hc) != 0)
        return -1;
    for (size_t i = 0; i < c->nput; i++)
        if (hc_put(c->hc, &c->put[i].row, c->put[i].path) != 0)
            return -1;
    if (hc_write_commit(c->hc) != 0)
        return -1;
    c->stored = c->nput;
    return 0;
}

void sum_cache_close(sum_cache *c, int verbose)
{
    if (c == NULL)
        return;
    if (c->hc != NULL && store_all(c) != 0)
        cache_fail(c);
    if (verbose)
        fprintf(stderr,
                "%s: cache: %" PRIu64 " files looked up, %" PRIu64
                " digests taken from it (not read); %" PRIu64 " entries stored, %" PRIu64
                " too recent to store, %" PRIu64 " changed while hashed\n",
                CLI_PROGRAM, c->looked, c->hits, c->stored, c->racy, c->changed);
    hc_close(c->hc);
    for (size_t i = 0; i < c->nput; i++)
        free(c->put[i].path);
    free(c->put);
    free(c);
}

/* A run through the cache: per name, whether it was found and its key. */
typedef struct {
    sum_runner *r;
    sum_cache *c;
    sum_done_fn done;
    void *ctx;
    char *const *names;
    size_t n;
    uint8_t *state; /* per name: NAME_* */
    hc_row *rows;   /* per name: key (NAME_KEYED), digest (NAME_HIT) */
    size_t *miss;   /* names to hash: their indices */
    size_t nmiss;
    size_t next; /* the next name to hand on */
} cached_run;

enum { NAME_KEYED = 1, NAME_HIT = 2 };

/* Where a name is stat-ed from: the folder and the path below it (its
 * tree's folder beneath which nothing is followed, or AT_FDCWD and the
 * name, following links as reading it does). */
typedef struct {
    int dir;
    const char *rel;
    int flags; /* for sa_stat_all */
} name_place;

/* place_of: where name i of x is stat-ed from. 0, or -1 when its tree's
 * folder is not the one the walk saw (then it is not looked up). */
static int place_of(const cached_run *x, size_t i, name_place *p)
{
    int t = tree_at(x->r->tree_of, i);
    *p = (name_place){AT_FDCWD, x->names[i], 0};
    if (t < 0)
        return 0;
    long below = places_below(x->r->trees, (size_t)t, x->names[i]);
    if ((p->dir = tree_folder(x->r, t)) < 0 || below < 0)
        return -1;
    p->rel = x->names[i] + below;
    p->flags = SA_BENEATH;
    return 0;
}

/* key_of_stat: the key of the name at p, whose stat is st, into *k: 1, or
 * 0 when its filesystem cannot be told (then it is neither looked up nor
 * stored). */
static int key_of_stat(const name_place *p, const struct stat *st, hc_key *k)
{
    fs_id id;
    if (fs_id_at(p->dir, p->rel, st->st_dev, &id) != 0)
        return 0;
    hc_key_of(st, id.fs, k);
    return 1;
}

/* key_of_name: stats name i of x (as key_names does) into *k. 1 for a
 * regular file whose filesystem is known. */
static int key_of_name(const cached_run *x, size_t i, hc_key *k)
{
    name_place p;
    struct stat st;
    int err;
    if (strcmp(x->names[i], "-") == 0 || place_of(x, i, &p) != 0)
        return 0;
    sa_stat_all(NULL, p.dir, &p.rel, 1, p.flags, &st, &err);
    return err == 0 && S_ISREG(st.st_mode) && key_of_stat(&p, &st, k);
}

/* stat_names: the stats of every name (sts, errs), the names of one
 * tree (or of none) together, on every core (stat_ahead.c). */
static void stat_names(const cached_run *x, struct stat *sts, int *errs, const char **rels)
{
    stat_ahead *sa = sa_open();
    for (size_t from = 0, to; from < x->n; from = to) {
        name_place first;
        int ok = place_of(x, from, &first) == 0;
        int t = tree_at(x->r->tree_of, from);
        for (to = from; to < x->n && tree_at(x->r->tree_of, to) == t; to++) {
            name_place p;
            rels[to] = ok && place_of(x, to, &p) == 0 ? p.rel : NULL;
        }
        size_t i = from;
        while (i < to && rels[i] != NULL)
            i++;
        if (i < to) { /* its folder is not the walk's, or a name not below it */
            for (i = from; i < to; i++)
                errs[i] = EXDEV;
            continue;
        }
        sa_stat_all(sa, first.dir, rels + from, to - from, first.flags, sts + from, errs + from);
    }
    sa_close(sa);
}

/* key_names: every name's key (x->rows[i].key, NAME_KEYED) where it is a
 * regular file on a filesystem fs_id.c can name, the stats taken on
 * every core (stat_ahead.c: a rescan from the cache is mostly these
 * stats). Returns how many were keyed, their indices in keyed[] in list
 * order. 0 when out of memory. */
static size_t key_names(cached_run *x, size_t *keyed)
{
    struct stat *sts = malloc((x->n ? x->n : 1) * sizeof *sts);
    int *errs = malloc((x->n ? x->n : 1) * sizeof *errs);
    const char **rels = malloc((x->n ? x->n : 1) * sizeof *rels);
    size_t nkeyed = 0;
    if (sts != NULL && errs != NULL && rels != NULL) {
        stat_names(x, sts, errs, rels);
        for (size_t i = 0; i < x->n; i++) {
            name_place p;
            if (errs[i] != 0 || !S_ISREG(sts[i].st_mode) || strcmp(x->names[i], "-") == 0 ||
                place_of(x, i, &p) != 0 || !key_of_stat(&p, &sts[i], &x->rows[i].key))
                continue;
            x->state[i] = NAME_KEYED;
            keyed[nkeyed++] = i;
        }
    }
    free(sts);
    free(errs);
    free(rels);
    return nkeyed;
}

static const hc_row *sort_rows; /* qsort has no context argument in C11 */

static int cmp_row_key(const void *a, const void *b)
{
    return hc_key_cmp(&sort_rows[*(const size_t *)a].key, &sort_rows[*(const size_t *)b].key);
}

/* find_rows: the cache's rows for the keyed names keyed[0..n), in one
 * ordered pass (hc_lookup_many); a row with a whole-file digest is a hit
 * (NAME_HIT, its row in x->rows). 0, or -1 on a cache failure. Two names
 * of one file (a repeated name, a hard link) are looked up once: the
 * first one's row is the other's too. */
static int find_rows(cached_run *x, size_t *keyed, size_t n)
{
    sort_rows = x->rows;
    qsort(keyed, n, sizeof *keyed, cmp_row_key);
    hc_key *keys = malloc((n ? n : 1) * sizeof *keys);
    size_t *first = malloc((n ? n : 1) * sizeof *first); /* its key's slot in keys */
    hc_row *rows = malloc((n ? n : 1) * sizeof *rows);
    unsigned char *found = malloc(n ? n : 1);
    int rc = -1;
    size_t nkeys = 0;
    if (keys != NULL && first != NULL && rows != NULL && found != NULL) {
        for (size_t j = 0; j < n; j++) {
            const hc_key *k = &x->rows[keyed[j]].key;
            if (nkeys == 0 || hc_key_cmp(&keys[nkeys - 1], k) != 0)
                keys[nkeys++] = *k;
            first[j] = nkeys - 1;
        }
        rc = hc_lookup_many(x->c->hc, keys, nkeys, rows, found);
    }
    for (size_t j = 0; rc == 0 && j < n; j++) {
        const hc_row *row = &rows[first[j]];
        /* one device and inode, but another version: not this name's row */
        if (!found[first[j]] || !row->has_full ||
            memcmp(&row->key, &x->rows[keyed[j]].key, sizeof row->key) != 0)
            continue;
        x->rows[keyed[j]] = *row;
        x->state[keyed[j]] |= NAME_HIT;
        x->c->hits++;
    }
    free(keys);
    free(first);
    free(rows);
    free(found);
    return rc;
}

/* look_up: every name's key and row, in one read transaction; misses to
 * x->miss in list order. A cache failure is reported and every name
 * becomes a miss. */
static void look_up(cached_run *x)
{
    sum_cache *c = x->c;
    size_t *keyed = malloc((x->n ? x->n : 1) * sizeof *keyed);
    size_t nkeyed = keyed != NULL ? key_names(x, keyed) : 0;
    c->looked += nkeyed;
    int ok = keyed != NULL && hc_read_begin(c->hc) == 0;
    if (ok && find_rows(x, keyed, nkeyed) != 0)
        ok = 0;
    if (ok && hc_read_end(c->hc) != 0)
        ok = 0;
    free(keyed);
    if (!ok) {
        cache_fail(c);
        memset(x->state, 0, x->n);
        c->hits = 0;
    }
    x->nmiss = 0;
    for (size_t i = 0; i < x->n; i++)
        if (!(x->state[i] & NAME_HIT))
            x->miss[x->nmiss++] = i;
}

/* hand_on_hits: the cached names before index upto, in order. */
static void hand_on_hits(cached_run *x, size_t upto)
{
    for (; x->next < upto; x->next++) {
        if (!(x->state[x->next] & NAME_HIT))
            continue;
        hb_file_result res;
        memset(&res, 0, sizeof res);
        res.status = HB_OK;
        memcpy(res.digest, x->rows[x->next].full, 20);
        res.size = x->rows[x->next].key.size;
        if (x->r->stdout_tty)
            progress_clear(x->r->meter);
        progress_add(x->r->meter, 1, 0);
        x->done(x->ctx, x->next, &res);
    }
}

/* remember: name i was hashed to d: its row is kept for the end when the
 * file still has the key it had before the read and that key is not too
 * recent. */
static void remember(cached_run *x, size_t i, const hb_digest d)
{
    sum_cache *c = x->c;
    hc_key now;
    if (c->hc == NULL || !(x->state[i] & NAME_KEYED))
        return;
    const hc_key *k = &x->rows[i].key;
    if (!key_of_name(x, i, &now) || memcmp(&now, k, sizeof now) != 0) {
        c->changed++;
        return;
    }
    if (hc_racy(k, c->start_ns)) {
        c->racy++;
        return;
    }
    char *path = strdup(x->names[i]);
    if (path == NULL || cli_grow((void **)&c->put, &c->cap_put, c->nput + 1, sizeof *c->put) != 0) {
        free(path);
        return;
    }
    pending_row *p = &c->put[c->nput++];
    memset(p, 0, sizeof *p);
    p->row.key = *k;
    memcpy(p->row.full, d, 20);
    p->row.has_full = 1;
    p->path = path;
}

/* on_miss: the in-order result of miss m: the hits before it, then it. */
static void on_miss(void *arg, size_t m, const hb_file_result *res)
{
    cached_run *x = arg;
    size_t i = x->miss[m];
    hand_on_hits(x, i);
    x->done(x->ctx, i, res);
    x->next = i + 1;
    if (res->status == HB_OK)
        remember(x, i, res->digest);
}

/* run_cached: sum_run through the cache. */
static int run_cached(sum_runner *r, char *const *names, size_t n, sum_done_fn done, void *ctx)
{
    cached_run x = {r,
                    r->cache,
                    done,
                    ctx,
                    names,
                    n,
                    calloc(n ? n : 1, 1),
                    calloc(n ? n : 1, sizeof(hc_row)),
                    malloc((n ? n : 1) * sizeof(size_t)),
                    0,
                    0};
    char **miss_names = malloc((n ? n : 1) * sizeof *miss_names);
    int *miss_trees = malloc((n ? n : 1) * sizeof *miss_trees);
    uint64_t *miss_devs = malloc((n ? n : 1) * sizeof *miss_devs);
    int rc = CLI_EXIT_FAILURE;
    if (x.state == NULL || x.rows == NULL || x.miss == NULL || miss_names == NULL ||
        miss_trees == NULL || miss_devs == NULL) {
        cli_error("%s", strerror(ENOMEM));
        goto out;
    }
    look_up(&x);
    uint64_t bytes = 0;
    int sized = 1; /* every miss a regular file: the work is known */
    for (size_t m = 0; m < x.nmiss; m++) {
        miss_names[m] = names[x.miss[m]];
        miss_trees[m] = tree_at(r->tree_of, x.miss[m]);
        miss_devs[m] = r->dev_of != NULL ? r->dev_of[x.miss[m]] : 0;
        sized &= (x.state[x.miss[m]] & NAME_KEYED) != 0;
        bytes += x.rows[x.miss[m]].key.size;
    }
    rc = x.nmiss > 0 ? need_engine(r, sized ? x.nmiss : 0, sized ? bytes : 0) : 0;
    if (rc == 0)
        rc = run_plain(r, miss_names, miss_trees, miss_devs, x.nmiss, on_miss, &x);
    if (rc == 0)
        hand_on_hits(&x, n);
out:
    free(x.state);
    free(x.rows);
    free(x.miss);
    free(miss_names);
    free(miss_trees);
    free(miss_devs);
    return rc;
}

int sum_run(sum_runner *r, char *const *names, size_t n, sum_done_fn done, void *ctx)
{
    if (r->cache != NULL && r->cache->hc != NULL)
        return run_cached(r, names, n, done, ctx);
    return run_plain(r, names, r->tree_of, r->dev_of, n, done, ctx);
}

/* special_kind: what a skipped non-regular file is, for the message. */
static const char *special_kind(const char *name)
{
    struct stat st;
    if (stat(name, &st) != 0)
        return "is not a regular file (skipped)";
    return walk_special_cause(st.st_mode);
}

/* changed_in_tree: the words for err met reading a name the walk found,
 * when it says the tree changed since (NULL: it does not). */
static const char *changed_in_tree(int err)
{
    if (err == ELOOP)
        return "a symbolic link is in its path now (there was none when the tree was walked): "
               "not followed, not hashed";
    if (err == EXDEV)
        return "not beneath the folder the walk started from now (that folder was replaced "
               "since): not hashed";
    return NULL;
}

void sum_report_failure(const char *name, const hb_file_result *r, int in_tree)
{
    const char *cause = NULL;
    if (r->status == HB_ERR_IO && (!in_tree || (cause = changed_in_tree(r->err)) == NULL)) {
        cli_error_path(name, r->err);
        return;
    }
    if (cause == NULL)
        cause = r->status == HB_ERR_NOT_REGULAR ? special_kind(name)
                        : r->status == HB_ERR_FILE_CHANGED
                            ? "changed while it was read (size or modification time); not hashed"
                            : hb_status_str(r->status);
    fflush(stdout);
    fprintf(stderr, "%s: ", CLI_PROGRAM);
    cli_quote_name(stderr, name);
    fprintf(stderr, ": %s\n", cause);
}
