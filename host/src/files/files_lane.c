/*
 * files_lane.c - one big file streamed in pieces, as a lane of a set
 * (files_lanes.c) or by a reader helping that set (files_share.c): its
 * next piece read, and its end.
 *
 * A piece is read until it is full, the file ends, or an error (or the
 * job is cancelled, asked before every read). At the end the last bytes
 * and the padding are OpenSSL's, the file is checked for changes since it
 * was opened, and its result goes out.
 *
 * Owns: a lane's reads, its result and the streamed_* counts of its file.
 * Must not: hash whole blocks (its caller does, in lanes or by OpenSSL) or
 * know sets.
 */
#include <string.h>

#include "files/files_internal.h"

void files_lane_read_piece(hb_files_job *j, files_lane *l, unsigned char *buf, size_t piece)
{
    l->buf = buf;
    l->len = 0;
    while (l->len < piece && !l->ended && l->st == HB_OK) {
        size_t got = 0;
        if (atomic_load(&j->cancelled)) {
            l->st = HB_ERR_CANCELLED;
        } else if ((l->err = hb_file_read(l->f.fd, buf + l->len, piece - l->len, &got)) != 0) {
            l->st = HB_ERR_IO;
        } else if (got == 0) {
            l->ended = 1;
        } else {
            l->len += got;
            atomic_fetch_add(&j->bytes_read, got);
        }
    }
}

void files_lane_finish(hb_files_job *j, files_lane *l)
{
    hb_file_result r;
    memset(&r, 0, sizeof r);
    hb_status st = l->st;
    int err = l->err;
    if (st == HB_OK)
        st = hb_file_unchanged(&l->f, &err);
    if (st == HB_OK)
        hb_mb_stream_final(&l->stream, l->buf + (l->len - l->rest), l->rest, r.digest);
    r.status = st;
    r.err = st == HB_ERR_IO ? err : 0;
    r.size = st == HB_OK ? l->stream.bytes + l->rest : 0;
    if (st != HB_OK)
        memset(r.digest, 0, sizeof r.digest);
    pthread_mutex_lock(&j->lock);
    j->stats.streamed_files += st == HB_OK;
    j->stats.streamed_bytes += st == HB_OK ? r.size : 0;
    pthread_mutex_unlock(&j->lock);
    hb_file_close(&l->f);
    files_finish(j, l->index, &r);
}
