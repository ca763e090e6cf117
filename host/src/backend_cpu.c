/*
 * backend_cpu.c - batches hashed on the calling thread.
 *
 * Owns: hb_cpu_hash_watched, hb_cpu_hash_structured and hb_cpu_sha1_watched. Parallelism comes from the
 * engine's CPU workers each taking their own batches from the queue. With
 * a multi-buffer implementation a list goes to its lanes (mb_batch.c,
 * which also decides when OpenSSL does better); with HB_CPU_IMPL_SHA_NI
 * every message goes to OpenSSL, fed to the streaming SHA-1 in pieces of
 * HB_CPU_PIECE_BYTES; the watcher is asked once HB_CPU_PIECE_BYTES have
 * gone by since it was last asked, whether they came from one long
 * message or many short ones.
 * Must not: allocate, or hash any way but through sha1_openssl.h and the
 * multi-buffer lanes.
 */
#include "backend_cpu.h"

#include "fault.h"

#include "mb/mb_batch.h"
#include "mb/mb_costs.h"
#include "sha1_openssl.h"

int hb_cpu_sha1_watched(const hb_msg *m, uint8_t digest[20], hb_cpu_watch *w)
{
    if (m->len <= HB_CPU_PIECE_BYTES) { /* one piece: the one-shot call, as cheap as before */
        if (hb_cpu_watch_stopped(w))
            return 0;
        hb_sha1_openssl(m->data, m->len, digest);
        hb_cpu_watch_note(w, m->len);
        return 1;
    }
    const uint8_t *bytes = m->data;
    hb_sha1_stream s;
    hb_sha1_stream_init(&s);
    for (size_t done = 0; done < m->len;) {
        if (hb_cpu_watch_stopped(w))
            return 0; /* stopped between two pieces */
        size_t left = m->len - done;
        size_t piece = left < HB_CPU_PIECE_BYTES ? left : (size_t)HB_CPU_PIECE_BYTES;
        hb_sha1_stream_update(&s, bytes + done, piece);
        done += piece;
        hb_cpu_watch_note(w, piece);
    }
    hb_sha1_stream_final(&s, digest);
    return 1;
}

/* Every message by OpenSSL, one after the other. */
static int hash_one_by_one(const hb_msg *m, const size_t *which, size_t count, hb_digest *out,
                           hb_cpu_watch *w)
{
    int going = 1;
    for (size_t k = 0; k < count && going; k++) {
        size_t i = which ? which[k] : k;
        going = !hb_cpu_watch_stopped(w) && hb_cpu_sha1_watched(&m[i], out[i], w);
    }
    return going;
}

int hb_cpu_hash_watched(hb_cpu_impl impl, const hb_msg *m, const size_t *which, size_t count,
                        hb_digest *out, hb_cpu_watch *w, size_t *from_lanes)
{
    return hb_cpu_hash_structured(impl, m, which, count, out, w, from_lanes, NULL);
}

int hb_cpu_hash_structured(hb_cpu_impl impl, const hb_msg *m, const size_t *which, size_t count,
                           hb_digest *out, hb_cpu_watch *w, size_t *from_lanes, hb_mb_check *check)
{
    hb_mb_check_reset(check); /* stays so where no lane runs */
    int forced = hb_fault_lanes_forced(); /* a test's: lanes whatever they cost */
    if (count == 1 && impl != HB_CPU_IMPL_SHA_NI && !forced && hb_mb_alone_by_openssl(impl))
        impl = HB_CPU_IMPL_SHA_NI; /* what the lanes' tail rule decides, without the detour */
    size_t lanes_done = 0;
    int going = impl == HB_CPU_IMPL_SHA_NI
                    ? hash_one_by_one(m, which, count, out, w)
                    : hb_mb_hash_checked(impl, forced ? HB_MB_TAIL_LANES : HB_MB_TAIL_MEASURED, m,
                                         which, count, out, w, &lanes_done, check);
    if (from_lanes != NULL)
        *from_lanes = lanes_done;
    hb_cpu_watch_flush(w);
    return going; /* every digest written, even if told to stop after */
}
