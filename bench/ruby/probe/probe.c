/*
 * probe.c - the probe of issue 5, rebuilt to measure beside the gem: an
 * extension that only wraps OpenSSL's low-level SHA-1 and releases the
 * GVL for each call with 2 KiB or more (no turns, no hand-off).
 *
 * Owns: HashbatchProbe::SHA1.hexdigest(str). Benchmark use only; it has
 * none of the gem's safety (the string is not locked while hashed).
 */
#include <ruby.h>
#include <ruby/thread.h>

#include <openssl/sha.h>

#define RELEASE_FROM 2048

typedef struct {
    const unsigned char *p;
    size_t len;
    unsigned char md[SHA_DIGEST_LENGTH];
} probe_hash;

static void *hash_nogvl(void *arg)
{
    probe_hash *h = arg;
    SHA_CTX ctx;
    SHA1_Init(&ctx);
    SHA1_Update(&ctx, h->p, h->len);
    SHA1_Final(h->md, &ctx);
    return NULL;
}

static VALUE probe_hexdigest(VALUE klass, VALUE str)
{
    static const char digits[] = "0123456789abcdef";
    StringValue(str);
    probe_hash h = {(const unsigned char *)RSTRING_PTR(str), (size_t)RSTRING_LEN(str), {0}};
    if (h.len >= RELEASE_FROM)
        rb_thread_call_without_gvl(hash_nogvl, &h, NULL, NULL);
    else
        hash_nogvl(&h);
    RB_GC_GUARD(str);
    char hex[2 * SHA_DIGEST_LENGTH];
    for (int i = 0; i < SHA_DIGEST_LENGTH; i++) {
        hex[2 * i] = digits[h.md[i] >> 4];
        hex[2 * i + 1] = digits[h.md[i] & 15];
    }
    return rb_usascii_str_new(hex, sizeof hex);
}

void Init_hashbatch_probe(void)
{
    VALUE mod = rb_define_module("HashbatchProbe");
    VALUE cls = rb_define_class_under(mod, "SHA1", rb_cObject);
    rb_define_singleton_method(cls, "hexdigest", probe_hexdigest, 1);
}
