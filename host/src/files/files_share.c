/*
 * files_share.c - the big files of a files job shared among its I/O
 * threads once the inputs run out: files moved between one thread's lanes
 * and the other threads' SHA-NI, between rounds.
 *
 * Each I/O thread streams the big files it opened through its own lanes
 * (files_lanes.c). Once every input is taken, a set of fewer files than
 * lanes leaves part of each lane group idle: 16 files on two threads run
 * as 8 lanes on each. So a thread with no input left hands its files to
 * another thread's set where they fit and the measured costs say that
 * pays (one set with a helper against the two apart), and then helps that
 * set. Before each of its rounds, the set's owner sets aside for every
 * waiting helper the file with the most bytes left; the helper reads and
 * hashes it with OpenSSL (SHA-NI) and hands it back just before the
 * owner's next round, so the files end together and the owner's lanes stay
 * full: 16 files on two cores run as 15 lanes beside one core of SHA-NI
 * (issue 31), as long lists do in long_share.c. A file moves only between
 * rounds, when its lane holds no bytes: all it carries is its SHA-1 so far
 * and its descriptor's offset. A helper holding a file when the owner has
 * left finishes it alone (the last file of a set: one stream is SHA-NI's).
 *
 * Owns: the merge of sets, helpers joining and leaving a set, the
 * hand-overs, and what a helper does with a file.
 * Must not: hash in lanes (files_lanes.c does), hold share_lock while
 * reading or hashing, or make an owner wait for a helper.
 */
#include <string.h>

#include "clock.h"
#include "counters.h"
#include "engine_internal.h"
#include "files/files_internal.h"
#include "mb/mb_costs.h"

/* A helper's read: about 40 us of SHA-NI, so that it hands a file back
 * within a few percent of the owner's round. */
#define HELPER_PIECE_BYTES ((size_t)64 << 10)

/* A helper waits microseconds for the owner's next round: it spins that
 * long before it sleeps (waking from a sleep takes longer). */
#define SPIN_NS 100000u

/* ---- the counts, with share_lock held ---------------------------------- */

/* Files of u's set wherever they are: in its lanes, handed to it, set
 * aside, or held by its helpers. */
static unsigned set_files(const files_io_thread *u)
{
    const files_share_point *p = &u->share;
    return p->in_set + p->n_incoming + p->n_offered + p->out;
}

/* 1 when u's set may have helpers: every input is some thread's (so a
 * thread that helps has nothing else to do) and u's thread runs it. */
static int set_helped(const files_io_thread *u)
{
    return atomic_load(&u->job->all_taken) && !u->share.gone && u->lanes.capacity > 0;
}

/* 1 when other sets may merge into u's: its thread takes no more inputs. */
static int set_open(const files_io_thread *u)
{
    return u->share.inputs_done && set_helped(u);
}

/* Bytes file l has left, by its size when opened. */
static uint64_t bytes_left(const files_lane *l)
{
    return l->f.at_open.size > l->stream.bytes ? l->f.at_open.size - l->stream.bytes : 0;
}

/* ---- merging sets ------------------------------------------------------- */

void files_share_note_reads(hb_files_job *j, uint64_t ns, uint64_t bytes)
{
    atomic_fetch_add(&j->read_ns, ns);
    atomic_fetch_add(&j->read_bytes, bytes);
}

/* Blocks a ns of a thread that reads and hashes count streams side by
 * side (a block read costs read_ns, one of each hashed 1 / rate of them). */
static double read_and_hash_rate(hb_cpu_impl impl, unsigned count, double read_ns)
{
    double rate = hb_mb_streams_rate(impl, count);
    return rate > 0 ? 1.0 / (1.0 / rate + read_ns) : 0;
}

/* 1 when, by the measured costs, a set of `into` files and one of `from`
 * run faster as one set of into + from files, with the thread of the
 * second helping by SHA-NI, than apart. Every thread reads what it hashes,
 * and reading a page-cached file costs about what hashing it in lanes
 * does: so nothing merges before a round has measured reading. */
static int merge_pays(const hb_files_job *j, hb_cpu_impl impl, unsigned into, unsigned from)
{
    uint64_t bytes = atomic_load(&j->read_bytes);
    if (bytes == 0)
        return 0;
    double read_ns = (double)atomic_load(&j->read_ns) / (double)bytes * HB_MB_BLOCK;
    double apart =
        read_and_hash_rate(impl, into, read_ns) + read_and_hash_rate(impl, from, read_ns);
    double one_ns = hb_mb_costs_of(impl).one_ns;
    double merged = read_and_hash_rate(impl, into + from - 1, read_ns) + 1.0 / (one_ns + read_ns);
    return merged > apart;
}

/* The open set, other than t's, with the most files that t's files fit in
 * and that has at least as many (the smaller set moves), or NULL. */
static files_io_thread *merge_target(files_io_thread *t)
{
    hb_files_job *j = t->job;
    files_io_thread *best = NULL;
    for (unsigned k = 0; k < j->nio; k++) {
        files_io_thread *u = j->io[k];
        if (u == t || !set_open(u) || u->lanes.impl != t->lanes.impl)
            continue;
        unsigned n = set_files(u);
        if (n < t->lanes.n || n + t->lanes.n > u->lanes.capacity)
            continue;
        if (best == NULL || n > set_files(best))
            best = u;
    }
    return best;
}

void files_share_merge(files_io_thread *t)
{
    hb_files_job *j = t->job;
    pthread_mutex_lock(&j->share_lock);
    files_share_point *p = &t->share;
    p->inputs_done = 1;
    p->in_set = t->lanes.n;
    files_io_thread *u = NULL;
    if (t->lanes.n > 0 && t->lanes.capacity > 0 && p->helpers == 0 && set_files(t) == t->lanes.n &&
        !atomic_load(&j->cancelled))
        u = merge_target(t);
    if (u != NULL && merge_pays(j, t->lanes.impl, set_files(u), t->lanes.n)) {
        files_share_point *q = &u->share;
        for (unsigned k = 0; k < t->lanes.n; k++)
            q->incoming[q->n_incoming++] = t->lanes.lane[k];
        t->lanes.n = 0;
        p->in_set = 0;
    }
    pthread_mutex_unlock(&j->share_lock);
}

/* ---- the owner's side -------------------------------------------------- */

/* Index of the file in t's lanes with the most bytes left. */
static unsigned most_left(const files_lanes *s)
{
    unsigned best = 0;
    for (unsigned k = 1; k < s->n; k++)
        if (bytes_left(&s->lane[k]) > bytes_left(&s->lane[best]))
            best = k;
    return best;
}

/* Files set aside earlier and not taken back into t's lanes. */
static void take_back_offered(files_io_thread *t)
{
    files_share_point *p = &t->share;
    for (unsigned k = 0; k < p->n_offered; k++)
        t->lanes.lane[t->lanes.n++] = p->offered[k];
    p->n_offered = 0;
}

void files_share_round_start(files_io_thread *t)
{
    hb_files_job *j = t->job;
    files_lanes *s = &t->lanes;
    files_share_point *p = &t->share;
    pthread_mutex_lock(&j->share_lock);
    for (unsigned k = 0; k < p->n_incoming; k++)
        s->lane[s->n++] = p->incoming[k];
    p->n_incoming = 0;
    take_back_offered(t);
    while (p->waiting > p->n_offered && s->n >= 2) { /* the owner keeps one */
        unsigned k = most_left(s);
        p->offered[p->n_offered++] = s->lane[k];
        s->lane[k] = s->lane[--s->n];
    }
    p->in_set = s->n;
    atomic_store(&p->round_start_ns, hb_now_ns());
    atomic_fetch_add(&p->rounds, 1);
    if (p->n_offered > 0)
        pthread_cond_broadcast(&j->share_cond);
    pthread_mutex_unlock(&j->share_lock);
}

void files_share_round_end(files_io_thread *t, uint64_t ns)
{
    hb_files_job *j = t->job;
    atomic_store(&t->share.round_ns, ns);
    pthread_mutex_lock(&j->share_lock);
    t->share.in_set = t->lanes.n;
    pthread_mutex_unlock(&j->share_lock);
}

int files_share_owner_busy(files_io_thread *t)
{
    hb_files_job *j = t->job;
    files_share_point *p = &t->share;
    pthread_mutex_lock(&j->share_lock);
    if (t->lanes.n + p->n_incoming == 0)
        take_back_offered(t);
    int busy = t->lanes.n + p->n_incoming > 0;
    if (!busy && !p->gone) {
        p->gone = 1; /* what its helpers hold, they finish */
        pthread_cond_broadcast(&j->share_cond);
    }
    pthread_mutex_unlock(&j->share_lock);
    return busy;
}

/* ---- the helper's side ------------------------------------------------- */

/* The open set, other than t's, with the most files, that has a file for
 * one more helper (its owner keeps one), or NULL. */
static files_io_thread *help_target(files_io_thread *t)
{
    hb_files_job *j = t->job;
    files_io_thread *best = NULL;
    for (unsigned k = 0; k < j->nio; k++) {
        files_io_thread *u = j->io[k];
        if (u == t || !set_helped(u) || set_files(u) < u->share.helpers + 2)
            continue;
        if (best == NULL || set_files(u) > set_files(best))
            best = u;
    }
    return best;
}

/* When the helper should hand its file back: before the owner's next
 * round, as far as the owner's last round says. */
typedef struct {
    unsigned rounds;  /* the owner's rounds when the file was taken */
    uint64_t due_ns;  /* its next round's expected start; 0: unknown */
    uint64_t step_ns; /* the helper's last piece */
    uint64_t hashed;  /* bytes hashed by the helper (moved) */
} hand_back;

static int hand_back_now(const files_io_thread *u, const hand_back *h)
{
    if (atomic_load(&u->share.rounds) != h->rounds)
        return 1; /* late: the owner's next round has begun */
    return h->due_ns != 0 && hb_now_ns() + h->step_ns >= h->due_ns;
}

/* One piece of l read into t's own set's area (empty while t helps: at
 * least a block, whatever chunk_bytes is) and hashed by OpenSSL. Returns 1
 * when l ended or failed (then finished here). */
static int help_one_piece(files_io_thread *t, files_lane *l, hand_back *h)
{
    hb_files_job *j = t->job;
    size_t area = t->lanes.piece_bytes * t->lanes.capacity;
    size_t piece =
        (HELPER_PIECE_BYTES < area ? HELPER_PIECE_BYTES : area) & ~(size_t)(HB_MB_BLOCK - 1);
    uint64_t began = hb_now_ns();
    files_lane_read_piece(j, l, t->lanes.area, piece);
    size_t whole = l->len & ~(size_t)(HB_MB_BLOCK - 1);
    l->rest = l->len - whole; /* non-zero only at the end of the file */
    if (l->st == HB_OK && whole > 0) {
        hb_mb_stream *s = &l->stream;
        const uint8_t *data = l->buf;
        hb_mb_streams_update(HB_CPU_IMPL_SHA_NI, &s, &data, &whole, 1);
        h->hashed += whole;
    }
    h->step_ns = hb_now_ns() - began;
    if (l->ended || l->st != HB_OK) {
        files_lane_finish(j, l);
        return 1;
    }
    return 0;
}

/* l hashed by t until it is due back at u's set, or until it ends
 * (alone: until it ends). Returns 1 when l was finished. */
static int help_with(files_io_thread *t, files_io_thread *u, files_lane *l, int alone)
{
    hand_back h = {0};
    h.rounds = atomic_load(&u->share.rounds);
    uint64_t last = atomic_load(&u->share.round_ns);
    h.due_ns = last ? atomic_load(&u->share.round_start_ns) + last : 0;
    int finished = 0;
    do
        finished = help_one_piece(t, l, &h);
    while (!finished && (alone || !hand_back_now(u, &h)));
    hb_counters_moved(&t->job->engine->counters, h.hashed);
    return finished;
}

/* With share_lock held: waits until u offers a file, u's owner leaves or
 * the job is cancelled; spins a while first, without the lock. */
static void wait_for_offer(files_io_thread *u)
{
    hb_files_job *j = u->job;
    files_share_point *p = &u->share;
    unsigned seen = atomic_load(&p->rounds);
    pthread_mutex_unlock(&j->share_lock);
    uint64_t until = hb_now_ns() + SPIN_NS;
    while (atomic_load(&p->rounds) == seen && !atomic_load(&j->cancelled) && hb_now_ns() < until)
        hb_cpu_relax();
    pthread_mutex_lock(&j->share_lock);
    while (p->n_offered == 0 && !p->gone && !atomic_load(&j->cancelled))
        pthread_cond_wait(&j->share_cond, &j->share_lock); /* offers and leaving broadcast */
}

/* With share_lock held: t helps u until u's owner has left and t holds
 * nothing of u's (or the job was cancelled). */
static void help_set(files_io_thread *t, files_io_thread *u)
{
    hb_files_job *j = t->job;
    files_share_point *p = &u->share;
    p->helpers++;
    for (;;) {
        p->waiting++;
        while (p->n_offered == 0 && !p->gone && !atomic_load(&j->cancelled))
            wait_for_offer(u);
        p->waiting--;
        if (p->n_offered == 0)
            break; /* the owner left, or the job was cancelled */
        files_lane l = p->offered[--p->n_offered];
        p->out++;
        pthread_mutex_unlock(&j->share_lock);
        int finished = help_with(t, u, &l, 0);
        pthread_mutex_lock(&j->share_lock);
        p->out--;
        if (finished)
            continue;
        if (!p->gone) {
            p->incoming[p->n_incoming++] = l;
            continue;
        }
        pthread_mutex_unlock(&j->share_lock); /* the owner left: to its end here */
        help_with(t, u, &l, 1);
        pthread_mutex_lock(&j->share_lock);
    }
    p->helpers--;
}

int files_share_help(files_io_thread *t)
{
    hb_files_job *j = t->job;
    pthread_mutex_lock(&j->share_lock);
    /* t reads into its own set's area: without one (no lanes), no help */
    files_io_thread *u =
        atomic_load(&j->cancelled) || t->lanes.area == NULL ? NULL : help_target(t);
    if (u != NULL)
        help_set(t, u);
    pthread_mutex_unlock(&j->share_lock);
    return u != NULL;
}

void files_share_wake(hb_files_job *j)
{
    pthread_mutex_lock(&j->share_lock);
    pthread_cond_broadcast(&j->share_cond);
    pthread_mutex_unlock(&j->share_lock);
}
