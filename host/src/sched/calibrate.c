/*
 * calibrate.c - timing a backend on a few batches of each class.
 *
 * Owns: the workloads (calibration.h says why these), timing them (the
 * best of a few runs: the machine may be busy, and the minimum is the
 * backend's own cost) and solving for the terms.
 * Must not: keep state between calibrations.
 */
#include "sched/calibrate.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "sched/cost_model.h"

#define DATA_BYTES ((size_t)8 << 20)
#define MESSAGES_MAX 16384u
#define RUNS 3

/* One workload: n messages of len bytes each, laid end to end. */
typedef struct {
    size_t n, len;
} workload;

/* Per class: two workloads with different mean lengths (the per-message
 * and per-byte terms come from their difference); long has one. */
static const workload SHORT_A = {16384, 64}, SHORT_B = {16384, 256};
static const workload MID_A = {256, 4096}, MID_B = {64, 65536};
static const workload LONG_A = {16, 512u << 10};
static const workload LONE = {1, 64};

hb_status hb_calibration_data_init(hb_calibration_data *d)
{
    memset(d, 0, sizeof *d);
    d->bytes = malloc(DATA_BYTES);
    d->msgs = malloc(MESSAGES_MAX * sizeof *d->msgs);
    d->out = malloc(MESSAGES_MAX * sizeof *d->out);
    if (d->bytes == NULL || d->msgs == NULL || d->out == NULL) {
        hb_calibration_data_free(d);
        return HB_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < DATA_BYTES; i++) /* every page touched, bytes vary */
        d->bytes[i] = (unsigned char)(i * 131u + (i >> 12));
    d->size = DATA_BYTES;
    d->cap = MESSAGES_MAX;
    return HB_OK;
}

void hb_calibration_data_free(hb_calibration_data *d)
{
    free(d->bytes);
    free(d->msgs);
    free(d->out);
    memset(d, 0, sizeof *d);
}

static void lay_out(hb_calibration_data *d, size_t n, size_t len)
{
    for (size_t i = 0; i < n; i++)
        d->msgs[i] = (hb_msg){d->bytes + i * len, len};
}

/* A backend under calibration, and where its budget stands. */
typedef struct {
    const hb_backend_ops *ops;
    void *self;
    hb_error_slot *err;
    const hb_calibration_clock *clock;
    uint64_t start, deadline;
    hb_calibration_report *report;
    double lone_ns;     /* the fixed cost, once measured */
    double ns_per_byte; /* the last run's time per byte: predicts the next */
} timed_backend;

static uint64_t clock_now(const timed_backend *t)
{
    return t->clock->now_ns ? t->clock->now_ns(t->clock->arg) : hb_now_ns();
}

/* time_left: ns from now to until (0 once it has passed). */
static double time_left(const timed_backend *t, uint64_t until)
{
    uint64_t now = clock_now(t);
    return now < until ? (double)(until - now) : 0;
}

/* run_once: ns of one launch of n messages of len bytes; < 0 if it failed. */
static double run_once(timed_backend *t, hb_calibration_data *d, size_t n, size_t len)
{
    lay_out(d, n, len);
    uint64_t start = clock_now(t);
    t->report->launches++;
    t->report->last_start_ns = start - t->start;
    if (t->ops->hash(t->self, d->msgs, n, d->out, t->err) != HB_OK)
        return -1;
    double ns = (double)(clock_now(t) - start);
    t->ns_per_byte = ns / ((double)n * (double)len);
    return ns;
}

/* A workload as it was run: w.n is the messages timed (0: not run), ns
 * the best time of its runs; failed when a launch failed. */
typedef struct {
    workload w;
    double ns;
    int failed;
} measured;

/* A step grows a workload at most GROWTH times: a launch's time grows
 * about in proportion to its bytes once they fill the device, but not
 * exactly (caches), so a prediction is trusted only this far. */
#define GROWTH 16u

/* largest_fitting: the most messages of len bytes, at most cap, whose
 * launch is predicted to end by until, 0 if not even one. The prediction
 * charges every byte at the last launch's time per byte, its fixed cost
 * included: it errs long, never short, while launches grow with their
 * bytes. */
static size_t largest_fitting(const timed_backend *t, size_t len, size_t cap, uint64_t until)
{
    double per_message = (double)len * t->ns_per_byte;
    double fit = per_message > 0 ? time_left(t, until) / per_message : (double)cap;
    return fit >= (double)cap ? cap : (size_t)fit;
}

/* measure: w, from the largest size predicted to fit, grown while the
 * next step is predicted to end by until, then run again at the size it
 * reached (best of RUNS) while that still fits. The first workload of a
 * calibration (ns_per_byte still 0) is one message: it always runs. */
static measured measure(timed_backend *t, hb_calibration_data *d, workload w, uint64_t until)
{
    measured m = {{0, w.len}, -1, 0};
    size_t n = t->ns_per_byte > 0 ? largest_fitting(t, w.len, w.n, until) : 1;
    while (n > m.w.n) {
        double ns = run_once(t, d, n, w.len);
        if (ns < 0) {
            m.failed = 1;
            return m;
        }
        m.w.n = n;
        m.ns = ns;
        size_t grown = n * GROWTH < w.n ? n * GROWTH : w.n;
        n = largest_fitting(t, w.len, grown, until);
    }
    for (int r = 1; m.w.n > 0 && r < RUNS && time_left(t, until) >= m.ns; r++) {
        double ns = run_once(t, d, m.w.n, w.len);
        if (ns < 0) {
            m.failed = 1;
            return m;
        }
        if (ns < m.ns)
            m.ns = ns;
    }
    if (m.w.n > 0) /* the best run predicts the next workload's */
        t->ns_per_byte = m.ns / ((double)m.w.n * (double)w.len);
    t->report->workloads += m.w.n > 0;
    t->report->full += m.w.n == w.n;
    return m;
}

static double non_negative(double x)
{
    return x > 0 ? x : 0;
}

/* Terms from two timed workloads a and b (after the fixed cost):
 * t = n * per_message + bytes * per_byte, solved; noise that makes one
 * term negative puts all of the time on the other. */
static void solve_pair(double fixed, measured a, measured b, hb_cost_terms *out)
{
    double na = (double)a.w.n, ba = na * (double)a.w.len;
    double nb = (double)b.w.n, bb = nb * (double)b.w.len;
    double ya = non_negative(a.ns - fixed), yb = non_negative(b.ns - fixed);
    double det = na * bb - nb * ba;
    double per_message = det != 0 ? (ya * bb - yb * ba) / det : -1;
    double per_byte = det != 0 ? (na * yb - nb * ya) / det : -1;
    if (per_message < 0 || per_byte < 0) {
        per_message = 0;
        per_byte = (ya + yb) / (ba + bb);
    }
    *out = (hb_cost_terms){fixed, per_message, per_byte};
}

/* one_workload: terms for a class of which one workload m was measured:
 * its time after the fixed cost charged both per message and per byte,
 * so the model errs dear; the scheduler's refinement brings it down. */
static void one_workload(double fixed, measured m, hb_cost_terms *out)
{
    double n = (double)m.w.n, rest = non_negative(m.ns - fixed);
    *out = (hb_cost_terms){fixed, rest / n, rest / (n * (double)m.w.len)};
}

/* class_terms: a class's terms from what of its two workloads ran; 0
 * (out untouched) when neither did. */
static int class_terms(double fixed, measured a, measured b, hb_cost_terms *out)
{
    if (a.w.n && b.w.n)
        solve_pair(fixed, a, b, out);
    else if (a.w.n || b.w.n)
        one_workload(fixed, a.w.n ? a : b, out);
    return a.w.n || b.w.n;
}

/* long_terms: the long class from its one workload, its messages charged
 * what mid ones cost each (mid_per_message); 0 when it did not run. */
static int long_terms(double fixed, measured la, double mid_per_message, hb_cost_terms *out)
{
    if (!la.w.n)
        return 0;
    double bytes = (double)la.w.n * (double)la.w.len;
    double rest = non_negative(la.ns - fixed - (double)la.w.n * mid_per_message);
    *out = (hb_cost_terms){fixed, mid_per_message, rest / bytes};
    return 1;
}

/* fill_unmeasured: a class that nothing measured costs, per message and
 * per byte, the dearest of those measured; with none measured, the lone
 * message's whole time is charged per message and per byte of it. */
static void fill_unmeasured(double fixed, const int have[HB_COST_CLASSES],
                            hb_cost_terms out[HB_COST_CLASSES])
{
    hb_cost_terms dearest = {fixed, fixed, fixed / (double)LONE.len};
    int any = 0;
    for (unsigned c = 0; c < HB_COST_CLASSES; c++) {
        if (!have[c])
            continue;
        if (!any || out[c].ns_per_message > dearest.ns_per_message)
            dearest.ns_per_message = out[c].ns_per_message;
        if (!any || out[c].ns_per_byte > dearest.ns_per_byte)
            dearest.ns_per_byte = out[c].ns_per_byte;
        any = 1;
    }
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        if (!have[c])
            out[c] = dearest;
}

/* share: the deadline for the next of `left` workloads: an equal part of
 * what is left of the budget. */
static uint64_t share(const timed_backend *t, unsigned left)
{
    uint64_t now = clock_now(t);
    return now >= t->deadline ? now : now + (t->deadline - now) / left;
}

/* Times every workload that fits on t and fills out; 0 if a launch failed. */
static int calibrate(timed_backend *t, hb_calibration_data *d, hb_cost_terms out[HB_COST_CLASSES])
{
    const workload order[HB_CALIBRATION_WORKLOADS] = {LONE,  SHORT_A, SHORT_B,
                                                             MID_A, MID_B,   LONG_A};
    measured m[HB_CALIBRATION_WORKLOADS];
    for (unsigned i = 0; i < HB_CALIBRATION_WORKLOADS; i++) {
        /* the lone message may use the whole budget for its repeats: its
         * first run is cold (page faults, first calls), and every later
         * prediction starts from its best */
        uint64_t until = i == 0 ? t->deadline : share(t, HB_CALIBRATION_WORKLOADS - i);
        m[i] = measure(t, d, order[i], until);
        if (m[i].failed)
            return 0;
        if (i == 0)
            t->lone_ns = m[0].ns; /* the first launch always runs */
    }
    double lone = t->lone_ns;
    int have[HB_COST_CLASSES];
    have[0] = class_terms(lone, m[1], m[2], &out[0]);
    have[1] = class_terms(lone, m[3], m[4], &out[1]);
    have[2] = long_terms(lone, m[5], have[1] ? out[1].ns_per_message : 0, &out[2]);
    fill_unmeasured(lone, have, out);
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        t->report->measured[c] = have[c];
    return 1;
}

hb_status hb_calibrate(hb_calibration_data *d, const hb_backend_ops *ops, void *self,
                       const hb_calibration_clock *clock, hb_cost_terms out[HB_COST_CLASSES],
                       hb_calibration_report *report, hb_error_slot *err)
{
    hb_calibration_report unused;
    timed_backend t = {ops, self, err, clock, 0, 0, report ? report : &unused, 0, 0};
    memset(t.report, 0, sizeof *t.report);
    t.start = clock_now(&t);
    t.deadline = clock->budget_ns ? t.start + clock->budget_ns : UINT64_MAX;
    int ok = calibrate(&t, d, out);
    t.report->spent_ns = clock_now(&t) - t.start;
    t.report->complete = t.report->full == HB_CALIBRATION_WORKLOADS;
    return ok ? HB_OK : HB_ERR_DEVICE;
}
