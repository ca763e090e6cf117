/*
 * hb_ext.h - what the C files of the hashbatch gem's extension share.
 *
 * The extension is glue only: hashing is libhashbatch's (batches, the
 * engine) or OpenSSL's (Hashbatch::SHA1's incremental state). Nothing here
 * computes SHA-1 by itself.
 */
#ifndef HB_EXT_H
#define HB_EXT_H

#include <ruby.h>
#include <ruby/thread.h>

#include <hashbatch.h>

extern VALUE hb_mHashbatch;

/* errors.c */
void hb_ext_init_errors(void);
/* hb_ext_raise: raises the Hashbatch::Error subclass for st, with what
 * and the engine's (or thread's) last error detail in the message. */
/* hb_ext_error_class: the class hb_ext_raise uses for st. */
VALUE hb_ext_error_class(hb_status st);
NORETURN(void hb_ext_raise(hb_status st, const hb_engine *e, const char *what));
/* hb_ext_file_error_class: as hb_ext_error_class, but for one file's
 * result (an I/O error is a Hashbatch::FileError). */
VALUE hb_ext_file_error_class(hb_status st);
/* hb_ext_raise_text: as hb_ext_raise, with the detail text given. */
NORETURN(void hb_ext_raise_text(hb_status st, const char *detail, const char *what));

/* pin.c: keeping strings unchanged while the GVL is released. */
void hb_ext_init_pins(void);
/* How a string is held: not at all (frozen, or a copy is read), by a lock
 * of the holder's own, or as one of the readers sharing the lock. */
enum { HB_PIN_NONE = 0, HB_PIN_OWN = 1, HB_PIN_SHARED = 2, HB_PIN_BUSY = 3 };
/* hb_str_hold: makes s safe to read without the GVL and returns what to
 * read: s itself (frozen: *locked = HB_PIN_NONE; or locked, shared with
 * every other reader of s: HB_PIN_SHARED), or a private frozen copy when
 * s is locked by someone else. Undo with hb_str_release(s, *locked). Keep
 * the result alive and pinned while it is read. Does not raise. */
VALUE hb_str_hold(VALUE s, int *locked);
/* hb_str_hold_for_batch: as hb_str_hold, for one of a batch's many
 * strings: an unlocked string gets a lock of the batch's own
 * (HB_PIN_OWN), not counted in the table of shared readers (that costs
 * 160 ns a string, a third of hexdigest_many's time on 4 KiB strings);
 * one that readers share already is joined. One locked otherwise comes
 * back as HB_PIN_BUSY, unchanged: the batch may hold its lock itself
 * (hb_str_share_own), else it reads hb_str_private_copy(s). */
VALUE hb_str_hold_for_batch(VALUE s, int *locked);
/* hb_str_private_copy: a frozen copy of s's bytes (counted). */
VALUE hb_str_private_copy(VALUE s);
/* hb_str_share_own: s, locked by the caller's own lock (HB_PIN_OWN), is
 * from now on held by readers sharing it, readers of them (the caller's
 * lock among them); each leaves with hb_str_release(s, HB_PIN_SHARED).
 * 0 if memory ran out (nothing changed). */
int hb_str_share_own(VALUE s, size_t readers);
void hb_str_release(VALUE s, int locked);
/* hb_pin_counts: strings held by shared readers now, the readers inside
 * them, and the private copies made so far (for Hashbatch::Testing). */
void hb_pin_counts(size_t *strings, size_t *readers_inside, size_t *copies);

/* nogvl.c: every call made without the GVL goes through hb_nogvl, which
 * counts it (Hashbatch.gvl_released_calls) once it runs. */
typedef enum { HB_NOGVL_HASH, HB_NOGVL_WAIT, HB_NOGVL_OTHER, HB_NOGVL_KINDS } hb_nogvl_kind;
void hb_ext_init_nogvl(void);
/* hb_nogvl: rb_nogvl(fn, arg, ubf, ubf_arg, flags), counted under kind. */
void *hb_nogvl(hb_nogvl_kind kind, void *(*fn)(void *), void *arg, rb_unblock_function_t *ubf,
               void *ubf_arg, int flags);

/* gvl_params.c: what releasing the GVL costs on this machine, measured
 * once when the extension loads, and the parameters derived from it. */
typedef struct {
    double sha1_ns_per_byte;  /* OpenSSL's SHA-1, one thread */
    uint64_t release_ns;      /* one GVL release and retake, no other thread */
    int release_measured;     /* 0: other threads ran, release_ns is a default */
    uint64_t wake_ns;         /* waking a thread asleep on a condition variable */
    long cpus;                /* CPUs this process may run on */
    long gvl_threshold;       /* bytes from which a hash releases the GVL */
    uint64_t handoff_spin_ns; /* the longest a turn holder spins for the GVL */
    uint64_t turn_slice_ns;   /* how long a turn is kept while others wait */
    uint64_t calibration_ns;  /* how long measuring took */
} hb_gvl_params;
/* hb_gvl_calibrate: measures (with the GVL held, a few ms at most) and
 * derives; called once by Init, before turns.c and sha1_class.c start. */
void hb_gvl_calibrate(void);
const hb_gvl_params *hb_gvl_params_get(void);
void hb_ext_init_gvl_params(void);

/* sha1_class.c */
void hb_ext_init_sha1(void);
size_t hb_ext_gvl_threshold(void);
/* Hashbatch::SHA1.digest / .hexdigest of argv (argument rules and GVL
 * release as theirs), for the drop-in's one-shots (dropin_one_shot.c). */
VALUE hb_ext_sha1_oneshot_digest(int argc, VALUE *argv);
VALUE hb_ext_sha1_oneshot_hexdigest(int argc, VALUE *argv);

/* dropin_one_shot.c: the drop-in's class-level one-shots, modules that
 * hashbatch/digest_dropin.rb prepends. */
void hb_ext_init_dropin_one_shot(void);

/* turns.c: which threads hash mid-sized inputs without the GVL. */
void hb_ext_init_turns(void);
/* hb_turn_take: with the GVL; once this thread holds a turn (it may wait
 * for one, without the GVL; raises if interrupted meanwhile), its id for
 * the two calls below; 0 when there are no turns (gvl_slots 0: hash
 * holding the GVL). */
uint64_t hb_turn_take(void);
/* Without the GVL, around every hash (id: the thread's turn, 0 for none):
 * counts the threads hashing, so spinners leave their cores to them. */
void hb_turn_hashing(uint64_t id); /* the GVL is released: others may take it */
void hb_turn_hashed(uint64_t id);  /* may spin while another holder is in Ruby */
long hb_turns(void);
/* hb_turn_stats: since load, how often a thread waited for a turn, how
 * often a holder gave its turn up at the end of its slice, and how often
 * a holder back from hashing spun for the GVL or went to take it at once
 * (blocking) because every core was busy or the spin ran out. */
void hb_turn_stats(long *waits, long *yields, long *spins, long *blocks);
/* hb_turn_block_cost_ns: what a holder that blocked for the GVL was seen
 * to pay, on average (the spin's bound, within its floor and ceiling). */
uint64_t hb_turn_block_cost_ns(void);
void hb_turns_set(long n); /* raises ArgumentError when out of range */
/* For the gem's tests only (Hashbatch::Testing.turn_idle_ns=): how long a
 * turn unused stays its holder's (0: the default, TURN_IDLE_NS). */
void hb_turns_set_idle_ns_for_test(uint64_t ns);
uint64_t hb_turns_idle_ns(void);

/* Hashbatch::Engine, Hashbatch::Job and the default engine: the files
 * engine_parts.h lists (engine.c, job.c, default_engine.c and those
 * below them). */
void hb_ext_init_engine(void);
void hb_ext_init_jobs(void);
void hb_ext_init_default_engine(void);

/* testing.c: GVL probes for the gem's tests (Hashbatch::Testing). */
typedef enum {
    HB_PROBE_SHA1_UPDATE,  /* sha1_class.c: hashing a string without the GVL */
    HB_PROBE_BATCH_WAIT,   /* batch_wait.c: waiting for a batch */
    HB_PROBE_BATCH_CANCEL, /* batch.c: cancelling an abandoned batch */
    HB_PROBE_FILES_WAIT,   /* files.c: waiting for a files job */
    HB_PROBE_CONTROL,      /* testing.c: passed holding the GVL, on purpose */
    HB_PROBE_SITES
} hb_probe_site;
void hb_ext_init_testing(void);
/* hb_ext_probe: where the GVL is released: if the probe for site is
 * armed, waits there for a Ruby thread's release_gvl_probe (bounded), or
 * until *interrupted (NULL: never) becomes nonzero. Else returns at once. */
void hb_ext_probe(hb_probe_site site, const volatile int *interrupted);

/* hex.c */
/* hb_hex40: 40 lowercase hex digits of d into out (no terminator). */
void hb_hex40(const uint8_t d[20], char *out);

#endif
