/*
 * cpu_watch.c - the watcher of CPU hashing (see cpu_watch.h).
 *
 * Owns: hb_cpu_watch_flush and hb_cpu_watch_note.
 * Must not: hash, or hold state outside the watch it is given.
 */
#include "cpu_watch.h"

#include <stddef.h>

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

void hb_cpu_watch_note(hb_cpu_watch *w, uint64_t bytes)
{
    if (w == NULL)
        return;
    w->pending += bytes;
    if (w->pending >= HB_CPU_PIECE_BYTES)
        hb_cpu_watch_flush(w);
}
