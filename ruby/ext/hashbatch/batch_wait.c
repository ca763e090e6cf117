/*
 * batch_wait.c - waiting for a batch's job without the GVL.
 *
 * Owns: the wait. A batch is waited for without the GVL, in slices of
 * WAIT_SLICE_NS; the unblocking function ends the current slice, so
 * Ctrl-C, Thread#raise, Thread#kill and Timeout interrupt a wait at once
 * (within one slice at worst), and the interrupt runs (and may raise) with
 * the GVL back. b->waiters counts the threads inside, so none frees the
 * job under another.
 * In a fiber with a non-blocking Fiber.scheduler (the async gem's reactor,
 * say), the wait goes through the scheduler instead: rb_io_wait on an IO
 * for the job's descriptor (hb_job_fd: readable once the job finishes), so
 * the thread's other fibers run meanwhile. That IO never closes the
 * descriptor, which stays the library's (autoclose: false).
 * It notes how long the GVL took to come back once the job had finished
 * (b->gvl_back_ns): long when another thread keeps it busy.
 * Must not: cancel or free the job (whoever abandons the batch does, in
 * an ensure), or take the engine's lock (hb_job_wait needs no engine).
 */
#include "engine_parts.h"

#include <ruby/io.h>
#include <ruby/version.h>
#include <time.h>

#if RUBY_API_VERSION_MAJOR > 3 || (RUBY_API_VERSION_MAJOR == 3 && RUBY_API_VERSION_MINOR >= 1)
#include <ruby/fiber/scheduler.h>
#define HB_FIBER_SCHEDULER 1
#endif

#define WAIT_SLICE_NS (10 * 1000 * 1000LL)

typedef struct {
    hb_job *job;
    int64_t deadline_ns; /* CLOCK_MONOTONIC; < 0: none */
    volatile int interrupted;
    hb_status st;
    int64_t done_ns; /* when the job was seen finished */
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
    w->done_ns = now_ns();
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
        c->w.done_ns = 0;
        hb_nogvl(HB_NOGVL_WAIT, wait_nogvl, &c->w, wait_ubf, &c->w, 0); /* may raise */
        if (c->w.st != HB_ERR_TIMEOUT) {
            c->b->status = c->w.st;
            c->b->finished = 1;
            c->b->gvl_back_ns = c->w.done_ns ? (uint64_t)(now_ns() - c->w.done_ns) : 0;
            return Qtrue;
        }
        if (c->w.deadline_ns >= 0 && now_ns() >= c->w.deadline_ns)
            return Qfalse;
        rb_thread_check_ints();
    }
}

#ifdef HB_FIBER_SCHEDULER
/* job_io: an IO for the job's descriptor that leaves it open, or nil
 * when the job has none (then the wait blocks the thread, as without a
 * scheduler). */
static VALUE job_io(hb_job *job)
{
    int fd = -1;
    if (hb_job_fd(job, &fd) != HB_OK || fd < 0)
        return Qnil;
    VALUE opts = rb_hash_new();
    rb_hash_aset(opts, ID2SYM(rb_intern("autoclose")), Qfalse);
    VALUE args[2] = {INT2NUM(fd), opts};
    return rb_funcallv_kw(rb_cIO, rb_intern("for_fd"), 2, args, RB_PASS_KEYWORDS);
}

/* fiber_wait_loop: the wait through the scheduler: the job's IO until it
 * is readable, then a look at the job (the descriptor stays readable). */
static VALUE fiber_wait_loop(wait_call *c, VALUE io)
{
    for (;;) {
        hb_status st = hb_job_wait(c->w.job, 0);
        if (st != HB_ERR_TIMEOUT) {
            c->b->status = st;
            c->b->finished = 1;
            return Qtrue;
        }
        VALUE timeout = Qnil;
        if (c->w.deadline_ns >= 0) {
            int64_t left = c->w.deadline_ns - now_ns();
            if (left <= 0)
                return Qfalse;
            timeout = DBL2NUM((double)left / 1e9);
        }
        rb_io_wait(io, RB_INT2NUM(RUBY_IO_READABLE), timeout); /* may raise */
    }
}
#endif

/* wait_any: through the fiber scheduler if the current fiber has one,
 * else without the GVL. */
static VALUE wait_any(VALUE p)
{
#ifdef HB_FIBER_SCHEDULER
    wait_call *c = (wait_call *)p;
    if (!NIL_P(rb_fiber_scheduler_current())) {
        VALUE io = job_io(c->w.job);
        if (!NIL_P(io)) {
            VALUE r = fiber_wait_loop(c, io);
            RB_GC_GUARD(io);
            return r;
        }
    }
#endif
    return wait_loop(p);
}

static VALUE wait_done(VALUE p)
{
    ((wait_call *)p)->b->waiters--;
    return Qnil;
}

int hb_ext_batch_poll(batch *b)
{
    if (b->finished)
        return 1;
    if (b->job == NULL)
        return 0;
    hb_status st = hb_job_wait(b->job, 0);
    if (st == HB_ERR_TIMEOUT)
        return 0;
    b->status = st;
    b->finished = 1;
    return 1;
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
    return RTEST(rb_ensure(wait_any, (VALUE)&c, wait_done, (VALUE)&c));
}
