/*
 * files_stream.c - streaming one file of a files job: too big to batch
 * (or grown past small_max while read), it is hashed on its I/O thread
 * through the incremental SHA-1 of sha1_openssl.h, chunk_bytes per read().
 * One SHA-1 stream is sequential: a device gains nothing on one big file.
 * Cancellation is looked at before every chunk, so a cancelled or freed
 * job stops within one chunk whatever the file's size.
 *
 * Owns: the stream of one file and its streamed_* counts.
 * Must not: hold more than the thread's one chunk buffer, map the file (a
 * truncated mapping raises SIGBUS), or call OpenSSL other than through
 * sha1_openssl.h.
 */
#include <string.h>

#include "files/files_internal.h"
#include "sha1_openssl.h"

/* stream_rest: hashes the rest of f into s, chunk by chunk; *total
 * counts the bytes. Returns HB_OK, HB_ERR_CANCELLED or HB_ERR_IO (*err). */
static hb_status stream_rest(files_io_thread *t, const hb_open_file *f, hb_sha1_stream *s,
                             uint64_t *total, int *err)
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
        hb_sha1_stream_update(s, t->chunk, got);
        *total += got;
        atomic_fetch_add(&j->bytes_read, got);
    }
}

/* finish_stream: the result of streamed file i from st (HB_OK once read
 * to its end, then checked for changes). */
static void finish_stream(files_io_thread *t, size_t i, const hb_open_file *f, hb_status st,
                          int err, hb_sha1_stream *s, uint64_t total)
{
    hb_file_result r;
    memset(&r, 0, sizeof r);
    if (st == HB_OK)
        st = hb_file_unchanged(f, &err);
    hb_sha1_stream_final(s, r.digest);
    r.status = st;
    r.err = st == HB_ERR_IO ? err : 0;
    r.size = st == HB_OK ? total : 0;
    if (st != HB_OK)
        memset(r.digest, 0, sizeof r.digest);
    pthread_mutex_lock(&t->job->lock);
    t->job->stats.streamed_files += st == HB_OK;
    t->job->stats.streamed_bytes += st == HB_OK ? total : 0;
    pthread_mutex_unlock(&t->job->lock);
    files_finish(t->job, i, &r);
}

void files_stream_from(files_io_thread *t, size_t i, const hb_open_file *f, const void *prefix,
                       size_t len, const void *extra, size_t extra_len)
{
    hb_sha1_stream s;
    uint64_t total = (uint64_t)len + extra_len;
    int err = 0;
    hb_sha1_stream_init(&s);
    hb_sha1_stream_update(&s, prefix, len);
    hb_sha1_stream_update(&s, extra, extra_len);
    hb_status st = stream_rest(t, f, &s, &total, &err);
    finish_stream(t, i, f, st, err, &s, total);
}
