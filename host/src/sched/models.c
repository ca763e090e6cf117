/*
 * models.c - model cache keys, and the cache-or-calibrate choice.
 *
 * Owns: what models.h says. A key names everything that changes a
 * backend's costs: this library's version, the host, the CPU model, the
 * pool's implementation, a device's platform, name, driver version and
 * the shape it runs (hb_opencl_describe: lanes per work-item, in place or
 * packed, launches in flight). Keys hold no tabs or newlines.
 * Must not: print.
 */
#include "sched/models.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "fault.h"
#include "machine_key.h"
#include "sched/calibrate.h"
#include "sched/cost_model.h"
#include "sched/model_cache.h"

static void make_key(hb_model_seed *s)
{
    size_t at = hb_machine_key(s->key, sizeof s->key);
    if (s->device == NULL)
        snprintf(s->key + at, sizeof s->key - at, "%s %s", s->ops->kind, s->ops->describe(s->self));
    else
        snprintf(s->key + at, sizeof s->key - at, "%s %s | %s | driver %s | %s", s->ops->kind,
                 s->device->platform_name, s->device->name, s->device->driver_version,
                 s->ops->describe(s->self));
    hb_key_sanitize(s->key);
}

/* A clock factor times faster than CLOCK_MONOTONIC from base: the
 * calibration sees a backend factor times slower (fault injection). */
typedef struct {
    uint64_t base, factor;
} slowed_clock;

static uint64_t slowed_now(void *arg)
{
    const slowed_clock *c = arg;
    return c->base + (hb_now_ns() - c->base) * c->factor;
}

hb_status hb_models_seed(hb_model_seed *seeds, size_t n, int force, uint64_t *calibration_ns,
                         int *from_cache, hb_error_slot *err)
{
    char path[1024];
    int cache = hb_model_cache_path(path, sizeof path);
    hb_calibration_data data = {0};
    hb_status st = HB_OK;
    uint64_t start = hb_now_ns();
    *from_cache = 1;
    for (size_t i = 0; i < n && st == HB_OK; i++) {
        make_key(&seeds[i]);
        if (!force && cache && hb_model_cache_load(path, seeds[i].key, seeds[i].terms))
            continue;
        *from_cache = 0;
        if (data.bytes == NULL && (st = hb_calibration_data_init(&data)) != HB_OK)
            break;
        slowed_clock slowed = {hb_now_ns(), hb_fault_calibration_slowdown()};
        /* devices within a budget; the pool in full (calibrate.h) */
        uint64_t budget = seeds[i].device != NULL ? HB_CALIBRATION_BUDGET_NS : 0;
        hb_calibration_clock clock = {budget, slowed.factor > 1 ? slowed_now : NULL, &slowed};
        seeds[i].calibrated = 1;
        st = hb_calibrate(&data, seeds[i].ops, seeds[i].self, &clock, seeds[i].terms,
                          &seeds[i].measured, err);
        /* Kept even when cut short by its budget (a slow device, a busy
         * machine): the next open starts from it, and what the batches
         * teach replaces it when the engine closes. Not what a test clock
         * measured. */
        if (st == HB_OK && cache && slowed.factor <= 1)
            hb_model_cache_store(path, seeds[i].key, seeds[i].terms);
    }
    hb_calibration_data_free(&data);
    *calibration_ns = *from_cache ? 0 : hb_now_ns() - start;
    return st;
}

static const char ON_POOL_CORES[] = " | on the pool's cores";

/* The key of what is kept of spec's devices: with what "", their open
 * cost; with ON_POOL_CORES, their cheapest terms. */
static void spec_key(const char *spec, const char *what, char key[HB_MODEL_KEY_BYTES])
{
    size_t at = hb_machine_key(key, HB_MODEL_KEY_BYTES);
    snprintf(key + at, HB_MODEL_KEY_BYTES - at, "open opencl devices %s%s", spec, what);
    hb_key_sanitize(key);
}

/* key's terms from the cache into t: 1, or 0 when there are none. */
static int cached_terms(const char *key, hb_cost_terms t[HB_COST_CLASSES])
{
    char path[1024];
    return hb_model_cache_path(path, sizeof path) && hb_model_cache_load(path, key, t);
}

void hb_models_store_shared_devices(const char *spec, const hb_cost_terms terms[HB_COST_CLASSES])
{
    char key[HB_MODEL_KEY_BYTES];
    spec_key(spec, ON_POOL_CORES, key);
    hb_models_store(key, terms);
}

double hb_models_shared_devices_time(const char *spec, uint64_t n, uint64_t bytes)
{
    char key[HB_MODEL_KEY_BYTES];
    hb_cost_terms t[HB_COST_CLASSES];
    spec_key(spec, ON_POOL_CORES, key);
    if (!cached_terms(key, t))
        return 0;
    const hb_cost_terms *c = &t[hb_cost_class_of(n, bytes)];
    return c->fixed_ns + (double)n * c->ns_per_message + (double)bytes * c->ns_per_byte;
}

double hb_models_open_cost(const char *spec)
{
    char key[HB_MODEL_KEY_BYTES];
    hb_cost_terms t[HB_COST_CLASSES];
    spec_key(spec, "", key);
    return cached_terms(key, t) ? t[0].fixed_ns : 0;
}

void hb_models_store_open_cost(const char *spec, double ns)
{
    char key[HB_MODEL_KEY_BYTES];
    hb_cost_terms t[HB_COST_CLASSES] = {{0}};
    for (unsigned c = 0; c < HB_COST_CLASSES; c++)
        t[c].fixed_ns = ns; /* the open's time, as a fixed cost of every class */
    spec_key(spec, "", key);
    if (ns > 0)
        hb_models_store(key, t);
}

double hb_models_pool_time(const hb_backend_ops *pool_ops, void *pool_self, unsigned threads,
                           uint64_t n, uint64_t bytes)
{
    hb_model_seed seed = {.ops = pool_ops, .self = pool_self, .device = NULL};
    make_key(&seed);
    if (!cached_terms(seed.key, seed.terms))
        return 0;
    const hb_cost_terms *t = &seed.terms[hb_cost_class_of(n, bytes)];
    double side_by_side = threads < n ? threads : (double)(n > 0 ? n : 1);
    return t->fixed_ns + ((double)n * t->ns_per_message + (double)bytes * t->ns_per_byte) /
                             (side_by_side > 0 ? side_by_side : 1);
}

void hb_models_store(const char *key, const hb_cost_terms terms[HB_COST_CLASSES])
{
    char path[1024];
    if (hb_model_cache_path(path, sizeof path))
        hb_model_cache_store(path, key, terms);
}
