/*
 * engine.c - the engine: settings, backend choice, batches, stats.
 *
 * Owns: hb_engine_open/close, hb_sha1_batch, the stats, and the policy on
 * faults: a device error or a verification mismatch never reaches the
 * caller; the batch is recomputed on the CPU pool (unless cpu_fallback is
 * 0, for errors), and a device that mismatches, or errs three times in a
 * row, is quarantined.
 * Must not: touch OpenCL (backend_opencl.c) or print.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_cpu.h"
#include "backend_opencl.h"
#include "config.h"
#include "devices.h"
#include "error.h"
#include "fault.h"
#include "thread_pool.h"
#include "verify.h"

#define QUARANTINE_AFTER_ERRORS 3

struct hb_engine {
    hb_settings settings;
    hb_backend_kind backend; /* the one in use: OPENCL or CPU */
    hb_pool *pool;
    hb_opencl *device;
    pthread_mutex_t device_lock; /* one batch at a time on the device */
    hb_fault_state faults;
    hb_error_slot error;

    pthread_mutex_t stats_lock; /* guards stats, rng, consecutive_errors */
    hb_stats stats;
    uint64_t rng;
    unsigned consecutive_errors;
    atomic_int quarantined;

    char description[768];
};

/* ---- opening ----------------------------------------------------------- */

static uint64_t initial_seed(uint64_t seed)
{
    if (seed != 0)
        return seed;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t mixed = (uint64_t)now.tv_nsec * 0x9E3779B97F4A7C15ULL ^ (uint64_t)now.tv_sec;
    return mixed ? mixed : 1;
}

static void describe_cpu(hb_engine *e, const char *why)
{
    snprintf(e->description, sizeof e->description, "cpu: OpenSSL, %u thread%s, SHA-NI %s%s",
             hb_pool_threads(e->pool), hb_pool_threads(e->pool) == 1 ? "" : "s",
             hb_cpu_has_sha_ni() ? "yes" : "no", why);
}

/* Opens the device the spec names (the first of them, for now). */
static hb_status open_opencl(hb_engine *e)
{
    hb_cl_device *devices;
    size_t count, nchosen;
    hb_status st = hb_cl_enumerate(&devices, &count);
    if (st != HB_OK)
        return hb_error_set(&e->error, st, "out of memory listing OpenCL devices");
    size_t *chosen = calloc(count ? count : 1, sizeof *chosen);
    if (chosen == NULL) {
        free(devices);
        return hb_error_set(&e->error, HB_ERR_NO_MEMORY, "out of memory");
    }
    st = hb_cl_select(devices, count, e->settings.device, chosen, &nchosen, &e->error);
    if (st == HB_OK)
        st = hb_opencl_open(&e->device, &devices[chosen[0]], e->settings.staging_bytes,
                            &e->error);
    if (st == HB_OK)
        snprintf(e->description, sizeof e->description, "opencl: %s",
                 hb_opencl_describe(e->device));
    free(chosen);
    free(devices);
    return st;
}

/* auto: OpenCL if a device works, else the CPU pool, saying why. */
static hb_status choose_backend(hb_engine *e)
{
    hb_backend_kind wanted = e->settings.backend;
    if (wanted == HB_BACKEND_CPU) {
        e->backend = HB_BACKEND_CPU;
        describe_cpu(e, "");
        return HB_OK;
    }
    hb_status st = open_opencl(e);
    if (st == HB_OK) {
        e->backend = HB_BACKEND_OPENCL;
        return HB_OK;
    }
    int explicit_spec = e->settings.device[0] != '\0';
    if (wanted == HB_BACKEND_OPENCL || (explicit_spec && st == HB_ERR_BAD_DEVICE_SPEC))
        return st;
    e->backend = HB_BACKEND_CPU;
    char why[256];
    snprintf(why, sizeof why, " (auto: OpenCL unusable: %.200s)", hb_error_text(&e->error));
    describe_cpu(e, why);
    e->error.text[0] = '\0';
    return HB_OK;
}

static hb_engine *engine_alloc(void)
{
    hb_engine *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    pthread_mutex_init(&e->device_lock, NULL);
    pthread_mutex_init(&e->stats_lock, NULL);
    hb_fault_init(&e->faults);
    hb_error_slot_init(&e->error);
    atomic_init(&e->quarantined, 0);
    return e;
}

hb_status hb_engine_open(hb_engine **out, const hb_config *cfg)
{
    if (out == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_engine_open: out is NULL");
    *out = NULL;
    hb_engine *e = engine_alloc();
    if (e == NULL)
        return hb_error_set(NULL, HB_ERR_NO_MEMORY, "hb_engine_open: out of memory");
    hb_status st = hb_settings_resolve(cfg, &e->settings);
    if (st == HB_OK) {
        e->rng = initial_seed(e->settings.seed);
        st = hb_pool_create(&e->pool, e->settings.cpu_threads);
        if (st != HB_OK)
            hb_error_set(&e->error, st, "could not start %u CPU threads",
                         e->settings.cpu_threads);
        else
            st = choose_backend(e);
        if (st != HB_OK)
            hb_error_copy_to_thread(&e->error);
    }
    if (st != HB_OK) {
        hb_engine_close(e);
        return st;
    }
    *out = e;
    return HB_OK;
}

void hb_engine_close(hb_engine *e)
{
    if (e == NULL)
        return;
    hb_opencl_close(e->device);
    hb_pool_destroy(e->pool);
    hb_error_slot_destroy(&e->error);
    hb_fault_destroy(&e->faults);
    pthread_mutex_destroy(&e->stats_lock);
    pthread_mutex_destroy(&e->device_lock);
    free(e);
}

/* ---- hashing ------------------------------------------------------------ */

static hb_status check_batch_arguments(hb_engine *e, const hb_msg *m, size_t n,
                                       const void *out)
{
    if (e == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_sha1_batch: engine is NULL");
    if (n > 0 && (m == NULL || out == NULL))
        return hb_error_set(&e->error, HB_ERR_NULL_ARGUMENT,
                            "hb_sha1_batch: %s is NULL with n = %zu",
                            m == NULL ? "messages" : "out", n);
    for (size_t i = 0; i < n; i++)
        if (m[i].data == NULL && m[i].len > 0)
            return hb_error_set(&e->error, HB_ERR_NULL_ARGUMENT,
                                "hb_sha1_batch: message %zu has NULL data and length %zu", i,
                                m[i].len);
    return HB_OK;
}

static uint64_t batch_bytes(const hb_msg *m, size_t n)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += m[i].len;
    return bytes;
}

static void count_device_error(hb_engine *e)
{
    pthread_mutex_lock(&e->stats_lock);
    e->stats.device_errors++;
    if (++e->consecutive_errors >= QUARANTINE_AFTER_ERRORS)
        atomic_store(&e->quarantined, 1);
    pthread_mutex_unlock(&e->stats_lock);
}

static hb_status run_on_device(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out)
{
    uint64_t launches = 0;
    pthread_mutex_lock(&e->device_lock);
    hb_status st = hb_opencl_hash(e->device, m, n, out, &e->faults, &launches, &e->error);
    pthread_mutex_unlock(&e->device_lock);
    pthread_mutex_lock(&e->stats_lock);
    e->stats.device_launches += launches;
    if (st == HB_OK) {
        e->consecutive_errors = 0;
        e->stats.device_bytes += batch_bytes(m, n);
    }
    pthread_mutex_unlock(&e->stats_lock);
    if (st == HB_ERR_DEVICE)
        count_device_error(e);
    return st;
}

static hb_status verify_device_result(hb_engine *e, const hb_msg *m, size_t n,
                                      const hb_digest *out, size_t *mismatches)
{
    uint64_t rng;
    pthread_mutex_lock(&e->stats_lock);
    rng = hb_random_next(&e->rng);
    pthread_mutex_unlock(&e->stats_lock);
    if (rng == 0)
        rng = 1;
    hb_verify_result result;
    hb_status st = hb_verify_batch(e->pool, m, n, out, e->settings.verify,
                                   e->settings.sample_per_mille, &rng, &result);
    pthread_mutex_lock(&e->stats_lock);
    e->stats.verified += result.checked;
    e->stats.verify_mismatches += result.mismatches;
    pthread_mutex_unlock(&e->stats_lock);
    *mismatches = result.mismatches;
    if (result.mismatches > 0)
        atomic_store(&e->quarantined, 1);
    return st == HB_OK ? HB_OK
                       : hb_error_set(&e->error, st, "out of memory verifying %zu messages", n);
}

static void run_on_cpu(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out, int fallback)
{
    hb_cpu_hash(e->pool, m, n, NULL, out);
    pthread_mutex_lock(&e->stats_lock);
    e->stats.cpu_bytes += batch_bytes(m, n);
    e->stats.fallbacks += (uint64_t)fallback;
    pthread_mutex_unlock(&e->stats_lock);
}

static void count_batch(hb_engine *e, const hb_msg *m, size_t n)
{
    pthread_mutex_lock(&e->stats_lock);
    e->stats.batches++;
    e->stats.messages += n;
    e->stats.bytes += batch_bytes(m, n);
    pthread_mutex_unlock(&e->stats_lock);
}

/* The device's answer, checked; any doubt and the CPU recomputes it all. */
static hb_status hash_on_device(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out)
{
    hb_status st = run_on_device(e, m, n, out);
    if (st == HB_ERR_DEVICE && e->settings.cpu_fallback) {
        run_on_cpu(e, m, n, out, 1);
        return HB_OK;
    }
    if (st != HB_OK)
        return st;
    size_t mismatches = 0;
    st = verify_device_result(e, m, n, (const hb_digest *)out, &mismatches);
    if (st == HB_OK && mismatches > 0)
        run_on_cpu(e, m, n, out, 1);
    return st;
}

hb_status hb_sha1_batch(hb_engine *e, const hb_msg *m, size_t n, hb_digest *out)
{
    hb_status st = check_batch_arguments(e, m, n, out);
    if (st != HB_OK)
        return st;
    if (n > 0) {
        if (e->backend == HB_BACKEND_OPENCL && !atomic_load(&e->quarantined))
            st = hash_on_device(e, m, n, out);
        else
            run_on_cpu(e, m, n, out, 0);
    }
    if (st == HB_OK)
        count_batch(e, m, n);
    return st;
}

/* ---- questions ---------------------------------------------------------- */

const char *hb_engine_last_error(const hb_engine *e)
{
    return hb_error_text(e ? &e->error : NULL);
}

const char *hb_engine_describe(const hb_engine *e)
{
    return e ? e->description : "(no engine)";
}

hb_backend_kind hb_engine_backend(const hb_engine *e)
{
    return e ? e->backend : HB_BACKEND_CPU;
}

hb_status hb_engine_stats(const hb_engine *e, hb_stats *out)
{
    if (e == NULL || out == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_engine_stats: %s is NULL",
                            e == NULL ? "engine" : "out");
    hb_engine *mutable_engine = (hb_engine *)e;
    pthread_mutex_lock(&mutable_engine->stats_lock);
    *out = e->stats;
    out->quarantined = atomic_load(&mutable_engine->quarantined);
    pthread_mutex_unlock(&mutable_engine->stats_lock);
    return HB_OK;
}

hb_status hb_testing_set_fault(hb_engine *e, const hb_fault_plan *plan)
{
#ifdef HB_FAULT_INJECTION
    if (e == NULL)
        return hb_error_set(NULL, HB_ERR_NULL_ARGUMENT, "hb_testing_set_fault: engine is NULL");
    hb_fault_configure(&e->faults, plan);
    return HB_OK;
#else
    (void)e;
    (void)plan;
    return HB_ERR_INVALID_ARGUMENT;
#endif
}
