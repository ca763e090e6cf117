/*
 * mb_costs.h - what a block costs in lanes and one message at a time, on
 * this machine, measured.
 *
 * Owns: the costs that the lane bookkeeping (mb_batch.c) decides by, and
 * the implementation an engine uses when none is asked for. Each is
 * measured once per process, at first use: a few hundred compressions,
 * tens of microseconds, minimum of several runs (a loaded machine makes
 * a run slower, never faster).
 * Must not: use a cost that was not measured on this machine.
 */
#ifndef HB_MB_COSTS_H
#define HB_MB_COSTS_H

#include "mb/mb_impl.h"

typedef struct {
    double lanes_ns;      /* one compression step of every lane of the impl */
    double one_ns;        /* one block by OpenSSL, one message at a time */
    int alone_by_openssl; /* one_ns <= lanes_ns: a message alone is
                             OpenSSL's (the tail rule for a list of one) */
} hb_mb_costs;

/* hb_mb_costs_of: the measured costs of impl (a multi-buffer one this CPU
 * runs). Thread-safe; the first caller measures. */
hb_mb_costs hb_mb_costs_of(hb_cpu_impl impl);

/* hb_mb_alone_by_openssl: hb_mb_costs_of(impl).alone_by_openssl, without
 * copying the costs (a message alone is the hot path). */
int hb_mb_alone_by_openssl(hb_cpu_impl impl);

/* hb_mb_impl_for_few: for a list of count messages of about one length,
 * fewer than preferred's lanes (a multi-buffer implementation), the
 * implementation that runs one block of each of them for least by the
 * measured costs: preferred, a narrower one this CPU runs (steps of
 * ceil(count / lanes) at its lanes_ns), or OpenSSL (count x one_ns).
 * preferred itself when count fills its lanes. */
hb_cpu_impl hb_mb_impl_for_few(hb_cpu_impl preferred, size_t count);

/* hb_mb_streams_rate: blocks a nanosecond of count streams hashed side
 * by side on one thread, in the implementation hb_mb_impl_for_few picks
 * for them (by the measured costs; 0 for no streams). */
double hb_mb_streams_rate(hb_cpu_impl preferred, size_t count);

/* hb_cpu_impl_default: the multi-buffer implementation with the lowest
 * measured cost per lane and block, if that beats OpenSSL's cost per
 * block; else HB_CPU_IMPL_SHA_NI. Measured by the first process on a
 * machine and kept (the cache folder's cpu_impl.txt) for the others. */
hb_cpu_impl hb_cpu_impl_default(void);

#endif /* HB_MB_COSTS_H */
