/*
 * testing.c - Hashbatch::Testing: hooks for the gem's own tests, never for
 * applications.
 *
 * Owns: the GVL probes. A probe sits at a place where the extension runs
 * without the GVL (hb_probe_site). Armed from Ruby, the next thread to
 * pass that place stops there and waits, up to the armed timeout, for a
 * flag that another Ruby thread sets (release_gvl_probe). A Ruby thread
 * runs only while it holds the GVL, so a probe that saw the flag proves
 * the GVL was free while a thread stood at that place; had it been held,
 * the flag could not be set and the probe reports :missed when its timeout
 * ends. That evidence needs no clock and no CPU share: load only delays
 * it. The place's unblocking function (an interrupt) ends the wait early:
 * :interrupted. A disarmed probe costs one atomic load.
 * Outcomes (gvl_probe(site)): :idle (never armed), :armed (no thread came
 * by), :waiting, :seen, :missed, :interrupted.
 * Also turn_idle_ns=, so a turn held by a thread stopped at a probe does
 * not go idle (turns.c): a test can make another thread wait for it.
 * Must not: change what the place does once the probe returns, or be used
 * by anything but the gem's tests.
 */
#include "hb_ext.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

enum { PROBE_IDLE, PROBE_ARMED, PROBE_WAITING, PROBE_SEEN, PROBE_MISSED, PROBE_INTERRUPTED };

static const char *const outcome_names[] = {"idle", "armed",  "waiting",
                                            "seen", "missed", "interrupted"};
static const char *const site_names[HB_PROBE_SITES] = {[HB_PROBE_SHA1_UPDATE] = "sha1_update",
                                                       [HB_PROBE_BATCH_WAIT] = "batch_wait",
                                                       [HB_PROBE_BATCH_CANCEL] = "batch_cancel",
                                                       [HB_PROBE_FILES_WAIT] = "files_wait",
                                                       [HB_PROBE_CONTROL] = "control"};

typedef struct {
    atomic_int state;
    atomic_int flag;
    _Atomic int64_t timeout_ns;
} probe;

static probe probes[HB_PROBE_SITES];

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* probe_wait: waits for the flag, the interrupt or the timeout; returns the
 * outcome. */
static int probe_wait(probe *p, const volatile int *interrupted)
{
    int64_t deadline = now_ns() + atomic_load(&p->timeout_ns);
    const struct timespec nap = {0, 200 * 1000};
    for (;;) {
        if (atomic_load(&p->flag))
            return PROBE_SEEN;
        if (interrupted != NULL && *interrupted)
            return PROBE_INTERRUPTED;
        if (now_ns() >= deadline)
            return PROBE_MISSED;
        nanosleep(&nap, NULL);
    }
}

void hb_ext_probe(hb_probe_site site, const volatile int *interrupted)
{
    probe *p = &probes[site];
    int armed = PROBE_ARMED;
    if (atomic_load_explicit(&p->state, memory_order_relaxed) != PROBE_ARMED ||
        !atomic_compare_exchange_strong(&p->state, &armed, PROBE_WAITING))
        return;
    atomic_store(&p->state, probe_wait(p, interrupted));
}

/* site_arg: the probe named by a Symbol or String, or an ArgumentError. */
static probe *site_arg(VALUE name)
{
    VALUE s = SYMBOL_P(name) ? rb_sym2str(name) : StringValue(name);
    for (int i = 0; i < HB_PROBE_SITES; i++)
        if (strlen(site_names[i]) == (size_t)RSTRING_LEN(s) &&
            memcmp(site_names[i], RSTRING_PTR(s), (size_t)RSTRING_LEN(s)) == 0)
            return &probes[i];
    rb_raise(rb_eArgError, "Hashbatch::Testing: no GVL probe named %" PRIsVALUE, rb_inspect(name));
}

/* arm_gvl_probe(site, timeout = 30): the next thread at site waits there
 * for release_gvl_probe, at most timeout seconds. */
static VALUE t_arm(int argc, VALUE *argv, VALUE mod)
{
    VALUE name, timeout;
    rb_scan_args(argc, argv, "11", &name, &timeout);
    probe *p = site_arg(name);
    double t = NIL_P(timeout) ? 30.0 : NUM2DBL(timeout);
    if (!(t > 0 && t <= 600))
        rb_raise(rb_eArgError,
                 "Hashbatch::Testing.arm_gvl_probe: timeout must be in (0, 600] s, got %g", t);
    atomic_store(&p->timeout_ns, (int64_t)(t * 1e9));
    atomic_store(&p->flag, 0);
    atomic_store(&p->state, PROBE_ARMED);
    return Qnil;
}

static VALUE t_release(VALUE mod, VALUE name)
{
    atomic_store(&site_arg(name)->flag, 1);
    return Qnil;
}

/* disarm_gvl_probe(site): a probe still armed goes idle, one waiting is
 * released; a finished outcome is kept. */
static VALUE t_disarm(VALUE mod, VALUE name)
{
    probe *p = site_arg(name);
    atomic_store(&p->flag, 1);
    int armed = PROBE_ARMED;
    atomic_compare_exchange_strong(&p->state, &armed, PROBE_IDLE);
    return Qnil;
}

static VALUE t_outcome(VALUE mod, VALUE name)
{
    return ID2SYM(rb_intern(outcome_names[atomic_load(&site_arg(name)->state)]));
}

/* probe_holding_gvl: the control: passes the :control probe in this
 * thread without releasing the GVL (an armed one ends :missed). */
static VALUE t_probe_holding_gvl(VALUE mod)
{
    hb_ext_probe(HB_PROBE_CONTROL, NULL);
    return t_outcome(mod, ID2SYM(rb_intern("control")));
}

/* turn_idle_ns= (Integer, or nil: the default): how long an unused turn
 * stays its holder's (turns.c), so a test can keep a turn held while its
 * holder stands at a probe. */
static VALUE t_set_turn_idle_ns(VALUE mod, VALUE v)
{
    hb_turns_set_idle_ns_for_test(NIL_P(v) ? 0 : NUM2ULL(v));
    return v;
}

static VALUE t_turn_idle_ns(VALUE mod)
{
    return ULL2NUM(hb_turns_idle_ns());
}

/* shared_readers: [strings held by shared readers, readers inside them,
 * private copies made so far] (pin.c). */
static VALUE t_shared_readers(VALUE mod)
{
    size_t strings, inside, copies;
    hb_pin_counts(&strings, &inside, &copies);
    return rb_ary_new_from_args(3, SIZET2NUM(strings), SIZET2NUM(inside), SIZET2NUM(copies));
}

/* lock_string / unlock_string: rb_str_locktmp and rb_str_unlocktmp, as
 * another C extension would lock a string (IO in Ruby 3.1 does not). */
static VALUE t_lock_string(VALUE mod, VALUE s)
{
    return rb_str_locktmp(StringValue(s));
}

static VALUE t_unlock_string(VALUE mod, VALUE s)
{
    return rb_str_unlocktmp(StringValue(s));
}

void hb_ext_init_testing(void)
{
    VALUE m = rb_define_module_under(hb_mHashbatch, "Testing");
    rb_define_module_function(m, "arm_gvl_probe", t_arm, -1);
    rb_define_module_function(m, "release_gvl_probe", t_release, 1);
    rb_define_module_function(m, "disarm_gvl_probe", t_disarm, 1);
    rb_define_module_function(m, "gvl_probe", t_outcome, 1);
    rb_define_module_function(m, "probe_holding_gvl", t_probe_holding_gvl, 0);
    rb_define_module_function(m, "turn_idle_ns=", t_set_turn_idle_ns, 1);
    rb_define_module_function(m, "turn_idle_ns", t_turn_idle_ns, 0);
    rb_define_module_function(m, "shared_readers", t_shared_readers, 0);
    rb_define_module_function(m, "lock_string", t_lock_string, 1);
    rb_define_module_function(m, "unlock_string", t_unlock_string, 1);
}
