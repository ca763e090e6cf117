/*
 * sync.c - synchronous batches: sha1_many and hexdigest_many.
 *
 * Owns: hashing an Array of strings and returning its digests. The
 * strings are locked (batch.c) and the batch is submitted holding the GVL
 * (hb_submit only queues), then waited for without it (batch_wait.c); an
 * abandoned batch (an interrupt raised in the wait) is cancelled before its
 * strings are unlocked, in an rb_ensure. A small batch on an engine whose
 * pool takes jobs is hashed inline instead (inline_ok).
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
    return rb_ary_dup(ary); /* the caller may change theirs meanwhile */
}

VALUE hb_ext_hash_sync(engine_ref *r, VALUE strings, int hex)
{
    VALUE ary = hb_ext_strings_array(strings);
    hb_ext_engine_ref_check(r);
    batch *b;
    VALUE obj = hb_ext_batch_new(0, r, (size_t)RARRAY_LEN(ary), hex, &b);
    sync_call c = {b, ary};
    rb_ensure(sync_body, (VALUE)&c, sync_ensure, (VALUE)&c);
    VALUE result = hb_ext_batch_result(b);
    RB_GC_GUARD(obj);
    RB_GC_GUARD(ary);
    return result;
}
