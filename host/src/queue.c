/*
 * queue.c - jobs in, batches out.
 *
 * Owns: the pending-job FIFO and batch building. A take walks the jobs from
 * the head, taking each one's next messages until the taker's byte or
 * message budget is reached; messages longer than `long_above` go in takes
 * of their own (up to long_max together, to share a device's lanes), so a
 * huge message never drags short ones along behind it. Before a take from
 * the jobs, the taker's share callback (the scheduler) may cut its limits
 * to its part of the pending work, or turn it down: it then waits to be
 * poked (a batch finished somewhere) or for a new job, and asks again.
 * Jobs whose messages are all handed out leave the queue (their references
 * stay with the batches that carry their slices).
 * Must not: hash, or hold its lock while anything slow runs.
 */
#include "queue.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void hb_queue_init(hb_queue *q, int cpu_takes_jobs)
{
    memset(q, 0, sizeof *q);
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->device_work, NULL);
    pthread_cond_init(&q->cpu_work, NULL);
    pthread_cond_init(&q->reconsider, NULL);
    atomic_init(&q->cpu_takes_jobs, cpu_takes_jobs);
    atomic_init(&q->closing, 0);
}

void hb_queue_destroy(hb_queue *q)
{
    pthread_cond_destroy(&q->reconsider);
    pthread_cond_destroy(&q->cpu_work);
    pthread_cond_destroy(&q->device_work);
    pthread_mutex_destroy(&q->lock);
}

static void wake_takers(hb_queue *q)
{
    pthread_cond_broadcast(&q->device_work);
    if (q->cpu_takes_jobs)
        pthread_cond_signal(&q->cpu_work);
}

hb_status hb_queue_push(hb_queue *q, hb_job *j)
{
    pthread_mutex_lock(&q->lock);
    if (q->closing) {
        pthread_mutex_unlock(&q->lock);
        return HB_ERR_CLOSED;
    }
    j->queued = 1;
    j->queue = q;
    j->queue_next = NULL;
    if (q->tail)
        q->tail->queue_next = j;
    else
        q->head = j;
    q->tail = j;
    q->pending_messages += j->n;
    q->pending_bytes += j->bytes_left;
    q->pending_jobs++;
    wake_takers(q);
    if (atomic_load(&q->declined) > 0 && (q->pending_messages >= 2 * q->declined_messages ||
                                          q->pending_bytes >= 2 * q->declined_bytes))
        pthread_cond_broadcast(&q->reconsider); /* enough new work to matter */
    pthread_mutex_unlock(&q->lock);
    return HB_OK;
}

/* Unlinks j, whose predecessor is prev (NULL: j is the head). */
static void unlink_job(hb_queue *q, hb_job *prev, hb_job *j)
{
    if (prev)
        prev->queue_next = j->queue_next;
    else
        q->head = j->queue_next;
    if (q->tail == j)
        q->tail = prev;
    j->queue_next = NULL;
    j->queued = 0;
    q->pending_jobs--;
}

/* A take so far: its size, and whether it holds long or short messages. */
typedef struct {
    uint64_t bytes;
    size_t count;
    int is_long; /* meaningful once count > 0 */
} take_state;

/* How many of j's next messages fit in the take; 0 when it is full. A
 * take holds only short messages (up to the byte and message budgets) or
 * only long ones (up to long_max of them): a long message never drags
 * short ones behind it. */
static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Whether every message j has left is at least len long. */
static int all_at_least(const hb_job *j, uint64_t len)
{
    if (j->uniform_len != HB_LENGTHS_VARY)
        return j->uniform_len >= len;
    for (size_t i = j->next_to_take; i < j->n; i++)
        if (j->msgs[i].len < len)
            return 0;
    return 1;
}

/* The most messages one take gets from j: all it has left, or when that
 * is fewer than share_below, a fair share among share_among takers (at
 * least one). Long messages too: each is a sequential stream, so a job
 * of fewer than long_share_below (a full take for every taker: 16 of
 * 16 MiB, 2 of 1 GiB) is cut into share_among equal takes of its whole
 * count, one per core,
 * rather than filling one core's lanes while the others wait (halving
 * what is left at each take would leave the last core a string of small
 * takes after the first is done). Unless they are few and long enough
 * to move between the lanes and the other cores mid-message
 * (long_whole_from): then one take has them all. */
static size_t fair_share(const hb_job *j, const hb_take_limits *limits, int head_is_long)
{
    size_t left = j->n - j->next_to_take;
    size_t among = limits->share_among;
    if (among <= 1)
        return left;
    if (head_is_long && limits->long_whole_from > 0 && left <= limits->long_max &&
        all_at_least(j, limits->long_whole_from))
        return left;
    if (head_is_long && j->n < limits->long_share_below) {
        size_t equal = j->n / among + (j->n % among != 0);
        return left < equal ? left : equal;
    }
    if (left >= limits->share_below)
        return left;
    return left / among + (left % among != 0);
}

/* messages_fitting for a job whose messages all have one length: the same
 * answer, by arithmetic instead of a walk over the messages. */
static size_t uniform_fitting(const hb_job *j, const hb_take_limits *limits, take_state *t)
{
    size_t left = j->n - j->next_to_take;
    uint64_t len = j->uniform_len;
    int is_long = len > limits->long_above;
    if (left == 0 || t->count >= limits->max_messages)
        return 0;
    if (t->count == 0 && is_long && limits->refuse_long)
        return 0;
    if (t->count > 0 && is_long != t->is_long)
        return 0;
    size_t first = t->count == 0; /* a take's first message always fits */
    uint64_t bytes = t->bytes + (first ? len : 0);
    size_t more;
    if (is_long)
        more = limits->long_max > t->count + first ? limits->long_max - t->count - first : 0;
    else if (len == 0)
        more = SIZE_MAX;
    else
        more = bytes > limits->max_bytes ? 0 : (size_t)((limits->max_bytes - bytes) / len);
    size_t k =
        min_size(fair_share(j, limits, is_long),
                 min_size(limits->max_messages - t->count, first + min_size(more, SIZE_MAX - 1)));
    if (t->count == 0)
        t->is_long = is_long;
    t->bytes += (uint64_t)k * len;
    t->count += k;
    return k;
}

static size_t messages_fitting(const hb_job *j, const hb_take_limits *limits, take_state *t)
{
    if (j->uniform_len != HB_LENGTHS_VARY)
        return uniform_fitting(j, limits, t);
    size_t k = 0;
    int head_is_long = j->next_to_take < j->n && j->msgs[j->next_to_take].len > limits->long_above;
    size_t share = fair_share(j, limits, head_is_long);
    while (k < share && t->count < limits->max_messages) {
        uint64_t len = j->msgs[j->next_to_take + k].len;
        int is_long = len > limits->long_above;
        if (t->count == 0) {
            if (is_long && limits->refuse_long)
                break;
            t->is_long = is_long;
        } else if (is_long != t->is_long || (is_long && t->count >= limits->long_max) ||
                   (!is_long && t->bytes + len > limits->max_bytes)) {
            break;
        }
        t->bytes += len;
        t->count++;
        k++;
    }
    return k;
}

/* A batch of one slice borrows its job's message and digest arrays (no
 * copies: the job cannot go away before its slices finish, and cancel
 * waits for them); a batch of several slices has arrays of its own. */
static hb_batch *batch_alloc(size_t nslices, size_t n)
{
    hb_batch *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->predicted_ns = -1;
    b->slices = malloc(nslices * sizeof *b->slices);
    b->borrowed = nslices == 1;
    if (!b->borrowed) {
        b->owned_msgs = malloc(n * sizeof *b->owned_msgs);
        b->msgs = b->owned_msgs;
        b->digests = malloc(n * sizeof *b->digests);
    }
    if (b->slices == NULL || (!b->borrowed && (b->msgs == NULL || b->digests == NULL))) {
        hb_batch_free(b);
        return NULL;
    }
    return b;
}

/* The one walk both passes of a take make: from the head, each job's next
 * messages while they fit; it stops at the first job that keeps messages
 * back (FIFO: nobody jumps the queue).
 * visit (may be NULL) sees each job with what it gives; it may unlink it.
 * Returns the number of slices, and the messages in *n. */
typedef void (*take_visit)(hb_queue *q, hb_job *prev, hb_job *j, size_t k, void *ctx);

static size_t walk_take(hb_queue *q, const hb_take_limits *limits, take_visit visit, void *ctx,
                        size_t *n)
{
    size_t slices = 0;
    take_state t = {0, 0, 0};
    hb_job *prev = NULL, *j = q->head;
    while (j != NULL) {
        size_t k = messages_fitting(j, limits, &t);
        hb_job *next = j->queue_next;
        int keeps_some = j->next_to_take + k < j->n;
        slices += k > 0;
        if (k > 0 && visit != NULL)
            visit(q, prev, j, k, ctx);
        if (keeps_some)
            break;
        if (visit == NULL || k == 0)
            prev = j; /* else visit unlinked j: prev stays */
        j = next;
    }
    *n = t.count;
    return slices;
}

static void move_into_batch(hb_queue *q, hb_job *prev, hb_job *j, size_t k, void *ctx)
{
    hb_batch *b = ctx;
    hb_slice *s = &b->slices[b->nslices++];
    *s = (hb_slice){j, j->next_to_take, k};
    if (b->borrowed) {
        b->msgs = j->msgs + s->first;
        b->digests = j->out + s->first;
    } else {
        memcpy(b->owned_msgs + b->n, j->msgs + s->first, k * sizeof *b->msgs);
    }
    uint64_t bytes = 0;
    for (size_t i = 0; i < k; i++)
        bytes += b->msgs[b->n + i].len;
    b->bytes += bytes;
    b->n += k;
    j->next_to_take += k;
    j->bytes_left -= bytes;
    q->pending_messages -= k;
    q->pending_bytes -= bytes;
    atomic_fetch_add(&j->refs, 1); /* the slice's reference */
    if (j->next_to_take == j->n) {
        unlink_job(q, prev, j);
        hb_job_release(j); /* the queue's reference */
    }
}

/* The taker's limits cut to the scheduler's share of the pending work;
 * 0 when it turns the taker down. */
static int apply_share(const hb_queue *q, const hb_take_limits *limits, hb_take_limits *out)
{
    *out = *limits;
    uint64_t messages, bytes;
    if (limits->share == NULL)
        return 1;
    if (!limits->share(limits->share_ctx, q->pending_messages, q->pending_bytes, &messages, &bytes))
        return 0;
    if (messages < out->max_messages)
        out->max_messages = (size_t)messages;
    if (messages < out->long_max)
        out->long_max = (size_t)messages;
    if (bytes < out->max_bytes)
        out->max_bytes = bytes;
    return 1;
}

static hb_batch *take_jobs(hb_queue *q, const hb_take_limits *asked, int *declined)
{
    size_t n, filled;
    hb_take_limits cut, *limits = &cut;
    if (q->head == NULL)
        return NULL;
    if (!apply_share(q, asked, &cut)) {
        *declined = 1;
        return NULL;
    }
    size_t nslices = walk_take(q, limits, NULL, NULL, &n);
    if (nslices == 0)
        return NULL;
    hb_batch *b = batch_alloc(nslices, n);
    if (b != NULL) {
        b->queue = q;
        walk_take(q, limits, move_into_batch, b, &filled);
        if (limits->taken != NULL)
            b->predicted_ns = limits->taken(limits->share_ctx, b->n, b->bytes);
    }
    return b;
}

hb_batch *hb_queue_take_own(hb_queue *q, hb_job *j, const hb_take_limits *asked)
{
    hb_batch *b = NULL;
    hb_take_limits limits;
    pthread_mutex_lock(&q->lock);
    take_state t = {0, 0, 0};
    size_t k = atomic_load(&q->cpu_takes_jobs) && j->queued && apply_share(q, asked, &limits)
                   ? messages_fitting(j, &limits, &t)
                   : 0;
    if (k > 0 && (b = batch_alloc(1, k)) != NULL) {
        b->queue = q;
        hb_job *prev = NULL;
        for (hb_job *it = q->head; it != j; it = it->queue_next)
            prev = it;
        move_into_batch(q, prev, j, k, b);
        if (limits.taken != NULL)
            b->predicted_ns = limits.taken(limits.share_ctx, b->n, b->bytes);
    }
    pthread_mutex_unlock(&q->lock);
    return b;
}

static hb_batch *take_fallback(hb_queue *q)
{
    hb_batch *b = q->fallback_head;
    if (b != NULL) {
        q->fallback_head = b->next;
        if (q->fallback_head == NULL)
            q->fallback_tail = NULL;
        b->next = NULL;
    }
    return b;
}

static hb_batch *try_take(hb_queue *q, hb_taker taker, const hb_take_limits *limits, int *declined)
{
    *declined = 0;
    if (taker == HB_TAKER_CPU) {
        hb_batch *b = take_fallback(q);
        if (b != NULL || !q->cpu_takes_jobs)
            return b;
    }
    return take_jobs(q, limits, declined);
}

/* An offer that lets the taker in, or NULL. */
static hb_help_offer *try_join(hb_queue *q)
{
    for (hb_help_offer *o = q->offers; o != NULL; o = o->next)
        if (o->join(o->ctx))
            return o;
    return NULL;
}

/* A taker the scheduler turned down sleeps until poked, or until a push
 * makes the pending work twice the most it was turned down with (that
 * most halves with each quiet bound: a small job more changes nothing,
 * and waking it for each of many small jobs cost their callers), with a
 * bound: the bound caps how late a change no wake-up announced (another
 * backend's backlog growing) is noticed. */
#define DECLINED_RECHECK_NS 2000000L

static void wait_declined(hb_queue *q)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += DECLINED_RECHECK_NS;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    atomic_fetch_add(&q->declined, 1);
    if (q->pending_messages > q->declined_messages)
        q->declined_messages = q->pending_messages;
    if (q->pending_bytes > q->declined_bytes)
        q->declined_bytes = q->pending_bytes;
    if (pthread_cond_timedwait(&q->reconsider, &q->lock, &until) != 0) {
        q->declined_messages /= 2; /* nothing woke it: an old refusal fades */
        q->declined_bytes /= 2;
    }
    atomic_fetch_sub(&q->declined, 1);
}

/* Whether a taker that found nothing should stop waiting: the queue is
 * closing and (for the CPU) no device can hand back more. */
static int nothing_more(const hb_queue *q, hb_taker taker)
{
    return q->closing && (taker == HB_TAKER_DEVICE || q->fallbacks_final);
}

/* hb_queue_take, and for a pool thread that passes `joined`, a join. */
static hb_batch *take_or_join(hb_queue *q, hb_taker taker, const hb_take_limits *limits, int wait,
                              hb_help_offer **joined)
{
    pthread_cond_t *cond = taker == HB_TAKER_CPU ? &q->cpu_work : &q->device_work;
    int declined, turned_down = 0;
    pthread_mutex_lock(&q->lock);
    hb_batch *b = try_take(q, taker, limits, &declined);
    while (b == NULL && wait && !nothing_more(q, taker)) {
        /* only with no job waiting: a thread the scheduler turned down
         * waits for its share of the jobs rather than spend a list's
         * length as one stream of another's */
        if (joined != NULL && q->head == NULL && (*joined = try_join(q)) != NULL)
            break;
        /* once turned down, it waits as one until it takes something: a
         * stream of small jobs the scheduler leaves to others does not
         * wake it job after job */
        turned_down |= declined;
        if (turned_down)
            wait_declined(q);
        else
            pthread_cond_wait(cond, &q->lock);
        b = try_take(q, taker, limits, &declined);
    }
    if (b != NULL && q->head != NULL)
        wake_takers(q); /* work is left: pass the wake-up on */
    pthread_mutex_unlock(&q->lock);
    return b;
}

hb_batch *hb_queue_take(hb_queue *q, hb_taker taker, const hb_take_limits *limits, int wait)
{
    return take_or_join(q, taker, limits, wait, NULL);
}

hb_batch *hb_queue_take_or_help(hb_queue *q, const hb_take_limits *limits, hb_help_offer **joined)
{
    *joined = NULL;
    return take_or_join(q, HB_TAKER_CPU, limits, 1, joined);
}

void hb_queue_offer_help(hb_queue *q, hb_help_offer *o)
{
    pthread_mutex_lock(&q->lock);
    o->next = q->offers;
    q->offers = o;
    pthread_cond_broadcast(&q->cpu_work);
    if (atomic_load(&q->declined) > 0)
        pthread_cond_broadcast(&q->reconsider); /* a pool thread may wait there */
    pthread_mutex_unlock(&q->lock);
}

void hb_queue_withdraw_help(hb_queue *q, hb_help_offer *o)
{
    pthread_mutex_lock(&q->lock);
    for (hb_help_offer **at = &q->offers; *at != NULL; at = &(*at)->next) {
        if (*at == o) {
            *at = o->next;
            break;
        }
    }
    o->next = NULL;
    pthread_mutex_unlock(&q->lock);
}

void hb_queue_end_whole_takes(hb_queue *q, hb_take_limits *limits)
{
    pthread_mutex_lock(&q->lock);
    limits->long_whole_from = 0;
    pthread_mutex_unlock(&q->lock);
}

void hb_queue_poke(hb_queue *q)
{
    if (atomic_load(&q->declined) == 0)
        return;
    pthread_mutex_lock(&q->lock);
    pthread_cond_broadcast(&q->reconsider);
    pthread_mutex_unlock(&q->lock);
}

void hb_queue_let_cpu_take_jobs(hb_queue *q)
{
    pthread_mutex_lock(&q->lock);
    atomic_store(&q->cpu_takes_jobs, 1);
    pthread_cond_broadcast(&q->cpu_work);
    pthread_cond_broadcast(&q->reconsider);
    pthread_mutex_unlock(&q->lock);
}

void hb_queue_fallbacks_final(hb_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->fallbacks_final = 1;
    pthread_cond_broadcast(&q->cpu_work);
    pthread_cond_broadcast(&q->reconsider);
    pthread_mutex_unlock(&q->lock);
}

void hb_queue_push_fallback(hb_queue *q, hb_batch *b)
{
    pthread_mutex_lock(&q->lock);
    b->next = NULL;
    b->predicted_ns = -1; /* the pool did not choose it */
    if (atomic_load(&q->declined) > 0)
        pthread_cond_broadcast(&q->reconsider); /* a pool thread may wait there */
    if (q->fallback_tail)
        q->fallback_tail->next = b;
    else
        q->fallback_head = b;
    q->fallback_tail = b;
    pthread_cond_signal(&q->cpu_work);
    pthread_mutex_unlock(&q->lock);
}

/* Called with q->lock held; returns the messages withdrawn. */
static size_t withdraw_locked(hb_queue *q, hb_job *j)
{
    if (!j->queued)
        return 0;
    size_t withdrawn = j->n - j->next_to_take;
    hb_job *prev = NULL;
    for (hb_job *it = q->head; it != j; it = it->queue_next)
        prev = it;
    unlink_job(q, prev, j);
    q->pending_messages -= withdrawn;
    q->pending_bytes -= j->bytes_left;
    j->bytes_left = 0;
    q->jobs_withdrawn++;
    j->next_to_take = j->n;
    hb_job_release(j); /* the queue's reference */
    return withdrawn;
}

size_t hb_queue_withdraw(hb_queue *q, hb_job *j)
{
    pthread_mutex_lock(&q->lock);
    size_t withdrawn = withdraw_locked(q, j);
    pthread_mutex_unlock(&q->lock);
    return withdrawn;
}

void hb_queue_close(hb_queue *q)
{
    pthread_mutex_lock(&q->lock);
    atomic_store(&q->closing, 1);
    pthread_cond_broadcast(&q->reconsider);
    while (q->head != NULL) {
        hb_job *j = q->head;
        atomic_fetch_add(&j->refs, 1);
        size_t withdrawn = withdraw_locked(q, j);
        pthread_mutex_unlock(&q->lock);
        hb_job_abandon(j, withdrawn, HB_ERR_CLOSED);
        hb_job_release(j);
        pthread_mutex_lock(&q->lock);
    }
    pthread_cond_broadcast(&q->device_work);
    pthread_cond_broadcast(&q->cpu_work);
    pthread_mutex_unlock(&q->lock);
}

int hb_queue_cpu_takes_jobs(hb_queue *q)
{
    return atomic_load(&q->cpu_takes_jobs);
}

int hb_queue_is_closing(hb_queue *q)
{
    return atomic_load(&q->closing);
}

void hb_queue_depth(hb_queue *q, uint64_t *messages, uint64_t *jobs)
{
    pthread_mutex_lock(&q->lock);
    *messages = q->pending_messages;
    *jobs = q->pending_jobs;
    pthread_mutex_unlock(&q->lock);
}

void hb_batch_deliver(hb_batch *b, hb_status status)
{
    size_t at = 0;
    for (size_t s = 0; s < b->nslices; s++) {
        hb_slice *slice = &b->slices[s];
        if (status == HB_OK && !b->borrowed)
            memcpy(slice->job->out + slice->first, b->digests + at,
                   slice->count * sizeof(hb_digest));
        at += slice->count;
        hb_job_add_finished(slice->job, slice->count, status);
    }
}

void hb_batch_free(hb_batch *b)
{
    if (b == NULL)
        return;
    for (size_t s = 0; s < b->nslices; s++)
        hb_job_release(b->slices[s].job);
    free(b->slices);
    free(b->owned_msgs);
    if (!b->borrowed)
        free(b->digests);
    free(b);
}

hb_status hb_batch_stop_reason(const hb_batch *b)
{
    if (b->queue != NULL && atomic_load(&b->queue->closing))
        return HB_ERR_CLOSED;
    for (size_t s = 0; s < b->nslices; s++)
        if (hb_job_stopped(b->slices[s].job) == HB_OK)
            return HB_OK; /* one job still wants its digests */
    return b->nslices > 0 ? HB_ERR_CANCELLED : HB_OK;
}

void hb_batch_abandon(hb_batch *b, hb_status reason)
{
    for (size_t s = 0; s < b->nslices; s++) {
        hb_job *j = b->slices[s].job;
        hb_status own = hb_job_stopped(j);
        hb_job_abandon(j, b->slices[s].count, own != HB_OK ? own : reason);
    }
}

void hb_batch_count_work(hb_batch *b, uint64_t bytes)
{
    for (size_t s = 0; s < b->nslices; s++)
        hb_job_count_work(b->slices[s].job, bytes);
}
