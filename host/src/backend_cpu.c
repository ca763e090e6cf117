/*
 * backend_cpu.c - batches hashed by OpenSSL on the calling thread.
 *
 * Owns: hb_cpu_hash and the watched variants. Parallelism comes from the
 * engine's CPU workers each taking their own batches from the queue. A
 * message is fed to the streaming SHA-1 in pieces of HB_CPU_PIECE_BYTES;
 * the watcher is asked once HB_CPU_PIECE_BYTES have gone by since it was
 * last asked, whether they came from one long message or many short ones.
 * Must not: allocate, or hash any way but through sha1_openssl.h.
 */
#include "backend_cpu.h"

#include "sha1_openssl.h"

void hb_cpu_hash(const hb_msg *m, const size_t *which, size_t count, hb_digest *out)
{
    for (size_t k = 0; k < count; k++) {
        size_t i = which ? which[k] : k;
        hb_sha1_openssl(m[i].data, m[i].len, out[i]);
    }
}

int hb_cpu_watch_flush(hb_cpu_watch *w)
{
    if (w == NULL)
        return 1;
    if (w->pending > 0) {
        uint64_t bytes = w->pending;
        w->pending = 0;
        if (!w->keep_going(w->ctx, bytes))
            w->stopped = 1;
    }
    return !w->stopped;
}

/* Counts `bytes` for w; asks it once a piece's worth has gone by. */
static void note_progress(hb_cpu_watch *w, uint64_t bytes)
{
    if (w == NULL)
        return;
    w->pending += bytes;
    if (w->pending >= HB_CPU_PIECE_BYTES)
        hb_cpu_watch_flush(w);
}

int hb_cpu_sha1_watched(const hb_msg *m, uint8_t digest[20], hb_cpu_watch *w)
{
    if (m->len <= HB_CPU_PIECE_BYTES) { /* one piece: the one-shot call, as cheap as before */
        if (w != NULL && w->stopped)
            return 0;
        hb_sha1_openssl(m->data, m->len, digest);
        note_progress(w, m->len);
        return 1;
    }
    const uint8_t *bytes = m->data;
    hb_sha1_stream s;
    hb_sha1_stream_init(&s);
    for (size_t done = 0; done < m->len;) {
        if (w != NULL && w->stopped)
            return 0; /* stopped between two pieces */
        size_t left = m->len - done;
        size_t piece = left < HB_CPU_PIECE_BYTES ? left : (size_t)HB_CPU_PIECE_BYTES;
        hb_sha1_stream_update(&s, bytes + done, piece);
        done += piece;
        note_progress(w, piece);
    }
    hb_sha1_stream_final(&s, digest);
    return 1;
}

int hb_cpu_hash_watched(const hb_msg *m, const size_t *which, size_t count, hb_digest *out,
                        hb_cpu_watch *w)
{
    int going = 1;
    for (size_t k = 0; k < count && going; k++) {
        size_t i = which ? which[k] : k;
        going = (w == NULL || !w->stopped) && hb_cpu_sha1_watched(&m[i], out[i], w);
    }
    hb_cpu_watch_flush(w);
    return going; /* every digest written, even if told to stop after */
}
