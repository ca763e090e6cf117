/*
 * turns.c - which Ruby threads hash mid-sized inputs without the GVL, and
 * how they take the GVL back afterwards.
 *
 * Owns: the turns (gvl_slots of them, one per CPU the process may use by
 * default) and the hand-off of the GVL among the threads holding them.
 *
 * Why: Ruby 3.1 passes its GVL from thread to thread by waking a sleeping
 * thread, and one wake costs more than hashing 4 KiB. Threads that hash
 * small strings in a loop and release the GVL for each would spend their
 * time waking each other (measured: four such threads on two cores keep
 * one core busy). Two rules keep them out of that sleep:
 *  - Turns. Only a thread holding a turn hashes without the GVL. A thread
 *    keeps its turn from call to call; it gives it up when its slice
 *    (turn_slice_ns, from gvl_params.c's measurements) is over and
 *    another thread waits, and then waits itself. A turn unused for
 *    TURN_IDLE_NS is free (its thread is done, or doing something
 *    else): a holder that sees one wakes the waiters, who otherwise look
 *    for themselves every WAIT_BACKSTOP_NS. So extra threads sleep once
 *    per slice, not once per call. Waiting releases the GVL and can be
 *    interrupted.
 *  - Hand-off. A turn holder that has hashed while another turn holder
 *    is back in Ruby (holding the GVL, or about to take it) spins until
 *    that one releases the GVL for its next hash, then takes the GVL
 *    while it is free instead of sleeping on it. It spins at most as long
 *    as blocking costs (spin-then-block): the cost a blocked holder is
 *    seen to pay, from giving up the spin to its next call (block_cost,
 *    an average of those seen), starting from the measured wake of a
 *    sleeping thread (handoff_spin_ns, gvl_params.c), which is its floor.
 *    And it spins only while a core is free for it: the threads hashing,
 *    those spinning and the one in Ruby leave one over (else it goes to
 *    take the GVL at once, and sleeps on it if need be).
 * After fork the child starts with no turns held.
 * Must not: hash, or block while holding the GVL (the mutex guards only
 * a few assignments).
 */
#include "hb_ext.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#define TURNS_MAX 1024
#define TURN_IDLE_NS 1000000ull     /* 1 ms without a hash: the turn is free */
#define WAIT_BACKSTOP_NS 5000000ull /* a waiter looks for idle turns itself */

/* From gvl_params.c's measurements, set once in hb_ext_init_turns. */
static uint64_t turn_slice_ns = 50000000ull;
static uint64_t handoff_spin_ns = 20000ull; /* the spin's floor */
static long cpus = 1;

#define SPIN_MAX_NS 200000ull          /* the spin's ceiling */
#define BLOCK_SAMPLE_MAX_NS 1000000ull /* a longer block (a GC, a slice) counts as this */
#define BLOCK_COST_WEIGHT 8            /* a new sample moves the average by 1/8 */
static _Atomic uint64_t block_cost_ns; /* what blocking was seen to cost */

/* A turn's fields change under turn_lock; its owner reads them without
 * it, to keep its turn without locking on every call. Each turn has a
 * cache line of its own: its owner writes last_ns on every call, and a
 * line shared with another turn would pass between their cores. */
typedef struct {
    _Atomic uint64_t owner;    /* thread id, 0 when free */
    _Atomic uint64_t since_ns; /* when the owner took it */
    _Atomic uint64_t last_ns;  /* the owner's last call */
} __attribute__((aligned(64))) turn;

static turn turns[TURNS_MAX];
static _Atomic uint64_t turn_idle_ns = TURN_IDLE_NS; /* tests may lengthen it */
static long turn_count = 1;
static atomic_long waits_total, yields_total; /* for gvl_stats */
static atomic_long spins_total, blocks_total;
static _Atomic uint64_t nudged_ns; /* when a holder last woke the waiters */
static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_freed; /* on CLOCK_MONOTONIC: init_turn_freed */

/* What every call reads or changes, in one cache line (one miss a call,
 * not one per variable, as the line passes between cores):
 * in_ruby: the turn holder that has hashed and is taking or holding the
 * GVL (0: none); the others wait for it to hash again. */
static struct {
    atomic_uint_fast64_t in_ruby;
    atomic_long hashing_now;  /* threads between hb_turn_hashing and _hashed */
    atomic_long spinning_now; /* threads spinning in hb_turn_hashed */
    atomic_int waiting;       /* threads waiting for a turn */
} __attribute__((aligned(64))) hot;

/* The calling thread: its id (never reused) and the turn it last held.
 * Fetched once per call: thread-locals of a loaded library cost a call. */
typedef struct {
    uint64_t id;
    long turn;
    uint64_t blocked_ns; /* when it last gave up spinning (0: since seen) */
} turn_self;

static atomic_uint_fast64_t next_thread_id = 1;
static _Thread_local turn_self self_tls = {0, -1, 0};

static turn_self *this_thread(void)
{
    turn_self *me = &self_tls;
    if (me->id == 0)
        me->id = atomic_fetch_add(&next_thread_id, 1);
    return me;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void init_turn_freed(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&turn_freed, &attr);
    pthread_condattr_destroy(&attr);
}

/* forget_after_fork (pthread_atfork, in the child): no thread of the
 * parent's holds or waits for a turn there, and the lock may have been
 * copied held. */
static void forget_after_fork(void)
{
    pthread_mutex_init(&turn_lock, NULL);
    init_turn_freed();
    for (long i = 0; i < TURNS_MAX; i++)
        atomic_store(&turns[i].owner, 0);
    atomic_store(&hot.waiting, 0);
    atomic_store(&hot.in_ruby, 0);
    atomic_store(&hot.hashing_now, 0);
    atomic_store(&hot.spinning_now, 0);
}

/* holds_turn: 1 if me holds the turn it last took. */
static int holds_turn(const turn_self *me)
{
    return me->turn >= 0 && me->turn < turn_count &&
           atomic_load_explicit(&turns[me->turn].owner, memory_order_acquire) == me->id;
}

/* grab_turn: me takes a free or idle turn; 1 if it got one. Locked. */
static int grab_turn(turn_self *me, uint64_t now)
{
    uint64_t idle_ns = atomic_load_explicit(&turn_idle_ns, memory_order_relaxed);
    for (long i = 0; i < turn_count; i++) {
        turn *t = &turns[i];
        if (atomic_load(&t->owner) == 0 || now - atomic_load(&t->last_ns) > idle_ns) {
            atomic_store(&t->since_ns, now);
            atomic_store(&t->last_ns, now);
            atomic_store(&t->owner, me->id);
            me->turn = i;
            return 1;
        }
    }
    return 0;
}

/* nudge_if_idle_turn: while threads wait, a holder that finds a turn
 * idle (its thread done, or doing something else) wakes them, at most
 * once per TURN_IDLE_NS; so waiters need not poll often. */
static void nudge_if_idle_turn(uint64_t now)
{
    uint64_t idle_ns = atomic_load_explicit(&turn_idle_ns, memory_order_relaxed);
    if (now - atomic_load_explicit(&nudged_ns, memory_order_relaxed) <= idle_ns)
        return;
    for (long i = 0; i < turn_count; i++) {
        turn *t = &turns[i];
        if (atomic_load_explicit(&t->owner, memory_order_relaxed) == 0 ||
            now - atomic_load_explicit(&t->last_ns, memory_order_relaxed) > idle_ns) {
            atomic_store(&nudged_ns, now);
            pthread_mutex_lock(&turn_lock);
            pthread_cond_broadcast(&turn_freed);
            pthread_mutex_unlock(&turn_lock);
            return;
        }
    }
}

/* keeps_turn: 1 if me, holding a turn, keeps it for one more call; 0
 * after giving it up because its slice is over and another thread
 * waits. */
static int keeps_turn(turn_self *me, uint64_t now)
{
    turn *t = &turns[me->turn];
    if (atomic_load_explicit(&hot.waiting, memory_order_relaxed) == 0) {
        atomic_store_explicit(&t->last_ns, now, memory_order_relaxed);
        return 1;
    }
    if (now - atomic_load_explicit(&t->since_ns, memory_order_relaxed) <= turn_slice_ns) {
        atomic_store_explicit(&t->last_ns, now, memory_order_relaxed);
        nudge_if_idle_turn(now);
        return 1;
    }
    pthread_mutex_lock(&turn_lock);
    uint_fast64_t id = me->id;
    atomic_compare_exchange_strong(&t->owner, &id, 0);
    me->turn = -1;
    pthread_cond_broadcast(&turn_freed);
    pthread_mutex_unlock(&turn_lock);
    atomic_fetch_add_explicit(&yields_total, 1, memory_order_relaxed);
    return 0;
}

/* takes_free_turn: 1 if me took a free turn. Only when nobody waits: a
 * thread that arrives does not pass those waiting. */
static int takes_free_turn(turn_self *me, uint64_t now)
{
    if (atomic_load(&hot.waiting) > 0)
        return 0;
    pthread_mutex_lock(&turn_lock);
    int got = grab_turn(me, now);
    pthread_mutex_unlock(&turn_lock);
    return got;
}

typedef struct {
    turn_self *me;
    volatile int interrupted;
    int yielded; /* gave its turn up: lets another take it first */
    int got;
} turn_wait;

/* leave_ruby: the thread with turn id has released the GVL: the holder
 * spinning for it (hb_turn_hashed) may take it. */
static void leave_ruby(uint64_t id)
{
    uint_fast64_t mine = id;
    if (id && atomic_load_explicit(&hot.in_ruby, memory_order_relaxed) == id)
        atomic_compare_exchange_strong(&hot.in_ruby, &mine, 0);
}

/* wait_nogvl: sleeps until a turn is free (or idle) and takes it, or
 * until interrupted. Runs without the GVL. */
static void *wait_nogvl(void *p)
{
    turn_wait *w = p;
    leave_ruby(w->me->id); /* not in Ruby: nobody waits for it */
    pthread_mutex_lock(&turn_lock);
    atomic_fetch_add(&hot.waiting, 1);
    while (!w->interrupted) {
        uint64_t now = now_ns();
        if (!w->yielded && grab_turn(w->me, now)) {
            w->got = 1;
            break;
        }
        w->yielded = 0;
        uint64_t until = now + WAIT_BACKSTOP_NS;
        struct timespec ts = {(time_t)(until / 1000000000ull), (long)(until % 1000000000ull)};
        pthread_cond_timedwait(&turn_freed, &turn_lock, &ts);
    }
    atomic_fetch_sub(&hot.waiting, 1);
    pthread_mutex_unlock(&turn_lock);
    return NULL;
}

static void wait_ubf(void *p)
{
    turn_wait *w = p;
    pthread_mutex_lock(&turn_lock);
    w->interrupted = 1;
    pthread_cond_broadcast(&turn_freed);
    pthread_mutex_unlock(&turn_lock);
}

/* wait_for_turn: releases the GVL until me holds a turn. Raises (holding
 * nothing) if the thread is interrupted meanwhile. */
static void wait_for_turn(turn_self *me, int yielded)
{
    atomic_fetch_add_explicit(&waits_total, 1, memory_order_relaxed);
    for (;;) {
        turn_wait w = {me, 0, yielded, 0};
        hb_nogvl(HB_NOGVL_WAIT, wait_nogvl, &w, wait_ubf, &w, 0);
        yielded = 0;
        if (w.got)
            return;
        rb_thread_check_ints();
    }
}

/* spin_limit_ns: as long as blocking costs, within the floor and ceiling. */
static uint64_t spin_limit_ns(void)
{
    uint64_t c = atomic_load_explicit(&block_cost_ns, memory_order_relaxed);
    return c < handoff_spin_ns ? handoff_spin_ns : c > SPIN_MAX_NS ? SPIN_MAX_NS : c;
}

/* note_block_cost: me blocked at me->blocked_ns and is back in a call. */
static void note_block_cost(turn_self *me, uint64_t now)
{
    uint64_t sample = now - me->blocked_ns;
    me->blocked_ns = 0;
    if (sample > BLOCK_SAMPLE_MAX_NS)
        sample = BLOCK_SAMPLE_MAX_NS;
    uint64_t avg = atomic_load_explicit(&block_cost_ns, memory_order_relaxed);
    int64_t step = ((int64_t)sample - (int64_t)avg) / BLOCK_COST_WEIGHT;
    atomic_store_explicit(&block_cost_ns, (uint64_t)((int64_t)avg + step), memory_order_relaxed);
}

uint64_t hb_turn_take(void)
{
    if (turn_count == 0)
        return 0;
    turn_self *me = this_thread();
    uint64_t now = now_ns();
    if (me->blocked_ns)
        note_block_cost(me, now);
    if (holds_turn(me)) {
        if (!keeps_turn(me, now))
            wait_for_turn(me, 1);
    } else if (!takes_free_turn(me, now)) {
        wait_for_turn(me, 0);
    }
    return me->id;
}

void hb_turn_hashing(uint64_t id)
{
    leave_ruby(id); /* first: never counted in Ruby and hashing at once */
    atomic_fetch_add_explicit(&hot.hashing_now, 1, memory_order_relaxed);
}

/* core_free_to_spin: 1 if every thread hashing, every one spinning, the
 * one in Ruby (holding the GVL) and this one (counted among the spinning
 * once self_counted) have a core each. */
static int core_free_to_spin(int self_counted)
{
    long busy = atomic_load_explicit(&hot.hashing_now, memory_order_relaxed) +
                atomic_load_explicit(&hot.spinning_now, memory_order_relaxed) + !self_counted;
    return busy + 1 <= cpus;
}

/* spin_for_gvl: 1 once the holder in Ruby released the GVL and this one
 * (turn id) is the next in Ruby; 0 after spin_limit_ns, or as soon as no
 * core is free for spinning. */
static int spin_for_gvl(uint64_t id)
{
    uint64_t start = now_ns();
    uint64_t limit = spin_limit_ns();
    atomic_fetch_add_explicit(&hot.spinning_now, 1, memory_order_relaxed);
    int got = 0;
    for (unsigned i = 1;; i++) {
        uint_fast64_t none = 0;
        if (atomic_load_explicit(&hot.in_ruby, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_weak(&hot.in_ruby, &none, id)) {
            got = 1;
            break;
        }
        if ((i & 63) == 0 && (now_ns() - start > limit || !core_free_to_spin(1))) {
            none = 0; /* the one in Ruby may have just left it to hash */
            got = atomic_compare_exchange_strong(&hot.in_ruby, &none, id);
            break;
        }
        cpu_relax();
    }
    atomic_fetch_sub_explicit(&hot.spinning_now, 1, memory_order_relaxed);
    return got;
}

void hb_turn_hashed(uint64_t id)
{
    atomic_fetch_sub_explicit(&hot.hashing_now, 1, memory_order_relaxed);
    if (id == 0)
        return;
    uint_fast64_t none = 0;
    if (atomic_compare_exchange_strong(&hot.in_ruby, &none, id))
        return; /* nobody in Ruby: take the GVL at once */
    if (core_free_to_spin(0) && spin_for_gvl(id)) {
        atomic_fetch_add_explicit(&spins_total, 1, memory_order_relaxed);
        return;
    }
    atomic_fetch_add_explicit(&blocks_total, 1, memory_order_relaxed);
    this_thread()->blocked_ns = now_ns(); /* hb_turn_take sees what it cost */
    atomic_store(&hot.in_ruby, id);       /* the other is doing something else, or cores are busy */
}

long hb_turns(void)
{
    return turn_count;
}

uint64_t hb_turn_block_cost_ns(void)
{
    return atomic_load(&block_cost_ns);
}

void hb_turn_stats(long *waits, long *yields, long *spins, long *blocks)
{
    *waits = atomic_load(&waits_total);
    *yields = atomic_load(&yields_total);
    *spins = atomic_load(&spins_total);
    *blocks = atomic_load(&blocks_total);
}

void hb_turns_set(long n)
{
    if (n < 0 || n > TURNS_MAX)
        rb_raise(rb_eArgError, "gvl_slots must be from 0 to %d (got %ld)", TURNS_MAX, n);
    pthread_mutex_lock(&turn_lock);
    turn_count = n;
    pthread_cond_broadcast(&turn_freed);
    pthread_mutex_unlock(&turn_lock);
}

void hb_turns_set_idle_ns_for_test(uint64_t ns)
{
    atomic_store(&turn_idle_ns, ns ? ns : TURN_IDLE_NS);
}

uint64_t hb_turns_idle_ns(void)
{
    return atomic_load(&turn_idle_ns);
}

void hb_ext_init_turns(void)
{
    const hb_gvl_params *p = hb_gvl_params_get();
    turn_slice_ns = p->turn_slice_ns;
    handoff_spin_ns = p->handoff_spin_ns;
    atomic_store(&block_cost_ns, handoff_spin_ns);
    cpus = p->cpus;
    turn_count = cpus < TURNS_MAX ? cpus : TURNS_MAX;
    init_turn_freed();
    pthread_atfork(NULL, NULL, forget_after_fork);
}
