/*
 * files.c - files jobs: many files hashed whole, read by I/O threads while
 * the engine hashes (hb_submit_files and friends in hashbatch.h).
 *
 * Design: each I/O thread takes the next input, opens it (files_read.c)
 * and either reads it whole (small files) into the open batch, or
 * streams it through OpenSSL's incremental SHA-1 in chunk_bytes reads
 * (big files, and small ones that turn out to grow). A small file of
 * known size is read into a slice of the batch's arena: arenas are
 * recycled, so pages are touched once per job rather than once per file;
 * files whose size is unknown (size 0 in fstat: empty, /proc, pipes) get
 * a growing buffer of their own. A full batch is closed and handed to the
 * engine (hb_submit) once its last slice is filled; one collector thread
 * waits for batches in submission order, writes their results and gives
 * the memory back. Memory: arenas and own buffers are counted against
 * memory_max before they are used (a reader that would pass the cap
 * frees idle arenas, closes the open batch, then waits for the
 * collector); only growth of an unknown-size buffer is taken without
 * waiting. Condition variables are signalled only when a thread waits on
 * them: one futex call per file adds up over 30,000 files.
 *
 * Owns: the job, its threads, its buffers, its counters and per-file
 * results. Must not: print, touch the engine's insides (only the public
 * hb_submit/hb_job_* calls), or map files (a truncated mapping would
 * raise SIGBUS).
 */
#include <errno.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "error.h"
#include "files.h"

#define MIB ((size_t)1 << 20)
#define DEFAULT_SMALL_MAX MIB
#define DEFAULT_MEMORY_MAX (64 * MIB)
#define DEFAULT_BATCH_BYTES (8 * MIB)
#define DEFAULT_CHUNK_BYTES MIB
#define BATCH_FILES_MAX 4096
#define UNKNOWN_SIZE_FIRST ((size_t)4 << 10)
#define IO_THREADS_MAX 16u
#define MEMORY_MIN ((size_t)64)

/* One engine submission: small files read whole, most of them into
 * slices of one arena (a recycled buffer, so pages are touched once per
 * job, not once per file), the others (size unknown until read) into
 * buffers of their own. */
typedef struct files_batch {
    struct files_batch *next;
    size_t count;
    size_t reserved;      /* budget bytes its own buffers hold */
    unsigned char *arena; /* NULL until a slice is asked for */
    size_t arena_used;
    unsigned writers; /* readers still filling their slices */
    int closed;       /* no more files join; queued once writers is 0 */
    size_t index[BATCH_FILES_MAX];
    void *buf[BATCH_FILES_MAX];          /* a buffer of its own, or NULL */
    unsigned char skip[BATCH_FILES_MAX]; /* slice given up: no result here */
    hb_msg msg[BATCH_FILES_MAX];
    hb_digest digest[BATCH_FILES_MAX];
    hb_job *job;
    hb_status submit_status;
} files_batch;

struct hb_files_job {
    hb_engine *engine;
    const hb_file_input *in;
    size_t n;
    hb_file_result *out;
    hb_files_options opt;

    pthread_mutex_t lock; /* everything below but bytes_read */
    pthread_cond_t space; /* memory or an arena freed; an open batch to send */
    pthread_cond_t work;  /* a batch queued, or the readers are done */
    pthread_cond_t done;  /* the job finished */
    unsigned space_waiters;
    int collector_waiting;
    pthread_mutex_t callback_lock;
    size_t next;
    size_t in_memory;
    files_batch *open;
    files_batch *queue_head, *queue_tail;
    size_t arena_bytes;          /* size of every arena */
    unsigned char **free_arenas; /* arenas back from the engine */
    size_t nfree, free_cap;
    unsigned io_running;
    atomic_int cancelled;
    int finished;
    int joined;
    hb_files_stats stats;
    atomic_uint_fast64_t bytes_read;

    pthread_t *threads;
    unsigned nthreads;
    pthread_t collector;
    int collector_started;
};

void hb_files_options_init(hb_files_options *o)
{
    if (o != NULL)
        memset(o, 0, sizeof *o);
}

/* ---- results ----------------------------------------------------------- */

/* finish_file: stores r as out[i], tells the callback, counts it. */
static void finish_file(hb_files_job *j, size_t i, const hb_file_result *r)
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

/* fail_file: finishes file i with status st and errno err. */
static void fail_file(hb_files_job *j, size_t i, hb_status st, int err)
{
    hb_file_result r;
    memset(&r, 0, sizeof r);
    r.status = st;
    r.err = err;
    finish_file(j, i, &r);
}

/* ---- memory budget and batches (callers hold j->lock) ------------------ */

static void take_memory_locked(hb_files_job *j, size_t n)
{
    j->in_memory += n;
    if (j->in_memory > j->stats.peak_memory)
        j->stats.peak_memory = j->in_memory;
}

/* wake_space_locked: readers waiting for memory look again. Signalling
 * only when someone waits keeps the futex calls down (one per file
 * otherwise). */
static void wake_space_locked(hb_files_job *j)
{
    if (j->space_waiters > 0)
        pthread_cond_broadcast(&j->space);
}

/* wait_space_locked: waits for wake_space_locked. */
static void wait_space_locked(hb_files_job *j)
{
    j->space_waiters++;
    pthread_cond_wait(&j->space, &j->lock);
    j->space_waiters--;
}

/* wake_collector_locked: the collector looks at the queue again. */
static void wake_collector_locked(hb_files_job *j)
{
    if (j->collector_waiting)
        pthread_cond_signal(&j->work);
}

/* recycle_arena_locked: an arena back to the free list (or freed). */
static void recycle_arena_locked(hb_files_job *j, unsigned char *arena)
{
    if (arena == NULL)
        return;
    if (j->nfree < j->free_cap) {
        j->free_arenas[j->nfree++] = arena;
    } else {
        free(arena);
        j->in_memory -= j->arena_bytes;
    }
    wake_space_locked(j);
}

/* get_arena_locked: a free arena, or a new one when the budget allows;
 * NULL when neither (or out of memory). */
static unsigned char *get_arena_locked(hb_files_job *j)
{
    if (j->nfree > 0)
        return j->free_arenas[--j->nfree];
    if (j->in_memory > 0 && j->in_memory + j->arena_bytes > j->opt.memory_max)
        return NULL;
    unsigned char *a = malloc(j->arena_bytes);
    if (a != NULL)
        take_memory_locked(j, j->arena_bytes);
    return a;
}

/* queue_locked: hands a closed batch whose slices are all filled to the
 * engine and queues it for the collector (an empty one is dropped). */
static void queue_locked(hb_files_job *j, files_batch *b)
{
    if (b->count == 0) {
        recycle_arena_locked(j, b->arena);
        j->in_memory -= b->reserved;
        free(b);
        wake_space_locked(j);
        return;
    }
    b->submit_status = hb_submit(j->engine, b->msg, b->count, b->digest, &b->job);
    if (b->submit_status != HB_OK)
        b->job = NULL;
    j->stats.batches++;
    if (j->queue_tail != NULL)
        j->queue_tail->next = b;
    else
        j->queue_head = b;
    j->queue_tail = b;
    wake_collector_locked(j);
}

/* submit_locked: closes the open batch: no more files join it, and it
 * goes to the engine as soon as its last slice is filled. */
static void submit_locked(hb_files_job *j)
{
    files_batch *b = j->open;
    if (b == NULL)
        return;
    j->open = NULL;
    b->closed = 1;
    if (b->writers == 0)
        queue_locked(j, b);
}

/* full: the batch should go (files or bytes enough). */
static int full(const hb_files_job *j, const files_batch *b)
{
    return b->count == BATCH_FILES_MAX || b->reserved + b->arena_used >= j->opt.batch_bytes;
}

/* reserve: waits until n more bytes fit under memory_max (or nothing is
 * held), freeing idle arenas and submitting the open batch so that the
 * collector can free memory. */
static void reserve(hb_files_job *j, size_t n)
{
    pthread_mutex_lock(&j->lock);
    while (!atomic_load(&j->cancelled) && j->in_memory > 0 &&
           j->in_memory + n > j->opt.memory_max) {
        if (j->nfree > 0) { /* an idle arena gives its budget back */
            free(j->free_arenas[--j->nfree]);
            j->in_memory -= j->arena_bytes;
            continue;
        }
        if (j->open != NULL) {
            submit_locked(j);
            continue;
        }
        wait_space_locked(j);
    }
    take_memory_locked(j, n);
    pthread_mutex_unlock(&j->lock);
}

/* release: gives n bytes of budget back. */
static void release(hb_files_job *j, size_t n)
{
    pthread_mutex_lock(&j->lock);
    j->in_memory -= n;
    wake_space_locked(j);
    pthread_mutex_unlock(&j->lock);
}

/* add_to_batch: queues file i's bytes (buf owns reserved budget bytes).
 * Returns 0, or ENOMEM when no batch could be made (buf is then kept). */
static int add_to_batch(hb_files_job *j, size_t i, void *buf, size_t len, size_t reserved)
{
    pthread_mutex_lock(&j->lock);
    if (j->open == NULL && (j->open = calloc(1, sizeof *j->open)) == NULL) {
        pthread_mutex_unlock(&j->lock);
        return ENOMEM;
    }
    files_batch *b = j->open;
    b->index[b->count] = i;
    b->buf[b->count] = buf;
    b->msg[b->count].data = buf;
    b->msg[b->count].len = len;
    b->count++;
    b->reserved += reserved;
    j->stats.batched_files++;
    j->stats.batched_bytes += len;
    if (full(j, b))
        submit_locked(j);
    wake_space_locked(j); /* a reader waiting for memory may now submit
                             the open batch */
    pthread_mutex_unlock(&j->lock);
    return 0;
}

/* take_slot: need bytes of the open batch's arena for file i, starting
 * a batch (and taking an arena) when needed; waits while the budget has
 * no arena left. Returns the batch with *slot counted as a writer, or
 * NULL (cancelled, or out of memory: *st says which). */
static files_batch *take_slot(hb_files_job *j, size_t i, size_t need, size_t *slot, hb_status *st)
{
    pthread_mutex_lock(&j->lock);
    files_batch *b;
    for (;;) {
        b = j->open;
        if (atomic_load(&j->cancelled)) {
            *st = HB_ERR_CANCELLED;
            b = NULL;
            break;
        }
        if (b != NULL && b->count < BATCH_FILES_MAX && b->arena != NULL &&
            j->arena_bytes - b->arena_used >= need)
            break;
        if (b != NULL && b->arena == NULL && b->count < BATCH_FILES_MAX &&
            (b->arena = get_arena_locked(j)) != NULL)
            break;
        if (b != NULL) { /* no room: it goes, and a new one starts */
            submit_locked(j);
            continue;
        }
        unsigned char *a = get_arena_locked(j);
        if (a != NULL && (b = calloc(1, sizeof *b)) == NULL) {
            recycle_arena_locked(j, a);
            *st = HB_ERR_NO_MEMORY;
            break;
        }
        if (a != NULL) {
            b->arena = a;
            j->open = b;
            continue;
        }
        wait_space_locked(j); /* the collector frees arenas */
    }
    if (b != NULL) {
        *slot = b->count++;
        b->index[*slot] = i;
        b->buf[*slot] = NULL;
        b->msg[*slot].data = b->arena + b->arena_used;
        b->msg[*slot].len = 0;
        b->arena_used += need;
        b->writers++;
    }
    pthread_mutex_unlock(&j->lock);
    return b;
}

/* end_slot: a writer is done with its slice: len bytes, or (ok 0) given
 * up, its file's result delivered elsewhere. Queues the batch when it was
 * closed and this was its last writer, or closes it when full. */
static void end_slot(hb_files_job *j, files_batch *b, size_t slot, size_t len, int ok)
{
    pthread_mutex_lock(&j->lock);
    b->msg[slot].len = ok ? len : 0;
    b->skip[slot] = !ok;
    if (ok) {
        j->stats.batched_files++;
        j->stats.batched_bytes += len;
    }
    b->writers--;
    if (b->closed && b->writers == 0)
        queue_locked(j, b);
    else if (b == j->open && full(j, b))
        submit_locked(j);
    wake_space_locked(j);
    pthread_mutex_unlock(&j->lock);
}

/* ---- reading ----------------------------------------------------------- */

/* Per-thread state of an I/O thread. */
typedef struct {
    hb_files_job *job;
    unsigned char *chunk; /* chunk_bytes, for streaming */
} io_thread;

/* stream_rest: hashes the rest of f into ctx, chunk by chunk; *total
 * counts the bytes. Returns HB_OK, HB_ERR_CANCELLED or HB_ERR_IO (*err). */
static hb_status stream_rest(io_thread *t, const hb_open_file *f, SHA_CTX *ctx, uint64_t *total,
                             int *err)
{
    hb_files_job *j = t->job;
    for (;;) {
        size_t got = 0;
        if (atomic_load(&j->cancelled))
            return HB_ERR_CANCELLED;
        if ((*err = hb_file_read(f->fd, t->chunk, j->opt.chunk_bytes, &got)) != 0)
            return HB_ERR_IO;
        if (got == 0)
            return HB_OK;
        SHA1_Update(ctx, t->chunk, got);
        *total += got;
        atomic_fetch_add(&j->bytes_read, got);
    }
}

/* check_unchanged: HB_OK, HB_ERR_FILE_CHANGED, or HB_ERR_IO (*err). */
static hb_status check_unchanged(const hb_open_file *f, int *err)
{
    int c = hb_file_changed(f);
    if (c < 0) {
        *err = -c;
        return HB_ERR_IO;
    }
    return c ? HB_ERR_FILE_CHANGED : HB_OK;
}

/* finish_stream: final status of a streamed file i. */
static void finish_stream(io_thread *t, size_t i, const hb_open_file *f, hb_status st, int err,
                          SHA_CTX *ctx, uint64_t total)
{
    hb_file_result r;
    memset(&r, 0, sizeof r);
    if (st == HB_OK)
        st = check_unchanged(f, &err);
    SHA1_Final(r.digest, ctx);
    r.status = st;
    r.err = st == HB_ERR_IO ? err : 0;
    r.size = st == HB_OK ? total : 0;
    if (st != HB_OK)
        memset(r.digest, 0, sizeof r.digest);
    pthread_mutex_lock(&t->job->lock);
    t->job->stats.streamed_files += st == HB_OK;
    t->job->stats.streamed_bytes += st == HB_OK ? total : 0;
    pthread_mutex_unlock(&t->job->lock);
    finish_file(t->job, i, &r);
}

/* stream_file: file i, too big to batch, through OpenSSL here; prefix
 * holds bytes already read (len of them). */
static void stream_file(io_thread *t, size_t i, const hb_open_file *f, const void *prefix,
                        size_t len)
{
    SHA_CTX ctx;
    uint64_t total = len;
    int err = 0;
    SHA1_Init(&ctx);
    if (len > 0)
        SHA1_Update(&ctx, prefix, len);
    hb_status st = stream_rest(t, f, &ctx, &total, &err);
    finish_stream(t, i, f, st, err, &ctx, total);
}

/* first_capacity: the buffer for a small file: its size and one byte
 * more (to see the end without growing), or a guess when it says 0. */
static size_t first_capacity(const hb_files_job *j, const hb_open_file *f)
{
    size_t cap = UNKNOWN_SIZE_FIRST;
    if (f->regular && f->st0.st_size > 0)
        cap = (size_t)f->st0.st_size + 1;
    return cap > j->opt.small_max + 1 ? j->opt.small_max + 1 : cap;
}

/* read_small: reads file i whole into memory and batches it; a file that
 * grows past small_max on the way is streamed instead. */
static void read_small(io_thread *t, size_t i, const hb_open_file *f)
{
    hb_files_job *j = t->job;
    size_t cap = first_capacity(j, f), len = 0, got = 0;
    reserve(j, cap);
    unsigned char *buf = malloc(cap);
    int err = buf ? 0 : ENOMEM;
    hb_status st = buf ? HB_OK : HB_ERR_NO_MEMORY;
    while (st == HB_OK) {
        if (len == cap) {
            if (cap > j->opt.small_max) {
                stream_file(t, i, f, buf, len);
                free(buf);
                release(j, cap);
                return;
            }
            size_t ncap = cap * 2 > j->opt.small_max + 1 ? j->opt.small_max + 1 : cap * 2;
            unsigned char *nbuf = realloc(buf, ncap);
            if (nbuf == NULL) {
                st = HB_ERR_NO_MEMORY;
                err = ENOMEM;
                break;
            }
            pthread_mutex_lock(&j->lock);
            take_memory_locked(j, ncap - cap);
            pthread_mutex_unlock(&j->lock);
            buf = nbuf;
            cap = ncap;
        }
        if ((err = hb_file_read(f->fd, buf + len, cap - len, &got)) != 0)
            st = HB_ERR_IO;
        else if (got == 0)
            break;
        len += got;
        atomic_fetch_add(&j->bytes_read, got);
    }
    if (st == HB_OK)
        st = check_unchanged(f, &err);
    if (st == HB_OK && (err = add_to_batch(j, i, buf, len, cap)) != 0)
        st = HB_ERR_NO_MEMORY;
    if (st != HB_OK) {
        free(buf);
        release(j, cap);
        fail_file(j, i, st, st == HB_ERR_IO || st == HB_ERR_NO_MEMORY ? err : 0);
    }
}

/* read_slice: reads up to cap bytes of f into dst. Returns 0 or an errno
 * value; *len counts what was read. */
static int read_slice(hb_files_job *j, const hb_open_file *f, unsigned char *dst, size_t cap,
                      size_t *len)
{
    size_t got = 0;
    *len = 0;
    while (*len < cap) {
        int err = hb_file_read(f->fd, dst + *len, cap - *len, &got);
        if (err != 0)
            return err;
        if (got == 0)
            break;
        *len += got;
        atomic_fetch_add(&j->bytes_read, got);
    }
    return 0;
}

/* read_sized: a small regular file of known size, read into a slice of
 * the open batch's arena (its size and one byte more, to see the end); a
 * file that turns out longer is streamed instead. */
static void read_sized(io_thread *t, size_t i, const hb_open_file *f)
{
    hb_files_job *j = t->job;
    size_t need = (size_t)f->st0.st_size + 1, slot = 0, len = 0;
    hb_status st = HB_OK;
    files_batch *b = take_slot(j, i, need, &slot, &st);
    if (b == NULL) {
        fail_file(j, i, st, st == HB_ERR_NO_MEMORY ? ENOMEM : 0);
        return;
    }
    unsigned char *dst = (unsigned char *)b->msg[slot].data;
    int err = read_slice(j, f, dst, need, &len);
    if (err == 0 && len == need) { /* it grew: stream it (the slice must
                                      stay ours until then) */
        stream_file(t, i, f, dst, len);
        end_slot(j, b, slot, 0, 0);
        return;
    }
    st = err ? HB_ERR_IO : check_unchanged(f, &err);
    end_slot(j, b, slot, len, st == HB_OK);
    if (st != HB_OK)
        fail_file(j, i, st, st == HB_ERR_IO ? err : 0);
}

/* do_file: opens input i and reads it one way or the other. */
static void do_file(io_thread *t, size_t i)
{
    hb_files_job *j = t->job;
    hb_open_file f;
    int err = 0;
    hb_status st = hb_file_open(&j->in[i], j->opt.read_special, &f, &err);
    if (st != HB_OK) {
        fail_file(j, i, st, err);
        return;
    }
    if (f.regular && (uint64_t)f.st0.st_size > j->opt.small_max)
        stream_file(t, i, &f, NULL, 0);
    else if (f.regular && f.st0.st_size > 0)
        read_sized(t, i, &f);
    else
        read_small(t, i, &f);
    hb_file_close(&f);
}

/* take_next: the next input to read, or n when there is none. */
static size_t take_next(hb_files_job *j)
{
    pthread_mutex_lock(&j->lock);
    size_t i = atomic_load(&j->cancelled) ? j->n : j->next;
    if (i < j->n)
        j->next++;
    pthread_mutex_unlock(&j->lock);
    return i;
}

static void *io_main(void *arg)
{
    io_thread *t = arg;
    hb_files_job *j = t->job;
    for (size_t i; (i = take_next(j)) < j->n;)
        do_file(t, i);
    pthread_mutex_lock(&j->lock);
    if (--j->io_running == 0) {
        submit_locked(j);
        wake_collector_locked(j);
    }
    pthread_mutex_unlock(&j->lock);
    free(t->chunk);
    free(t);
    return NULL;
}

/* ---- the collector ----------------------------------------------------- */

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
        finish_file(j, b->index[k], &r);
    }
    pthread_mutex_lock(&j->lock);
    recycle_arena_locked(j, b->arena);
    pthread_mutex_unlock(&j->lock);
    release(j, b->reserved);
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
        fail_file(j, i, HB_ERR_CANCELLED, 0);
}

static void *collector_main(void *arg)
{
    hb_files_job *j = arg;
    pthread_mutex_lock(&j->lock);
    for (;;) {
        while (j->queue_head == NULL && (j->io_running > 0 || j->open != NULL)) {
            j->collector_waiting = 1;
            pthread_cond_wait(&j->work, &j->lock);
            j->collector_waiting = 0;
        }
        files_batch *b = j->queue_head;
        if (b == NULL)
            break;
        j->queue_head = b->next;
        if (j->queue_head == NULL)
            j->queue_tail = NULL;
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

/* ---- the job ----------------------------------------------------------- */

/* resolve_options: opt with defaults filled in and sizes made consistent. */
static void resolve_options(hb_files_options *o, const hb_files_options *given, size_t n)
{
    if (given != NULL)
        *o = *given;
    else
        hb_files_options_init(o);
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

/* job_new: an initialised job, threads not started. */
static hb_files_job *job_new(hb_engine *e, const hb_file_input *in, size_t n, hb_file_result *out,
                             const hb_files_options *opt)
{
    hb_files_job *j = calloc(1, sizeof *j);
    if (j == NULL)
        return NULL;
    j->engine = e;
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
    hb_cond_init_monotonic(&j->done);
    pthread_cond_init(&j->space, NULL);
    pthread_cond_init(&j->work, NULL);
    pthread_mutex_init(&j->lock, NULL);
    pthread_mutex_init(&j->callback_lock, NULL);
    return j;
}

/* start_io: starts one I/O thread. Returns 0 or an error number. */
static int start_io(hb_files_job *j)
{
    io_thread *t = calloc(1, sizeof *t);
    if (t == NULL)
        return ENOMEM;
    t->job = j;
    t->chunk = malloc(j->opt.chunk_bytes);
    int rc = t->chunk ? pthread_create(&j->threads[j->nthreads], NULL, io_main, t) : ENOMEM;
    if (rc != 0) {
        free(t->chunk);
        free(t);
        return rc;
    }
    j->nthreads++;
    return 0;
}

/* start_threads: the I/O threads and the collector. At least one I/O
 * thread and the collector must start; fewer I/O threads are fine. */
static hb_status start_threads(hb_files_job *j)
{
    unsigned want = j->n == 0 ? 0 : j->opt.io_threads;
    j->threads = calloc(want ? want : 1, sizeof *j->threads);
    if (j->threads == NULL)
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
    if (want > 0 && j->nthreads == 0)
        return HB_ERR_THREAD;
    if (pthread_create(&j->collector, NULL, collector_main, j) != 0) {
        /* No collector: stop, and collect here what was submitted. */
        hb_files_job_cancel(j);
        collector_main(j);
        for (unsigned k = 0; k < j->nthreads; k++)
            pthread_join(j->threads[k], NULL);
        j->nthreads = 0;
        return HB_ERR_THREAD;
    }
    j->collector_started = 1;
    return HB_OK;
}

/* destroy: frees a job whose threads are all joined. */
static void destroy(hb_files_job *j)
{
    pthread_cond_destroy(&j->done);
    pthread_cond_destroy(&j->space);
    pthread_cond_destroy(&j->work);
    pthread_mutex_destroy(&j->lock);
    pthread_mutex_destroy(&j->callback_lock);
    for (size_t k = 0; k < j->nfree; k++)
        free(j->free_arenas[k]);
    free(j->free_arenas);
    free(j->threads);
    free(j);
}

hb_status hb_submit_files(hb_engine *e, const hb_file_input *in, size_t n, hb_file_result *out,
                          const hb_files_options *opt, hb_files_job **job)
{
    hb_status st = check_args(e, in, n, out, job);
    if (st != HB_OK)
        return st;
    *job = NULL;
    hb_files_job *j = job_new(e, in, n, out, opt);
    if (j == NULL)
        return hb_error_set(NULL, HB_ERR_NO_MEMORY, "hb_submit_files: out of memory");
    st = start_threads(j);
    if (st != HB_OK) {
        destroy(j);
        return hb_error_set(NULL, st, "hb_submit_files: %s", hb_status_str(st));
    }
    *job = j;
    return HB_OK;
}

/* join_all: joins the job's threads once it has finished. */
static void join_all(hb_files_job *j)
{
    if (j->joined)
        return;
    for (unsigned k = 0; k < j->nthreads; k++)
        pthread_join(j->threads[k], NULL);
    if (j->collector_started)
        pthread_join(j->collector, NULL);
    j->joined = 1;
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
    join_all(j);
    return cancelled ? HB_ERR_CANCELLED : HB_OK;
}

hb_status hb_files_job_cancel(hb_files_job *j)
{
    if (j == NULL)
        return HB_ERR_NULL_ARGUMENT;
    pthread_mutex_lock(&j->lock);
    if (!j->finished)
        atomic_store(&j->cancelled, 1);
    pthread_cond_broadcast(&j->space);
    pthread_mutex_unlock(&j->lock);
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
    hb_files_job_cancel(j);
    hb_files_job_wait(j, -1);
    destroy(j);
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
