/*
 * files_job.c - a files job's life: options resolved, the job made, its
 * I/O threads and collector started, joined and the job freed.
 *
 * Owns: hb_files_job's creation and destruction, the threads' start and
 * join. Must not: read files, touch batches, or decide results.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "engine_internal.h"
#include "files/files_job.h"
#include "files/files_internal.h"

#define DEFAULT_SMALL_MAX FILES_MIB
#define DEFAULT_MEMORY_MAX (64 * FILES_MIB)
#define DEFAULT_BATCH_BYTES (8 * FILES_MIB)
#define DEFAULT_CHUNK_BYTES FILES_MIB
#define IO_THREADS_MAX 16u
#define MEMORY_MIN ((size_t)64)

/* resolve_options: opt with defaults filled in and sizes made consistent. */
static void resolve_options(hb_files_options *o, const hb_files_options *given, size_t n)
{
    if (given != NULL)
        *o = *given;
    else
        memset(o, 0, sizeof *o);
    if (o->io_threads == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        o->io_threads = cores < 2 ? 2u : (unsigned)cores;
    }
    if (o->io_threads > IO_THREADS_MAX)
        o->io_threads = IO_THREADS_MAX;
    if (n > 0 && o->io_threads > n)
        o->io_threads = (unsigned)n;
    o->small_max = o->small_max ? o->small_max : DEFAULT_SMALL_MAX;
    o->memory_max = o->memory_max ? o->memory_max : DEFAULT_MEMORY_MAX;
    o->batch_bytes = o->batch_bytes ? o->batch_bytes : DEFAULT_BATCH_BYTES;
    o->chunk_bytes = o->chunk_bytes ? o->chunk_bytes : DEFAULT_CHUNK_BYTES;
    if (o->memory_max < MEMORY_MIN)
        o->memory_max = MEMORY_MIN;
    /* two arenas (each max(batch_bytes, small_max + 1)) fit the cap */
    if (o->small_max > o->memory_max / 4)
        o->small_max = o->memory_max / 4;
    if (o->batch_bytes > o->memory_max / 2)
        o->batch_bytes = o->memory_max / 2;
}

hb_files_job *files_job_new(hb_engine *e, int dir_fd, const hb_file_input *in, size_t n,
                            hb_file_result *out, const hb_files_options *opt)
{
    hb_files_job *j = calloc(1, sizeof *j);
    if (j == NULL)
        return NULL;
    j->engine = e;
    j->dir_fd = dir_fd;
    j->in = in;
    j->n = n;
    j->out = out;
    resolve_options(&j->opt, opt, n);
    j->arena_bytes =
        j->opt.batch_bytes > j->opt.small_max + 1 ? j->opt.batch_bytes : j->opt.small_max + 1;
    j->free_cap = j->opt.memory_max / j->arena_bytes + 1;
    j->free_arenas = calloc(j->free_cap, sizeof *j->free_arenas);
    if (j->free_arenas == NULL) {
        free(j);
        return NULL;
    }
    j->stats.files = n;
    atomic_init(&j->bytes_read, 0);
    atomic_init(&j->cancelled, 0);
    atomic_init(&j->all_taken, 0);
    atomic_init(&j->read_ns, 0);
    atomic_init(&j->read_bytes, 0);
    hb_cond_init_monotonic(&j->done);
    pthread_cond_init(&j->space, NULL);
    pthread_cond_init(&j->work, NULL);
    pthread_mutex_init(&j->lock, NULL);
    pthread_mutex_init(&j->callback_lock, NULL);
    pthread_mutex_init(&j->share_lock, NULL);
    pthread_cond_init(&j->share_cond, NULL);
    return j;
}

/* start_io: starts one I/O thread. Returns 0 or an error number. */
static int start_io(hb_files_job *j)
{
    files_io_thread *t = calloc(1, sizeof *t);
    if (t == NULL)
        return ENOMEM;
    t->job = j;
    t->chunk = malloc(j->opt.chunk_bytes);
    files_lanes_init(t, hb_engine_cpu_impl_now(j->engine)); /* before the others see it */
    atomic_init(&t->share.rounds, 0);
    atomic_init(&t->share.round_start_ns, 0);
    atomic_init(&t->share.round_ns, 0);
    pthread_mutex_lock(&j->share_lock); /* the others may look at it at once */
    j->io[j->nio++] = t;
    pthread_mutex_unlock(&j->share_lock);
    /* on the pool's cores when device_cores gave it some: reading and
     * streaming big files through OpenSSL is CPU work, kept off the
     * device's cores */
    int rc = t->chunk ? hb_cores_thread_create(&j->threads[j->nthreads], &j->engine->pool_cores,
                                               files_io_main, t)
                      : ENOMEM;
    if (rc != 0) {
        pthread_mutex_lock(&j->share_lock);
        j->nio--;
        pthread_mutex_unlock(&j->share_lock);
        files_lanes_free(t);
        free(t->chunk);
        free(t);
        return rc;
    }
    j->nthreads++;
    return 0;
}

hb_status files_job_start(hb_files_job *j)
{
    unsigned want = j->n == 0 ? 0 : j->opt.io_threads;
    j->threads = calloc(want ? want : 1, sizeof *j->threads);
    j->io = calloc(want ? want : 1, sizeof *j->io);
    if (j->threads == NULL || j->io == NULL)
        return HB_ERR_NO_MEMORY;
    if (want == 0) { /* nothing to do: finished at once */
        j->finished = 1;
        return HB_OK;
    }
    j->io_running = want;
    for (unsigned k = 0; k < want; k++) {
        if (start_io(j) != 0) {
            pthread_mutex_lock(&j->lock);
            j->io_running -= want - k;
            pthread_mutex_unlock(&j->lock);
            break;
        }
    }
    if (j->nthreads == 0)
        return HB_ERR_THREAD;
    if (hb_cores_thread_create(&j->collector, &j->engine->pool_cores, files_collector_main, j) !=
        0) {
        /* No collector: stop, and collect here what was submitted. */
        files_job_cancel(j);
        files_collector_main(j);
        for (unsigned k = 0; k < j->nthreads; k++)
            pthread_join(j->threads[k], NULL);
        j->nthreads = 0;
        return HB_ERR_THREAD;
    }
    j->collector_started = 1;
    return HB_OK;
}

void files_job_cancel(hb_files_job *j)
{
    pthread_mutex_lock(&j->lock);
    if (!j->finished)
        atomic_store(&j->cancelled, 1);
    pthread_cond_broadcast(&j->space);
    pthread_mutex_unlock(&j->lock);
    files_share_wake(j);
}

void files_job_join(hb_files_job *j)
{
    if (j->joined)
        return;
    for (unsigned k = 0; k < j->nthreads; k++)
        pthread_join(j->threads[k], NULL);
    if (j->collector_started)
        pthread_join(j->collector, NULL);
    j->joined = 1;
}

void files_job_destroy(hb_files_job *j)
{
    pthread_cond_destroy(&j->done);
    pthread_cond_destroy(&j->space);
    pthread_cond_destroy(&j->work);
    pthread_mutex_destroy(&j->lock);
    pthread_mutex_destroy(&j->callback_lock);
    pthread_mutex_destroy(&j->share_lock);
    pthread_cond_destroy(&j->share_cond);
    for (unsigned k = 0; k < j->nio; k++)
        free(j->io[k]);
    free(j->io);
    for (size_t k = 0; k < j->nfree; k++)
        free(j->free_arenas[k]);
    free(j->free_arenas);
    free(j->threads);
    free(j);
}
