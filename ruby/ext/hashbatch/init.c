/*
 * init.c - Init_hashbatch_ext: the Hashbatch module and its parts.
 *
 * Owns: the module, version constants, Ractor-safety declaration.
 * Must not: hash.
 */
#include "hb_ext.h"

VALUE hb_mHashbatch;

void Init_hashbatch_ext(void)
{
#ifdef HAVE_RB_EXT_RACTOR_SAFE
    rb_ext_ractor_safe(true);
#endif
    hb_mHashbatch = rb_define_module("Hashbatch");
    rb_define_const(hb_mHashbatch, "LIBRARY_VERSION", rb_str_new_cstr(hb_version_string()));
    rb_define_const(hb_mHashbatch, "HEADER_VERSION", rb_str_new_cstr(HB_VERSION_STRING));
    hb_ext_init_errors();
    hb_ext_init_testing();
    hb_ext_init_pins();
    hb_ext_init_nogvl();
    hb_gvl_calibrate(); /* before turns and SHA1 read what it measured */
    hb_ext_init_gvl_params();
    hb_ext_init_turns();
    hb_ext_init_sha1();
    hb_ext_init_dropin_one_shot();
    hb_ext_init_engine();
    hb_ext_init_jobs();
    hb_ext_init_default_engine();
}
