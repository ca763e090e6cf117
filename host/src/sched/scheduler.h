/*
 * scheduler.h - which backend takes which queued work: earliest predicted
 * completion, from measured costs.
 *
 * Owns: the engine's backends as the scheduler sees them (a cost model, a
 * group of backends that share compute, how many threads work side by
 * side, what each has taken and not finished), and the one decision: how
 * much of the queued work a backend asking for work may take now.
 *
 * The rule (HEFT's earliest finish time, split as water-filling): for the
 * work pending in the queue, each group offers its member that would do
 * it cheapest (backends of one group share cores, as the CPU pool and
 * pocl do, so they never run the same work at once: the other waits);
 * a group can start after its members' backlog plus its fixed cost, and
 * then proceeds at its per-message and per-byte rate. The pending work is
 * split among the groups that can start before the rest would be done,
 * in proportion that lets them all finish at the same time; the asking
 * backend gets its part (nothing when it is not its group's choice, or
 * its group would only finish later). Jobs smaller than a backend's fixed
 * cost thus stay on the backend with the lowest, big ones are shared, and
 * a backend that turns slow loses its share as its model learns.
 *
 * Must not: touch the queue, the workers or the clock beyond
 * hb_now_ns() (or the time source a simulation gives it:
 * hb_sched_set_time_source); its lock is taken inside the queue's (lock
 * order: queue, then scheduler), never the other way round.
 */
#ifndef HB_SCHEDULER_H
#define HB_SCHEDULER_H

#include <pthread.h>
#include <stdint.h>

#include "hashbatch.h"
#include "sched/cost_model.h"

#define HB_SCHED_MAX HB_STATS_MAX_DEVICES

typedef struct {
    hb_cost_model model;
    unsigned group;     /* backends of one group share their compute */
    unsigned parallel;  /* batches it runs side by side (pool threads) */
    int takes_jobs;     /* 0: only fallbacks (or retired) */
    uint64_t learn_min; /* batches of fewer messages teach nothing (the
                           pool hashes them one by one, off its lanes) */
    /* the most one of its batches holds: pending work beyond that costs
     * it another batch, and another fixed cost */
    uint64_t take_messages, take_bytes;
    double busy_until_ns;               /* when what it has taken should be done */
    unsigned outstanding;               /* batches taken, not yet done */
    uint64_t predicted_ns, measured_ns; /* over the batches done */
    /* How many batches really run side by side (at most parallel): the
     * time its batches took (thread time, for the pool) over the wall time
     * it had work in hand, recent batches weighing most. A loaded machine,
     * or jobs too small to reach every thread, bring it down. */
    double side_by_side;
    double work_ns, busy_ns, last_event_ns;
    /* a test's clock (hb_sched_set_clock): when set, each batch done cost
     * what it predicts, whatever was measured */
    hb_cost_model clock;
    int clocked;
} hb_sched_backend;

/* A time source in place of hb_now_ns (hb_sched_set_time_source). */
typedef uint64_t (*hb_sched_time_fn)(void *ctx);

typedef struct {
    pthread_mutex_t lock;
    hb_sched_backend b[HB_SCHED_MAX];
    unsigned n;
    hb_sched_time_fn time_source; /* NULL: hb_now_ns */
    void *time_ctx;
} hb_sched;

/* A backend asking for work: the share callback of its take limits
 * (queue.h) is hb_sched_share_for with one of these as its context. */
typedef struct {
    hb_sched *sched;
    unsigned index;
} hb_sched_taker;

/* hb_sched_share_for: hb_sched_share for the taker ctx (an
 * hb_sched_taker), in the shape queue.h's share callback has. */
int hb_sched_share_for(void *taker, uint64_t pending_messages, uint64_t pending_bytes,
                       uint64_t *max_messages, uint64_t *max_bytes);

/* hb_sched_taken_for: hb_sched_taken for the taker ctx, in the shape of
 * queue.h's taken callback. */
double hb_sched_taken_for(void *taker, uint64_t n, uint64_t bytes);

void hb_sched_init(hb_sched *s);
void hb_sched_destroy(hb_sched *s);

/* hb_sched_add: a backend with these terms; returns its index (the same
 * as its stats entry: the engine adds them in that order). Its model
 * learns from batches of at least learn_min messages. */
unsigned hb_sched_add(hb_sched *s, const hb_cost_terms terms[HB_COST_CLASSES], unsigned group,
                      unsigned parallel, int takes_jobs, uint64_t learn_min);

/* hb_sched_share: how much of the pending work (messages, bytes: what the
 * queue holds, not yet handed out) backend k may take now: at most
 * *max_messages messages and *max_bytes bytes (at least one message when
 * it returns 1); 0 when it should leave the work to others, or wait
 * while another backend of its group has work in hand (backends that
 * share cores take turns: side by side both would run slower), unless
 * while_mates_busy (a caller hashing a small batch on its own thread). */
int hb_sched_share(hb_sched *s, unsigned k, uint64_t pending_messages, uint64_t pending_bytes,
                   int while_mates_busy, uint64_t *max_messages, uint64_t *max_bytes);

/* hb_sched_taken: backend k took a batch of n messages and bytes; returns
 * the model's prediction of its time (ns), to hand back at the end. */
double hb_sched_taken(hb_sched *s, unsigned k, uint64_t n, uint64_t bytes);

/* hb_sched_done: that batch is done and took measured_ns of k's time (a
 * device: what it added to the pipeline; the pool: its thread's CPU
 * time); measured_ns < 0: it was dropped or handed back, nothing to
 * learn. Nor is anything learnt from a batch that ran beside another
 * backend of the group (on the same cores), or from one of fewer than the
 * backend's learn_min messages. Returns 1 when backends turned down
 * before should ask again: the prediction was off by more than half (the
 * model moved), or k has nothing left in hand and shares its group. */
int hb_sched_done(hb_sched *s, unsigned k, uint64_t n, uint64_t bytes, double predicted_ns,
                  double measured_ns);

/* hb_sched_set_takes: the most messages and bytes one batch of k holds
 * (its take limits): pending work beyond that costs k another batch, and
 * another fixed cost. 0: no limit. */
void hb_sched_set_takes(hb_sched *s, unsigned k, uint64_t messages, uint64_t bytes);

/* hb_sched_retire: k takes no more queued work (quarantined). */
void hb_sched_retire(hb_sched *s, unsigned k);

/* hb_sched_set_takes_jobs: k takes queued work from now on (the pool,
 * once no device is left). */
void hb_sched_set_takes_jobs(hb_sched *s, unsigned k);

/* hb_sched_force: fixes k's terms, its threads counted as all side by
 * side (terms NULL: lets it learn again).
 * Returns 0 for a bad k or invalid terms. */
int hb_sched_force(hb_sched *s, unsigned k, const hb_cost_terms *terms);

/* hb_sched_set_clock: from now on k's batches are taken to have cost
 * what terms predict for them, not what was measured (terms NULL: what
 * was measured again). For tests: what a model learns, and so the
 * routing, no longer hangs on how busy the machine is. Returns 0 for a
 * bad k or invalid terms. */
int hb_sched_set_clock(hb_sched *s, unsigned k, const hb_cost_terms *terms);

/* hb_sched_set_time_source: from now on s reads the time (ns, never
 * going back) from source(ctx) instead of hb_now_ns() (NULL: hb_now_ns
 * again). For a simulation in virtual time (bench/sched_sim.c), which
 * sets it before the first backend is added; the engine never does. */
void hb_sched_set_time_source(hb_sched *s, hb_sched_time_fn source, void *ctx);

/* hb_sched_read: k's model terms and prediction totals, for the stats. */
void hb_sched_read(hb_sched *s, unsigned k, hb_cost_terms terms[HB_COST_CLASSES],
                   uint64_t *predicted_ns, uint64_t *measured_ns, int *takes_jobs);

/* hb_sched_learnt: 1 when k's model learnt from at least one batch. */
int hb_sched_learnt(hb_sched *s, unsigned k);

#endif /* HB_SCHEDULER_H */
