/*
 * files.c - Hashbatch.file_digests and Engine#file_digests: many files
 * hashed by the library's files jobs (hb_submit_files).
 *
 * Owns: the keywords (hex:, errors:), turning paths into a files job on an
 * engine_ref held open meanwhile (its read lock: the engine cannot close
 * while the files job runs), waiting for it without the GVL
 * (interruptible: an interrupt cancels the job and waits for its threads
 * before the exception goes on), and the per-file results: a digest, or a
 * Hashbatch::FileError naming the path and the cause.
 * Must not: read or hash files itself (the library does).
 */
#include "engine_parts.h"

#ifdef HAVE_HB_SUBMIT_FILES

#include <ruby/util.h>
#include <string.h>

#define FILES_SLICE_NS (10 * 1000 * 1000LL)

typedef struct {
    hb_engine *e;
    char **paths; /* copies: I/O threads read them without the GVL */
    hb_file_input *in;
    hb_file_result *out;
    size_t n;
    hb_files_job *job;
    volatile int interrupted;
    hb_status st;
} files_call;

static void *files_wait_nogvl(void *p)
{
    files_call *c = p;
    c->st = HB_ERR_TIMEOUT;
    hb_ext_probe(HB_PROBE_FILES_WAIT, &c->interrupted);
    while (!c->interrupted && (c->st = hb_files_job_wait(c->job, FILES_SLICE_NS)) == HB_ERR_TIMEOUT)
        ;
    return NULL;
}

static void files_ubf(void *p)
{
    ((files_call *)p)->interrupted = 1;
}

static VALUE files_body(VALUE p)
{
    files_call *c = (files_call *)p;
    hb_status st = hb_submit_files(c->e, c->in, c->n, c->out, NULL, &c->job);
    if (st != HB_OK)
        hb_ext_raise(st, c->e, "Hashbatch.file_digests");
    do {
        c->interrupted = 0;
        hb_nogvl(HB_NOGVL_WAIT, files_wait_nogvl, c, files_ubf, c, 0); /* may raise */
        if (c->st == HB_ERR_TIMEOUT)
            rb_thread_check_ints();
    } while (c->st == HB_ERR_TIMEOUT);
    return Qnil;
}

/* files_ensure: stops and frees the job (after an interrupt too) and the
 * copies; blocks only until the job's threads stop at their next chunk. */
static VALUE files_ensure(VALUE p)
{
    files_call *c = (files_call *)p;
    if (c->job != NULL) {
        hb_files_job_cancel(c->job);
        hb_files_job_free(c->job);
        c->job = NULL;
    }
    for (size_t i = 0; i < c->n; i++)
        ruby_xfree(c->paths[i]);
    ruby_xfree(c->paths);
    ruby_xfree(c->in);
    return Qnil;
}

/* file_error: the Hashbatch::FileError (or subclass) for one failed file. */
static VALUE file_error(VALUE path, const hb_file_result *r)
{
    VALUE klass = hb_ext_file_error_class(r->status);
    VALUE msg = r->status == HB_ERR_IO && r->err != 0
                    ? rb_sprintf("%" PRIsVALUE ": %s", path, strerror(r->err))
                    : rb_sprintf("%" PRIsVALUE ": %s", path, hb_status_str(r->status));
    VALUE exc = rb_exc_new_str(klass, msg);
    rb_ivar_set(exc, rb_intern("@path"), path);
    rb_ivar_set(exc, rb_intern("@errno"), r->err ? INT2NUM(r->err) : Qnil);
    rb_ivar_set(exc, rb_intern("@status"), INT2NUM((int)r->status));
    rb_ivar_set(exc, rb_intern("@status_name"), rb_str_new_cstr(hb_status_name(r->status)));
    rb_ivar_set(exc, rb_intern("@detail"), rb_str_new_cstr(""));
    return exc;
}

/* file_digests: one result per path of paths (an Array of Strings or
 * #to_path objects): the digest (hex text if hex), or the
 * Hashbatch::FileError for that file; raise_errors raises the first such
 * error instead, after every file is done. e must stay open meanwhile. */
static VALUE file_digests(hb_engine *e, VALUE paths, int hex, int raise_errors)
{
    VALUE ary = rb_check_array_type(paths);
    if (NIL_P(ary))
        rb_raise(rb_eTypeError, "Hashbatch.file_digests: expected an Array of paths, got %s",
                 NIL_P(paths) ? "nil" : rb_obj_classname(paths));
    ary = rb_ary_dup(ary);
    size_t n = (size_t)RARRAY_LEN(ary);
    VALUE names = rb_ary_new_capa((long)n);
    for (size_t i = 0; i < n; i++) {
        VALUE p = rb_ary_entry(ary, (long)i);
        if (NIL_P(p))
            rb_raise(rb_eTypeError, "Hashbatch.file_digests: element %zu is nil, not a path", i);
        p = rb_get_path(p); /* String or #to_path; no NUL bytes */
        rb_ary_push(names, p);
    }
    hb_file_result *out = ALLOC_N(hb_file_result, n ? n : 1);
    files_call c;
    memset(&c, 0, sizeof c);
    c.e = e;
    c.n = 0;
    c.paths = ALLOC_N(char *, n ? n : 1);
    c.in = ALLOC_N(hb_file_input, n ? n : 1);
    c.out = out;
    for (size_t i = 0; i < n; i++) {
        VALUE p = rb_ary_entry(names, (long)i);
        c.paths[i] = ruby_strdup(StringValueCStr(p));
        c.in[i].path = c.paths[i];
        c.in[i].fd = -1;
        c.n = i + 1;
    }
    int state = 0;
    rb_protect(files_body, (VALUE)&c, &state);
    files_ensure((VALUE)&c);
    if (state) {
        ruby_xfree(out);
        rb_jump_tag(state);
    }
    VALUE result = rb_ary_new_capa((long)n);
    VALUE first_error = Qnil;
    for (size_t i = 0; i < n; i++) {
        const hb_file_result *r = &out[i];
        VALUE v;
        if (r->status == HB_OK) {
            char h[40];
            if (hex) {
                hb_hex40(r->digest, h);
                v = rb_usascii_str_new(h, 40);
            } else {
                v = rb_str_new((const char *)r->digest, 20);
            }
        } else {
            v = file_error(rb_ary_entry(ary, (long)i), r);
            if (NIL_P(first_error))
                first_error = v;
        }
        rb_ary_push(result, v);
    }
    ruby_xfree(out);
    RB_GC_GUARD(names);
    if (raise_errors && !NIL_P(first_error))
        rb_exc_raise(first_error);
    return result;
}

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
    return file_digests(a->r->e, a->paths, a->hex, a->raise_errors);
}

static VALUE files_unlock(VALUE p)
{
    pthread_rwlock_unlock(&((files_arg *)p)->r->lock);
    return Qnil;
}

VALUE hb_ext_file_digests_on(engine_ref *r, int argc, VALUE *argv)
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
                rb_raise(rb_eArgError,
                         "file_digests: errors: must be :raise or :return, got %" PRIsVALUE,
                         rb_inspect(v[1]));
        }
    }
    hb_ext_engine_ref_check(r);
    pthread_rwlock_rdlock(&r->lock);
    return rb_ensure(files_locked_body, (VALUE)&a, files_unlock, (VALUE)&a);
}

#endif /* HAVE_HB_SUBMIT_FILES */
