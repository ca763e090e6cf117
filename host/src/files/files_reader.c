/*
 * files_reader.c - the I/O threads of a files job: each takes the next
 * input, opens it and reads it the way its size asks for.
 *
 * A regular file bigger than small_max joins the thread's set of files in
 * the CPU's lanes (files_lanes.c), or is streamed alone (files_stream.c)
 * where there are no lanes. One
 * of known size up to small_max is read into a slice of the open batch's
 * arena (its size and one byte more, to see the end). One whose size is
 * unknown (size 0 in statx: empty, /proc, pipes, devices) gets a buffer of
 * its own that doubles from 4 KiB up to small_max, every read() asking for
 * all the room left, so the reads stay whole buffers (/proc/self/pagemap
 * refuses a read of a size or at an offset that is not a multiple of 8);
 * when the buffer is full at small_max, one chunk_bytes read tells whether
 * the file ends there (batched) or goes on (streamed). A file that turns
 * out longer than it said is streamed too; every file is checked for
 * changes after its last read.
 *
 * The loop takes inputs while the set has room, and runs the set's
 * rounds when it is full or the inputs are all taken; then it may hand
 * its set to another thread's and help that one (files_share.c).
 *
 * Owns: the I/O threads' loop and the reading of small files.
 * Must not: hash (the engine does, or files_stream.c), deliver a batch's
 * results (the collector does) or block without being woken on cancel.
 */
#include <errno.h>
#include <stdlib.h>

#include "engine_internal.h"
#include "files/files_internal.h"
#include "thread_priority.h"

/* fill: reads f into buf[*len..cap) until it is full or the file ends
 * (*ended 1). Returns 0 or an errno value. */
static int fill(hb_files_job *j, const hb_open_file *f, unsigned char *buf, size_t cap, size_t *len,
                int *ended)
{
    *ended = 0;
    while (*len < cap) {
        size_t got = 0;
        int err = hb_file_read(f->fd, buf + *len, cap - *len, &got);
        if (err != 0)
            return err;
        if (got == 0) {
            *ended = 1;
            return 0;
        }
        *len += got;
        atomic_fetch_add(&j->bytes_read, got);
    }
    return 0;
}

/* grow: doubles *buf (at most small_max), counting the growth against
 * the budget without waiting. Returns 0 or ENOMEM (*buf is then kept). */
static int grow(hb_files_job *j, unsigned char **buf, size_t *cap)
{
    size_t ncap = *cap * 2 > j->opt.small_max ? j->opt.small_max : *cap * 2;
    unsigned char *nbuf = realloc(*buf, ncap);
    if (nbuf == NULL)
        return ENOMEM;
    pthread_mutex_lock(&j->lock);
    files_take_memory_locked(j, ncap - *cap);
    pthread_mutex_unlock(&j->lock);
    *buf = nbuf;
    *cap = ncap;
    return 0;
}

/* ends_at_small_max: after buf filled to small_max, one chunk_bytes read:
 * returns 1 when the file ends there; 0 when it goes on (file i is then
 * streamed and finished here); -1 on a read error (*err). */
static int ends_at_small_max(files_io_thread *t, size_t i, const hb_open_file *f,
                             const unsigned char *buf, size_t len, int *err)
{
    size_t got = 0;
    if ((*err = hb_file_read(f->fd, t->chunk, t->job->opt.chunk_bytes, &got)) != 0)
        return -1;
    if (got == 0)
        return 1;
    atomic_fetch_add(&t->job->bytes_read, got);
    files_stream_from(t, i, f, buf, len, t->chunk, got);
    return 0;
}

/* read_unknown: file i, whose size is not known, read whole into a buffer
 * of its own and batched, or streamed once past small_max. */
static void read_unknown(files_io_thread *t, size_t i, const hb_open_file *f)
{
    hb_files_job *j = t->job;
    size_t cap =
        FILES_UNKNOWN_SIZE_FIRST < j->opt.small_max ? FILES_UNKNOWN_SIZE_FIRST : j->opt.small_max;
    size_t len = 0;
    int ended = 0, err = 0, ends = 1;
    files_reserve(j, cap);
    unsigned char *buf = malloc(cap);
    hb_status st = buf ? HB_OK : HB_ERR_NO_MEMORY;
    err = buf ? 0 : ENOMEM;
    while (st == HB_OK) {
        if ((err = fill(j, f, buf, cap, &len, &ended)) != 0) {
            st = HB_ERR_IO;
        } else if (ended) {
            break;
        } else if (cap >= j->opt.small_max) {
            if ((ends = ends_at_small_max(t, i, f, buf, len, &err)) < 0)
                st = HB_ERR_IO;
            break;
        } else if ((err = grow(j, &buf, &cap)) != 0) {
            st = HB_ERR_NO_MEMORY;
        }
    }
    if (st == HB_OK && ends == 0) { /* streamed: its result is out */
        free(buf);
        files_release(j, cap);
        return;
    }
    if (st == HB_OK)
        st = hb_file_unchanged(f, &err);
    if (st == HB_OK && (err = files_add_to_batch(j, i, buf, len, cap)) != 0)
        st = HB_ERR_NO_MEMORY;
    if (st != HB_OK) {
        free(buf);
        files_release(j, cap);
        files_fail(j, i, st, st == HB_ERR_IO || st == HB_ERR_NO_MEMORY ? err : 0);
    }
}

/* read_sized: a small regular file of known size, read into a slice of
 * the open batch's arena (its size and one byte more, to see the end); a
 * file that turns out longer is streamed instead. */
static void read_sized(files_io_thread *t, size_t i, const hb_open_file *f)
{
    hb_files_job *j = t->job;
    size_t need = (size_t)f->at_open.size + 1, slot = 0, len = 0;
    int ended = 0;
    hb_status st = HB_OK;
    files_batch *b = files_take_slot(j, i, need, &slot, &st);
    if (b == NULL) {
        files_fail(j, i, st, st == HB_ERR_NO_MEMORY ? ENOMEM : 0);
        return;
    }
    unsigned char *dst = (unsigned char *)b->msg[slot].data;
    int err = fill(j, f, dst, need, &len, &ended);
    if (err == 0 && len == need) { /* it grew: stream it (the slice must
                                      stay ours until then) */
        files_stream_from(t, i, f, dst, len, NULL, 0);
        files_end_slot(j, b, slot, 0, 0);
        return;
    }
    st = err ? HB_ERR_IO : hb_file_unchanged(f, &err);
    files_end_slot(j, b, slot, len, st == HB_OK);
    if (st != HB_OK)
        files_fail(j, i, st, st == HB_ERR_IO ? err : 0);
}

/* do_file: opens input i and reads it one way or the other. */
static void do_file(files_io_thread *t, size_t i)
{
    hb_files_job *j = t->job;
    hb_open_file f;
    int err = 0;
    hb_status st = hb_file_open(&j->in[i], j->dir_fd, j->opt.read_special, &f, &err);
    if (st != HB_OK) {
        files_fail(j, i, st, err);
        return;
    }
    int big = f.regular && f.at_open.size > j->opt.small_max;
    if (big && files_lanes_take(t, i, &f))
        return; /* the set reads it, finishes it and closes it */
    if (big)
        files_stream_from(t, i, &f, NULL, 0, NULL, 0);
    else if (f.regular && f.at_open.size > 0)
        read_sized(t, i, &f);
    else
        read_unknown(t, i, &f);
    hb_file_close(&f);
}

/* take_next: the next input to read, or n when there is none. */
static size_t take_next(hb_files_job *j)
{
    pthread_mutex_lock(&j->lock);
    size_t i = atomic_load(&j->cancelled) ? j->n : j->next;
    if (i < j->n)
        j->next++;
    if (j->next == j->n)
        atomic_store(&j->all_taken, 1);
    pthread_mutex_unlock(&j->lock);
    return i;
}

void *files_io_main(void *arg)
{
    files_io_thread *t = arg;
    hb_files_job *j = t->job;
    if (j->engine->settings.idle_priority)
        hb_thread_priority_lowest();
    for (;;) { /* inputs while the set has room, then rounds of the set */
        int room = files_lanes_room(t);
        size_t i = room ? take_next(j) : j->n;
        if (i < j->n) {
            do_file(t, i);
            continue;
        }
        if (room) /* no input left: the set may join a fuller one */
            files_share_merge(t);
        if (files_share_owner_busy(t))
            files_lanes_round(t);
        else if (!files_share_help(t))
            break; /* no set of its own, none to help */
    }
    files_lanes_free(t);
    pthread_mutex_lock(&j->lock);
    if (--j->io_running == 0) {
        files_submit_locked(j);
        files_wake_collector_locked(j);
    }
    pthread_mutex_unlock(&j->lock);
    free(t->chunk);
    t->chunk = NULL;
    return NULL;
}
