/*
 * job.c - Hashbatch::Job: a batch submitted at once and waited for later.
 *
 * Owns: the Job class (value, wait, done?, cancel, size) and submitting
 * one (Engine#submit). A job holds frozen snapshots of its strings
 * (batch.c), so it needs no lock on the caller's strings; it lets go of
 * its hb_job and snapshots once finished and no thread waits on it.
 * A job abandoned by an interrupted wait keeps running (wait again, or
 * cancel); one dropped unwaited is cancelled when it is collected.
 * Must not: reach into Engine objects (it gets the engine_ref), or hash.
 */
#include "engine_parts.h"

#include <unistd.h>

static VALUE cJob;

static batch *job_get(VALUE self)
{
    return hb_ext_batch_get(self);
}

/* job_settle: once finished and no thread waits on it any more, the job
 * lets go of its hb_job and snapshots. */
static void job_settle(batch *b)
{
    if (b->finished && b->waiters == 0)
        hb_ext_batch_release(b);
}

/* wait(timeout = nil): true once finished, false if timeout seconds
 * passed first. Interruptible. */
static VALUE job_wait(int argc, VALUE *argv, VALUE self)
{
    VALUE timeout;
    rb_scan_args(argc, argv, "01", &timeout);
    double t = -1;
    if (!NIL_P(timeout)) {
        t = NUM2DBL(timeout);
        if (t < 0)
            rb_raise(rb_eArgError, "Hashbatch::Job#wait: timeout must be >= 0, got %g", t);
    }
    batch *b = job_get(self);
    if (!b->finished && b->eng->pid != getpid())
        rb_raise(hb_ext_error_class(HB_ERR_CLOSED),
                 "Hashbatch::Job was submitted in another process");
    int done = hb_ext_batch_wait(b, t);
    job_settle(b);
    return done ? Qtrue : Qfalse;
}

/* value: waits, then the digests (raises the job's error). */
static VALUE job_value(VALUE self)
{
    job_wait(0, NULL, self);
    return hb_ext_batch_result(job_get(self));
}

static VALUE job_done_p(VALUE self)
{
    batch *b = job_get(self);
    if (!b->finished && b->job != NULL && b->eng->pid == getpid()) {
        hb_status st = hb_job_wait(b->job, 0);
        if (st != HB_ERR_TIMEOUT) {
            b->status = st;
            b->finished = 1;
            job_settle(b);
        }
    }
    return b->finished ? Qtrue : Qfalse;
}

/* cancel: stops the job (without the GVL while the engine lets go of
 * it); value then raises Hashbatch::CancelledError (unless it had
 * finished). */
static VALUE job_cancel(VALUE self)
{
    batch *b = job_get(self);
    if (b->finished || b->job == NULL)
        return self;
    hb_ext_batch_cancel(b);
    job_settle(b);
    return self;
}

static VALUE job_size(VALUE self)
{
    return SIZET2NUM(job_get(self)->n);
}

typedef struct {
    batch *b;
    VALUE ary;
} submit_call;

static VALUE submit_body(VALUE p)
{
    submit_call *c = (submit_call *)p;
    hb_ext_batch_fill(c->b, c->ary, 0);
    hb_ext_batch_submit(c->b);
    return Qnil;
}

VALUE hb_ext_job_submit(engine_ref *r, VALUE engine, VALUE ary, int hex)
{
    batch *b;
    VALUE job = hb_ext_batch_new(cJob, r, (size_t)RARRAY_LEN(ary), hex, &b);
    rb_ivar_set(job, rb_intern("@engine"), engine);
    submit_call c = {b, ary};
    submit_body((VALUE)&c);
    RB_GC_GUARD(ary);
    return job;
}

void hb_ext_init_jobs(void)
{
    cJob = rb_define_class_under(hb_mHashbatch, "Job", rb_cObject);
    rb_undef_alloc_func(cJob);
    rb_define_method(cJob, "value", job_value, 0);
    rb_define_method(cJob, "wait", job_wait, -1);
    rb_define_method(cJob, "done?", job_done_p, 0);
    rb_define_method(cJob, "cancel", job_cancel, 0);
    rb_define_method(cJob, "size", job_size, 0);
}
