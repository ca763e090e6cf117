/*
 * pin.c - strings held unchanged while the GVL is released, shared by any
 * number of readers.
 *
 * Owns: hb_str_hold / hb_str_release and the table of held strings. A
 * string read without the GVL must not change: unless frozen, it is
 * locked with rb_str_locktmp, so a writer gets a RuntimeError ("can't
 * modify string; temporarily locked"). rb_str_locktmp is not reentrant,
 * so readers of one string share its lock: a small table counts the
 * readers of each string this file locked; the first reader locks it, the
 * others only count, and the last one out unlocks it. So many threads (or
 * fibers, or batches) hash one String at once with no copy, and a writer
 * is refused exactly while a reader is inside (Ruby Feature #11625's
 * program: one String popped by every thread).
 * A batch's strings are locked by the batch itself, uncounted (a count
 * for each of 600,000 strings cost a third of hexdigest_many); a batch
 * that meets one of them again shares that lock through the table
 * (hb_str_share_own, batch.c), and one a reader shares is joined.
 * A string locked by someone else (a C extension, another call's batch)
 * is not ours to share or unlock: the reader takes a private frozen copy
 * of its bytes instead. Whether a string is locked is read from its flag
 * (STR_TMPLOCK, FL_USER7 since Ruby 1.9; a check at load time confirms
 * it, else rb_str_locktmp is tried under rb_protect).
 * The table is touched only by threads holding their Ractor's GVL; as
 * Ractors each have their own GVL, a spin lock guards it as well (held
 * for a few instructions; uncontended without Ractors). A pthread mutex
 * and Ruby's st_table beside it cost 10% of the #11625 program at
 * THREADS=2 (perf: pthread_mutex_lock 6%, rb_st_lookup 4%), their cache
 * lines passed between the cores with the GVL on every call. Its keys are
 * strings kept alive and pinned by their holders, so they neither die nor
 * move while counted.
 * A forked child has none of its parent's other threads: the readers that
 * were inside them never leave, so Hashbatch's Process._fork hook
 * (lib/hashbatch.rb) calls Hashbatch.__forget_readers in the child, which
 * unlocks what they held.
 * (That strings must not move or die is their holder's business: batches
 * mark them with rb_gc_mark, which pins them, see engine.c; one-shot
 * hashes keep them on the stack.)
 * Must not: hash, or unlock a string it did not lock.
 */
#include "hb_ext.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

static int tmplock_flag_known; /* FL_USER7 is STR_TMPLOCK here */
static size_t private_copies;  /* strings copied (locked by others) */

/* The readers table: string -> readers inside (>= 1), open addressing
 * with linear probing, at most half full. Its lock, its counts and the
 * first slots share a cache line: a hold and a release cost one line
 * each, passed between cores with the GVL. */
typedef struct {
    VALUE str; /* 0: empty */
    size_t readers;
} reader_slot;

#define INLINE_SLOTS 2
static struct {
    atomic_flag lock; /* see the top of the file: Ractors */
    uint32_t mask;    /* slots - 1 (a power of two minus one) */
    uint32_t used;
    reader_slot *slot;
    reader_slot first[INLINE_SLOTS];
} __attribute__((aligned(64))) table = {.mask = INLINE_SLOTS - 1, .slot = table.first};

static void table_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&table.lock, memory_order_acquire))
        ;
}

static void table_unlock(void)
{
    atomic_flag_clear_explicit(&table.lock, memory_order_release);
}

static uint32_t home(VALUE s, uint32_t mask)
{
    return (uint32_t)(((uint64_t)s >> 3) * 0x9E3779B97F4A7C15ull >> 32) & mask;
}

/* find: s's slot, or the empty slot where it would go. */
static reader_slot *find(VALUE s)
{
    uint32_t i = home(s, table.mask);
    while (table.slot[i].str != 0 && table.slot[i].str != s)
        i = (i + 1) & table.mask;
    return &table.slot[i];
}

/* grow: twice the slots; 0 if memory ran out (nothing changed). */
static int grow(void)
{
    uint32_t old_mask = table.mask;
    reader_slot *old = table.slot;
    reader_slot *fresh = calloc((size_t)old_mask * 2 + 2, sizeof *fresh);
    if (fresh == NULL)
        return 0;
    table.slot = fresh;
    table.mask = old_mask * 2 + 1;
    for (uint32_t i = 0; i <= old_mask; i++)
        if (old[i].str != 0)
            *find(old[i].str) = old[i];
    if (old != table.first)
        free(old);
    return 1;
}

/* remove_at: empties slot i and moves up the entries probed past it. */
static void remove_at(uint32_t i)
{
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & table.mask;
        if (table.slot[j].str == 0)
            break;
        uint32_t h = home(table.slot[j].str, table.mask);
        int between = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (!between) {
            table.slot[i] = table.slot[j];
            i = j;
        }
    }
    table.slot[i].str = 0;
    table.slot[i].readers = 0;
    table.used--;
}

/* is_tmplocked: 1 if s is locked with rb_str_locktmp (flag known). */
static int is_tmplocked(VALUE s)
{
    return FL_TEST_RAW(s, FL_USER7) != 0;
}

/* private_copy: a frozen copy of s's bytes, its own buffer. */
static VALUE private_copy(VALUE s)
{
    __atomic_add_fetch(&private_copies, 1, __ATOMIC_RELAXED);
    VALUE c = rb_str_new(RSTRING_PTR(s), RSTRING_LEN(s));
    return rb_obj_freeze(c);
}

/* join_readers: 1 if s is already held by readers here (now one more). */
static int join_readers(VALUE s)
{
    table_lock();
    reader_slot *r = find(s);
    int held = r->str == s;
    if (held)
        r->readers++;
    table_unlock();
    return held;
}

/* first_reader: counts s's first reader; 0 if the table could not grow. */
static int first_reader(VALUE s)
{
    table_lock();
    int ok = (table.used + 1) * 2 <= table.mask + 1 || grow();
    if (ok) {
        reader_slot *r = find(s);
        r->str = s;
        r->readers = 1;
        table.used++;
    }
    table_unlock();
    return ok;
}

/* lock_first: locks s for its first reader; 0 if someone else holds its
 * lock (then nothing changed). */
static int lock_first(VALUE s)
{
    if (tmplock_flag_known) {
        if (is_tmplocked(s))
            return 0;
        rb_str_locktmp(s);
        return 1;
    }
    int state = 0;
    rb_protect(rb_str_locktmp, s, &state);
    if (state) {
        rb_set_errinfo(Qnil);
        return 0;
    }
    return 1;
}

VALUE hb_str_hold(VALUE s, int *locked)
{
    *locked = HB_PIN_NONE;
    if (OBJ_FROZEN(s))
        return s;
    if (join_readers(s)) {
        *locked = HB_PIN_SHARED;
        return s;
    }
    if (!lock_first(s))
        return private_copy(s);
    *locked = first_reader(s) ? HB_PIN_SHARED : HB_PIN_OWN;
    return s;
}

VALUE hb_str_hold_for_batch(VALUE s, int *locked)
{
    *locked = HB_PIN_NONE;
    if (OBJ_FROZEN(s))
        return s;
    if (tmplock_flag_known && !is_tmplocked(s)) {
        rb_str_locktmp(s);
        *locked = HB_PIN_OWN;
        return s;
    }
    if (join_readers(s)) {
        *locked = HB_PIN_SHARED;
        return s;
    }
    if (!lock_first(s)) {
        *locked = HB_PIN_BUSY;
        return s;
    }
    *locked = HB_PIN_OWN;
    return s;
}

VALUE hb_str_private_copy(VALUE s)
{
    return private_copy(s);
}

int hb_str_share_own(VALUE s, size_t readers)
{
    table_lock();
    int ok = (table.used + 1) * 2 <= table.mask + 1 || grow();
    if (ok) {
        reader_slot *r = find(s);
        r->str = s;
        r->readers = readers;
        table.used++;
    }
    table_unlock();
    return ok;
}

/* leave_readers: one reader fewer; 1 if it was the last. */
static int leave_readers(VALUE s)
{
    table_lock();
    reader_slot *r = find(s);
    int last = 0;
    if (r->str == s && --r->readers == 0) {
        remove_at((uint32_t)(r - table.slot));
        last = 1;
    }
    table_unlock();
    return last;
}

void hb_str_release(VALUE s, int locked)
{
    if (locked == HB_PIN_OWN || (locked == HB_PIN_SHARED && leave_readers(s)))
        rb_str_unlocktmp(s);
}

/* Hashbatch.__forget_readers (private): in a forked child, the readers
 * that were inside the parent's other threads are gone; their strings are
 * unlocked. Returns how many strings were. */
static VALUE forget_readers(VALUE self)
{
    (void)self;
    size_t n = 0;
    table_lock();
    for (uint32_t i = 0; i <= table.mask; i++) {
        VALUE s = table.slot[i].str;
        if (s == 0)
            continue;
        if (!tmplock_flag_known || is_tmplocked(s))
            rb_str_unlocktmp(s);
        table.slot[i].str = 0;
        table.slot[i].readers = 0;
        n++;
    }
    table.used = 0;
    table_unlock();
    return SIZET2NUM(n);
}

void hb_pin_counts(size_t *strings, size_t *readers_inside, size_t *copies)
{
    size_t n = 0, inside = 0;
    table_lock();
    for (uint32_t i = 0; i <= table.mask; i++)
        if (table.slot[i].str != 0) {
            n++;
            inside += table.slot[i].readers;
        }
    table_unlock();
    *strings = n;
    *readers_inside = inside;
    *copies = __atomic_load_n(&private_copies, __ATOMIC_RELAXED);
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
    rb_define_singleton_method(hb_mHashbatch, "__forget_readers", forget_readers, 0);
}
