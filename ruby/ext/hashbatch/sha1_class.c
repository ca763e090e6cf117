/*
 * sha1_class.c - Hashbatch::SHA1, a Digest::Class computed with OpenSSL.
 *
 * Owns: the SHA1 object (an OpenSSL SHA_CTX), its Digest hooks (update,
 * finish, reset, initialize_copy, lengths), the one-shot class methods
 * digest/hexdigest, and when to release the GVL around a hash:
 *  - inputs shorter than gvl_threshold bytes are hashed holding the GVL
 *    (releasing and taking it back would cost over an eighth of the hash:
 *    gvl_params.c measures both when the extension loads);
 *  - inputs from gvl_threshold to BIG_INPUT bytes are hashed without it
 *    by a thread holding a turn (turns.c: one thread per core at a time,
 *    the others wait for a turn, not for the GVL);
 *  - BIG_INPUT bytes and more always release it, in chunks, and an
 *    interrupt (Ctrl-C, Thread#raise, Timeout) stops the hash between
 *    chunks; the update is then undone, and the exception raised.
 * The string is locked (pin.c) while the GVL is released.
 * Must not: implement SHA-1 itself (OpenSSL does), or keep a string after
 * the call returns.
 */
#include "hb_ext.h"

#include <openssl/sha.h>
#include <string.h>

#include "absorb.h"

#define BIG_INPUT ((long)256 << 10)
#define CHUNK ((size_t)1 << 20)

static VALUE cSHA1;
static long gvl_threshold = 4096; /* measured here at load: gvl_params.c */

typedef struct {
    SHA_CTX ctx;
    int busy; /* an update runs without the GVL */
} sha1_obj;

static const rb_data_type_t sha1_type = {
    .wrap_struct_name = "Hashbatch::SHA1",
    .function = {.dmark = NULL, .dfree = RUBY_TYPED_DEFAULT_FREE, .dsize = NULL},
    .flags = RUBY_TYPED_FREE_IMMEDIATELY | RUBY_TYPED_WB_PROTECTED};

size_t hb_ext_gvl_threshold(void)
{
    return (size_t)gvl_threshold;
}

/* ---- hashing with or without the GVL --------------------------------- */

typedef struct {
    SHA_CTX *ctx;
    const unsigned char *p;
    size_t len;
    size_t done;
    volatile int interrupted;
    uint64_t turn; /* hashed in this thread's turn (turns.c): its id */
} update_arg;

/* update_nogvl: hashes the rest of a->p in chunks until done or told to
 * stop by update_ubf. Runs without the GVL. */
static void *update_nogvl(void *p)
{
    update_arg *a = p;
    hb_turn_hashing(a->turn);
    hb_ext_probe(HB_PROBE_SHA1_UPDATE, &a->interrupted);
    while (a->done < a->len && !a->interrupted) {
        size_t n = a->len - a->done < CHUNK ? a->len - a->done : CHUNK;
        hb_sha1_absorb(a->ctx, a->p + a->done, n);
        a->done += n;
    }
    hb_turn_hashed(a->turn);
    return NULL;
}

static void update_ubf(void *p)
{
    ((update_arg *)p)->interrupted = 1;
}

typedef struct {
    VALUE str;  /* what is read: the caller's string or a copy */
    int locked; /* how str is held (hb_str_hold): HB_PIN_* */
    SHA_CTX *ctx;
    SHA_CTX saved; /* restored if an interrupt abandons the update */
    uint64_t turn; /* hashed in this thread's turn: its id */
    int complete;
} locked_update;

/* locked_update_body: hashes lu->str without the GVL; between chunks,
 * pending interrupts run (and may raise). */
static VALUE locked_update_body(VALUE p)
{
    locked_update *lu = (locked_update *)p;
    update_arg a = {
        lu->ctx, (const unsigned char *)RSTRING_PTR(lu->str), (size_t)RSTRING_LEN(lu->str), 0, 0,
        lu->turn};
    int big = RSTRING_LEN(lu->str) >= BIG_INPUT;
    while (a.done < a.len) {
        a.interrupted = 0;
        hb_nogvl(HB_NOGVL_HASH, update_nogvl, &a, big ? update_ubf : NULL, &a, 0);
        if (a.done < a.len)
            rb_thread_check_ints();
    }
    lu->complete = 1;
    return Qnil;
}

static VALUE locked_update_ensure(VALUE p)
{
    locked_update *lu = (locked_update *)p;
    hb_str_release(lu->str, lu->locked);
    if (!lu->complete)
        *lu->ctx = lu->saved;
    return Qnil;
}

/* sha1_update_str: ctx absorbs str, with or without the GVL as above. */
static void sha1_update_str(SHA_CTX *ctx, VALUE str)
{
    long len = RSTRING_LEN(str);
    uint64_t turn = len >= gvl_threshold && len < BIG_INPUT ? hb_turn_take() : 0;
    if (len < gvl_threshold || (len < BIG_INPUT && !turn)) {
        hb_sha1_absorb(ctx, RSTRING_PTR(str), (size_t)len);
        return;
    }
    locked_update lu;
    lu.str = str;
    lu.ctx = ctx;
    lu.saved = *ctx;
    lu.turn = turn;
    lu.complete = 0;
    lu.str = hb_str_hold(str, &lu.locked); /* does not raise */
    rb_ensure(locked_update_body, (VALUE)&lu, locked_update_ensure, (VALUE)&lu);
    RB_GC_GUARD(lu.str);
    RB_GC_GUARD(str);
}

/* ---- the object -------------------------------------------------------- */

static VALUE sha1_alloc(VALUE klass)
{
    sha1_obj *o;
    VALUE self = TypedData_Make_Struct(klass, sha1_obj, &sha1_type, o);
    SHA1_Init(&o->ctx);
    return self;
}

/* get_idle: the object's state; raises if another thread is updating it. */
static sha1_obj *get_idle(VALUE self)
{
    sha1_obj *o;
    TypedData_Get_Struct(self, sha1_obj, &sha1_type, o);
    if (o->busy)
        rb_raise(rb_eRuntimeError, "Hashbatch::SHA1: object in use by another thread");
    return o;
}

/* initialize: takes no arguments (as Digest::SHA1.new). */
static VALUE sha1_initialize(VALUE self)
{
    return self;
}

static VALUE sha1_initialize_copy(VALUE self, VALUE other)
{
    if (self == other)
        return self;
    rb_check_frozen(self);
    sha1_obj *dst = get_idle(self);
    if (!rb_typeddata_is_kind_of(other, &sha1_type))
        rb_raise(rb_eTypeError,
                 "Hashbatch::SHA1 can only be copied from another Hashbatch::SHA1 (got %" PRIsVALUE
                 ")",
                 rb_obj_class(other));
    dst->ctx = get_idle(other)->ctx;
    return self;
}

static VALUE busy_clear(VALUE self)
{
    sha1_obj *o;
    TypedData_Get_Struct(self, sha1_obj, &sha1_type, o);
    o->busy = 0;
    return Qnil;
}

typedef struct {
    sha1_obj *o;
    VALUE str;
} update_call;

static VALUE update_call_body(VALUE p)
{
    update_call *c = (update_call *)p;
    sha1_update_str(&c->o->ctx, c->str);
    return Qnil;
}

/* update(str) / <<: absorbs str; returns self. */
static VALUE sha1_update(VALUE self, VALUE str)
{
    StringValue(str);
    sha1_obj *o = get_idle(self);
    rb_check_frozen(self);
    if (RSTRING_LEN(str) < gvl_threshold) {
        hb_sha1_absorb(&o->ctx, RSTRING_PTR(str), (size_t)RSTRING_LEN(str));
        return self;
    }
    update_call c = {o, str};
    o->busy = 1;
    rb_ensure(update_call_body, (VALUE)&c, busy_clear, self);
    RB_GC_GUARD(str);
    return self;
}

/* finish (private, for Digest::Instance): the 20-byte digest. */
static VALUE sha1_finish(VALUE self)
{
    sha1_obj *o = get_idle(self);
    SHA_CTX copy = o->ctx;
    unsigned char md[SHA_DIGEST_LENGTH];
    SHA1_Final(md, &copy);
    return rb_str_new((const char *)md, SHA_DIGEST_LENGTH);
}

static VALUE sha1_reset(VALUE self)
{
    rb_check_frozen(self);
    SHA1_Init(&get_idle(self)->ctx);
    return self;
}

static VALUE sha1_digest_length(VALUE self)
{
    return INT2FIX(SHA_DIGEST_LENGTH);
}

static VALUE sha1_block_length(VALUE self)
{
    return INT2FIX(SHA_CBLOCK);
}

/* ---- one-shot class methods ---------------------------------------- */

/* oneshot: SHA-1 of the one string argument (Digest::Class.digest's
 * argument rules: no data is an ArgumentError, extra arguments go to
 * initialize, which takes none). */
static void oneshot(int argc, VALUE *argv, unsigned char md[SHA_DIGEST_LENGTH])
{
    if (argc < 1)
        rb_raise(rb_eArgError, "no data given");
    if (argc > 1)
        rb_error_arity(argc - 1, 0, 0);
    VALUE str = argv[0];
    StringValue(str);
    SHA_CTX ctx;
    SHA1_Init(&ctx);
    sha1_update_str(&ctx, str);
    SHA1_Final(md, &ctx);
    RB_GC_GUARD(str);
}

VALUE hb_ext_sha1_oneshot_digest(int argc, VALUE *argv)
{
    unsigned char md[SHA_DIGEST_LENGTH];
    oneshot(argc, argv, md);
    return rb_str_new((const char *)md, SHA_DIGEST_LENGTH);
}

VALUE hb_ext_sha1_oneshot_hexdigest(int argc, VALUE *argv)
{
    unsigned char md[SHA_DIGEST_LENGTH];
    char hex[40];
    oneshot(argc, argv, md);
    hb_hex40(md, hex);
    return rb_usascii_str_new(hex, 40);
}

static VALUE sha1_s_digest(int argc, VALUE *argv, VALUE klass)
{
    (void)klass;
    return hb_ext_sha1_oneshot_digest(argc, argv);
}

static VALUE sha1_s_hexdigest(int argc, VALUE *argv, VALUE klass)
{
    (void)klass;
    return hb_ext_sha1_oneshot_hexdigest(argc, argv);
}

/* ---- tuning knobs (for benchmarks) -------------------------------- */

static VALUE sha1_s_gvl_threshold(VALUE klass)
{
    return LONG2NUM(gvl_threshold);
}

static VALUE sha1_s_set_gvl_threshold(VALUE klass, VALUE v)
{
    long t = NUM2LONG(v);
    if (t < 0)
        rb_raise(rb_eArgError, "gvl_threshold must be >= 0 (got %ld)", t);
    gvl_threshold = t;
    return v;
}

static VALUE sha1_s_gvl_slots(VALUE klass)
{
    return LONG2NUM(hb_turns());
}

static VALUE sha1_s_set_gvl_slots(VALUE klass, VALUE v)
{
    hb_turns_set(NUM2LONG(v));
    return v;
}

/* gvl_stats: {turns:, turn_waits:, turn_yields:, handoff_spins:,
 * handoff_blocks:, block_cost_ns:} (turns.c). */
static VALUE sha1_s_gvl_stats(VALUE klass)
{
    long waits, yields, spins, blocks;
    hb_turn_stats(&waits, &yields, &spins, &blocks);
    VALUE h = rb_hash_new();
    rb_hash_aset(h, ID2SYM(rb_intern("turns")), LONG2NUM(hb_turns()));
    rb_hash_aset(h, ID2SYM(rb_intern("turn_waits")), LONG2NUM(waits));
    rb_hash_aset(h, ID2SYM(rb_intern("turn_yields")), LONG2NUM(yields));
    rb_hash_aset(h, ID2SYM(rb_intern("handoff_spins")), LONG2NUM(spins));
    rb_hash_aset(h, ID2SYM(rb_intern("handoff_blocks")), LONG2NUM(blocks));
    rb_hash_aset(h, ID2SYM(rb_intern("block_cost_ns")), ULL2NUM(hb_turn_block_cost_ns()));
    return h;
}

void hb_ext_init_sha1(void)
{
    gvl_threshold = hb_gvl_params_get()->gvl_threshold;
    rb_require("digest");
    VALUE mDigest = rb_const_get(rb_cObject, rb_intern("Digest"));
    VALUE cDigestClass = rb_const_get(mDigest, rb_intern("Class"));
    cSHA1 = rb_define_class_under(hb_mHashbatch, "SHA1", cDigestClass);
    rb_define_alloc_func(cSHA1, sha1_alloc);
    rb_define_method(cSHA1, "initialize", sha1_initialize, 0);
    rb_define_method(cSHA1, "initialize_copy", sha1_initialize_copy, 1);
    rb_define_method(cSHA1, "update", sha1_update, 1);
    rb_define_method(cSHA1, "<<", sha1_update, 1);
    rb_define_private_method(cSHA1, "finish", sha1_finish, 0);
    rb_define_method(cSHA1, "reset", sha1_reset, 0);
    rb_define_method(cSHA1, "digest_length", sha1_digest_length, 0);
    rb_define_method(cSHA1, "block_length", sha1_block_length, 0);
    rb_define_singleton_method(cSHA1, "digest", sha1_s_digest, -1);
    rb_define_singleton_method(cSHA1, "hexdigest", sha1_s_hexdigest, -1);
    rb_define_singleton_method(cSHA1, "gvl_threshold", sha1_s_gvl_threshold, 0);
    rb_define_singleton_method(cSHA1, "gvl_threshold=", sha1_s_set_gvl_threshold, 1);
    rb_define_singleton_method(cSHA1, "gvl_slots", sha1_s_gvl_slots, 0);
    rb_define_singleton_method(cSHA1, "gvl_slots=", sha1_s_set_gvl_slots, 1);
    rb_define_singleton_method(cSHA1, "gvl_stats", sha1_s_gvl_stats, 0);
}
