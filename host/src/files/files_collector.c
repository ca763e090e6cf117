/*
 * files_collector.c - the collector thread of a files job: waits for the
 * engine's batches in submission order, delivers their results and gives
 * their memory back; when the readers are done and the queue is empty it
 * finishes the inputs never taken (cancelled) and marks the job finished.
 *
 * Owns: the queue's consumer end, the engine jobs of the batches (waited
 * for, cancelled when the files job is, freed) and the finished flag.
 * Must not: read files or wait for anything but the queue and the engine.
 */
#include <stdlib.h>
#include <string.h>

#include "files/files_internal.h"

/* deliver: results of a finished batch; frees its buffers. */
static void deliver(hb_files_job *j, files_batch *b)
{
    hb_status st = b->submit_status;
    if (st == HB_OK) {
        if (atomic_load(&j->cancelled))
            hb_job_cancel(b->job);
        st = hb_job_wait(b->job, -1);
        hb_job_free(b->job);
    }
    for (size_t k = 0; k < b->count; k++) {
        hb_file_result r;
        if (b->skip[k])
            continue;
        memset(&r, 0, sizeof r);
        r.status = st;
        if (st == HB_OK) {
            memcpy(r.digest, b->digest[k], sizeof r.digest);
            r.size = b->msg[k].len;
        }
        free(b->buf[k]);
        files_finish(j, b->index[k], &r);
    }
    pthread_mutex_lock(&j->lock);
    files_recycle_arena_locked(j, b->arena);
    pthread_mutex_unlock(&j->lock);
    files_release(j, b->reserved);
    free(b);
}

/* cancel_rest: inputs never taken finish as cancelled. */
static void cancel_rest(hb_files_job *j)
{
    pthread_mutex_lock(&j->lock);
    size_t from = j->next;
    j->next = j->n;
    pthread_mutex_unlock(&j->lock);
    for (size_t i = from; i < j->n; i++)
        files_fail(j, i, HB_ERR_CANCELLED, 0);
}

/* next_batch_locked: the oldest queued batch, waiting while readers may
 * still queue one; NULL once none will come. */
static files_batch *next_batch_locked(hb_files_job *j)
{
    while (j->queue_head == NULL && (j->io_running > 0 || j->open != NULL)) {
        j->collector_waiting = 1;
        pthread_cond_wait(&j->work, &j->lock);
        j->collector_waiting = 0;
    }
    files_batch *b = j->queue_head;
    if (b == NULL)
        return NULL;
    j->queue_head = b->next;
    if (j->queue_head == NULL)
        j->queue_tail = NULL;
    return b;
}

void *files_collector_main(void *arg)
{
    hb_files_job *j = arg;
    pthread_mutex_lock(&j->lock);
    for (files_batch *b; (b = next_batch_locked(j)) != NULL;) {
        pthread_mutex_unlock(&j->lock);
        deliver(j, b);
        pthread_mutex_lock(&j->lock);
    }
    pthread_mutex_unlock(&j->lock);
    cancel_rest(j);
    pthread_mutex_lock(&j->lock);
    j->finished = 1;
    pthread_cond_broadcast(&j->done);
    pthread_mutex_unlock(&j->lock);
    return NULL;
}
