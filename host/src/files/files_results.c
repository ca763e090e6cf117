/*
 * files_results.c - the result of one file of a files job: stored, handed
 * to the caller's callback (never two at once), counted.
 *
 * Owns: out[i], the on_file calls and the files_done/files_failed counts.
 * Must not: read files, hold buffers or call back into the job's threads.
 */
#include <string.h>

#include "files/files_internal.h"

void files_finish(hb_files_job *j, size_t i, const hb_file_result *r)
{
    j->out[i] = *r;
    if (j->opt.on_file != NULL) {
        pthread_mutex_lock(&j->callback_lock);
        j->opt.on_file(j->opt.ctx, i, &j->out[i]);
        pthread_mutex_unlock(&j->callback_lock);
    }
    pthread_mutex_lock(&j->lock);
    j->stats.files_done++;
    if (r->status != HB_OK)
        j->stats.files_failed++;
    pthread_mutex_unlock(&j->lock);
}

void files_fail(hb_files_job *j, size_t i, hb_status st, int err)
{
    hb_file_result r;
    memset(&r, 0, sizeof r);
    r.status = st;
    r.err = err;
    files_finish(j, i, &r);
}
