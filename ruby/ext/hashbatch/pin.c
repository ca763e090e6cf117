/*
 * pin.c - strings held unchanged while the GVL is released.
 *
 * Owns: hb_str_hold / hb_str_release. A string read without the GVL must
 * not change: unless frozen, it is locked with rb_str_locktmp, so a writer
 * gets a RuntimeError ("can't modify string; temporarily locked").
 * rb_str_locktmp is not reentrant: when the string is already locked (by
 * another thread hashing it, or by anything else), the reader takes a
 * private copy of its bytes instead, so two threads hashing one string
 * both succeed and neither unlocks the other's lock. Whether a string is
 * locked is read from its flag (STR_TMPLOCK, FL_USER7 since Ruby 1.9; a
 * check at load time confirms it, else rb_str_locktmp is tried under
 * rb_protect).
 * (That strings must not move or die is their holder's business: batches
 * mark them with rb_gc_mark, which pins them, see engine.c; one-shot
 * hashes keep them on the stack.)
 * Must not: hash, or unlock a string it did not lock.
 */
#include "hb_ext.h"

static int tmplock_flag_known; /* FL_USER7 is STR_TMPLOCK here */

/* is_tmplocked: 1 if s is locked with rb_str_locktmp (flag known). */
static int is_tmplocked(VALUE s)
{
    return FL_TEST_RAW(s, FL_USER7) != 0;
}

/* private_copy: a frozen copy of s's bytes, its own buffer. */
static VALUE private_copy(VALUE s)
{
    VALUE c = rb_str_new(RSTRING_PTR(s), RSTRING_LEN(s));
    return rb_obj_freeze(c);
}

VALUE hb_str_hold(VALUE s, int *locked)
{
    *locked = 0;
    if (OBJ_FROZEN(s))
        return s;
    if (tmplock_flag_known) {
        if (is_tmplocked(s))
            return private_copy(s);
        rb_str_locktmp(s);
        *locked = 1;
        return s;
    }
    int state = 0;
    rb_protect(rb_str_locktmp, s, &state);
    if (state) {
        rb_set_errinfo(Qnil);
        return private_copy(s);
    }
    *locked = 1;
    return s;
}

void hb_str_release(VALUE s)
{
    rb_str_unlocktmp(s);
}

void hb_ext_init_pins(void)
{
    VALUE probe = rb_str_new_cstr("probe");
    int before = is_tmplocked(probe);
    rb_str_locktmp(probe);
    int during = is_tmplocked(probe);
    rb_str_unlocktmp(probe);
    tmplock_flag_known = !before && during && !is_tmplocked(probe);
    RB_GC_GUARD(probe);
}
