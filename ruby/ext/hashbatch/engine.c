/*
 * engine.c - Hashbatch::Engine: an engine of the caller's own.
 *
 * Owns: the Engine class: opening one from keywords (backend, device,
 * verify, cpu_threads, priority; the library validates their values, and its
 * message is the ArgumentError's), its methods (sha1_many, hexdigest_many, submit,
 * file_digests, stats, devices, describe, backend, close, closed?), and
 * closing it without the GVL (batches still on it finish first).
 * Must not: hash, wait or lock strings itself (sync.c, job.c and batch.c
 * do), or touch the default engine (default_engine.c).
 */
#include "engine_parts.h"

#include <limits.h>
#include <string.h>

static VALUE cEngine;

typedef struct {
    engine_ref *ref;
} engine_obj;

static void engine_free(void *p)
{
    engine_obj *o = p;
    hb_ext_engine_ref_unref(o->ref);
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

/* cpu_threads_value: the cpu_threads keyword as hb_config holds it. The
 * upper bound is the library's: hb_engine_open rejects a count above it
 * with a message naming it (hb_ext_open_engine raises that as an
 * ArgumentError), so none is stated here. */
static unsigned cpu_threads_value(VALUE v)
{
    long t = NUM2LONG(v);
    if (t < 0)
        rb_raise(rb_eArgError,
                 "Hashbatch::Engine.new: cpu_threads must be >= 0 (0: one per core), got %ld", t);
    if ((unsigned long)t > UINT_MAX)
        rb_raise(rb_eArgError,
                 "Hashbatch::Engine.new: cpu_threads %ld does not fit in an unsigned int", t);
    return (unsigned)t;
}

/* priority_value: the priority keyword (:normal or :idle, String or
 * Symbol) as hb_config.idle_priority holds it. */
static int priority_value(VALUE v)
{
    const char *p = kw_string(v, "priority");
    if (strcmp(p, "idle") == 0)
        return 1;
    if (strcmp(p, "normal") == 0)
        return 0;
    rb_raise(rb_eArgError,
             "Hashbatch::Engine.new: unknown priority \"%s\" (expected normal or idle)", p);
}

/* initialize(backend: nil, device: nil, verify: nil, cpu_threads: nil,
 * priority: nil). With none of backend, device, verify and priority
 * given, the HASHBATCH_* variables apply. */
static VALUE engine_initialize(int argc, VALUE *argv, VALUE self)
{
    VALUE opts;
    rb_scan_args(argc, argv, ":", &opts);
    ID keys[5] = {rb_intern("backend"), rb_intern("device"), rb_intern("verify"),
                  rb_intern("cpu_threads"), rb_intern("priority")};
    VALUE vals[5] = {Qundef, Qundef, Qundef, Qundef, Qundef};
    if (!NIL_P(opts))
        rb_get_kwargs(opts, keys, 0, 5, vals);
    hb_config cfg;
    hb_config_init(&cfg);
    const char *backend = kw_string(vals[0], "backend");
    const char *device = kw_string(vals[1], "device");
    const char *verify = kw_string(vals[2], "verify");
    if (backend && hb_backend_parse(backend, &cfg.backend) != HB_OK)
        rb_raise(rb_eArgError,
                 "Hashbatch::Engine.new: unknown backend \"%s\" (expected auto, opencl or cpu)",
                 backend);
    if (verify && hb_verify_parse(verify, &cfg.verify) != HB_OK)
        rb_raise(rb_eArgError,
                 "Hashbatch::Engine.new: unknown verify mode \"%s\" (expected off, sample or full)",
                 verify);
    if (vals[3] != Qundef && !NIL_P(vals[3]))
        cfg.cpu_threads = cpu_threads_value(vals[3]);
    cfg.device = device;
    int priority_given = vals[4] != Qundef && !NIL_P(vals[4]);
    if (priority_given)
        cfg.idle_priority = priority_value(vals[4]);
    if (backend || device || verify || priority_given)
        cfg.use_environment = 0;
    engine_obj *o;
    TypedData_Get_Struct(self, engine_obj, &engine_type, o);
    if (o->ref != NULL)
        rb_raise(rb_eRuntimeError, "Hashbatch::Engine already initialized");
    o->ref = hb_ext_engine_ref_new(hb_ext_open_engine(&cfg), &cfg);
    return self;
}

static VALUE engine_sha1_many(VALUE self, VALUE strings)
{
    engine_ref *r = engine_get(self);
    return hb_ext_hash_sync(r, hb_ext_strings_array(strings), 0);
}

static VALUE engine_hexdigest_many(VALUE self, VALUE strings)
{
    engine_ref *r = engine_get(self);
    return hb_ext_hash_sync(r, hb_ext_strings_array(strings), 1);
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
    VALUE ary = hb_ext_strings_array(strings);
    hb_ext_engine_ref_check(r);
    return hb_ext_job_submit(r, self, ary, hex);
}

static VALUE engine_close(VALUE self)
{
    engine_ref *r = engine_get(self);
    if (r->e == NULL)
        return Qnil;
    hb_nogvl(HB_NOGVL_OTHER, hb_ext_engine_ref_close, r, NULL, NULL, RB_NOGVL_INTR_FAIL);
    if (r->e != NULL)
        hb_ext_engine_ref_close(r);
    return Qnil;
}

static VALUE engine_closed_p(VALUE self)
{
    return engine_get(self)->e == NULL ? Qtrue : Qfalse;
}

static VALUE engine_stats(VALUE self)
{
    engine_ref *r = engine_get(self);
    hb_ext_engine_ref_check(r);
    hb_stats s;
    pthread_rwlock_rdlock(&r->lock);
    hb_status st = r->e ? hb_engine_stats(r->e, &s) : HB_ERR_CLOSED;
    pthread_rwlock_unlock(&r->lock);
    if (st != HB_OK)
        hb_ext_raise(st, NULL, "Hashbatch::Engine#stats");
    return hb_ext_stats_hash(&s);
}

static VALUE engine_describe(VALUE self)
{
    engine_ref *r = engine_get(self);
    hb_ext_engine_ref_check(r);
    return rb_str_new_cstr(hb_engine_describe(r->e));
}

static VALUE engine_backend(VALUE self)
{
    engine_ref *r = engine_get(self);
    hb_ext_engine_ref_check(r);
    return ID2SYM(rb_intern(hb_backend_name(hb_engine_backend(r->e))));
}

#ifdef HAVE_HB_SUBMIT_FILES
static VALUE engine_file_digests(int argc, VALUE *argv, VALUE self)
{
    return hb_ext_file_digests_on(engine_get(self), argc, argv);
}
#endif

void hb_ext_init_engine(void)
{
    cEngine = rb_define_class_under(hb_mHashbatch, "Engine", rb_cObject);
    rb_define_alloc_func(cEngine, engine_alloc);
    rb_define_method(cEngine, "initialize", engine_initialize, -1);
    rb_define_method(cEngine, "sha1_many", engine_sha1_many, 1);
    rb_define_method(cEngine, "hexdigest_many", engine_hexdigest_many, 1);
    rb_define_method(cEngine, "submit", engine_submit, -1);
    rb_define_method(cEngine, "stats", engine_stats, 0);
    rb_define_method(cEngine, "devices", hb_ext_devices, 0);
    rb_define_method(cEngine, "describe", engine_describe, 0);
    rb_define_method(cEngine, "backend", engine_backend, 0);
    rb_define_method(cEngine, "close", engine_close, 0);
    rb_define_method(cEngine, "closed?", engine_closed_p, 0);
#ifdef HAVE_HB_SUBMIT_FILES
    rb_define_method(cEngine, "file_digests", engine_file_digests, -1);
#endif
}
