/*
 * config.c - defaults, names and environment overrides of the settings.
 *
 * Owns: hb_config_init, the name <-> enum tables, and hb_settings_resolve.
 * Must not: touch devices; an unknown device spec is found by devices.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "mb/mb_costs.h"

static const char *const backend_names[] = {"auto", "opencl", "cpu"};
static const char *const verify_names[] = {"sample", "off", "full"};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

void hb_config_init(hb_config *cfg)
{
    if (cfg == NULL)
        return;
    memset(cfg, 0, sizeof *cfg);
    cfg->backend = HB_BACKEND_AUTO;
    cfg->device = NULL;
    cfg->verify = HB_VERIFY_SAMPLE;
    cfg->cpu_fallback = 1;
    cfg->use_environment = 1;
}

static int name_index(const char *const *names, size_t count, const char *text)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(names[i], text) == 0)
            return (int)i;
    return -1;
}

hb_status hb_backend_parse(const char *text, hb_backend_kind *out)
{
    if (text == NULL || out == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_backend_parse: %s is NULL",
                            text == NULL ? "text" : "out");
    int i = name_index(backend_names, COUNT_OF(backend_names), text);
    if (i < 0)
        return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                            "unknown backend '%s' (expected auto, opencl or cpu)", text);
    *out = (hb_backend_kind)i;
    return HB_OK;
}

hb_status hb_verify_parse(const char *text, hb_verify_mode *out)
{
    if (text == NULL || out == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_verify_parse: %s is NULL",
                            text == NULL ? "text" : "out");
    int i = name_index(verify_names, COUNT_OF(verify_names), text);
    if (i < 0)
        return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                            "unknown verify mode '%s' (expected off, sample or full)", text);
    *out = (hb_verify_mode)i;
    return HB_OK;
}

const char *hb_backend_name(hb_backend_kind kind)
{
    return (unsigned)kind < COUNT_OF(backend_names) ? backend_names[kind] : "unknown";
}

const char *hb_verify_name(hb_verify_mode mode)
{
    return (unsigned)mode < COUNT_OF(verify_names) ? verify_names[mode] : "unknown";
}

static hb_status check_config_values(const hb_config *cfg)
{
    if ((unsigned)cfg->backend >= COUNT_OF(backend_names))
        return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                            "config: backend value %d is not a hb_backend_kind", (int)cfg->backend);
    if ((unsigned)cfg->verify >= COUNT_OF(verify_names))
        return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                            "config: verify value %d is not a hb_verify_mode", (int)cfg->verify);
    if (cfg->staging_bytes != 0 && cfg->staging_bytes < HB_MIN_STAGING_BYTES)
        return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                            "config: staging_bytes %zu is below the minimum %zu",
                            cfg->staging_bytes, HB_MIN_STAGING_BYTES);
    if (cfg->sample_per_mille > 1000)
        return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                            "config: sample_per_mille %u is above 1000", cfg->sample_per_mille);
    if (cfg->ring_depth > 8)
        return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT, "config: ring_depth %u is above 8",
                            cfg->ring_depth);
    if (cfg->idle_priority != 0 && cfg->idle_priority != 1)
        return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                            "config: idle_priority %d is neither 0 nor 1", cfg->idle_priority);
    if (cfg->cpu_threads > HB_CPU_THREADS_MAX)
        return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT, "config: cpu_threads %u is above %u",
                            cfg->cpu_threads, HB_CPU_THREADS_MAX);
    return HB_OK;
}

static hb_status copy_device_spec(hb_settings *s, const char *spec, const char *origin)
{
    if (strlen(spec) >= sizeof s->device)
        return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                            "%s: device spec is longer than %zu bytes", origin,
                            sizeof s->device - 1);
    snprintf(s->device, sizeof s->device, "%s", spec);
    return HB_OK;
}

/* The CPU implementation named by `name` (from `origin`), checked. */
static hb_status choose_cpu_impl(hb_settings *s, const char *name, const char *origin)
{
    if (name == NULL || *name == '\0')
        return HB_OK;
    hb_cpu_impl impl = HB_CPU_IMPL_COUNT;
    if (hb_cpu_impl_parse(name, &impl) == HB_OK) {
        s->cpu_impl = impl;
        s->cpu_impl_given = 1;
        return HB_OK;
    }
    if (impl != HB_CPU_IMPL_COUNT)
        return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                            "%s: CPU implementation '%s' does not run on this CPU", origin, name);
    return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                        "%s: unknown CPU implementation '%s' (expected avx512, avx2, "
                        "portable or sha-ni)",
                        origin, name);
}

static hb_status apply_environment(hb_settings *s)
{
    hb_status impl_st = choose_cpu_impl(s, getenv("HASHBATCH_CPU_IMPL"), "HASHBATCH_CPU_IMPL");
    if (impl_st != HB_OK)
        return impl_st;
    const char *backend = getenv("HASHBATCH_BACKEND");
    if (backend != NULL && *backend != '\0') {
        hb_status st = hb_backend_parse(backend, &s->backend);
        if (st != HB_OK)
            return hb_error_set(NULL, st,
                                "HASHBATCH_BACKEND: unknown backend '%s' "
                                "(expected auto, opencl or cpu)",
                                backend);
    }
    const char *verify = getenv("HASHBATCH_VERIFY");
    if (verify != NULL && *verify != '\0') {
        hb_status st = hb_verify_parse(verify, &s->verify);
        if (st != HB_OK)
            return hb_error_set(NULL, st,
                                "HASHBATCH_VERIFY: unknown verify mode '%s' "
                                "(expected off, sample or full)",
                                verify);
    }
    const char *priority = getenv("HASHBATCH_PRIORITY");
    if (priority != NULL && *priority != '\0') {
        if (strcmp(priority, "idle") != 0 && strcmp(priority, "normal") != 0)
            return hb_error_set(NULL, HB_ERR_INVALID_ARGUMENT,
                                "HASHBATCH_PRIORITY: unknown priority '%s' (expected idle or normal)",
                                priority);
        s->idle_priority = strcmp(priority, "idle") == 0;
    }
    const char *cores = getenv("HASHBATCH_DEVICE_CORES");
    if (cores != NULL && *cores != '\0') {
        hb_status st = hb_cores_parse(cores, "HASHBATCH_DEVICE_CORES", &s->device_cores);
        if (st != HB_OK)
            return st;
    }
    const char *device = getenv("HASHBATCH_DEVICE");
    if (device != NULL && *device != '\0')
        return copy_device_spec(s, device, "HASHBATCH_DEVICE");
    return HB_OK;
}

hb_status hb_settings_resolve(const hb_config *cfg, hb_settings *out)
{
    hb_config defaults;
    if (cfg == NULL) {
        hb_config_init(&defaults);
        cfg = &defaults;
    }
    hb_status st = check_config_values(cfg);
    if (st != HB_OK)
        return st;

    memset(out, 0, sizeof *out);
    out->backend = cfg->backend;
    out->verify = cfg->verify;
    out->cpu_threads = cfg->cpu_threads ? cfg->cpu_threads : hb_cpu_threads_default();
    out->cpu_threads_given = cfg->cpu_threads != 0;
    out->staging_bytes = cfg->staging_bytes ? cfg->staging_bytes : HB_DEFAULT_STAGING_BYTES;
    out->ring_depth = cfg->ring_depth;
    out->sample_per_mille =
        cfg->sample_per_mille ? cfg->sample_per_mille : HB_DEFAULT_SAMPLE_PER_MILLE;
    out->cpu_fallback = cfg->cpu_fallback;
    out->seed = cfg->seed;
    out->calibrate = cfg->calibrate != 0;
    out->expected_messages = cfg->expected_messages;
    out->expected_bytes = cfg->expected_bytes;
    out->idle_priority = cfg->idle_priority != 0;
    if (cfg->device_cores != NULL && cfg->device_cores[0] != '\0') {
        st = hb_cores_parse(cfg->device_cores, "config: device_cores", &out->device_cores);
        if (st != HB_OK)
            return st;
    }
    if (cfg->device != NULL) {
        st = copy_device_spec(out, cfg->device, "config");
        if (st != HB_OK)
            return st;
    }
    out->cpu_impl = HB_CPU_IMPL_COUNT; /* not chosen yet */
    if ((st = choose_cpu_impl(out, cfg->cpu_impl, "config")) != HB_OK)
        return st;
    st = cfg->use_environment ? apply_environment(out) : HB_OK;
    if (st == HB_OK && out->cpu_impl == HB_CPU_IMPL_COUNT)
        out->cpu_impl = hb_cpu_impl_default();
    return st;
}
