/*
 * files_lanes.c - big files of a files job streamed side by side through
 * the CPU's multi-buffer lanes, on the I/O thread that reads them.
 *
 * An I/O thread keeps up to `lanes` big files open at once (its set).
 * Each round it reads the next piece of every file in the set (a whole
 * number of blocks, piece_bytes: chunk_bytes shared among the lanes, so
 * the thread's buffers hold what its one chunk held before), hashes the
 * pieces together (mb_streams.h: in lanes, or one by one where the
 * measured costs say so, as when few files are left), and finishes the
 * files that ended: last bytes and padding, the change check, the result.
 * Verified round by round (a round is the set's launch): with the
 * engine's verify mode full, every file's piece of every round is hashed
 * again by OpenSSL from the state it started from and the two states
 * compared; with sample, every round by structure (mb_streams.h: the
 * first two blocks of every lane, from the state the piece started from,
 * across two kernel calls). A mismatch is counted, every piece of that
 * round is hashed again by OpenSSL from its saved state (the data is
 * still there), and the engine's lanes are taken out (later rounds hash
 * one by one). The last bytes and the padding are OpenSSL's already.
 *
 * Once the inputs are all taken, a set may take in another thread's files,
 * or lend its files one at a time to idle threads between rounds
 * (files_share.c): so the round starts and ends there.
 *
 * Owns: the set and its rounds (one file's reads and end: files_lane.c).
 * Must not: map files, hold more than piece_bytes per lane, or block on
 * anything but read().
 */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "engine_internal.h"
#include "fault.h"
#include "files/files_internal.h"
#include "sha1_openssl.h"

void files_lanes_init(files_io_thread *t, hb_cpu_impl impl)
{
    files_lanes *s = &t->lanes;
    memset(s, 0, sizeof *s);
    s->impl = impl;
    s->capacity = hb_cpu_impl_describe(impl)->lanes;
    if (s->capacity == 0)
        return; /* OpenSSL one at a time: files_stream.c streams each file */
    size_t share = (t->job->opt.chunk_bytes / s->capacity) & ~(size_t)(HB_MB_BLOCK - 1);
    s->piece_bytes = share > HB_MB_BLOCK ? share : HB_MB_BLOCK;
    s->area = malloc(s->piece_bytes * s->capacity);
    if (s->area == NULL)
        s->capacity = 0; /* no room for the set: stream one at a time */
}

void files_lanes_free(files_io_thread *t)
{
    free(t->lanes.area);
    t->lanes.area = NULL;
}

int files_lanes_room(const files_io_thread *t)
{
    return t->lanes.capacity == 0 || t->lanes.n < t->lanes.capacity;
}

int files_lanes_take(files_io_thread *t, size_t i, const hb_open_file *f)
{
    files_lanes *s = &t->lanes;
    if (s->capacity == 0)
        return 0;
    files_lane *l = &s->lane[s->n];
    memset(l, 0, sizeof *l);
    l->index = i;
    l->f = *f;
    l->st = HB_OK;
    hb_mb_stream_init(&l->stream);
    s->n++;
    pthread_mutex_lock(&t->job->share_lock); /* helpers may look for it now */
    t->share.in_set = s->n;
    pthread_mutex_unlock(&t->job->share_lock);
    return 1;
}

/* A round whose check failed (or that the caller cannot trust): every
 * piece again by OpenSSL from its saved state, and the lanes out. */
static void redo_round(files_io_thread *t, hb_mb_stream *const *streams, const uint8_t *const *data,
                       const size_t *len, size_t n, const hb_mb_stream *before)
{
    hb_engine_distrust_cpu_lanes(t->job->engine);
    for (size_t k = 0; k < n; k++)
        *streams[k] = before[k];
    hb_mb_streams_update(HB_CPU_IMPL_SHA_NI, streams, data, len, n);
}

/* Full verification: every piece of the round hashed again by OpenSSL
 * from its saved state and the states compared. */
static void check_round_fully(files_io_thread *t, hb_mb_stream *const *streams,
                              const uint8_t *const *data, const size_t *len, size_t n,
                              const hb_mb_stream *before)
{
    size_t mismatches = 0;
    uint64_t bytes = 0;
    for (size_t k = 0; k < n; k++) {
        hb_mb_stream want = before[k];
        hb_sha1_openssl_blocks(want.h, data[k], len[k] / HB_MB_BLOCK);
        mismatches += memcmp(want.h, streams[k]->h, sizeof want.h) != 0;
        bytes += len[k];
    }
    hb_counters_verify(&t->job->engine->counters, n, bytes, mismatches);
    if (mismatches > 0)
        redo_round(t, streams, data, len, n, before);
}

/* The whole blocks of every lane's piece, through the lanes together,
 * checked as the verify mode says (sampled: by structure, every round,
 * mb_streams.h), or one by one by OpenSSL once the engine's lanes are
 * out. */
static void hash_pieces(files_io_thread *t)
{
    files_lanes *s = &t->lanes;
    hb_mb_stream *streams[HB_MB_LANES_MAX];
    hb_mb_stream before[HB_MB_LANES_MAX];
    const uint8_t *data[HB_MB_LANES_MAX];
    size_t len[HB_MB_LANES_MAX];
    size_t n = 0;
    for (unsigned k = 0; k < s->n; k++) {
        files_lane *l = &s->lane[k];
        if (l->st != HB_OK)
            continue;
        size_t whole = l->len & ~(size_t)(HB_MB_BLOCK - 1);
        l->rest = l->len - whole; /* non-zero only at the end of the file */
        if (whole == 0)
            continue;
        streams[n] = &l->stream, data[n] = l->buf, len[n] = whole;
        before[n] = l->stream;
        n++;
    }
    hb_engine *e = t->job->engine;
    if (hb_engine_cpu_impl_now(e) == HB_CPU_IMPL_SHA_NI) {
        hb_mb_streams_update(HB_CPU_IMPL_SHA_NI, streams, data, len, n);
        return;
    }
    hb_mb_check check = {0};
    check.brk = (hb_mb_break_kind)hb_fault_for_cpu_kernel(&e->faults, &check.brk_which);
    hb_verify_mode mode = e->settings.verify;
    int by_structure = mode == HB_VERIFY_SAMPLE || check.brk != HB_MB_BREAK_NONE;
    hb_mb_streams_update_checked(s->impl, streams, data, len, n, by_structure ? &check : NULL);
    if (mode == HB_VERIFY_FULL) {
        check_round_fully(t, streams, data, len, n, before);
    } else if (mode == HB_VERIFY_SAMPLE) {
        hb_counters_verify(&e->counters, check.runs, check.bytes, check.mismatches);
        if (check.mismatches > 0)
            redo_round(t, streams, data, len, n, before);
    }
}

void files_lanes_round(files_io_thread *t)
{
    files_lanes *s = &t->lanes;
    files_share_round_start(t);
    uint64_t began = hb_now_ns();
    uint64_t bytes = 0;
    for (unsigned k = 0; k < s->n; k++) {
        files_lane_read_piece(t->job, &s->lane[k], s->area + (size_t)k * s->piece_bytes,
                              s->piece_bytes);
        bytes += s->lane[k].len;
    }
    files_share_note_reads(t->job, hb_now_ns() - began, bytes);
    hash_pieces(t);
    unsigned kept = 0;
    for (unsigned k = 0; k < s->n; k++) {
        files_lane *l = &s->lane[k];
        if (l->ended || l->st != HB_OK) {
            files_lane_finish(t->job, l);
        } else {
            if (kept != k)
                s->lane[kept] = *l;
            kept++;
        }
    }
    s->n = kept;
    files_share_round_end(t, hb_now_ns() - began);
}
