/*
 * cost_model.c - predicting and learning a backend's batch times.
 *
 * Owns: the arithmetic of hb_cost_model (cost_model.h).
 * Must not: take locks, read clocks or allocate.
 */
#include "sched/cost_model.h"

#include <math.h>

#define LEARN_RATE 0.25
#define STEP_MAX 8.0

const char *hb_cost_class_name(unsigned c)
{
    static const char *const names[HB_COST_CLASSES] = {"short", "mid", "long"};
    return c < HB_COST_CLASSES ? names[c] : NULL;
}

unsigned hb_cost_class_of(uint64_t n, uint64_t bytes)
{
    uint64_t mean = n > 0 ? bytes / n : 0;
    return mean < HB_COST_SHORT_BELOW ? 0u : mean < HB_COST_MID_BELOW ? 1u : 2u;
}

int hb_cost_terms_valid(const hb_cost_terms *t)
{
    double v[3] = {t->fixed_ns, t->ns_per_message, t->ns_per_byte};
    for (int i = 0; i < 3; i++)
        if (!isfinite(v[i]) || v[i] < 0)
            return 0;
    return 1;
}

static double work_of(const hb_cost_terms *t, uint64_t n, uint64_t bytes)
{
    return (double)n * t->ns_per_message + (double)bytes * t->ns_per_byte;
}

double hb_cost_predict(const hb_cost_model *m, uint64_t n, uint64_t bytes)
{
    const hb_cost_terms *t = &m->terms[hb_cost_class_of(n, bytes)];
    return t->fixed_ns + work_of(t, n, bytes);
}

void hb_cost_seed(hb_cost_model *m, const hb_cost_terms terms[HB_COST_CLASSES])
{
    for (unsigned c = 0; c < HB_COST_CLASSES; c++) {
        m->terms[c] = terms[c];
        m->shape[c] = terms[c];
        if (m->shape[c].ns_per_message <= 0 && m->shape[c].ns_per_byte <= 0)
            m->shape[c].ns_per_byte = 1e-3; /* rates of some shape to scale */
        m->learnt[c] = 0;
    }
    m->frozen = 0;
}

/* x moved rate of the way toward x * ratio, ratio clamped. */
static double step_toward(double x, double ratio, double rate)
{
    if (!(ratio > 1.0 / STEP_MAX)) /* also NaN */
        ratio = 1.0 / STEP_MAX;
    if (ratio > STEP_MAX)
        ratio = STEP_MAX;
    return x * (1.0 + rate * (ratio - 1.0));
}

/* The rates of t from a batch whose work at them is var and whose time
 * beyond the fixed cost was rest; rates that are nothing yet start from
 * the shape's, scaled to this batch. */
static void learn_rates(hb_cost_terms *t, const hb_cost_terms *shape, double var, double rest,
                        uint64_t n, uint64_t bytes, double rate)
{
    if (var <= 1.0) {
        double at_shape = work_of(shape, n, bytes);
        double k = at_shape > 0 && rest > 0 ? rest / at_shape : 0;
        t->ns_per_message = k * shape->ns_per_message;
        t->ns_per_byte = k * shape->ns_per_byte;
        return;
    }
    t->ns_per_message = step_toward(t->ns_per_message, rest / var, rate);
    t->ns_per_byte = step_toward(t->ns_per_byte, rest / var, rate);
}

void hb_cost_learn(hb_cost_model *m, uint64_t n, uint64_t bytes, double measured_ns, double weight)
{
    if (m->frozen || !(measured_ns >= 0) || !isfinite(measured_ns) || !(weight > 0))
        return;
    weight = weight < 1 ? weight : 1;
    unsigned c = hb_cost_class_of(n, bytes);
    hb_cost_terms *t = &m->terms[c];
    double var = work_of(t, n, bytes);
    if (n <= HB_COST_FEW_MESSAGES && t->fixed_ns >= var) {
        double fixed_seen = measured_ns - var;
        if (t->fixed_ns > 0)
            t->fixed_ns = step_toward(t->fixed_ns, fixed_seen / t->fixed_ns, LEARN_RATE);
        else
            t->fixed_ns = fixed_seen > 0 ? fixed_seen : 0;
    } else {
        learn_rates(t, &m->shape[c], var, measured_ns - t->fixed_ns, n, bytes, LEARN_RATE * weight);
    }
    m->learnt[c]++;
}
