/*
 * engine_parts.h - what the files behind Hashbatch::Engine, Hashbatch::Job
 * and the default engine share: the engine reference, batches, and the
 * functions that cross between those files.
 *
 * Calls go downward, in this order:
 *   default_engine.c, engine.c   the Ruby methods
 *   job.c, sync.c, files.c       asynchronous and synchronous batches,
 *                                files jobs; engine_info.c (stats, devices)
 *   batch_wait.c                 waiting without the GVL
 *   batch.c                      a batch: its strings, messages and hb_job
 *   engine_ref.c                 an open hb_engine shared by its users
 *   fork_guard.c                 which process may still call OpenCL
 * Must not: be included outside the extension (it is not an API).
 */
#ifndef HB_EXT_ENGINE_PARTS_H
#define HB_EXT_ENGINE_PARTS_H

#include "hb_ext.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

/* ---- fork_guard.c ---------------------------------------------------- */

/* hb_ext_opencl_forked: 1 if OpenCL was touched by an ancestor of this
 * process (it must not be called here). */
int hb_ext_opencl_forked(void);
/* hb_ext_opencl_touch: notes that this process may call OpenCL now. */
void hb_ext_opencl_touch(void);
/* hb_ext_fork_safe_config: in a child of an OpenCL process, auto becomes
 * cpu and opencl raises; elsewhere notes that OpenCL may be touched now. */
void hb_ext_fork_safe_config(hb_config *cfg);

/* ---- engine_ref.c ---------------------------------------------------- */

/* An open engine, shared by the Engine object (or the default engine) and
 * every batch submitted to it; freed with its last reference.
 * hb_engine_close must not overlap cancel or free of its jobs: lock is
 * read-held by submit, cancel, free and stats, write-held by close. */
typedef struct {
    hb_engine *e;          /* NULL once closed */
    pid_t pid;             /* the process that opened it */
    pthread_rwlock_t lock; /* read: submit, cancel, free; write: close */
    atomic_uint refs;
    int pool_takes_jobs; /* the OpenSSL pool hashes queued jobs, so
                            hb_sha1_batch hashes small batches inline */
} engine_ref;

/* hb_ext_open_engine: opens an engine with cfg (made fork-safe first)
 * without the GVL; raises the mapped error on failure: an ArgumentError
 * with the library's text for a value it rejects (HB_ERR_INVALID_ARGUMENT),
 * else the Hashbatch::Error subclass for the status. */
hb_engine *hb_ext_open_engine(hb_config *cfg);
/* hb_ext_engine_ref_new: a reference (count 1) around e, opened with cfg. */
engine_ref *hb_ext_engine_ref_new(hb_engine *e, const hb_config *cfg);
/* hb_ext_engine_ref_take: one more reference to r. */
void hb_ext_engine_ref_take(engine_ref *r);
/* hb_ext_engine_ref_unref: drops a reference; the last closes and frees. */
void hb_ext_engine_ref_unref(engine_ref *r);
/* hb_ext_engine_ref_close: closes the engine once, in the process that
 * opened it; in a forked child it only forgets it. Blocks while batches
 * finish; needs no GVL (p is the engine_ref). */
void *hb_ext_engine_ref_close(void *p);
/* hb_ext_engine_ref_check: raises unless r can take work in this process. */
void hb_ext_engine_ref_check(const engine_ref *r);

/* ---- batch.c --------------------------------------------------------- */

/* One batch of strings on an engine: a synchronous one (sha1_many), or the
 * state of a Hashbatch::Job. */
typedef struct {
    engine_ref *eng;
    hb_job *job; /* while submitted and not yet freed */
    hb_msg *msgs;
    hb_digest *out;
    size_t n;
    VALUE *strs; /* pinned while the engine may read them */
    size_t nstrs;
    VALUE *locked; /* held (pin.c), to release */
    unsigned char *lock_kind; /* how each was held: HB_PIN_OWN or _SHARED */
    size_t nlocked;
    char *embedded; /* copies of embedded strings' bytes (see batch.c) */
    int hex;        /* results as hex text */
    int finished;   /* status is the outcome */
    int waiters;    /* threads in hb_ext_batch_wait: the job outlives them */
    hb_status status;
    VALUE result;
    uint64_t gvl_back_ns; /* the last wait: from the job's end to the GVL back */
} batch;

/* hb_ext_batch_new: an empty batch object of class klass (0: hidden) for
 * n strings on r (takes a reference to r); *out is its state. */
VALUE hb_ext_batch_new(VALUE klass, engine_ref *r, size_t n, int hex, batch **out);
/* hb_ext_batch_get: the state of a batch object (a TypeError otherwise). */
batch *hb_ext_batch_get(VALUE obj);
/* hb_ext_batch_fill: takes every string of ary; locks them (lock) or keeps
 * frozen snapshots (!lock). May raise: what was locked is in b->locked. */
void hb_ext_batch_fill(batch *b, VALUE ary, int lock);
/* The strings that the batches of one call lock themselves, indexed once
 * one of them comes again (a String twice in one call, or in two of its
 * pieces): that one is then held by both, shared (pin.c), not copied. */
typedef struct {
    batch **batches; /* the call's batches, in fill order */
    int nbatches;
    struct own_lock *slot; /* open addressing, NULL until first needed */
    size_t mask, used;
} own_locks;
/* hb_ext_own_locks_free: frees the index (never the batches). */
void hb_ext_own_locks_free(own_locks *o);
/* hb_ext_batch_fill_from: as hb_ext_batch_fill, with the strings of ary
 * from index first (b->n of them); locks are shared through o with the
 * call's other batches, already in o->batches (b the last). */
void hb_ext_batch_fill_from(batch *b, VALUE ary, long first, int lock, own_locks *o);
/* hb_ext_batch_submit: hands the batch to the engine; raises on failure. */
void hb_ext_batch_submit(batch *b);
/* hb_ext_batch_release: the engine is done with the strings (finished,
 * or cancelled here, without the GVL): unlock them and let them go. Never
 * raises: it runs in ensures. */
void hb_ext_batch_release(batch *b);
/* hb_ext_batch_cancel: stops an unfinished job, without the GVL, and
 * records its outcome (HB_ERR_CANCELLED, or HB_OK if it had finished);
 * only in the process that opened the engine. Never raises. */
void hb_ext_batch_cancel(batch *b);
/* hb_ext_batch_result: the digests as an Array (binary or hex strings);
 * raises the job's error if it did not succeed. */
VALUE hb_ext_batch_result(batch *b);
/* hb_ext_batch_append_result: pushes the digests onto into; raises the
 * job's error if it did not succeed. */
void hb_ext_batch_append_result(batch *b, VALUE into);

/* ---- batch_wait.c ---------------------------------------------------- */

/* hb_ext_batch_wait: waits up to timeout_s seconds (< 0: forever) without
 * the GVL, running interrupts as they come (they may raise). Returns 1
 * when the job has finished (b->status set), 0 on timeout. */
int hb_ext_batch_wait(batch *b, double timeout_s);
/* hb_ext_batch_poll: 1 if the job has finished (b->status set), looked at
 * holding the GVL, without waiting. */
int hb_ext_batch_poll(batch *b);

/* ---- sync.c ---------------------------------------------------------- */

/* hb_ext_strings_array: the argument as an Array whose elements cannot
 * change while a batch is filled: itself when every element is a String,
 * else a copy; a TypeError if it is not an Array. */
VALUE hb_ext_strings_array(VALUE strings);
/* hb_ext_hash_sync: digests of ary (from hb_ext_strings_array) on r,
 * waiting without the GVL. */
VALUE hb_ext_hash_sync(engine_ref *r, VALUE ary, int hex);

/* ---- job.c ----------------------------------------------------------- */

/* hb_ext_job_submit: a Hashbatch::Job for strings (an Array) on r,
 * submitted at once; engine is the Engine object it belongs to. */
VALUE hb_ext_job_submit(engine_ref *r, VALUE engine, VALUE ary, int hex);

/* ---- engine_info.c --------------------------------------------------- */

/* hb_ext_stats_hash: hb_stats as a Hash with Symbol keys. */
VALUE hb_ext_stats_hash(const hb_stats *s);
/* hb_ext_devices: every OpenCL device (hb_devices_list) as Hashes; a
 * method body (self is unused). */
VALUE hb_ext_devices(VALUE self);

/* ---- files.c --------------------------------------------------------- */

#ifdef HAVE_HB_SUBMIT_FILES
/* hb_ext_file_digests_on: file_digests(paths, hex: false, errors: :raise)
 * on r, from a method's arguments. */
VALUE hb_ext_file_digests_on(engine_ref *r, int argc, VALUE *argv);
#endif

#endif
