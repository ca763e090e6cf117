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

static void lay_out(hb_calibration_data *d, workload w)
{
    for (size_t i = 0; i < w.n; i++)
        d->msgs[i] = (hb_msg){d->bytes + i * w.len, w.len};
}

/* A backend under calibration. */
typedef struct {
    const hb_backend_ops *ops;
    void *self;
    hb_error_slot *err;
} timed_backend;

/* The best time of RUNS runs of w, or a negative number if one failed. */
static double best_ns(const timed_backend *t, hb_calibration_data *d, workload w)
{
    double best = -1;
    lay_out(d, w);
    for (int r = 0; r < RUNS; r++) {
        uint64_t start = hb_now_ns();
        if (t->ops->hash(t->self, d->msgs, w.n, d->out, t->err) != HB_OK)
            return -1;
        double ns = (double)(hb_now_ns() - start);
        if (best < 0 || ns < best)
            best = ns;
    }
    return best;
}

static double non_negative(double x)
{
    return x > 0 ? x : 0;
}

/* Terms from two timed workloads a and b (after the fixed cost):
 * t = n * per_message + bytes * per_byte, solved; noise that makes one
 * term negative puts all of the time on the other. */
static void solve_pair(double fixed, workload a, double ta, workload b, double tb,
                       hb_cost_terms *out)
{
    double na = (double)a.n, ba = na * (double)a.len, nb = (double)b.n, bb = nb * (double)b.len;
    double ya = non_negative(ta - fixed), yb = non_negative(tb - fixed);
    double det = na * bb - nb * ba;
    double per_message = (ya * bb - yb * ba) / det, per_byte = (na * yb - nb * ya) / det;
    if (per_message < 0 || per_byte < 0) {
        per_message = 0;
        per_byte = (ya + yb) / (ba + bb);
    }
    *out = (hb_cost_terms){fixed, per_message, per_byte};
}

/* Times every workload on t and fills out; 0 if a run failed. */
static int calibrate(const timed_backend *t, hb_calibration_data *d,
                     hb_cost_terms out[HB_COST_CLASSES])
{
    double lone = best_ns(t, d, LONE);
    double sa = best_ns(t, d, SHORT_A), sb = best_ns(t, d, SHORT_B);
    double ma = best_ns(t, d, MID_A), mb = best_ns(t, d, MID_B);
    double la = best_ns(t, d, LONG_A);
    if (lone < 0 || sa < 0 || sb < 0 || ma < 0 || mb < 0 || la < 0)
        return 0;
    solve_pair(lone, SHORT_A, sa, SHORT_B, sb, &out[0]);
    solve_pair(lone, MID_A, ma, MID_B, mb, &out[1]);
    double long_bytes = (double)LONG_A.n * (double)LONG_A.len;
    double long_rest = non_negative(la - lone - (double)LONG_A.n * out[1].ns_per_message);
    out[2] = (hb_cost_terms){lone, out[1].ns_per_message, long_rest / long_bytes};
    return 1;
}

hb_status hb_calibrate(hb_calibration_data *d, const hb_backend_ops *ops, void *self,
                       hb_cost_terms out[HB_COST_CLASSES], hb_error_slot *err)
{
    timed_backend t = {ops, self, err};
    return calibrate(&t, d, out) ? HB_OK : HB_ERR_DEVICE;
}
