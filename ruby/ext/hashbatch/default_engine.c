/*
 * default_engine.c - the process's default engine and the module
 * functions on it: Hashbatch.sha1_many, hexdigest_many, file_digests,
 * devices, default_engine_description and default_engine_stats.
 *
 * Owns: the default engine: the library's auto backend with device "all"
 * (the OpenCL devices and the OpenSSL pool side by side), measured
 * fastest for hexdigest_many here (bench/ruby); HASHBATCH_* still
 * override. Opened lazily on first use, and again in a forked child (the
 * parent's is left alone, never closed there); closed by an end proc
 * while Ruby exits, before the C runtime's exit handlers tear down OpenCL
 * and OpenSSL under its threads.
 * Must not: touch Engine objects (engine.c), or hash.
 */
#include "engine_parts.h"

#include <unistd.h>

static engine_ref *default_ref;
static pthread_mutex_t default_mutex = PTHREAD_MUTEX_INITIALIZER;
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
    hb_engine *e = hb_ext_open_engine(&cfg);
    pthread_mutex_lock(&default_mutex);
    if (default_ref != NULL && default_ref->pid == getpid()) {
        pthread_mutex_unlock(&default_mutex);
        hb_engine_close(e); /* another thread won the race */
        return default_ref;
    }
    default_ref = hb_ext_engine_ref_new(e, &cfg); /* a forked parent's is forgotten */
    r = default_ref;
    pthread_mutex_unlock(&default_mutex);
    return r;
}

/* close_default_at_exit: an end proc: the default engine is closed while
 * Ruby exits. Only in the process that opened it. */
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
        hb_ext_engine_ref_unref(r);
}

/* The argument is checked before the default engine opens: a TypeError
 * opens nothing. */
static VALUE m_sha1_many(VALUE mod, VALUE strings)
{
    VALUE ary = hb_ext_strings_array(strings);
    return hb_ext_hash_sync(default_engine(), ary, 0);
}

static VALUE m_hexdigest_many(VALUE mod, VALUE strings)
{
    VALUE ary = hb_ext_strings_array(strings);
    return hb_ext_hash_sync(default_engine(), ary, 1);
}

#ifdef HAVE_HB_SUBMIT_FILES
static VALUE m_file_digests(int argc, VALUE *argv, VALUE mod)
{
    return hb_ext_file_digests_on(default_engine(), argc, argv);
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
    return hb_ext_stats_hash(&s);
}

void hb_ext_init_default_engine(void)
{
    rb_set_end_proc(close_default_at_exit, Qnil);
    rb_define_module_function(hb_mHashbatch, "sha1_many", m_sha1_many, 1);
    rb_define_module_function(hb_mHashbatch, "hexdigest_many", m_hexdigest_many, 1);
    rb_define_module_function(hb_mHashbatch, "devices", hb_ext_devices, 0);
#ifdef HAVE_HB_SUBMIT_FILES
    rb_define_module_function(hb_mHashbatch, "file_digests", m_file_digests, -1);
#endif
    rb_define_module_function(hb_mHashbatch, "default_engine_description",
                              m_default_engine_description, 0);
    rb_define_module_function(hb_mHashbatch, "default_engine_stats", m_default_engine_stats, 0);
}
