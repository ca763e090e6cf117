/*
 * nogvl.c - every call the extension makes without the GVL, counted.
 *
 * Owns: hb_nogvl (rb_nogvl with a count) and the counts behind
 * Hashbatch.gvl_released_calls. A call is counted from inside, once the
 * function runs without the GVL (a call rb_nogvl skips, an interrupt being
 * pending, is not counted), so the count is evidence the GVL was released,
 * whatever the machine's load: the gem's tests assert on it.
 * Must not: decide when to release the GVL (the callers do), or count
 * anything that did not run without it.
 */
#include "hb_ext.h"

#include <stdatomic.h>

static atomic_long released[HB_NOGVL_KINDS];
static const char *const kind_names[HB_NOGVL_KINDS] = {
    [HB_NOGVL_HASH] = "hash", [HB_NOGVL_WAIT] = "wait", [HB_NOGVL_OTHER] = "other"};

typedef struct {
    hb_nogvl_kind kind;
    void *(*fn)(void *);
    void *arg;
} counted_call;

static void *counted(void *p)
{
    counted_call *c = p;
    atomic_fetch_add_explicit(&released[c->kind], 1, memory_order_relaxed);
    return c->fn(c->arg);
}

void *hb_nogvl(hb_nogvl_kind kind, void *(*fn)(void *), void *arg, rb_unblock_function_t *ubf,
               void *ubf_arg, int flags)
{
    counted_call c = {kind, fn, arg};
    return rb_nogvl(counted, &c, ubf, ubf_arg, flags);
}

/* Hashbatch.gvl_released_calls(kind = nil): how many calls this process
 * made without the GVL since the extension loaded: all of them, or those
 * of kind :hash (Hashbatch::SHA1 hashing), :wait (waits for a batch, a
 * job, a files job or a turn) or :other (opening, closing, cancelling). */
static VALUE s_gvl_released_calls(int argc, VALUE *argv, VALUE self)
{
    VALUE kind;
    rb_scan_args(argc, argv, "01", &kind);
    if (NIL_P(kind)) {
        long total = 0;
        for (int k = 0; k < HB_NOGVL_KINDS; k++)
            total += atomic_load(&released[k]);
        return LONG2NUM(total);
    }
    for (int k = 0; k < HB_NOGVL_KINDS; k++)
        if (SYMBOL_P(kind) && rb_intern(kind_names[k]) == SYM2ID(kind))
            return LONG2NUM(atomic_load(&released[k]));
    rb_raise(rb_eArgError,
             "gvl_released_calls: kind must be nil, :hash, :wait or :other (got %" PRIsVALUE ")",
             rb_inspect(kind));
}

void hb_ext_init_nogvl(void)
{
    rb_define_singleton_method(hb_mHashbatch, "gvl_released_calls", s_gvl_released_calls, -1);
}
