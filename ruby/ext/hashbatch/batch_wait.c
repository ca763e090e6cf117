/*
 * batch_wait.c - waiting for a batch's job without the GVL.
 *
 * Owns: the wait. A batch is waited for without the GVL, in slices of
 * WAIT_SLICE_NS; the unblocking function ends the current slice, so
 * Ctrl-C, Thread#raise, Thread#kill and Timeout interrupt a wait at once
 * (within one slice at worst), and the interrupt runs (and may raise) with
 * the GVL back. b->waiters counts the threads inside, so none frees the
 * job under another.
 * Must not: cancel or free the job (whoever abandons the batch does, in
 * an ensure), or take the engine's lock (hb_job_wait needs no engine).
 */
#include "engine_parts.h"

#include <time.h>

#define WAIT_SLICE_NS (10 * 1000 * 1000LL)

typedef struct {
    hb_job *job;
    int64_t deadline_ns; /* CLOCK_MONOTONIC; < 0: none */
    volatile int interrupted;
    hb_status st;
} wait_arg;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* wait_nogvl: waits for the job in slices until it finishes, the deadline
 * passes or wait_ubf says stop. No GVL. */
static void *wait_nogvl(void *p)
{
    wait_arg *w = p;
    w->st = HB_ERR_TIMEOUT;
    hb_ext_probe(HB_PROBE_BATCH_WAIT, &w->interrupted);
    while (!w->interrupted) {
        int64_t slice = WAIT_SLICE_NS;
        if (w->deadline_ns >= 0) {
            int64_t left = w->deadline_ns - now_ns();
            if (left <= 0) {
                w->st = hb_job_wait(w->job, 0);
                break;
            }
            if (left < slice)
                slice = left;
        }
        w->st = hb_job_wait(w->job, slice);
        if (w->st != HB_ERR_TIMEOUT)
            break;
    }
    return NULL;
}

static void wait_ubf(void *p)
{
    ((wait_arg *)p)->interrupted = 1;
}

typedef struct {
    batch *b;
    wait_arg w;
} wait_call;

/* wait_loop: the waiting proper (see hb_ext_batch_wait). */
static VALUE wait_loop(VALUE p)
{
    wait_call *c = (wait_call *)p;
    for (;;) {
        c->w.interrupted = 0;
        rb_thread_call_without_gvl(wait_nogvl, &c->w, wait_ubf, &c->w); /* may raise */
        if (c->w.st != HB_ERR_TIMEOUT) {
            c->b->status = c->w.st;
            c->b->finished = 1;
            return Qtrue;
        }
        if (c->w.deadline_ns >= 0 && now_ns() >= c->w.deadline_ns)
            return Qfalse;
        rb_thread_check_ints();
    }
}

static VALUE wait_done(VALUE p)
{
    ((wait_call *)p)->b->waiters--;
    return Qnil;
}

int hb_ext_batch_wait(batch *b, double timeout_s)
{
    if (b->finished)
        return 1;
    wait_call c;
    c.b = b;
    c.w.job = b->job;
    c.w.deadline_ns = timeout_s < 0 ? -1 : now_ns() + (int64_t)(timeout_s * 1e9);
    b->waiters++;
    return RTEST(rb_ensure(wait_loop, (VALUE)&c, wait_done, (VALUE)&c));
}
