/*
 * sync.c - synchronous batches: sha1_many and hexdigest_many.
 *
 * Owns: hashing an Array of strings and returning its digests. The
 * strings are locked (batch.c) and the batch is submitted holding the GVL
 * (hb_submit only queues), then waited for without it (batch_wait.c); an
 * abandoned batch (an interrupt raised in the wait) is cancelled before its
 * strings are unlocked, in an rb_ensure. A small batch on an engine whose
 * pool takes jobs is hashed inline instead (inline_ok).
 * A big one is split into PIECES jobs, so that what needs the GVL overlaps
 * the hashing instead of preceding and following it: all are locked and
 * submitted first (the engine hashes the first while the next ones are
 * locked), then each is waited for and its digests made into strings
 * while the later ones hash (unless the GVL comes back late: then the rest
 * is waited for at once, gvl_contended). Measured on 600,000 x 4 KiB strings (2-core
 * Zen 5): locking took 23-73 ms and the result strings 47-171 ms (the
 * first call of a process pays for growing Ruby's heap) beside 200-240 ms
 * of hashing, all in sequence as one job.
 * Must not: keep anything of the batch after the call returns.
 */
#include "engine_parts.h"

/* inline_ok: a small batch (under gvl_threshold bytes) on an engine
 * whose pool takes jobs is hashed right here, holding the GVL
 * (hb_sha1_batch does not queue it): cheaper than any hand-off. */
static int inline_ok(const batch *b)
{
    if (b->n > 64 || !b->eng->pool_takes_jobs)
        return 0;
    size_t total = 0;
    for (size_t i = 0; i < b->n; i++)
        total += b->msgs[i].len;
    return total < hb_ext_gvl_threshold();
}

typedef struct {
    batch *b;
    VALUE ary;
} sync_call;

static VALUE sync_body(VALUE p)
{
    sync_call *c = (sync_call *)p;
    batch *b = c->b;
    hb_ext_batch_fill(b, c->ary, 1);
    hb_ext_engine_ref_check(b->eng);
    if (inline_ok(b)) {
        pthread_rwlock_rdlock(&b->eng->lock);
        hb_status st = b->eng->e ? hb_sha1_batch(b->eng->e, b->msgs, b->n, b->out) : HB_ERR_CLOSED;
        pthread_rwlock_unlock(&b->eng->lock);
        b->status = st;
        b->finished = 1;
        return Qnil;
    }
    hb_ext_batch_submit(b);
    hb_ext_batch_wait(b, -1);
    return Qnil;
}

static VALUE sync_ensure(VALUE p)
{
    hb_ext_batch_release(((sync_call *)p)->b);
    return Qnil;
}

VALUE hb_ext_strings_array(VALUE strings)
{
    VALUE ary = rb_check_array_type(strings);
    if (NIL_P(ary))
        rb_raise(rb_eTypeError, "Hashbatch: expected an Array of Strings, got %s",
                 NIL_P(strings) ? "nil" : rb_obj_classname(strings));
    /* Filling a batch reads the elements holding the GVL, and runs no Ruby
     * code when each is a String, so no other thread can change the array
     * meanwhile: it is read in place (a copy of 600,000 elements cost up
     * to 13 ms). An element that needs to_str runs Ruby code, which may
     * switch threads: then the elements are read from a copy. */
    long n = RARRAY_LEN(ary);
    const VALUE *e = RARRAY_CONST_PTR(ary);
    for (long i = 0; i < n; i++)
        if (!RB_TYPE_P(e[i], T_STRING))
            return rb_ary_dup(ary);
    return ary;
}

/* A batch is split in pieces from this many strings (below it, the
 * serial work is a few milliseconds at most). */
#define PIPELINE_MIN_STRINGS 32768
#define PIECES 8

typedef struct {
    VALUE ary, result;
    VALUE objs[PIECES];
    batch *pieces[PIECES];
    int npieces;
    own_locks own; /* the pieces' own locks, shared across them */
} pipeline;

/* gvl_contended: after b's wait, whether the GVL came back late: another
 * Ruby thread kept it (a thread that never blocks keeps it for Ruby's 100
 * ms time slice). Then each further wait could cost as much, and the rest
 * of the batch is waited for at once: measured beside such a thread, 8
 * waits made a 70 ms batch take 500 ms. Late is 10 wakes of a sleeping
 * thread, as measured when the extension loaded (gvl_params.c). */
static int gvl_contended(const batch *b)
{
    return b->gvl_back_ns > 10 * hb_gvl_params_get()->wake_ns;
}

typedef struct {
    batch *b;
    VALUE into;
    VALUE gc_was_disabled;
} append_call;

static VALUE append_body(VALUE p)
{
    append_call *a = (append_call *)p;
    hb_ext_batch_append_result(a->b, a->into);
    return Qnil;
}

static VALUE append_ensure(VALUE p)
{
    if (!RTEST(((append_call *)p)->gc_was_disabled))
        rb_gc_enable();
    return Qnil;
}

/* append_without_gc: b's digests onto into, with the GC off meanwhile.
 * Every object made there is kept (pushed onto into), and no other
 * thread runs Ruby meanwhile (the GVL is held), so a collection could free
 * nothing of it: on the first big call of a process, while Ruby's heap
 * grows to hold the new strings, it ran 8 collections that cost about
 * 100 of 400 ms (600,000 hex digests). Garbage made before waits a few
 * milliseconds more. */
static void append_without_gc(batch *b, VALUE into)
{
    append_call a = {b, into, Qfalse};
    if (b->status == HB_OK)
        a.gc_was_disabled = rb_gc_disable();
    else
        a.gc_was_disabled = Qtrue; /* it raises at once: nothing to switch */
    rb_ensure(append_body, (VALUE)&a, append_ensure, (VALUE)&a);
}

static VALUE pipeline_body(VALUE p)
{
    pipeline *pl = (pipeline *)p;
    long n = RARRAY_LEN(pl->ary);
    for (int k = 0; k < pl->npieces; k++) {
        batch *b = pl->pieces[k];
        pl->own.nbatches = k + 1;
        hb_ext_batch_fill_from(b, pl->ary, n * k / pl->npieces, 1, &pl->own);
        hb_ext_engine_ref_check(b->eng);
        hb_ext_batch_submit(b);
    }
    int contended = 0;
    for (int k = 0; k < pl->npieces; k++) {
        batch *b = pl->pieces[k];
        if (contended && !hb_ext_batch_poll(b))
            hb_ext_batch_wait(pl->pieces[pl->npieces - 1], -1); /* once, for the rest */
        if (!hb_ext_batch_poll(b)) {
            hb_ext_batch_wait(b, -1);
            contended = contended || gvl_contended(b);
        }
        hb_ext_batch_release(b); /* its strings are free at once */
        append_without_gc(b, pl->result);
    }
    return Qnil;
}

static VALUE pipeline_ensure(VALUE p)
{
    pipeline *pl = (pipeline *)p;
    hb_ext_own_locks_free(&pl->own);
    for (int k = 0; k < pl->npieces; k++)
        hb_ext_batch_release(pl->pieces[k]);
    return Qnil;
}

/* hash_pipelined: hb_ext_hash_sync of a big ary, in PIECES jobs. */
static VALUE hash_pipelined(engine_ref *r, VALUE ary, int hex)
{
    pipeline pl;
    long n = RARRAY_LEN(ary);
    pl.ary = ary;
    pl.result = rb_ary_new_capa(n);
    pl.npieces = 0;
    pl.own = (own_locks){pl.pieces, 0, NULL, 0, 0};
    for (int k = 0; k < PIECES; k++) {
        long first = n * k / PIECES, end = n * (k + 1) / PIECES;
        pl.objs[k] = hb_ext_batch_new(0, r, (size_t)(end - first), hex, &pl.pieces[k]);
        pl.npieces = k + 1;
    }
    rb_ensure(pipeline_body, (VALUE)&pl, pipeline_ensure, (VALUE)&pl);
    RB_GC_GUARD(ary);
    for (int k = 0; k < PIECES; k++)
        RB_GC_GUARD(pl.objs[k]);
    return pl.result;
}

VALUE hb_ext_hash_sync(engine_ref *r, VALUE ary, int hex)
{
    hb_ext_engine_ref_check(r);
    if (RARRAY_LEN(ary) >= PIPELINE_MIN_STRINGS)
        return hash_pipelined(r, ary, hex);
    batch *b;
    VALUE obj = hb_ext_batch_new(0, r, (size_t)RARRAY_LEN(ary), hex, &b);
    sync_call c = {b, ary};
    rb_ensure(sync_body, (VALUE)&c, sync_ensure, (VALUE)&c);
    VALUE result = hb_ext_batch_result(b);
    RB_GC_GUARD(obj);
    RB_GC_GUARD(ary);
    return result;
}
