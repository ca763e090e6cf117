/*
 * scheduler.c - earliest predicted completion over groups of backends.
 *
 * Owns: the arithmetic of hb_sched_share (the rule is in scheduler.h)
 * and each backend's backlog: when a batch is taken its predicted time
 * is added after what the backend already holds (divided among the
 * batches it runs side by side); when its last batch is done the backlog
 * is reset to now, so errors in the predictions do not pile up. "Now" is
 * hb_now_ns(), or the time source a simulation set (now_ns below).
 * Must not: call into the queue, the workers or the engine.
 */
#include "sched/scheduler.h"

#include <math.h>
#include <string.h>

#include "clock.h"

/* side_by_side starts as if every thread had been busy this long. */
#define SIDE_BY_SIDE_PRIOR_NS 2e6

void hb_sched_init(hb_sched *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
}

void hb_sched_destroy(hb_sched *s)
{
    pthread_mutex_destroy(&s->lock);
}

void hb_sched_set_time_source(hb_sched *s, hb_sched_time_fn source, void *ctx)
{
    pthread_mutex_lock(&s->lock);
    s->time_source = source;
    s->time_ctx = ctx;
    pthread_mutex_unlock(&s->lock);
}

/* The time now (ns), under s's lock. */
static double now_ns(const hb_sched *s)
{
    return (double)(s->time_source != NULL ? s->time_source(s->time_ctx) : hb_now_ns());
}

unsigned hb_sched_add(hb_sched *s, const hb_cost_terms terms[HB_COST_CLASSES], unsigned group,
                      unsigned parallel, int takes_jobs, uint64_t learn_min)
{
    pthread_mutex_lock(&s->lock);
    unsigned k = s->n < HB_SCHED_MAX ? s->n++ : HB_SCHED_MAX - 1;
    hb_sched_backend *b = &s->b[k];
    memset(b, 0, sizeof *b);
    hb_cost_seed(&b->model, terms);
    b->group = group;
    b->parallel = parallel > 0 ? parallel : 1;
    b->side_by_side = b->parallel;
    /* a prior of all its threads busy for a while, which the first
     * batches' times (each one thread's, before the others have started)
     * wear away rather than replace */
    b->busy_ns = SIDE_BY_SIDE_PRIOR_NS;
    b->work_ns = SIDE_BY_SIDE_PRIOR_NS * b->parallel;
    b->takes_jobs = takes_jobs;
    b->learn_min = learn_min;
    pthread_mutex_unlock(&s->lock);
    return k;
}

/* ---- the share ------------------------------------------------------------ */

/* What a group offers for the pending work: its cheapest member, when it
 * could start (backlog plus fixed cost, ns from now) and how long the
 * whole pending work would take it after that. */
typedef struct {
    unsigned group, rep;
    double start_ns, work_ns;
} group_offer;

/* How many batches b needs for n messages holding bytes. */
static double batches_for(const hb_sched_backend *b, uint64_t n, uint64_t bytes)
{
    if ((b->take_messages == 0 || n <= b->take_messages) && (b->take_bytes == 0 || bytes <= b->take_bytes))
        return 1; /* the common case, and the one-message call's: no division */
    double by_messages = b->take_messages ? ceil((double)n / (double)b->take_messages) : 1;
    double by_bytes = b->take_bytes ? ceil((double)bytes / (double)b->take_bytes) : 1;
    double most = by_messages > by_bytes ? by_messages : by_bytes;
    return most > 1 ? most : 1;
}

/* The time backend b needs for all the pending work: its fixed cost
 * before the first result, then the rest (every further batch's fixed
 * cost, and the work) spread over its side-by-side batches (no more of
 * them than there are messages). */
static void cost_of_all(const hb_sched_backend *b, uint64_t n, uint64_t bytes, double *fixed,
                        double *work)
{
    const hb_cost_terms *t = &b->model.terms[hb_cost_class_of(n, bytes)];
    double side_by_side = b->side_by_side < n ? b->side_by_side : (double)(n > 0 ? n : 1);
    *fixed = t->fixed_ns;
    *work = (batches_for(b, n, bytes) - 1) * t->fixed_ns + (double)n * t->ns_per_message +
            (double)bytes * t->ns_per_byte;
    if (side_by_side > 1)
        *work /= side_by_side;
    if (*work < 1e-3)
        *work = 1e-3; /* free work would divide by zero below */
}

static double backlog_ns(const hb_sched_backend *b, double now)
{
    return b->outstanding > 0 && b->busy_until_ns > now ? b->busy_until_ns - now : 0.0;
}

static int shared_with_busy(const hb_sched *s, unsigned k);

/* Fills offers (one per group with a backend that takes jobs), sorted by
 * start; returns how many. A member that waits for a group mate's work
 * in hand is not its group's choice: the mate that is running is (it may
 * take more between its batches, on its free threads), else small work
 * queued behind a long message one member streams would wait for the
 * whole message, its group's choice being the member that may not run.
 * The asker counts as free to run when asker_may_run (a caller hashing a
 * small batch on its own thread). */
static unsigned collect_offers(const hb_sched *s, uint64_t n, uint64_t bytes, double now,
                               unsigned asker, int asker_may_run, group_offer *offers)
{
    unsigned count = 0;
    double backlog[HB_SCHED_MAX] = {0}; /* per offer: its group's members' */
    for (unsigned k = 0; k < s->n; k++) {
        const hb_sched_backend *b = &s->b[k];
        unsigned g = 0;
        while (g < count && offers[g].group != b->group)
            g++;
        if (g == count) {
            offers[count++] = (group_offer){b->group, HB_SCHED_MAX, INFINITY, INFINITY};
        }
        backlog[g] += backlog_ns(b, now);
        int may_run = !shared_with_busy(s, k) || (k == asker && asker_may_run);
        if (!b->takes_jobs || !may_run)
            continue;
        double fixed, work;
        cost_of_all(b, n, bytes, &fixed, &work);
        if (offers[g].rep == HB_SCHED_MAX ||
            fixed + work < offers[g].start_ns + offers[g].work_ns) {
            offers[g].rep = k;
            offers[g].start_ns = fixed;
            offers[g].work_ns = work;
        }
    }
    unsigned kept = 0;
    for (unsigned g = 0; g < count; g++)
        if (offers[g].rep != HB_SCHED_MAX) {
            offers[kept] = offers[g];
            offers[kept++].start_ns += backlog[g];
        }
    for (unsigned i = 1; i < kept; i++) /* insertion sort: a handful */
        for (unsigned j = i; j > 0 && offers[j].start_ns < offers[j - 1].start_ns; j--) {
            group_offer t = offers[j];
            offers[j] = offers[j - 1];
            offers[j - 1] = t;
        }
    return kept;
}

/* Water-filling: the groups that take part (a prefix of the sorted
 * offers) and the time T at which they all finish: each group's part is
 * (T - start) / work of the whole, and the parts add up to 1. */
static unsigned taking_part(const group_offer *offers, unsigned count, double *finish)
{
    if (count == 0)
        return 0;
    /* the first group alone, when no other could start before it is done:
     * every small job (and the inline check of each one-message call) */
    *finish = offers[0].start_ns + offers[0].work_ns;
    if (count == 1 || offers[1].start_ns >= *finish)
        return 1;
    double sum_inverse = 0, sum_start = 0;
    unsigned used = 0;
    while (used < count) {
        if (used > 0 && offers[used].start_ns >= *finish)
            break;
        sum_inverse += 1.0 / offers[used].work_ns;
        sum_start += offers[used].start_ns / offers[used].work_ns;
        *finish = (1.0 + sum_start) / sum_inverse;
        used++;
    }
    return used;
}

/* Whether another backend of k's group has work taken and not done: then
 * k's batch ran beside it on the same cores, and its time says more
 * about the two together than about k. */
static int shared_with_busy(const hb_sched *s, unsigned k)
{
    for (unsigned i = 0; i < s->n; i++)
        if (i != k && s->b[i].group == s->b[k].group && s->b[i].outstanding > 0)
            return 1;
    return 0;
}

/* Whether k shares its group with another backend. */
static int has_group_mates(const hb_sched *s, unsigned k)
{
    for (unsigned i = 0; i < s->n; i++)
        if (i != k && s->b[i].group == s->b[k].group)
            return 1;
    return 0;
}

int hb_sched_share(hb_sched *s, unsigned k, uint64_t pending_messages, uint64_t pending_bytes,
                   int while_mates_busy, uint64_t *max_messages, uint64_t *max_bytes)
{
    if (pending_messages == 0)
        return 0;
    pthread_mutex_lock(&s->lock);
    if (!while_mates_busy && shared_with_busy(s, k)) {
        pthread_mutex_unlock(&s->lock);
        return 0; /* its cores are busy with a group mate's work: wait */
    }
    group_offer offers[HB_SCHED_MAX];
    double finish = 0;
    unsigned count =
        collect_offers(s, pending_messages, pending_bytes, now_ns(s), k, while_mates_busy, offers);
    unsigned used = taking_part(offers, count, &finish);
    double part = 0;
    if (used == 1 && offers[0].rep == k)
        part = 1; /* all of it: no division */
    for (unsigned g = 0; used > 1 && g < used; g++)
        if (offers[g].rep == k)
            part = (finish - offers[g].start_ns) / offers[g].work_ns;
    pthread_mutex_unlock(&s->lock);
    if (!(part > 0))
        return 0;
    part = part < 1 ? part : 1;
    *max_messages = (uint64_t)ceil(part * (double)pending_messages);
    *max_bytes = (uint64_t)ceil(part * (double)pending_bytes);
    if (*max_messages == 0)
        *max_messages = 1;
    if (*max_bytes == 0)
        *max_bytes = 1;
    return 1;
}

int hb_sched_share_for(void *taker, uint64_t pending_messages, uint64_t pending_bytes,
                       uint64_t *max_messages, uint64_t *max_bytes)
{
    hb_sched_taker *t = taker;
    return hb_sched_share(t->sched, t->index, pending_messages, pending_bytes, 0, max_messages,
                          max_bytes);
}

double hb_sched_taken_for(void *taker, uint64_t n, uint64_t bytes)
{
    hb_sched_taker *t = taker;
    return hb_sched_taken(t->sched, t->index, n, bytes);
}

/* ---- side by side -------------------------------------------------------- */

/* Each batch done makes the older ones' part in side_by_side weigh this
 * much less. */
#define SIDE_BY_SIDE_FORGET 0.95

/* How full a batch of n messages and bytes is, by b's take limits (1
 * when b has none). */
static double fullness(const hb_sched_backend *b, uint64_t n, uint64_t bytes)
{
    double by_messages = b->take_messages ? (double)n / (double)b->take_messages : 1;
    double by_bytes = b->take_bytes ? (double)bytes / (double)b->take_bytes : 1;
    double most = by_messages > by_bytes ? by_messages : by_bytes;
    return most < 1 ? most : 1;
}

/* The wall time b had work in hand, up to now. */
static void count_busy(hb_sched_backend *b, double now)
{
    if (b->outstanding > 0 && now > b->last_event_ns)
        b->busy_ns += now - b->last_event_ns;
    b->last_event_ns = now;
}

static void count_work(hb_sched_backend *b, double work_ns)
{
    if (b->model.frozen)
        return; /* forced: its threads count as all side by side */
    b->work_ns = b->work_ns * SIDE_BY_SIDE_FORGET + work_ns;
    b->busy_ns *= SIDE_BY_SIDE_FORGET;
    if (b->busy_ns > 0) {
        double r = b->work_ns / b->busy_ns;
        b->side_by_side = r < 1 ? 1 : r > b->parallel ? b->parallel : r;
    }
}

/* ---- taking and finishing ---------------------------------------------------- */

double hb_sched_taken(hb_sched *s, unsigned k, uint64_t n, uint64_t bytes)
{
    pthread_mutex_lock(&s->lock);
    hb_sched_backend *b = &s->b[k];
    double predicted = hb_cost_predict(&b->model, n, bytes);
    double now = now_ns(s);
    double start = b->outstanding > 0 && b->busy_until_ns > now ? b->busy_until_ns : now;
    b->busy_until_ns = start + predicted / b->side_by_side;
    count_busy(b, now);
    b->outstanding++;
    pthread_mutex_unlock(&s->lock);
    return predicted;
}

int hb_sched_done(hb_sched *s, unsigned k, uint64_t n, uint64_t bytes, double predicted_ns,
                  double measured_ns)
{
    pthread_mutex_lock(&s->lock);
    hb_sched_backend *b = &s->b[k];
    if (measured_ns >= 0 && b->clocked)
        measured_ns = hb_cost_predict(&b->clock, n, bytes);
    int moved =
        measured_ns >= 0 && (measured_ns > 1.5 * predicted_ns || 1.5 * measured_ns < predicted_ns);
    count_busy(b, now_ns(s));
    if (measured_ns >= 0 && b->parallel > 1)
        count_work(b, measured_ns);
    int idle = b->outstanding > 0 && --b->outstanding == 0;
    if (idle)
        b->busy_until_ns = now_ns(s);
    if (measured_ns >= 0) {
        b->predicted_ns += (uint64_t)predicted_ns;
        b->measured_ns += (uint64_t)measured_ns;
        if (n >= b->learn_min && !shared_with_busy(s, k))
            hb_cost_learn(&b->model, n, bytes, measured_ns, fullness(b, n, bytes));
    }
    /* a group mate turned down while k was busy may take now */
    moved |= idle && has_group_mates(s, k);
    pthread_mutex_unlock(&s->lock);
    return moved;
}

void hb_sched_set_takes(hb_sched *s, unsigned k, uint64_t messages, uint64_t bytes)
{
    pthread_mutex_lock(&s->lock);
    s->b[k].take_messages = messages;
    s->b[k].take_bytes = bytes;
    pthread_mutex_unlock(&s->lock);
}

void hb_sched_retire(hb_sched *s, unsigned k)
{
    pthread_mutex_lock(&s->lock);
    s->b[k].takes_jobs = 0;
    pthread_mutex_unlock(&s->lock);
}

void hb_sched_set_takes_jobs(hb_sched *s, unsigned k)
{
    pthread_mutex_lock(&s->lock);
    s->b[k].takes_jobs = 1;
    pthread_mutex_unlock(&s->lock);
}

int hb_sched_force(hb_sched *s, unsigned k, const hb_cost_terms *terms)
{
    for (unsigned c = 0; terms != NULL && c < HB_COST_CLASSES; c++)
        if (!hb_cost_terms_valid(&terms[c]))
            return 0;
    pthread_mutex_lock(&s->lock);
    int ok = k < s->n;
    if (ok && terms != NULL)
        hb_cost_seed(&s->b[k].model, terms);
    else if (ok) /* learn from the terms as they are */
        hb_cost_seed(&s->b[k].model, s->b[k].model.terms);
    if (ok)
        s->b[k].model.frozen = terms != NULL;
    if (ok && terms != NULL) /* the forced terms are the whole cost: none of
                                it hangs on how busy the machine was */
        s->b[k].side_by_side = s->b[k].parallel;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

int hb_sched_set_clock(hb_sched *s, unsigned k, const hb_cost_terms *terms)
{
    for (unsigned c = 0; terms != NULL && c < HB_COST_CLASSES; c++)
        if (!hb_cost_terms_valid(&terms[c]))
            return 0;
    pthread_mutex_lock(&s->lock);
    int ok = k < s->n;
    if (ok && terms != NULL)
        hb_cost_seed(&s->b[k].clock, terms);
    if (ok)
        s->b[k].clocked = terms != NULL;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

void hb_sched_read(hb_sched *s, unsigned k, hb_cost_terms terms[HB_COST_CLASSES],
                   uint64_t *predicted_ns, uint64_t *measured_ns, int *takes_jobs)
{
    pthread_mutex_lock(&s->lock);
    memcpy(terms, s->b[k].model.terms, sizeof s->b[k].model.terms);
    *predicted_ns = s->b[k].predicted_ns;
    *measured_ns = s->b[k].measured_ns;
    *takes_jobs = s->b[k].takes_jobs;
    pthread_mutex_unlock(&s->lock);
}

int hb_sched_learnt(hb_sched *s, unsigned k)
{
    pthread_mutex_lock(&s->lock);
    uint64_t total = 0;
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        total += s->b[k].model.learnt[c];
    pthread_mutex_unlock(&s->lock);
    return total > 0;
}
