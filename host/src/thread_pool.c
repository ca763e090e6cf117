/*
 * thread_pool.c - worker threads for parallel-for loops.
 *
 * Owns: the workers, one run at a time, and task index hand-out (an atomic
 * counter). A run wakes the workers with a generation number; it ends when
 * every task has finished and every worker that joined it has left, so no
 * straggler can take an index of the next run.
 * Must not: allocate per run, or run tasks on a thread it did not start
 * other than the caller's.
 */
#include "thread_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct hb_pool {
    unsigned threads; /* workers + the caller */
    pthread_t *workers;
    unsigned started;

    pthread_mutex_t run_lock; /* one run at a time */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t done;
    unsigned long generation;
    unsigned active; /* workers inside the current run */
    int stopping;

    hb_pool_task task;
    void *context;
    size_t count;
    atomic_size_t next;
    atomic_size_t finished;
};

static void run_tasks(hb_pool *pool)
{
    size_t count = pool->count;
    for (;;) {
        size_t i = atomic_fetch_add(&pool->next, 1);
        if (i >= count)
            return;
        pool->task(pool->context, i);
        if (atomic_fetch_add(&pool->finished, 1) + 1 == count) {
            pthread_mutex_lock(&pool->lock);
            pthread_cond_broadcast(&pool->done);
            pthread_mutex_unlock(&pool->lock);
        }
    }
}

static void *worker_main(void *arg)
{
    hb_pool *pool = arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->stopping && pool->generation == seen)
            pthread_cond_wait(&pool->wake, &pool->lock);
        if (pool->stopping)
            break;
        seen = pool->generation;
        pool->active++;
        pthread_mutex_unlock(&pool->lock);
        run_tasks(pool);
        pthread_mutex_lock(&pool->lock);
        if (--pool->active == 0)
            pthread_cond_broadcast(&pool->done);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

hb_status hb_pool_create(hb_pool **out, unsigned threads)
{
    hb_pool *pool = calloc(1, sizeof *pool);
    if (pool == NULL)
        return HB_ERR_NO_MEMORY;
    pool->threads = threads ? threads : 1;
    pthread_mutex_init(&pool->run_lock, NULL);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    atomic_init(&pool->next, 0);
    atomic_init(&pool->finished, 0);
    pool->workers = calloc(pool->threads, sizeof *pool->workers);
    if (pool->workers == NULL) {
        hb_pool_destroy(pool);
        return HB_ERR_NO_MEMORY;
    }
    for (unsigned i = 0; i + 1 < pool->threads; i++) {
        if (pthread_create(&pool->workers[i], NULL, worker_main, pool) != 0) {
            hb_pool_destroy(pool);
            return HB_ERR_THREAD;
        }
        pool->started++;
    }
    *out = pool;
    return HB_OK;
}

void hb_pool_destroy(hb_pool *pool)
{
    if (pool == NULL)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->stopping = 1;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (unsigned i = 0; i < pool->started; i++)
        pthread_join(pool->workers[i], NULL);
    free(pool->workers);
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    pthread_mutex_destroy(&pool->run_lock);
    free(pool);
}

void hb_pool_run(hb_pool *pool, hb_pool_task task, void *context, size_t count)
{
    if (count == 0)
        return;
    if (count == 1 || pool->started == 0) {
        for (size_t i = 0; i < count; i++)
            task(context, i);
        return;
    }
    pthread_mutex_lock(&pool->run_lock);
    pthread_mutex_lock(&pool->lock);
    pool->task = task;
    pool->context = context;
    pool->count = count;
    atomic_store(&pool->next, 0);
    atomic_store(&pool->finished, 0);
    pool->generation++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    run_tasks(pool);

    pthread_mutex_lock(&pool->lock);
    while (atomic_load(&pool->finished) < count || pool->active > 0)
        pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
    pthread_mutex_unlock(&pool->run_lock);
}

unsigned hb_pool_threads(const hb_pool *pool)
{
    return pool->threads;
}
