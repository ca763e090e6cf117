/*
 * sched_sim.c - issue 30's "H200 machine, simulated": the scheduler
 * (host/src/sched/scheduler.c) driven in virtual time by modelled
 * backends, to show how it would split work between 16 CPU cores and one
 * GPU we cannot run on. What it prints is a simulation (a plan), never a
 * measurement.
 *
 * Owns: (1) the core, above SCHED_SIM_NO_MAIN: backend cost models (affine,
 * or a pool thread's multi-buffer lanes: whole lane sets); the
 * queue-taking loop the engine's workers run (idle takers ask
 * hb_sched_share, take their share cut to their take limits as
 * queue.c does, tell hb_sched_taken, and hb_sched_done when the batch's
 * modelled time has passed) as an event loop on a virtual clock handed to
 * the scheduler (hb_sched_set_time_source); an independent solver for
 * the split of one job between two backends that finishes first; and the
 * machine model (the pool's per-core rates, the GPU's from published
 * figures) with its derivations. (2) The program: the route rows,
 * a markdown (or JSON) table. tests/test_sched_sim.c includes this file
 * with SCHED_SIM_NO_MAIN defined.
 * Must not: read the real clock, sleep or hash; nor second-guess the
 * scheduler: it only answers the scheduler's questions with modelled
 * times, and its solver never feeds the scheduler.
 *
 * What it leaves out (each would lower the simulated throughput; none is
 * the scheduler's choice): the caller's thread helping with its own job
 * (a 17th thread on 16 cores), thread wake-up latency, host-side packing
 * for the GPU and the device worker's own CPU time, verification beyond
 * what the measured pool rates already include.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashbatch.h"
#include "plan.h"
#include "sched/cost_model.h"
#include "sched/scheduler.h"

/* ==== the core's interface ============================================ */

#define SIM_MAX_BACKENDS 4
#define SIM_MAX_WORKERS 64
#define SIM_MAX_DEPTH 4

/* A declined taker asks again after this long if nothing pokes it
 * (queue.c's DECLINED_RECHECK_NS). */
#define SIM_RECHECK_NS 2e6

/* How much one take may hold: queue.h's hb_take_limits, as the engine
 * fills them for the pool (worker_cpu.c) and a device (worker_device.c). */
typedef struct {
    uint64_t max_messages, max_bytes; /* both at least 1 */
    uint64_t long_above;              /* longer messages are long: up to */
    uint64_t long_max;                /* long_max of them per take */
    unsigned share_among;             /* >1: a job with fewer than share_below */
    uint64_t share_below;             /* messages left gives a take 1/share_among */
} sim_take;

/* What a batch really costs one worker. lanes 0: terms, affine. Else its
 * messages (of one length here) go through `lanes` multi-buffer lanes: a
 * full set of lanes messages costs lanes times terms' per message (and
 * per byte), whatever is left over costs a whole set (a set steps at its
 * longest lane's pace) or, when cheaper, one at a time at one's rates
 * (mb_batch.c's rule); terms.fixed_ns once per batch. */
typedef struct {
    hb_cost_terms terms;
    unsigned lanes;
    hb_cost_terms one; /* fixed_ns unused */
} sim_truth;

/* One backend as the simulation runs it. */
typedef struct {
    sim_truth truth;                     /* what a batch costs one worker */
    hb_cost_terms seed[HB_COST_CLASSES]; /* the scheduler's model at start */
    unsigned workers;                    /* takers side by side (pool threads): the
                                            scheduler's parallel */
    unsigned depth;                      /* batches a worker holds: 1 for a pool thread; a device
                                            queues more behind the one running (FIFO) */
    uint64_t learn_min;                  /* as hb_sched_add's */
    sim_take take;
} sim_backend;

/* A job of messages of one length (each route row is one). */
typedef struct {
    uint64_t messages, length;
} sim_job;

typedef struct {
    double makespan_ns;               /* from the job's push to its last batch done */
    double done_ns[SIM_MAX_BACKENDS]; /* each backend's last batch done */
    uint64_t messages[SIM_MAX_BACKENDS], bytes[SIM_MAX_BACKENDS], batches[SIM_MAX_BACKENDS];
    uint64_t declines; /* times the scheduler turned a taker down */
} sim_result;

/* A backend reduced to what the best split needs: n messages of length
 * cost it what a batch of ceil(n / parallel) costs one of its workers (it
 * shares them out evenly, a message never split; one batch per worker). */
typedef struct {
    sim_truth truth;
    uint64_t length;
    unsigned parallel;
} sim_server;

/* sim_cost: what t says a batch of n messages holding bytes costs. */
double sim_cost(const hb_cost_terms *t, uint64_t n, uint64_t bytes);

/* sim_truth_cost: what a batch of n messages holding bytes (all of one
 * length) really costs one worker of t. */
double sim_truth_cost(const sim_truth *t, uint64_t n, uint64_t bytes);

/* sim_take_count: how many messages of `length` one take gets from a job
 * with `left` untaken, under t cut to the scheduler's share (queue.c's
 * apply_share and uniform_fitting, for a job of one length). At least 1
 * while left > 0. */
uint64_t sim_take_count(const sim_take *t, uint64_t left, uint64_t length, uint64_t share_messages,
                        uint64_t share_bytes);

/* What a run may change from the engine as it is (all 0: nothing). */
typedef struct {
    /* a proposal, not the engine's rule: a take of a backend with several
     * workers holds at most its share divided among those not busy (what
     * the scheduler knows as parallel - outstanding), not below its
     * learn_min (a lane set), so the share the scheduler spread over its
     * workers does not land on the first one to ask */
    int per_worker_takes;
    FILE *trace; /* each take and batch done, one line each (NULL: none) */
} sim_variant;

/* sim_run: job run by nb backends (each its own group, added in order,
 * its workers asking in that order) under the real scheduler in virtual
 * time, as the engine runs (v NULL) or with v's changes. Returns 0, or -1
 * on bad arguments or a run that stalls. */
int sim_run(const sim_backend *b, unsigned nb, sim_job job, const sim_variant *v, sim_result *out);

/* sim_server_of: b's true cost as a sim_server for messages of length. */
sim_server sim_server_of(const sim_backend *b, uint64_t length);

/* sim_finish_ns: when s is done with n messages (0 for none). */
double sim_finish_ns(const sim_server *s, uint64_t n);

/* sim_best_split: of n messages, how many go to a (the rest to b) so the
 * later of the two finishes earliest; *makespan_ns that finish. All on
 * one backend when that is faster than any split. */
uint64_t sim_best_split(const sim_server *a, const sim_server *b, uint64_t n, double *makespan_ns);

/* The machine: a pool of cores at per-core rates, one GPU. */
typedef struct {
    unsigned cores;
    /* per core: the multi-buffer lanes, full sets, at 64 B (M messages/s),
     * 4 KiB, 64 KiB, 1 MiB and beyond (GB/s); OpenSSL SHA-NI one message
     * at a time at 64 B (M messages/s) and from 1 KiB on (GB/s) */
    double cpu_64b_mmsgs, cpu_4k_gbs, cpu_64k_gbs, cpu_1m_gbs;
    double cpu_shani_64b_mmsgs, cpu_shani_gbs;
    double cpu_take_us;   /* a pool take's own cost */
    double gpu_ghs;       /* SHA-1 compressions of 64-byte blocks, G/s */
    double gpu_h2d_gbs;   /* host to device */
    double gpu_d2h_gbs;   /* device to host (20-byte digests) */
    double gpu_launch_us; /* per batch, and per further staging buffer */
    double gpu_staging_mib;
    unsigned gpu_depth; /* batches the device worker holds at once */
} sim_machine;

/* sim_machine_defaults: the values bench/sched_sim.c's --help cites. */
void sim_machine_defaults(sim_machine *m);

/* sim_gpu_terms: a GPU batch's true cost for messages of length: fixed
 * launch latency; every padded block crosses the host link, is compressed
 * once, and each staging buffer's worth costs one more launch; each
 * digest comes back. */
hb_cost_terms sim_gpu_terms(const sim_machine *m, uint64_t length);

/* sim_pool_truth: one pool thread's true cost for messages of length:
 * 16 lanes at the lanes' rate, what is left of a set by SHA-NI when
 * cheaper, and the take's own cost. */
sim_truth sim_pool_truth(const sim_machine *m, uint64_t length);

/* sim_machine_backends: out[0] the GPU, out[1] the pool, for a job of
 * messages of length, each seeded with its true terms (calibrated
 * exactly) and the take limits the engine would give it. */
void sim_machine_backends(const sim_machine *m, uint64_t length, sim_backend out[2]);

/* ==== the core ======================================================== */

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

double sim_cost(const hb_cost_terms *t, uint64_t n, uint64_t bytes)
{
    return t->fixed_ns + (double)n * t->ns_per_message + (double)bytes * t->ns_per_byte;
}

double sim_truth_cost(const sim_truth *t, uint64_t n, uint64_t bytes)
{
    if (t->lanes == 0 || n == 0)
        return sim_cost(&t->terms, n, bytes);
    double length = (double)bytes / (double)n;
    double set = t->lanes * (t->terms.ns_per_message + length * t->terms.ns_per_byte);
    double one = t->one.ns_per_message + length * t->one.ns_per_byte;
    double rest = (double)(n % t->lanes) * one;
    return t->terms.fixed_ns + (double)(n / t->lanes) * set + (rest < set ? rest : set);
}

uint64_t sim_take_count(const sim_take *t, uint64_t left, uint64_t length, uint64_t share_messages,
                        uint64_t share_bytes)
{
    if (left == 0)
        return 0;
    uint64_t most = min_u64(t->max_messages, share_messages);
    uint64_t fair = left;
    if (t->share_among > 1 && left < t->share_below)
        fair = left / t->share_among + (left % t->share_among != 0);
    uint64_t fits; /* the first message always fits */
    if (length > t->long_above) {
        fits = min_u64(t->long_max, share_messages);
    } else {
        uint64_t bytes = min_u64(t->max_bytes, share_bytes);
        fits = length == 0 || length > bytes ? 1 : bytes / length;
    }
    uint64_t k = min_u64(fair, min_u64(most, fits));
    return k > 0 ? k : 1;
}

sim_server sim_server_of(const sim_backend *b, uint64_t length)
{
    sim_server s = {b->truth, length, b->workers > 0 ? b->workers : 1};
    return s;
}

double sim_finish_ns(const sim_server *s, uint64_t n)
{
    if (n == 0)
        return 0;
    uint64_t most = n / s->parallel + (n % s->parallel != 0); /* the busiest worker's */
    return sim_truth_cost(&s->truth, most, most * s->length);
}

static double split_makespan(const sim_server *a, const sim_server *b, uint64_t n, uint64_t x)
{
    double ta = sim_finish_ns(a, x), tb = sim_finish_ns(b, n - x);
    return ta > tb ? ta : tb;
}

uint64_t sim_best_split(const sim_server *a, const sim_server *b, uint64_t n, double *makespan_ns)
{
    /* With both busy, a's finish grows with its share x and b's shrinks:
     * the best such split is where they cross (the first x at which a's
     * is no earlier, or the one before). Then against each alone. */
    uint64_t candidates[4] = {0, n, 0, 0};
    unsigned count = 2;
    if (n >= 2) {
        uint64_t lo = 1, hi = n - 1;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (sim_finish_ns(a, mid) >= sim_finish_ns(b, n - mid))
                hi = mid;
            else
                lo = mid + 1;
        }
        candidates[count++] = lo;
        if (lo > 1)
            candidates[count++] = lo - 1;
    }
    uint64_t best = candidates[0];
    double best_ns = split_makespan(a, b, n, best);
    for (unsigned i = 1; i < count; i++) {
        double t = split_makespan(a, b, n, candidates[i]);
        if (t < best_ns) {
            best_ns = t;
            best = candidates[i];
        }
    }
    if (makespan_ns != NULL)
        *makespan_ns = best_ns;
    return best;
}

/* ---- the event loop ----------------------------------------------------- */

typedef struct {
    double done_ns, taken_ns, predicted_ns;
    uint64_t n, bytes;
} sim_batch;

/* One taker: a pool thread, or a device's worker. */
typedef struct {
    unsigned backend;
    sim_batch held[SIM_MAX_DEPTH]; /* held[0] runs, the rest wait behind it */
    unsigned nheld;
    double last_done_ns;
    int declined; /* turned down: waits for a poke, its own batch's end,
                     or recheck_ns */
    double recheck_ns;
} sim_worker;

typedef struct {
    hb_sched sched;
    double now_ns;
    sim_variant v;
    const sim_backend *b;
    sim_worker w[SIM_MAX_WORKERS];
    unsigned nw;
    uint64_t pending, length;
    sim_result *out;
} sim_state;

/* The scheduler's clock: the simulation's. */
static uint64_t sim_clock(void *ctx)
{
    const sim_state *st = ctx;
    return (uint64_t)llround(st->now_ns);
}

/* sim_variant's per_worker_takes: the share cut to one free worker's
 * part. */
static void per_worker_share(const sim_state *st, unsigned k, uint64_t *messages, uint64_t *bytes)
{
    const sim_backend *b = &st->b[k];
    uint64_t least = b->learn_min > 0 ? b->learn_min : 1, free = 0;
    for (unsigned i = 0; i < st->nw; i++)
        free += st->w[i].backend == k && st->w[i].nheld == 0;
    free = free > 0 ? free : 1;
    uint64_t each = *messages / free + (*messages % free != 0);
    each = each > least ? each : least;
    if (b->workers <= 1 || each >= *messages)
        return;
    *bytes = (uint64_t)ceil((double)*bytes * (double)each / (double)*messages);
    *messages = each;
}

/* Worker w asks for work now; returns 1 when it took a batch. */
static int sim_ask(sim_state *st, sim_worker *w)
{
    const sim_backend *b = &st->b[w->backend];
    uint64_t share_messages = 0, share_bytes = 0;
    if (!hb_sched_share(&st->sched, w->backend, st->pending, st->pending * st->length, 0,
                        &share_messages, &share_bytes)) {
        w->declined = 1;
        w->recheck_ns = st->now_ns + SIM_RECHECK_NS;
        st->out->declines++;
        return 0;
    }
    w->declined = 0;
    if (st->v.per_worker_takes)
        per_worker_share(st, w->backend, &share_messages, &share_bytes);
    uint64_t n = sim_take_count(&b->take, st->pending, st->length, share_messages, share_bytes);
    uint64_t bytes = n * st->length;
    st->pending -= n;
    double predicted = hb_sched_taken(&st->sched, w->backend, n, bytes);
    double start = w->nheld > 0 ? w->held[w->nheld - 1].done_ns : st->now_ns;
    sim_batch batch = {start + sim_truth_cost(&b->truth, n, bytes), st->now_ns, predicted, n,
                       bytes};
    w->held[w->nheld++] = batch;
    if (st->v.trace != NULL)
        fprintf(st->v.trace,
                "%12.3f us  backend %u worker %2u takes %8llu (of %llu shared, %llu left): "
                "predicted %.3f us, true %.3f us\n",
                st->now_ns / 1e3, w->backend, (unsigned)(w - st->w), (unsigned long long)n,
                (unsigned long long)share_messages, (unsigned long long)st->pending,
                predicted / 1e3, (batch.done_ns - start) / 1e3);
    st->out->messages[w->backend] += n;
    st->out->bytes[w->backend] += bytes;
    st->out->batches[w->backend]++;
    return 1;
}

/* Every worker free to ask does, in order, until nobody takes more. */
static void sim_offer(sim_state *st)
{
    int took = 1;
    while (took && st->pending > 0) {
        took = 0;
        for (unsigned i = 0; i < st->nw && st->pending > 0; i++) {
            sim_worker *w = &st->w[i];
            if (w->nheld >= st->b[w->backend].depth || (w->declined && st->now_ns < w->recheck_ns))
                continue;
            took |= sim_ask(st, w);
        }
    }
}

static double sim_next_event(const sim_state *st)
{
    double next = INFINITY;
    for (unsigned i = 0; i < st->nw; i++) {
        const sim_worker *w = &st->w[i];
        if (w->nheld > 0 && w->held[0].done_ns < next)
            next = w->held[0].done_ns;
        if (w->declined && st->pending > 0 && w->recheck_ns < next)
            next = w->recheck_ns;
    }
    return next;
}

/* w's oldest batch is done: the scheduler learns what it took w (from
 * when it was taken or w's previous batch was done, whichever is later:
 * worker_device.c's rule, which for a pool thread is the batch's own
 * time). A model that moved pokes every declined taker. */
static void sim_finish_batch(sim_state *st, sim_worker *w)
{
    sim_batch d = w->held[0];
    double from = d.taken_ns > w->last_done_ns ? d.taken_ns : w->last_done_ns;
    w->last_done_ns = d.done_ns;
    memmove(&w->held[0], &w->held[1], (w->nheld - 1) * sizeof w->held[0]);
    w->nheld--;
    w->declined = 0;
    if (st->v.trace != NULL)
        fprintf(st->v.trace, "%12.3f us  backend %u worker %2u done with %llu\n", d.done_ns / 1e3,
                w->backend, (unsigned)(w - st->w), (unsigned long long)d.n);
    if (d.done_ns > st->out->makespan_ns)
        st->out->makespan_ns = d.done_ns;
    if (d.done_ns > st->out->done_ns[w->backend])
        st->out->done_ns[w->backend] = d.done_ns;
    if (hb_sched_done(&st->sched, w->backend, d.n, d.bytes, d.predicted_ns, d.done_ns - from))
        for (unsigned i = 0; i < st->nw; i++)
            st->w[i].declined = 0;
}

static void sim_complete(sim_state *st)
{
    for (unsigned i = 0; i < st->nw; i++) {
        sim_worker *w = &st->w[i];
        while (w->nheld > 0 && w->held[0].done_ns <= st->now_ns)
            sim_finish_batch(st, w);
        if (w->declined && w->recheck_ns <= st->now_ns)
            w->declined = 0;
    }
}

static int sim_valid(const sim_backend *b, unsigned nb)
{
    unsigned workers = 0;
    for (unsigned i = 0; i < nb; i++) {
        if (b[i].workers == 0 || b[i].depth == 0 || b[i].depth > SIM_MAX_DEPTH ||
            b[i].take.max_messages == 0 || b[i].take.max_bytes == 0 || b[i].take.long_max == 0)
            return 0;
        workers += b[i].workers;
    }
    return nb > 0 && nb <= SIM_MAX_BACKENDS && workers <= SIM_MAX_WORKERS;
}

/* A run that needs more events than this has stalled. */
#define SIM_MAX_EVENTS 100000000u

int sim_run(const sim_backend *b, unsigned nb, sim_job job, const sim_variant *v, sim_result *out)
{
    memset(out, 0, sizeof *out);
    if (!sim_valid(b, nb))
        return -1;
    sim_state *st = calloc(1, sizeof *st);
    if (st == NULL)
        return -1;
    *st = (sim_state){.b = b, .pending = job.messages, .length = job.length, .out = out};
    if (v != NULL)
        st->v = *v;
    hb_sched_init(&st->sched);
    hb_sched_set_time_source(&st->sched, sim_clock, st);
    for (unsigned i = 0; i < nb; i++) {
        unsigned k = hb_sched_add(&st->sched, b[i].seed, i, b[i].workers, 1, b[i].learn_min);
        hb_sched_set_takes(&st->sched, k, b[i].take.max_messages, b[i].take.max_bytes);
        for (unsigned t = 0; t < b[i].workers; t++)
            st->w[st->nw++].backend = i;
    }
    int rc = 0;
    for (unsigned events = 0;; events++) {
        sim_offer(st);
        double next = sim_next_event(st);
        if (!isfinite(next))
            break; /* nothing held, nobody waiting to ask again */
        if (events >= SIM_MAX_EVENTS) {
            rc = -1;
            break;
        }
        st->now_ns = next;
        sim_complete(st);
    }
    if (st->pending > 0)
        rc = -1;
    hb_sched_destroy(&st->sched);
    free(st);
    return rc;
}

/* ---- the machine model ------------------------------------------------ */

#define SIM_LANES 16u          /* AVX-512 lanes (hb_cpu_impl_describe) */
#define SIM_TAKE_TARGET_NS 2e5 /* worker_cpu.c's TAKE_TARGET_NS */
#define SIM_TAKE_BYTES_MIN ((uint64_t)64 << 10)
#define SIM_TAKE_BYTES_MAX ((uint64_t)64 << 20)
#define SIM_TAKE_MESSAGES_MAX 65536u
#define SIM_DEVICE_TAKE_STAGINGS 4u /* worker_device.c's TAKE_STAGINGS */
#define SIM_DIGEST_BYTES 20.0
#define SIM_BLOCK_BYTES 64u

void sim_machine_defaults(sim_machine *m)
{
    *m = (sim_machine){
        .cores = 16,
        .cpu_64b_mmsgs = 16.75,
        .cpu_4k_gbs = 3.9,
        .cpu_64k_gbs = 3.9,
        .cpu_1m_gbs = 3.8,
        .cpu_shani_64b_mmsgs = 20.0,
        .cpu_shani_gbs = 2.16,
        .cpu_take_us = 1.5,
        .gpu_ghs = 37.0,
        .gpu_h2d_gbs = 55.0,
        .gpu_d2h_gbs = 55.0,
        .gpu_launch_us = 10.0,
        .gpu_staging_mib = 16.0,
        .gpu_depth = 2,
    };
}

static uint64_t padded_bytes(uint64_t length)
{
    return ((length + 8) / SIM_BLOCK_BYTES + 1) * SIM_BLOCK_BYTES;
}

static double staging_bytes(const sim_machine *m)
{
    return m->gpu_staging_mib * 1048576.0;
}

hb_cost_terms sim_gpu_terms(const sim_machine *m, uint64_t length)
{
    /* GB/s is bytes per ns; gpu_ghs G blocks/s is 64 * gpu_ghs bytes of
     * blocks per ns. Per padded byte: the link, the compression, and a
     * launch per staging buffer (a batch is launched a staging buffer at a
     * time), summed: the worker copies, then launches, then reads back,
     * so nothing overlaps within a batch. */
    double per_padded = 1.0 / m->gpu_h2d_gbs + 1.0 / (SIM_BLOCK_BYTES * m->gpu_ghs) +
                        m->gpu_launch_us * 1e3 / staging_bytes(m);
    double padding = (double)(padded_bytes(length) - length);
    hb_cost_terms t = {m->gpu_launch_us * 1e3,
                       padding * per_padded + SIM_DIGEST_BYTES / m->gpu_d2h_gbs, per_padded};
    return t;
}

sim_truth sim_pool_truth(const sim_machine *m, uint64_t length)
{
    sim_truth t = {{m->cpu_take_us * 1e3, 0, 0}, SIM_LANES, {0, 0, 0}};
    if (length < HB_COST_SHORT_BELOW) { /* M msg/s: 1e3 / rate ns each */
        t.terms.ns_per_message = 1e3 / m->cpu_64b_mmsgs;
        t.one.ns_per_message = 1e3 / m->cpu_shani_64b_mmsgs;
        return t;
    }
    t.terms.ns_per_byte = 1.0 / (length < (64u << 10)  ? m->cpu_4k_gbs
                                 : length < (1u << 20) ? m->cpu_64k_gbs
                                                       : m->cpu_1m_gbs);
    t.one.ns_per_byte = 1.0 / m->cpu_shani_gbs;
    return t;
}

static uint64_t clamp_u64(double x, uint64_t lo, uint64_t hi)
{
    return !(x > (double)lo) ? lo : x > (double)hi ? hi : (uint64_t)x;
}

/* The pool's take limits from its model (hb_cpu_take_limits_for with 16
 * lanes) and its fair share (hb_cpu_take_share_below, from the rates
 * instead of this machine's measured step costs). */
static sim_take pool_take(const sim_machine *m, const hb_cost_terms model[HB_COST_CLASSES])
{
    const hb_cost_terms *shorts = &model[0], *mids = &model[1];
    uint64_t bytes =
        clamp_u64(SIM_TAKE_TARGET_NS / mids->ns_per_byte, SIM_TAKE_BYTES_MIN, SIM_TAKE_BYTES_MAX);
    double per_short = shorts->ns_per_message + 64.0 * shorts->ns_per_byte;
    uint64_t messages = clamp_u64(SIM_TAKE_TARGET_NS / per_short, SIM_LANES, SIM_TAKE_MESSAGES_MAX);
    uint64_t lane_share = bytes / SIM_LANES;
    double lanes_ns = SIM_LANES * SIM_BLOCK_BYTES / m->cpu_4k_gbs; /* a step of every lane */
    double one_ns = SIM_BLOCK_BYTES / m->cpu_shani_gbs;            /* a block by OpenSSL */
    sim_take t = {messages,   lane_share * SIM_LANES,
                  lane_share, SIM_LANES,
                  m->cores,   (uint64_t)(lanes_ns / one_ns * m->cores) + 1};
    return t;
}

void sim_machine_backends(const sim_machine *m, uint64_t length, sim_backend out[2])
{
    size_t staging = (size_t)staging_bytes(m);
    sim_backend *gpu = &out[0], *pool = &out[1];
    memset(out, 0, 2 * sizeof *out);
    gpu->truth.terms = sim_gpu_terms(m, length);
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        gpu->seed[c] = gpu->truth.terms;
    gpu->workers = 1;
    gpu->depth = m->gpu_depth;
    gpu->take = (sim_take){hb_plan_lanes_max(staging),
                           (uint64_t)staging * SIM_DEVICE_TAKE_STAGINGS,
                           staging / 4,
                           SIM_LANES,
                           0,
                           0};
    /* the pool's model, as a calibration measures it (full lane sets):
     * its rates at 64 B, 4 KiB and 1 MiB, and this job's class exactly */
    pool->seed[0] = sim_pool_truth(m, 64).terms;
    pool->seed[1] = sim_pool_truth(m, 4096).terms;
    pool->seed[2] = sim_pool_truth(m, 1u << 20).terms;
    pool->truth = sim_pool_truth(m, length);
    pool->seed[hb_cost_class_of(1, length)] = pool->truth.terms;
    pool->workers = m->cores;
    pool->depth = 1;
    pool->learn_min = SIM_LANES;
    pool->take = pool_take(m, pool->seed);
}

#ifndef SCHED_SIM_NO_MAIN
/* ==== the program ===================================================== */

#define NROWS 6

static const sim_job rows[NROWS] = {
    {65536, 4096}, {4096, 65536}, {1000000, 64}, {256, 1u << 20}, {16, 16u << 20}, {1024, 64},
};

/* The extra columns: runs the engine does not make as it is. */
#define NEXTRA 3
static const char *const extra_names[NEXTRA] = {"ratio, GPU seeded x4", "ratio, GPU seeded x0.25",
                                                "ratio, per-worker takes (proposal)"};

typedef struct {
    sim_job job;
    sim_result run;
    double best_ns;
    uint64_t best_gpu;    /* messages the best split gives the GPU */
    double extra[NEXTRA]; /* ratios of the extra runs asked for */
} row_result;

typedef struct {
    sim_machine m;
    int json, learning, proposal;
    int trace_row; /* -1: none */
} options;

static double ratio_of(const row_result *r, double makespan_ns)
{
    return makespan_ns > 0 ? r->best_ns / makespan_ns : 0;
}

/* The ratio of a run with the GPU's model seeded `scale` times its truth,
 * and with v's changes. */
static double variant_ratio(const sim_machine *m, const row_result *r, double scale,
                            const sim_variant *v)
{
    sim_backend b[2];
    sim_result run;
    sim_machine_backends(m, r->job.length, b);
    for (unsigned c = 0; c < HB_COST_CLASSES; c++) {
        b[0].seed[c].fixed_ns *= scale;
        b[0].seed[c].ns_per_message *= scale;
        b[0].seed[c].ns_per_byte *= scale;
    }
    return sim_run(b, 2, r->job, v, &run) == 0 ? ratio_of(r, run.makespan_ns) : 0;
}

static int run_row(const options *o, unsigned i, row_result *r)
{
    sim_backend b[2];
    sim_variant traced = {0, (int)i == o->trace_row ? stderr : NULL};
    sim_variant proposal = {1, traced.trace};
    memset(r, 0, sizeof *r);
    r->job = rows[i];
    sim_machine_backends(&o->m, r->job.length, b);
    if (sim_run(b, 2, r->job, &traced, &r->run) != 0)
        return -1;
    sim_server gpu = sim_server_of(&b[0], r->job.length);
    sim_server pool = sim_server_of(&b[1], r->job.length);
    r->best_gpu = sim_best_split(&gpu, &pool, r->job.messages, &r->best_ns);
    if (o->learning) {
        r->extra[0] = variant_ratio(&o->m, r, 4.0, NULL);
        r->extra[1] = variant_ratio(&o->m, r, 0.25, NULL);
    }
    if (o->proposal && proposal.trace != NULL)
        fprintf(proposal.trace, "-- the same row with per-worker takes (proposal) --\n");
    if (o->proposal)
        r->extra[2] = variant_ratio(&o->m, r, 1.0, &proposal);
    return 0;
}

/* Whether extra column i was asked for. */
static int extra_shown(const options *o, unsigned i)
{
    return i < 2 ? o->learning : o->proposal;
}

/* ---- output ------------------------------------------------------------- */

static void size_name(uint64_t bytes, char *out, size_t size)
{
    if (bytes >= (1u << 20))
        snprintf(out, size, "%llu MiB", (unsigned long long)(bytes >> 20));
    else if (bytes >= (1u << 10))
        snprintf(out, size, "%llu KiB", (unsigned long long)(bytes >> 10));
    else
        snprintf(out, size, "%llu B", (unsigned long long)bytes);
}

static void count_name(uint64_t n, char *out, size_t size)
{
    char digits[32], *p = out;
    int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n);
    for (int i = 0; i < len && (size_t)(p - out) + 2 < size; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            *p++ = ',';
        *p++ = digits[i];
    }
    *p = '\0';
}

/* Throughput of the job over ns: M msg/s for short messages, else GB/s. */
static void rate_name(sim_job job, double ns, char *out, size_t size)
{
    if (job.length < HB_COST_SHORT_BELOW)
        snprintf(out, size, "%.1f M msg/s", (double)job.messages / ns * 1e3);
    else
        snprintf(out, size, "%.1f GB/s", (double)(job.messages * job.length) / ns);
}

static double percent(uint64_t part, uint64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

static void print_markdown_row(const options *o, const row_result *r)
{
    char count[32], size[32], sim_rate[32], best_rate[32];
    uint64_t total = r->job.messages * r->job.length;
    count_name(r->job.messages, count, sizeof count);
    size_name(r->job.length, size, sizeof size);
    rate_name(r->job, r->run.makespan_ns, sim_rate, sizeof sim_rate);
    rate_name(r->job, r->best_ns, best_rate, sizeof best_rate);
    printf("| %s x %s | %.1f%% | %.1f%% | %llu / %llu | %.3f / %.3f ms | %s | %.1f%% | %.3f ms | "
           "%s | **%.3f** |",
           count, size, percent(r->run.bytes[0], total), percent(r->run.bytes[1], total),
           (unsigned long long)r->run.batches[0], (unsigned long long)r->run.batches[1],
           r->run.done_ns[0] / 1e6, r->run.done_ns[1] / 1e6, sim_rate,
           percent(r->best_gpu, r->job.messages), r->best_ns / 1e6, best_rate,
           ratio_of(r, r->run.makespan_ns));
    for (unsigned i = 0; i < NEXTRA; i++)
        if (extra_shown(o, i))
            printf(" %.3f |", r->extra[i]);
    printf("\n");
}

static void print_parameters(const sim_machine *m)
{
    hb_cost_terms g = sim_gpu_terms(m, 4096);
    printf("Simulation (a plan, not a measurement): the scheduler in virtual time, 1 GPU + %u "
           "pool cores.\n\n",
           m->cores);
    printf("- pool, per core (Zen 4 rows of bench/RESULTS.md): 16 AVX-512 lanes, full sets, "
           "%.2f M msg/s at 64 B, %.2f GB/s at 4 KiB, %.2f at 64 KiB, %.2f at 1 MiB and beyond; "
           "OpenSSL SHA-NI one at a time %.2f M msg/s at 64 B, %.2f GB/s from 1 KiB; %.1f us per "
           "take\n",
           m->cpu_64b_mmsgs, m->cpu_4k_gbs, m->cpu_64k_gbs, m->cpu_1m_gbs, m->cpu_shani_64b_mmsgs,
           m->cpu_shani_gbs, m->cpu_take_us);
    printf("- GPU: %.1f G blocks/s (hashcat SHA-1, H100 SXM) = %.0f GB/s of blocks; host to "
           "device %.1f GB/s; digests back at %.1f GB/s; %.1f us per launch; %.0f MiB staging; "
           "%u batches held\n",
           m->gpu_ghs, m->gpu_ghs * SIM_BLOCK_BYTES, m->gpu_h2d_gbs, m->gpu_d2h_gbs,
           m->gpu_launch_us, m->gpu_staging_mib, m->gpu_depth);
    printf("- GPU per padded byte %.5f ns (%.1f GB/s); per 4 KiB message %.1f ns\n\n",
           g.ns_per_byte, 1.0 / g.ns_per_byte, g.ns_per_message + 4096 * g.ns_per_byte);
}

static void print_markdown(const options *o, const row_result *r, unsigned n)
{
    print_parameters(&o->m);
    printf("| row | GPU share | pool share | batches GPU / pool | done GPU / pool | simulated "
           "| best: GPU share | best makespan | best | ratio |");
    for (unsigned i = 0; i < NEXTRA; i++)
        if (extra_shown(o, i))
            printf(" %s |", extra_names[i]);
    printf("\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (unsigned i = 0; i < NEXTRA; i++)
        if (extra_shown(o, i))
            printf(" ---: |");
    printf("\n");
    for (unsigned i = 0; i < n; i++)
        print_markdown_row(o, &r[i]);
}

static void print_json(const options *o, const row_result *r, unsigned n)
{
    const sim_machine *m = &o->m;
    printf("{\"simulation\": true, \"cores\": %u, \"cpu_64b_mmsgs\": %g, \"cpu_4k_gbs\": %g, "
           "\"cpu_64k_gbs\": %g, \"cpu_1m_gbs\": %g, \"cpu_shani_64b_mmsgs\": %g, "
           "\"cpu_shani_gbs\": %g, "
           "\"cpu_take_us\": %g, \"gpu_ghs\": %g, \"gpu_h2d_gbs\": %g, \"gpu_d2h_gbs\": %g, "
           "\"gpu_launch_us\": %g, \"gpu_staging_mib\": %g, \"gpu_depth\": %u, \"rows\": [",
           m->cores, m->cpu_64b_mmsgs, m->cpu_4k_gbs, m->cpu_64k_gbs, m->cpu_1m_gbs,
           m->cpu_shani_64b_mmsgs, m->cpu_shani_gbs, m->cpu_take_us, m->gpu_ghs, m->gpu_h2d_gbs,
           m->gpu_d2h_gbs, m->gpu_launch_us, m->gpu_staging_mib, m->gpu_depth);
    for (unsigned i = 0; i < n; i++) {
        const row_result *x = &r[i];
        uint64_t total = x->job.messages * x->job.length;
        printf("%s\n  {\"messages\": %llu, \"length\": %llu, \"gpu_bytes\": %llu, "
               "\"pool_bytes\": %llu, \"gpu_batches\": %llu, \"pool_batches\": %llu, "
               "\"gpu_done_ns\": %.1f, \"pool_done_ns\": %.1f, "
               "\"makespan_ns\": %.1f, \"gb_per_s\": %.4f, \"m_msg_per_s\": %.4f, "
               "\"best_gpu_messages\": %llu, \"best_makespan_ns\": %.1f, \"ratio\": %.4f",
               i > 0 ? "," : "", (unsigned long long)x->job.messages,
               (unsigned long long)x->job.length, (unsigned long long)x->run.bytes[0],
               (unsigned long long)x->run.bytes[1], (unsigned long long)x->run.batches[0],
               (unsigned long long)x->run.batches[1], x->run.done_ns[0], x->run.done_ns[1],
               x->run.makespan_ns, (double)total / x->run.makespan_ns,
               (double)x->job.messages / x->run.makespan_ns * 1e3, (unsigned long long)x->best_gpu,
               x->best_ns, ratio_of(x, x->run.makespan_ns));
        if (o->learning)
            printf(", \"ratio_gpu_seeded_x4\": %.4f, \"ratio_gpu_seeded_x0_25\": %.4f", x->extra[0],
                   x->extra[1]);
        if (o->proposal)
            printf(", \"ratio_per_worker_takes\": %.4f", x->extra[2]);
        printf("}");
    }
    printf("\n]}\n");
}

/* ---- command line --------------------------------------------------------- */

typedef struct {
    const char *name;
    double *value;
} double_option;

static void usage(FILE *f, const sim_machine *d)
{
    fprintf(
        f,
        "usage: hb_sched_sim [--json] [--learning] [--OPTION VALUE ...]\n"
        "Simulates (in virtual time, nothing is measured) how the scheduler splits the\n"
        "route rows between a GPU and a pool of CPU cores, against the best split.\n"
        "  --cores N            pool threads, one per core (%u)\n"
        "  --cpu-64b-mmsgs X    per core, multi-buffer lanes, 64 B, M msg/s (%g: bench/RESULTS.md\n"
        "                       section 8, Zen 4: the pool 31-36 M msg/s on 2 cores)\n"
        "  --cpu-4k-gbs X       per core, lanes, 4 KiB, GB/s (%g: section 8, Zen 4: 7.6-8.0 on 2)\n"
        "  --cpu-64k-gbs X      per core, lanes, 64 KiB (%g: not measured on the Zen 4; the\n"
        "                       4 KiB figure, the lanes' rate being flat from 4 KiB to 1 MiB)\n"
        "  --cpu-1m-gbs X       per core, lanes, 1 MiB and longer (%g: section 8, Zen 4: 7.49\n"
        "                       and 7.61 on 2)\n"
        "  --cpu-shani-64b-mmsgs X  per core, OpenSSL SHA-NI one message at a time, 64 B,\n"
        "                       M msg/s (%g: section 1, Zen 4, `openssl 1 thread`)\n"
        "  --cpu-shani-gbs X    per core, the same from 1 KiB on, GB/s (%g: section 1, Zen 4,\n"
        "                       `openssl 1 thread`: 2.16 at 4 KiB to 1 MiB, 2.19 at 16 MiB)\n"
        "  --cpu-take-us X      a pool take's own cost (%g: assumed, worker_cpu.c's\n"
        "                       \"a microsecond or two\")\n"
        "  --gpu-ghs X          SHA-1 64-byte compressions, G/s (%g: hashcat -b -m 100, H100\n"
        "                       80GB HBM3 (SXM, AWS p5.48xlarge), 34.4-37.2 GH/s per device)\n"
        "  --gpu-h2d-gbs X      host to device, GB/s (%g: nvbandwidth host_to_device_memcpy_ce)\n"
        "  --gpu-d2h-gbs X      device to host, GB/s (%g: assumed equal)\n"
        "  --gpu-launch-us X    per launch (%g: within the 5-20 us CPU-side launch time\n"
        "                       Holistic Trace Analysis documents)\n"
        "  --gpu-staging-mib X  staging buffer (%g: HB_DEFAULT_STAGING_BYTES)\n"
        "  --gpu-depth N        batches the device worker holds (%u)\n"
        "  --learning           two more columns: the GPU's model seeded 4x and 0.25x its truth\n"
        "  --proposal           one more: a pool take cut to the pool's share / threads (not\n"
        "                       the engine's rule: a proposal)\n"
        "  --trace ROW          every take and batch of row ROW (0-5) on stderr\n"
        "  --json               JSON instead of markdown\n",
        d->cores, d->cpu_64b_mmsgs, d->cpu_4k_gbs, d->cpu_64k_gbs, d->cpu_1m_gbs,
        d->cpu_shani_64b_mmsgs, d->cpu_shani_gbs, d->cpu_take_us, d->gpu_ghs, d->gpu_h2d_gbs,
        d->gpu_d2h_gbs, d->gpu_launch_us, d->gpu_staging_mib, d->gpu_depth);
}

static int parse_unsigned(const char *s, unsigned *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v == 0 || v > SIM_MAX_WORKERS - 1)
        return 0;
    *out = (unsigned)v;
    return 1;
}

static int parse_positive(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || !(v > 0) || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

static int parse_double_option(options *o, const char *name, const char *value)
{
    sim_machine *m = &o->m;
    const double_option table[] = {
        {"--cpu-64b-mmsgs", &m->cpu_64b_mmsgs},
        {"--cpu-4k-gbs", &m->cpu_4k_gbs},
        {"--cpu-64k-gbs", &m->cpu_64k_gbs},
        {"--cpu-1m-gbs", &m->cpu_1m_gbs},
        {"--cpu-shani-64b-mmsgs", &m->cpu_shani_64b_mmsgs},
        {"--cpu-shani-gbs", &m->cpu_shani_gbs},
        {"--cpu-take-us", &m->cpu_take_us},
        {"--gpu-ghs", &m->gpu_ghs},
        {"--gpu-h2d-gbs", &m->gpu_h2d_gbs},
        {"--gpu-d2h-gbs", &m->gpu_d2h_gbs},
        {"--gpu-launch-us", &m->gpu_launch_us},
        {"--gpu-staging-mib", &m->gpu_staging_mib},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(name, table[i].name) == 0)
            return parse_positive(value, table[i].value);
    if (strcmp(name, "--cores") == 0)
        return parse_unsigned(value, &m->cores);
    if (strcmp(name, "--gpu-depth") == 0)
        return parse_unsigned(value, &m->gpu_depth) && m->gpu_depth <= SIM_MAX_DEPTH;
    return 0;
}

/* Returns 0, 1 (help asked: exit 0) or -1 (bad usage). */
static int parse_args(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
        else if (strcmp(argv[i], "--learning") == 0)
            o->learning = 1;
        else if (strcmp(argv[i], "--proposal") == 0)
            o->proposal = 1;
        else if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc)
            o->trace_row = atoi(argv[++i]);
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
        else if (i + 1 >= argc || !parse_double_option(o, argv[i], argv[i + 1]))
            return -1;
        else
            i++;
    }
    return 0;
}

int main(int argc, char **argv)
{
    options o = {.trace_row = -1};
    sim_machine_defaults(&o.m);
    int parsed = parse_args(argc, argv, &o);
    if (parsed != 0) {
        sim_machine d;
        sim_machine_defaults(&d);
        usage(parsed > 0 ? stdout : stderr, &d);
        return parsed > 0 ? 0 : 2;
    }
    row_result r[NROWS];
    for (unsigned i = 0; i < NROWS; i++)
        if (run_row(&o, i, &r[i]) != 0) {
            fprintf(stderr, "hb_sched_sim: the run of row %u stalled\n", i);
            return 1;
        }
    if (o.json)
        print_json(&o, r, NROWS);
    else
        print_markdown(&o, r, NROWS);
    return 0;
}
#endif /* SCHED_SIM_NO_MAIN */
