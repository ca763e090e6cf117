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

static double variable_part(const hb_cost_terms *t, uint64_t n, uint64_t bytes)
{
    return (double)n * t->ns_per_message + (double)bytes * t->ns_per_byte;
}

double hb_cost_predict(const hb_cost_model *m, uint64_t n, uint64_t bytes)
{
    const hb_cost_terms *t = &m->terms[hb_cost_class_of(n, bytes)];
    return t->fixed_ns + variable_part(t, n, bytes);
}

/* x moved LEARN_RATE of the way toward x * ratio, ratio clamped. */
static double step_toward(double x, double ratio)
{
    if (!(ratio > 1.0 / STEP_MAX)) /* also NaN */
        ratio = 1.0 / STEP_MAX;
    if (ratio > STEP_MAX)
        ratio = STEP_MAX;
    return x * (1.0 + LEARN_RATE * (ratio - 1.0));
}

void hb_cost_learn(hb_cost_model *m, uint64_t n, uint64_t bytes, double measured_ns)
{
    if (m->frozen || !(measured_ns >= 0) || !isfinite(measured_ns))
        return;
    unsigned c = hb_cost_class_of(n, bytes);
    hb_cost_terms *t = &m->terms[c];
    double var = variable_part(t, n, bytes);
    if (t->fixed_ns >= var) {
        double fixed_seen = measured_ns - var;
        t->fixed_ns = step_toward(t->fixed_ns > 0 ? t->fixed_ns : 1.0,
                                  fixed_seen / (t->fixed_ns > 0 ? t->fixed_ns : 1.0));
    } else {
        double ratio = (measured_ns - t->fixed_ns) / var;
        t->ns_per_message = step_toward(t->ns_per_message, ratio);
        t->ns_per_byte = step_toward(t->ns_per_byte, ratio);
    }
    m->learnt[c]++;
}
