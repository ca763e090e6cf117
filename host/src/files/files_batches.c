/*
 * files_batches.c - the memory budget of a files job and the batches its
 * small files travel in: arenas (recycled), slices of them, buffers of
 * their own, and the hand-over of a full batch to the engine.
 *
 * A small file of known size gets a slice of the open batch's arena
 * (files_take_slot ... files_end_slot); one of unknown size brings its own
 * buffer (files_reserve, then files_add_to_batch). A batch is closed when
 * full (files, or bytes) or when a reader needs memory, and goes to the
 * engine once its last slice is filled; the collector takes it from the
 * queue. Functions named _locked are called with j->lock held.
 *
 * Owns: in_memory and peak_memory, the arenas, the open batch and the
 * queue of submitted ones. Must not: read files or deliver results (the
 * collector does), or call the engine other than by hb_submit.
 */
#include <errno.h>
#include <stdlib.h>

#include "files/files_internal.h"

void files_take_memory_locked(hb_files_job *j, size_t n)
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

void files_wake_collector_locked(hb_files_job *j)
{
    if (j->collector_waiting)
        pthread_cond_signal(&j->work);
}

void files_recycle_arena_locked(hb_files_job *j, unsigned char *arena)
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
        files_take_memory_locked(j, j->arena_bytes);
    return a;
}

/* queue_locked: hands a closed batch whose slices are all filled to the
 * engine and queues it for the collector (an empty one is dropped). */
/* One slot of a batch, for sort_by_length. */
typedef struct {
    hb_msg msg;
    size_t index;
    void *buf;
    unsigned char skip;
} slot_entry;

static int by_length(const void *a, const void *b)
{
    size_t x = ((const slot_entry *)a)->msg.len, y = ((const slot_entry *)b)->msg.len;
    return (x > y) - (x < y);
}

/* sort_by_length: orders b's slots by length before it is submitted.
 * Files come in walk order, their sizes mixed; the engine's takes are
 * runs of messages that are all short or all long (queue.c), so mixed
 * sizes cut them into takes of a few messages, which leave a CPU
 * multi-buffer implementation's lanes, or a device's, mostly empty.
 * Sorted, the short files make full takes and the long ones come in
 * takes of similar lengths. Results go by index, so the order is free.
 * Without memory for the sort, the batch goes as it is. */
static void sort_by_length(files_batch *b)
{
    slot_entry *e = b->count > 1 ? malloc(b->count * sizeof *e) : NULL;
    if (e == NULL)
        return;
    for (size_t k = 0; k < b->count; k++)
        e[k] = (slot_entry){b->msg[k], b->index[k], b->buf[k], b->skip[k]};
    qsort(e, b->count, sizeof *e, by_length);
    for (size_t k = 0; k < b->count; k++) {
        b->msg[k] = e[k].msg;
        b->index[k] = e[k].index;
        b->buf[k] = e[k].buf;
        b->skip[k] = e[k].skip;
    }
    free(e);
}

static void queue_locked(hb_files_job *j, files_batch *b)
{
    if (b->count == 0) {
        files_recycle_arena_locked(j, b->arena);
        j->in_memory -= b->reserved;
        free(b);
        wake_space_locked(j);
        return;
    }
    sort_by_length(b);
    b->submit_status = hb_submit(j->engine, b->msg, b->count, b->digest, &b->job);
    if (b->submit_status != HB_OK)
        b->job = NULL;
    j->stats.batches++;
    if (j->queue_tail != NULL)
        j->queue_tail->next = b;
    else
        j->queue_head = b;
    j->queue_tail = b;
    files_wake_collector_locked(j);
}

void files_submit_locked(hb_files_job *j)
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
    return b->count == FILES_BATCH_MAX || b->reserved + b->arena_used >= j->opt.batch_bytes;
}

/* files_reserve frees idle arenas and submits the open batch so that the
 * collector can free memory, before it waits. */
void files_reserve(hb_files_job *j, size_t n)
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
            files_submit_locked(j);
            continue;
        }
        wait_space_locked(j);
    }
    files_take_memory_locked(j, n);
    pthread_mutex_unlock(&j->lock);
}

void files_release(hb_files_job *j, size_t n)
{
    pthread_mutex_lock(&j->lock);
    j->in_memory -= n;
    wake_space_locked(j);
    pthread_mutex_unlock(&j->lock);
}

int files_add_to_batch(hb_files_job *j, size_t i, void *buf, size_t len, size_t reserved)
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
        files_submit_locked(j);
    wake_space_locked(j); /* a reader waiting for memory may now submit
                             the open batch */
    pthread_mutex_unlock(&j->lock);
    return 0;
}

/* open_slot_locked: the open batch when it has a free entry and need
 * bytes of arena (taking an arena if it has none yet), else NULL. */
static files_batch *open_slot_locked(hb_files_job *j, size_t need)
{
    files_batch *b = j->open;
    if (b == NULL || b->count >= FILES_BATCH_MAX)
        return NULL;
    if (b->arena != NULL)
        return j->arena_bytes - b->arena_used >= need ? b : NULL;
    return (b->arena = get_arena_locked(j)) != NULL ? b : NULL;
}

/* new_batch_locked: opens a batch with an arena. Returns 1 when done; 0
 * when the budget has no arena now (wait); -1 out of memory. */
static int new_batch_locked(hb_files_job *j)
{
    unsigned char *a = get_arena_locked(j);
    if (a == NULL)
        return 0;
    files_batch *b = calloc(1, sizeof *b);
    if (b == NULL) {
        files_recycle_arena_locked(j, a);
        return -1;
    }
    b->arena = a;
    j->open = b;
    return 1;
}

/* files_take_slot starts a batch (and takes an arena) when needed, and
 * waits while the budget has no arena left. */
files_batch *files_take_slot(hb_files_job *j, size_t i, size_t need, size_t *slot, hb_status *st)
{
    pthread_mutex_lock(&j->lock);
    files_batch *b = NULL;
    hb_status why = HB_ERR_CANCELLED; /* when no slot comes */
    while (!atomic_load(&j->cancelled) && (b = open_slot_locked(j, need)) == NULL) {
        if (j->open != NULL) { /* no room: it goes, and a new one starts */
            files_submit_locked(j);
            continue;
        }
        int made = new_batch_locked(j);
        if (made < 0) {
            why = HB_ERR_NO_MEMORY;
            break;
        }
        if (made == 0)
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
    } else {
        *st = why;
    }
    pthread_mutex_unlock(&j->lock);
    return b;
}

/* files_end_slot queues the batch when it was closed and this was its
 * last writer, or closes it when full. */
void files_end_slot(hb_files_job *j, files_batch *b, size_t slot, size_t len, int ok)
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
        files_submit_locked(j);
    wake_space_locked(j);
    pthread_mutex_unlock(&j->lock);
}
