/*
 * files_api.c - the public calls of files jobs (hb_submit_files and
 * friends in hashbatch.h): argument rules, waiting, cancelling, counters.
 *
 * Owns: what hashbatch.h promises of these calls. Must not: print, touch
 * the engine's insides (only the public hb_submit/hb_job_* calls, from
 * files/), or reach into the threads other than through files_job.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "files/files_internal.h"
#include "files/files_job.h"

void hb_files_options_init(hb_files_options *o)
{
    if (o != NULL)
        memset(o, 0, sizeof *o);
}

/* check_args: the argument rules of hb_submit_files. */
static hb_status check_args(hb_engine *e, const hb_file_input *in, size_t n,
                            const hb_file_result *out, hb_files_job **job)
{
    if (e == NULL || job == NULL || (n > 0 && (in == NULL || out == NULL)))
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT,
                            "hb_submit_files: engine, job, inputs or results is NULL");
    for (size_t i = 0; i < n; i++)
        if (in[i].path == NULL && in[i].fd < 0)
            return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                                "hb_submit_files: input %zu has no path and no descriptor", i);
    return HB_OK;
}

/* submit: a job over in[0, n), its paths beneath dir_fd (-1: as given). */
static hb_status submit(hb_engine *e, int dir_fd, const hb_file_input *in, size_t n,
                        hb_file_result *out, const hb_files_options *opt, hb_files_job **job)
{
    hb_status st = check_args(e, in, n, out, job);
    if (st != HB_OK)
        return st;
    *job = NULL;
    hb_files_job *j = files_job_new(e, dir_fd, in, n, out, opt);
    if (j == NULL)
        return hb_error_set(NULL, HB_ERR_NO_MEMORY, "hb_submit_files: out of memory");
    st = files_job_start(j);
    if (st != HB_OK) {
        files_job_destroy(j);
        return hb_error_set(NULL, st, "hb_submit_files: %s", hb_status_str(st));
    }
    *job = j;
    return HB_OK;
}

hb_status hb_submit_files(hb_engine *e, const hb_file_input *in, size_t n, hb_file_result *out,
                          const hb_files_options *opt, hb_files_job **job)
{
    return submit(e, -1, in, n, out, opt, job);
}

hb_status hb_submit_files_at(hb_engine *e, int dir_fd, const hb_file_input *in, size_t n,
                             hb_file_result *out, const hb_files_options *opt, hb_files_job **job)
{
    if (dir_fd < 0)
        return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                            "hb_submit_files_at: the folder's descriptor is %d", dir_fd);
    return submit(e, dir_fd, in, n, out, opt, job);
}

hb_status hb_files_job_wait(hb_files_job *j, int64_t timeout_ns)
{
    if (j == NULL)
        return HB_ERR_NULL_ARGUMENT;
    struct timespec until = hb_deadline_after(timeout_ns);
    pthread_mutex_lock(&j->lock);
    while (!j->finished && timeout_ns != 0) {
        if (timeout_ns < 0)
            pthread_cond_wait(&j->done, &j->lock);
        else if (pthread_cond_timedwait(&j->done, &j->lock, &until) == ETIMEDOUT)
            break;
    }
    int finished = j->finished, cancelled = atomic_load(&j->cancelled);
    pthread_mutex_unlock(&j->lock);
    if (!finished)
        return HB_ERR_TIMEOUT;
    files_job_join(j);
    return cancelled ? HB_ERR_CANCELLED : HB_OK;
}

hb_status hb_files_job_cancel(hb_files_job *j)
{
    if (j == NULL)
        return HB_ERR_NULL_ARGUMENT;
    files_job_cancel(j);
    return HB_OK;
}

hb_status hb_files_job_stats(const hb_files_job *j, hb_files_stats *out)
{
    if (j == NULL || out == NULL)
        return HB_ERR_NULL_ARGUMENT;
    hb_files_job *m = (hb_files_job *)j; /* the lock is not part of the value */
    pthread_mutex_lock(&m->lock);
    *out = j->stats;
    pthread_mutex_unlock(&m->lock);
    out->bytes_read = atomic_load(&m->bytes_read);
    return HB_OK;
}

void hb_files_job_free(hb_files_job *j)
{
    if (j == NULL)
        return;
    files_job_cancel(j);
    hb_files_job_wait(j, -1);
    files_job_destroy(j);
}

hb_status hb_hash_files(hb_engine *e, const char *const *paths, size_t n, hb_file_result *out,
                        const hb_files_options *opt)
{
    if (n > 0 && paths == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_hash_files: paths is NULL");
    hb_file_input *in = calloc(n ? n : 1, sizeof *in);
    if (in == NULL)
        return hb_error_set(NULL, HB_ERR_NO_MEMORY, "hb_hash_files: out of memory");
    for (size_t i = 0; i < n; i++) {
        in[i].path = paths[i];
        in[i].fd = -1;
        if (paths[i] == NULL) {
            free(in);
            return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_hash_files: path %zu is NULL", i);
        }
    }
    hb_files_job *j = NULL;
    hb_status st = hb_submit_files(e, in, n, out, opt, &j);
    if (st == HB_OK) {
        st = hb_files_job_wait(j, -1);
        hb_files_job_free(j);
    }
    free(in);
    return st;
}
