/*
 * cpu_watch.h - asking, while a CPU thread hashes, whether to go on.
 *
 * Owns: the watcher that CPU hashing (backend_cpu.c, the multi-buffer
 * lanes, the verifier) reports its progress to every HB_CPU_PIECE_BYTES,
 * and the size of that piece.
 * Must not: know jobs and batches (the watcher's callback does).
 */
#ifndef HB_CPU_WATCH_H
#define HB_CPU_WATCH_H

#include <stddef.h>
#include <stdint.h>

/* Bytes hashed between two questions to the watcher: about 1 ms of SHA-NI
 * on one core (1.2-2.2 GB/s on the machines measured so far, `openssl
 * speed sha1`), and less in multi-buffer lanes, so a cancel waits at most
 * that long per CPU thread, while the question (a few atomic loads) costs
 * nothing measurable against 2 MiB of hashing. */
#define HB_CPU_PIECE_BYTES ((uint64_t)2 << 20)

/* Who is asked, every HB_CPU_PIECE_BYTES or so, whether to go on. */
typedef struct {
    /* keep_going: `bytes` more were hashed since the last call; returns 0
     * to stop (the messages not finished then have no digest). */
    int (*keep_going)(void *ctx, uint64_t bytes);
    void *ctx;
    uint64_t pending; /* hashed and not reported yet; start at 0 */
    int stopped;      /* keep_going said 0; start at 0 */
} hb_cpu_watch;

/* hb_cpu_watch_flush: reports w->pending to w (NULL: nobody); returns 0
 * once it has said stop (now or before), else 1. */
int hb_cpu_watch_flush(hb_cpu_watch *w);

/* hb_cpu_watch_note: counts `bytes` for w (NULL: nobody) and asks it once
 * a piece's worth has gone by since it was last asked. */
void hb_cpu_watch_note(hb_cpu_watch *w, uint64_t bytes);

/* hb_cpu_watch_stopped: 1 once w has said stop. */
static inline int hb_cpu_watch_stopped(const hb_cpu_watch *w)
{
    return w != NULL && w->stopped;
}

#endif /* HB_CPU_WATCH_H */
