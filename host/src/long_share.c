/*
 * long_share.c - a few long messages shared among the free CPU threads
 * (see long_share.h).
 *
 * Owns: the shared list's streams (state, bytes done, who holds each),
 * the owner's rounds and the helpers' pieces. A round: the owner takes
 * every stream back (it waits for a helper to end its piece, tens of
 * microseconds), hands the helpers the streams with most bytes left,
 * runs the others through its lanes (or OpenSSL, where the measured costs
 * say so for so few), a round's piece each, asking the watcher every
 * HB_CPU_PIECE_BYTES. A helper hashes its stream in short pieces until
 * the owner calls the streams back, and no more than HB_CPU_PIECE_BYTES
 * a round (so a cancel, which the owner hears, waits for no more). The last partial
 * block and the padding of each message are OpenSSL's, at the end.
 * Must not: call the queue with its lock held, or let a helper touch a
 * stream it does not hold.
 */
#include "long_share.h"

#include <pthread.h>
#include <stdatomic.h>

#include "clock.h"
#include "fault.h"
#include "mb/mb_costs.h"
#include "mb/mb_pad.h"
#include "mb/mb_streams.h"
#include "sha1_openssl.h"

/* A round of the owner's: long enough that the round's own cost (taking
 * the streams back waits for a helper's piece, a sixty-fourth of the
 * round) stays near 1%; short enough that a helper, three to five times
 * a lane's speed, moves from stream to stream often, so the streams stay
 * within a few rounds of each other and end together. On the Xeon of
 * RESULTS §6, 16 x 16 MiB ran at 6.2 GB/s with 3 ms rounds, 7.0-7.1 with
 * 1 ms, 6.9-7.0 with 0.5 ms. A round is never longer than the owner's
 * stream with fewest blocks left, so no lane idles inside one (down to a
 * thirty-second of a round). The bytes they give come from this
 * machine's measured costs. */
#define ROUND_NS 1000000.0
#define ROUND_NS_MIN (ROUND_NS / 32)
#define HELPER_PIECES_PER_ROUND 64
#define HELPER_PIECE_BLOCKS_MIN 16u

typedef enum { HELD_BY_NONE = 0, HELD_BY_OWNER, HELD_BY_HELPER } holder;

typedef struct {
    const uint8_t *data;
    uint64_t whole; /* bytes in whole blocks: the part the rounds hash */
    hb_mb_stream st;
    holder held;
    int for_helpers; /* this round, a helper's */
} stream_slot;

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t work;     /* helpers wait here for a stream or the end */
    pthread_cond_t returned; /* the owner waits here for helpers' pieces */
    stream_slot slot[HB_MB_LANES_MAX];
    size_t n;
    unsigned joined, max_helpers;
    atomic_uint in_piece; /* helpers hashing a piece right now */
    atomic_int recall;    /* the owner is taking the streams back */
    uint64_t round;       /* rounds handed out so far */
    int over;             /* nothing more for helpers: they leave */
    uint64_t piece_blocks;
    uint64_t helper_bytes; /* hashed by helpers, not yet told to the watcher */
    uint64_t helper_total; /* hashed by helpers, all told */
    uint64_t helper_cpu_ns;
    hb_help_offer offer;
} share;

static uint64_t blocks_for(double ns, double ns_per_block)
{
    double blocks = ns / (ns_per_block > 0 ? ns_per_block : 1);
    return blocks < 1 ? 1 : (uint64_t)blocks;
}

/* Blocks of each stream in one of the owner's rounds with impl's lanes. */
static uint64_t round_blocks(hb_cpu_impl impl)
{
    return blocks_for(ROUND_NS, hb_mb_costs_of(impl).lanes_ns);
}

/* Rounds a message must last to be shared: below that the rounds' own
 * costs (a check per round, the hand-overs) outweigh what moving streams
 * gains. 256 x 1 MiB (about 2.6 rounds a message) ran 3% slower shared
 * on the Xeon of RESULTS §6 than in one lanes call per take. */
#define SHARE_MIN_ROUNDS 8

uint64_t hb_long_share_min_bytes(hb_cpu_impl impl)
{
    return SHARE_MIN_ROUNDS * round_blocks(impl) * HB_MB_BLOCK;
}

int hb_long_share_pays(hb_cpu_impl impl, unsigned threads)
{
    unsigned lanes = hb_cpu_impl_describe(impl)->lanes;
    if (lanes < 2 || threads < 2)
        return 0;
    unsigned helpers = threads - 1 < lanes - 1 ? threads - 1 : lanes - 1;
    hb_mb_costs c = hb_mb_costs_of(impl);
    double shared = (double)(lanes - helpers) / c.lanes_ns + (double)helpers / c.one_ns;
    size_t each = (lanes + threads - 1) / threads;
    double split = (double)(lanes / each) * hb_mb_streams_rate(impl, each);
    if (lanes % each != 0)
        split += hb_mb_streams_rate(impl, lanes % each);
    return shared > split;
}

int hb_long_share_worth(hb_cpu_impl impl, unsigned max_helpers, const hb_msg *m, size_t n)
{
    unsigned lanes = hb_cpu_impl_describe(impl)->lanes;
    if (max_helpers == 0 || lanes == 0 || n < 2 || n > lanes)
        return 0;
    uint64_t shortest = hb_long_share_min_bytes(impl);
    for (size_t i = 0; i < n; i++)
        if (m[i].len < shortest)
            return 0;
    return 1;
}

static uint64_t blocks_left(const stream_slot *s)
{
    return (s->whole - s->st.bytes) / HB_MB_BLOCK;
}

/* ---- waits too short to sleep through ----------------------------------- */

/* A round's hand-over takes microseconds: a thread that slept through it
 * would wait for the kernel to wake it, often longer than the hand-over
 * itself. So the waits below spin a while first, without the lock. */
#define SPIN_NS 100000u

/* With lock held: drops it and spins while *flag == value, up to
 * SPIN_NS; takes it again (the caller checks what it waits for anew). */
static void spin_while(pthread_mutex_t *lock, atomic_int *flag, int value)
{
    pthread_mutex_unlock(lock);
    uint64_t until = hb_now_ns() + SPIN_NS;
    while (atomic_load(flag) == value && hb_now_ns() < until)
        for (int k = 0; k < 64; k++)
            hb_cpu_relax();
    pthread_mutex_lock(lock);
}

/* ---- the helpers' side --------------------------------------------------- */

/* With sh->lock held: how many helpers could get a stream now (the
 * streams with blocks left, less the owner's one). A stream the owner
 * holds counts as unfinished: its bytes are the owner's to update. */
static unsigned helper_places(const share *sh)
{
    unsigned live = 0;
    for (size_t k = 0; k < sh->n; k++)
        live += sh->slot[k].held == HELD_BY_OWNER || blocks_left(&sh->slot[k]) > 0;
    return live > 0 ? live - 1 : 0;
}

static int join_share(void *ctx)
{
    share *sh = ctx;
    pthread_mutex_lock(&sh->lock);
    int in = !sh->over && sh->joined < sh->max_helpers && sh->joined < helper_places(sh);
    sh->joined += (unsigned)in;
    if (in)
        pthread_cond_signal(&sh->returned); /* an owner may wait for it (wait_for) */
    pthread_mutex_unlock(&sh->lock);
    return in;
}

/* A stream handed to helpers that nobody holds, with blocks left; NULL. */
static stream_slot *helpers_stream(share *sh)
{
    for (size_t k = 0; k < sh->n; k++) {
        stream_slot *s = &sh->slot[k];
        if (s->for_helpers && s->held == HELD_BY_NONE && blocks_left(s) > 0)
            return s;
    }
    return NULL;
}

static void help_share(void *ctx)
{
    share *sh = ctx;
    uint64_t cpu_start = hb_thread_cpu_ns();
    pthread_mutex_lock(&sh->lock);
    uint64_t round = sh->round, hashed = 0; /* this round's bytes: at most a piece */
    for (;;) {
        stream_slot *s = NULL;
        int spun = 0;
        if (sh->round != round)
            round = sh->round, hashed = 0;
        while (!sh->over && (atomic_load(&sh->recall) || hashed >= HB_CPU_PIECE_BYTES ||
                             (s = helpers_stream(sh)) == NULL)) {
            if (sh->joined > helper_places(sh))
                break; /* more helpers than streams left: this one goes back to the queue */
            if (atomic_load(&sh->recall) && !spun) {
                /* once, then everything is checked again under the lock:
                 * the owner may have broadcast (a round, or the end) while
                 * this thread did not hold it */
                spun = 1;
                spin_while(&sh->lock, &sh->recall, 1);
                if (sh->round != round)
                    round = sh->round, hashed = 0;
                continue;
            }
            pthread_cond_wait(&sh->work, &sh->lock);
            if (sh->round != round)
                round = sh->round, hashed = 0;
        }
        if (s == NULL || sh->over)
            break;
        s->held = HELD_BY_HELPER;
        atomic_fetch_add(&sh->in_piece, 1);
        uint64_t blocks = blocks_left(s) < sh->piece_blocks ? blocks_left(s) : sh->piece_blocks;
        const uint8_t *from = s->data + s->st.bytes;
        pthread_mutex_unlock(&sh->lock);
        hb_sha1_openssl_blocks(s->st.h, from, (size_t)blocks);
        pthread_mutex_lock(&sh->lock);
        s->st.bytes += blocks * HB_MB_BLOCK;
        s->held = HELD_BY_NONE;
        sh->helper_bytes += blocks * HB_MB_BLOCK;
        sh->helper_total += blocks * HB_MB_BLOCK;
        hashed += blocks * HB_MB_BLOCK;
        if (atomic_fetch_sub(&sh->in_piece, 1) == 1 && atomic_load(&sh->recall))
            pthread_cond_signal(&sh->returned);
    }
    sh->helper_cpu_ns += hb_thread_cpu_ns() - cpu_start;
    sh->joined--;
    pthread_cond_signal(&sh->returned);
    pthread_mutex_unlock(&sh->lock);
}

/* ---- the owner's side ---------------------------------------------------- */

/* With sh->lock held: spin_while for the helpers' pieces to end. */
static int spin_while_pieces(share *sh)
{
    pthread_mutex_unlock(&sh->lock);
    uint64_t until = hb_now_ns() + SPIN_NS;
    int ended;
    while (!(ended = atomic_load(&sh->in_piece) == 0) && hb_now_ns() < until)
        for (int k = 0; k < 64; k++)
            hb_cpu_relax();
    pthread_mutex_lock(&sh->lock);
    return ended;
}

/* With sh->lock held: waits until no helper is inside a piece, so every
 * stream is free to hand out again. */
static void take_streams_back(share *sh)
{
    atomic_store(&sh->recall, 1);
    while (atomic_load(&sh->in_piece) > 0)
        if (!spin_while_pieces(sh) && atomic_load(&sh->in_piece) > 0) /* again, locked */
            pthread_cond_wait(&sh->returned, &sh->lock);
    for (size_t k = 0; k < sh->n; k++)
        sh->slot[k].for_helpers = 0;
}

/* With sh->lock held: how long the round of the owner's count streams
 * is, in ns of the lanes (see ROUND_NS), and the helpers' piece for it.
 * No longer than the owner's stream with the fewest blocks left, so no
 * lane idles within a round. */
static double plan_round(share *sh, stream_slot *const *mine, size_t count, hb_cpu_impl impl)
{
    uint64_t least = UINT64_MAX;
    for (size_t k = 0; k < count; k++)
        least = blocks_left(mine[k]) < least ? blocks_left(mine[k]) : least;
    hb_mb_costs c = hb_mb_costs_of(impl);
    double ns = (double)least * c.lanes_ns;
    ns = ns > ROUND_NS ? ROUND_NS : ns < ROUND_NS_MIN ? ROUND_NS_MIN : ns;
    uint64_t piece = blocks_for(ns / HELPER_PIECES_PER_ROUND, c.one_ns);
    sh->piece_blocks = piece < HELPER_PIECE_BLOCKS_MIN ? HELPER_PIECE_BLOCKS_MIN : piece;
    return ns;
}

/* With sh->lock held: the round's streams. Helpers (as many as have
 * joined, leaving the owner one) get those with most blocks left; the
 * owner's go in mine[]. Returns how many are the owner's. */
static size_t hand_out(share *sh, stream_slot **mine)
{
    stream_slot *live[HB_MB_LANES_MAX];
    size_t nlive = 0;
    for (size_t k = 0; k < sh->n; k++)
        if (blocks_left(&sh->slot[k]) > 0)
            live[nlive++] = &sh->slot[k];
    size_t helpers = sh->joined < nlive ? sh->joined : nlive - (nlive > 0);
    for (size_t h = 0; h < helpers; h++) { /* the most left, by selection: n <= 16 */
        size_t most = h;
        for (size_t k = h + 1; k < nlive; k++)
            if (blocks_left(live[k]) > blocks_left(live[most]))
                most = k;
        stream_slot *t = live[h];
        live[h] = live[most];
        live[most] = t;
        live[h]->for_helpers = 1;
    }
    size_t count = 0;
    for (size_t k = helpers; k < nlive; k++) {
        live[k]->held = HELD_BY_OWNER;
        mine[count++] = live[k];
    }
    return count;
}

/* Up to `count` streams' next len[k] bytes through impl, checked if
 * check (the setup's, summed into). */
static void run_step(const hb_long_share_setup *setup, hb_cpu_impl impl, stream_slot *const *mine,
                     const size_t *len, size_t count, int checked)
{
    hb_mb_stream *st[HB_MB_LANES_MAX];
    const uint8_t *data[HB_MB_LANES_MAX];
    size_t lens[HB_MB_LANES_MAX], n = 0;
    for (size_t k = 0; k < count; k++) {
        if (len[k] == 0)
            continue;
        st[n] = &mine[k]->st;
        data[n] = mine[k]->data + mine[k]->st.bytes;
        lens[n++] = len[k];
    }
    hb_mb_check check = {0};
    if (checked)
        check.brk = setup->check->brk, check.brk_which = setup->check->brk_which;
    hb_mb_streams_update_checked(impl, st, data, lens, n, checked ? &check : NULL);
    if (checked) {
        setup->check->runs += check.runs;
        setup->check->bytes += check.bytes;
        setup->check->mismatches += check.mismatches;
    }
}

/* One round of the owner's streams: lanes (or OpenSSL, by the measured
 * costs for so few), in steps of HB_CPU_PIECE_BYTES in all, w asked after
 * each (so a cancel waits no longer than elsewhere); the first step is
 * checked. Returns 0 when w said stop; *lanes_ran: lanes did. */
static int run_round(const hb_long_share_setup *setup, stream_slot *const *mine, size_t count,
                     double round_ns, hb_cpu_watch *w, int *lanes_ran)
{
    hb_cpu_impl impl = hb_fault_lanes_forced()
                           ? setup->impl /* a test's: lanes whatever they cost */
                           : hb_mb_impl_for_few(setup->impl, count);
    uint64_t round = impl == HB_CPU_IMPL_SHA_NI
                         ? blocks_for(round_ns, (double)count * hb_mb_costs_of(setup->impl).one_ns)
                         : blocks_for(round_ns, hb_mb_costs_of(impl).lanes_ns);
    uint64_t per_step = HB_CPU_PIECE_BYTES / HB_MB_BLOCK / (count ? count : 1);
    uint64_t todo[HB_MB_LANES_MAX], left = 0;
    for (size_t k = 0; k < count; k++) {
        todo[k] = blocks_left(mine[k]) < round ? blocks_left(mine[k]) : round;
        left += todo[k];
    }
    *lanes_ran |= impl != HB_CPU_IMPL_SHA_NI;
    for (int first = 1; left > 0; first = 0) {
        size_t len[HB_MB_LANES_MAX];
        uint64_t bytes = 0;
        for (size_t k = 0; k < count; k++) {
            uint64_t blocks = todo[k] < per_step ? todo[k] : (per_step ? per_step : 1);
            todo[k] -= blocks;
            left -= blocks;
            len[k] = (size_t)(blocks * HB_MB_BLOCK);
            bytes += len[k];
        }
        run_step(setup, impl, mine, len, count, first && setup->check != NULL);
        hb_cpu_watch_note(w, bytes);
        if (hb_cpu_watch_stopped(w))
            return 0;
    }
    return 1;
}

/* Rounds until every stream's whole blocks are done or w says stop;
 * returns 1 when done. */
static int owner_rounds(share *sh, const hb_long_share_setup *setup, hb_cpu_watch *w,
                        int *lanes_ran)
{
    for (;;) {
        stream_slot *mine[HB_MB_LANES_MAX];
        pthread_mutex_lock(&sh->lock);
        take_streams_back(sh);
        uint64_t helped = sh->helper_bytes;
        sh->helper_bytes = 0;
        pthread_mutex_unlock(&sh->lock);
        hb_cpu_watch_note(w, helped); /* asked before a round is handed out */
        if (hb_cpu_watch_stopped(w))
            return 0; /* the streams stay recalled: no helper starts a piece */
        pthread_mutex_lock(&sh->lock);
        size_t count = hand_out(sh, mine);
        double round_ns = plan_round(sh, mine, count, setup->impl);
        sh->round++;
        atomic_store(&sh->recall, 0);
        pthread_cond_broadcast(&sh->work);
        pthread_mutex_unlock(&sh->lock);
        if (count == 0)
            return 1;
        int going = run_round(setup, mine, count, round_ns, w, lanes_ran);
        pthread_mutex_lock(&sh->lock);
        for (size_t k = 0; k < count; k++)
            mine[k]->held = HELD_BY_NONE;
        pthread_mutex_unlock(&sh->lock);
        if (!going)
            return 0;
    }
}

/* Helpers out: no new one joins, those in leave once their piece ends. */
static void send_helpers_away(share *sh, hb_queue *queue)
{
    hb_queue_withdraw_help(queue, &sh->offer);
    pthread_mutex_lock(&sh->lock);
    sh->over = 1;
    pthread_cond_broadcast(&sh->work);
    while (sh->joined > 0)
        pthread_cond_wait(&sh->returned, &sh->lock);
    pthread_mutex_unlock(&sh->lock);
}

static void share_init(share *sh, const hb_long_share_setup *setup, const hb_msg *m, size_t n)
{
    pthread_mutex_init(&sh->lock, NULL);
    pthread_cond_init(&sh->work, NULL);
    pthread_cond_init(&sh->returned, NULL);
    sh->n = n;
    sh->joined = 0;
    sh->round = 0;
    atomic_init(&sh->in_piece, 0);
    atomic_init(&sh->recall, 0);
    sh->over = 0;
    sh->max_helpers = setup->max_helpers;
    sh->helper_bytes = sh->helper_total = sh->helper_cpu_ns = 0;
    sh->piece_blocks = 1;
    for (size_t i = 0; i < n; i++) {
        stream_slot *s = &sh->slot[i];
        s->data = m[i].data;
        s->whole = m[i].len / HB_MB_BLOCK * HB_MB_BLOCK;
        hb_mb_stream_init(&s->st);
        s->held = HELD_BY_NONE;
        s->for_helpers = 0;
    }
    sh->offer = (hb_help_offer){join_share, help_share, sh, NULL};
}

static void share_destroy(share *sh)
{
    pthread_cond_destroy(&sh->returned);
    pthread_cond_destroy(&sh->work);
    pthread_mutex_destroy(&sh->lock);
}

int hb_long_share_hash(const hb_long_share_setup *setup, const hb_msg *m, size_t n, hb_digest *out,
                       hb_cpu_watch *w, hb_long_share_result *result)
{
    share sh;
    share_init(&sh, setup, m, n);
    hb_mb_check_reset(setup->check);
    hb_queue_offer_help(setup->queue, &sh.offer);
    int lanes_ran = 0;
    pthread_mutex_lock(&sh.lock);
    while (sh.joined < setup->wait_for)
        pthread_cond_wait(&sh.returned, &sh.lock);
    pthread_mutex_unlock(&sh.lock);
    int done = owner_rounds(&sh, setup, w, &lanes_ran);
    send_helpers_away(&sh, setup->queue);
    hb_cpu_watch_note(w, sh.helper_bytes); /* the helpers' last pieces, if stopped */
    for (size_t i = 0; done && i < n; i++) {
        stream_slot *s = &sh.slot[i];
        hb_mb_stream_final(&s->st, s->data + s->whole, (size_t)(m[i].len - s->whole), out[i]);
    }
    result->from_lanes = lanes_ran ? n : 0;
    result->helper_bytes = sh.helper_total;
    result->helper_cpu_ns = sh.helper_cpu_ns;
    share_destroy(&sh);
    hb_cpu_watch_flush(w);
    return done;
}
