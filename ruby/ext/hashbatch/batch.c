/*
 * batch.c - a batch of Ruby strings handed to the engine as one hb_job.
 *
 * Owns: the batch object (a hidden one for sha1_many, a Hashbatch::Job for
 * submit), its messages, digests and hb_job, and keeping its strings safe
 * while the engine reads them:
 *  - A synchronous batch locks its strings (pin.c: a lock of its own, or
 *    a share of the lock of strings that one-shot readers hold; one that
 *    something else locked is read from a private copy): a writer gets an
 *    exception.
 *  - A Job keeps frozen copy-on-write snapshots of its strings
 *    (rb_str_new_frozen: no bytes copied for long strings), so the caller
 *    may change their strings at once and the job still hashes what it was
 *    given, and no lock outlives a job dropped without a wait.
 *  - Either way the batch object marks its strings with rb_gc_mark, which
 *    keeps them alive and pins them against GC.compact; the bytes of
 *    embedded strings (23 bytes at most, inside their objects) are copied
 *    into the batch besides (batch_point).
 *  - The hb_job is freed (hb_job_free cancels an unfinished one and returns
 *    once the engine no longer reads the strings) before they are
 *    unlocked, and only in the process that opened the engine. The cancel
 *    of an abandoned batch runs without the GVL (the engine may need a
 *    while to let go of a long message), except from the GC's free
 *    function.
 * Must not: wait for the job (batch_wait.c does), or hash.
 */
#include "engine_parts.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void batch_mark(void *p)
{
    batch *b = p;
    for (size_t i = 0; i < b->nstrs; i++)
        rb_gc_mark(b->strs[i]);
    rb_gc_mark(b->result);
}

typedef struct {
    batch *b;
    int free_job; /* hb_job_free (cancels first) rather than hb_job_cancel */
    int ran;
} cancel_arg;

/* cancel_nogvl: cancels the unfinished job, and frees it if asked; the
 * library returns once the engine no longer reads its messages. Needs no
 * GVL; the read lock keeps hb_engine_close out meanwhile. */
static void *cancel_nogvl(void *p)
{
    cancel_arg *a = p;
    engine_ref *r = a->b->eng;
    a->ran = 1;
    hb_ext_probe(HB_PROBE_BATCH_CANCEL, NULL);
    pthread_rwlock_rdlock(&r->lock);
    if (a->free_job)
        hb_job_free(a->b->job);
    else
        hb_job_cancel(a->b->job);
    pthread_rwlock_unlock(&r->lock);
    return NULL;
}

/* cancel_released: cancel_nogvl with the GVL released, so other threads
 * run while the engine finishes what its workers hold; holding it when an
 * interrupt is already pending (rb_nogvl then runs nothing). Never
 * raises: it may run in an ensure. */
static void cancel_released(batch *b, int free_job)
{
    cancel_arg a = {b, free_job, 0};
    hb_nogvl(HB_NOGVL_OTHER, cancel_nogvl, &a, NULL, NULL, RB_NOGVL_INTR_FAIL);
    if (!a.ran)
        cancel_nogvl(&a);
}

/* batch_drop_job: cancels (if unfinished) and frees the hb_job; only in
 * the process that opened the engine. release_gvl: cancel without the
 * GVL (not from a GC free function, where the GVL must stay held). */
static void batch_drop_job(batch *b, int release_gvl)
{
    if (b->job == NULL)
        return;
    if (b->eng->pid == getpid()) {
        if (!b->finished && release_gvl) {
            cancel_released(b, 1);
        } else {
            pthread_rwlock_rdlock(&b->eng->lock);
            hb_job_free(b->job);
            pthread_rwlock_unlock(&b->eng->lock);
        }
    }
    b->job = NULL;
}

static void batch_free(void *p)
{
    batch *b = p;
    batch_drop_job(b, 0);
    hb_ext_engine_ref_unref(b->eng);
    ruby_xfree(b->msgs);
    ruby_xfree(b->out);
    ruby_xfree(b->strs);
    ruby_xfree(b->locked);
    ruby_xfree(b->lock_kind);
    ruby_xfree(b->embedded);
    ruby_xfree(b);
}

static size_t batch_memsize(const void *p)
{
    const batch *b = p;
    return sizeof(*b) + b->n * (sizeof(hb_msg) + sizeof(hb_digest) + 2 * sizeof(VALUE) + 1);
}

static const rb_data_type_t batch_type = {
    .wrap_struct_name = "Hashbatch::Job",
    .function = {.dmark = batch_mark, .dfree = batch_free, .dsize = batch_memsize},
    .flags = 0};

VALUE hb_ext_batch_new(VALUE klass, engine_ref *r, size_t n, int hex, batch **out)
{
    batch *b;
    VALUE obj = TypedData_Make_Struct(klass, batch, &batch_type, b);
    b->result = Qnil;
    b->msgs = ALLOC_N(hb_msg, n ? n : 1);
    b->out = ALLOC_N(hb_digest, n ? n : 1);
    b->strs = ALLOC_N(VALUE, n ? n : 1);
    b->locked = ALLOC_N(VALUE, n ? n : 1);
    b->lock_kind = ALLOC_N(unsigned char, n ? n : 1);
    b->n = n;
    b->hex = hex;
    hb_ext_engine_ref_take(r);
    b->eng = r;
    *out = b;
    return obj;
}

batch *hb_ext_batch_get(VALUE obj)
{
    batch *b;
    TypedData_Get_Struct(obj, batch, &batch_type, b);
    return b;
}

/* element_string: strings[i] as a String, or a TypeError naming i. */
static VALUE element_string(VALUE ary, long i)
{
    VALUE s = rb_ary_entry(ary, i);
    if (RB_TYPE_P(s, T_STRING))
        return s;
    VALUE t = rb_check_string_type(s);
    if (NIL_P(t))
        rb_raise(rb_eTypeError, "Hashbatch: element %ld is %s, not a String", i,
                 NIL_P(s) ? "nil" : rb_obj_classname(s));
    return t;
}

static int is_embedded(VALUE s)
{
    return !FL_TEST_RAW(s, RSTRING_NOEMBED);
}

/* batch_point: points the messages at the held strings' bytes. An
 * embedded string (up to 23 bytes) keeps its bytes inside its object, on a
 * page of Ruby's heap; while GC.compact moves other objects, Ruby 3.1
 * protects such pages and repairs them from its SIGSEGV handler, which
 * crashes when the reader is not a Ruby thread and a Ractor has existed
 * (Segmentation fault at 0x30: test_compaction_after_a_ractor_*). Engine
 * threads must read no heap page, so those bytes are copied into the
 * batch (23 bytes each at most); longer strings' buffers are malloc'd.
 * Allocates before taking any pointer (an allocation may run the GC). */
static void batch_point(batch *b)
{
    size_t embedded_bytes = 0;
    for (size_t i = 0; i < b->n; i++)
        if (is_embedded(b->strs[i]))
            embedded_bytes += (size_t)RSTRING_LEN(b->strs[i]);
    if (embedded_bytes > 0)
        b->embedded = ALLOC_N(char, embedded_bytes);
    char *next = b->embedded;
    for (size_t i = 0; i < b->n; i++) {
        VALUE s = b->strs[i];
        size_t len = (size_t)RSTRING_LEN(s);
        b->msgs[i].len = len;
        b->msgs[i].data = RSTRING_PTR(s);
        if (is_embedded(s) && len > 0) {
            memcpy(next, RSTRING_PTR(s), len);
            b->msgs[i].data = next;
            next += len;
        }
    }
}

typedef struct {
    batch *b;
    VALUE ary;
    int lock;
    own_locks own;
} fill_call;

static VALUE fill_body(VALUE p)
{
    fill_call *c = (fill_call *)p;
    hb_ext_batch_fill_from(c->b, c->ary, 0, c->lock, &c->own);
    return Qnil;
}

static VALUE fill_ensure(VALUE p)
{
    hb_ext_own_locks_free(&((fill_call *)p)->own);
    return Qnil;
}

void hb_ext_batch_fill(batch *b, VALUE ary, int lock)
{
    fill_call c = {b, ary, lock, {NULL, 1, NULL, 0, 0}};
    c.own.batches = &c.b;
    rb_ensure(fill_body, (VALUE)&c, fill_ensure, (VALUE)&c);
}

/* ---- the call's own locks, indexed when one comes again ------------- */

struct own_lock {
    VALUE s; /* 0: empty */
    batch *b;
    size_t i; /* b->locked[i] */
};

static size_t own_home(VALUE s, size_t mask)
{
    return (size_t)(((uint64_t)s >> 3) * 0x9E3779B97F4A7C15ull >> 24) & mask;
}

static struct own_lock *own_find(own_locks *o, VALUE s)
{
    size_t i = own_home(s, o->mask);
    while (o->slot[i].s != 0 && o->slot[i].s != s)
        i = (i + 1) & o->mask;
    return &o->slot[i];
}

/* own_add: indexes b->locked[i] (an own lock); 0 if memory ran out. */
static int own_add(own_locks *o, batch *b, size_t i)
{
    if ((o->used + 1) * 2 > o->mask + 1) {
        size_t old_mask = o->mask;
        struct own_lock *old = o->slot;
        size_t slots = (old_mask + 1) * 2;
        struct own_lock *fresh = calloc(slots, sizeof *fresh);
        if (fresh == NULL)
            return 0;
        o->slot = fresh;
        o->mask = slots - 1;
        for (size_t k = 0; k <= old_mask; k++)
            if (old[k].s != 0)
                *own_find(o, old[k].s) = old[k];
        free(old);
    }
    struct own_lock *e = own_find(o, b->locked[i]);
    if (e->s == 0) {
        *e = (struct own_lock){b->locked[i], b, i};
        o->used++;
    }
    return 1;
}

/* own_build: the index of every own lock of the call so far (empty, but
 * there, when there is none). */
static int own_build(own_locks *o)
{
    o->slot = calloc(64, sizeof *o->slot);
    if (o->slot == NULL)
        return 0;
    o->mask = 63;
    o->used = 0;
    for (int k = 0; k < o->nbatches; k++)
        for (size_t i = 0; i < o->batches[k]->nlocked; i++)
            if (o->batches[k]->lock_kind[i] == HB_PIN_OWN && !own_add(o, o->batches[k], i))
                return 0;
    return 1;
}

void hb_ext_own_locks_free(own_locks *o)
{
    free(o->slot);
    o->slot = NULL;
    o->mask = o->used = 0;
}

/* hold_busy: s is locked and no readers share it: if the call locked it
 * itself, that lock becomes shared with this reader (no copy); else s is
 * read from a private copy (another call's batch, or someone else, holds
 * its lock). */
static VALUE hold_busy(own_locks *o, VALUE s, int *locked)
{
    *locked = HB_PIN_NONE;
    if (o->slot == NULL && !own_build(o))
        return hb_str_private_copy(s);
    struct own_lock *e = own_find(o, s);
    if (e->s == s && hb_str_share_own(s, 2)) {
        e->b->lock_kind[e->i] = HB_PIN_SHARED;
        *locked = HB_PIN_SHARED;
        return s; /* now in the table: further places join it there */
    }
    return hb_str_private_copy(s);
}

void hb_ext_batch_fill_from(batch *b, VALUE ary, long first, int lock, own_locks *o)
{
    for (size_t i = 0; i < b->n; i++) {
        VALUE s = element_string(ary, first + (long)i);
        int locked = 0;
        if (lock)
            s = hb_str_hold_for_batch(s, &locked);
        else
            s = rb_str_new_frozen(s);
        if (locked == HB_PIN_BUSY)
            s = hold_busy(o, s, &locked);
        b->strs[b->nstrs++] = s;
        if (locked != HB_PIN_NONE) {
            b->locked[b->nlocked] = s;
            b->lock_kind[b->nlocked++] = (unsigned char)locked;
            if (locked == HB_PIN_OWN && o->slot != NULL && !own_add(o, b, b->nlocked - 1))
                hb_ext_own_locks_free(o); /* rebuilt on the next busy one */
        }
    }
    batch_point(b);
}

void hb_ext_batch_submit(batch *b)
{
    engine_ref *r = b->eng;
    pthread_rwlock_rdlock(&r->lock);
    hb_status st = HB_ERR_CLOSED;
    if (r->e != NULL)
        st = hb_submit(r->e, b->msgs, b->n, b->out, &b->job);
    pthread_rwlock_unlock(&r->lock);
    if (st != HB_OK)
        hb_ext_raise(st, r->e, "Hashbatch: submitting a batch");
}

/* An unfinished job is cancelled without the GVL: the library returns as
 * soon as its workers let go of the messages. */
void hb_ext_batch_release(batch *b)
{
    batch_drop_job(b, 1);
    while (b->nlocked > 0) {
        b->nlocked--;
        hb_str_release(b->locked[b->nlocked], b->lock_kind[b->nlocked]);
    }
    b->nstrs = 0;
}

void hb_ext_batch_cancel(batch *b)
{
    if (b->finished || b->job == NULL || b->eng->pid != getpid())
        return;
    b->waiters++; /* no other thread frees the job meanwhile */
    cancel_released(b, 0);
    b->waiters--;
    b->status = hb_job_wait(b->job, 0);
    b->finished = 1;
}

VALUE hb_ext_batch_result(batch *b)
{
    if (b->status != HB_OK) {
        engine_ref *r = b->eng;
        hb_ext_raise(b->status, r->pid == getpid() ? r->e : NULL, "Hashbatch: batch");
    }
    if (!NIL_P(b->result))
        return b->result;
    VALUE ary = rb_ary_new_capa((long)b->n);
    hb_ext_batch_append_result(b, ary);
    b->result = ary;
    return ary;
}

void hb_ext_batch_append_result(batch *b, VALUE into)
{
    if (b->status != HB_OK) {
        engine_ref *r = b->eng;
        hb_ext_raise(b->status, r->pid == getpid() ? r->e : NULL, "Hashbatch: batch");
    }
    char hex[40];
    for (size_t i = 0; i < b->n; i++) {
        if (b->hex) {
            hb_hex40(b->out[i], hex);
            rb_ary_push(into, rb_usascii_str_new(hex, 40));
        } else {
            rb_ary_push(into, rb_str_new((const char *)b->out[i], 20));
        }
    }
}
