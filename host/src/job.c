/*
 * job.c - job state, waits and wake-ups.
 *
 * Owns: hb_job_wait, hb_job_fd, and the job's bookkeeping. A job is done
 * when every message is finished or abandoned; then waiters wake and the
 * eventfd (if any) is written once. Its outcome is HB_OK only if every
 * message was finished without failure.
 * Must not: touch the engine (hb_job_cancel and hb_job_free live in
 * engine.c, which owns the queue).
 */
#include "job.h"

#include "clock.h"
#include "hb_testing.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

hb_job *hb_job_create(const hb_msg *m, size_t n, hb_digest *out)
{
    hb_job *j = calloc(1, sizeof *j);
    if (j == NULL)
        return NULL;
    j->msgs = m;
    j->out = out;
    j->n = n;
    j->uniform_len = HB_LENGTHS_VARY;
    j->event_fd = -1;
    j->outcome = HB_OK;
    atomic_init(&j->stop, HB_OK);
    atomic_init(&j->work_bytes, 0);
    pthread_mutex_init(&j->lock, NULL);
    hb_cond_init_monotonic(&j->changed);
    atomic_init(&j->refs, 2);
    return j;
}

void hb_job_release(hb_job *j)
{
    if (atomic_fetch_sub(&j->refs, 1) != 1)
        return;
    if (j->event_fd >= 0)
        close(j->event_fd);
    pthread_cond_destroy(&j->changed);
    pthread_mutex_destroy(&j->lock);
    free(j);
}

static void signal_event_fd(int fd)
{
    uint64_t one = 1;
    ssize_t written;
    do
        written = write(fd, &one, sizeof one);
    while (written < 0 && errno == EINTR);
}

/* Called with j->lock held, after a count changed. */
static void settle(hb_job *j)
{
    int finishes = !j->done && j->finished + j->abandoned >= j->n;
    if (finishes) {
        j->done = 1;
        if (j->outcome == HB_OK && j->completed_counter != NULL)
            atomic_fetch_add(j->completed_counter, 1);
        int stopped = j->outcome == HB_ERR_CANCELLED || j->outcome == HB_ERR_CLOSED;
        if (stopped && j->cancelled_counter != NULL)
            atomic_fetch_add(j->cancelled_counter, 1);
        if (j->event_fd >= 0)
            signal_event_fd(j->event_fd);
    }
    pthread_cond_broadcast(&j->changed);
}

void hb_job_add_finished(hb_job *j, size_t count, hb_status status)
{
    pthread_mutex_lock(&j->lock);
    j->finished += count;
    if (status != HB_OK && j->outcome == HB_OK)
        j->outcome = status;
    settle(j);
    pthread_mutex_unlock(&j->lock);
}

void hb_job_abandon_locked(hb_job *j, size_t count, hb_status reason)
{
    j->abandoned += count;
    if (count > 0 && j->outcome == HB_OK)
        j->outcome = reason;
    settle(j);
}

void hb_job_abandon(hb_job *j, size_t count, hb_status reason)
{
    pthread_mutex_lock(&j->lock);
    hb_job_abandon_locked(j, count, reason);
    pthread_mutex_unlock(&j->lock);
}

void hb_job_stop_locked(hb_job *j, hb_status reason)
{
    if (atomic_load(&j->stop) != HB_OK)
        return;
    atomic_store(&j->stop, reason);
    j->work_bytes_at_stop = atomic_load(&j->work_bytes);
}

hb_status hb_job_stopped(const hb_job *j)
{
    return (hb_status)atomic_load(&j->stop);
}

void hb_job_count_work(hb_job *j, uint64_t bytes)
{
    atomic_fetch_add_explicit(&j->work_bytes, bytes, memory_order_relaxed);
}

void hb_job_wait_done(hb_job *j)
{
    pthread_mutex_lock(&j->lock);
    while (!j->done)
        pthread_cond_wait(&j->changed, &j->lock);
    pthread_mutex_unlock(&j->lock);
}

hb_status hb_job_wait(hb_job *j, int64_t timeout_ns)
{
    if (j == NULL)
        return HB_ERR_NULL_ARGUMENT;
    struct timespec deadline = hb_deadline_after(timeout_ns);
    pthread_mutex_lock(&j->lock);
    while (!j->done && timeout_ns != 0) {
        if (timeout_ns < 0)
            pthread_cond_wait(&j->changed, &j->lock);
        else if (pthread_cond_timedwait(&j->changed, &j->lock, &deadline) == ETIMEDOUT)
            break;
    }
    hb_status st = j->done ? j->outcome : HB_ERR_TIMEOUT;
    pthread_mutex_unlock(&j->lock);
    return st;
}

hb_status hb_job_fd(hb_job *j, int *fd)
{
    if (j == NULL || fd == NULL)
        return HB_ERR_NULL_ARGUMENT;
    hb_status st = HB_OK;
    pthread_mutex_lock(&j->lock);
    if (j->event_fd < 0) {
        j->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (j->event_fd >= 0 && j->done)
            signal_event_fd(j->event_fd);
    }
    if (j->event_fd < 0)
        st = HB_ERR_IO;
    else
        *fd = j->event_fd;
    pthread_mutex_unlock(&j->lock);
    return st;
}

hb_status hb_testing_job_work(hb_job *j, uint64_t *bytes, uint64_t *bytes_at_cancel)
{
#ifdef HB_FAULT_INJECTION
    if (j == NULL || bytes == NULL || bytes_at_cancel == NULL)
        return HB_ERR_NULL_ARGUMENT;
    pthread_mutex_lock(&j->lock);
    *bytes = atomic_load(&j->work_bytes);
    *bytes_at_cancel = j->work_bytes_at_stop;
    pthread_mutex_unlock(&j->lock);
    return HB_OK;
#else
    (void)j;
    (void)bytes;
    (void)bytes_at_cancel;
    return HB_ERR_INVALID_ARGUMENT;
#endif
}
