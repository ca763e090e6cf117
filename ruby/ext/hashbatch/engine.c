/*
 * engine.c - Hashbatch::Engine, Hashbatch::Job and the default engine.
 *
 * Owns: the Ruby objects around hb_engine and hb_job, and the waits:
 *  - A batch is submitted holding the GVL (hb_submit only queues) and
 *    waited for without it, in slices of WAIT_SLICE_NS; the unblocking
 *    function ends the current slice, so Ctrl-C, Thread#raise, Thread#kill
 *    and Timeout interrupt a wait at once (within one slice at worst).
 *  - A synchronous batch (sha1_many, hexdigest_many) locks its strings
 *    (pin.c: one already locked is read from a private copy): a writer
 *    gets an exception. An abandoned batch is cancelled
 *    (hb_job_cancel returns once the engine no longer reads the strings)
 *    before they are unlocked, in an rb_ensure.
 *  - A Job (submit) keeps frozen copy-on-write snapshots of its strings
 *    (rb_str_new_frozen: no bytes copied for long strings), so the caller
 *    may change their strings at once and the job still hashes what it was
 *    given, and no lock outlives a job dropped without a wait.
 *  - Either way the batch object marks its strings with rb_gc_mark, which
 *    keeps them alive and pins them against GC.compact; the bytes of
 *    embedded strings (23 bytes at most, inside their objects) are copied
 *    into the batch besides (batch_point).
 *  - Engines remember the pid that opened them: a forked child gets a
 *    fresh default engine on first use and refuses a parent's Engine
 *    object (its threads did not survive the fork); nothing of the
 *    parent's is closed or freed in the child.
 *  - hb_engine_close must not overlap cancel or free of its jobs: a
 *    read-write lock per engine (cancel/free/submit read, close writes).
 * Must not: hash messages itself (the library does).
 */
#include "hb_ext.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_SLICE_NS (10 * 1000 * 1000LL)

static VALUE cEngine, cJob;

/* The process that first touched OpenCL (an engine that may use a device,
 * or the device list). OpenCL runtimes such as pocl keep threads that a
 * fork does not copy, so a forked child must not call OpenCL again: there
 * auto means the OpenSSL pool, and opencl is refused with a clear error. */
static pid_t opencl_pid;
static pthread_mutex_t opencl_pid_mutex = PTHREAD_MUTEX_INITIALIZER;

/* opencl_forked: 1 if OpenCL was touched by an ancestor of this process. */
static int opencl_forked(void)
{
    pthread_mutex_lock(&opencl_pid_mutex);
    pid_t p = opencl_pid;
    pthread_mutex_unlock(&opencl_pid_mutex);
    return p != 0 && p != getpid();
}

static void opencl_touch(void)
{
    pthread_mutex_lock(&opencl_pid_mutex);
    if (opencl_pid == 0)
        opencl_pid = getpid();
    pthread_mutex_unlock(&opencl_pid_mutex);
}

/* fork_safe_config: in a child of an OpenCL process, auto becomes cpu and
 * opencl raises; elsewhere notes that OpenCL may be touched now. */
static void fork_safe_config(hb_config *cfg)
{
    const char *env = cfg->use_environment ? getenv("HASHBATCH_BACKEND") : NULL;
    hb_backend_kind kind = cfg->backend;
    if (env != NULL)
        hb_backend_parse(env, &kind);
    if (kind == HB_BACKEND_CPU)
        return;
    if (!opencl_forked()) {
        opencl_touch();
        return;
    }
    if (kind == HB_BACKEND_OPENCL)
        rb_raise(hb_ext_error_class(HB_ERR_NO_OPENCL),
                 "Hashbatch: OpenCL cannot be used in process %ld: it was forked from process %ld, "
                 "which had started OpenCL (its runtime threads do not survive a fork); use backend: \"cpu\"",
                 (long)getpid(), (long)opencl_pid);
    cfg->backend = HB_BACKEND_CPU;
    cfg->use_environment = 0;
}

/* ---- shared engine state ------------------------------------------- */

typedef struct {
    hb_engine *e;            /* NULL once closed */
    pid_t pid;               /* the process that opened it */
    pthread_rwlock_t lock;   /* read: submit, cancel, free; write: close */
    atomic_uint refs;
    int pool_takes_jobs;     /* the OpenSSL pool hashes queued jobs, so
                                hb_sha1_batch hashes small batches inline */
} engine_ref;

/* pool_takes_jobs: whether an engine opened with cfg has its CPU pool
 * take jobs (backend cpu, or auto with device "all", as hashbatch.h says),
 * unless the environment may have changed that. */
static int pool_takes_jobs(const hb_config *cfg, hb_engine *e)
{
    if (hb_engine_backend(e) == HB_BACKEND_CPU)
        return 1;
    if (cfg->use_environment && (getenv("HASHBATCH_BACKEND") || getenv("HASHBATCH_DEVICE")))
        return 0;
    return cfg->backend == HB_BACKEND_AUTO && cfg->device != NULL && strcmp(cfg->device, "all") == 0;
}

static engine_ref *engine_ref_new(hb_engine *e, const hb_config *cfg)
{
    engine_ref *r = ruby_xcalloc(1, sizeof(*r));
    r->e = e;
    r->pool_takes_jobs = pool_takes_jobs(cfg, e);
    r->pid = getpid();
    r->refs = 1;
    pthread_rwlock_init(&r->lock, NULL);
    return r;
}

/* engine_ref_close: closes the engine once, in the process that opened
 * it; in a forked child it only forgets it. Blocks while batches finish. */
static void *engine_ref_close(void *p)
{
    engine_ref *r = p;
    if (r->pid != getpid()) {
        r->e = NULL; /* a parent's: its threads and lock holders are gone */
        return NULL;
    }
    pthread_rwlock_wrlock(&r->lock);
    hb_engine *e = r->e;
    r->e = NULL;
    hb_engine_close(e);
    pthread_rwlock_unlock(&r->lock);
    return NULL;
}

static void engine_ref_unref(engine_ref *r)
{
    if (r == NULL || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    engine_ref_close(r);
    if (r->pid == getpid())
        pthread_rwlock_destroy(&r->lock);
    ruby_xfree(r);
}

/* engine_ref_check: raises unless r can take work in this process. */
static void engine_ref_check(const engine_ref *r)
{
    if (r->pid != getpid())
        rb_raise(hb_ext_error_class(HB_ERR_CLOSED),
                 "Hashbatch::Engine opened in process %ld cannot be used in process %ld "
                 "(after fork, open a new Engine)",
                 (long)r->pid, (long)getpid());
    if (r->e == NULL)
        rb_raise(hb_ext_error_class(HB_ERR_CLOSED), "Hashbatch::Engine is closed");
}

/* ---- batches -------------------------------------------------------- */

typedef struct {
    engine_ref *eng;
    hb_job *job;            /* while submitted and not yet freed */
    hb_msg *msgs;
    hb_digest *out;
    size_t n;
    VALUE *strs;            /* pinned while the engine may read them */
    size_t nstrs;
    VALUE *locked;          /* locked (pin.c), to unlock */
    size_t nlocked;
    char *embedded;         /* copies of embedded strings' bytes (see batch_point) */
    int hex;                /* results as hex text */
    int finished;           /* status is the outcome */
    int waiters;            /* threads in batch_wait: the job outlives them */
    hb_status status;
    VALUE result;
} batch;

static void batch_mark(void *p)
{
    batch *b = p;
    for (size_t i = 0; i < b->nstrs; i++)
        rb_gc_mark(b->strs[i]);
    rb_gc_mark(b->result);
}

/* batch_drop_job: cancels (if unfinished) and frees the hb_job; only in
 * the process that opened the engine. */
static void batch_drop_job(batch *b)
{
    if (b->job == NULL)
        return;
    if (b->eng->pid == getpid()) {
        pthread_rwlock_rdlock(&b->eng->lock);
        hb_job_free(b->job);
        pthread_rwlock_unlock(&b->eng->lock);
    }
    b->job = NULL;
}

static void batch_free(void *p)
{
    batch *b = p;
    batch_drop_job(b);
    engine_ref_unref(b->eng);
    ruby_xfree(b->msgs);
    ruby_xfree(b->out);
    ruby_xfree(b->strs);
    ruby_xfree(b->locked);
    ruby_xfree(b->embedded);
    ruby_xfree(b);
}

static size_t batch_memsize(const void *p)
{
    const batch *b = p;
    return sizeof(*b) + b->n * (sizeof(hb_msg) + sizeof(hb_digest) + 2 * sizeof(VALUE));
}

static const rb_data_type_t batch_type = {
    .wrap_struct_name = "Hashbatch::Job",
    .function = {.dmark = batch_mark, .dfree = batch_free, .dsize = batch_memsize},
    .flags = 0};

/* batch_new: an empty batch for n strings on r (takes a reference). */
static VALUE batch_new(VALUE klass, engine_ref *r, size_t n, int hex, batch **out)
{
    batch *b;
    VALUE obj = TypedData_Make_Struct(klass, batch, &batch_type, b);
    b->result = Qnil;
    b->msgs = ALLOC_N(hb_msg, n ? n : 1);
    b->out = ALLOC_N(hb_digest, n ? n : 1);
    b->strs = ALLOC_N(VALUE, n ? n : 1);
    b->locked = ALLOC_N(VALUE, n ? n : 1);
    b->n = n;
    b->hex = hex;
    atomic_fetch_add(&r->refs, 1);
    b->eng = r;
    *out = b;
    return obj;
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

/* batch_fill: takes every string of ary; locks them (lock) or keeps
 * frozen snapshots (!lock). May raise: what was locked is in b->locked. */
static void batch_fill(batch *b, VALUE ary, int lock)
{
    for (size_t i = 0; i < b->n; i++) {
        VALUE s = element_string(ary, (long)i);
        int locked = 0;
        if (lock)
            s = hb_str_hold(s, &locked);
        else
            s = rb_str_new_frozen(s);
        b->strs[b->nstrs++] = s;
        if (locked)
            b->locked[b->nlocked++] = s;
    }
    batch_point(b);
}

/* batch_submit: hands the batch to the engine. */
static void batch_submit(batch *b)
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

/* batch_release: the engine is done with the strings (finished, or
 * cancelled here): unlock them and let them go. Holds the GVL, as
 * hb_job_cancel waits only for work already on a worker. */
static void batch_release(batch *b)
{
    batch_drop_job(b);
    while (b->nlocked > 0)
        hb_str_release(b->locked[--b->nlocked]);
    b->nstrs = 0;
}

/* ---- waiting without the GVL ------------------------------------------ */

typedef struct {
    hb_job *job;
    int64_t deadline_ns;   /* CLOCK_MONOTONIC; < 0: none */
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

/* wait_loop: the waiting proper (see batch_wait). */
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

/* batch_wait: waits up to timeout_s seconds (< 0: forever) without the
 * GVL, running interrupts as they come (they may raise). Returns 1 when the
 * job has finished (b->status set), 0 on timeout. b->waiters counts the
 * threads inside, so none frees the job under another. */
static int batch_wait(batch *b, double timeout_s)
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

/* batch_result: the digests as an Array (binary or hex strings); raises
 * the job's error if it did not succeed. */
static VALUE batch_result(batch *b)
{
    if (b->status != HB_OK) {
        engine_ref *r = b->eng;
        hb_ext_raise(b->status, r->pid == getpid() ? r->e : NULL, "Hashbatch: batch");
    }
    if (!NIL_P(b->result))
        return b->result;
    VALUE ary = rb_ary_new_capa((long)b->n);
    char hex[40];
    for (size_t i = 0; i < b->n; i++) {
        if (b->hex) {
            hb_hex40(b->out[i], hex);
            rb_ary_push(ary, rb_usascii_str_new(hex, 40));
        } else {
            rb_ary_push(ary, rb_str_new((const char *)b->out[i], 20));
        }
    }
    b->result = ary;
    return ary;
}

/* ---- synchronous batches --------------------------------------------- */

typedef struct {
    batch *b;
    VALUE ary;
} sync_call;

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

static VALUE sync_body(VALUE p)
{
    sync_call *c = (sync_call *)p;
    batch *b = c->b;
    batch_fill(b, c->ary, 1);
    engine_ref_check(b->eng);
    if (inline_ok(b)) {
        pthread_rwlock_rdlock(&b->eng->lock);
        hb_status st = b->eng->e ? hb_sha1_batch(b->eng->e, b->msgs, b->n, b->out) : HB_ERR_CLOSED;
        pthread_rwlock_unlock(&b->eng->lock);
        b->status = st;
        b->finished = 1;
        return Qnil;
    }
    batch_submit(b);
    batch_wait(b, -1);
    return Qnil;
}

static VALUE sync_ensure(VALUE p)
{
    batch_release(((sync_call *)p)->b);
    return Qnil;
}

/* strings_array: the argument as an Array, or a TypeError. */
static VALUE strings_array(VALUE strings)
{
    VALUE ary = rb_check_array_type(strings);
    if (NIL_P(ary))
        rb_raise(rb_eTypeError, "Hashbatch: expected an Array of Strings, got %s",
                 NIL_P(strings) ? "nil" : rb_obj_classname(strings));
    return rb_ary_dup(ary); /* the caller may change theirs meanwhile */
}

/* hash_sync: digests of strings on r, waiting without the GVL. */
static VALUE hash_sync(engine_ref *r, VALUE strings, int hex)
{
    VALUE ary = strings_array(strings);
    engine_ref_check(r);
    batch *b;
    VALUE obj = batch_new(0, r, (size_t)RARRAY_LEN(ary), hex, &b);
    sync_call c = {b, ary};
    rb_ensure(sync_body, (VALUE)&c, sync_ensure, (VALUE)&c);
    VALUE result = batch_result(b);
    RB_GC_GUARD(obj);
    RB_GC_GUARD(ary);
    return result;
}

/* ---- Hashbatch::Engine ----------------------------------------------- */

typedef struct {
    engine_ref *ref;
} engine_obj;

static void engine_free(void *p)
{
    engine_obj *o = p;
    engine_ref_unref(o->ref);
    ruby_xfree(o);
}

static const rb_data_type_t engine_type = {
    .wrap_struct_name = "Hashbatch::Engine",
    .function = {.dmark = NULL, .dfree = engine_free, .dsize = NULL},
    .flags = 0};

static VALUE engine_alloc(VALUE klass)
{
    engine_obj *o;
    return TypedData_Make_Struct(klass, engine_obj, &engine_type, o);
}

static engine_ref *engine_get(VALUE self)
{
    engine_obj *o;
    TypedData_Get_Struct(self, engine_obj, &engine_type, o);
    if (o->ref == NULL)
        rb_raise(rb_eRuntimeError, "Hashbatch::Engine not initialized");
    return o->ref;
}

typedef struct {
    hb_config cfg;
    hb_engine *e;
    hb_status st;
    int ran;
    char error[1024];
} open_arg;

static void *open_nogvl(void *p)
{
    open_arg *a = p;
    a->ran = 1;
    a->st = hb_engine_open(&a->e, &a->cfg);
    if (a->st != HB_OK)
        snprintf(a->error, sizeof a->error, "%s", hb_engine_last_error(NULL));
    return NULL;
}

/* open_engine: opens an engine without the GVL (a kernel build takes
 * seconds); raises the mapped error on failure. */
static hb_engine *open_engine(hb_config *cfg)
{
    fork_safe_config(cfg);
    open_arg a;
    memset(&a, 0, sizeof a);
    a.cfg = *cfg;
    rb_nogvl(open_nogvl, &a, NULL, NULL, RB_NOGVL_INTR_FAIL);
    if (!a.ran)
        open_nogvl(&a);
    if (a.st != HB_OK)
        hb_ext_raise_text(a.st, a.error, "Hashbatch: opening an engine");
    return a.e;
}

/* kw_string: the keyword's value as a C string, or NULL when absent. */
static const char *kw_string(VALUE v, const char *name)
{
    if (v == Qundef || NIL_P(v))
        return NULL;
    if (SYMBOL_P(v))
        v = rb_sym2str(v);
    if (!RB_TYPE_P(v, T_STRING))
        rb_raise(rb_eTypeError, "Hashbatch::Engine.new: %s must be a String or Symbol, got %s",
                 name, rb_obj_classname(v));
    return StringValueCStr(v);
}

/* initialize(backend: nil, device: nil, verify: nil, cpu_threads: nil).
 * With no keyword at all, HASHBATCH_BACKEND/DEVICE/VERIFY apply. */
static VALUE engine_initialize(int argc, VALUE *argv, VALUE self)
{
    VALUE opts;
    rb_scan_args(argc, argv, ":", &opts);
    ID keys[4] = {rb_intern("backend"), rb_intern("device"), rb_intern("verify"),
                  rb_intern("cpu_threads")};
    VALUE vals[4] = {Qundef, Qundef, Qundef, Qundef};
    if (!NIL_P(opts))
        rb_get_kwargs(opts, keys, 0, 4, vals);
    hb_config cfg;
    hb_config_init(&cfg);
    const char *backend = kw_string(vals[0], "backend");
    const char *device = kw_string(vals[1], "device");
    const char *verify = kw_string(vals[2], "verify");
    if (backend && hb_backend_parse(backend, &cfg.backend) != HB_OK)
        rb_raise(rb_eArgError, "Hashbatch::Engine.new: unknown backend \"%s\" (expected auto, opencl or cpu)",
                 backend);
    if (verify && hb_verify_parse(verify, &cfg.verify) != HB_OK)
        rb_raise(rb_eArgError, "Hashbatch::Engine.new: unknown verify mode \"%s\" (expected off, sample or full)",
                 verify);
    if (vals[3] != Qundef && !NIL_P(vals[3])) {
        long t = NUM2LONG(vals[3]);
        if (t < 0 || t > 4096)
            rb_raise(rb_eArgError, "Hashbatch::Engine.new: cpu_threads must be 0..4096, got %ld", t);
        cfg.cpu_threads = (unsigned)t;
    }
    cfg.device = device;
    if (backend || device || verify)
        cfg.use_environment = 0;
    engine_obj *o;
    TypedData_Get_Struct(self, engine_obj, &engine_type, o);
    if (o->ref != NULL)
        rb_raise(rb_eRuntimeError, "Hashbatch::Engine already initialized");
    o->ref = engine_ref_new(open_engine(&cfg), &cfg);
    return self;
}

static VALUE engine_sha1_many(VALUE self, VALUE strings)
{
    return hash_sync(engine_get(self), strings, 0);
}

static VALUE engine_hexdigest_many(VALUE self, VALUE strings)
{
    return hash_sync(engine_get(self), strings, 1);
}

typedef struct {
    batch *b;
    VALUE ary;
} submit_call;

static VALUE submit_body(VALUE p)
{
    submit_call *c = (submit_call *)p;
    batch_fill(c->b, c->ary, 0);
    batch_submit(c->b);
    return Qnil;
}

/* submit(strings, hex: false): a Hashbatch::Job, at once. */
static VALUE engine_submit(int argc, VALUE *argv, VALUE self)
{
    VALUE strings, opts;
    rb_scan_args(argc, argv, "1:", &strings, &opts);
    int hex = 0;
    if (!NIL_P(opts)) {
        ID key = rb_intern("hex");
        VALUE v = Qundef;
        rb_get_kwargs(opts, &key, 0, 1, &v);
        hex = v != Qundef && RTEST(v);
    }
    engine_ref *r = engine_get(self);
    VALUE ary = strings_array(strings);
    engine_ref_check(r);
    batch *b;
    VALUE job = batch_new(cJob, r, (size_t)RARRAY_LEN(ary), hex, &b);
    rb_ivar_set(job, rb_intern("@engine"), self);
    submit_call c = {b, ary};
    submit_body((VALUE)&c);
    RB_GC_GUARD(ary);
    return job;
}

static VALUE engine_close(VALUE self)
{
    engine_ref *r = engine_get(self);
    if (r->e == NULL)
        return Qnil;
    rb_nogvl(engine_ref_close, r, NULL, NULL, RB_NOGVL_INTR_FAIL);
    if (r->e != NULL)
        engine_ref_close(r);
    return Qnil;
}

static VALUE engine_closed_p(VALUE self)
{
    return engine_get(self)->e == NULL ? Qtrue : Qfalse;
}

/* stats_hash: hb_stats as a Hash with Symbol keys. */
static VALUE stats_hash(const hb_stats *s)
{
    VALUE h = rb_hash_new();
#define HB_EXT_STAT_(field) rb_hash_aset(h, ID2SYM(rb_intern(#field)), ULL2NUM(s->field))
    HB_EXT_STAT_(messages);
    HB_EXT_STAT_(bytes);
    HB_EXT_STAT_(batches);
    HB_EXT_STAT_(jobs_submitted);
    HB_EXT_STAT_(jobs_completed);
    HB_EXT_STAT_(jobs_cancelled);
    HB_EXT_STAT_(device_launches);
    HB_EXT_STAT_(device_bytes);
    HB_EXT_STAT_(cpu_bytes);
    HB_EXT_STAT_(verified);
    HB_EXT_STAT_(verify_mismatches);
    HB_EXT_STAT_(fallbacks);
    HB_EXT_STAT_(device_errors);
    HB_EXT_STAT_(queue_messages);
    HB_EXT_STAT_(queue_jobs);
#undef HB_EXT_STAT_
    rb_hash_aset(h, ID2SYM(rb_intern("quarantined")), INT2NUM(s->quarantined));
    VALUE devs = rb_ary_new();
    for (unsigned i = 0; i < s->ndevices && i < HB_STATS_MAX_DEVICES; i++) {
        const hb_device_stats *d = &s->device[i];
        VALUE dh = rb_hash_new();
        rb_hash_aset(dh, ID2SYM(rb_intern("name")), rb_str_new_cstr(d->name));
        rb_hash_aset(dh, ID2SYM(rb_intern("cpu")), d->is_cpu ? Qtrue : Qfalse);
#define HB_EXT_DSTAT_(field) rb_hash_aset(dh, ID2SYM(rb_intern(#field)), ULL2NUM(d->field))
        HB_EXT_DSTAT_(messages);
        HB_EXT_DSTAT_(bytes);
        HB_EXT_DSTAT_(batches);
        HB_EXT_DSTAT_(launches);
        HB_EXT_DSTAT_(busy_ns);
        HB_EXT_DSTAT_(errors);
#undef HB_EXT_DSTAT_
        rb_hash_aset(dh, ID2SYM(rb_intern("quarantined")), d->quarantined ? Qtrue : Qfalse);
        rb_ary_push(devs, dh);
    }
    rb_hash_aset(h, ID2SYM(rb_intern("devices")), devs);
    return h;
}

static VALUE engine_stats(VALUE self)
{
    engine_ref *r = engine_get(self);
    engine_ref_check(r);
    hb_stats s;
    pthread_rwlock_rdlock(&r->lock);
    hb_status st = r->e ? hb_engine_stats(r->e, &s) : HB_ERR_CLOSED;
    pthread_rwlock_unlock(&r->lock);
    if (st != HB_OK)
        hb_ext_raise(st, NULL, "Hashbatch::Engine#stats");
    return stats_hash(&s);
}

static VALUE engine_describe(VALUE self)
{
    engine_ref *r = engine_get(self);
    engine_ref_check(r);
    return rb_str_new_cstr(hb_engine_describe(r->e));
}

static VALUE engine_backend(VALUE self)
{
    engine_ref *r = engine_get(self);
    engine_ref_check(r);
    return ID2SYM(rb_intern(hb_backend_name(hb_engine_backend(r->e))));
}

/* devices_list: every OpenCL device (hb_devices_list) as Hashes. */
static VALUE devices_list(VALUE self)
{
    if (opencl_forked())
        rb_raise(hb_ext_error_class(HB_ERR_NO_OPENCL),
                 "Hashbatch.devices: OpenCL cannot be used in a process forked from one that had started it");
    opencl_touch();
    size_t count = 0;
    hb_status st = hb_devices_list(NULL, 0, &count);
    if (st != HB_OK)
        hb_ext_raise(st, NULL, "Hashbatch.devices");
    hb_device_info *info = ALLOC_N(hb_device_info, count ? count : 1);
    size_t got = count;
    st = hb_devices_list(info, count, &got);
    if (got < count)
        count = got;
    VALUE ary = rb_ary_new();
    for (size_t i = 0; st == HB_OK && i < count; i++) {
        const hb_device_info *d = &info[i];
        VALUE h = rb_hash_new();
        rb_hash_aset(h, ID2SYM(rb_intern("spec")), rb_sprintf("%u:%u", d->platform_index, d->device_index));
        rb_hash_aset(h, ID2SYM(rb_intern("platform")), rb_str_new_cstr(d->platform_name));
        rb_hash_aset(h, ID2SYM(rb_intern("name")), rb_str_new_cstr(d->name));
        rb_hash_aset(h, ID2SYM(rb_intern("vendor")), rb_str_new_cstr(d->vendor));
        rb_hash_aset(h, ID2SYM(rb_intern("version")), rb_str_new_cstr(d->version));
        rb_hash_aset(h, ID2SYM(rb_intern("driver_version")), rb_str_new_cstr(d->driver_version));
        rb_hash_aset(h, ID2SYM(rb_intern("type")), ID2SYM(rb_intern(hb_device_type_name(d->type))));
        rb_hash_aset(h, ID2SYM(rb_intern("compute_units")), UINT2NUM(d->compute_units));
        rb_hash_aset(h, ID2SYM(rb_intern("max_clock_mhz")), UINT2NUM(d->max_clock_mhz));
        rb_hash_aset(h, ID2SYM(rb_intern("global_mem_bytes")), ULL2NUM(d->global_mem_bytes));
        rb_hash_aset(h, ID2SYM(rb_intern("available")), d->available ? Qtrue : Qfalse);
        rb_hash_aset(h, ID2SYM(rb_intern("auto_pick")), d->auto_pick ? Qtrue : Qfalse);
        rb_ary_push(ary, h);
    }
    xfree(info);
    if (st != HB_OK)
        hb_ext_raise(st, NULL, "Hashbatch.devices");
    return ary;
}

/* ---- files -------------------------------------------------------- */

#ifdef HAVE_HB_SUBMIT_FILES
typedef struct {
    engine_ref *r;
    VALUE paths;
    int hex, raise_errors;
} files_arg;

static VALUE files_locked_body(VALUE p)
{
    files_arg *a = (files_arg *)p;
    if (a->r->e == NULL)
        rb_raise(hb_ext_error_class(HB_ERR_CLOSED), "Hashbatch::Engine is closed");
    return hb_ext_file_digests(a->r->e, a->paths, a->hex, a->raise_errors);
}

static VALUE files_unlock(VALUE p)
{
    pthread_rwlock_unlock(&((files_arg *)p)->r->lock);
    return Qnil;
}

/* file_digests(paths, hex: false, errors: :raise): see files.c; the engine
 * cannot close while the files job runs (the read lock is held). */
static VALUE file_digests_on(engine_ref *r, int argc, VALUE *argv)
{
    VALUE paths, opts;
    rb_scan_args(argc, argv, "1:", &paths, &opts);
    files_arg a = {r, paths, 0, 1};
    if (!NIL_P(opts)) {
        ID keys[2] = {rb_intern("hex"), rb_intern("errors")};
        VALUE v[2] = {Qundef, Qundef};
        rb_get_kwargs(opts, keys, 0, 2, v);
        a.hex = v[0] != Qundef && RTEST(v[0]);
        if (v[1] != Qundef) {
            if (v[1] == ID2SYM(rb_intern("return")))
                a.raise_errors = 0;
            else if (v[1] != ID2SYM(rb_intern("raise")))
                rb_raise(rb_eArgError, "file_digests: errors: must be :raise or :return, got %" PRIsVALUE,
                         rb_inspect(v[1]));
        }
    }
    engine_ref_check(r);
    pthread_rwlock_rdlock(&r->lock);
    return rb_ensure(files_locked_body, (VALUE)&a, files_unlock, (VALUE)&a);
}

static VALUE engine_file_digests(int argc, VALUE *argv, VALUE self)
{
    return file_digests_on(engine_get(self), argc, argv);
}
#endif

/* ---- Hashbatch::Job ---------------------------------------------------- */

static batch *job_get(VALUE self)
{
    batch *b;
    TypedData_Get_Struct(self, batch, &batch_type, b);
    return b;
}

/* job_settle: once finished and no thread waits on it any more, the job
 * lets go of its hb_job and snapshots. */
static void job_settle(batch *b)
{
    if (b->finished && b->waiters == 0)
        batch_release(b);
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
        rb_raise(hb_ext_error_class(HB_ERR_CLOSED), "Hashbatch::Job was submitted in another process");
    int done = batch_wait(b, t);
    job_settle(b);
    return done ? Qtrue : Qfalse;
}

/* value: waits, then the digests (raises the job's error). */
static VALUE job_value(VALUE self)
{
    job_wait(0, NULL, self);
    return batch_result(job_get(self));
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

/* cancel: stops the job; value then raises Hashbatch::CancelledError
 * (unless it had finished). */
static VALUE job_cancel(VALUE self)
{
    batch *b = job_get(self);
    if (b->finished || b->job == NULL)
        return self;
    if (b->eng->pid == getpid()) {
        pthread_rwlock_rdlock(&b->eng->lock);
        hb_job_cancel(b->job);
        pthread_rwlock_unlock(&b->eng->lock);
        b->status = hb_job_wait(b->job, 0);
        b->finished = 1;
    }
    job_settle(b);
    return self;
}

static VALUE job_size(VALUE self)
{
    return SIZET2NUM(job_get(self)->n);
}

/* ---- the default engine ------------------------------------------------ */

static engine_ref *default_ref;
static pthread_mutex_t default_mutex = PTHREAD_MUTEX_INITIALIZER;
/* The default engine: the library's auto backend with device "all" (the
 * OpenCL devices and the OpenSSL pool side by side), measured fastest
 * for hexdigest_many here (bench/ruby); HASHBATCH_* still override. */
static hb_backend_kind default_backend = HB_BACKEND_AUTO;
static const char *default_device = "all";

/* default_engine: the process's default engine, opened on first use (and
 * again in a forked child: the parent's is left alone, never closed). */
static engine_ref *default_engine(void)
{
    pthread_mutex_lock(&default_mutex);
    engine_ref *r = default_ref;
    if (r != NULL && r->pid == getpid()) {
        pthread_mutex_unlock(&default_mutex);
        return r;
    }
    pthread_mutex_unlock(&default_mutex);
    hb_config cfg;
    hb_config_init(&cfg);
    cfg.backend = default_backend;
    cfg.device = default_device;
    hb_engine *e = open_engine(&cfg);
    pthread_mutex_lock(&default_mutex);
    if (default_ref != NULL && default_ref->pid == getpid()) {
        pthread_mutex_unlock(&default_mutex);
        hb_engine_close(e); /* another thread won the race */
        return default_ref;
    }
    default_ref = engine_ref_new(e, &cfg); /* a forked parent's is forgotten */
    r = default_ref;
    pthread_mutex_unlock(&default_mutex);
    return r;
}

/* close_default_at_exit: an end proc: the default engine is closed while
 * Ruby exits, before the C runtime's exit handlers tear down OpenCL and
 * OpenSSL under its threads. Only in the process that opened it. */
static void close_default_at_exit(VALUE unused)
{
    pthread_mutex_lock(&default_mutex);
    engine_ref *r = default_ref;
    if (r != NULL && r->pid == getpid())
        default_ref = NULL;
    else
        r = NULL;
    pthread_mutex_unlock(&default_mutex);
    if (r != NULL)
        engine_ref_unref(r);
}

static VALUE m_sha1_many(VALUE mod, VALUE strings)
{
    VALUE ary = strings_array(strings);
    return hash_sync(default_engine(), ary, 0);
}

static VALUE m_hexdigest_many(VALUE mod, VALUE strings)
{
    VALUE ary = strings_array(strings);
    return hash_sync(default_engine(), ary, 1);
}

#ifdef HAVE_HB_SUBMIT_FILES
static VALUE m_file_digests(int argc, VALUE *argv, VALUE mod)
{
    return file_digests_on(default_engine(), argc, argv);
}
#endif

static VALUE m_default_engine_description(VALUE mod)
{
    return rb_str_new_cstr(hb_engine_describe(default_engine()->e));
}

static VALUE m_default_engine_stats(VALUE mod)
{
    hb_stats s;
    hb_status st = hb_engine_stats(default_engine()->e, &s);
    if (st != HB_OK)
        hb_ext_raise(st, NULL, "Hashbatch.default_engine_stats");
    return stats_hash(&s);
}

void hb_ext_init_engine(void)
{
    cEngine = rb_define_class_under(hb_mHashbatch, "Engine", rb_cObject);
    rb_define_alloc_func(cEngine, engine_alloc);
    rb_define_method(cEngine, "initialize", engine_initialize, -1);
    rb_define_method(cEngine, "sha1_many", engine_sha1_many, 1);
    rb_define_method(cEngine, "hexdigest_many", engine_hexdigest_many, 1);
    rb_define_method(cEngine, "submit", engine_submit, -1);
    rb_define_method(cEngine, "stats", engine_stats, 0);
    rb_define_method(cEngine, "devices", devices_list, 0);
    rb_define_method(cEngine, "describe", engine_describe, 0);
    rb_define_method(cEngine, "backend", engine_backend, 0);
    rb_define_method(cEngine, "close", engine_close, 0);
    rb_define_method(cEngine, "closed?", engine_closed_p, 0);

    cJob = rb_define_class_under(hb_mHashbatch, "Job", rb_cObject);
    rb_undef_alloc_func(cJob);
    rb_define_method(cJob, "value", job_value, 0);
    rb_define_method(cJob, "wait", job_wait, -1);
    rb_define_method(cJob, "done?", job_done_p, 0);
    rb_define_method(cJob, "cancel", job_cancel, 0);
    rb_define_method(cJob, "size", job_size, 0);

    rb_set_end_proc(close_default_at_exit, Qnil);
    rb_define_module_function(hb_mHashbatch, "sha1_many", m_sha1_many, 1);
    rb_define_module_function(hb_mHashbatch, "hexdigest_many", m_hexdigest_many, 1);
    rb_define_module_function(hb_mHashbatch, "devices", devices_list, 0);
#ifdef HAVE_HB_SUBMIT_FILES
    rb_define_method(cEngine, "file_digests", engine_file_digests, -1);
    rb_define_module_function(hb_mHashbatch, "file_digests", m_file_digests, -1);
#endif
    rb_define_module_function(hb_mHashbatch, "default_engine_description", m_default_engine_description, 0);
    rb_define_module_function(hb_mHashbatch, "default_engine_stats", m_default_engine_stats, 0);
}
