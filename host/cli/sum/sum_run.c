/*
 * sum_run.c - hashing a list of names through the library's files jobs
 * (hb_submit_files), results handed on in list order as they complete,
 * with the progress meter fed while the job runs.
 *
 * Standard input: every "-" is one descriptor input; a job holds at most
 * one of them, so that a second "-" reads what is left after the first
 * (nothing, for a pipe), as sha1sum does.
 *
 * Owns: the order of results, job options, the meter's counts and the
 * wording of per-file failures. Must not: format digest lines (the
 * callers do) or decide exit statuses.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
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
    unsigned char *ready; /* ready[i]: result i is final */
    hb_file_result *out;
} ordered;

/* on_file: the library's per-file callback (never concurrent): hands on
 * every result whose predecessors are all done. */
static void on_file(void *arg, size_t i, const hb_file_result *r)
{
    ordered *o = arg;
    (void)r;
    o->ready[i] = 1;
    progress_add(o->runner->meter, 1, 0);
    while (o->next < o->n && o->ready[o->next]) {
        if (o->runner->stdout_tty || o->out[o->next].status != HB_OK)
            progress_clear(o->runner->meter);
        o->done(o->ctx, o->base + o->next, &o->out[o->next]);
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

/* run_job: one job over names[0, n), handed on from index base. */
static int run_job(sum_runner *r, char *const *names, size_t n, size_t base, sum_done_fn done,
                   void *ctx)
{
    hb_file_input *in = calloc(n, sizeof *in);
    ordered o = {r, done, ctx, base, n, 0, calloc(n, 1), calloc(n, sizeof(hb_file_result))};
    int rc = CLI_EXIT_FAILURE;
    if (in == NULL || o.ready == NULL || o.out == NULL) {
        cli_error("%s", strerror(ENOMEM));
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        int is_stdin = strcmp(names[i], "-") == 0;
        in[i].path = is_stdin ? NULL : names[i];
        in[i].fd = is_stdin ? STDIN_FILENO : -1;
    }
    hb_files_options opt = r->files;
    opt.on_file = on_file;
    opt.ctx = &o;
    hb_files_job *j = NULL;
    hb_status st = hb_submit_files(r->engine, in, n, o.out, &opt, &j);
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
    return rc;
}

/* job_end: where the job starting at from ends: before a second "-". */
static size_t job_end(char *const *names, size_t n, size_t from)
{
    int have_stdin = 0;
    size_t i = from;
    for (; i < n; i++) {
        if (strcmp(names[i], "-") != 0)
            continue;
        if (have_stdin)
            break;
        have_stdin = 1;
    }
    return i;
}

int sum_run(sum_runner *r, char *const *names, size_t n, sum_done_fn done, void *ctx)
{
    for (size_t from = 0; from < n;) {
        size_t to = job_end(names, n, from);
        int rc = run_job(r, names + from, to - from, from, done, ctx);
        if (rc != 0)
            return rc;
        from = to;
    }
    return 0;
}

/* special_kind: what a skipped non-regular file is, for the message. */
static const char *special_kind(const char *name)
{
    struct stat st;
    if (stat(name, &st) != 0)
        return "is not a regular file (skipped)";
    return walk_special_cause(st.st_mode);
}

void sum_report_failure(const char *name, const hb_file_result *r)
{
    if (r->status == HB_ERR_IO) {
        cli_error_path(name, r->err);
        return;
    }
    const char *cause = r->status == HB_ERR_NOT_REGULAR ? special_kind(name)
                        : r->status == HB_ERR_FILE_CHANGED
                            ? "changed while it was read (size or modification time); not hashed"
                            : hb_status_str(r->status);
    fflush(stdout);
    fprintf(stderr, "%s: ", CLI_PROGRAM);
    cli_quote_name(stderr, name);
    fprintf(stderr, ": %s\n", cause);
}
