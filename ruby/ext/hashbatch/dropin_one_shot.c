/*
 * dropin_one_shot.c - the class-level one-shots the drop-in prepends to
 * Digest::SHA1's and OpenSSL::Digest::SHA1's singleton classes
 * (hashbatch/digest_dropin.rb installs them): the modules
 * Hashbatch::DigestDropin::DigestSHA1OneShot and OpenSSLSHA1OneShot.
 *
 * Their digest and hexdigest, called on that class itself with one
 * argument, hash as Hashbatch::SHA1.digest / .hexdigest do (same argument
 * checks, same TypeError, same encodings: binary, US-ASCII). Any other
 * call (a subclass, whose initialize, update or finish may differ; another
 * arity) goes to the original through super, which builds an object and
 * so reaches the drop-in's instance hooks. They are C so that the short
 * path costs the stock one's: no Ruby frame, no argument array; in Ruby,
 * those made a threaded #11625 run a fifth slower than Hashbatch::SHA1's.
 *
 * Owns: those two modules. Must not: take the short path for anything but
 * the class it was prepended to, or hash itself (sha1_class.c does).
 */
#include "hb_ext.h"

/* The class a module serves, looked up on first use (the drop-in loads
 * digest and openssl before it prepends). */
typedef struct {
    const char *path;
    VALUE klass;
} one_shot_target;

static one_shot_target digest_sha1 = {"Digest::SHA1", Qnil};
static one_shot_target openssl_sha1 = {"OpenSSL::Digest::SHA1", Qnil};

static int is_target(one_shot_target *t, VALUE self)
{
    if (NIL_P(t->klass)) {
        t->klass = rb_path2class(t->path);
        rb_gc_register_mark_object(t->klass);
    }
    return self == t->klass;
}

static VALUE digest_sha1_digest(int argc, VALUE *argv, VALUE self)
{
    if (argc == 1 && is_target(&digest_sha1, self))
        return hb_ext_sha1_oneshot_digest(argc, argv);
    return rb_call_super(argc, argv);
}

static VALUE digest_sha1_hexdigest(int argc, VALUE *argv, VALUE self)
{
    if (argc == 1 && is_target(&digest_sha1, self))
        return hb_ext_sha1_oneshot_hexdigest(argc, argv);
    return rb_call_super(argc, argv);
}

static VALUE openssl_sha1_digest(int argc, VALUE *argv, VALUE self)
{
    if (argc == 1 && is_target(&openssl_sha1, self))
        return hb_ext_sha1_oneshot_digest(argc, argv);
    return rb_call_super(argc, argv);
}

static VALUE openssl_sha1_hexdigest(int argc, VALUE *argv, VALUE self)
{
    if (argc == 1 && is_target(&openssl_sha1, self))
        return hb_ext_sha1_oneshot_hexdigest(argc, argv);
    return rb_call_super(argc, argv);
}

void hb_ext_init_dropin_one_shot(void)
{
    VALUE dropin = rb_define_module_under(hb_mHashbatch, "DigestDropin");
    VALUE m = rb_define_module_under(dropin, "DigestSHA1OneShot");
    rb_define_method(m, "digest", digest_sha1_digest, -1);
    rb_define_method(m, "hexdigest", digest_sha1_hexdigest, -1);
    m = rb_define_module_under(dropin, "OpenSSLSHA1OneShot");
    rb_define_method(m, "digest", openssl_sha1_digest, -1);
    rb_define_method(m, "hexdigest", openssl_sha1_hexdigest, -1);
}
